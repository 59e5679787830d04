"""The paths that make large text programs fast give the numbers and the text the plain paths
give: gradients through tanh and sigmoid as one equation each (checked against the analytic
derivatives up to the third order, float64 finite differences, and the two-step product
bit for bit), and the leading `NAME = NUMBER` lines read without the LALR loop (the same
syntax tree, the same errors at the same places)."""
import numpy as np
import pytest

from gradcli import api
from gradcli.language import parser
from gradcli.autodiff import gradients
from gradcli.errors import GradcliError
from gradcli.engine.evaluate import run
from gradcli.ops import OPS

X = np.array([-25.0, -3.0, -0.7, 0.0, 0.2, 1.3, 4.0, 30.0])


def _tanh_slope(x):  # sech(x)**2, as the op computes it from x
    t = np.exp(-2.0 * np.abs(x))
    return 4.0 * t / ((1.0 + t) * (1.0 + t))


def _sigmoid_slope(x):
    e = np.exp(-np.abs(x))
    return e / ((1.0 + e) * (1.0 + e))


def _derivatives(program: str, x: np.ndarray, order: int) -> list[np.ndarray]:
    """d^k y / dx^k for k = 1..order (y elementwise in x), each by differentiating the last."""
    graph = api.compile_program(program, feeds={"x": x})
    y, xid = graph.names["y"], graph.names["x"]
    found, target = [], y
    for _ in range(order):
        total = graph.add(OPS["sum"], (target,), {"axis": None, "keepdims": False}, None, "sum")
        (target,) = gradients(graph, [total], [xid])
        found.append(target)
    with np.errstate(all="ignore"):
        values = run(graph, found)
    return [values[f] for f in found]


def test_tanh_chain_gradient_is_the_two_step_product_bit_for_bit():
    # one fused equation computes g * slope(x) exactly as slope then multiply did
    g = api.grad("y = tanh(tanh(x))", wrt=["x"], feeds={"x": X}).gradients["x"]
    np.testing.assert_array_equal(g, _tanh_slope(np.tanh(X)) * _tanh_slope(X))


def test_sigmoid_chain_gradient_is_the_two_step_product_bit_for_bit():
    g = api.grad("y = sigmoid(sigmoid(x))", wrt=["x"], feeds={"x": X}).gradients["x"]
    s = 1.0 / (1.0 + np.exp(-X))
    np.testing.assert_allclose(g, _sigmoid_slope(s) * _sigmoid_slope(X), rtol=1e-15, atol=0)


@pytest.mark.parametrize("program, reference", [
    ("y = 3.0 * tanh(x * x)", lambda x: 3.0 * np.tanh(x * x)),
    ("y = tanh(sigmoid(2.0 * x)) * x", lambda x: np.tanh(1.0 / (1.0 + np.exp(-2.0 * x))) * x),
    ("y = sigmoid(tanh(x) - x)", lambda x: 1.0 / (1.0 + np.exp(-(np.tanh(x) - x)))),
])
def test_gradients_through_fused_rules_match_finite_differences(program, reference):
    x = np.array([-1.7, -0.4, 0.1, 0.9, 2.2])
    g = api.grad(program, wrt=["x"], feeds={"x": x}).gradients["x"]
    h = 1e-6
    np.testing.assert_allclose(g, (reference(x + h) - reference(x - h)) / (2 * h), rtol=1e-7, atol=1e-9)


