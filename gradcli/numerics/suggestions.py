"""The suggestion in words a numerical diagnostic carries (diagnostics.py): an op's own from its
entry in gradcli/numerics/hints.py, after the patterns of several ops that have a stable function
computing them whole (a softmax written out, log(sum(exp(x))), log of sigmoid). A rewrite in code
is offered only where gradcli.numerics.fixes has proven it on the user's inputs (it then replaces
the words)."""
from __future__ import annotations

from gradcli.ir import Graph
from gradcli.numerics.hints import hints_of


class Suggestions:
    """`suggest(i, eq, kind)` for the equations of one graph."""

    def __init__(self, graph: Graph, largest: float):
        self.graph = graph
        self.largest = largest  # the dtype's largest number: an overflow limit's `{limit}`
        self._consumers: dict[int, list[int]] | None = None

    def consumers(self) -> dict[int, list[int]]:
        if self._consumers is None:
            cons: dict[int, list[int]] = {}
            for k, e in enumerate(self.graph.equations):
                if e.backward is None:
                    for j in e.inputs:
                        cons.setdefault(j, []).append(k)
            self._consumers = cons
        return self._consumers

    def _op_of(self, j: int):
        return self.graph.equations[j].op

    def suggest(self, i, eq, kind) -> str | None:
        """The suggestion for a diagnostic of `kind` whose origin is equation i."""
        g = self.graph
        if eq.backward is not None:
            forward = g.equations[eq.backward].op
            for k in self.consumers().get(eq.backward, []):
                w = g.equations[k]
                if hints_of(w.op).selects:
                    return (f"the {w.op.name} at {w.pos} discards this branch's value but not its gradient: "
                            f"compute the branch on safe inputs (where inside the branch as well: the "
                            f"double-where trick)")
            return hints_of(forward).suggestions.get("nonfinite_gradient")
        pattern = self._pattern_hint(i, eq, kind)
        if pattern is not None:
            return pattern
        hints = hints_of(eq.op)
        hint = hints.suggestions.get(kind)
        if hint is not None:
            if hints.overflows_above is not None:
                hint = hint.replace("{limit}", str(int(hints.overflows_above(self.largest))))
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
            for k in self.consumers().get(i, []):
                c = g.equations[k]
                if c.op.name == "divide" and c.inputs[0] == i:
                    return "this is a softmax: subtract the maximum before exp, or call softmax"
                if c.op.name == "sum" and any(g.equations[m].op.name == "log" for m in self.consumers().get(k, [])):
                    return "log of a sum of exp overflows: logsumexp computes it without overflowing"
                if c.op.name == "add" and any(g.equations[m].op.name == "log" for m in self.consumers().get(k, [])):
                    return "log(1 + exp(...)) overflows: softplus computes it without overflowing"
        if name == "log" and self._op_of(eq.inputs[0]).name == "sum" \
                and self._op_of(g.equations[eq.inputs[0]].inputs[0]).name == "exp":
            return "log of a sum of exp: logsumexp computes it without overflowing"
        return None
