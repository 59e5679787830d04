"""The broadcast diagnostic: an elementwise operation that crosses two operands of the same
length on different axes ((n,) against (n, 1), (n, 1) against (1, n)) is warned of at its
place, with the shapes and the fix; where the program asks for the crossing (a new axis,
reshape, expand_dims, outer, keepdims, a value and its own transpose) or the lengths differ,
nothing is said. Each accidental result is also checked against NumPy, which computes the
same larger array silently."""
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from gradcli import api

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = str(ROOT / "samples" / "linear_regression.expr")
X = np.array([[1.0, 2.0], [2.0, 0.5], [3.0, -1.0], [4.0, 1.5]])
T = np.array([3.0, 2.5, 1.0, 5.0])
FEEDS = {"x": np.array([1.0, 2.0, 3.0]), "c": np.array([[1.0], [2.0], [3.0]]), "r": np.array([[1.0, 2.0, 3.0]]),
         "X": np.ones((3, 2)), "W": np.array([[1.0], [2.0]]), "m": np.array([1.0, 2.0])}


def broadcasts(program, wrt=None):
    feeds = {k: v for k, v in FEEDS.items() if k in program}
    result = api.grad(program, wrt=wrt, feeds=feeds) if wrt else api.evaluate(program, feeds=feeds)
    return [d for d in result.diagnostics if d.kind == "broadcast"], result


# (program, line, column, the operands as the message names them, the result's shape)
@pytest.mark.parametrize("program,line,column,operands,shape", [
    ("y = X @ W - x", 1, 11, "'X @ W' (3, 1) against 'x' (3,)", (3, 3)),         # a column of weights
    ("y = x - c", 1, 7, "'x' (3,) against 'c' (3, 1)", (3, 3)),                  # a column read as data
    ("y = c * r", 1, 7, "'c' (3, 1) against 'r' (1, 3)", (3, 3)),                # a transposed column
    ("y = np.where(c > 0, x, 0.0)", 1, 5, "'c > 0' (3, 1) against 'x' (3,)", (3, 3)),
    ("y = (c + 1.0)[:2] - x[:2]", 1, 19, "'(c + 1.0)[:2]' (2, 1) against 'x[:2]' (2,)", (2, 2)),
    ("def f(a, b):\n    return a - b\ny = f(c, x)\n", 2, 14, "'c' (3, 1) against 'x' (3,)", (3, 3)),
])
def test_an_accidental_crossing_is_warned_of_at_its_place(program, line, column, operands, shape):
    found, result = broadcasts(program)
    assert len(found) == 1, [d.message for d in found]
    d = found[0]
    assert (d.severity, d.pos.line, d.pos.column) == ("warning", line, column)
    assert f"broadcasts {operands} into a {shape} result, larger than both" in d.message
    assert result.outputs["y"].shape == shape  # what NumPy computes too, silently


@pytest.mark.parametrize("program", [
    "y = x[:, None] - x",                                     # a new axis, asked for
    "y = x[:, np.newaxis] - x[np.newaxis, :]",
    "y = x.reshape(-1, 1) - x",
    "y = np.expand_dims(x, 1) - x",
    "y = torch.unsqueeze(x, 1) - x",
    "y = np.outer(x, x) - x",
    "y = x[:, None][:2] * 2 - x[:2]",                         # a slice of a new axis keeps it
    "y = np.sum(X ** 2, axis=1, keepdims=True) + np.sum(X ** 2, axis=1)",  # pairwise norms
    "y = c - c.T",                                            # a value and its transpose: every pair
    "y = c[:, 0:1].T - c[:, 0:1]",
    "y = c - m",                                              # lengths 3 and 2: no accident to guess
    "y = c * 2.0 + c",                                        # a number, the same shape
    "y = X - X.mean(axis=1, keepdims=True)",                  # (3, 2) against (3, 1): not larger
    "y = x - x.mean()",
])
def test_no_warning_where_the_program_asks_for_the_axes_or_nothing_crosses(program):
    found, _ = broadcasts(program)
    assert found == [], [d.message for d in found]


def test_a_gradient_adds_no_second_warning():
    found, result = broadcasts("y = sum(X @ W - x)", wrt=["W"])
    assert [(d.pos.line, d.pos.column) for d in found] == [(1, 15)]
    np.testing.assert_array_equal(result.gradients["W"], [[9.0], [9.0]])  # 3 rows of x per row of X


def gradcli(*args, cwd):
    proc = subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True, text=True, cwd=cwd,
                          stdin=subprocess.DEVNULL, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_a_column_of_targets_is_warned_of_on_stderr_with_the_fix(tmp_path):
    """The linear-regression sample with its targets given as a column: the gradient is that of
    a mean over 4 x 4 residuals (as NumPy computes it); gradcli says so, exit 0."""
    proc = gradcli("grad", SAMPLE, "--of", "loss", "--wrt", "w", "--wrt", "b",
                   "--set", "t=[[3.0], [2.5], [1.0], [5.0]]", "--format", "plain", cwd=tmp_path)
    residual = (X @ [0.5, 0.5])[None, :] - T[:, None]
    grad_w = 2 * np.mean(residual[:, :, None] * X[None, :, :], axis=(0, 1))
    assert proc.returncode == 0
    name, numbers = proc.stdout.splitlines()[0].split("\t")
    np.testing.assert_allclose(np.array(numbers.split(), dtype=float), grad_w, rtol=1e-14)
    assert proc.stderr.splitlines() == [
        f"{SAMPLE}:11:23: warning: '-' broadcasts 'prediction' (4,) against 't' (4, 1) into a (4, 4) result, "
        "larger than both: each of the 4 elements of one meets every one of the other's [broadcast]",
        "    residual = prediction - t",
        "               ~~~~~~~~~~~^~~",
        "    suggestion: if one value per element was meant, flatten 't' (4, 1) to (4,) with `t.reshape(-1)`; "
        "if the 4 x 4 table of every pair was meant, write the new axis yourself (`v[:, None]`, `np.newaxis`, "
        "`reshape`, `expand_dims`), which silences this warning",
    ]


def test_the_warning_is_in_json_diagnostics_and_follows_the_schema(tmp_path):
    proc = gradcli("eval", "-e", "y = X @ W - x", "--set", "X=[[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]",
                   "--set", "W=[[1.0], [2.0]]", "--set", "x=[1.0, 2.0, 3.0]", "--format", "json", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    doc = json.loads(proc.stdout)
    schema = json.loads((ROOT / "docs" / "gradcli.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    [d] = [d for d in doc["diagnostics"] if d["kind"] == "broadcast"]
    assert (d["severity"], d["op"], d["line"], d["column"]) == ("warning", "-", 1, 11)
    assert d["message"].startswith("'-' broadcasts 'X @ W' (3, 1) against 'x' (3,) into a (3, 3) result")
    assert d["suggestion"].startswith("if one value per element was meant, flatten 'X @ W' (3, 1) to (3,) "
                                      "with `(X @ W).reshape(-1)`")
    assert doc["outputs"]["y"]["shape"] == [3, 3]


def test_a_one_column_csv_crosses_nothing(tmp_path):
    """Read as NumPy reads it, a one-column file is a vector: no crossing, no warning."""
    (tmp_path / "t.csv").write_text("3.0\n2.5\n1.0\n5.0\n")
    proc = gradcli("grad", SAMPLE, "--of", "loss", "--wrt", "w", "--set", "t=@t.csv", "--format", "plain",
                   cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "w\t-6.5 -3.5\n", "")
