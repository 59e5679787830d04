"""The abstract syntax tree that the parser builds and the graph builder lowers.

Operators are calls: `a + b` is `Call("add", [a, b])` anchored at the `+`, so operators and
named functions reach the op table through one path. Every node carries its `Pos`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .errors import Pos


class Node:
    __slots__ = ()
    pos: Pos


@dataclass(slots=True, eq=False)
class Number(Node):
    value: float
    pos: Pos
    boolean: bool = False  # written True or False (a mask, not the integers 1 and 0)


@dataclass(slots=True, eq=False)
class Name(Node):
    id: str
    pos: Pos


@dataclass(slots=True, eq=False)
class Array(Node):
    """`[a, b, ...]`: a literal when every item is, else a stack of computed values."""

    items: list[Node]
    pos: Pos


@dataclass(slots=True, eq=False)
class Str(Node):
    """A string literal: a docstring, or a text argument such as an einsum spec."""

    value: str
    pos: Pos


@dataclass(slots=True, eq=False)
class Tuple(Node):
    """`(a, b)` or `a, b`: several values, unpacked by `x, y = ...` or read as an array."""

    items: list[Node]
    pos: Pos


@dataclass(slots=True, eq=False)
class Attribute(Node):
    """`(expr).name`: an attribute or method of a computed value (`(a @ b).T`)."""

    target: Node
    name: str
    pos: Pos


@dataclass(slots=True, eq=False)
class Keyword:
    name: str
    value: Node
    pos: Pos


@dataclass(slots=True, eq=False)
class Call(Node):
    """A call of a named function, or an operator (`symbol` is then its spelling)."""

    func: str
    args: list[Node]
    pos: Pos
    keywords: list[Keyword] = field(default_factory=list)
    symbol: str | None = None
    method: bool = False  # `x.sum(axis=0)`: args[0] is the value the method was called on


@dataclass(slots=True, eq=False)
class Slice:
    start: Node | None
    stop: Node | None
    step: Node | None
    pos: Pos


ELLIPSIS = "..."


@dataclass(slots=True, eq=False)
class NoneLiteral(Node):
    """`None`: a missing argument (`targets=None`), or a new axis in a subscript."""

    pos: Pos


@dataclass(slots=True, eq=False)
class Index(Node):
    """`target[i, j:k, None, ...]`; the subscripts must be constants."""

    target: Node
    subscripts: list  # of Node | Slice | ELLIPSIS (None is a NoneLiteral node)
    pos: Pos
    trailing_comma: bool = False  # `x[(0, 1),]`: the tuple is one subscript, not one per axis


@dataclass(slots=True, eq=False)
class Assign:
    name: str
    value: Node
    pos: Pos  # of the name


@dataclass(slots=True, eq=False)
class Unpack:
    """`a, b = value`: the items of a tuple, or the rows of an array, bound to names."""

    names: list[tuple[str, Pos]]
    value: Node
    pos: Pos  # of the first name


@dataclass(slots=True, eq=False)
class Import:
    """`import numpy as onp`, `from jax import numpy as jnp`: (module, the name it is bound to)."""

    bindings: list[tuple[str, str]]
    pos: Pos


@dataclass(slots=True, eq=False)
class ExprStmt:
    value: Node
    pos: Pos


@dataclass(slots=True, eq=False)
class Return:
    value: Node
    pos: Pos


@dataclass(slots=True, eq=False)
class FuncDef:
    name: str
    params: list[tuple[str, Pos]]
    body: list  # Assign | Unpack | ExprStmt | FuncDef | Import, ending in a Return
    pos: Pos  # of the function's name
    defaults: dict = field(default_factory=dict)  # parameter name -> default value (a Node)


@dataclass(slots=True, eq=False)
class Module:
    statements: list  # Assign | Unpack | ExprStmt | FuncDef | Import


def children(node) -> list:
    """The sub-expressions of an expression node, for iterative walks (no recursion)."""
    if isinstance(node, Call):
        return node.args + [k.value for k in node.keywords]
    if isinstance(node, (Array, Tuple)):
        return node.items
    if isinstance(node, Attribute):
        return [node.target]
    if isinstance(node, Index):
        out = [node.target]
        for sub in node.subscripts:
            if isinstance(sub, Slice):
                out.extend(p for p in (sub.start, sub.stop, sub.step) if p is not None)
            elif isinstance(sub, Node):
                out.append(sub)
        return out
    return []
