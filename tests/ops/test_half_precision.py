"""Every row of the op table (tests/ops/test_ops*.py) in float16 and bfloat16: its value and the
gradients of its inputs against float64 on the same inputs (rounded to the type first, so that
only the computation differs), within a tolerance made of the type's eps; or, for the
factorizations, refused with one message naming the op and the type."""
import functools
import importlib
import pathlib
import re

import ml_dtypes
import numpy as np
import pytest

from gradcli import api
from gradcli.dtypes import finfo
from gradcli.engine.half import FACTORIZATIONS
from gradcli.errors import GradcliError
from test_ops import row_feeds

TYPES = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}


def _rows():
    rows = []
    for path in sorted(pathlib.Path(__file__).parent.glob("test_ops*.py")):
        module = importlib.import_module(path.stem)
        for case in module.CASES:
            options = case[3] if len(case) > 3 else {}
            rows.append(pytest.param(case[0], case[1], options.get("fixed") or {}, id=f"{path.stem}:{case[0]}"))
    return rows


ROWS = _rows()


def _answer(program, wrt, feeds, dtype, accumulate="float32"):
    with np.errstate(all="ignore"):
        result = api.grad(program, wrt=wrt, feeds=feeds, dtype=dtype, fixes=False, accumulate=accumulate) if wrt \
            else api.evaluate(program, feeds=feeds, dtype=dtype, fixes=False, accumulate=accumulate)
    return {**{f"value {k}": v for k, v in result.outputs.items()},
            **{f"d/d{k}": v for k, v in result.gradients.items()}}


# Rows whose answer in a half type takes the other branch of a choice between two numbers that
# the type rounds to one (a tie it makes), or that differ by less than its eps: not an error of
# the op, and said here with the numbers (float64 on the rounded inputs)
CHOICE_FLIPS = {
    # column sums of |x| 4.19921875 and 4.203125 (float64) are one bfloat16/float16 number: a tie, split
    ("y = matrix_norm(x, ord=1)", "float16"): "a tie of two column sums, made by rounding",
    ("y = matrix_norm(x, ord=1)", "bfloat16"): "a tie of two column sums, made by rounding",
    # swap=True takes the nearer of d(a, c) = 3.680 and d(b, c) = 3.668: closer than bfloat16's eps
    ("y = F.triplet_margin_loss(a, b, c, margin=2.0, p=1.5, swap=True, reduction='sum')", "bfloat16"):
        "swap's choice between two distances 0.3% apart",
}
# rows that call no factorization by name but need one for these parameters: matrix_power(a, -2)
# inverts; norms of order 2 and the nuclear norm are singular values
REFUSED_FOR_PARAMETERS = {"matrix_power(a, -2)": "matrix_power", "norm(x, 'nuc')": "norm",
                          "norm(x, 2, axis=(2, 0))": "norm", "matrix_norm(x, ord=-2": "matrix_norm"}


_CALL = re.compile(r"([A-Za-z_][\w.]*)\(")


@functools.cache
def _spellings() -> dict:
    from gradcli.language.dialects import callable_ops
    return {name: op.name for name, op in callable_ops().items()}


@functools.cache
def _called_ops(program) -> tuple:
    """(place, spelling's last part, op name) of each call in the text whose spelling, or a
    dotted tail of it (`np.linalg.inv`, `linalg.inv`, `inv`), names an op."""
    spellings, calls = _spellings(), []
    for found in _CALL.finditer(program):
        parts = found.group(1).split(".")
        for k in range(len(parts)):
            op = spellings.get(".".join(parts[k:]))
            if op is not None:
                calls.append((found.start(1) + len(".".join(parts[:k])) + bool(k), parts[-1], op))
    return tuple(calls)


@functools.cache
def _refused_call(program):
    """How the refusal of this row names the call refused (None: the row is not refused): the
    first call in its text of an op that factorizes."""
    for spelled, name in REFUSED_FOR_PARAMETERS.items():
        if spelled in program:
            return name
    calls = [(place, name) for place, name, op in _called_ops(program) if op in FACTORIZATIONS]
    return min(calls)[1] if calls else None


@pytest.mark.parametrize("dtype", list(TYPES))
@pytest.mark.parametrize("program,inputs,fixed", ROWS)
def test_op_row_in_half_precision(program, inputs, fixed, dtype):
    _check_row(program, inputs, fixed, dtype, "float32")


