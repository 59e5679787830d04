"""Numerical diagnostics (docs/contract.md §5): where a non-finite number first appears, why, and a fix.

`NumericsChecker` is called by the evaluator after every equation. Its common path is one
reduction (`isfinite(sum(value))`); only when that fails does it look closer. It tracks
which values carry non-finite numbers and from which origins, so each origin is reported
once, at the equation that created it from finite inputs, not at every node downstream.
It relies on no floating-point warnings (CuPy has none).

On a lazy backend (Dask) the check runs in two steps around the one computation: during the
evaluation it asks, per equation, for the reductions its common path reads (v.v, whether every
element is finite, the count of ties or kinks, max|v|), which are computed in the same pass as
the values; `resolve` then replays the same checks on those numbers, in the same order, so the
diagnostics are those of NumPy. Only an equation found not finite is looked at closer, on its
own arrays and its inputs' (the rare path).
"""
from __future__ import annotations

import math

from gradcli.autodiff import blocked_at
from gradcli.errors import Pos
from gradcli.ir import Graph
from gradcli.ops import scalar as numbers
from gradcli.numerics.gradient_calls import place, subject, taken_by, taken_by_json
from gradcli.records import NEW, ValueRecord
from gradcli.engine.backends import backend_for
from gradcli.engine.evaluate import run
from gradcli.numerics.hints import hints_of
from gradcli.numerics.explain import infinities_reason, underflow_met_by, Suggestions, classify, fmt_number, kink_count, kink_note
from gradcli.numerics.broadcasts import accidental_broadcasts
from gradcli.dtypes import NAMES as FLOAT_NAMES
from gradcli.numerics.formats import format_of, is_half, underflow_threshold
from gradcli.numerics.rounding import Rounding

NONFINITE_KINDS = ("overflow", "divide_by_zero", "invalid", "nonfinite_gradient")

# What is known of each operation is read from its record in the op table (gradcli/ops/__init__.py)
# and its entry in gradcli/numerics/hints.py, never from op names; only patterns of several ops
# (a softmax written out, log(sum(exp(x)))) are named, in gradcli/numerics/explain.py.
# Origins a value is known to carry, at most: a sum of 20,000 NaN terms carries 20,000, and
# tracking them all at every partial sum is quadratic (the first ones are what a user reads)
ORIGINS_TRACKED = 16
FLOAT32_MAX = 3.4028234663852886e38


def _pass_json(frame) -> dict:
    """A loop's pass in a diagnostic's stack (errors.LoopPass): its number and its names' values."""
    number = getattr(frame, "number", None)
    if number is None:
        return {}
    return {"pass": number, "binding": frame.binding} if frame.binding else {"pass": number}


class Diagnostic(ValueRecord):
    _fields = ("severity", "kind", "op", "message", "suggestion", "pos", "stack", "count", "reaches", "value_id",
               "also", "fix", "fix_json", "more_fixes", "more_fixes_json", "not_fixed", "guards_json", "taken_by")
    severity: str          # "warning" or "info"
    kind: str              # overflow, divide_by_zero, invalid, nonfinite_gradient, tie, kink, ...
    op: str                # the operation as the user spelled it
    message: str
    suggestion: str | None = None
    pos: Pos | None = None
    stack: tuple = ()      # call sites of the user functions it stands inside
    count: int | None = None
    reaches: list[str]
    value_id: int | None = None
    also: list[Pos]  # the same computation written elsewhere
    fix: object = None        # a gradcli.numerics.fixes.Fix proven on the user's inputs, if there is one
    fix_json: dict | None = None
    more_fixes: list  # where the same origin is written elsewhere too
    more_fixes_json: list
    not_fixed: str | None = None  # where gradcli looked for a fix and proved none: why
    guards_json: list  # guards known for it (never fixes: they change the numbers), and what they change
    taken_by: dict | None = None  # the program's own gradient call that made it: {"call", "line", "column"}

    def __init__(self, severity, kind, op, message, suggestion=None, pos=None, stack=(), count=None, reaches=NEW,
                 value_id=None, also=NEW, fix=None, fix_json=None, more_fixes=NEW, more_fixes_json=NEW,
                 not_fixed=None, guards_json=NEW, taken_by=None):
        self.severity = severity
        self.kind = kind
        self.op = op
        self.message = message
        self.suggestion = suggestion
        self.pos = pos
        self.stack = stack
        self.count = count
        self.reaches = [] if reaches is NEW else reaches
        self.value_id = value_id
        self.also = [] if also is NEW else also
        self.fix = fix
        self.fix_json = fix_json
        self.more_fixes = [] if more_fixes is NEW else more_fixes
        self.more_fixes_json = [] if more_fixes_json is NEW else more_fixes_json
        self.not_fixed = not_fixed
        self.guards_json = [] if guards_json is NEW else guards_json
        self.taken_by = taken_by

    def to_json(self) -> dict:
        out = {"severity": self.severity, "kind": self.kind, "op": self.op,
               "line": self.pos.line if self.pos else None,
               "column": self.pos.column if self.pos else None,
               "message": self.message, "suggestion": self.suggestion}
        if self.count is not None:
            out["count"] = self.count
        if self.reaches:
            out["reaches"] = self.reaches
        if self.also:
            out["also_at"] = [{"line": p.line, "column": p.column} for p in self.also]
        if self.taken_by:
            out["taken_by"] = self.taken_by
        if self.stack:
            out["called_from"] = [{"line": p.line, "column": p.column, **_pass_json(p)} for p in self.stack]
        if self.fix_json is not None:
            out["fix"] = self.fix_json
        if self.more_fixes_json:
            out["more_fixes"] = self.more_fixes_json
        if self.not_fixed:
            out["not_fixed"] = self.not_fixed
        if self.guards_json:
            out["guards"] = self.guards_json
        return out


