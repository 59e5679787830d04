"""docs/contract.md §5: every kind of diagnostic and every suggestion, each triggered by a program, and
clean programs staying silent."""
import numpy as np
import pytest

from gradcli import api


def diagnostics(program, wrt=None, **feeds):
    if wrt:
        return api.grad(program, wrt=wrt, feeds=feeds).diagnostics
    return api.evaluate(program, feeds=feeds).diagnostics


def only(diags, kind):
    found = [d for d in diags if d.kind == kind]
    assert len(found) == 1, [(d.kind, d.message) for d in diags]
    return found[0]


def test_overflow_in_a_softmax_is_reported_once_with_the_stable_rewrite():
    diags = diagnostics("y = exp(x) / sum(exp(x))", x=[1000.0, 1001.0, 1002.0])
    d = only(diags, "overflow")
    assert (d.op, d.pos.line, d.pos.column, d.count) == ("exp", 1, 5, 3)
    assert "its argument reaches 1002" in d.message and "709.78" in d.message
    assert "turns the infinities into NaN" in d.message
    assert [(p.line, p.column) for p in d.also] == [(1, 18)]
    assert d.reaches == ["y"]
    shifted = "exp(x - stop_gradient(max(x))) / sum(exp(x - stop_gradient(max(x))))"
    assert d.fix.replacement == shifted and (d.fix.start, d.fix.end) == (4, 24)
    assert d.fix_json == {"start": [1, 5], "end": [1, 25], "replacement": shifted, "verified": True,
                          "alternatives": ["softmax(x)"]}
    assert f"replace 'exp(x) / sum(exp(x))' at 1:5 with '{shifted}' (or 'softmax(x)') (verified" in d.suggestion


# (program, x, kind, op, the verified replacement or None, words of the hint)
@pytest.mark.parametrize("program,x,kind,op,replacement,words", [
    ("y = log(sum(exp(x)))", [1000.0, 1.0], "overflow", "exp", "logsumexp(x)", None),
    ("y = log(1 + exp(x))", [1000.0], "overflow", "exp", "softplus(x)", None),
    ("y = log(sigmoid(x))", [-1000.0], "divide_by_zero", "log", "log_sigmoid(x)", None),
    # a cap at the pole changes the value (-27.6 for log 0 = -inf): shown as what it is, never a fix
    ("y = log(x)", [0.0, 1.0], "divide_by_zero", "log", None, "'log(maximum(x, 1e-12))' would be a cap"),
    ("y = log(x)", [-1.0], "invalid", "log", None, "check the sign of its argument"),
    ("y = 1 / (x - 1)", [1.0, 2.0], "divide_by_zero", "/", None,
     "'where((x - 1) != 0, 1 / where((x - 1) != 0, (x - 1), 1.0), 0.0)' would be a cap"),
    ("y = sqrt(x)", [-4.0], "invalid", "sqrt", None, "check the sign of its argument"),
    ("y = x * 1e308", [10.0, 1.0], "overflow", "*", None, "rescale"),
])
def test_forward_origins_and_fixes(program, x, kind, op, replacement, words):
    d = only(diagnostics(program, x=x), kind)
    assert d.op == op and d.severity == "warning"
    if replacement is None:
        assert d.fix is None and words in d.suggestion
        if d.guards_json:  # a guard is named as what it is, never as verified
            assert all(g["verified"] is False for g in d.guards_json) and "not a fix: it gives" in d.suggestion
        else:
            assert "(" not in d.suggestion  # unverified: words, never code
    else:
        assert d.fix.replacement == replacement
        fixed = api.evaluate(d.fix.apply(program), feeds={"x": x})
        assert np.isfinite(fixed.outputs["y"]).all()


def test_backward_origin_sqrt_at_zero():
    r = api.grad("y = sum(sqrt(x))", wrt=["x"], feeds={"x": [0.0, 4.0]})
    np.testing.assert_array_equal(r.gradients["x"], [np.inf, 0.25])
    d = only(r.diagnostics, "nonfinite_gradient")
    assert (d.op, d.pos.column, d.count, d.reaches) == ("sqrt", 9, 1, ["d/dx"])
    # the slope is +inf there (from the right): a gradient of 0 is a choice, not the mathematics
    assert d.fix is None
    assert [g["replacement"] for g in d.guards_json] == ["where(x > 0, sqrt(where(x > 0, x, 1.0)), 0.0)"]


