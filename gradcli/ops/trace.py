"""The tracer: gradient rules and composites are written over symbolic values (`Sym`), and
`G.name(...)` (or a composite's `f.name(...)`) emits an equation of the op `name`.

A `Sym` belongs to a trace, which is where its equations go: anything with `shapes` (a value id
-> its shape), `emit(op, ids, params) -> Sym` and `constant(value) -> Sym`. Two provide it: the
graph itself while a gradient is built (gradcli.ir.Graph: each equation attributed to the one
being differentiated, shared and simplified), and a composite's expansion at its call's place
(gradcli.language.lower.calls: each op bound as a call of the program, a composite expanded in
turn)."""
from __future__ import annotations

from gradcli.ops.table import OPS


class Sym:
    """A value of the program being built; arithmetic on it emits equations through its trace
    (`graph`: the Graph while a gradient is built, else the trace it was made in)."""

    __slots__ = ("graph", "id")

    def __init__(self, graph, id_: int):
        self.graph = graph
        self.id = id_

    @property
    def shape(self) -> tuple[int, ...]:
        return self.graph.shapes[self.id]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __add__(self, other): return G.add(self, other)
    def __radd__(self, other): return G.add(other, self)
    def __sub__(self, other): return G.subtract(self, other)
    def __rsub__(self, other): return G.subtract(other, self)
    def __mul__(self, other): return G.multiply(self, other)
    def __rmul__(self, other): return G.multiply(other, self)
    def __truediv__(self, other): return G.divide(self, other)
    def __rtruediv__(self, other): return G.divide(other, self)
    def __pow__(self, other): return G.power(self, other)
    def __neg__(self): return G.negative(self)


class Functions:
    """`G.exp(x)`, `G.sum(g, axis=0)`: emit an equation of the table's op through the trace of the
    first symbolic argument. `Functions(trace)` emits through `trace` itself (a composite's
    `f.zeros(...)` may have no symbolic argument). Python numbers and arrays become constants."""

    def __init__(self, trace=None):
        self._trace = trace  # (an op's name never starts with _)

    def __getattr__(self, name: str):
        OPS[name]  # (an unknown name is a KeyError here, not at the call)
        trace = self._trace

        def emit(*args, **params):
            op = OPS[name]  # looked up at each call: register() may replace the record
            into = trace
            if into is None:
                for a in args:
                    if type(a) is Sym:
                        into = a.graph
                        break
            ids = tuple([a.id if type(a) is Sym else into.constant(a).id for a in args])
            return into.emit(op, ids, params)

        if trace is None:
            setattr(self, name, emit)  # made once per name
        return emit


G = Functions()