# How a bound on an op's result follows from its inputs', read from its record once per op
# (`NumericsChecker.proven`): None, a number, this marker, or the record's rule
_LARGEST_INPUT = "largest input"  # finite-closed without a rule of its own: as large as the largest input
_UNREAD = object()


def _bound_rule(op):
    rule = op.bound
    if callable(rule):
        return rule
    if isinstance(rule, tuple):  # a constant range, whatever the inputs
        return float(max(abs(rule[0]), abs(rule[1])))
    if op.finite_closed:
        return _LARGEST_INPUT
    return None


def _place(graph: Graph, i: int, eq) -> str:
    """Where equation i stands, for "then ... turns the infinities into NaN": a gradient's
    equation of `grad --wrt` is the gradient through its op, not the op (`exp(x)` is finite
    where its slope times 0 is NaN)."""
    if eq.backward is not None and taken_by(graph, i) is None:
        return f"the gradient through {eq.label} at {eq.pos}"
    return place(graph, i, eq)


def _noted_before(noted: dict, diagnostics: list, i: int, eq, twin: tuple) -> bool:
    """Whether value i's largeness is already noted: the same computation written again (its place
    added to the note's), or a value made from a noted one (the sum of an exp noted)."""
    k = noted.get(twin)
    if k is not None:
        d = diagnostics[k]
        if eq.pos is not None and eq.pos != d.pos and eq.pos not in d.also:
            d.also.append(eq.pos)
    else:
        k = next((noted[j] for j in eq.inputs if j in noted), None)
    if k is not None:
        noted[i] = k
    return k is not None