def test_the_where_trap_suggests_the_double_where():
    r = api.grad("y = sum(where(x > 0, log(x), 0.0))", wrt=["x"], feeds={"x": [0.0, 2.0]})
    assert np.isnan(r.gradients["x"][0]) and r.gradients["x"][1] == 0.5
    assert only(r.diagnostics, "divide_by_zero").op == "log"  # forward, in the discarded branch
    d = only(r.diagnostics, "nonfinite_gradient")
    assert d.fix.replacement == "where(x > 0, x, 1.0)"
    assert "discards this branch's value but not its gradient" in r.diagnostics[0].suggestion or d.fix


def test_discarded_nan_is_reported_but_outputs_stay_finite():
    r = api.grad("y = sum(where(x > 0, log(x), 0.0))", wrt=["x"], feeds={"x": [-1.0, 2.0]})
    assert only(r.diagnostics, "invalid").op == "log"
    assert r.nonfinite() == []


def test_origin_inside_a_function_names_the_call_site():
    program = "x = [1000.0, 1.0]\ndef f(a):\n    return exp(a) + 1\n\ny = f(x)\n"
    d = only(diagnostics(program), "overflow")
    assert (d.pos.line, d.pos.column) == (3, 12)
    assert [(p.line, p.column) for p in d.stack] == [(5, 5)]


def test_nonfinite_inputs_and_the_nan_they_make():
    diags = diagnostics("y = x - x", x=[np.inf, 1.0])
    assert only(diags, "nonfinite_input").message == "input x holds 1 non-finite number (inf)"
    d = only(diags, "invalid")
    assert d.op == "-" and "inf - inf" in d.message


def test_underflow_then_divide_is_explained():
    diags = diagnostics("y = 1 / exp(-800 * x)", x=[1.0])
    assert only(diags, "divide_by_zero").op == "/"
    d = only(diags, "underflow")
    assert d.op == "exp" and d.severity == "info" and "argument reaches -800" in d.message


def test_headroom_and_float32_warnings():
    d = only(diagnostics("y = exp(x)", x=[705.0]), "headroom")
    assert "within a factor of 119" in d.message
    d = only(diagnostics("y = exp(x)", x=[100.0]), "float32_overflow")
    assert "exp overflows float32 above 88.72" in d.message


def test_ties_and_kinks_of_differentiated_operations():
    r = api.grad("y = sum(min(x, axis=1) * 2)", wrt=["x"], feeds={"x": [[1.0, 1.0, 2.0], [0.0, 3.0, 0.0]]})
    d = only(r.diagnostics, "tie")
    assert (d.op, d.count) == ("min", 2) and "split evenly" in d.message
    r = api.grad("y = sum(abs(x)) + sum(maximum(x, 1))", wrt=["x"], feeds={"x": [0.0, 1.0]})
    assert only(r.diagnostics, "kink").op == "abs"
    assert only(r.diagnostics, "tie").op == "maximum"


def test_a_max_that_is_not_differentiated_reports_no_tie():
    r = api.grad("y = sum(exp(x - stop_gradient(max(x))))", wrt=["x"], feeds={"x": [2.0, 2.0]})
    assert r.diagnostics == []
    assert api.evaluate("y = max(x)", feeds={"x": [2.0, 2.0]}).diagnostics == []


def test_blocked_gradients_say_why():
    r = api.grad("z = b * 2\ny = sum(a * a) + sum(stop_gradient(c) * 2) + sum(sign(c))",
                 wrt=["a", "b", "c"], feeds={"a": [1.0], "b": 1.0, "c": 1.0})
    assert r.gradients["b"] is None and r.gradients["c"] is None
    unconnected = {d.message for d in r.diagnostics if d.kind == "unconnected"}
    assert unconnected == {
        "b has no gradient: y does not depend on b",
        "c has no gradient: every path from c to y passes through an operation that passes no gradient: "
        "stop_gradient at 2:22, sign at 2:50"}


@pytest.mark.parametrize("shift", [1e4, -1e4, 0.0])
def test_stable_softmax_is_clean_at_large_inputs(shift):
    program = "z = x - stop_gradient(max(x))\ny = exp(z) / sum(exp(z))\nloss = sum(w * y)"
    r = api.grad(program, of=["loss"], wrt=["x"], feeds={"x": np.array([1.0, 2.0, 3.0]) + shift, "w": [1.0, -1.0, 2.0]})
    assert r.diagnostics == [] and np.isfinite(r.gradients["x"]).all()


