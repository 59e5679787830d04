"""Layer 3: the command line as a user and a shell script see it: exit codes, exact output,
error messages with their place, files and pipes."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def gradcli(*args, stdin=None, cwd=None):
    proc = subprocess.run([sys.executable, "-m", "gradcli", *args], input=stdin, capture_output=True,
                          text=True, cwd=cwd, stdin=None if stdin is not None else subprocess.DEVNULL, timeout=60)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


def strict_json(text):
    def reject(token):
        raise AssertionError(f"bare {token} in JSON")
    return json.loads(text, parse_constant=reject)


def test_eval_plain_is_one_tab_separated_line_per_result():
    p = gradcli("eval", "-e", "x = [1.0, 2.0]; h = x * 2; y = sum(h)", "--print", "h", "--print", "y", "--format", "plain")
    assert (p.returncode, p.stdout, p.stderr) == (0, "h\t2.0 4.0\ny\t6.0\n", "")


def test_piped_output_defaults_to_plain_and_reads_stdin():
    p = gradcli("eval", stdin="x = [1.0, 2.0, 3.0]\ny = sum(x * x) / 4\n")
    assert (p.returncode, p.stdout) == (0, "y\t3.5\n")
    p = gradcli("eval", "-", stdin="2 ** 10")
    assert p.stdout == "_\t1024.0\n"


def test_grad_json_document():
    p = gradcli("grad", "-e", "z = b * 2; y = sum(a * a)", "--wrt", "a", "--wrt", "b",
                "--set", "a=[1, 2]", "--set", "b=3", "--format", "json")
    assert p.returncode == 0
    assert strict_json(p.stdout) == {
        "command": "grad",
        "outputs": {"y": {"shape": [], "dtype": "float64", "value": 5.0}},
        "gradients": {"a": {"shape": [2], "dtype": "float64", "value": [2.0, 4.0]}, "b": None},
        "diagnostics": [{"severity": "info", "kind": "unconnected", "op": "grad", "line": 1, "column": 5,
                         "message": "b has no gradient: y does not depend on b", "suggestion": None}]}
    p = gradcli("grad", "-e", "z = b * 2; y = sum(a * a)", "--wrt", "b", "--set", "a=[1, 2]",
                "--set", "b=[3, 4]", "--unconnected", "zero", "--format", "json")
    assert strict_json(p.stdout)["gradients"]["b"] == {"shape": [2], "dtype": "float64", "value": [0.0, 0.0]}


def test_nonfinite_numbers_are_json_strings_and_strict_exits_1():
    p = gradcli("eval", "-e", "y = log([1.0, 0.0, -1.0]) * [1, 1, 1]", "--format", "json")
    doc = strict_json(p.stdout)
    assert doc["outputs"]["y"]["value"] == [0.0, "-Infinity", "NaN"]
    kinds = {(d["kind"], d["op"]) for d in doc["diagnostics"]}
    assert ("divide_by_zero", "log") in kinds
    p = gradcli("eval", os.path.join(ROOT, "samples", "naive_softmax.expr"), "--strict", "--format", "json")
    assert p.returncode == 1 and strict_json(p.stdout)["outputs"]["y"]["value"] == ["NaN"] * 3


def test_syntax_error_shows_file_line_column_source_and_caret(tmp_path):
    (tmp_path / "prog.expr").write_text("x = 1.0\ny = (x + 2))\n")
    p = gradcli("eval", "prog.expr", cwd=tmp_path)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == "prog.expr:2:12: error: unmatched ')'\n    y = (x + 2))\n               ^\n"


def test_errors_exit_2_with_one_message(tmp_path):
    cases = [
        (["eval", "-e", "y = alpha * beta"], "missing inputs 'alpha', 'beta'"),
        (["eval", "-e", ""], "the program is empty"),
        (["eval", "-e", "y = 1", "--dtype", "float128"], "float128"),
        (["eval", "-e", "y = 1", "--bogus"], "No such option"),
        (["frobnicate"], "No such command"),
        (["grad", "-e", "x = [1.0, 2.0]; y = x * 2", "--wrt", "x", "--grad-ys", "y=[1.0]"],
         "--grad-ys y: has shape (1,), but y has shape (2,)"),
        (["grad", "-e", "y = x * 2", "--wrt", "q", "--set", "x=1"], "unknown name for --wrt 'q'"),
        (["eval", "-e", "y = w * 2", "--set", "w=[1, 2"], "--set w"),
        (["eval", "-e", "y = w * 2", "--set", "w"], "--set expects NAME=VALUE"),
        (["eval", "-e", "y = w * 2", "--set", "w=@nothere.npy"], "cannot read 'nothere.npy'"),
        (["eval", "-e", "y = w * 2", "--set", f"w=@{tmp_path}"], "is a directory"),
        (["eval", "missing_file.expr"], "cannot read 'missing_file.expr'"),
    ]
    for args, message in cases:
        p = gradcli(*args, cwd=tmp_path)
        assert p.returncode == 2, (args, p.stderr)
        assert message in p.stderr, (args, p.stderr)
        assert p.stdout == ""


def test_value_files(tmp_path):
    m = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    np.save(tmp_path / "m.npy", m)
    np.savez(tmp_path / "pair.npz", first=m, second=m * 10)
    (tmp_path / "m.json").write_text(json.dumps(m.tolist()))
    (tmp_path / "m.csv").write_text("1,2,3\n4,5,6\n")
    for spec in ("@m.npy", "@pair.npz:first", "@m.json", "@m.csv"):
        p = gradcli("eval", "-e", "y = sum(x, axis=1)", "--set", f"x={spec}", cwd=tmp_path)
        assert (p.returncode, p.stdout) == (0, "y\t6.0 15.0\n"), spec
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    p = gradcli("eval", "-e", "y = x", "--set", "x=@objects.npy", cwd=tmp_path)
    assert p.returncode == 2 and "never unpickles" in p.stderr
    (tmp_path / "ragged.csv").write_text("1,2\n3\n")
    p = gradcli("eval", "-e", "y = x", "--set", "x=@ragged.csv", cwd=tmp_path)
    assert p.returncode == 2 and "ragged rows" in p.stderr
    p = gradcli("eval", "-e", "y = x", "--set", "x=@pair.npz:zz", cwd=tmp_path)
    assert p.returncode == 2 and "no array 'zz'" in p.stderr


def test_lines_streams_ndjson_and_reports_bad_lines_in_stream():
    p = gradcli("eval", "--lines", stdin="exp(0.0)\n\na = 2; a * 3\na * 3\n")
    lines = [strict_json(ln) for ln in p.stdout.splitlines()]
    assert lines[0]["outputs"]["_"]["value"] == 1.0
    assert lines[1]["outputs"]["_"]["value"] == 6.0
    assert "missing input 'a'" in lines[2]["error"]["message"]
    assert p.returncode == 2
    p = gradcli("grad", "--lines", "--wrt", "x", stdin="x = [1.0, 2.0]; y = sum(x * x)\nx = 3.0; y = sin(x)\n")
    grads = [strict_json(ln)["gradients"]["x"]["value"] for ln in p.stdout.splitlines()]
    assert grads == [[2.0, 4.0], np.cos(3.0)] and p.returncode == 0


def test_lines_answers_each_line_as_it_arrives_and_numbers_lines_across_chunks():
    import select
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen([sys.executable, "-m", "gradcli", "eval", "--lines"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        for k in range(3):  # the next line is not written until this one is answered
            proc.stdin.write(f"y = {k} * 2\n".encode())
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], 30)
            assert ready, f"no answer to line {k + 1} before the next line"
            assert strict_json(proc.stdout.readline())["outputs"]["y"]["value"] == 2.0 * k
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    # a long input: read in chunks, a line split between two of them, blank lines counted
    program = "".join(f"y = {k} + 0.{'0' * 40}1\n" for k in range(4000)) + "\n\r\ny = (\n"
    p = gradcli("eval", "--lines", stdin=program)
    docs = [strict_json(ln) for ln in p.stdout.splitlines()]
    assert [d["outputs"]["y"]["value"] for d in docs[:-1]] == [k + 1e-41 for k in range(4000)]
    assert docs[-1]["error"]["line"] == 4003 and p.returncode == 2


def test_diagnostics_go_to_stderr_like_a_compiler(tmp_path):
    p = gradcli("eval", os.path.join(ROOT, "samples", "naive_softmax.expr"), "--format", "plain")
    assert p.returncode == 0 and p.stdout == "y\tnan nan nan\n"
    assert "naive_softmax.expr:7:5: warning: exp gives infinity at 3 of 3 elements" in p.stderr
    assert "    y = exp(x) / sum(exp(x))\n        ^~~~~~\n" in p.stderr
    assert ("suggestion: replace 'exp(x) / sum(exp(x))' at 7:5 with 'exp(x - stop_gradient(max(x))) / "
            "sum(exp(x - stop_gradient(max(x))))' (or 'softmax(x)') (verified on these inputs") in p.stderr


def test_table_format_draws_a_table():
    p = gradcli("grad", "-e", "y = sum(x * x)", "--wrt", "x", "--set", "x=[1, 2]", "--format", "table")
    assert p.returncode == 0
    assert "∂/∂x" in p.stdout and "[2., 4.]" in p.stdout and "\x1b[" not in p.stdout


def test_float32():
    p = gradcli("eval", "-e", "y = exp(x)", "--set", "x=[88.0, 89.0]", "--dtype", "float32", "--format", "json")
    doc = strict_json(p.stdout)
    assert doc["outputs"]["y"]["dtype"] == "float32"
    assert doc["outputs"]["y"]["value"][1] == "Infinity" and doc["outputs"]["y"]["value"][0] > 1e38


def test_device_cuda_without_cupy_is_a_clear_error():
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed here")
    except ImportError:
        pass
    p = gradcli("eval", "-e", "y = 2.0 * 3.0", "--device", "cuda")
    assert p.returncode == 2 and "--device cuda needs CuPy" in p.stderr


def test_closed_pipe_ends_quietly():
    program = "\n".join(f"y = {k} * 2" for k in range(3000)) + "\n"
    proc = subprocess.run(f"{sys.executable} -m gradcli eval --lines | head -1", shell=True, input=program,
                          capture_output=True, text=True, timeout=120)
    assert proc.stdout.count("\n") == 1 and proc.stderr == ""


def test_help_lists_the_commands():
    p = gradcli("--help")
    assert p.returncode == 0 and "eval" in p.stdout and "grad" in p.stdout


def test_version():
    from gradcli import __version__
    p = gradcli("--version")
    assert (p.returncode, p.stdout) == (0, f"gradcli {__version__}\n")
