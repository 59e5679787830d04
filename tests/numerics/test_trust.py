"""Numbers that were once silently wrong, each against an independent reference: the
analytic value, NumPy, or float64 finite differences. One test per class of bug, and where a
mechanism closes the class (values written once, the op's own rule), a test of the mechanism."""
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from gradcli import api
from gradcli.engine.evaluate import run

# ----------------------------------------------------------------- values are written once

IDENTITY_LIKE = ["y = x", "y = x * 1", "y = x + 0", "y = identity(x)", "y = reshape(x, [3])",
                 "y = tf.identity(x)", "y = stop_gradient(x) + x - stop_gradient(x)"]


@pytest.mark.parametrize("program", IDENTITY_LIKE)
def test_jacobian_of_the_identity_is_the_identity(program):
    # each row is evaluated with the same seed buffer rewritten: a row that aliased the
    # buffer came back as the last row three times
    result = api.jacobian(program, of="y", wrt=["x"], feeds={"x": [3.0, 1.0, 2.0]})
    np.testing.assert_array_equal(result.jacobians["x"], np.eye(3))


def test_jacobian_rows_of_a_linear_map_are_its_matrix():
    a = np.array([[1.0, 2.0, 0.0], [0.0, -1.0, 4.0]])
    result = api.jacobian("y = a @ x", of="y", wrt=["x"], feeds={"x": [1.0, 2.0, 3.0], "a": a})
    np.testing.assert_array_equal(result.jacobians["x"], a)


def test_hessian_of_a_quadratic_form_is_its_symmetric_matrix():
    a = np.array([[2.0, 1.0, 0.0], [3.0, 0.0, 1.0], [0.0, 5.0, 4.0]])
    result = api.hessian("y = sum(x * (a @ x))", wrt=["x"], feeds={"x": [1.0, -2.0, 0.5], "a": a})
    np.testing.assert_allclose(result.hessians["x"], a + a.T, rtol=0, atol=1e-12)


def test_check_of_the_identity_passes_every_element():
    result = api.check("y = x * 1", wrt=["x"], feeds={"x": [3.0, 1.0, 2.0]})
    assert result.passed and result.reports["x"].max_abs_error < 1e-9


def test_run_returns_arrays_the_caller_owns():
    """The ownership rule itself: a returned array is not an override, not a constant of the
    graph, and not a view of either, so writing into it changes nothing else."""
    graph = api.compile_program("y = x\nz = reshape([[3.0], [4.0]], [2])\nw = x * 2", "<test>", {"x": [1.0, 2.0]})
    x, y, z, w = (graph.names[n] for n in ("x", "y", "z", "w"))
    override = np.array([5.0, 6.0])
    out = run(graph, [x, y, z, w], overrides={x: override})
    for value in out.values():
        assert not np.shares_memory(value, override)
    first_z = out[z].copy()
    out[z][:] = -1.0     # the caller writes into what it got: the graph must not see it
    out[y][:] = -1.0
    again = run(graph, [y, z])
    np.testing.assert_array_equal(again[y], [1.0, 2.0])
    np.testing.assert_array_equal(again[z], first_z)


