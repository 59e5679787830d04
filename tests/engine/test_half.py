"""The half types' engine (gradcli/engine/half.py): `--accumulate same`'s sums, whose every
partial sum is rounded to the type, against exact integer arithmetic (where nothing rounds, the
shapes and values are NumPy's) and against the roundings worked out by hand."""
import ml_dtypes
import numpy as np
import pytest

from gradcli import api
from gradcli.engine.half import SameAccumulation

F16 = SameAccumulation(np.dtype(np.float16))


def _ints(rng, shape):
    """Small integers: every product and sum below stays exact in float16 (below 2048)."""
    return rng.integers(-4, 5, shape).astype(np.float32)


@pytest.mark.parametrize("spec,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 2)]), ("i,i->", [(6,), (6,)]), ("i,j->ij", [(3,), (4,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 3)]), ("ii->", [(4, 4)]), ("ii->i", [(3, 3)]), ("ij->ji", [(2, 5)]),
    ("ijk,kj->i", [(2, 3, 4), (4, 3)]), ("ij,ij->", [(3, 3), (3, 3)]), ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 2)]),
])
def test_einsum_in_the_type_is_numpy_s_where_nothing_rounds(spec, shapes):
    rng = np.random.default_rng(len(spec))
    operands = [_ints(rng, s) for s in shapes]
    want = np.einsum(spec, *[o.astype(np.float64) for o in operands])
    got = F16.einsum(spec, *operands)
    assert got.shape == want.shape and np.array_equal(got, want)


@pytest.mark.parametrize("a_shape,b_shape", [((3, 4), (4, 5)), ((4,), (4, 2)), ((3, 4), (4,)), ((4,), (4,)),
                                             ((2, 3, 4), (4, 2)), ((2, 1, 3, 4), (5, 4, 2))])
def test_matrix_products_in_the_type_are_numpy_s_where_nothing_rounds(a_shape, b_shape):
    rng = np.random.default_rng(len(a_shape) * 10 + len(b_shape))
    a, b = _ints(rng, a_shape), _ints(rng, b_shape)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    got = F16.matmul(a, b)
    assert got.shape == want.shape and np.array_equal(got, want)
    if a.ndim <= 2 and b.ndim <= 2:
        assert np.array_equal(F16.dot(a, b), np.dot(a, b))
    if a.ndim == b.ndim == 1:
        assert F16.vdot(a, b) == np.vdot(a, b) and F16.vecdot(a, b) == np.vecdot(a, b)


def test_sums_in_the_type_are_numpy_s_where_nothing_rounds():
    rng = np.random.default_rng(5)
    x = _ints(rng, (3, 4, 5))
    for axis in (None, 0, 1, -1, (0, 2), (2, 0)):
        for keepdims in (False, True):
            want = np.sum(x, axis=axis, keepdims=keepdims)
            got = F16.sum(x, axis=axis, keepdims=keepdims)
            assert got.shape == want.shape and np.array_equal(got, want), (axis, keepdims)
    b = _ints(rng, (4, 5, 2))
    assert np.array_equal(F16.tensordot(x, b, axes=2), np.tensordot(x, b, axes=2))
    assert np.array_equal(F16.tensordot(x, b, axes=([1], [0])), np.tensordot(x, b, axes=([1], [0])))
    assert np.array_equal(F16.cumsum(x, axis=1), np.cumsum(x, axis=1))
    assert np.array_equal(F16.mean(x, axis=0), np.mean(x, axis=0).astype(np.float16).astype(np.float32))


def test_the_partial_sums_are_rounded_to_the_type_pairwise():
    # float16 holds every integer to 2048, then every other one: 2048 + 1 rounds to 2048 (to even)
    x = np.array([2048, 1, 1, 1], np.float32)
    assert F16.sum(x) == 2050  # pairwise: (2048 + 1 -> 2048) + (1 + 1) = 2050
    assert float(np.float16(x.sum())) == 2052  # in float32, rounded once: 2051, a tie, to even
    assert F16.matmul(np.array([2048, 1, 1], np.float32), np.ones(3, np.float32)) == 2048  # (2048 + 1) + 1
    assert F16.cumsum(np.array([2048, 1, 1, 1], np.float32)).tolist() == [2048, 2048, 2048, 2048]
    bf16 = SameAccumulation(np.dtype(ml_dtypes.bfloat16))  # 8 bits: 256 + 1 is 256
    assert bf16.sum(np.array([256, 1, 1, 1], np.float32)) == 258


def test_the_command_s_accumulate_reaches_the_ops():
    feeds = {"x": np.array([2048.0, 1.0, 1.0, 1.0])}
    for accumulate, want in (("float32", 2052.0), ("same", 2050.0)):
        for program in ("y = sum(x)", "y = x @ ones(4)", "y = einsum('i->', x)", "y = mean(x) * 4"):
            got = api.evaluate(program, feeds=feeds, dtype="float16", accumulate=accumulate, fixes=False).outputs["y"]
            assert got.dtype == np.float16 and float(got) == want, (program, accumulate)
