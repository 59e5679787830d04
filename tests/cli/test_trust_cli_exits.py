"""--help and --version keep the output promise (whole or exit 74; a reader gone is exit 0), an
option that takes one value is refused when given twice under any spelling, and an empty
--scheduler is an error, not the threads."""
import os
import resource
import subprocess
import sys

import pytest

from gradcli.cli.spec import BY_NAME, repeated_single_options

PRINTS = [["--help"], ["-h"], ["--version"], ["grad", "--help"], ["plot", "-h"]]


def _gradcli(*args, **options):
    return subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True, text=True, timeout=60,
                          **options)


@pytest.mark.parametrize("args", PRINTS)
def test_help_and_version_to_a_closed_output_are_exit_74(args):
    p = subprocess.run([sys.executable, "-m", "gradcli", *args], stdout=None, stderr=subprocess.PIPE, text=True,
                       timeout=60, pass_fds=(), preexec_fn=lambda: os.close(1))
    assert p.returncode == 74, p.stderr
    assert p.stderr == "gradcli: cannot write the output: standard output is closed\n"


@pytest.mark.parametrize("args", PRINTS)
def test_help_and_version_cut_short_by_a_file_size_limit_are_exit_74(args, tmp_path):
    """A write that takes only part of the text is not a success (click exited 0 with it cut)."""
    with open(tmp_path / "out.txt", "wb") as out:
        p = subprocess.run([sys.executable, "-m", "gradcli", *args], stdout=out, stderr=subprocess.PIPE, text=True,
                           timeout=60, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (10, 10)))
    assert p.returncode == 74, p.stderr
    assert p.stderr == "gradcli: cannot write the output: File too large\n"


@pytest.mark.parametrize("args", PRINTS)
def test_help_and_version_to_a_reader_that_has_gone_are_exit_0(args):
    """`gradcli --help | head -0`: the reader has what it wanted (click exited 1)."""
    read, write = os.pipe()
    os.close(read)
    try:
        p = subprocess.run([sys.executable, "-m", "gradcli", *args], stdout=write, stderr=subprocess.PIPE,
                           text=True, timeout=60)
    finally:
        os.close(write)
    assert (p.returncode, p.stderr) == (0, "")


@pytest.mark.parametrize("args", PRINTS)
def test_help_and_version_still_print_whole(args):
    p = _gradcli(*args)
    assert p.returncode == 0 and p.stderr == ""
    assert p.stdout.startswith("gradcli 0.1.0" if args == ["--version"] else "Usage: gradcli")


@pytest.mark.parametrize("args", [
    ["-e", "y = 1.0", "-ey = 2.0"],
    ["--expr", "y = 1.0", "-e", "y = 2.0"],
    ["-ey = 1.0", "--expr=y = 2.0"],
])
def test_a_program_given_twice_under_any_spelling_is_refused(args):
    p = _gradcli("eval", *args, "--format", "plain")
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == "gradcli: error: --expr was given 2 times; eval takes one\n"


def test_a_program_that_cannot_be_read_as_given_is_one_message_and_exit_2(tmp_path):
    (tmp_path / "p.txt").write_text("y = 1.0\n")
    p = _gradcli("eval", str(tmp_path), "--format", "plain")
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == f"gradcli: error: '{tmp_path}' is a directory, not a program file\n"
    p = _gradcli("eval", str(tmp_path / "p.txt"), "-e", "y = 2.0", "--format", "plain")
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == "gradcli: error: give the program either as FILE or with -e, not both\n"


def test_a_short_option_given_twice_with_its_value_attached_is_refused_on_the_typer_path_too():
    p = _gradcli("eval", "-e", "y = 1.0", "-ey = 2.0", "--debug")  # (--debug: Typer reads it)
    assert (p.returncode, p.stdout) == (2, "")
    assert "--expr was given 2 times" in p.stderr


@pytest.mark.parametrize("args,plain", [
    (["eval", "-e", "-exp(0.0)"], "_\t-1.0\n"),  # a value that looks like -e...
    (["eval", "-e-exp(0.0)"], "_\t-1.0\n"),
    (["eval", "-e", "-e", "--format", "plain"], None),  # -e's value is the text "-e": one program
])
def test_a_value_that_looks_like_an_option_is_not_counted(args, plain):
    p = _gradcli(*args, *([] if "--format" in args else ["--format", "plain"]))
    assert "given 2 times" not in p.stderr
    if plain is not None:
        assert (p.returncode, p.stdout) == (0, plain), p.stderr


def test_repeated_single_options_reads_words_as_click_does():
    params = BY_NAME["plot"].params
    assert repeated_single_options(["--range", "-5:5", "--wrt", "x", "-e", "--range"], params) == []
    assert repeated_single_options(["--range", "-5:5", "--range=0:1"], params) == [("--range", 2)]
    assert repeated_single_options(["--set", "a=1", "--set", "b=2"], params) == []  # repeatable
    assert repeated_single_options(["--", "-e", "a", "-e", "b"], params) == []  # arguments after --
    assert repeated_single_options(["-ea", "-eb", "-e", "c"], params) == [("--expr", 3)]


@pytest.mark.parametrize("address", ["", "  "])
def test_an_empty_scheduler_is_an_error_not_the_threads(address):
    pytest.importorskip("dask")
    p = _gradcli("eval", "-e", "y = 1.0", "--device", "dask", "--scheduler", address, "--format", "plain")
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == (f"gradcli: error: --scheduler '': an empty address; give tcp://HOST:PORT, or 'local' for "
                        "worker processes started here (without --scheduler: threads in this process)\n")
