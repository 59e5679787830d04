"""The command's input and output: output delivered whole or a non-zero exit (74), signals at
write boundaries, pipes, closed and unreadable streams, bounded reading, `--lines` answering
every line, what tables show, and the cost of quoting source lines."""
import gc
import io
import json
import os
import resource
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from gradcli import api, cli
from gradcli.cli import render, run as command_run, streams
from gradcli.errors import GradcliError, Pos, Source, caret_lines, format_error

BIG = "y = broadcast_to(1.5, shape=[100000])"  # about 500 KB of JSON


def run(*args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, preexec_fn=None, timeout=60):
    proc = subprocess.run([sys.executable, "-m", "gradcli", *args], stdin=stdin, stdout=stdout,
                          stderr=subprocess.PIPE, preexec_fn=preexec_fn, timeout=timeout)
    out = proc.stdout.decode() if proc.stdout is not None else None
    err = proc.stderr.decode()
    assert "Traceback" not in err, err
    return proc.returncode, out, err


def file_size_limit(size):
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


# --------------------------------------------------------------------------- output integrity

@pytest.mark.parametrize("fmt", ["json", "plain"])
def test_a_file_too_large_for_the_output_exits_74_and_holds_no_partial_document(tmp_path, fmt):
    path = tmp_path / "o.txt"
    with open(path, "wb") as out:
        code, _, err = run("eval", "-e", BIG, "--format", fmt, stdout=out, preexec_fn=file_size_limit(65536))
    assert (code, err) == (74, "gradcli: cannot write the output: File too large\n")
    assert path.stat().st_size == 0  # whole or not at all: the partial document was cut away


@pytest.mark.parametrize("args", [
    ["eval", "-e", BIG, "--format", "json"], ["eval", "-e", "y = 1.5", "--format", "table"],
    ["graph", "-e", "y = 1.5 * 2"], ["derive", "-e", "y = x * x", "--wrt", "x", "--set", "x=2"],
])
def test_a_full_disk_exits_74_with_one_line(args):
    with open("/dev/full", "wb") as full:
        assert run(*args, stdout=full)[::2] == (74, "gradcli: cannot write the output: No space left on device\n")


def test_a_full_disk_under_lines_exits_74_with_one_line():
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([sys.executable, "-m", "gradcli", "eval", "--lines"], input=b"1 + 1\n2 + 2\n",
                              stdout=full, stderr=subprocess.PIPE, timeout=60)
    assert (proc.returncode, proc.stderr) == (74, b"gradcli: cannot write the output: No space left on device\n")


def test_lines_that_do_not_fit_leave_only_whole_lines(tmp_path):
    path = tmp_path / "o.ndjson"
    program = b"".join(b"y = broadcast_to(%d.5, shape=[20])\n" % k for k in range(2000))  # ~300 KB out
    with open(path, "wb") as out:
        proc = subprocess.run([sys.executable, "-m", "gradcli", "eval", "--lines"], input=program, stdout=out,
                              stderr=subprocess.PIPE, preexec_fn=file_size_limit(65536), timeout=60)
    assert (proc.returncode, proc.stderr) == (74, b"gradcli: cannot write the output: File too large\n")
    text = path.read_text()
    assert text.endswith("\n") and 0 < len(text) <= 65536
    values = [json.loads(line)["outputs"]["y"]["value"][0] for line in text.splitlines()]
    assert values == [k + 0.5 for k in range(len(values))]


def test_a_closed_standard_output_exits_74():
    code, _, err = run("eval", "-e", "1", stdout=None, preexec_fn=lambda: os.close(1))
    assert (code, err) == (74, "gradcli: cannot write the output: standard output is closed\n")


# --------------------------------------------------------------------------- pipes

