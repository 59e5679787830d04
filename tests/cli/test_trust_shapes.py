"""An input given a shape without values (`--set 'x=float64[3]'`): `derive` and `graph` read only
shapes and take it; the commands that compute numbers refuse it, naming it. An input given
neither values nor a shape is a number to `derive` and `graph`: where an operation needs more
dimensions, the error names that input and asks for its shape at its place (not the operation's
rank rule). `plot --wrt NAME` of a name the program lacks says so, not which inputs it lacks."""
import json
import pathlib
import subprocess
import sys

import jsonschema
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

MLP = "h = tanh(matmul(x, W)); y = sum(h * h)"


def _gradcli(*args):
    p = subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr, p.stderr
    return p


def test_derive_of_an_mlp_without_shapes_names_the_inputs_that_need_one_at_their_place():
    p = _gradcli("derive", "-e", MLP, "--wrt", "W")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("<expr>:1:17: error: x and W have no shape: give each one a shape, as in "
                               "--set 'x=float64[3]'\n"), p.stderr
    assert "matmul needs arrays of rank 1 or more, got () and ()" in p.stderr  # the rule, as a note
    one = _gradcli("derive", "-e", MLP, "--wrt", "W", "--set", "x=float64[3]")
    assert one.returncode == 2
    assert one.stderr.startswith("<expr>:1:20: error: W has no shape: give one with --set 'W=float64[3]'\n"), \
        one.stderr


@pytest.mark.parametrize("program,column", [("y = x[0] * 2", 5), ("y = sum(x, axis=1)", 9)])
def test_an_index_or_an_axis_of_an_input_without_shape_asks_for_its_shape(program, column):
    p = _gradcli("derive", "-e", program, "--wrt", "x")
    assert p.returncode == 2
    assert p.stderr.startswith(f"<expr>:1:{column}: error: x has no shape: give one with "
                               "--set 'x=float64[3]'\n"), p.stderr


def test_derive_with_shapes_alone_prints_a_program_that_evaluates_to_the_gradient():
    p = _gradcli("derive", "-e", MLP, "--wrt", "W", "--set", "x=float64[3]", "--set", "W=float32[3, 4]",
                 "--format", "json")
    assert p.returncode == 0, p.stderr
    derived = json.loads(p.stdout)["derivative"]
    assert derived["name"] == "dy_dW"
    lines = derived["program"].splitlines()
    assert not [ln for ln in lines if ln.startswith(("x = ", "W = "))]  # free names: no values
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal(3), rng.standard_normal((3, 4))
    run = _gradcli("eval", "-e", derived["program"], "--print", "dy_dW", "--format", "json",
                   "--set", f"x={x.tolist()}", "--set", f"W={w.tolist()}")
    assert run.returncode == 0, run.stderr
    got = np.array(json.loads(run.stdout)["outputs"]["dy_dW"]["value"])
    t = np.tanh(x @ w)
    np.testing.assert_allclose(got, np.outer(x, 2 * t * (1 - t * t)), rtol=1e-12)  # d sum(tanh(xW)^2)/dW


def test_graph_with_a_shape_alone_shows_the_values_it_can_and_none_for_the_others():
    p = _gradcli("graph", "-e", MLP, "--set", "x=[1.0, 2.0, 3.0]", "--set", "W=float64[3, 4]", "--format", "table")
    assert p.returncode == 0, p.stderr
    assert "input W 1:20 (3, 4) (no values)" in p.stdout and "input x 1:17 (3,) [1., 2., 3.]" in p.stdout
    assert "matmul 1:10 (4,) (no values)" in p.stdout
    doc = json.loads(_gradcli("graph", "-e", MLP, "--set", "x=[1.0, 2.0, 3.0]", "--set", "W=float64[3, 4]",
                              "--format", "json").stdout)
    jsonschema.Draft202012Validator(json.loads((ROOT / "docs" / "gradcli.schema.json").read_text())).validate(doc)
    values = {n["label"]: n["value"] for n in doc["graph"]["nodes"]}
    assert values["input W"] is None and values["y = sum"] is None and doc["outputs"] == {"y": None}
    assert values["input x"]["value"] == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("command", [["eval"], ["grad", "--wrt", "x"], ["check", "--wrt", "x"],
                                     ["jacobian", "--wrt", "x"], ["fix"]])
