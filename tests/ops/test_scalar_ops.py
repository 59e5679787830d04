"""The numbers-only implementation of the op records (gradcli.ops.scalar: Python floats and the
math module) against NumPy's float64, bit for bit: each op of SCALAR_OPS on a grid of numbers (±0,
subnormal, tiny, huge, ±inf, nan and ordinary ones), and each one's value and gradient through the
library (lowering, gradient rules, evaluation, checks). Where the scalar implementation gives way
(NeedsArrays: Python's float raises where NumPy gives inf or nan), NumPy's own answer must be one
that the numerical checks speak of (not finite) or that NumPy warns of: the scalar path is never
left for an ordinary number. tanh is not in the set: NumPy's float64 tanh is its own and differs
from the C library's in the last bit (this test shows it)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from gradcli import api
from gradcli.ops import OPS
from gradcli.ops import scalar as numbers

TINY = float(np.finfo(np.float64).tiny)
HUGE = float(np.finfo(np.float64).max)
GRID = [0.0, -0.0, 5e-324, -5e-324, TINY, -TINY, 1e-300, -1e-300, 1e-8, -1e-8, 0.5, -0.5, 1.0, -1.0,
        1.0 + 2 ** -52, 2.0, -2.0, 3.0, math.pi, -math.pi, 10.0, -10.0, 19.5, 700.0, 710.0, -745.0, 1e16,
        -1e16, 1e154, 1e300, -1e300, HUGE, -HUGE, math.inf, -math.inf, math.nan]
ORDINARY = [float(v) for v in np.random.default_rng(20261128).standard_normal(60) * 3]

ALL = numbers.EXACT_OPS | numbers.LIBM_OPS
UNARY = sorted(n for n in ALL if OPS[n].args == ("x",) and OPS[n].elementwise and not OPS[n].params)
BINARY = sorted(n for n in ALL if len(OPS[n].args) == 2 and OPS[n].elementwise)
LIBM_HERE = numbers.numpy_calls_the_c_library()


def test_the_c_library_s_functions_are_used_only_where_numpy_s_loops_are_the_c_library_s():
    assert numbers.SCALAR_OPS == (ALL if LIBM_HERE else numbers.EXACT_OPS)
    assert not numbers.EXACT_OPS & numbers.LIBM_OPS and "tanh" not in ALL


def compared_here(name):
    if name in numbers.LIBM_OPS and not LIBM_HERE:
        pytest.skip("NumPy's float64 loops are its own here (AVX-512, or not x86-64 Linux): the op is left to NumPy")


def same(a: float, b) -> bool:
    """Bit for bit (the sign of a zero included); any NaN equals any NaN (payloads are never printed)."""
    if a is None or b is None:  # (an unconnected gradient)
        return a is None and b is None
    b = float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return np.float64(a).view(np.uint64) == np.float64(b).view(np.uint64)


def numpy_forward(op, *args):
    """NumPy's answer, and whether NumPy warned (a number the checks would speak of)."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="warn"):
        warnings.simplefilter("always")
        value = float(op.forward(np, *(np.float64(a) for a in args)))
    return value, bool(caught)


def check_forward(name, *args):
    op = OPS[name]
    expected, warned = numpy_forward(op, *args)
    try:
        got = op.forward(numbers.NAMESPACE, *args)
    except numbers.NeedsArrays:
        # only where NumPy's answer is one the checks look at closely anyway
        assert warned or not math.isfinite(expected) or not all(map(math.isfinite, args)), (name, args, expected)
        return False
    assert type(got) is float and same(got, expected), (name, args, got, expected)
    return True


@pytest.mark.parametrize("name", UNARY)
def test_each_unary_op_is_numpy_s_float64_bit_for_bit(name):
    compared_here(name)
    answered = [check_forward(name, x) for x in GRID + ORDINARY]
    assert sum(answered) >= len(ORDINARY) // 3  # (the scalar path does answer: the test can fail)


@pytest.mark.parametrize("name", BINARY)
def test_each_binary_op_is_numpy_s_float64_bit_for_bit(name):
    compared_here(name)
    points = GRID + ORDINARY[:12]
    answered = [check_forward(name, x, y) for x in points for y in points]
    assert sum(answered) >= len(points) ** 2 // 4


def test_where_picks_as_numpy_does():
    for c in (0.0, -0.0, 1.0, math.nan, -2.0):
        for x, y in ((1.0, 2.0), (-0.0, 0.0), (math.nan, math.inf)):
            assert same(OPS["where"].forward(numbers.NAMESPACE, c, x, y),
                        OPS["where"].forward(np, np.float64(c), np.float64(x), np.float64(y)))