class NumericsChecker:
    """Call it as `check(i, eq, value, args)` after each equation."""

    def __new__(cls, graph: Graph, xp, dtype: str, accumulate: str = "float32"):
        # in half precision (not on a lazy backend), the checker that also measures what the format
        # loses; a subclass, so that the per-equation call of every other run costs nothing more
        if cls is NumericsChecker and is_half(dtype) and not backend_for(xp).lazy:
            cls = HalfPrecisionChecker
        return object.__new__(cls)

    def __init__(self, graph: Graph, xp, dtype: str, accumulate: str = "float32"):
        import numpy

        self.backend = backend_for(xp)
        self.lazy = self.backend.lazy
        self.xp = numpy if self.lazy else self.backend.xp  # a lazy backend's closer look is on host arrays
        xp = self.xp
        self.graph = graph
        self.dtype = dtype
        self.pending: list[tuple] = []   # lazy: (i, eq, value, args) in evaluation order
        self.requests: dict = {}         # lazy: (i, what) -> a lazy reduction
        self.known: dict = {}            # (i, what) -> its number, once computed
        self.lazy_values: dict[int, object] = {}
        self.diagnostics: list[Diagnostic] = []
        self.origins: dict[int, frozenset] = {}  # value id -> indices of the origins it carries
        self.differentiated = graph.differentiated
        self._seen_ties: set[int] = set()
        self._origin_of: dict[tuple, int] = {}  # (op, inputs, params) -> diagnostic index
        self._noted_large: dict = {}  # value id or (op, inputs, params) -> its headroom note's index
        self.format = format_of(dtype)  # (float16's headroom factor is its own: numerics/formats.py)
        self.largest = self.format.largest
        self.bound: dict[int, float] = {}  # value id -> a bound on its magnitude, where known
        self._bound_rules: dict = {}  # op -> _bound_rule(op)
        self._bound_of = self.bound.get  # (the per-equation reads, bound once)
        self._shape_of = graph.shapes.__getitem__
        self._found_at: list[int] = []  # per diagnostic, the equation whose check found it
        self.suggestions = Suggestions(graph, self.largest)
        # v.v past this may hide a value close to overflowing (or past float32's range)
        limit = FLOAT32_MAX if dtype == "float64" else self.largest / self.format.headroom_factor
        self.headroom_trigger = limit * limit
        self.headroom_limit = limit

    # ----------------------------------------------------------------- the per-equation check
    def __call__(self, i, eq, value, args):
        if type(value) is float:  # a number of the numbers-only attempt (gradcli.ops.scalar)
            if eq.op.name not in numbers.SCALAR_OPS:  # (the op has no scalar implementation: its number is not used)
                raise numbers.NeedsArrays(f"{eq.op.name} has no numbers-only implementation")
            if (eq.op.kink is None or i not in self.differentiated) and self.clean_by_square_sum(i, value * value):
                return
            # what the checks would say of it (not finite, near overflowing, a kink) is said on NumPy
            raise numbers.NeedsArrays(f"{eq.op.name} gives {value!r}")
        if self.lazy:
            self._request(i, eq, value, args)
            return
        # the common path first (a large program calls this once per equation): no kink to look
        # at, and the result finite and far from overflowing, known without a pass over it
        if args is not None and value.size and (eq.op.kink is None or i not in self.differentiated):
            if not value.ndim:
                # a number: reading it costs less than proving it from its inputs' bounds, and what
                # is then recorded and reported is what the careful path finds (_check)
                v = float(value)
                square_sum = v * v  # (clean_by_square_sum, written out: a call per equation costs more than it does)
                if math.isfinite(square_sum) and not square_sum > self.headroom_trigger:
                    self.bound[i] = math.sqrt(square_sum) * (1 + 1e-6)
                    return
            elif eq.inputs and self.proven(i, eq, value.shape, args):  # (a source has no inputs)
                return
        self._check_noting(i, eq, value, args)

    def _check_noting(self, i, eq, value, args):
        before = len(self.diagnostics)
        self._check(i, eq, value, args)
        # which equation each diagnostic was found at: a fused chain evaluated unfused checks its
        # equations after values computed later in the plain order, and finish() restores it
        if len(self.diagnostics) != before:
            self._found_at.extend([i] * (len(self.diagnostics) - before))

    def _request(self, i, eq, value, args):
        """Lazy: note the equation, and ask for the reductions its check reads."""
        self.pending.append((i, eq, value, args))
        self.lazy_values[i] = value
        ask = self.requests
        if i in self.differentiated and eq.op.kink is not None:
            count = kink_count(eq, value, args, self.backend.xp)
            if count is not None:
                ask[i, "kink"] = count
        # an op that keeps finite inputs finite needs no look of its own unless its inputs are
        # not finite (then asked for on the rare path, `_stats`)
        if value.size and not (eq.inputs and eq.op.finite_closed and not eq.op.grows):
            ask[i, "stats"] = self.backend.block_stats(value)

    def _stats(self, i, value) -> tuple:
        """(v.v, all finite, max|v|) of value i: computed in the one pass, or now (rare path)."""
        found = self.known.get((i, "stats"))
        if found is None:
            found = self.known[i, "stats"] = self.backend.compute({0: self.backend.block_stats(value)})[0]
        return found

    def resolve(self, known: dict) -> None:
        """Lazy: the requested reductions' numbers are in; run the checks in evaluation order."""
        self.known = known
        pending, self.pending = self.pending, []
        for i, eq, value, args in pending:
            self._check_noting(i, eq, value, args)

    def _check(self, i, eq, value, args):
        xp = self.xp
        if eq.op.kink is not None and i in self.differentiated and args is not None:
            self._check_kinks(i, eq, value, args)
        if value.size == 0:
            return
        if eq.inputs and self.proven(i, eq, value.shape, args):
            return
        square_sum = self._square_sum(i, value)
        if math.isfinite(square_sum):
            self.bound[i] = math.sqrt(square_sum) * (1 + 1e-6)
            if eq.op.grows and eq.backward is None and square_sum > self.headroom_trigger:
                self._check_headroom(i, eq, value, args)
            return
        if self.lazy:
            if self._stats(i, value)[1] > 0:  # finite but large: v.v overflowed
                if eq.op.grows and eq.backward is None:
                    self._check_headroom(i, eq, value, args)
                return
            # not finite: a closer look, on this equation's arrays (the rare path)
            value, args = self.backend.to_host(value), [self.backend.to_host(a) for a in args]
        finite = xp.isfinite(value)
        if bool(xp.all(finite)):  # finite but large: v.v overflowed (a look at the value alone, written over its input or not)
            if eq.op.grows and eq.backward is None:
                self._check_headroom(i, eq, value, args)
            return
        if args is None:  # the result overwrote an input: recompute the inputs (rare path)
            computed = run(self.graph, list(dict.fromkeys(eq.inputs)), dtype=self.dtype, xp=xp)
            args = [computed[j] for j in eq.inputs]
        if not eq.inputs:  # an input or a constant that holds non-finite numbers
            self._nonfinite_source(i, eq, value, finite)
            self.origins[i] = frozenset()
            return
        carried = [j for j in eq.inputs if j in self.origins]
        origins = frozenset().union(*(self.origins[j] for j in carried))
        if len(origins) > ORIGINS_TRACKED:  # bounded bookkeeping: linear in the program, not quadratic
            origins = frozenset(sorted(origins)[:ORIGINS_TRACKED])
        new = ~finite
        if carried:
            if eq.op.elementwise:
                for a in args:
                    new &= xp.broadcast_to(xp.isfinite(a), value.shape)
            else:
                new = None
        if new is not None and bool(xp.any(new)):
            origins |= {self._origin(i, eq, value, args, new)}
        elif carried and bool(xp.any(xp.isnan(value))) and not any(bool(xp.any(xp.isnan(a))) for a in args):
            # NaN made from infinities (inf - inf, inf / inf, 0 * inf): a consequence of the
            # origin that made them, or an origin itself where they were given as inputs
            if not origins:
                label = eq.label
                nans = int(xp.count_nonzero(xp.isnan(value)))
                said, why, suggestion = infinities_reason(eq, args, xp)
                self.diagnostics.append(Diagnostic(
                    "warning", "invalid", label, f"{said} NaN at {nans} of {value.size} "
                    f"element{'s' * (value.size != 1)}: {why}", suggestion, eq.pos, eq.stack, nans, value_id=i))
                self.origins[i] = frozenset({len(self.diagnostics) - 1})
                return
            for k in origins:
                d = self.diagnostics[k]
                if eq.pos and "turns the infinities into NaN" not in d.message:  # the first place only
                    d.message += f"; then {_place(self.graph, i, eq)} turns the infinities into NaN"
        self.origins[i] = origins

    def proven(self, i, eq, shape, args) -> bool:
        """Whether equation i's result is finite and far from overflowing without looking at it:
        its inputs are clean and its bound follows from theirs (recorded), or its op cannot make
        finite inputs non-finite. (Called once per equation: the bound's propagation is written inline.)"""
        inputs = eq.inputs
        if not inputs or (self.origins and not self.origins.keys().isdisjoint(inputs)):
            return False
        if self.graph.dtypes and i in self.graph.dtypes:  # a cast's narrower type (x.half()): bounds are the run type's
            return False
        # a bound on |result| from bounds on |inputs| (interval arithmetic on magnitudes), by the
        # op record's `bound` where it has one; none where none exists (exp, log, ...)
        bound_of = self._bound_of
        # (the usual one or two inputs read by hand: a map and its list cost more than all the rest)
        arity = len(inputs)
        if arity == 1:
            bounds = [bound_of(inputs[0])]
        elif arity == 2:
            bounds = [bound_of(inputs[0]), bound_of(inputs[1])]
        else:
            bounds = [*map(bound_of, inputs)]
        if None not in bounds:
            rule = self._bound_rules.get(eq.op, _UNREAD)
            if rule is _UNREAD:
                rule = self._bound_rules[eq.op] = _bound_rule(eq.op)
            if rule is None or type(rule) is float:  # none, or a constant range's
                bound = rule
            elif rule is _LARGEST_INPUT:
                bound = max(bounds)
            else:  # (a lazy backend's arrays are not read: that would be a pass of its own)
                bound = rule(bounds, [*map(self._shape_of, inputs)], shape, None if self.lazy else args)
            if bound is not None and bound * bound < self.headroom_trigger:
                self.bound[i] = bound  # proven finite, and how large it can be: no pass needed
                return True
        return bool(eq.op.finite_closed)  # finite inputs, and this op cannot make them non-finite

    def clean_by_square_sum(self, i, square_sum: float) -> bool:
        """The check of a value from its square sum alone (a number, or a value computed inside a
        fused chain and never held whole): True (its bound recorded) where the plain check would
        find it finite and report nothing; False where it must be looked at closer (a chain
        evaluated again unfused, checked value by value): non-finite, or large enough that its
        headroom is examined."""
        if not math.isfinite(square_sum) or square_sum > self.headroom_trigger:
            return False
        self.bound[i] = math.sqrt(square_sum) * (1 + 1e-6)
        return True

    def clean_by_magnitude(self, i, top: float) -> bool:
        """The check of a value from its largest magnitude alone (max|v|, NaN where v holds one),
        taken in the chunks that computed it (gradcli/engine/fusion.py): True (its bound recorded)
        where the plain check would report nothing; False where it must be looked at closer:
        not finite, or close enough to overflowing that its headroom is examined."""
        if not top <= self.headroom_limit:
            return False
        self.bound[i] = top
        return True

    def _nonfinite_source(self, i, eq, value, finite):
        xp = self.xp
        count = int(xp.count_nonzero(~finite))
        plural = "s" * (count != 1)
        first = float(xp.reshape(value[~finite], (-1,))[0]) if value.ndim else float(value)
        if eq.op.name == "input":
            message = f"input {eq.params['name']} holds {count} non-finite number{plural} ({first})"
        elif value.ndim:
            message = f"this array holds {count} number{plural} not finite in {self.dtype} (the first is {first})"
        else:
            message = f"this number is not finite in {self.dtype} (it is {first})"
        self.diagnostics.append(Diagnostic("info", "nonfinite_input", eq.label, message, None,
                                           eq.pos, eq.stack, count, value_id=i))

    def _square_sum(self, i, value) -> float:
        """v.v in one pass: not finite if v holds a NaN or an infinity (or squares past
        1e154, which only sends the value down the careful path); its square root bounds
        max|v|. The backend computes it (BLAS dot for NumPy: the fastest pass there is)."""
        if self.lazy:
            return float(self._stats(i, value)[0])
        return self.backend.square_sum(value)

    # ----------------------------------------------------------------- origins
    def _origin(self, i, eq, value, args, mask) -> int:
        # the same operation on the same values written twice (exp(x) / sum(exp(x))) is one origin
        key = (eq.op.name, eq.inputs, repr(sorted(eq.params.items())), eq.backward is None)
        if key in self._origin_of:
            k = self._origin_of[key]
            if eq.pos is not None and eq.pos != self.diagnostics[k].pos and eq.pos not in self.diagnostics[k].also:
                self.diagnostics[k].also.append(eq.pos)
            return k
        self._origin_of[key] = len(self.diagnostics)
        xp = self.xp
        bad = value[mask] if value.ndim else value
        count = int(xp.count_nonzero(mask))
        has_inf = bool(xp.any(xp.isinf(bad)))
        label = eq.label
        # (in the type the value is held in: a value cast to another type inside the program is
        # said in its own; every other is in the run's dtype)
        held_in = getattr(getattr(value, "dtype", None), "name", None)
        held_in = held_in if held_in in FLOAT_NAMES else self.dtype
        kind, detail, zero_pole = classify(eq, value, args, mask, has_inf, xp, held_in)
        if zero_pole is not None:  # a 0 at a pole: say so where it is a nonzero number that underflowed
            self._explain_underflow(eq.inputs[zero_pole], eq)
        if eq.backward is not None:
            kind = "nonfinite_gradient"
            # (the eigenvector gradient's weights: repeated eigenvalues)
            detail = hints_of(eq.op).nonfinite_reason or detail
        if has_inf and not bool(xp.any(xp.isnan(bad))):
            noun = "-infinity" if bool(xp.all(bad < 0)) else "infinity"
        else:
            noun = "NaN" if not has_inf else "non-finite values"
        where = f"{count} of {value.size} element{'s' * (value.size != 1)}"
        said = subject(self.graph, i, eq)  # (and the gradient call of the program that made it, if one did)
        message = f"{said} is {noun} at {where}" if eq.backward is not None else f"{said} gives {noun} at {where}"
        if detail:
            message += f": {detail}"
        if eq.backward is not None:
            # the slopes of one op for each of its arguments (atan2's d/dy and d/dx), or for each
            # gradient asked: one diagnostic for one cause, reaching all they reach
            twin = ("slopes", eq.backward, message)
            if twin in self._origin_of:
                return self._origin_of[twin]
            self._origin_of[twin] = len(self.diagnostics)
        suggestion = self.suggestions.suggest(i, eq, kind, format_of(held_in).largest)
        if kind == "overflow" and self.format.name == "float16":  # (bfloat16 has float32's range)
            suggestion = f"{suggestion}; or run it in bfloat16, whose range is float32's" if suggestion else None
        diag = Diagnostic("warning", kind, label, message, suggestion,
                          eq.pos, eq.stack, count, value_id=i, taken_by=taken_by_json(self.graph, i))
        self.diagnostics.append(diag)
        return len(self.diagnostics) - 1

    def _check_headroom(self, i, eq, value, args):
        # one note for one cause: not again for the same computation written twice (exp(x) /
        # sum(exp(x))), nor for a value made from one already noted (the sum of those exps)
        noted = self._noted_large
        twin = (eq.op.name, eq.inputs, repr(sorted(eq.params.items())), eq.backward is None)
        if _noted_before(noted, self.diagnostics, i, eq, twin):
            return
        before = len(self.diagnostics)
        self._note_headroom(i, eq, value)
        if len(self.diagnostics) > before:
            noted[i] = noted[twin] = before

    def _note_headroom(self, i, eq, value):
        xp = self.xp
        if self.lazy:
            top = float(self._stats(i, value)[2])
        else:
            top = max(float(xp.max(value)), -float(xp.min(value)))
        label = eq.label
        if top > self.largest / self.format.headroom_factor:
            above = hints_of(eq.op).overflows_above if self.format.half else None
            limit = f" ({eq.op.name} overflows {self.dtype} above {above(self.largest):.2f})" if above else ""
            self.diagnostics.append(Diagnostic(
                "info", "headroom", label, f"{label} reaches {top:.4g}, within a factor of "
                f"{self.largest / top:.3g} of the largest {self.dtype} ({self.largest:.4g}): a little more overflows"
                f"{limit}", None, eq.pos, eq.stack, value_id=i))
        elif self.dtype == "float64" and top > FLOAT32_MAX:
            above = hints_of(eq.op).overflows_above
            limit = f" ({eq.op.name} overflows float32 above {above(FLOAT32_MAX):.2f})" if above else ""
            self.diagnostics.append(Diagnostic(
                "info", "float32_overflow", label, f"{label} reaches {top:.4g}, past the largest float32 "
                f"({FLOAT32_MAX:.4g}): this program overflows in float32{limit}",
                None, eq.pos, eq.stack, value_id=i))

    def _explain_underflow(self, j: int, consumer) -> None:
        """If value j is 0 because it underflowed (from nonzero inputs), say so (info).
        Its inputs were freed after use: recompute them (this path only runs on trouble)."""

        producer = self.graph.equations[j]
        if not producer.inputs or producer.op.underflows != "rounds":
            return
        xp = self.xp
        if self.lazy:
            values = {k: self.backend.to_host(self.lazy_values[k]) for k in (j, *producer.inputs)}
        else:
            values = run(self.graph, [j, *producer.inputs], dtype=self.dtype, xp=xp)
        out = values[j]
        nonzero_inputs = None
        for k in producer.inputs:
            if producer.op.elementwise:
                nz = xp.broadcast_to(values[k] != 0, out.shape)
            else:  # a reduction (prod, matmul, softmax): zero although no input element is
                nz = xp.broadcast_to(xp.all(values[k] != 0), out.shape)
            nonzero_inputs = nz if nonzero_inputs is None else nonzero_inputs & nz
        underflowed = (out == 0) & nonzero_inputs
        count = int(xp.count_nonzero(underflowed))
        if count:
            label = producer.label
            extra = ""
            hints = hints_of(producer.op)
            below = hints.underflows_below
            if below is not None:
                if self.format.half:  # the same inverse at the bottom of the format's range
                    below = round(underflow_threshold(hints.overflows_above, self.format), 1)
                low = float(xp.min(xp.broadcast_to(values[producer.inputs[0]], out.shape)[underflowed]))
                extra = (f" (its argument reaches {fmt_number(low)}; {producer.op.name} underflows below about "
                         f"{below:g} in {self.dtype if self.format.half else 'float64'})")
            then, suggestion = underflow_met_by(consumer)
            self.diagnostics.append(Diagnostic(
                "info", "underflow", label, f"{label} underflows to 0 at {count} element{'s' * (count != 1)}"
                f"{extra}, and {consumer.label} at {consumer.pos} {then}", suggestion,
                producer.pos, producer.stack, count, value_id=j))

    # ----------------------------------------------------------------- ties and kinks
    def _check_kinks(self, i, eq, value, args):
        kink = eq.op.kink
        if kink in ("extremes", "extremes_first") and i in self._seen_ties:  # (a tie is said once per value)
            return
        count = int(self.known[i, "kink"]) if self.lazy else int(kink_count(eq, value, args, self.xp))
        if count:
            if kink in ("extremes", "extremes_first"):
                self._seen_ties.add(i)
            kind, message = kink_note(kink, eq.label, count)
            self.diagnostics.append(Diagnostic("info", kind, eq.label, message, None, eq.pos, eq.stack, count,
                                               value_id=i))

    # ----------------------------------------------------------------- after the run
    def finish(self, outputs: dict[str, int], values: dict | None = None, overrides: dict | None = None
               ) -> list[Diagnostic]:
        """Fill in which outputs (and gradients) each origin reaches. (`values`, the fetched values
        by name, and the run's `overrides` are read in half precision only: rounding.HalfChecker.)"""
        for name, j in outputs.items():
            for k in self.origins.get(j, ()):
                if name not in self.diagnostics[k].reaches:
                    self.diagnostics[k].reaches.append(name)
        found_at = self._found_at
        if len(found_at) == len(self.diagnostics) and any(a > b for a, b in zip(found_at, found_at[1:])):
            ranked = sorted(range(len(self._found_at)), key=self._found_at.__getitem__)
            self.diagnostics[:] = [self.diagnostics[k] for k in ranked]
            self._found_at.sort()
        # and the accidental broadcasts, which shapes alone decide (broadcasts.py)
        return self.diagnostics + [Diagnostic(*found) for found in accidental_broadcasts(self.graph)]


