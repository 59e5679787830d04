"""What a numerical diagnostic (diagnostics.py) says, from the op records and their entries in
gradcli/numerics/hints.py: an origin's kind and why (`classify`), the ties and kinks where a
derivative is a convention (`kink_count`, `kink_note`), and the suggestion in words
(`Suggestions`; a rewrite in code is offered only where gradcli.numerics.fixes has proven it)."""
from __future__ import annotations

from functools import cached_property

from gradcli.ir import Graph
from gradcli.numerics.formats import format_of
from gradcli.numerics.hints import hints_of
from gradcli.ops.shapes import normalize_axes


# --------------------------------------------------------------------------- origins

def fmt_number(x: float) -> str:
    return f"{x:.6g}"


def classify(eq, value, args, mask, has_inf, xp, dtype) -> tuple[str | None, str | None, int | None]:
    """(kind, why in words, the argument that is 0 at the op's pole or None) of equation eq's
    non-finite elements `mask` (a gradient equation's are said by the caller: None, None, None)."""
    op = eq.op
    hints = hints_of(op)
    largest = format_of(dtype).largest

    def at_bad(a):
        return xp.broadcast_to(a, value.shape)[mask] if value.ndim else a

    if eq.backward is not None:
        return None, None, None
    if hints.overflows_above is not None and has_inf:
        top = float(xp.max(at_bad(args[0])))
        return "overflow", (f"its argument reaches {fmt_number(top)}, and {op.name} overflows {dtype} "
                            f"above {hints.overflows_above(largest):.2f}"), None
    if hints.pole is not None and has_inf:
        k, what = hints.pole
        if bool(xp.any(at_bad(args[k]) == 0)):
            if hints.domain is not None:  # NaNs beside the infinities: arguments below the domain too
                bad_args = xp.reshape(xp.asarray(at_bad(args[0])), (-1,))
                below = bad_args[bad_args < hints.domain]
                if below.size:
                    zeros = int(xp.count_nonzero(bad_args == 0))
                    what = (f"{what} at {zeros}, and it reaches {fmt_number(float(xp.min(below)))}, below its "
                            f"domain's start {float(hints.domain):g}, at {below.size}")
            return "divide_by_zero", what, k
    if has_inf:
        finite_args = [a for a in args if a.size]
        if finite_args:
            low = min(float(xp.min(a)) for a in finite_args)
            high = max(float(xp.max(a)) for a in finite_args)
            return "overflow", (f"inputs range over [{fmt_number(low)}, {fmt_number(high)}], and the result "
                                f"exceeds the largest {dtype} ({largest:.4g})"), None
        return "overflow", None, None
    if hints.domain is not None and args:
        limit = float(hints.domain)
        low = float(xp.min(at_bad(args[0])))
        if low < limit:
            return "invalid", f"its argument reaches {fmt_number(low)}, below its domain's start {limit:g}", None
    return "invalid", hints.invalid_reason, None


_FORMS_OF_INFINITIES = "an undefined form of infinities (inf - inf, inf / inf or 0 * inf)"
_MASKED = ("a softmax over nothing has no value: leave such rows out, or give each row one finite score (-1e9 in "
           "place of -inf gives a row masked whole equal weights instead of NaN: a choice, not the mathematics)")


def infinities_reason(eq, args, xp) -> tuple[str, str, str | None]:
    """(its subject and verb, why, suggestion) for NaN made from infinities given as inputs: a softmax over a slice
    whose every element is -inf (an attention row masked whole) is 0 / 0, said as such."""
    if eq.op.name in ("softmax", "log_softmax") and args and args[0].ndim:
        axis = eq.params.get("axis", -1)
        whole = xp.all(args[0] == -xp.inf, axis=axis)
        rows = int(xp.count_nonzero(whole))
        if rows:
            along = "" if args[0].ndim == 1 else f" along axis {_axis_text(axis)}"
            slices = "its argument" if args[0].ndim == 1 else f"{rows} slice{'s' * (rows != 1)}{along}"
            said = f"{eq.label} gives"
            if eq.label.rsplit(".", 1)[-1] != eq.op.name:  # logsumexp's gradient: the softmax of its argument
                said = f"the gradient of {eq.label}, the {eq.op.name} of its argument, is"
            return said, (f"every element of {slices} is -inf (a row masked whole): exp gives 0 at each, and "
                          f"{eq.op.name} divides 0 by their sum, 0"), _MASKED
    return f"{eq.label} gives", _FORMS_OF_INFINITIES, None


def _axis_text(axis) -> str:
    return ", ".join(map(str, axis)) if isinstance(axis, tuple) else str(axis)


def underflow_met_by(consumer) -> tuple[str, str]:
    """(what the consumer of a value that underflowed to 0 then does, the suggestion)."""
    if consumer.op.name == "divide":
        return "then divides by it", "compute the ratio in log space (subtract logarithms), or rescale before dividing"
    # (log, a power with a negative exponent: its pole at 0)
    return "then meets it at its pole, 0", "compute it in log space, where it does not underflow"


# --------------------------------------------------------------------------- ties and kinks

def kink_count(eq, value, args, xp):
    """The number of ties (groups of tied extremes, equal pairs) or kinks (zeros) the op's
    `kink` names: a reduction, lazy on a lazy backend."""
    kink = eq.op.kink
    if kink in ("extremes", "extremes_first"):
        axis = eq.params.get("axis")
        keep = value if eq.params.get("keepdims") else xp.expand_dims(value, normalize_axes(axis, args[0].ndim))
        counts = xp.count_nonzero(args[0] == keep, axis=axis, keepdims=True)
        return xp.count_nonzero(counts > 1)
    if kink == "pair":
        return xp.count_nonzero(xp.broadcast_to(args[0] == args[1], value.shape))
    if kink in ("zero", "zero_right"):
        return xp.count_nonzero(args[0] == 0)
    return None