def test_unused_set_is_a_warning():
    r = api.evaluate("y = x * 2", feeds={"x": 1.0, "q": 2.0})
    assert only(r.diagnostics, "unused_input").message == "the value given for q is ignored: the program does not use 'q'"
    # `e` is Euler's number in the language, whatever --set says: the warning names it so
    r = api.evaluate("y = e * x", feeds={"x": 1.0, "e": 2.0})
    assert float(r.outputs["y"]) == np.e
    assert only(r.diagnostics, "unused_input").message == \
        "the value given for e is ignored: 'e' is the constant 2.718281828459045 in gradcli's language, not an input"


def test_underflow_through_a_reduction_is_explained():
    # found by the fuzzer: the zero denominator came from prod, a reduction
    r = api.evaluate("y = u / prod(x)", feeds={"u": [1.0, 2.0], "x": [1e-200, 1e-200]})
    assert only(r.diagnostics, "divide_by_zero").op == "/"
    assert only(r.diagnostics, "underflow").op == "prod"
    r = api.evaluate("y = u / prod((0.5 + 0 * u) < s)", feeds={"u": [1.0, 2.0], "s": 0.0})
    assert only(r.diagnostics, "divide_by_zero").op == "/"


def test_ties_are_seen_when_buffers_are_reused():
    # maximum's result may land in a recycled buffer; its inputs are intact and its tie reported
    x = np.zeros(5000)
    r = api.grad("a = exp(x) * 2\nb = a + 1\nc = maximum(b * 0 + 3, x + 3)\ny = sum(c)", wrt=["x"], feeds={"x": x})
    assert only(r.diagnostics, "tie").count == 5000


@pytest.mark.parametrize("dtype,big", [("float64", 1e300), ("float32", 1e30)])
def test_dividing_by_one_number_still_catches_overflow(dtype, big):
    """Dividing bounded values by a known scalar is proven finite without a pass over the
    result; a small enough scalar still overflows, and that is still reported."""
    r = api.evaluate("y = x / s", feeds={"x": np.array([big, 1.0], dtype), "s": np.array(1e-10, dtype)},
                     dtype=dtype)
    d = only(r.diagnostics, "overflow")
    assert (d.op, d.count) == ("/", 1)
    assert api.evaluate("y = x / s", feeds={"x": np.array([1e3, 1.0], dtype), "s": np.array(1e-10, dtype)},
                        dtype=dtype).diagnostics == []
    r = api.evaluate("y = x / s", feeds={"x": np.array([1.0, 2.0], dtype), "s": np.array(0.0, dtype)}, dtype=dtype)
    assert only(r.diagnostics, "divide_by_zero").count == 2


@pytest.mark.parametrize("program,x,kind,op,words", [
    # the op records of these functions say how they fail; the engine reads nothing else
    ("y = exp2(x)", [1000.0, 1025.0], "overflow", "exp2", "exp2 overflows float64 above 1024.00"),
    ("y = sinh(x)", [700.0, 711.0], "overflow", "sinh", "sinh overflows float64 above 710.48"),
    ("y = cosh(x)", [-711.0, 1.0], "overflow", "cosh", "cosh overflows float64 above 710.48"),
    ("y = log2(x)", [0.0, 2.0], "divide_by_zero", "log2", "its argument is 0"),
    ("y = log10(x)", [0.0, 2.0], "divide_by_zero", "log10", "its argument is 0"),
    ("y = reciprocal(x)", [0.0, 2.0], "divide_by_zero", "reciprocal", "its argument is 0"),
    ("y = arccosh(x)", [0.5, 2.0], "invalid", "arccosh", "its argument reaches 0.5, below its domain's start 1"),
    ("y = log(x)", [0.0, -1.0, -3.0, 1.0], "divide_by_zero", "log",
     "its argument is 0 at 1, and it reaches -3, below its domain's start 0, at 2"),
])
def test_each_function_s_failure_is_explained_from_its_record(program, x, kind, op, words):
    d = only(diagnostics(program, x=x), kind)
    assert d.op == op and words in d.message, d.message


@pytest.mark.parametrize("program", ["y = cumsum(x)", "y = cumprod(x)"])
def test_scans_that_grow_get_the_headroom_check(program):
    d = only(diagnostics(program, x=[1e308, 1.0, 0.5]), "headroom")
    assert d.op == program[4:-3] and "of the largest float64" in d.message