class HalfPrecisionChecker(NumericsChecker):
    """The checks of a half run (float16, bfloat16), and what the format loses against a float64
    run of the same program: gradients that became 0, sums that lost their digits (rounding.py)."""

    def __init__(self, graph: Graph, xp, dtype: str, accumulate: str = "float32"):
        super().__init__(graph, xp, dtype)
        # (a sum accumulated in float32 is rounded to the format once: its own error is one rounding)
        self.rounding = Rounding(graph, self.format, self.xp, self.backend.to_host, sums=accumulate == "same")

    def __call__(self, i, eq, value, args):
        self.rounding.see(i, eq, value, args)
        super().__call__(i, eq, value, args)

    def finish(self, outputs: dict[str, int], values: dict | None = None, overrides: dict | None = None
               ) -> list[Diagnostic]:
        found = super().finish(outputs)
        if values is None:
            return found
        return found + [Diagnostic(**d) for d in self.rounding.diagnostics(outputs, values, overrides, self.origins)]


def unconnected_diagnostic(graph: Graph, y_ids: list[int], ys: list[str], x: str, x_id: int) -> Diagnostic:
    """Why x has no gradient: no path to the outputs, or every path is cut (and where)."""
    cuts = blocked_at(graph, y_ids, x_id)
    targets = " + ".join(ys)
    if cuts is None:
        return Diagnostic("info", "unconnected", "grad", f"{x} has no gradient: {targets} does not depend on {x}",
                          None, graph.equations[x_id].pos)
    where = ", ".join(f"{graph.equations[c].label} at {graph.equations[c].pos}" for c in cuts[:5])
    more = f" and {len(cuts) - 5} more" if len(cuts) > 5 else ""
    first = graph.equations[cuts[0]]
    return Diagnostic("info", "unconnected", first.label,
                      f"{x} has no gradient: every path from {x} to {targets} passes through an operation "
                      f"that passes no gradient: {where}{more}", None, first.pos, first.stack)
