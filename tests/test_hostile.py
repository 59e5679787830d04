"""Regression tests for what the hostile-input audit found (one per finding), and a fast test
for each class of promise that had none: output integrity, memory, time, no exit 70 on
ordinary input, signals. The long generated search is tests/test_hostile_fuzz.py."""
import json
import os
import resource
import subprocess
import sys

import pytest

BIG = "y = broadcast_to(1.5, shape=[100000])"  # about 500 KB of JSON


def run(*args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, preexec_fn=None, timeout=120, cwd=None):
    proc = subprocess.run([sys.executable, "-m", "gradcli", *args], stdin=stdin, stdout=stdout,
                          stderr=subprocess.PIPE, preexec_fn=preexec_fn, timeout=timeout, cwd=cwd)
    err = proc.stderr.decode()
    assert "Traceback" not in err, err
    return proc.returncode, proc.stdout.decode() if proc.stdout is not None else None, err


def file_size_limit(size):
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


# --------------------------------------------------------------------------- output integrity

@pytest.mark.parametrize("lines", [False, True])
def test_appending_to_a_file_that_fills_up_keeps_what_was_there(tmp_path, lines):
    # `>> log` opens with O_APPEND: the offset is 0, the writes land at the end. Cutting back
    # to "offset + whole units" truncated the user's file to nothing.
    path = tmp_path / "log.ndjson"
    before = b'{"earlier": "run"}\n' * 1000  # 19 KB
    path.write_bytes(before)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)  # as the shell's >> opens it: no seek to the end
    with open(fd, "wb", closefd=True) as out:
        if lines:
            program = b"".join(b"y = broadcast_to(%d.5, shape=[20])\n" % k for k in range(2000))
            proc = subprocess.run([sys.executable, "-m", "gradcli", "eval", "--lines"], input=program, stdout=out,
                                  stderr=subprocess.PIPE, preexec_fn=file_size_limit(65536), timeout=60)
            code, err = proc.returncode, proc.stderr.decode()
        else:
            code, _, err = run("eval", "-e", BIG, "--format", "json", stdout=out, preexec_fn=file_size_limit(65536))
    assert (code, err) == (74, "gradcli: cannot write the output: File too large\n")
    data = path.read_bytes()
    assert data.startswith(before)
    added = data[len(before):]
    if lines:
        assert added.endswith(b"\n") and len(added.splitlines()) > 10
        assert all("outputs" in json.loads(line) for line in added.splitlines())
    else:
        assert added == b""


# --------------------------------------------------------------------------- no exit 70 on ordinary input

@pytest.mark.parametrize("program", [
    "y = broadcast_to(x, shape=[-5])", "y = broadcast_to(x, shape=[2, -1])", "y = broadcast_to(x, shape=[0, -5])",
    "y = reshape(x, shape=[-5])",
])
def test_a_negative_dimension_is_a_user_error_at_its_place(program):
    from gradcli import api
    from gradcli.errors import GradcliError
    with pytest.raises(GradcliError) as caught:
        api.evaluate(program, feeds={"x": 1.0})
    assert caught.value.pos is not None and "negative dimension" in caught.value.message


def test_a_negative_dimension_on_a_line_is_answered_in_its_place():
    proc = subprocess.run([sys.executable, "-m", "gradcli", "eval", "--lines"], capture_output=True, timeout=60,
                          input=b"y = broadcast_to(1, shape=[-5])\ny = mean(2, axis=0)\ny = 1\n")
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 2 and proc.stderr == b"" and len(answers) == 3
    assert "negative dimension" in answers[0]["error"]["message"] and "internal" not in answers[0]["error"]
    assert answers[2]["outputs"]["y"]["value"] == 1.0


@pytest.mark.parametrize("program,missing", [
    ("def f(w, X):\n    n = X.shape[0]\n    return n * sum(w)\n", "missing inputs 'w', 'X'"),  # found by the fuzz
    ("def f(X):\n    return X.ndim\n", "missing input 'X'"),
    ("def f(X):\n    return X.size * 2\n", "missing input 'X'"),
    ("y = len(x)", "missing input 'x'"),  # was "len() of a number"
])
def test_the_shape_of_a_missing_input_is_a_missing_input_error(program, missing):
    from gradcli import api
    from gradcli.errors import GradcliError
    with pytest.raises(GradcliError) as caught:
        api.evaluate(program)
    assert caught.value.message.startswith(missing) and caught.value.pos is not None


def test_an_index_too_large_for_any_array_is_a_user_error():
    from gradcli import api
    from gradcli.errors import GradcliError
    with pytest.raises(GradcliError, match="too large for any array"):
        api.evaluate("y = x[2**63]", feeds={"x": [1.0, 2.0]})