def test_tanh_is_left_to_numpy_because_numpy_s_differs_from_the_c_library_s():
    assert "tanh" not in numbers.SCALAR_OPS
    xs = np.random.default_rng(1).uniform(-3, 3, 20000)
    if LIBM_HERE:  # (NumPy's tanh is not the C library's even where its other loops are)
        assert any(float(np.tanh(x)) != math.tanh(float(x)) for x in xs)


def test_the_namespace_refuses_what_it_does_not_compute():
    for call in (lambda: numbers.NAMESPACE.sum, lambda: numbers.NAMESPACE.exp(1000.0),
                 lambda: numbers.NAMESPACE.log(0.0), lambda: numbers.NAMESPACE.sqrt(-1.0),
                 lambda: numbers.NAMESPACE.divide(1.0, 0.0), lambda: numbers.NAMESPACE.pow(-8.0, 1 / 3),
                 lambda: numbers.OPERATORS["divide"](0.0, 0.0)):
        with pytest.raises(numbers.NeedsArrays):
            call()


# --------------------------------------------------------------------------- through the library

def both_ways(text: str, x: float):
    """(value, gradient) of `y` on NumPy, and in the numbers-only attempt (None where it gave way)."""
    plain = api.grad(text, wrt=["x"], feeds={"x": np.float64(x)})
    try:
        with numbers.attempt():
            scalar = api.grad(text, wrt=["x"], feeds={"x": x})
    except numbers.NeedsArrays:
        return plain, None
    return plain, scalar


def ordinary(x: float, plain, gradients=("x",)) -> bool:
    """A number whose check the scalar path makes itself: finite, far from overflowing (v.v under
    the checks' headroom trigger, float32's largest squared), and no diagnostic on NumPy either."""
    values = [x, float(plain.outputs["y"]), *(float(plain.gradients[g]) for g in gradients
                                              if plain.gradients[g] is not None)]
    return not plain.diagnostics and all(math.isfinite(v) and abs(v) < 1e38 for v in values)


@pytest.mark.parametrize("name", [n for n in UNARY if OPS[n].public])
def test_each_unary_op_s_value_and_gradient_equal_numpy_s_through_the_library(name):
    compared_here(name)
    answered = 0
    for x in GRID + ORDINARY[:20]:
        plain, scalar = both_ways(f"y = {name}(x)", x)
        if scalar is None:  # it gave way: only for what the checks look at closely (a kink: abs, relu at 0...)
            assert not ordinary(x, plain) or OPS[name].kink is not None, (name, x)
            continue
        answered += 1
        assert [d.to_json() for d in scalar.diagnostics] == [d.to_json() for d in plain.diagnostics]
        assert same(scalar.outputs["y"], plain.outputs["y"]), (name, x)
        assert same(scalar.gradients["x"], plain.gradients["x"]), (name, x)
    # an op with a kink (abs, relu) gives way in a gradient: the kink's check is NumPy's
    assert answered >= 10 or OPS[name].kink is not None, name


@pytest.mark.parametrize("name", [n for n in UNARY if OPS[n].public and OPS[n].kink is not None])
def test_an_op_with_a_kink_is_evaluated_on_numbers(name):
    compared_here(name)
    for x in GRID + ORDINARY[:20]:
        plain = api.evaluate(f"y = {name}(x)", feeds={"x": np.float64(x)})
        try:
            with numbers.attempt():
                scalar = api.evaluate(f"y = {name}(x)", feeds={"x": x})
        except numbers.NeedsArrays:
            assert not ordinary(x, plain, ()), (name, x)
            continue
        assert same(scalar.outputs["y"], plain.outputs["y"]) and not scalar.diagnostics, (name, x)


@pytest.mark.parametrize("text", ["y = x * x + 3 * x - 1", "y = x / (1 + x * x)", "y = x ** 3", "y = 2 ** x",
                                  "y = x ** 0.5 + x ** 2 - x ** -1", "y = where(x > 0, x, -x) * x",
                                  "y = sin(x) * x", "y = exp(-x * x / 2) / sqrt(2 * pi)", "y = sigmoid(x) * log1p(x * x)",
                                  "y = hypot(x, 3) * arcsinh(x)", "y = (x >= 1) * x + (x != 2) - (x == 3)",
                                  "y = ((x > 0) and (x < 2) or (x == -1)) * x"])
def test_programs_of_several_ops_equal_numpy_s(text):
    if not LIBM_HERE:
        pytest.skip("the C library's functions are left to NumPy here")
    answered = 0
    for x in GRID + ORDINARY[:20]:
        plain, scalar = both_ways(text, x)
        if scalar is None:
            continue
        answered += 1
        assert [d.to_json() for d in scalar.diagnostics] == [d.to_json() for d in plain.diagnostics]
        assert same(scalar.outputs["y"], plain.outputs["y"]), (text, x)
        assert same(scalar.gradients["x"], plain.gradients["x"]), (text, x)
    assert answered >= 10, text
