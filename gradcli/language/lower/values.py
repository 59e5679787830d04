"""The values of the lowering, as it holds them before (or instead of) a graph id: a constant not
yet placed (`Literal`), a tuple, a string, None, JAX's `x.at[...]` and NumPy's `np.c_` waiting
for what follows, a closure, and the scope of a user function being expanded; and the policy by
which the numbers written in a program become values (`NumberPolicy`)."""
from __future__ import annotations

import numpy as np

from gradcli.errors import Pos
from gradcli.language import syntax as ast
from gradcli.ops.scalar import MODE
from gradcli.records import ValueRecord


def float64(value):
    """A number of the program as a float64: NumPy's scalar, or a Python float in the command's
    numbers-only attempt (gradcli.ops.scalar), which computes with it as NumPy would."""
    return float(value) if MODE.active else np.float64(value)


class NumberPolicy:
    """How the numbers written in a program become values, and what is told of them as the program
    is built (lowered and differentiated). This one reads each as a float64 and is told nothing;
    gradcli.cli.lines passes its own to learn which numbers are only ever the values of constants.
    The graph (gradcli.ir.Graph.numbers) tells it of constants made and read."""

    def number_value(self, node: ast.Number):
        """The value of a number literal as the lowering meets it."""
        return float64(node.value)

    def array_of(self, values: list) -> np.ndarray:
        """An array literal's value from its items' values (each a number's, or each a row's)."""
        if values and np.ndim(values[0]) == 0:
            return np.array([float(v) for v in values])
        return np.array(values).reshape((len(values),) + np.shape(values[0]))

    def fold(self, graph, op, constants: list) -> int:
        """The constant that an elementwise op of scalar constants (read by constant_read) is,
        made while a gradient is built (gradcli.ir.Graph's simplification)."""
        with np.errstate(all="ignore"):
            folded = float(op.forward(np, *(np.float64(c) for c in constants)))
        return graph.constant(folded).id

    def made(self, graph, id_: int) -> None:
        """A constant's or an input's equation `id_` was just made (its parameters may be wrapped)."""

    def constant_read(self, eq) -> float | None:
        """The number a constant equation holds, read while the program is built (by a gradient
        rule or a simplification), or None where it is not one number."""
        value = dict.__getitem__(eq.params, "value")
        return float(value) if value.ndim == 0 else None


class Literal(ValueRecord):
    """A constant not yet placed in the graph: `[1, 2]`, `-3`, `pi`. At top level it makes an
    input with a default; as a static argument (`axis=0`) it is read directly."""

    _fields = ("value", "pos", "boolean", "from_tuple")
    __slots__ = _fields + ("library", "listed")
    value: np.ndarray
    pos: Pos
    boolean: bool  # written with True/False (or a comparison): a mask where it indexes
    from_tuple: bool  # written as a tuple, `(0, 1)`: as a whole subscript, one index per axis
    library: str | None  # the array library whose function made it (`torch.tensor([1.0])`), if known
    listed: bool  # written as a list display, `[1.0, 2.0]`: in pasted code, Python's list (fold.py)

    def __init__(self, value, pos, boolean=False, from_tuple=False):
        self.value = value
        self.pos = pos
        self.boolean = boolean
        self.from_tuple = from_tuple
        self.library = None
        self.listed = False


class TupleValue(ValueRecord):
    """`(a, b)` of computed values, or what a function returned with `return a, b`: unpacked
    by `x, y = ...`, indexed with a constant, or read as one array (its items stacked). A library's
    named tuple (`torch.sort(x)`) has its items' names in `fields` (`.values`, `.indices`)."""

    __slots__ = _fields = ("items", "pos", "fields")
    items: list
    pos: Pos
    fields: tuple

    def __init__(self, items, pos, fields=()):
        self.items = items
        self.pos = pos
        self.fields = fields


class AtRef(ValueRecord):
    """`x.at` of JAX: waits for its index, `x.at[idx]`."""

    __slots__ = _fields = ("target", "pos")
    target: object
    pos: Pos

    def __init__(self, target, pos):
        self.target = target
        self.pos = pos


class IndexTrick(ValueRecord):
    """NumPy's `np.c_` or `np.r_`: waits for its subscript, the arrays to join (`np.c_[a, b]`)."""

    __slots__ = _fields = ("op", "spelled", "pos")
    op: object
    spelled: str
    pos: Pos

    def __init__(self, op, spelled, pos):
        self.op = op
        self.spelled = spelled
        self.pos = pos


class AtIndexed(ValueRecord):
    """`x.at[idx]`: waits for its update, `.set(v)`, `.add(v)`, `.get()`."""

    __slots__ = _fields = ("target", "index", "pos")
    target: object
    index: tuple
    pos: Pos

    def __init__(self, target, index, pos):
        self.target = target
        self.index = index
        self.pos = pos


class Text(ValueRecord):
    """A string argument (an einsum spec, a mode, a dtype's name); never a number."""

    __slots__ = _fields = ("value", "pos")
    value: str
    pos: Pos

    def __init__(self, value, pos):
        self.value = value
        self.pos = pos


class _NoneType:
    """`None` in pasted code: a left-out argument, compared with `is`, or a new axis."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "None"


NONE = _NoneType()


class Closure(ValueRecord):
    """A `def` inside a function: it sees the names of the scope it was defined in."""

    __slots__ = _fields = ("fn", "scope")
    fn: ast.FuncDef
    scope: "Scope"

    def __init__(self, fn, scope):
        self.fn = fn
        self.scope = scope


class TypeName(Text):
    """`type(x)`: the name of the library's type of x, as a label (`type(x).__name__`)."""

    __slots__ = ()


class Deleted:
    """What a function's local name holds after `del name` (a later use is an error)."""

    __slots__ = ("pos",)

    def __init__(self, pos: Pos):
        self.pos = pos


class Scope(ValueRecord):
    __slots__ = _fields = ("locals", "stack", "active", "parent")
    locals: dict | None          # None at top level
    stack: tuple  # call sites of the user functions being expanded
    active: tuple  # names of those functions, to detect recursion
    parent: "Scope | None"  # where a nested def was defined: its enclosing names

    def __init__(self, locals, stack=(), active=(), parent=None):
        self.locals = locals
        self.stack = stack
        self.active = active
        self.parent = parent

    def lookup(self, name: str):
        """The local binding of `name` in this scope or an enclosing function's, else None."""
        scope = self
        while scope is not None and scope.locals is not None:
            if name in scope.locals:
                return scope.locals[name]
            scope = scope.parent
        return None