def test_a_reader_that_goes_away_from_lines_ends_gradcli_quietly_with_exit_0():
    """`... | gradcli eval --lines | head -1`: once exit 1, the --strict code."""
    proc = subprocess.Popen([sys.executable, "-m", "gradcli", "eval", "--lines"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    proc.stdin.write(b"y = 1\n" * 100)
    assert proc.stdout.read(10) == b'{"command"'
    proc.stdout.close()  # `| head -c 10`
    try:
        for _ in range(10000):  # more lines, answered into the closed pipe, until gradcli stops reading
            proc.stdin.write(b"y = 1\n" * 10)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    assert (proc.wait(timeout=60), proc.stderr.read()) == (0, b"")


def test_a_reader_that_goes_away_from_a_document_ends_gradcli_quietly_with_exit_0():
    proc = subprocess.Popen([sys.executable, "-m", "gradcli", "eval", "-e", BIG, "--format", "json"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    assert proc.stdout.read(10) == b'{"command"'  # it has started writing, and more than a pipe holds
    proc.stdout.close()
    assert (proc.wait(timeout=60), proc.stderr.read()) == (0, b"")


# --------------------------------------------------------------------------- signals

@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_a_write_lets_the_document_finish(signum, code):
    proc = subprocess.Popen([sys.executable, "-m", "gradcli", "eval", "-e", BIG, "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    first = proc.stdout.read(1000)  # it is now blocked writing the rest into the full pipe
    proc.send_signal(signum)
    time.sleep(0.2)
    rest, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (code, b"gradcli: interrupted\n")
    assert len(json.loads(first + rest)["outputs"]["y"]["value"]) == 100000


def test_a_second_signal_does_not_wait_for_the_reader():
    proc = subprocess.Popen([sys.executable, "-m", "gradcli", "eval", "-e", BIG, "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    assert proc.stdout.read(1000)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 130  # nothing more was read: it ended without finishing
    assert proc.stderr.read() == b"gradcli: interrupted\n"
    proc.stdout.close()


# A Ctrl-C while Python is still importing (NumPy, the first ~60 ms; Typer, when the command line
# is left to it): made deterministic by raising the signal from an import hook at the moment the
# module is looked up.
_INTERRUPT_AT_IMPORT = """
import os, signal, sys
class InterruptOnImport:
    def find_spec(self, name, path=None, target=None):
        if name == MODULE:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, InterruptOnImport())
"""


@pytest.mark.parametrize("module,argv", [("numpy", ["eval", "-e", "1"]), ("gradcli.api", ["eval", "-e", "1"]),
                                         ("typer", ["eval", "-e", "1", "--debug"])])
@pytest.mark.parametrize("entry", [
    "from gradcli.cli import main\nsys.exit(main())",  # the console script
    "import runpy\nrunpy.run_module('gradcli', run_name='__main__', alter_sys=True)",  # python -m gradcli
])
def test_ctrl_c_during_start_up_exits_130_without_a_traceback(entry, module, argv):
    code = f"MODULE = {module!r}\n{_INTERRUPT_AT_IMPORT}sys.argv = {['gradcli', *argv]!r}\n{entry}"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert (proc.returncode, proc.stderr, proc.stdout) == (130, b"gradcli: interrupted\n", b"")


_PYTHON_M = "import runpy\nrunpy.run_module('gradcli', run_name='__main__', alter_sys=True)"


@pytest.mark.parametrize("module,entry", [
    ("gradcli.cli.streams", "from gradcli.cli import main\nsys.exit(main())"),  # the console script
    ("gradcli.cli.streams", _PYTHON_M),
    ("gradcli.cli", _PYTHON_M),  # before gradcli.cli runs a line: held from __main__'s first line
])
def test_ctrl_c_before_the_quiet_handler_is_installed_is_held_until_it_is(module, entry):
    code = f"MODULE = {module!r}\n{_INTERRUPT_AT_IMPORT}sys.argv = ['gradcli', 'eval', '-e', '1']\n{entry}"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert (proc.returncode, proc.stderr, proc.stdout) == (130, b"gradcli: interrupted\n", b"")


def test_a_program_that_imports_the_cli_keeps_its_keyboard_interrupt():
    script = ("import os, signal, time\nimport gradcli.cli\n"
              "try:\n    os.kill(os.getpid(), signal.SIGINT); time.sleep(5)\n"
              "except KeyboardInterrupt:\n    print('KeyboardInterrupt')\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (0, "KeyboardInterrupt\n")


# --------------------------------------------------------------------------- reading

@pytest.mark.parametrize("args,stdin,message", [
    (["eval", "-"], None, "gradcli: error: cannot read the program: standard input is closed\n"),
    (["eval", "/proc/self/mem"], subprocess.DEVNULL,
     "/proc/self/mem: error: cannot read the program: Input/output error\n"),
    (["eval", "/dev/zero"], subprocess.DEVNULL, "gradcli: error: '/dev/zero' is a device, not a program file\n"),
    (["eval", "--lines"], "/dev/zero", "gradcli: error: standard input is a device, not a program file\n"),
])
def test_closed_and_unreadable_programs_are_one_message_and_exit_2(args, stdin, message):
    if stdin is None:
        code, out, err = run(*args, stdin=None, preexec_fn=lambda: os.close(0))
    elif stdin == "/dev/zero":
        with open("/dev/zero", "rb") as zero:
            code, out, err = run(*args, stdin=zero)
    else:
        code, out, err = run(*args, stdin=stdin)
    assert (code, out, err) == (2, "", message)


def test_a_program_longer_than_the_cap_is_refused_without_reading_on():
    # the cap is --max-memory when that is smaller than 256 MiB; the stream never ends
    endless = subprocess.Popen(["cat", "/dev/zero"], stdout=subprocess.PIPE)
    proc = subprocess.run([sys.executable, "-m", "gradcli", "eval", "--max-memory", "1M"], stdin=endless.stdout,
                          capture_output=True, timeout=60)
    endless.kill()
    endless.wait()
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, b"", b"<stdin>: error: the program is longer than the 262,144 bytes allowed\n")  # a quarter


def test_the_default_program_cap(monkeypatch, tmp_path):
    monkeypatch.setattr(streams, "MAX_PROGRAM_BYTES", 1024)
    path = tmp_path / "long.expr"
    path.write_text("y = 1\n" + "#" * 2000 + "\n")
    with pytest.raises(GradcliError, match="the program is longer than the 1,024 bytes allowed"):
        command_run.read_program(str(path), None)
    path.write_text("y = 1\n" + "#" * 1000 + "\n")
    assert command_run.read_program(str(path), None)[0].startswith("y = 1")


# --------------------------------------------------------------------------- --lines answers every line

def answers(stdin: bytes, *args, **opts):
    """Run `eval --lines` in-process on `stdin`; (exit code, the answers)."""
    from gradcli.cli import render
    out = io.StringIO()
    run = command_run.Run(None, None, [], "json", lines=True)
    stdout = sys.stdout
    sys.stdout = out
    try:
        code = run._each_line(render.EVAL, "json", lambda text, name: api.evaluate(text, name=name),
                              io.BytesIO(stdin), None)
    finally:
        sys.stdout = stdout
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def test_an_over_long_line_is_answered_in_its_place_and_the_stream_goes_on():
    proc = subprocess.run([sys.executable, "-m", "gradcli", "eval", "--lines", "--max-memory", "1M"],
                          input=b"1 + 1\n" + b"\0" * (3 << 20) + b"\n\n2 + 2\n" + b"x" * (2 << 20),
                          capture_output=True, timeout=60)
    docs = [json.loads(line) for line in proc.stdout.splitlines()]
    too_long = "the line is longer than the 1 MiB allowed for one program"
    assert (proc.returncode, proc.stderr) == (2, b"")
    assert docs[0]["outputs"]["_"]["value"] == 2.0 and docs[2]["outputs"]["_"]["value"] == 4.0
    assert docs[1]["error"] == {"message": too_long, "line": 2, "text": f"<line 2>: error: {too_long}"}
    assert (docs[3]["error"]["line"], docs[3]["error"]["message"], len(docs)) == (5, too_long, 4)


def test_a_bug_on_one_line_is_answered_in_its_place_and_exits_70(monkeypatch, capsys):
    evaluate = api.evaluate

    def broken_on_two(text, **kwargs):
        if text == "2":
            raise ZeroDivisionError("a stand-in for a bug in the engine")
        return evaluate(text, **kwargs)

    monkeypatch.setattr(api, "evaluate", broken_on_two)
    code, docs = answers(b"1\n2\n3\n")
    assert code == 70 and [d["outputs"]["_"]["value"] for d in (docs[0], docs[2])] == [1.0, 3.0]
    assert docs[1] == {"command": "eval", "line": 2, "error": {"message": "internal error: ZeroDivisionError: a stand-in for a bug in the engine",
                                 "line": 2, "internal": True}}
    assert "gradcli: internal error on line 2: ZeroDivisionError" in capsys.readouterr().err


def test_lines_split_across_reads_and_blank_lines_are_counted():
    code, docs = answers(b"\n\n" + b"y = 1 + " + b" " * 100_000 + b"2\n\xff\n")
    assert code == 2 and docs[0]["outputs"]["y"]["value"] == 3.0
    assert (docs[1]["error"]["line"], docs[1]["error"]["column"]) == (4, 1)


# --------------------------------------------------------------------------- options

@pytest.mark.parametrize("value,message", [
    ("inf", "--max-memory: 'inf' is not a finite size; give one such as 8G or 500M"),
    ("nan", "--max-memory: 'nan' is not a finite size; give one such as 8G or 500M"),
    ("1e400", "--max-memory: '1e400' is not a finite size; give one such as 8G or 500M"),
    ("-1", "--max-memory: '-1' must be positive"),
    ("0.5", "--max-memory: '0.5' is 0.5 bytes; the smallest limit is 1K (1024 bytes)"),
    ("0.5K", "--max-memory: '0.5K' is 512 bytes; the smallest limit is 1K (1024 bytes)"),
])
def test_max_memory_values_that_are_no_limit_are_refused(value, message):
    r = CliRunner().invoke(cli.app, ["eval", "-e", "1", "--max-memory", value])
    assert (r.exit_code, r.output) == (2, f"gradcli: error: {message}\n")


def test_max_memory_of_1k_is_a_limit():
    r = CliRunner().invoke(cli.app, ["eval", "-e", "y = 2.0 * 3.0", "--max-memory", "1K"])
    assert (r.exit_code, r.output) == (0, "y\t6.0\n")
    r = CliRunner().invoke(cli.app, ["eval", "-e", "y = broadcast_to(1.0, shape=[1000])", "--max-memory", "1K"])
    assert r.exit_code == 2 and "more than the" in r.output


# --------------------------------------------------------------------------- what people see

def recorded(renderable) -> str:
    from rich.console import Console
    console = Console(width=100, color_system=None, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


@pytest.mark.parametrize("literal", ["[nan, 1.0]", "[inf, 1.0]", "[-inf, 2.0]"])
def test_tables_and_trees_show_arrays_that_start_with_nan_or_inf(literal):
    """Rich reads `[nan, 1.]` as markup: a cell built from it was empty."""
    program = f"x = {literal}\ny = x * x"
    result = api.grad(program, wrt=["x"])
    table = recorded(render.table(result, with_gradients=True))
    assert render._summary(result.outputs["y"]) in table and render._summary(result.gradients["x"]) in table
    head = literal.split(",")[0] + ","
    assert recorded(render.graph_tree(api.graph_view(program, wrt=["x"]))).count(head) >= 2  # y and x
    jac = api.jacobian(program, of="y", wrt=["x"])
    assert render._summary(jac.jacobians["x"]).splitlines()[0] in recorded(render.jacobian_table(jac))


# --------------------------------------------------------------------------- lines and their cost

@pytest.mark.parametrize("char", ["\u2028", "\x85", "\x0c", "\x1c", "\u2029", "\x1d", "\x1e"])
def test_quoted_lines_are_the_lexers_lines(char):
    program = f"a = 1  # one{char}two\nb = a +* 2\n"
    with pytest.raises(GradcliError) as caught:
        api.evaluate(program)
    assert format_error(caught.value).splitlines() == [
        "<expr>:2:8: error: unexpected '*'; expected an expression", "    b = a +* 2", "           ^"]
    with pytest.raises(GradcliError) as caught:
        api.evaluate(f"a = 1  # one{char}two\nb = a +\n")
    assert str(caught.value.pos) == "2:8"  # the end of the input, on the lexer's line 2


def test_a_control_character_is_quoted_as_one_visible_column():
    source = Source("<expr>", "y = 1 +\x0c 2 +* 3\n")
    assert caret_lines(source, Pos(1, 14)) == ["y = 1 +\ufffd 2 +* 3", "             ^"]


def _best_time(job, repeat=3) -> float:
    """The least CPU time of `repeat` runs (CPU, not wall-clock: other processes do not count)."""
    best = float("inf")
    gc.disable()  # a collection's cost depends on whatever else is alive
    try:
        for _ in range(repeat):
            start = time.process_time()
            job()
            best = min(best, time.process_time() - start)
    finally:
        gc.enable()
    return best


def test_quoting_source_lines_costs_linear_time():
    """Each caret once re-split the whole source: n diagnostics of an n-line program cost n²."""
    def quote_every_line(n):
        source = Source("<expr>", "".join(f"y{k} = log(x - {k})\n" for k in range(n)))
        return lambda: [caret_lines(source, Pos(k + 1, 6, -1, -1)) for k in range(n)]

    small, large = _best_time(quote_every_line(16000)), _best_time(quote_every_line(64000))
    assert large < 8 * small, (small, large)  # linear: 4, quadratic: 16


def test_invalid_utf8_lines_cost_linear_time():
    """Each bad line once built a text of all the lines before it: n/50 bad lines after n blank
    ones cost n²/50."""
    def stream(n):
        data = b"\n" * n + b"\xff\n" * (n // 50)
        return lambda: answers(data)

    small, large = _best_time(stream(100_000)), _best_time(stream(400_000))
    assert large < 8 * small, (small, large)  # linear: 4, quadratic: 16
