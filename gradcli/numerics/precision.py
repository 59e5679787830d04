"""The precision report (`check --dtype bfloat16|float16|...`): per operation, how far its value
and its gradient (the cotangent d output/d its value) computed in the dtype are from a float64
run of the same program, worst first, each at its place with what would help.

Two errors for each: the error the value carries (`value_error`: everything upstream included,
what the user's framework would print) and the error the operation itself adds (`value_own`:
the op computed in the dtype on the float64 values of its inputs, rounded to the dtype as the
dtype's run reads them). The first is the same for every operation downstream of the one that
loses the digits; the second names that one, so the report is sorted by it (then by the first).
The gradient likewise: `gradient_error` (the cotangent of the op's value), `gradient_own` (the
worst of the equations of its gradient rule, each computed alone in the dtype on float64 values).

A relative error is the largest error over the elements divided by the largest float64
magnitude (normwise: an element near zero, where a sum cancels, does not make it huge); the
small elements are counted apart: those flushed to zero in the dtype (nonzero in float64) and
those below its normal range. Elements not finite in float64 are left out; a finite float64
value that is not finite in the dtype is an error of infinity.
"""
from __future__ import annotations

import numpy as np

from gradcli.autodiff import depends_on, gradients
from gradcli.dtypes import finfo, numpy_dtype
from gradcli.engine.evaluate import needed_equations, run
from gradcli.engine.memory import check_memory
from gradcli.errors import OptionError
from gradcli.ir import Graph
from gradcli.limits import default_memory_limit
from gradcli.records import Record

# ops whose overflow or loss of digits a stable form avoids (logsumexp, softmax, log1p, ...)
STABLE_FORMS = {"exp", "exp2", "expm1", "cosh", "sinh", "power", "square", "log", "log2", "log10", "divide",
                "reciprocal", "sigmoid", "softplus"}
# elementwise ops where nearly equal numbers cancel
CANCELLING = {"add", "subtract", "add_alpha", "negative_add"}
OWN_ROUNDINGS = 4  # an op is within its dtype's rounding while its own error is at most this many unit roundoffs


class OpPrecision(Record):
    """One operation's errors against float64 (see the module's docstring); `underflow`: elements
    of its value, `flushed`: of the gradients its rule passes back, that are nonzero in float64
    and 0 in the dtype; `overflow`: its value (or `gradient_overflow`: its gradient) is not
    finite in the dtype where float64's is."""
    __slots__ = _fields = ("id", "op", "label", "pos", "value_error", "value_own", "gradient_error", "gradient_own",
                           "flushed", "overflow", "gradient_overflow", "remedy", "underflow", "subnormal")

    def __init__(self, id, op, label, pos, value_error, value_own, gradient_error=None, gradient_own=None,
                 flushed=0, overflow=False, gradient_overflow=False, remedy=None, underflow=0):
        self.underflow, self.subnormal = underflow, False
        self.id, self.op, self.label, self.pos = id, op, label, pos
        self.value_error, self.value_own, self.gradient_error, self.gradient_own = \
            value_error, value_own, gradient_error, gradient_own
        self.flushed, self.overflow, self.gradient_overflow, self.remedy = flushed, overflow, gradient_overflow, remedy

    @property
    def own(self) -> float:
        return max(self.value_own, self.gradient_own or 0.0)

    @property
    def carried(self) -> float:
        return max(self.value_error, self.gradient_error or 0.0)

    def to_json(self) -> dict:
        return {"op": self.label, "line": self.pos.line if self.pos else None,
                "column": self.pos.column if self.pos else None,
                "value_error": _number(self.value_error), "value_own_error": _number(self.value_own),
                "gradient_error": _number(self.gradient_error), "gradient_own_error": _number(self.gradient_own),
                "value_flushed_to_zero": self.underflow, "gradient_flushed_to_zero": self.flushed,
                "overflow": self.overflow,
                "gradient_overflow": self.gradient_overflow, "remedy": self.remedy}


def _number(value):
    return None if value is None else ("Infinity" if value == np.inf else value)