def kink_note(kink: str, label: str, count: int) -> tuple[str, str]:
    """(the diagnostic's kind, its message) for `count` ties or kinks of this `kink`."""
    plural = "s" * (count != 1)
    if kink == "extremes":
        return "tie", (f"{label} has tied extremes in {count} group{plural}; its gradient is "
                       f"split evenly among the tied elements")
    if kink == "extremes_first":
        pooled = "pool" in label  # (max pooling: both PyTorch's and TensorFlow's kernels route it so)
        return "tie", (f"{label} has tied extremes in {count} group{plural}; the gradient goes to the first "
                       + ("of the tied elements in the window, as the library's kernel routes it" if pooled
                          else "of the tied elements, the index it returns (PyTorch's rule)"))
    if kink == "pair":
        return "tie", (f"{label} has {count} equal pair{plural}; the gradient is "
                       "split evenly between the two arguments there")
    return "kink", (f"{label} is evaluated exactly at 0 for {count} element{plural}, where it has no "
                    f"derivative; " + ("JAX's rule takes the right derivative, 1, there" if kink == "zero_right"
                                       else "gradcli uses 0 there"))


# --------------------------------------------------------------------------- suggestions

def consumers_of(graph: Graph) -> dict[int, list[int]]:
    """Value id -> the forward equations that read it, in order (a gradient equation is no reader here)."""
    consumers: dict[int, list[int]] = {}
    for k, e in enumerate(graph.equations):
        if e.backward is None:
            for j in e.inputs:
                consumers.setdefault(j, []).append(k)
    return consumers


_NORM_AT_ZERO = ("a norm has no derivative at the zero vector: its gradient x / norm(x) is 0 / 0 there (PyTorch's "
                 "norm gives 0, JAX and TensorFlow NaN); where the norm is squared, sum(x ** 2) is the same number "
                 "and its gradient 2 x has no such point")


class Suggestions:
    """`suggest(i, eq, kind)` for the equations of one graph."""

    def __init__(self, graph: Graph, largest: float):
        self.graph = graph
        self.largest = largest  # the dtype's largest number: an overflow limit's `{limit}`

    @cached_property
    def consumers(self) -> dict[int, list[int]]:
        return consumers_of(self.graph)

    def _op_of(self, j: int):
        return self.graph.equations[j].op

    def suggest(self, i, eq, kind, largest: float | None = None) -> str | None:
        """The suggestion for a diagnostic of `kind` whose origin is equation i (`largest`: the
        largest number of the type the value is held in, where it is not the run's: a float32
        array of a float64 run overflows at float32's limit)."""
        g = self.graph
        if eq.backward is not None:
            forward = g.equations[eq.backward].op
            for k in self.consumers.get(eq.backward, []):
                w = g.equations[k]
                if hints_of(w.op).selects:
                    return (f"the {w.op.name} at {w.pos} discards this branch's value but not its gradient: "
                            f"compute the branch on safe inputs (where inside the branch as well: the "
                            f"double-where trick)")
            if forward.name == "sqrt" and "norm" in g.equations[eq.backward].label:
                return _NORM_AT_ZERO
            return hints_of(forward).suggestions.get("nonfinite_gradient")
        pattern = self._pattern_hint(i, eq, kind)
        if pattern is not None:
            return pattern
        hints = hints_of(eq.op)
        hint = hints.suggestions.get(kind)
        if hint is not None:
            if hints.overflows_above is not None:
                hint = hint.replace("{limit}", str(int(hints.overflows_above(largest or self.largest))))
            return hint
        if kind == "overflow":
            return "the values exceed the floating-point range: rescale them, or compute in log space"
        return None

    def _pattern_hint(self, i, eq, kind) -> str | None:
        """Hints for a pattern of several ops, each with a stable function computing it whole:
        an entry's `stable_forms` (log of sigmoid -> log_sigmoid), and the spelled-out softmax,
        log-sum-exp and softplus, whose exp overflows."""
        g = self.graph
        op = eq.op
        stable_forms = hints_of(op).stable_forms
        if eq.inputs and stable_forms:
            inner = self._op_of(eq.inputs[0]).name
            better = stable_forms.get(inner)
            if better is not None:
                return f"{op.name} of {inner} underflows: {better} computes it without underflowing"
        name = op.name
        if name == "exp" and kind == "overflow":
            for k in self.consumers.get(i, []):
                c = g.equations[k]
                if c.op.name == "divide" and c.inputs[0] == i:
                    return "this is a softmax: subtract the maximum before exp, or call softmax"
                if c.op.name == "sum" and any(g.equations[m].op.name == "log" for m in self.consumers.get(k, [])):
                    return "log of a sum of exp overflows: logsumexp computes it without overflowing"
                if c.op.name == "add" and any(g.equations[m].op.name == "log" for m in self.consumers.get(k, [])):
                    return "log(1 + exp(...)) overflows: softplus computes it without overflowing"
        if name == "log" and self._op_of(eq.inputs[0]).name == "sum" \
                and self._op_of(g.equations[eq.inputs[0]].inputs[0]).name == "exp":
            return "log of a sum of exp: logsumexp computes it without overflowing"
        return None