def test_lines_answers_do_not_share_buffers():
    lines = "x = [1.0, 2.0]; y = x\nx = [3.0, 4.0]; y = x * 1\nx = [5.0, 6.0]; y = x + 0\n"
    out = subprocess.run([sys.executable, "-m", "gradcli", "grad", "--wrt", "x", "--lines"], input=lines,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    answers = [json.loads(line) for line in out.stdout.splitlines()]
    assert [a["outputs"]["y"]["value"] for a in answers] == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    assert [a["gradients"]["x"]["value"] for a in answers] == [[1.0, 1.0]] * 3


# ----------------------------------------------------------------- x ** n at 0

@pytest.mark.parametrize("n", [0, 1, 2, 3])
@pytest.mark.parametrize("spelling", ["y = x ** {n}", "y = x ** n", "y = pow(x, n)", "y = np.power(x, n)"])
def test_power_and_its_second_derivative_at_zero_are_the_analytic_limits(spelling, n):
    program = spelling.format(n=n)
    first = {0: 0.0, 1: 1.0, 2: 0.0, 3: 0.0}[n]    # d(x**n)/dx at 0 = n * 0**(n-1), x**0 constant
    second = {0: 0.0, 1: 0.0, 2: 2.0, 3: 0.0}[n]   # n (n-1) 0**(n-2)
    feeds = {"x": 0.0, "n": float(n)} if "{n}" not in spelling else {"x": 0.0}
    g = api.grad(program, wrt=["x"], feeds=feeds)
    assert float(g.gradients["x"]) == first
    assert not g.diagnostics
    h = api.hessian(program, wrt=["x"], feeds=feeds)
    assert float(h.hessians["x"]) == second


def test_power_mixed_second_derivative_keeps_the_exponents_term():
    # d²(x**y)/dxdy = x**(y-1) (1 + y log x): 1/4 at (4, 0); d²/dy² = 4**y log(4)**2
    h = api.hessian("y = power(v[0], v[1])", wrt=["v"], feeds={"v": [4.0, 0.0]}).hessians["v"]
    np.testing.assert_allclose(h, [[0.0, 0.25], [0.25, math.log(4.0) ** 2]], rtol=1e-14)


def test_power_gradient_away_from_zero_matches_the_formula():
    x, n = np.array([0.5, 2.0, 3.0]), np.array([0.0, 1.5, -2.0])
    g = api.grad("y = x ** n", wrt=["x", "n"], feeds={"x": x, "n": n}).gradients
    np.testing.assert_allclose(g["x"], np.where(n == 0, 0.0, n * x ** (n - 1)), rtol=1e-15)
    np.testing.assert_allclose(g["n"], x ** n * np.log(x), rtol=1e-15)


# ----------------------------------------------------------------- slopes in the tails

def test_tanh_and_sigmoid_slopes_keep_their_tails():
    x = np.array([-710.0, -40.0, -35.0, -19.0, -1.0, 0.0, 0.5, 20.0, 40.0, 710.0])
    # sech(x)**2 = 4 e^{-2|x|} / (1 + e^{-2|x|})**2; sigmoid' = e^{-|x|} / (1 + e^{-|x|})**2
    t = np.exp(-2 * np.abs(x))
    e = np.exp(-np.abs(x))
    g = api.grad("y = tanh(x) + sigmoid(x)", wrt=["x"], feeds={"x": x}).gradients["x"]
    np.testing.assert_allclose(g, 4 * t / (1 + t) ** 2 + e / (1 + e) ** 2, rtol=1e-14, atol=0)
    assert g[1] > 0 and g[-2] > 0   # not 1 - tanh(x)**2 = 0 from |x| > 19 on


def test_tanh_second_derivative_matches_the_formula():
    x = np.array([-3.0, -0.2, 0.0, 0.7, 2.5])
    h = api.hessian("y = sum(tanh(x) + sigmoid(x))", wrt=["x"], feeds={"x": x}).hessians["x"]
    s = 1 / (1 + np.exp(-x))
    want = -2 * np.tanh(x) * (1 - np.tanh(x) ** 2) + s * (1 - s) * (1 - 2 * s)
    np.testing.assert_allclose(np.diag(h), want, rtol=1e-12, atol=1e-15)
    assert np.count_nonzero(h - np.diag(np.diag(h))) == 0


# ----------------------------------------------------------------- derive keeps NaN in place

def test_derived_program_of_an_index_keeps_nan_where_it_is():
    program = "z = sqrt(v[0])\ny = sum(z)"
    feeds = {"v": [-1.0, 0.9, 1.2]}
    derived = api.derive(program, wrt="v", feeds=feeds)
    again = api.evaluate(derived, feeds=feeds)
    value = list(again.outputs.values())[-1]
    want = api.grad(program, wrt=["v"], feeds=feeds).gradients["v"]
    np.testing.assert_array_equal(np.isnan(value), [True, False, False])
    np.testing.assert_array_equal(value[1:], want[1:])


# ----------------------------------------------------------------- check judges only numbers

def test_check_with_an_infinite_gradient_fails_with_the_reason_and_the_diagnostic():
    result = api.check("y = sqrt(x)", wrt=["x"], feeds={"x": [0.0, 1.0]})
    report = result.reports["x"]
    assert not result.passed and not report.passed
    assert math.isnan(report.max_abs_error) and math.isnan(report.max_rel_error)
    assert report.reason.startswith("not finite at element [0]: the gradient gives inf, finite differences nan")
    assert [d.kind for d in result.diagnostics][:1] == ["nonfinite_gradient"]
    assert result.diagnostics[0].pos.line == 1 and result.diagnostics[0].pos.column == 5


def test_check_of_an_infinite_gradient_exits_1_without_warnings_from_numpy():
    out = subprocess.run([sys.executable, "-W", "default", "-m", "gradcli", "check", "-e", "y = sqrt(x)", "--wrt", "x",
                          "--set", "x=0", "--format", "plain"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert out.stdout.startswith("x\tFAILED\tnan\tnan\tnot finite at this point")
    assert "RuntimeWarning" not in out.stderr
    assert "the gradient through sqrt is infinity" in out.stderr


def test_check_passes_where_one_element_is_at_a_kink_that_has_a_finite_subgradient():
    # abs at 0: gradient 0 and central differences 0; the other elements are compared as usual
    assert api.check("y = abs(x) + x", wrt=["x"], feeds={"x": [0.0, -2.0, 3.0]}).passed


# ----------------------------------------------------------------- what people see

def test_graph_diagnostics_name_what_the_user_wrote():
    view = api.graph_view("a = log(x - 2)\nb = a * 3\ny = b + sqrt(x)", wrt=["x"], feeds={"x": 1.0})
    (diagnostic,) = [d for d in view.diagnostics if d.kind == "invalid"]
    assert diagnostic.reaches == ["a", "b", "y"]
    nan_grad = api.graph_view("y = sqrt(x) * 0 + x", wrt=["x"], feeds={"x": -1.0})
    for d in nan_grad.diagnostics:
        assert all(r in ("y", "x", "dy/dx") for r in d.reaches), d.reaches


def test_multiply_no_nan_is_zero_where_y_is_zero_even_for_nan_and_inf_x():
    # TensorFlow's documented semantics (and its kernel: the product masked where y == 0), and
    # the gradients its own test asserts: dx = 0, dy = x (math_grad_test's MulNoNanGradientTest)
    x = [0.0, 1.0, np.nan, np.inf, -np.inf]
    r = api.grad("out = tf.math.multiply_no_nan(x, y)", wrt=["x", "y"], feeds={"x": x, "y": [0.0] * 5})
    np.testing.assert_array_equal(r.outputs["out"], [0.0] * 5)
    np.testing.assert_array_equal(r.gradients["x"], [0.0] * 5)
    np.testing.assert_array_equal(r.gradients["y"], x)
