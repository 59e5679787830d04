"""The numeric hints table (gradcli/numerics/hints.py) names only ops that exist, and only
arguments, diagnostic kinds and ops that those readers know: an entry that names anything else
would be silently ignored."""
import math

import numpy as np
import pytest

from gradcli.numerics.hints import HINTS, Hints, Written, hints_of
from gradcli.ops import OPS

SUGGESTION_KINDS = {"overflow", "divide_by_zero", "invalid", "nonfinite_gradient"}


def test_every_entry_names_an_op_that_exists():
    missing = sorted(name for name in HINTS if name not in OPS)
    assert not missing, f"hints for ops that do not exist: {missing}"


def test_every_stable_form_names_ops_that_exist():
    forms = [(outer, inner, better) for outer, h in HINTS.items() for inner, better in h.stable_forms.items()]
    assert ("log", "sigmoid", "log_sigmoid") in forms
    bad = [(outer, inner, better) for outer, inner, better in forms if inner not in OPS or better not in OPS]
    assert not bad, f"stable forms naming ops that do not exist: {bad}"


@pytest.mark.parametrize("name", sorted(HINTS))
def test_an_entry_names_arguments_and_kinds_its_op_has(name):
    op, hints = OPS[name], HINTS[name]
    arity = op.arity
    for field, k in (("pole", hints.pole[0] if hints.pole else None), ("where_trap", hints.where_trap)):
        assert k is None or 0 <= k < arity, f"{name}: {field} names argument {k} of {arity}"
    assert all(0 <= k < arity for k in hints.selects), f"{name}: selects {hints.selects}"
    assert set(hints.suggestions) <= SUGGESTION_KINDS, f"{name}: suggestions for {set(hints.suggestions)}"
    if "{limit}" in "".join(hints.suggestions.values()):
        assert hints.overflows_above is not None, f"{name}: a suggestion says {{limit}} without overflows_above"
    assert hints.pole_fix is None or hints.pole is not None, f"{name}: a pole_fix without a pole"


def test_an_op_without_an_entry_has_no_hints():
    assert "add" not in HINTS
    assert hints_of(OPS["add"]) == Hints()


@pytest.mark.parametrize("name,f", [("exp", math.exp), ("exp2", lambda v: 2.0 ** v), ("cosh", math.cosh),
                                    ("sinh", math.sinh)])
def test_overflow_limits_are_where_the_function_overflows_float64(name, f):
    limit = HINTS[name].overflows_above(float(np.finfo(np.float64).max))
    assert math.isfinite(f(limit * (1 - 1e-9)))
    with pytest.raises(OverflowError):
        f(limit * (1 + 1e-9))


def test_the_exp_limit_follows_the_dtype():
    limit = HINTS["exp"].overflows_above(float(np.finfo(np.float32).max))
    with np.errstate(over="ignore"):
        assert np.isfinite(np.exp(np.float32(limit * (1 - 1e-6))))
        assert np.isinf(np.exp(np.float32(limit * (1 + 1e-6))))


def test_the_rewrites_write_the_guarded_call():
    division = HINTS["divide"].pole_fix
    assert division(Written(("a", "b + 1"), ("a", "(b + 1)"))) == \
        "where((b + 1) != 0, a / where((b + 1) != 0, (b + 1), 1.0), 0.0)"
    assert division(Written(("a", "b"), ("a", "b"), underflowed=True)) is None  # a lost nonzero is not 0
    log = HINTS["log"].pole_fix
    assert log(Written(("x",), ("x",), "divide_by_zero")) == "log(maximum(x, 1e-12))"
    assert log(Written(("x",), ("x",), "invalid")) is None  # below 0 is no slip of rounding
    assert HINTS["sqrt"].slope_fix(Written(("x - 1",), ("(x - 1)",))) == \
        "where((x - 1) > 0, sqrt(where((x - 1) > 0, x - 1, 1.0)), 0.0)"