def test_tanh_derivatives_to_the_third_order_are_the_formulas():
    x = np.array([-2.5, -0.6, 0.0, 0.3, 1.1, 3.0])
    t = np.tanh(x)
    d1, d2, d3 = _derivatives("y = 2.0 * tanh(x)", x, 3)  # g = 2: the fused equation, not the bare slope
    np.testing.assert_allclose(d1, 2.0 * (1 - t * t), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(d2, 2.0 * (-2.0 * t * (1 - t * t)), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(d3, 2.0 * (1 - t * t) * (6.0 * t * t - 2.0), rtol=1e-12, atol=1e-14)


def test_sigmoid_derivatives_to_the_third_order_are_the_formulas():
    x = np.array([-4.0, -0.6, 0.0, 0.3, 1.1, 3.0])
    s = 1.0 / (1.0 + np.exp(-x))
    d1, d2, d3 = _derivatives("y = 2.0 * sigmoid(x)", x, 3)
    np.testing.assert_allclose(d1, 2.0 * s * (1 - s), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(d2, 2.0 * s * (1 - s) * (1 - 2 * s), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(d3, 2.0 * s * (1 - s) * (1 - 6 * s + 6 * s * s), rtol=1e-11, atol=1e-14)


def test_nested_tanh_second_derivative_matches_finite_differences_of_the_first():
    x = np.array([-1.3, -0.2, 0.5, 1.7])
    d1, d2 = _derivatives("y = tanh(tanh(tanh(x)))", x, 2)
    h = 1e-5
    (up,), (down,) = (_derivatives("y = tanh(tanh(tanh(x)))", x + s, 1) for s in (h, -h))
    np.testing.assert_allclose(d2, (up - down) / (2 * h), rtol=1e-7, atol=1e-10)


def test_a_deep_chain_keeps_one_backward_equation_per_link():
    depth = 200
    graph = api.compile_program("y = " + "tanh(" * depth + "x" + ")" * depth, feeds={"x": 0.5})
    before = len(graph.equations)
    gradients(graph, [graph.names["y"]], [graph.names["x"]])
    assert len(graph.equations) - before <= depth + 2  # the seed, and one equation per tanh


def test_float32_gradient_through_tanh_stays_float32_rounding():
    x = np.array([0.3, -1.2, 2.0], dtype=np.float32)
    g = api.grad("y = tanh(tanh(x))", wrt=["x"], feeds={"x": x}, dtype="float32").gradients["x"]
    x32 = x.astype(np.float32)
    t = np.exp(np.float32(-2.0) * np.abs(x32))
    slope = np.float32(4.0) * t / ((np.float32(1.0) + t) * (np.float32(1.0) + t))
    inner = np.tanh(x32)
    t2 = np.exp(np.float32(-2.0) * np.abs(inner))
    slope2 = np.float32(4.0) * t2 / ((np.float32(1.0) + t2) * (np.float32(1.0) + t2))
    np.testing.assert_array_equal(g.astype(np.float32), slope2 * slope)


# ----------------------------------------------------------------- derive reads well

def test_derive_prints_the_fused_tanh_gradient_as_a_division():
    text = api.derive("x = 0.5\ny = 3 * tanh(tanh(x))", wrt="x")
    assert "dy_dx = (3.0 / cosh(tanh(x)) ** 2) / cosh(x) ** 2" in text.splitlines()
    # the printed program evaluates to the gradient
    printed = api.evaluate(text).outputs["dy_dx"]
    expected = api.grad("x = 0.5\ny = 3 * tanh(tanh(x))", wrt=["x"]).gradients["x"]
    np.testing.assert_allclose(printed, expected, rtol=1e-15)


def test_derive_prints_the_fused_sigmoid_gradient_as_a_product():
    text = api.derive("x = 0.5\ny = sigmoid(sigmoid(x))", wrt="x")
    line = text.splitlines()[-1]
    assert line == "dy_dx = (sigmoid(sigmoid(x)) * sigmoid(-sigmoid(x))) * sigmoid(x) * sigmoid(-x)"
    printed = api.evaluate(text).outputs["dy_dx"]
    expected = api.grad("x = 0.5\ny = sigmoid(sigmoid(x))", wrt=["x"]).gradients["x"]
    np.testing.assert_allclose(printed, expected, rtol=1e-15)


def test_derive_of_a_single_tanh_is_the_bare_slope():
    text = api.derive("x = 0.5\ny = tanh(x)", wrt="x")
    assert text.splitlines()[-1] == "dy_dx = 1.0 / cosh(x) ** 2"


# ----------------------------------------------------------------- input lines

def _parse_both(text: str, max_memory=None):
    """(the parse with the input-line path, the parse with the LALR loop alone)."""
    p = parser._parser()
    slow = parser._Parser.__new__(parser._Parser)
    slow.__dict__.update(p.__dict__)
    slow._input_lines = lambda text, most: ([], 0)
    out = []
    for which in (p, slow):
        try:
            out.append(repr(which.parse(text, "start", max_memory)))
        except GradcliError as err:
            out.append(f"error {err.message!r} at {err.pos!r}")
    return out


INPUT_LINE_PROGRAMS = [
    "x = 1\ny = 2\n", "x0 = 0.5\nx1 = 1.5e-3\ny = sin(x0) * x1\n", "x=1\ny =2.\nz= .5E+2\nw = x\n",
    "x = 1\n  y = 2\n", "x = 1\n\ny = x\n", "x = 1\n# note\ny = x\n", "x = 1\ny = 2 # note\nz = y\n",
    "x = 1.5e3\nTrue = 2\n", "a.b = 1\n", "x = 1\nfor = 2\n", "x = 1\nnot = 2\n", "x = 1 \\\n + 2\ny = x\n",
    "x = 1\ny = 2\t\nz = (x\n)\n", "x = 1\n;\n", "x = 1\ny = 1j\n", "x = 1\ny == 2\n", "x = 1\ny += 2\n",
    "x = 1\ny = 2\n", "x = 1\nx = 2\nx = 3\n", "x = 1\ndef f(a):\n    return a\ny = f(x)\n", "x = 1\ny = 2e\n",
    "x = 1\n)\n", "x = 1\ny = 2\nz = 3\n    \n",
]


@pytest.mark.parametrize("text", INPUT_LINE_PROGRAMS)
def test_input_lines_parse_as_the_lalr_loop_parses_them(text):
    fast, slow = _parse_both(text)
    assert fast == slow


def test_input_lines_are_counted_against_max_memory_as_tokens():
    text = "".join(f"x{i} = {i}.5\n" for i in range(5000)) + "y = x0 + x1\n"
    limit = 1024  # the allowance for a small program, and the tokens of about 16,000 more
    fast, slow = _parse_both(text, limit)
    assert fast == slow
    big = "".join(f"x{i} = {i}.5\n" for i in range(40000)) + "y = x0\n"
    fast, slow = _parse_both(big, limit)
    assert fast == slow and fast.startswith("error 'the program is too large to parse")
