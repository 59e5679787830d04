"""Numbers (0-d values) are evaluated as NumPy scalars, +, -, *, / and negation by the scalars'
own arithmetic (evaluate.SCALAR_OPERATORS) instead of the ufuncs: the results must be the ufuncs'
bit for bit, in float64 and float32, on ordinary numbers and on the edges (zeros of both signs,
infinities, NaN, subnormals, overflow, 0 / 0)."""
from __future__ import annotations

import numpy as np
import pytest

from gradcli import api
from gradcli.engine.evaluate import SCALAR_OPERATORS


def _numbers(dtype, count: int = 4000) -> np.ndarray:
    rng = np.random.default_rng(20260425)
    info = np.finfo(dtype)
    ordinary = rng.standard_normal(count) * np.exp(rng.uniform(-30, 30, count))
    edges = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, float(info.max), -float(info.max),
             float(info.tiny), float(info.tiny) / 8, float(info.eps), 3.0, 1 / 3]
    return np.concatenate([ordinary, edges]).astype(dtype)


def _same_bits(a, b, dtype) -> bool:
    bits = np.uint64 if dtype == np.float64 else np.uint32
    a, b = np.asarray(a, dtype), np.asarray(b, dtype)
    if np.isnan(a) or np.isnan(b):
        return bool(np.isnan(a) and np.isnan(b))  # NaN payloads are not numbers gradcli prints
    return a.view(bits) == b.view(bits)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(SCALAR_OPERATORS))
def test_scalar_operators_equal_the_ufuncs_bit_for_bit(name, dtype):
    fn, ufunc = SCALAR_OPERATORS[name], getattr(np, name)
    xs = _numbers(dtype)
    ys = np.random.default_rng(7).permutation(xs)
    with np.errstate(all="ignore"):
        for x, y in zip(xs, ys):
            args = (x, y) if ufunc.nin == 2 else (x,)
            scalar = fn(*(dtype(a) for a in args))
            array = ufunc(*(np.asarray(a, dtype) for a in args))
            assert type(scalar) is dtype, (name, type(scalar))
            assert _same_bits(scalar, array, dtype), (name, args, scalar, array)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_program_of_numbers_gives_numpys_values(dtype):
    # the whole evaluation, against the same formula computed by NumPy on 0-d arrays
    rng = np.random.default_rng(3)
    a, b, c = (float(v) for v in rng.standard_normal(3))
    program = "y = (a * b - c) / (a + b) * -c + sin(a) * b"
    result = api.evaluate(program, feeds={"a": a, "b": b, "c": c}, dtype=dtype)
    t = np.dtype(dtype).type
    A, B, C = (np.asarray(v, dtype) for v in (a, b, c))
    expected = np.add(np.multiply(np.divide(np.subtract(np.multiply(A, B), C), np.add(A, B)), np.negative(C)),
                      np.multiply(np.sin(A), B))
    value = np.asarray(result.outputs["y"])
    assert value.dtype == np.dtype(dtype)
    assert _same_bits(value, t(expected), t)


def test_overflow_and_zero_division_of_numbers_are_still_reported():
    result = api.evaluate("y = a * b + 1 / c", feeds={"a": 1e200, "b": 1e200, "c": 0.0})
    kinds = sorted(d.kind for d in result.diagnostics)
    assert kinds == ["divide_by_zero", "overflow"], [d.message for d in result.diagnostics]
    assert np.isinf(result.outputs["y"])
