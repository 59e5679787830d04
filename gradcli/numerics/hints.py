"""What the diagnostics (diagnostics.py, explain.py) and the rewrites (fixes.py) know of the
few ops that have poles, domains, overflow limits, where traps and stable forms: one entry per op,
keyed by its name. An entry is optional data: an op without one gets the general messages and no
rewrite, and adding an op stays one record in the op table (gradcli/ops) and its test row.
tests/numerics/test_hints.py checks that every entry names an op and arguments it has.
"""
from __future__ import annotations

import math
from collections.abc import Callable

from gradcli.records import NEW, ValueRecord


class Hints(ValueRecord):
    """What is known of one op's numerics (every field optional; a plain class, records.py)."""

    _fields = __slots__ = ("domain", "pole", "overflows_above", "underflows_below", "invalid_reason",
                           "nonfinite_reason", "suggestions", "where_trap", "selects", "stable_forms", "pole_fix",
                           "slope_fix", "accumulates")
    domain: float | None         # the argument's lowest value (log 0, log1p -1, sqrt 0): NaN below it
    pole: tuple | None           # (argument, words): the argument whose 0 gives an infinity, as messages say
    overflows_above: Callable | None  # `(largest) -> x`: the argument past which it overflows (exp: log)
    underflows_below: float | None    # the argument below which it underflows to 0 in float64 (exp: -745)
    invalid_reason: str | None   # what a NaN from finite inputs means, in messages (divide: "0 / 0")
    nonfinite_reason: str | None  # what a non-finite gradient equation of it means (inverse_gaps)
    suggestions: dict            # diagnostic kind -> a suggestion in words; `{limit}`: overflows_above's value
    where_trap: int | None       # the argument a discarded where branch must keep off its poles (divide: y)
    selects: tuple               # the arguments it chooses between (where: x, y): the where trap's branches
    stable_forms: dict           # its argument's op -> the stable whole (log: sigmoid -> ...)
    pole_fix: Callable | None    # `(call: Written) -> text | None`: a rewrite keeping a call off its pole
    slope_fix: Callable | None   # `(call: Written) -> text | None`: a rewrite where its slope is infinite
    accumulates: Callable | None  # `(args, params) -> n`: it adds up to n terms into one element (sum: all),
    #                               each addition rounded: its own rounding is measured in half precision

    def __init__(self, domain=None, pole=None, overflows_above=None, underflows_below=None, invalid_reason=None,
                 nonfinite_reason=None, suggestions=NEW, where_trap=None, selects=(), stable_forms=NEW,
                 pole_fix=None, slope_fix=None, accumulates=None):
        self.domain, self.pole, self.overflows_above, self.underflows_below = domain, pole, overflows_above, \
            underflows_below
        self.invalid_reason, self.nonfinite_reason = invalid_reason, nonfinite_reason
        self.suggestions = {} if suggestions is NEW else suggestions
        self.where_trap, self.selects = where_trap, selects
        self.stable_forms = {} if stable_forms is NEW else stable_forms
        self.pole_fix, self.slope_fix = pole_fix, slope_fix
        self.accumulates = accumulates


class Written(ValueRecord):
    """A call as the user wrote it, for an op's rewrite rules (`pole_fix`, `slope_fix`)."""

    _fields = __slots__ = ("args", "operands", "kind", "underflowed")
    args: tuple           # each argument's text
    operands: tuple       # the same, parenthesized unless a name, a number or a call
    kind: str | None      # the diagnostic's kind (divide_by_zero, invalid, overflow)
    underflowed: bool     # the pole's argument may be a nonzero number that underflowed

    def __init__(self, args, operands, kind=None, underflowed=False):
        self.args, self.operands, self.kind, self.underflowed = args, operands, kind, underflowed


def _guarded_division(call: Written):
    if call.underflowed:  # a denominator that underflowed to 0 is not 0: a guard would change the answer
        return None
    a, b = call.operands
    return f"where({b} != 0, {a} / where({b} != 0, {b}, 1.0), 0.0)"


def _log_off_zero(call: Written):
    # at an exact 0 only: a negative argument is no slip of rounding
    return f"log(maximum({call.args[0]}, 1e-12))" if call.kind == "divide_by_zero" else None


def _sqrt_slope_at_zero(call: Written):
    a, s = call.args[0], call.operands[0]
    return f"where({s} > 0, sqrt(where({s} > 0, {a}, 1.0)), 0.0)"


def _past_half_of(largest):  # sinh and cosh: e^x / 2 overflows where e^x reaches twice the largest
    return math.log(largest) + math.log(2)


def _terms_reduced(args, params):  # sum, mean: the elements of one reduced slice
    a, axis = args[0], params.get("axis")
    if axis is None:
        return a.size
    return math.prod(a.shape[k] for k in (axis if isinstance(axis, tuple) else (axis,)))


def _terms_scanned(args, params):  # cumsum: its last element adds the whole scanned axis
    a, axis = args[0], params.get("axis")
    return a.size if axis is None else a.shape[axis]


