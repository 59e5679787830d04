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


@dataclass(slots=True, eq=False)
class Slice:
    start: Node | None
    stop: Node | None
    step: Node | None
    pos: Pos


NEWAXIS = "None"
ELLIPSIS = "..."


@dataclass(slots=True, eq=False)
class Index(Node):
    """`target[i, j:k, None, ...]`; the subscripts must be constants."""

    target: Node
    subscripts: list  # of Node | Slice | NEWAXIS | ELLIPSIS
    pos: Pos


@dataclass(slots=True, eq=False)
class Assign:
    name: str
    value: Node
    pos: Pos  # of the name


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
    body: list  # Assign | ExprStmt | Return, ending in a Return
    pos: Pos  # of the function's name


@dataclass(slots=True, eq=False)
class Module:
    statements: list  # Assign | ExprStmt | FuncDef


def children(node) -> list:
    """The sub-expressions of an expression node, for iterative walks (no recursion)."""
    if isinstance(node, Call):
        return node.args + [k.value for k in node.keywords]
    if isinstance(node, Array):
        return node.items
    if isinstance(node, Index):
        out = [node.target]
        for sub in node.subscripts:
            if isinstance(sub, Slice):
                out.extend(p for p in (sub.start, sub.stop, sub.step) if p is not None)
            elif isinstance(sub, Node):
                out.append(sub)
        return out
    return []