# the rows that add many terms somewhere (a sum, a product of matrices, a norm, a loss's mean)
ACCUMULATING = re.compile(r"sum|mean|@|matmul|dot|einsum|tensordot|softmax|logsumexp|norm|var|std|loss|linear|"
                          r"conv|entropy|trace|average|cov|corrcoef|trapezoid|bilinear|addmm|addmv|baddbmm|cdist")


@pytest.mark.parametrize("program,inputs,fixed", [row for row in ROWS if ACCUMULATING.search(row.values[0])])
def test_accumulating_op_row_in_float16_with_accumulate_same(program, inputs, fixed):
    """The same rows with --accumulate same: in the type, within the same tolerance (the rows'
    sums have a few terms: the type's own accumulation loses a few eps at most)."""
    _check_row(program, inputs, fixed, "float16", "same")


def _check_row(program, inputs, fixed, dtype, accumulate):
    if (program, dtype) in CHOICE_FLIPS:
        pytest.skip(CHOICE_FLIPS[program, dtype])
    t = TYPES[dtype]
    feeds = row_feeds(program, inputs, fixed)
    # the inputs as the type holds them: float64 computes on the very same numbers
    feeds = {k: v.astype(t).astype(np.float64) for k, v in feeds.items()}
    wrt = list(inputs)
    refused = _refused_call(program)
    if refused is not None:
        with pytest.raises(GradcliError) as raised:
            _answer(program, wrt, feeds, dtype, accumulate)
        assert raised.value.message == (
            f"{refused}: not computed in {dtype}: it needs a LAPACK factorization, which exists in float32 and "
            f"float64 only (PyTorch 2.13 and JAX 0.10.2 refuse it in {dtype} too); run the program with --dtype float32")
        return
    got = _answer(program, wrt, feeds, dtype, accumulate)
    want = _answer(program, wrt, feeds, "float64")
    # a rounding's error is eps/2 of the number rounded: an answer of cancelling terms (a gradient
    # that is 0 in exact arithmetic) is off by a few eps of the terms, not of itself; the terms'
    # size is bounded here by the row's largest number (inputs, values, gradients) or 1
    scale = max([1.0] + [float(np.max(np.abs(v[np.isfinite(v)]), initial=0.0))
                         for v in [*feeds.values(), *(w for w in want.values() if w is not None)]])
    eps = finfo(dtype).eps
    for key, reference in want.items():
        value = got[key]
        if reference is None:
            assert value is None, key
            continue
        assert value.dtype == t, (key, value.dtype)  # never a wider result labelled as the type
        reference = reference.astype(t).astype(np.float64)  # float64's answer, as the type holds it
        value = value.astype(np.float64)
        finite = np.isfinite(reference)
        assert np.array_equal(np.isfinite(value), finite), f"{key}: {value} vs {reference}"
        np.testing.assert_allclose(value[finite], reference[finite], rtol=16 * eps, atol=16 * eps * scale,
                                   err_msg=f"{key} of {program} in {dtype}")


FLOAT8 = {"float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn), "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2)}


def _covering(rows):
    """The rows, in order, that each call an op no row before them called: every op once."""
    from gradcli.language.parser import BINARY_OPS
    chosen, seen = [], set()
    for row in rows:
        program = row.values[0]
        ops = {op for _, _, op in _called_ops(program)}
        ops |= {name for symbol, name in BINARY_OPS.items() if f" {symbol} " in program}
        if ops - seen:
            chosen.append(row)
            seen |= ops
    return chosen


@pytest.mark.parametrize("dtype", list(FLOAT8))
@pytest.mark.parametrize("program,inputs,fixed", _covering(ROWS))
def test_op_row_in_float8_answers_in_the_type_or_is_refused(program, inputs, fixed, dtype):
    """float8 is honoured by every op half precision is (computed in float32, rounded): each row
    answers in the type, or is refused as in float16. (With 3 or 2 bits of mantissa the numbers
    are not compared with float64's: one or two digits is what the type keeps.)"""
    t = FLOAT8[dtype]
    feeds = {k: v.astype(t).astype(np.float64) for k, v in row_feeds(program, inputs, fixed).items()}
    refused = _refused_call(program)
    if refused is not None:
        with pytest.raises(GradcliError, match=f"^{refused}: not computed in {dtype}: it needs a LAPACK factorization"):
            _answer(program, list(inputs), feeds, dtype)
        return
    for key, value in _answer(program, list(inputs), feeds, dtype).items():
        assert value is None or value.dtype == t, (key, value.dtype)