def _terms_contracted(args, params):  # matmul, dot, inner: the contracted (last) axis of the first
    return args[0].shape[-1] if args[0].ndim else 1


AT_ZERO = "its argument is 0"
_NEAR_ZERO_SLOPE = "the gradient divides by a value that reaches 0: keep it away from 0 with an epsilon"
_GUARD_DENOMINATOR = "the denominator reaches 0: guard it with a where, or add a small epsilon"

_ARC_SLOPE = ("d {f}(u)/du = {s}1 / sqrt(1 - u^2) is infinite at u = -1 and 1 (and NaN past them): keep u inside "
              "(-1, 1); a clip of u changes the value there, it is not a fix")
_ANGLE_AT_ORIGIN = ("atan2(y, x) has no derivative at (0, 0), where its slopes y / (x^2 + y^2) and x / (x^2 + y^2) "
                    "are 0 / 0: keep the point off the origin (PyTorch's atan2 gives 0 there, JAX and TensorFlow NaN)")

HINTS: dict[str, Hints] = {
    "exp": Hints(overflows_above=math.log, underflows_below=-745.0, where_trap=0, suggestions={
        "overflow": "shift the argument so that it stays below {limit}, or compute in log space"}),
    "log": Hints(domain=0.0, pole=(0, AT_ZERO), where_trap=0, pole_fix=_log_off_zero,
                 stable_forms={"sigmoid": "log_sigmoid", "softmax": "log_softmax"}, suggestions={
                     "divide_by_zero": "log is -inf at 0: keep its argument away from 0",
                     "invalid": "log is undefined below 0: check the sign of its argument",
                     "nonfinite_gradient": _NEAR_ZERO_SLOPE}),
    "log1p": Hints(domain=-1.0, where_trap=0),
    "sqrt": Hints(domain=0.0, where_trap=0, slope_fix=_sqrt_slope_at_zero, suggestions={
        "invalid": "sqrt is undefined below 0: check the sign of its argument",
        "nonfinite_gradient": "d sqrt(u)/du = 1 / (2 sqrt(u)) is infinite at u = 0: keep the argument away "
                              "from 0, or choose the value of the gradient there with a where"}),
    "divide": Hints(pole=(1, "the denominator is 0"), invalid_reason="0 / 0", where_trap=1,
                    pole_fix=_guarded_division, suggestions={
                        "divide_by_zero": _GUARD_DENOMINATOR, "invalid": _GUARD_DENOMINATOR,
                        "nonfinite_gradient": _NEAR_ZERO_SLOPE}),
    "power": Hints(pole=(0, AT_ZERO), where_trap=0,
                   invalid_reason="a negative base raised to a power that is not an integer (no real number)",
                   suggestions={"invalid": "a negative number has no real power that is not an integer: check the "
                                           "sign of the base (for a root of a signed value, sign(x) * abs(x) ** p)",
                                "nonfinite_gradient": "d x**p/dx = p * x**(p - 1) is infinite at x = 0 for p < 1 "
                                                      "(and NaN for a negative x): keep the base away from 0"}),
    "where": Hints(selects=(1, 2)),
    "arcsin": Hints(where_trap=0, suggestions={"nonfinite_gradient": _ARC_SLOPE.format(f="asin", s="")}),
    "arccos": Hints(where_trap=0, suggestions={"nonfinite_gradient": _ARC_SLOPE.format(f="acos", s="-")}),
    "arctan2": Hints(suggestions={"nonfinite_gradient": _ANGLE_AT_ORIGIN}),
    "sinh": Hints(overflows_above=_past_half_of),
    "cosh": Hints(overflows_above=_past_half_of),
    "arccosh": Hints(domain=1.0),
    "exp2": Hints(overflows_above=math.log2),
    "log2": Hints(domain=0.0, pole=(0, AT_ZERO), where_trap=0),
    "log10": Hints(domain=0.0, pole=(0, AT_ZERO), where_trap=0),
    "reciprocal": Hints(pole=(0, AT_ZERO), where_trap=0),
    "rsqrt": Hints(where_trap=0),
    "sum": Hints(accumulates=_terms_reduced),
    "mean": Hints(accumulates=_terms_reduced),
    "cumsum": Hints(accumulates=_terms_scanned),
    "matmul": Hints(accumulates=_terms_contracted),
    "dot": Hints(accumulates=_terms_contracted),
    "inner": Hints(accumulates=_terms_contracted),
    "vdot": Hints(accumulates=lambda args, params: args[0].size),
    "inverse_gaps": Hints(nonfinite_reason="eigenvalues (or singular values) repeat, and the gradient of their "
                                           "vectors does not exist there"),
}

NONE = Hints()  # an op without an entry


def hints_of(op) -> Hints:
    """The numeric hints of an op record (NONE where it has no entry)."""
    return HINTS.get(op.name, NONE)
