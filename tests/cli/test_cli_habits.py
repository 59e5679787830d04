"""The habits of a good command line: shell completion, tables the width of the terminal that
never split a matrix row, help that says what the options do (and shows an example), and a
command reference that is never stale."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from gradcli import api
from gradcli.cli import app, spec
from gradcli.errors import GradcliError

ROOT = Path(__file__).resolve().parents[2]


def gradcli(*args, env=None, **kwargs):
    proc = subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})}, **kwargs)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


def commands():
    group = typer.main.get_command(app)
    ctx = group.context_class(group, info_name="gradcli")
    return ctx, {name: group.get_command(ctx, name) for name in group.list_commands(ctx)}


# --------------------------------------------------------------------------- completion

NO_DETECTION = {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}


@pytest.mark.parametrize("shell,marker", [("bash", "complete -o default -F _gradcli_completion gradcli"),
                                          ("zsh", "#compdef gradcli"), ("fish", "complete --command gradcli")])
def test_show_completion_prints_the_shell_script(shell, marker):
    p = gradcli("--show-completion", shell, env=NO_DETECTION)
    assert p.returncode == 0 and marker in p.stdout and "_GRADCLI_COMPLETE" in p.stdout


def test_the_completion_completes_commands_and_choices():
    env = {"_GRADCLI_COMPLETE": "complete_bash", "COMP_WORDS": "gradcli hes", "COMP_CWORD": "1"}
    assert gradcli(env=env).stdout.split() == ["hessian"]
    env = {"_GRADCLI_COMPLETE": "complete_bash", "COMP_WORDS": "gradcli graph --format ", "COMP_CWORD": "3"}
    assert gradcli(env=env).stdout.split() == ["auto", "table", "json", "plain", "dot", "tree"]


def test_install_completion_writes_the_script_for_the_shell(tmp_path):
    p = gradcli("--install-completion", "bash", env={**NO_DETECTION, "HOME": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    script = tmp_path / ".bash_completions" / "gradcli.sh"
    assert "_GRADCLI_COMPLETE" in script.read_text() and str(script) in (tmp_path / ".bashrc").read_text()


# --------------------------------------------------------------------------- tables

HESSIAN = ["hessian", "-e", "y = exp(sum(x * [0.1, 0.2, 0.3, 0.4, 0.5])) * sum(x ** 3) / 3", "--wrt", "x",
           "--set", "x=[1.1, -2.2, 3.3, 0.4, 1.7]", "--format", "table"]


def rows_of(table: str) -> list[str]:
    """The value cells of a table, one per line of text."""
    return [line.split("│")[3].strip() for line in table.splitlines() if line.count("│") == 4]


def test_a_wide_terminal_shows_each_matrix_row_whole_on_one_line():
    p = gradcli(*HESSIAN, env={"COLUMNS": "200"})
    cells = rows_of(p.stdout)
    assert len(cells) == 5 and all(cell.count(",") >= 5 for cell in cells[:4]), p.stdout
    assert "..." not in p.stdout and max(map(len, p.stdout.splitlines())) <= 200


def test_a_narrow_terminal_elides_columns_as_numpy_does_and_never_splits_a_row():
    p = gradcli(*HESSIAN, env={"COLUMNS": "80"})
    assert max(map(len, p.stdout.splitlines())) <= 80
    rows = [cell for cell in rows_of(p.stdout) if cell.startswith("[")]
    assert len(rows) == 2 and all(row.endswith(("],", "]]")) and "..." in row for row in rows), p.stdout
    assert "shape (5, 5)  min -10.8512  max 74.8055" in p.stdout


# --------------------------------------------------------------------------- help

def test_every_help_has_an_example():
    p = gradcli("--help")
    assert "Example: gradcli " in p.stdout
    _, found = commands()
    for name in found:
        p = gradcli(name, "--help")
        assert p.returncode == 0 and re.search(rf"Examples?:\n    gradcli {name} ", p.stdout), (name, p.stdout)


def test_an_option_is_called_repeatable_exactly_when_it_can_be_repeated():
    _, found = commands()
    for name, command in found.items():
        for param in command.params:
            said = "repeatable" in (getattr(param, "help", None) or "")
            assert said == bool(getattr(param, "multiple", False)), (name, param.name, param.help)


def test_jacobian_and_hessian_take_one_of():
    p = gradcli("hessian", "--help", env={"COLUMNS": "200"})
    assert re.search(r"--of NAME\s+Of this value \(one\)", p.stdout)
    p = gradcli("jacobian", "-e", "z = x * 3; y = x * x", "--of", "z", "--wrt", "x", "--set", "x=[1, 2]",
                "--format", "plain")
    assert (p.returncode, p.stdout) == (0, "x\t3.0 0.0 0.0 3.0\n")


@pytest.mark.parametrize("args,option", [
    (["hessian", "-e", "y = x * x", "--of", "y", "--of", "y", "--wrt", "x", "--set", "x=1"], "--of"),
    (["jacobian", "-e", "y = x * x", "--of=y", "--of", "y", "--wrt", "x", "--set", "x=1"], "--of"),
    (["eval", "-e", "y = 1", "--format", "json", "--format=plain"], "--format"),
])
def test_an_option_that_takes_one_value_given_twice_is_refused(args, option):
    p = gradcli(*args)
    assert (p.returncode, p.stdout) == (2, "")
    assert f"gradcli: error: {option} was given 2 times; {args[0]} takes one" in p.stderr


def test_the_command_reference_is_up_to_date():
    """Regenerate it with: python tools/gen.py > docs/commands.md"""
    made = subprocess.run([sys.executable, str(ROOT / "tools" / "gen.py")], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    assert (ROOT / "docs" / "commands.md").read_text() == made.stdout


def test_every_link_of_the_documents_is_a_file_of_the_repository():
    for path in [ROOT / "README.md", *ROOT.joinpath("docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#\s]+)\)", path.read_text()):
            if target.startswith(("http://", "https://")):
                continue
            resolved = (path.parent / target).resolve()
            assert resolved.is_relative_to(ROOT) and resolved.exists(), (path.name, target)


def test_a_run_builds_only_the_command_it_names():
    assert [c.name for c in spec.named_command(["grad", "-e", "y = x", "--wrt", "x"]).registered_commands] == ["grad"]
    for argv in (["--help"], [], ["evl"], ["--version"]):
        assert spec.named_command(argv) is app
    assert len(app.registered_commands) == 9  # the app itself is left whole


@pytest.mark.parametrize("call,library_words,cli_args,cli_words", [
    (lambda: api.evaluate("y = x + q"), "give them with feeds x=VALUE feeds q=VALUE",
     ["eval", "-e", "y = x + q"], "give them with --set x=VALUE --set q=VALUE"),
    (lambda: api.evaluate("y = print(x)", feeds={"x": 1.0}), "name more values with prints NAME",
     ["eval", "-e", "y = print(x)", "--set", "x=1"], "name more values with --print NAME"),
    (lambda: api.evaluate("y = broadcast_to(x, shape=[10000000])", feeds={"x": 1.0}, max_memory=1 << 20),
     "raise the limit with max_memory", ["eval", "-e", "y = broadcast_to(x, shape=[10000000])", "--set", "x=1",
                                          "--max-memory", "1M"], "raise the limit with --max-memory"),
])
def test_the_library_names_its_arguments_and_the_command_line_its_options(call, library_words, cli_args, cli_words):
    with pytest.raises(GradcliError) as err:
        call()
    assert library_words in err.value.message and "--" not in err.value.message
    p = gradcli(*cli_args)
    assert p.returncode == 2 and cli_words in p.stderr