def test_the_commands_that_compute_refuse_a_shape_without_values_naming_the_input(command):
    p = _gradcli(*command, "-e", "y = sum(sin(x) * x)", "--set", "x=float64[3]")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("<expr>:1:13: error: x has a shape (--set x=float64[3]) but no values, and this "
                               "command computes with them: give x's values (a shape alone serves derive and "
                               "graph)\n"), p.stderr


def test_grad_ys_takes_values_only():
    p = _gradcli("grad", "-e", "y = x * 2", "--wrt", "x", "--set", "x=[1.0]", "--grad-ys", "y=float64[1]")
    assert (p.returncode, p.stderr) == (2, "gradcli: error: --grad-ys y: float64[1] is a shape without values; "
                                           "--grad-ys takes values\n")


def test_a_scalar_shape_and_the_spelling_of_shapes():
    p = _gradcli("derive", "-e", "y = x * x * s", "--wrt", "x", "--set", "x=float64[ 2 , 3 ]", "--set", "s=float32[]")
    assert p.returncode == 0, p.stderr
    x = [[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]]
    run = _gradcli("eval", "-e", p.stdout, "--print", "dy_dx", "--format", "json", "--set", f"x={x}", "--set", "s=1.5")
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(json.loads(run.stdout)["outputs"]["dy_dx"]["value"], 2 * np.array(x) * 1.5, rtol=1e-15)
    deep = _gradcli("derive", "-e", "y = x", "--wrt", "x", "--set", "x=float64[" + ",".join(["1"] * 65) + "]")
    assert deep.returncode == 2 and "65 dimensions; arrays have at most 64" in deep.stderr


def test_plot_of_a_name_the_program_lacks_names_it_not_the_inputs_it_lacks():
    p = _gradcli("plot", "-e", "y = sin(x) * x", "--wrt", "z", "--range", "0:1")
    assert (p.returncode, p.stderr) == (2, "gradcli: error: unknown name for --wrt 'z': the program's names "
                                           "are x, y\n")
    close = _gradcli("plot", "-e", "y = sin(xs) * xs", "--wrt", "x", "--range", "0:1")
    assert (close.returncode, close.stderr) == (2, "gradcli: error: unknown name for --wrt 'x' (did you mean xs?): "
                                                   "the program's names are xs, y\n")


def test_derive_says_in_its_header_which_inputs_it_took_to_be_numbers():
    """mean(x)'s derivative 1/n is 1.0 for a number: the program says it took x to be one."""
    p = _gradcli("derive", "-e", "y = mean(x) * w", "--wrt", "x")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == ("# d(y)/dx of <expr>, as a gradcli program (evaluate it with the same inputs); "
                                        "x, w taken to be numbers (no shape given)")
    shaped = _gradcli("derive", "-e", "y = mean(x) * w", "--wrt", "x", "--set", "x=float64[4]", "--set", "w=2.0")
    assert shaped.stdout.splitlines()[0] == ("# d(y)/dx of <expr>, as a gradcli program (evaluate it with the same "
                                             "inputs)")
    assert shaped.stdout.splitlines()[-1] == "dy_dx = broadcast_to(reshape(w, shape=[1]), shape=[4]) / 4.0"


def test_graph_wrt_an_input_no_value_depends_on_draws_the_graph():
    # found by the hostile fuzz: a --wrt input that nothing on the path reads (here a parameter
    # the called function never uses) made the gradient of no values, and min() of nothing, exit 70
    program = "def f(p, q):\n    t = e\n    return t + p\ny = f(x, w)"
    done = _gradcli("graph", "-e", program, "--wrt", "w", "--format", "dot")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("digraph gradcli {") and "y = +" in done.stdout