class Precision(Record):
    """The report: `dtype`, `unit_roundoff` (eps / 2: a correctly rounded result's largest
    relative error), `scale` (the loss scale the gradients were computed with), `accumulate`,
    `ops` (OpPrecision, worst first)."""
    __slots__ = _fields = ("dtype", "unit_roundoff", "scale", "accumulate", "ops")

    def to_json(self) -> dict:
        return {"dtype": self.dtype, "reference": "float64", "unit_roundoff": self.unit_roundoff,
                "loss_scale": self.scale, "accumulate": self.accumulate, "ops": [op.to_json() for op in self.ops]}

    @property
    def broken(self) -> list[OpPrecision]:
        """The ops whose value or gradient the dtype made not finite where float64's is finite."""
        return [op for op in self.ops if op.overflow or op.gradient_overflow]


def relative_error(value, reference) -> float:
    """The largest error of `value` against `reference`, relative to the reference's largest
    magnitude (module docstring)."""
    got = np.asarray(value, dtype=np.float64).reshape(-1)
    ref = np.asarray(reference, dtype=np.float64).reshape(-1)
    finite = np.isfinite(ref)
    if not finite.all():
        got, ref = got[finite], ref[finite]
    if not ref.size:
        return 0.0
    if not np.isfinite(got).all():
        return np.inf
    largest = float(np.abs(ref).max())
    worst = float(np.abs(got - ref).max())
    if largest == 0.0:
        return 1.0 if worst > 0 else 0.0
    return worst / largest


def _differentiated(graph: Graph, wrt: list[str], of: list[str], scale: float):
    """The graph with the seeds (scaled) and the cotangent of every operation on a path from
    the wrt values to the outputs: (y ids, {forward id: cotangent id}, first backward id)."""
    if not wrt:
        raise OptionError("give at least one {option} NAME", "wrt")
    ys = of or [graph.result[0]]
    y_ids = [graph.option_value_id(y, "of") for y in ys]
    x_ids = [graph.option_value_id(x, "wrt") for x in wrt]
    first = len(graph.equations)
    seeds = [graph.add_input(f"grad_ys:{y}", np.full(graph.shapes[i], scale), label=f"seed of {y}")
             for y, i in zip(ys, y_ids)]
    reach = depends_on(graph, x_ids, max(y_ids))
    on_path = [i for i in needed_equations(graph, y_ids) if reach[i]]
    cotangents = gradients(graph, y_ids, on_path, seeds)
    return y_ids, {i: c for i, c in zip(on_path, cotangents) if c is not None}, first


def _own_errors(graph: Graph, ids: list[int], reference: dict, dtype: str, accumulate: str) -> dict[int, float]:
    """Each equation's own error: computed alone in the dtype, on the float64 values of its inputs,
    against float64. 0 where an input is finite in float64 but not once rounded to the dtype:
    that overflow is the input's producer's, not this op's. (Each value is dropped once measured.)"""
    out = {}
    rounded_to = numpy_dtype(dtype)
    for k in ids:
        eq = graph.equations[k]
        if not eq.inputs or eq.op.name in ("input", "const"):
            continue
        if any(_overflows(np.asarray(reference[j]).astype(rounded_to), reference[j]) for j in eq.inputs):
            out[k] = 0.0
            continue
        alone = run(graph, [k], dtype=dtype, overrides={j: reference[j] for j in eq.inputs}, accumulate=accumulate)
        out[k] = relative_error(alone[k], reference[k])
    return out


