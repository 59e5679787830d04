"""Symbolic values: gradient rules and composites are written over `Sym`, and `G.name(...)` emits
an equation of the op `name` into the value's graph."""
from __future__ import annotations

from gradcli.ops.table import OPS


class Sym:
    """A value of the program being built; arithmetic on it emits equations."""

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


class _GraphFunctions:
    """`G.exp(x)`, `G.sum(g, axis=0)`: emit an equation of the table's op into x's graph.
    Python numbers become constants."""

    def __getattr__(self, name: str):
        OPS[name]  # (an unknown name is a KeyError here, not at the call)

        def emit(*args, **params):
            op = OPS[name]  # looked up at each call: register() may replace the record
            graph = None
            for a in args:
                if type(a) is Sym:
                    graph = a.graph
                    break
            ids = tuple([a.id if type(a) is Sym else graph.constant(a).id for a in args])
            return graph.derived(op, ids, params)

        setattr(self, name, emit)  # made once per name
        return emit


G = _GraphFunctions()