def measure(graph: Graph, wrt: list[str], of: list[str], dtype: str, scale: float = 1.0,
            accumulate: str = "float32", max_memory: int | None = None) -> Precision:
    """The precision report of `graph` (a fork: equations are added to it) in `dtype`."""
    y_ids, cotangents, first = _differentiated(graph, wrt, of, scale)
    ids = needed_equations(graph, y_ids + list(cotangents.values()))
    # the float64 values and the dtype's are kept together: each within half the limit
    check_memory(graph, ids, "float64", (max_memory or default_memory_limit()) // 2, text=False)
    with np.errstate(all="ignore"):
        reference = run(graph, ids, dtype="float64")
        computed = run(graph, ids, dtype=dtype, accumulate=accumulate)
        own = _own_errors(graph, ids, reference, dtype, accumulate)
    rule_of: dict[int, list[int]] = {}
    for k in ids:
        if k >= first and graph.equations[k].backward is not None:
            rule_of.setdefault(graph.equations[k].backward, []).append(k)
    limits = finfo(dtype)
    rows = []
    for i in ids:
        eq = graph.equations[i]
        if i >= first or i not in own:
            continue
        row = OpPrecision(i, eq.op, eq.label, eq.pos, relative_error(computed[i], reference[i]),
                          own[i], overflow=_overflows(computed[i], reference[i]),
                          underflow=_flushed(computed[i], reference[i], limits.tiny))
        row.subnormal = bool(((np.abs(np.asarray(reference[i], dtype=np.float64)) < limits.tiny)
                              & (np.asarray(reference[i]) != 0)).any())
        c = cotangents.get(i)
        if c is not None:
            row.gradient_error = relative_error(computed[c], reference[c])
            row.gradient_overflow = _overflows(computed[c], reference[c])
        rule = [k for k in rule_of.get(i, ()) if k in own]
        row.flushed = sum(_flushed(computed[k], reference[k], limits.tiny) for k in rule)
        row.gradient_own = max((own[k] for k in rule), default=None if c is None else 0.0)
        row.remedy = remedy(row, limits, accumulate)
        rows.append(row)
    rows.sort(key=lambda r: (r.own, r.carried), reverse=True)
    return Precision(dtype, limits.eps / 2, scale, accumulate, rows)


def _flushed(value, reference, tiny: float) -> int:
    """How many elements are nonzero in float64 but below the dtype's normal range, and 0 in the
    dtype (an underflow; a 0 of a larger number is a cancellation, counted in the error)."""
    magnitude = np.abs(np.asarray(reference, dtype=np.float64))
    return int(np.count_nonzero((magnitude != 0) & (magnitude < tiny) & (np.asarray(value) == 0)))


def _overflows(value, reference) -> bool:
    ref = np.asarray(reference, dtype=np.float64)
    got = np.asarray(value, dtype=np.float64)
    return bool((np.isfinite(ref) & ~np.isfinite(got)).any())


def remedy(row: OpPrecision, limits, accumulate: str = "float32") -> str | None:
    """What would help, by what went wrong (None: the op is within its dtype's rounding)."""
    name, dtype, within = row.op.name, limits.name, OWN_ROUNDINGS * limits.eps / 2
    if row.overflow:
        if name in STABLE_FORMS:
            return (f"overflows {dtype} (largest {limits.max:g}): a stable form (logsumexp, softmax, log_softmax, "
                    "softplus), or this op in float32")
        return f"overflows {dtype} (largest {limits.max:g}): compute it in float32, or rescale what it reads"
    if row.underflow and row.value_own > within:
        return (f"its value underflows {dtype} ({row.underflow} element(s) became 0, below {limits.smallest_subnormal:.3g}"
                "): rescale what it reads, or this op in float32")
    if row.subnormal and row.value_own > within:
        return (f"its value falls below {dtype}'s smallest normal number {limits.tiny:.3g} (subnormal: fewer digits): "
                "rescale what it reads, or this op in float32")
    if row.gradient_overflow:
        return f"its gradient overflows {dtype}: a smaller loss scale (--loss-scale auto)"
    if row.flushed:
        return (f"its gradient underflows {dtype} ({row.flushed} element(s) became 0): a loss scale "
                "(--loss-scale auto)")
    if row.value_own > within:
        if not row.op.elementwise and accumulate == "same":
            return "accumulate in float32 (--accumulate float32, as PyTorch's autocast and XLA do)"
        if not row.op.elementwise:
            return (f"it accumulates in float32 already: its inputs rounded to {dtype} lose the digits; compute this "
                    "op and what it reads in float32")
        if name in CANCELLING:
            return "nearly equal numbers cancel: compute it in float32, or rewrite it (log1p, expm1, a - b factored)"
        if name in STABLE_FORMS:
            return "a stable form (logsumexp, log_softmax, log1p, expm1), or this op in float32"
        return "compute this op in float32"
    if row.gradient_own is not None and row.gradient_own > within:
        return "its gradient loses digits: a loss scale (--loss-scale auto), or its gradient accumulated in float32"
    return None


def report(program, wrt: list[str], of: list[str] | None, scale: float = 1.0, accumulate: str = "float32"):
    """`check --dtype` of a half type: the program's gradient in its dtype (a gradcli.api Result, the
    diagnostics of that run), with the precision report as `precision`. `scale`: the loss scale the
    dtype's gradients are computed with."""
    dtype = program.options.dtype
    result = program.grad(list(wrt), list(of or []) or None, fixes=False)
    result.precision = measure(program.graph.fork(), list(wrt), list(of or []), dtype, scale, accumulate,
                               program.options.max_memory)
    return result
