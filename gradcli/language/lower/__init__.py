"""AST -> a straight-line program of equations.

A `Graph` is a list of equations in SSA form: equation i computes value i from earlier values,
with an op of the table, static parameters, and the source position it stands for. Shapes are
computed as each equation is added, so impossible shapes are rejected before anything runs.
Gradients (gradcli.autodiff) are appended to the same graph as more equations.

Lowering walks the AST with an explicit work stack: no recursion over the nesting depth, and
user functions are expanded where they are called, with recursion detected and rejected.
"""
from __future__ import annotations

import math
import re

import numpy as np

from gradcli.ops import index as ops_index
from gradcli.language import syntax as ast
from gradcli.errors import GradcliError, OptionError, Pos, ShapeError, Source
from gradcli.ops import CALLABLE, OPS, REQUIRED, Op, ReadingError, fmt_shape
from gradcli.ops.core import CONSTANTS, FIRST_ARGUMENT_KEYWORDS, KEYWORD_ALIASES, split_spelling, strip_prefixes
from gradcli.ops.shapes import nested_ints
from gradcli.ops.table import Spelling
from gradcli.ir import Equation, Graph, ValueId
from gradcli.records import ValueRecord
from gradcli.engine.evaluate import needed_equations, run

MAX_CONSTANT_ELEMENTS = 100_000_000      # an array a constructor (`zeros`, `eye`) makes while lowering
MAX_LOWERING_STEPS = 1_000_000           # expansion steps of a short program (seconds of work)
LOWERING_STEPS_PER_CHARACTER = 8         # ... and more for a longer text (a 50 MB program)


class Literal(ValueRecord):
    """A constant not yet placed in the graph: `[1, 2]`, `-3`, `pi`. At top level it makes an
    input with a default; as a static argument (`axis=0`) it is read directly."""

    __slots__ = _fields = ("value", "pos", "boolean", "from_tuple")
    value: np.ndarray
    pos: Pos
    boolean: bool  # written with True/False (or a comparison): a mask where it indexes
    from_tuple: bool  # written as a tuple, `(0, 1)`: as a whole subscript, one index per axis

    def __init__(self, value, pos, boolean=False, from_tuple=False):
        self.value = value
        self.pos = pos
        self.boolean = boolean
        self.from_tuple = from_tuple


class TupleValue(ValueRecord):
    """`(a, b)` of computed values, or what a function returned with `return a, b`: unpacked
    by `x, y = ...`, indexed with a constant, or read as one array (its items stacked)."""

    __slots__ = _fields = ("items", "pos")
    items: list
    pos: Pos

    def __init__(self, items, pos):
        self.items = items
        self.pos = pos


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
    scope: "_Scope"

    def __init__(self, fn, scope):
        self.fn = fn
        self.scope = scope


class _Scope(ValueRecord):
    __slots__ = _fields = ("locals", "stack", "active", "parent")
    locals: dict | None          # None at top level
    stack: tuple  # call sites of the user functions being expanded
    active: tuple  # names of those functions, to detect recursion
    parent: "_Scope | None"  # where a nested def was defined: its enclosing names

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


# dtype names in pasted code (`tf.float32`, `np.float64`, 'float32'): floating types are what
# gradcli computes in; the others would change the numbers
FLOAT_DTYPES = {"float16", "float32", "float64", "double", "single", "half", "float", "bfloat16", "float_"}
OTHER_DTYPES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool", "bool_",
                "int", "complex64", "complex128", "complex", "long"}
# Functions of pasted code that are numbers: Keras' fuzz factor
CONSTANT_FUNCTIONS = {"epsilon": 1e-7}
# the names call_special may read as something other than their op
_SPECIAL_CALLS = frozenset(CONSTANT_FUNCTIONS) | {"len", "cast", "astype"} | FLOAT_DTYPES | OTHER_DTYPES
# NumPy array attributes read as the functions they are
ATTRIBUTES = {"T": "transpose", "mT": "matrix_transpose"}

# The keywords by which libraries name a sequence of arrays (`tf.concat(values=...)`, `torch.cat(tensors=...)`)
SEQUENCE_KEYWORDS = ("values", "tensors", "arrays", "tup", "seq", "condlist", "choicelist")
# Static parameters that are integers or (nested) lists of integers: constant indices, widths
INTEGER_ARRAY_PARAMS = {"indices", "index", "repeats", "reps", "pad_width", "paddings", "pad", "shift", "shifts",
                        "start_indices", "limit_indices", "strides", "slice_sizes", "indices_or_sections",
                        "num_or_size_splits", "split_size_or_sections", "sections", "begin", "size"}


_EVAL, _APPLY, _BIND, _DISCARD, _UNPACK, _DEFINE, _CHOOSE = range(7)


_TORCH_SPELLED = re.compile(r"(?<![\w.])(?:torch|F)\.")
_OTHER_ARRAY_LIBRARIES = ("np", "numpy", "jnp", "onp", "anp", "tf", "tensorflow", "jax", "keras", "K")
_OTHER_ARRAY_LIBRARY_SPELLED = re.compile(rf"(?<![\w.])(?:{'|'.join(_OTHER_ARRAY_LIBRARIES)})\.")


def _libraries(module: ast.Module, text: str) -> tuple[bool, bool]:
    """(whether the program spells PyTorch: imports it, or calls torch./F.; whether it spells
    NumPy, JAX, TensorFlow, Keras or autograd). Whose methods `x.std()`, `x.max(1)` and subscripts
    `x[0, :, [1, 2]]` are follows from them: PyTorch's where the program spells only PyTorch,
    else NumPy's. They differ: torch's x.std() divides by n - 1, its x.max(1) gives (values,
    indices), its integer subscripts select before its lists index."""
    imported = {module_name.partition(".")[0] for stmt in module.statements if isinstance(stmt, ast.Import)
                for module_name, _ in stmt.bindings}
    # (a substring test first: the searches' lookbehind is slow over a long generated program)
    torch = "torch" in imported or (("torch." in text or "F." in text) and _TORCH_SPELLED.search(text) is not None)
    other = bool(imported & {"numpy", "jax", "tensorflow", "keras", "autograd"}) \
        or (any(f"{prefix}." in text for prefix in _OTHER_ARRAY_LIBRARIES)
            and _OTHER_ARRAY_LIBRARY_SPELLED.search(text) is not None)
    return torch, other


class _Lowering:
    def __init__(self, module: ast.Module, source: Source, feeds: dict, call: ast.Node | None = None,
                 symbols: bool = False):
        self.graph = Graph(source)
        # the expansion's work is bounded, not only the operations it adds: a call tree that
        # adds none (`pick(f(a), f(a))` forty deep) must end too
        self.steps_left = MAX_LOWERING_STEPS + LOWERING_STEPS_PER_CHARACTER * len(source.text)
        self.symbols = symbols  # an input with no value is a scalar symbol (derive)
        self.source = source
        self.feeds = feeds
        self.globals: dict = {}  # name -> value id | ast.FuncDef
        self.aliases: dict[str, str] = {}  # `import numpy as onp`: onp -> numpy
        self.missing: dict[str, Pos] = {}
        self.assigned_at: dict[str, Pos] = {}
        for stmt in module.statements:
            for name in _bound_names(stmt):
                self.assigned_at.setdefault(name, stmt.pos)
        self.module = module
        self.call_text = call
        torch, other = _libraries(module, source.text)
        self.method_library = "torch" if torch and not other else "numpy"
        # a program spelling PyTorch beside another library: a subscript its two readings of
        # integer-and-list indexing would tell apart is refused (see index)
        self.torch_beside_others = torch and other
        # how a call spelled so (name, operator symbol, method or not, arguments and keywords
        # given, a list first) reads, once found: (op, preset); an import renames, and forgets them
        self.readings: dict[tuple, tuple] = {}
        self.sequence_ops: dict[str, bool] = {}  # a function's name -> whether takes_sequences

    def error(self, message: str, pos: Pos | None) -> GradcliError:
        return GradcliError(message, pos, self.source)

    # ----------------------------------------------------------------- statements
    def run(self) -> Graph:
        graph = self.graph
        top = _Scope(None)
        statements = list(self.module.statements)
        if self.call_text is not None:
            call = self.call_text
            defined = {stmt.name for stmt in statements if isinstance(stmt, ast.FuncDef)}
            if isinstance(call, ast.ExprStmt) and isinstance(call.value, ast.Call) and call.value.func in defined:
                call = ast.Assign(call.value.func, call.value, call.pos)  # named after the function
            statements.append(call)
        else:
            # the last statement that computes or defines (an `import` after a pasted def is no call)
            last = next((stmt for stmt in reversed(statements) if not isinstance(stmt, ast.Import)), None)
            if isinstance(last, ast.FuncDef):
                statements.append(self.implicit_call(last))
        for stmt in statements:
            if isinstance(stmt, ast.FuncDef):
                self.globals[stmt.name] = stmt
                continue
            if isinstance(stmt, ast.Import):
                self.imports(stmt)
                continue
            if isinstance(stmt, ast.ExprStmt) and isinstance(stmt.value, ast.Str):
                continue  # a docstring
            node = stmt.value
            if type(node) is ast.Number:  # `x0 = 0.5`: often most of a generated program's lines
                self.steps_left -= 1
                value = Literal(number_value(node), node.pos, node.boolean)
            else:
                value = self.lower(node, top)
            if isinstance(stmt, ast.Unpack):
                for (name, pos), item in zip(stmt.names, self.unpack(value, len(stmt.names), stmt.pos, top)):
                    self.bind_global(name, item, pos, top)
            elif isinstance(stmt, ast.Assign):
                self.bind_global(stmt.name, value, stmt.pos, top)
            else:
                value = self.materialize(value, top)
                graph.names["_"] = value
                graph.result = ("_", value)
        if self.missing:
            raise self.missing_inputs_error()
        if graph.result is None:
            raise self.error("the program defines functions but computes nothing", None)
        for name in self.feeds:
            if name not in graph.inputs:
                where = self.assigned_at.get(name)
                why = (f"'{name}' is computed by the program (line {where.line}), so it is not an input"
                       if where else f"the program does not use '{name}'")
                graph.warnings.append((f"the value given for {name} is ignored: {why}", None))
        return graph

    def bind_global(self, name: str, value, pos: Pos, scope: _Scope) -> None:
        graph = self.graph
        if isinstance(value, Literal) and name not in self.globals:
            value = self.input(name, pos, default=value)
        else:
            value = self.materialize(value, scope)
        self.globals[name] = value
        graph.names[name] = value
        graph.value_names.setdefault(value, name)
        graph.result = (name, value)

    def implicit_call(self, fn: ast.FuncDef) -> ast.Assign:
        """A pasted function with no call: call it with its parameters bound to the inputs
        of the same names (a parameter with a default keeps it unless --set gives it); the
        result is named after the function."""
        args = [ast.Name(p, pos) for p, pos in fn.params if p not in fn.defaults]
        given = [ast.Keyword(p, ast.Name(p, pos), pos) for p, pos in fn.params if p in fn.defaults and p in self.feeds]
        return ast.Assign(fn.name, ast.Call(fn.name, args, fn.pos, given), fn.pos)

    def imports(self, stmt: ast.Import) -> None:
        for module, name in stmt.bindings:
            if module != name:
                self.aliases[name] = module
                self.readings.clear()
                self.sequence_ops.clear()

    def spelled(self, name: str) -> str:
        """The name with an `import ... as` alias replaced by its module (`onp.exp` -> `numpy.exp`)."""
        head, dot, rest = name.partition(".")
        module = self.aliases.get(head)
        if module is None:
            return name
        return f"{module}.{rest}" if dot else module

    def unpack(self, value, count: int, pos: Pos, scope: _Scope) -> list:
        """The `count` items of a tuple, or the rows of an array, for `a, b = value`."""
        if isinstance(value, TupleValue):
            items = value.items
        elif isinstance(value, Literal) and value.value.ndim:
            items = [Literal(row, value.pos) for row in value.value]
        elif type(value) is int and self.graph.shapes[value]:
            n = self.graph.shapes[value][0]
            items = [self.emit(OPS["index"], (value,), {"index": (k,)}, pos, "[]", scope) for k in range(min(n, count))]
            items += [None] * (n - len(items))
        else:
            raise self.error(f"cannot unpack a single number into {count} names", pos)
        if len(items) != count:
            raise self.error(f"cannot unpack {len(items)} values into {count} names", pos)
        return items

    def input(self, name: str, pos: Pos, default: Literal | None = None) -> int:
        graph = self.graph
        if name in graph.inputs:
            return graph.inputs[name]
        if name in self.feeds:
            value = self.feeds[name]
        elif default is not None:
            value = default.value
        elif self.symbols:  # a scalar with no value: what `derive` prints as a free name
            graph.equations.append(Equation(OPS["input"], (), {"name": name, "value": None}, pos, name))
            graph.shapes.append(())
            value = graph.inputs[name] = len(graph.equations) - 1
            graph.names.setdefault(name, value)
            graph.value_names.setdefault(value, name)
            return value
        else:
            self.missing.setdefault(name, pos)
            value = None
        op = OPS["input"]
        if value is None:  # unknown shape: lowering goes on to find every missing input
            graph.equations.append(Equation(op, (), {"name": name, "value": None}, pos, name))
            graph.shapes.append(None)
            id_ = len(graph.equations) - 1
        else:
            id_ = graph.add_input(name, value, pos)
        graph.inputs[name] = id_
        graph.names.setdefault(name, id_)
        graph.value_names.setdefault(id_, name)
        return id_

    def materialize(self, value, scope: _Scope, pos: Pos | None = None) -> int:
        if isinstance(value, Literal):
            return self.graph.add_constant(value.value, value.pos, scope.stack)
        if isinstance(value, TupleValue):  # read as one array, as np.asarray reads a tuple
            return self.array(ast.Array([], value.pos), value.items, scope, as_value=True)
        if isinstance(value, Text):
            raise self.error(f"the string '{value.value}' is not a number", value.pos)
        if value is NONE:
            raise self.error("None is not a number (an argument left out is used as one)", pos)
        if isinstance(value, IndexTrick):
            raise self.error(f"{value.spelled} is not a value: it joins the arrays in its brackets, as in "
                             f"{value.spelled}[a, b]", value.pos)
        if isinstance(value, (AtRef, AtIndexed)):
            raise self.error("x.at[index] is not a value: JAX's update syntax needs its method, as in "
                             "x.at[index].set(v), .add(v), .multiply(v), .divide(v), .power(v), .min(v), "
                             ".max(v) or .get()", value.pos)
        return value

    # ----------------------------------------------------------------- expressions
    def lower(self, root: ast.Node, scope: _Scope):
        """The value of an expression: a graph id, a Literal, a TupleValue or a Text.
        Iterative post-order walk; a user function call pushes its body onto the same work
        stack."""
        work = [(_EVAL, root, scope)]
        values: list = []
        push, pop = work.append, work.pop
        Name, Number, Call, Closure_ = ast.Name, ast.Number, ast.Call, Closure
        globals_ = self.globals
        steps = self.steps_left  # (a local, counted once per work item; an error ends the lowering)
        while work:
            kind, node, scope = pop()
            steps -= 1
            if steps < 0:
                self.steps_left = steps
                raise self.error(f"the program expands to more than {MAX_LOWERING_STEPS:,} steps of lowering: user "
                                 "functions are expanded where they are called, and calls that call a function "
                                 "more than once multiply (f calling g twice, g calling h twice, ...)",
                                 getattr(node, "pos", None) or getattr(root, "pos", None))
            if kind == _EVAL:
                node_type = type(node)
                if node_type is Name and scope.locals is None:
                    # the commonest node, a name at the top level: a global, as resolve() finds it
                    found = globals_.get(node.id)
                    if found is not None and not isinstance(found, (ast.FuncDef, Closure_)):
                        values.append(found)
                        continue
                if node_type is Call and not node.keywords and node.symbol != "if" and (
                        node.method or "." not in node.func) and not self.takes_sequences(node, scope):
                    # an operator (`a * b`) or a plain call (`sin(x)`): its arguments, then itself
                    if scope.locals is None:
                        # every argument a name of the top level (`sin(x0)`): applied at once,
                        # the steps counted as if each argument had been a work item
                        args = []
                        for kid in node.args:
                            found = globals_.get(kid.id) if type(kid) is Name else None
                            if found is None or isinstance(found, (ast.FuncDef, Closure_)):
                                break
                            args.append(found)
                        else:
                            steps -= len(args)
                            result = self.call(node, args, scope, work)
                            if result is not None:
                                values.append(result)
                            continue
                    push((_APPLY, node, scope))
                    for kid in reversed(node.args):
                        push((_EVAL, kid, scope))
                elif node_type is Number:
                    values.append(Literal(number_value(node), node.pos, node.boolean))
                elif node_type is Name:
                    values.append(self.resolve(node, scope))
                elif isinstance(node, ast.Str):
                    values.append(Text(node.value, node.pos))
                elif isinstance(node, ast.NoneLiteral):
                    values.append(NONE)
                elif isinstance(node, ast.Call) and node.symbol == "if":
                    # the condition first: a constant one picks its side, as Python does
                    work.append((_CHOOSE, node, scope))
                    work.append((_EVAL, node.args[0], scope))
                else:
                    if isinstance(node, ast.Call) and not node.method and "." in node.func:
                        node = self.as_method(node, scope)
                    kids = ast.children(node)
                    if isinstance(node, ast.Call) and self.takes_sequences(node, scope):
                        # `concatenate([a, b])`: the list is the sequence of arrays, not one array
                        names = [None] * len(node.args) + [kw.name for kw in node.keywords]
                        kids = [ast.Tuple(kid.items, kid.pos) if isinstance(kid, ast.Array) and (
                                    k < len(node.args) or names[k] in SEQUENCE_KEYWORDS) else kid
                                for k, kid in enumerate(kids)]
                    push((_APPLY, node, scope))
                    for kid in reversed(kids):
                        push((_EVAL, kid, scope))
            elif kind == _APPLY:
                n = (len(node.args) + len(node.keywords) if type(node) is Call
                     else len(ast.children(node)))
                args = values[len(values) - n:]
                del values[len(values) - n:]
                if type(node) is Call:
                    result = self.call(node, args, scope, work)
                    if result is not None:
                        values.append(result)
                elif isinstance(node, ast.Array):
                    values.append(self.array(node, args, scope))
                elif isinstance(node, ast.Tuple):
                    values.append(self.tuple(node, args))
                elif isinstance(node, ast.Attribute):
                    values.append(self.attribute(args[0], node.name, node.pos, scope))
                else:
                    values.append(self.index(node, args, scope))
            elif kind == _BIND:
                scope.locals[node] = values.pop()
            elif kind == _UNPACK:
                for (name, _), item in zip(node.names, self.unpack(values.pop(), len(node.names), node.pos, scope)):
                    scope.locals[name] = item
            elif kind == _DEFINE:
                scope.locals[node.name] = Closure(node, scope)
            elif kind == _CHOOSE:
                condition, then, otherwise = values.pop(), node.args[1], node.args[2]
                truth = self.constant_truth(condition)
                if truth is not None:
                    work.append((_EVAL, then if truth else otherwise, scope))
                else:  # a computed condition: both sides, then where(c, a, b)
                    values.append(condition)
                    work.append((_APPLY, ast.Call("where", node.args, node.pos, symbol="if"), scope))
                    work.append((_EVAL, otherwise, scope))
                    work.append((_EVAL, then, scope))
            else:
                values.pop()
        self.steps_left = steps
        return values.pop()

    def takes_sequences(self, node: ast.Call, scope: _Scope) -> bool:
        """Whether the call is of an op whose leading arguments are sequences of arrays."""
        if node.method or node.symbol is not None or scope.lookup(node.func) is not None \
                or node.func in self.globals:
            return False
        known = self.sequence_ops.get(node.func)
        if known is None:
            op = CALLABLE.get(split_spelling(self.spelled(node.func))[1])
            known = self.sequence_ops[node.func] = op is not None and op.sequence > 0
        return known

    def constant_truth(self, value) -> bool | None:
        """Python's truth of a value known while lowering (a constant, None), else None."""
        if value is NONE:
            return False
        value = self.constant_value(value)
        if isinstance(value, Literal) and value.value.size == 1:
            return bool(value.value.reshape(()))
        if isinstance(value, Literal):
            raise self.error("the truth value of an array with more than one element is ambiguous (as in "
                             "NumPy): write where(condition, a, b)", value.pos)
        return None

    def is_value_name(self, name: str, scope: _Scope) -> bool:
        """Whether `name` stands for a value of the program (not a module such as `np`)."""
        return (scope.lookup(name) is not None or name in self.globals or name in self.feeds
                or name in self.assigned_at or name in self.graph.inputs)

    def as_method(self, node: ast.Call, scope: _Scope) -> ast.Call:
        """`x.sum(axis=0)` where x is a value: the method call `sum(x, axis=0)`; `x.T.sum()`
        calls it on the attribute `x.T`."""
        base, _, method = node.func.rpartition(".")
        first = base.partition(".")[0]
        if not self.is_value_name(first, scope) or first in self.aliases:
            return node
        receiver = ast.Name(base, Pos(node.pos.line, node.pos.column, node.pos.start,
                                      node.pos.start + len(base) if node.pos.start >= 0 else -1))
        return ast.Call(method, [receiver] + node.args, node.pos, node.keywords, method=True)

    def resolve(self, node: ast.Name, scope: _Scope):
        name = node.id
        found = scope.lookup(name)
        if found is None and name in self.globals:
            found = self.globals[name]
        if found is not None:
            if isinstance(found, (ast.FuncDef, Closure)):
                raise self.error(f"'{name}' is a function: call it, as in {name}(x)", node.pos)
            return found
        if "." in name:
            base, _, attribute = name.partition(".")
            if self.is_value_name(base, scope) and base not in self.aliases:
                target = self.resolve(ast.Name(base, node.pos), scope)
                for part in attribute.split("."):
                    target = self.attribute(target, part, node.pos, scope)
                return target
        library, bare = split_spelling(self.spelled(name))
        if bare in CONSTANTS and (bare == name or library != "python" or "." in name):
            return Literal(np.float64(CONSTANTS[bare]), node.pos)
        if "." in name and bare in FLOAT_DTYPES | OTHER_DTYPES:
            return Text(bare, node.pos)
        if "." in name and library == "numpy" and bare == "newaxis":  # NumPy's name for None in a subscript
            return NONE
        if "." not in name and name in self.assigned_at:
            where = self.assigned_at[name]
            raise self.error(f"'{name}' is used before it is assigned (at line {where.line})", node.pos)
        # a bare name that is also a function (`beta`, `gamma` of a layer norm) is an input;
        # a library's function spelled as a value (`np.sin * 2`) is a slip
        if bare in CALLABLE and "." in name:
            raise self.error(f"'{name}' is a function: call it, as in {name}(x)", node.pos)
        if "." in name and library == "numpy" and bare in ("c_", "r_"):
            return IndexTrick(OPS[bare], name, node.pos)
        if "." in name:
            raise self.error(f"unknown name '{name}'", node.pos)
        return self.input(name, node.pos)

    def attribute(self, target, name: str, pos: Pos, scope: _Scope):
        """`x.T`, `x.shape`, `x.ndim`, `x.size` of a value, as the functions and numbers they are."""
        if name == "at" and not isinstance(target, (Text, AtRef, AtIndexed)):
            return AtRef(target, pos)
        if isinstance(target, TupleValue) and len(target.items) == 2 and name in ("values", "indices"):
            # PyTorch's (values, indices) of torch.max(x, dim), torch.sort, torch.topk, by field name
            return target.items[name == "indices"]
        shape = self.shape_of(target)
        if name == "shape":
            return TupleValue([Literal(np.float64(d), pos) for d in shape], pos)
        if name == "ndim":
            return Literal(np.float64(len(shape)), pos)
        if name == "size":
            return Literal(np.float64(math.prod(shape)), pos)
        if name == "dtype":  # what gradcli computes in: a floating type (--dtype says which)
            return Text("float", pos)
        if name in ATTRIBUTES:
            op = CALLABLE.get(ATTRIBUTES[name])
            if op is not None:
                call = ast.Call(ATTRIBUTES[name], [ast.Name("", pos)], pos, method=True)
                return self.call_builtin(op, call, [target], scope)
        raise self.error(f"unknown attribute '.{name}' of a value; gradcli knows .T, .shape, .ndim, .size "
                         "and the methods that are functions (x.sum(axis=0), x.reshape(...))", pos)

    def missing_inputs_error(self) -> GradcliError:
        """The error naming every missing input found so far (at the first one's use)."""
        graph = self.graph
        names = list(self.missing)
        first = self.missing[names[0]]
        shown = names[:8]
        listed = ", ".join(f"'{n}'" for n in shown) + (f" and {len(names) - 8:,} more" if len(names) > 8 else "")
        hint = " ".join(f"{{option}} {n}=VALUE" for n in shown) + (" ..." if len(names) > 8 else "")
        known = [n for n in graph.names if n not in self.missing]
        import difflib

        close = [c for n in names for c in difflib.get_close_matches(n, known, n=1)]
        maybe = f" (did you mean {', '.join(close)}?)" if close and len(names) == 1 else ""
        functions = [n for n in names if n in CALLABLE]
        if functions and not maybe and len(names) == 1:
            maybe = f" (or call the function: {functions[0]}(x))"
        return OptionError(f"missing input{'s' if len(names) > 1 else ''} {listed}{maybe}: "
                           f"give {'them' if len(names) > 1 else 'it'} with {hint}", "feeds", first, self.source)

    def shape_of(self, value) -> tuple:
        if isinstance(value, Literal):
            return value.value.shape
        if isinstance(value, TupleValue):
            return (len(value.items),)
        if isinstance(value, Text):
            raise self.error("a string has no shape", value.pos)
        shape = self.graph.shapes[value]
        if shape is None:  # it depends on a missing input (x.shape, len(x)): that is the error
            raise self.missing_inputs_error()
        return shape

    def tuple(self, node: ast.Tuple, items: list):
        if items and all(isinstance(v, Literal) for v in items) and len({v.value.shape for v in items}) == 1 \
                and len({v.boolean for v in items}) == 1:
            value = self.array(node, items, None)
            value.from_tuple = True
            return value
        return TupleValue(list(items), node.pos)

    def array(self, node, items: list, scope: _Scope | None, as_value: bool = False):
        items = [self.flatten_tuple(v) for v in items]
        if all(isinstance(v, Literal) for v in items):
            shapes = {v.value.shape for v in items}
            if len(shapes) > 1:
                raise self.error("ragged array literal: its items have shapes "
                                 + ", ".join(fmt_shape(s) for s in sorted(shapes)), node.pos)
            if items and items[0].value.ndim == 0:
                value = np.array([float(v.value) for v in items])
            else:
                value = np.array([v.value for v in items]).reshape((len(items),) + (shapes.pop() if items else ()))
            if as_value:
                return self.graph.add_constant(value, node.pos, scope.stack if scope else ())
            return Literal(value, node.pos, bool(items) and all(v.boolean for v in items))
        ids = tuple(self.materialize(v, scope) for v in items)
        return self.emit(OPS["stack"], ids, {}, node.pos, "[...]", scope)

    def flatten_tuple(self, value):
        """A tuple inside an array literal, `[(1, 2), (3, 4)]`, is one of its rows."""
        if isinstance(value, TupleValue) and all(isinstance(v, Literal) for v in value.items):
            return self.array(ast.Array([], value.pos), value.items, None)
        return value

    def index(self, node: ast.Index, values: list, scope: _Scope):
        target, rest = values[0], iter(values[1:])
        if isinstance(target, IndexTrick):
            return self.index_trick(target, node, values[1:], scope)
        index = []
        subscripts = node.subscripts
        if len(subscripts) == 1 and not isinstance(subscripts[0], ast.Slice) and subscripts[0] is not ast.ELLIPSIS \
                and not node.trailing_comma:
            whole = values[1]
            # a tuple as the whole subscript is one index per axis, as in NumPy: x[(0, 1)] is x[0, 1]
            if isinstance(whole, TupleValue):
                subscripts, rest = [whole.pos] * len(whole.items), iter(whole.items)
            elif isinstance(whole, Literal) and whole.from_tuple:
                items = [Literal(row, whole.pos, whole.boolean) for row in whole.value]
                subscripts, rest = [whole.pos] * len(items), iter(items)
        for sub in subscripts:
            if isinstance(sub, ast.Slice):
                parts = [self.static_int(next(rest), "a slice bound", sub.pos) if p is not None else None
                         for p in (sub.start, sub.stop, sub.step)]
                if parts[2] == 0:
                    raise self.error("slice step cannot be zero", sub.pos)
                index.append(tuple(parts))
            elif sub is ast.ELLIPSIS:
                index.append(Ellipsis)
            else:
                value = next(rest)
                index.append(None if value is NONE else self.static_index(value, getattr(sub, "pos", node.pos)))
        if isinstance(target, AtRef):  # JAX's `x.at[idx]`: the update follows
            return AtIndexed(target.target, self.checked_index(target.target, tuple(index), node.pos), node.pos)
        if isinstance(target, TupleValue) and len(index) == 1 and isinstance(index[0], tuple):
            return TupleValue(target.items[slice(*index[0])], node.pos)  # `x.shape[-1:]`
        if isinstance(target, TupleValue) and not ops_index.is_advanced(index):  # `x.shape[0]`, `pair[1]`
            if len(index) != 1 or not isinstance(index[0], int):
                raise self.error("a tuple takes one constant integer index", node.pos)
            k = index[0]
            if not -len(target.items) <= k < len(target.items):
                raise self.error(f"index {k} is out of range for a tuple of {len(target.items)}", node.pos)
            return target.items[k]
        value = self.materialize(target, scope)
        if self.method_library == "torch":
            if any(isinstance(item, tuple) and item[2] is not None and item[2] < 0 for item in index):
                raise self.error("PyTorch takes no negative slice step (x[::-1] is a ValueError there): "
                                 "flip the axis with torch.flip(x, dims)", node.pos)
            selects, rest = _torch_index_steps(index)
            if selects is not None:
                value = self.emit(OPS["index"], (value,), {"index": selects}, node.pos, "[]", scope)
                index = rest
        elif self.torch_beside_others and _integers_part_a_separated_advanced_index(index):
            raise self.error("this subscript mixes integers and lists apart from each other, which NumPy and "
                             "PyTorch read differently (NumPy moves the indexed axes to the front, PyTorch "
                             "selects the integers first), and the program uses both: write it in steps, "
                             "such as x[0][:, [1, 2]]", node.pos)
        return self.emit(OPS["index"], (value,), {"index": tuple(index)}, node.pos, "[]", scope)

    def index_trick(self, trick: IndexTrick, node: ast.Index, items: list, scope: _Scope):
        """`np.c_[a, b, ...]`, `np.r_[...]`: the arrays joined as NumPy's AxisConcatenator joins
        them. Its other forms (a range `1:5`, a directive string 'r' or '0,2,1') are refused."""
        for sub in node.subscripts:
            if isinstance(sub, ast.Slice) or sub is ast.ELLIPSIS:
                raise self.error(f"{trick.spelled}[...] with a range or '...' is not supported: join arrays, "
                                 f"as in {trick.spelled}[a, b], or write np.arange", getattr(sub, "pos", node.pos))
        if len(items) == 1 and isinstance(items[0], TupleValue) and not node.trailing_comma:
            items = items[0].items
        for item in items:
            if isinstance(item, Text):
                raise self.error(f"{trick.spelled}[...] with the directive '{item.value}' is not supported: join "
                                 "arrays, or write np.concatenate(..., axis=...)", item.pos)
        arrays = tuple(self.materialize(item, scope) for item in items)
        return self.emit(trick.op, arrays, {}, node.pos, trick.spelled, scope)

    def static_index(self, value, pos: Pos | None):
        """One subscript: an int, or an IndexArray (a constant integer array, a boolean mask)."""
        value = self.constant_value(value)
        if isinstance(value, Literal) and value.value.ndim > 0:
            arr = value.value
            if value.boolean:
                return ops_index.IndexArray(arr != 0)
            if arr.size and not (np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
                bad = arr.reshape(-1)[~(np.isfinite(arr) & (arr == np.round(arr))).reshape(-1)][0]
                raise self.error(f"an index array must hold integers, not {float(bad):g}", value.pos)
            if arr.size and np.max(np.abs(arr)) >= 2 ** 62:
                raise self.error("an index is out of range", value.pos)
            return ops_index.IndexArray(arr.astype(np.intp))
        if isinstance(value, Literal) and value.boolean:
            raise self.error("a boolean scalar index (x[True]) adds an axis in NumPy: write x[None] for that, "
                             "or a mask with one entry per element", value.pos)
        if not isinstance(value, Literal):
            where = value.pos if isinstance(value, (Text, TupleValue)) else pos
            eq = self.graph.equations[value] if type(value) is int else None
            if eq is not None and eq.op.name == "input":
                raise self.error(f"an index must be a constant integer (or list, or mask) written in the program: "
                                 f"'{eq.params['name']}' is an input (a "
                                 "top-level NAME = literal can be changed with --set); write the index in the "
                                 "subscript, or bind it inside the function that uses it", where)
            raise self.error("an index must be a constant integer (or list, or mask) written in the program: a "
                             "computed index would make the shape depend on the data", where)
        return self.static_int(value, "an index", pos)

    def checked_index(self, target, index: tuple, pos: Pos) -> tuple:
        """The index, checked against the target's shape (a positioned error where NumPy raises)."""
        try:
            ops_index.indexed_shape(self.shape_of(target), index)
        except ShapeError as exc:
            raise self.error(f"[]: {exc}", pos) from None
        return index

    def at_update(self, node: ast.Call, values: list, scope: _Scope):
        """JAX's functional updates, `x.at[idx].set(v)`: x with the indexed elements replaced,
        lowered to indexing, scatters and where (gradcli.ops.index.update)."""
        at, args = values[0], values[1:]
        method = node.func
        if method not in ops_index.UPDATES:
            raise self.error(f"unknown update '.{method}' of x.at[...]: JAX's are "
                             ".set, .add, .multiply, .divide, .power, .min, .max and .get", node.pos)
        if node.keywords:
            raise self.error(f".at[...].{method}(): its keyword '{node.keywords[0].name}' is not supported "
                             "(gradcli checks indices itself: out of range is an error)", node.keywords[0].pos)
        want = 0 if method == "get" else 1
        if len(args) != want:
            raise self.error(f".at[...].{method}() takes {want} argument{'s' * (want != 1)}, got {len(args)}",
                             node.pos)
        x = self.materialize(at.target, scope)
        v = self.materialize(args[0], scope) if args else None
        label = f".at[].{method}"
        shape = self.graph.shapes[x]
        if shape is None or (v is not None and self.graph.shapes[v] is None):
            return x  # a missing input: lowering goes on to list them all

        def emit(name, ids, params):
            return self.emit(OPS[name], ids, params, node.pos, label, scope)

        def constant(value):
            return self.graph.add_constant(value, node.pos, scope.stack)

        try:
            return ops_index.update(emit, constant, x, v, method, at.index, shape,
                                    self.graph.shapes[v] if v is not None else None)
        except ShapeError as exc:
            where = self.node_pos(node.args[1], node.pos) if "broadcast" in str(exc) else at.pos
            raise self.error(f"{label}: {exc}", where) from None

    @staticmethod
    def node_pos(node, default: Pos) -> Pos:
        return getattr(node, "pos", None) or default

    def static_int(self, value, what: str, pos: Pos | None = None) -> int:
        value = self.constant_value(value)
        if not isinstance(value, Literal) or value.value.ndim != 0:
            where = value.pos if isinstance(value, (Literal, Text, TupleValue)) else pos
            raise self.error(f"{what} must be a constant integer, written in the program", where)
        number = float(value.value)
        if not number.is_integer():
            raise self.error(f"{what} must be an integer, not {number:g}", value.pos)
        return int(number)

    # ----------------------------------------------------------------- calls
    def call(self, node: ast.Call, values: list, scope: _Scope, work: list):
        name = node.func
        bound = None
        if not node.method:
            bound = scope.lookup(name) if scope.locals is not None else None
            if bound is None:
                bound = self.globals.get(name)
        if bound is not None and isinstance(bound, ast.FuncDef):
            return self.call_user(bound, node, values, scope, work, None)
        if bound is not None and isinstance(bound, Closure):
            return self.call_user(bound.fn, node, values, scope, work, bound.scope)
        if bound is not None or name in CONSTANTS:
            where = self.assigned_at.get(name)
            extra = f" (assigned at line {where.line})" if where and scope.locals is None else ""
            raise self.error(f"'{name}' is a value{extra}, not a function", node.pos)
        if node.symbol in ("is", "is not"):
            return self.identity_test(node, values)
        if node.method and values and isinstance(values[0], AtIndexed):
            return self.at_update(node, values, scope)
        args = node.args
        key = (name, node.symbol, node.method, len(args),
               tuple([k.name for k in node.keywords]) if node.keywords else (),
               bool(args) and type(args[0]) is ast.Array)
        found = self.readings.get(key)
        if found is not None:  # this call written the same way before: the same op, read the same way
            return self.call_builtin(found[0], node, values, scope, found[1], found[2])
        library, bare = (self.method_library, name) if node.method else split_spelling(self.spelled(name))
        special = self.call_special(bare, node, values)
        if special is not None:
            return special
        op = CALLABLE.get(bare)
        if op is None:
            if bare == "print":
                raise OptionError("print() is not needed: gradcli prints the last statement's value; name more "
                                  "values with {option} NAME", "prints", node.pos, self.source)
            known = list(CALLABLE) + [n for n, v in self.globals.items() if isinstance(v, ast.FuncDef)]
            import difflib

            close = difflib.get_close_matches(bare, known, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            what = "method" if node.method else "function"
            raise self.error(f"unknown {what} '{'.' if node.method else ''}{name}'{hint}", node.pos)
        # a call is remembered only where its spelling alone decides its reading: never where the
        # reading looks at what the arguments are (a constant, an input, an array) or rewrites them
        remember = bare not in _SPECIAL_CALLS  # (call_special reads the values)
        if library == "torch" and len(node.args) > 1 and not op.args and not op.variadic and op.slots[0] == "shape" \
                and all(slot == "dtype" for slot in op.slots[1:]):
            remember = False
            # PyTorch's constructors take the sizes as separate numbers: torch.ones(3, 4)
            count = len(node.args)
            values = [TupleValue(values[:count], node.pos)] + values[count:]
            node = ast.Call(node.func, node.args[:1], node.pos, node.keywords, node.symbol, node.method)
        preset: dict = {}
        if op.reading is not None and node.symbol is None:
            remember = False
            spelling = Spelling(library, bare, len(node.args), tuple(k.name for k in node.keywords),
                                         bool(node.args) and isinstance(node.args[0], ast.Array),
                                         node.method, name if node.method else self.spelled(name),
                                         tuple(self.written_kind(v, a) for v, a in zip(values, node.args)))
            try:
                chosen = op.reading(spelling)
            except ReadingError as exc:
                raise self.error(str(exc), node.pos) from None
            if chosen is not None:
                op, preset = OPS[chosen[0]], chosen[1]
        if remember:
            self.readings[key] = (op, preset, node.symbol or strip_prefixes(name))
        return self.call_builtin(op, node, values, scope, preset)

    def written_kind(self, value, node) -> str:
        """What an argument is, for an op's reading: "constant" (a number), "number input" (an
        input of shape (), which pasted code may have meant as an int) or "array" (anything else:
        a computed value, a constant of more than one number, or one written as an array,
        `torch.tensor(0.0)`)."""
        if isinstance(value, Literal):
            called = CALLABLE.get(strip_prefixes(self.spelled(node.func))) \
                if isinstance(node, ast.Call) and not node.method else None
            return "array" if value.value.ndim or called is OPS["identity"] else "constant"
        if type(value) is not int:
            return "constant"
        op = self.graph.equations[value].op
        if op is OPS["const"]:
            return "constant"
        return "number input" if op is OPS["input"] and self.graph.shapes[value] == () else "array"

    def identity_test(self, node: ast.Call, values: list) -> Literal:
        """`targets is None`, `targets is not None`: known while lowering, as the left-out
        arguments they test are. Identity of computed values is not a number: refused."""
        left, right = values
        if left is not NONE and right is not NONE:
            raise self.error(f"'{node.symbol}' compares identity, which values do not have here: "
                             "compare them with == or !=", node.pos)
        same = left is right
        return Literal(np.float64(same if node.symbol == "is" else not same), node.pos)

    def check_truth_values(self, node: ast.Call, values: list, op: Op) -> None:
        """Python's `a and b` gives one of its operands, NumPy's logical_and gives 0 or 1: the
        same numbers only where the operands are 0/1 (comparisons), so only those are read."""
        for arg, value in zip(node.args, values):
            if isinstance(value, Literal):
                truth = bool(np.all((value.value == 0) | (value.value == 1)))
            else:
                truth = type(value) is int and self.graph.equations[value].op.boolean
            if not truth:
                raise self.error(
                    f"'{node.symbol}' of a value that is not a comparison: Python's '{node.symbol}' works on "
                    f"truth values (and 'and'/'or' give one of their operands), NumPy's {op.name} "
                    f"gives 0 or 1; compare first (x > 0), or write where(...) for the value you mean", arg.pos)

    def call_special(self, bare: str, node: ast.Call, values: list):
        """Calls that are numbers or casts rather than operations: `len(x)`, `K.epsilon()`,
        `tf.cast(x, tf.float32)`, `x.astype(np.float32)`, `np.float32(x)`. None otherwise."""
        if bare in CONSTANT_FUNCTIONS and not values:
            return Literal(np.float64(CONSTANT_FUNCTIONS[bare]), node.pos)
        if bare in ("size", "dim", "numel") and node.method and not node.keywords and len(values) <= 2:
            # PyTorch's x.size() is the shape (x.size(d) one length), x.dim() the rank, x.numel()
            # the count (NumPy's x.size is an attribute, read in attribute())
            shape = self.shape_of(values[0])
            if bare != "size" or len(values) == 1:
                count = math.prod(shape) if bare == "numel" else len(shape)
                return Literal(np.float64(count), node.pos) if bare != "size" else TupleValue(
                    [Literal(np.float64(d), node.pos) for d in shape], node.pos)
            d = self.static_int(values[1], "the dim of size()", node.pos)
            if not -len(shape) <= d < len(shape):
                raise self.error(f"size({d}): dim {d} is out of range for an array of rank {len(shape)}", node.pos)
            return Literal(np.float64(shape[d]), node.pos)
        if bare == "float" and len(values) == 1 and isinstance(values[0], Text) and not node.method:
            # Python's float('-inf') of an attention mask: the number the string writes
            try:
                return Literal(np.float64(float(values[0].value)), node.pos)
            except ValueError:
                raise self.error(f"float('{values[0].value}'): the string is not a number", values[0].pos) from None
        if bare == "shape" and len(values) == 1 and not node.keywords and not node.method:
            # np.shape(x), tf.shape(x): the lengths, known as the program is read
            return TupleValue([Literal(np.float64(d), node.pos) for d in self.shape_of(values[0])], node.pos)
        if bare == "len" and len(values) == 1 and not node.keywords:
            shape = self.shape_of(values[0])
            if not shape:
                raise self.error("len() of a number: it has no length", node.pos)
            return Literal(np.float64(shape[0]), node.pos)
        if bare in ("cast", "astype") and len(values) == 2 or bare in FLOAT_DTYPES | OTHER_DTYPES and len(values) == 1:
            dtype = values[1] if len(values) == 2 else Text(bare, node.pos)
            self.check_dtype(dtype, node.pos)
            return values[0]
        return None

    def check_dtype(self, dtype, pos: Pos) -> None:
        """A floating dtype is what gradcli computes in (--dtype chooses which); any other
        would change the numbers (truncation), so it is refused."""
        if not isinstance(dtype, Text):
            raise self.error("a dtype must be written as a name such as tf.float32 or 'float32'", pos)
        if dtype.value in FLOAT_DTYPES:
            return
        raise self.error(f"a cast to {dtype.value} would change the numbers (gradcli computes in floating "
                         "point): write floor(x), round(x) or x > 0 for what the cast should do", dtype.pos)

    def constant_value(self, value):
        """A value computed from constants alone (`5 * 4`, `x.shape[0] * 2`), as a Literal, for
        places that need a number written in the program (shapes, axes, indices)."""
        if isinstance(value, TupleValue):
            items = [self.constant_value(v) for v in value.items]
            if all(isinstance(v, Literal) and v.value.ndim == 0 for v in items):
                return Literal(np.array([float(v.value) for v in items]), value.pos)
            return value
        if type(value) is not int:
            return value

        order = needed_equations(self.graph, [value])
        if any(self.graph.equations[i].op.name == "input" for i in order) or len(order) > 10_000:
            return value
        # a shape, an axis or an index is a few numbers: anything larger is not one, and is not
        # computed here, outside --max-memory (axis=exp(broadcast_to(1.0, [1e9])))
        if sum(math.prod(self.graph.shapes[i]) for i in order) > 1 << 16:
            return value
        with np.errstate(all="ignore"):
            result = run(self.graph, [value])[value]
        eq = self.graph.equations[value]
        return Literal(np.array(result, dtype=np.float64), eq.pos, eq.op.boolean)

    def call_builtin(self, op: Op, node: ast.Call, values: list, scope: _Scope, preset: dict | None = None,
                     label: str | None = None):
        label = label or node.symbol or strip_prefixes(node.func)
        if op.expand is not None:
            return self.call_composite(op, node, values, scope, label, preset)
        if node.symbol is not None and op.symbol_reads_truth:
            self.check_truth_values(node, values, op)
        if not node.keywords and len(values) == len(op.args) and not op.required and not op.variadic and (
                op.literal is None) and not op.absent:
            # the common call, `exp(x)` or `a * b`: every argument given, every parameter default
            ids = tuple([v if type(v) is int else self.materialize(v, scope, node.pos) for v in values])
            params = dict(op.defaults, **preset) if preset else dict(op.defaults)
            if ids and op.parts is None:  # one equation
                return self.graph.add(op, ids, params, node.pos, label, scope.stack)
            return self.emit_call(op, ids, params, node.pos, label, scope)
        if op.variadic:
            return self.call_variadic(op, node, values, scope, label, preset)
        positional = values[:len(node.args)]
        keywords, keyword_values = list(node.keywords), values[len(node.args):]
        if any(kw.name == "dtype" for kw in keywords):  # `dtype=tf.float32`: the computation's own
            k = next(k for k, kw in enumerate(keywords) if kw.name == "dtype")
            self.check_dtype(keyword_values[k], keywords[k].pos)
            del keywords[k], keyword_values[k]
        slots = op.slots
        if node.method and len(positional) > len(slots) and len(slots) == 2 and slots[1] in ("shape", "axes"):
            # NumPy's methods take a shape as separate numbers: x.reshape(2, 3), x.transpose(1, 0)
            positional = [positional[0], TupleValue(positional[1:], node.pos)]
        given, where = self.bind_arguments(op, node, positional, keywords, keyword_values, label)
        for a in op.args:
            if given.get(a, NONE) is NONE and a in op.absent:
                given[a] = Literal(np.float64(op.absent[a]), where.get(a, node.pos))
            elif given.get(a) is NONE:
                raise self.error(f"{label}(): {a} is None, which is not a number", where.get(a, node.pos))
        missing = [a for a in op.args if a not in given]
        if missing:
            raise self.error(f"{label}() takes {len(op.args)} array argument{'s' * (len(op.args) != 1)} "
                             f"({', '.join(op.args)}), got {len(op.args) - len(missing)}", node.pos)
        params = dict(preset or {})
        for pname, default in op.params.items():
            if pname in params:
                if pname in given:
                    raise self.error(f"{label}(): '{pname}' is fixed by how {label}() is read here", node.pos)
                continue
            if pname in given and given[pname] is NONE and (default is None or pname == "axis"):
                params[pname] = None  # `axis=None` written out: every axis (sort: the flattened array)
            elif pname in given:
                params[pname] = self.static_param(pname, given[pname], label, node.pos)
                if pname == "axis" and params[pname] == () and "keepdims" in op.params:
                    self.check_empty_dims(node, label)
            elif default is REQUIRED:
                raise self.error(f"{label}() needs the argument '{pname}'", node.pos)
            elif default is not None:
                params[pname] = default
        if op.literal is not None and isinstance(given[op.args[0]], Literal):
            written = given[op.args[0]]
            value = op.literal(written.value)
            # `+True` stays a truth value (a mask), `-True` is the number -1
            return Literal(value, node.pos, written.boolean and bool(np.all(value == written.value)))
        ids = tuple(self.materialize(given[a], scope) for a in op.args)
        return self.emit_call(op, ids, params, node.pos, label, scope)

    def check_empty_dims(self, node: ast.Call, label: str) -> None:
        """A reduction over an empty list of axes: NumPy, JAX and TensorFlow reduce none,
        PyTorch reads `dim=()` as every dim (or fails): the same text, other numbers."""
        library = self.method_library if node.method else split_spelling(self.spelled(node.func))[0]
        if library == "torch":
            raise self.error(f"{label}() with an empty dim: PyTorch reads dim=() or dim=[] as every dim (NumPy "
                             f"as none); leave dim out to reduce every dim", node.pos)

    def bind_arguments(self, op: Op, node: ast.Call, positional: list, keywords: list, keyword_values: list,
                       label: str) -> tuple[dict, dict]:
        """The values written in a call, by the op's argument and parameter names (keywords in a
        library's spelling, `dim=`, `input=`, read as the table's), and where each keyword stood."""
        slots = op.slots
        if len(positional) > len(slots):
            raise self.error(f"{label}() takes at most {len(slots)} argument{'s' * (len(slots) != 1)} "
                             f"({', '.join(slots)}), got {len(positional)}", node.pos)
        given, where = dict(zip(slots, positional)), {}
        for kw, value in zip(keywords, keyword_values):
            slot = kw.name if kw.name in slots else KEYWORD_ALIASES.get(kw.name, kw.name)
            if slot not in slots and kw.name in FIRST_ARGUMENT_KEYWORDS and op.args:
                slot = op.args[0]
            if slot not in slots:
                raise self.error(f"{label}() has no argument '{kw.name}'; it takes {', '.join(slots)}", kw.pos)
            if slot in given:
                raise self.error(f"{label}() got argument '{slot}' twice", kw.pos)
            given[slot] = value
            where[slot] = kw.pos
        return given, where

    def call_composite(self, op: Op, node: ast.Call, values: list, scope: _Scope, label: str, preset):
        """A composite op (`F.cross_entropy`): its arguments bound as a call of any op, the
        parameters in `op.tensors` as arrays (None where left out), then its expansion."""
        slots = op.slots
        given, where = self.bind_arguments(op, node, values[:len(node.args)], node.keywords,
                                           values[len(node.args):], label)
        missing = [a for a in op.args if a not in given]
        if missing:
            raise self.error(f"{label}() needs the argument{'s' * (len(missing) > 1)} {', '.join(missing)}; "
                             f"it takes {', '.join(slots)}", node.pos)
        params = dict(preset or {})
        for pname, default in op.params.items():
            value = given.get(pname)
            if pname in op.tensors:
                params[pname] = None if value is None or value is NONE else self.materialize(value, scope)
            elif value is NONE:
                params[pname] = None
            elif value is not None:
                params[pname] = self.static_param(pname, value, label, where.get(pname, node.pos))
            elif default is REQUIRED:
                raise self.error(f"{label}() needs the argument '{pname}'", node.pos)
            else:
                params[pname] = default
        ids = tuple(ValueId(self.materialize(given[a], scope)) for a in op.args)
        params = {k: ValueId(v) if k in op.tensors and v is not None else v for k, v in params.items()}
        expansion = _Expansion(self, node.pos, label, scope)
        if any(self.graph.shapes[i] is None for i in ids + tuple(v for k, v in params.items() if k in op.tensors
                                                                  and v is not None)):
            return ids[0]  # a missing input: lowering goes on to list them all
        try:
            return op.expand(expansion, *ids, **params)
        except (TypeError, ValueError, IndexError) as exc:  # a parameter of a kind the op does not take
            raise self.error(f"{label}(): an argument is not of a kind {label}() takes ({exc})", node.pos) from None
        except ShapeError as exc:
            message = str(exc)
            raise self.error(message if message.startswith(f"{label}") else f"{label}(): {message}",
                             node.pos) from None

    def call_variadic(self, op: Op, node: ast.Call, values: list, scope: _Scope, label: str, preset):
        """`einsum('ij,jk->ik', a, b)`: the op's required parameters first, then any number of
        arrays (a tuple of them, `multi_dot((a, b, c))`, counts as its items)."""
        if op.sequence:
            return self.call_sequences(op, node, values, scope, label, preset)
        lead = [p for p, default in op.params.items() if default is REQUIRED]
        positional = values[:len(node.args)]
        params = dict(op.defaults, **(preset or {}))
        for pname, value in zip(lead, positional):
            params[pname] = self.static_param(pname, value, label, node.pos)
        for kw, value in zip(node.keywords, values[len(node.args):]):
            pname = KEYWORD_ALIASES.get(kw.name, kw.name)
            if pname not in op.params or pname in lead[:len(positional)]:
                raise self.error(f"{label}() has no argument '{kw.name}' here; it takes "
                                 f"{', '.join(lead + ['arrays...'])}", kw.pos)
            params[pname] = self.static_param(pname, value, label, kw.pos)
        missing = [p for p in lead if p not in params]
        arrays = positional[len(lead):]
        if len(arrays) == 1 and isinstance(arrays[0], TupleValue):
            arrays = arrays[0].items
        if missing or not arrays:
            raise self.error(f"{label}() takes {', '.join(lead + ['arrays...'])}", node.pos)
        ids = tuple(self.materialize(v, scope) for v in arrays)
        return self.emit_call(op, ids, params, node.pos, label, scope)

    def call_sequences(self, op: Op, node: ast.Call, values: list, scope: _Scope, label: str, preset):
        """`concatenate([a, b], 0)`, `select(conditions, choices)`: the op's leading arguments
        are sequences of arrays (a list or tuple of them, or an array: its rows), the rest its
        parameters, by position or keyword. The op receives every sequence's items in order,
        with `counts`, the length of each sequence, among its parameters where it takes them."""
        positional = values[:len(node.args)]
        keywords = list(zip(node.keywords, values[len(node.args):]))
        named = [value for kw, value in sorted((item for item in keywords if item[0].name in SEQUENCE_KEYWORDS),
                                               key=lambda item: SEQUENCE_KEYWORDS.index(item[0].name))]
        if named and len(positional) < op.sequence:  # `tf.concat(values=[a, b], axis=0)`
            positional = positional + named
            keywords = [(kw, value) for kw, value in keywords if kw.name not in SEQUENCE_KEYWORDS]
        if len(positional) < op.sequence:
            raise self.error(f"{label}() takes {op.sequence} sequence{'s' * (op.sequence > 1)} of arrays "
                             f"first, as in {label}([a, b])", node.pos)
        sequences, rest = positional[:op.sequence], positional[op.sequence:]
        names = [p for p in op.params if p != "counts"]
        if len(rest) > len(names):
            raise self.error(f"{label}() takes at most {op.sequence + len(names)} arguments", node.pos)
        params = dict(op.defaults, **(preset or {}))
        given = dict(zip(names, rest))
        for kw, value in keywords:
            pname = KEYWORD_ALIASES.get(kw.name, kw.name)
            if kw.name == "dtype":
                self.check_dtype(value, kw.pos)
                continue
            if pname not in names:
                raise self.error(f"{label}() has no argument '{kw.name}'; it takes "
                                 f"{', '.join(['arrays'] * op.sequence + names)}", kw.pos)
            if pname in given:
                raise self.error(f"{label}() got argument '{pname}' twice", kw.pos)
            given[pname] = value
        for pname, value in given.items():
            if pname in (preset or {}):
                raise self.error(f"{label}(): '{pname}' is fixed by how {label}() is read here", node.pos)
            params[pname] = None if value is NONE else self.static_param(pname, value, label, node.pos)
        missing = [p for p in names if p not in params and op.params[p] is REQUIRED]
        if missing:
            raise self.error(f"{label}() needs the argument '{missing[0]}'", node.pos)
        ids: list = []
        counts = []
        for sequence in sequences:
            items = self.sequence_items(sequence, label, node.pos, scope)
            counts.append(len(items))
            ids.extend(items)
        if "counts" in op.params:
            params["counts"] = tuple(counts)
        if not ids:
            raise self.error(f"{label}() needs at least one array", node.pos)
        return self.emit_call(op, tuple(ids), params, node.pos, label, scope)

    def sequence_items(self, value, label: str, pos: Pos, scope: _Scope) -> list:
        """The arrays of a sequence argument: a tuple's (or list's) items, an array's rows."""
        if isinstance(value, TupleValue):
            return [self.materialize(v, scope) for v in value.items]
        if isinstance(value, Literal):
            if value.value.ndim == 0:
                raise self.error(f"{label}() takes a sequence of arrays, not a number", value.pos)
            return [self.graph.add_constant(row, value.pos, scope.stack) for row in value.value]
        if isinstance(value, Text) or value is NONE:
            raise self.error(f"{label}() takes a sequence of arrays", getattr(value, "pos", pos))
        shape = self.graph.shapes[value]
        if not shape:
            raise self.error(f"{label}() takes a sequence of arrays, not a number", pos)
        return [self.emit(OPS["index"], (value,), {"index": (k,)}, pos, "[]", scope) for k in range(shape[0])]

    def static_param(self, pname: str, value, label: str, pos: Pos):
        value = self.constant_value(value)
        if isinstance(value, Text) and (pname in INTEGER_ARRAY_PARAMS or pname in ("axis", "axes", "shape")):
            # (`x.view(np.float32)` reinterprets the bytes: NumPy's view takes a dtype, PyTorch's a shape)
            raise self.error(f"{label}(): '{pname}' must be an integer or a list of integers, not "
                             f"'{value.value}'", value.pos)
        if isinstance(value, Text):
            return value.value
        if not isinstance(value, Literal):
            raise self.error(f"{label}(): '{pname}' must be a constant, written in the program", pos)
        arr = value.value
        if pname == "keepdims":
            if arr.ndim != 0:
                raise self.error(f"{label}(): keepdims must be True or False", value.pos)
            return bool(arr)
        integral = bool(np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)))
        integer_kind = pname in INTEGER_ARRAY_PARAMS or pname in ("axis", "axes", "shape")
        if integer_kind and integral and arr.size and bool(np.max(np.abs(arr)) > 2 ** 53):
            # (past 2**53 a float holds no exact integer; no array has such an axis, size or index)
            raise self.error(f"{label}(): '{pname}' holds {float(np.max(np.abs(arr))):.4g}, larger than any "
                             "array's axis, size or index", value.pos)
        if pname in INTEGER_ARRAY_PARAMS:  # indices, pad widths, counts: integers, nested as written
            if not integral:
                raise self.error(f"{label}(): '{pname}' must be an integer or integers", value.pos)
            return nested_ints(arr)
        if pname in ("axis", "axes", "shape"):  # positions and sizes: integers
            if pname == "axes" and arr.ndim == 2 and integral:  # tensordot's pair of lists
                return tuple(tuple(int(v) for v in row) for row in arr)
            if arr.ndim > 1 or not integral:
                raise self.error(f"{label}(): '{pname}' must be an integer or a list of integers", value.pos)
            if pname == "axis" and arr.ndim == 0:
                return int(arr)
            return tuple(int(v) for v in np.atleast_1d(arr))
        if pname == "padding" and arr.ndim == 2 and integral:  # a convolution's (before, after) pairs
            return tuple(tuple(int(v) for v in row) for row in arr)
        # any other parameter is a number (alpha=0.2, ord=inf, ddof=1) or a list of numbers
        # (q=[0.25, 0.75]): an int where it is one, so that it prints and compares as written
        if arr.ndim > 1 or bool(np.any(np.isnan(arr))):
            raise self.error(f"{label}(): '{pname}' must be a number or a list of numbers", value.pos)
        # an int where it is one (beyond 2**53 a float holds no exact integer: it stays a float, and
        # a parameter that must be an integer says so)
        numbers = tuple(int(v) if np.isfinite(v) and v == round(v) and abs(v) <= 2 ** 53 else float(v)
                        for v in np.atleast_1d(arr))
        return numbers[0] if arr.ndim == 0 else numbers

    def call_user(self, fn: ast.FuncDef, node: ast.Call, values: list, scope: _Scope, work: list,
                  defined_in: _Scope | None):
        if fn.name in scope.active:
            chain = " -> ".join(scope.active[scope.active.index(fn.name):] + (fn.name,))
            raise self.error(f"recursion is not supported: '{fn.name}' calls itself ({chain}); "
                             "functions are expanded where they are called", node.pos)
        params = [p for p, _ in fn.params]
        args = dict(zip(params, values[:len(node.args)]))
        if len(node.args) > len(params):
            raise self.error(f"{fn.name}() takes {len(params)} argument{'s' * (len(params) != 1)} "
                             f"({', '.join(params)}), got {len(node.args)}", node.pos)
        for kw, value in zip(node.keywords, values[len(node.args):]):
            if kw.name not in params:
                raise self.error(f"{fn.name}() has no parameter '{kw.name}'", kw.pos)
            if kw.name in args:
                raise self.error(f"{fn.name}() got argument '{kw.name}' twice", kw.pos)
            args[kw.name] = value
        missing = [p for p in params if p not in args and p not in fn.defaults]
        if missing:
            raise self.error(f"{fn.name}() takes {len(params)} argument{'s' * (len(params) != 1)} "
                             f"({', '.join(params)}); missing {', '.join(missing)}", node.pos)
        inner = _Scope(args, scope.stack + (node.pos,), scope.active + (fn.name,), defined_in)
        *body, ret = fn.body
        work.append((_EVAL, ret.value, inner))
        for stmt in reversed(body):
            if isinstance(stmt, ast.Assign):
                work.append((_BIND, stmt.name, inner))
            elif isinstance(stmt, ast.Unpack):
                work.append((_UNPACK, stmt, inner))
            elif isinstance(stmt, ast.FuncDef):
                work.append((_DEFINE, stmt, inner))
                continue
            elif isinstance(stmt, ast.Import) or (isinstance(stmt, ast.ExprStmt) and isinstance(stmt.value, ast.Str)):
                continue
            else:
                work.append((_DISCARD, None, inner))
            work.append((_EVAL, stmt.value, inner))
        # parameters left out take their defaults, computed where the function was defined
        for p in reversed([p for p in params if p not in args]):
            work.append((_BIND, p, inner))
            work.append((_EVAL, fn.defaults[p], defined_in or _Scope(None, scope.stack, scope.active)))
        return None

    def emit_call(self, op: Op, ids: tuple, params: dict, pos: Pos, label: str, scope: _Scope):
        """A call's value: one equation, or for a function that returns a tuple (`slogdet`,
        `split`) a tuple of the equations its record names as its parts."""
        if not ids and not op.args and not op.variadic and op.forward is not None:
            return self.construct(op, params, pos, label, scope)
        if op.parts is None:
            return self.emit(op, ids, params, pos, label, scope)
        try:
            parts = op.parts(*(self.graph.shapes[i] for i in ids), **params)
        except ShapeError as exc:
            raise self.error(f"{label}(): {exc}", pos) from None
        return TupleValue([self.emit(OPS[name], ids, part_params, pos, label, scope)
                           for name, part_params in parts], pos)

    def construct(self, op: Op, params: dict, pos: Pos, label: str, scope: _Scope) -> int:
        """An op that takes no array (`zeros((2, 3))`, `eye(3)`, `arange(5)`): a constant of
        the program, computed here from the parameters written in it."""
        try:
            shape = tuple(op.shape(**params))
        except ShapeError as exc:
            message = str(exc)
            raise self.error(message if message.startswith(f"{label}: ") else f"{label}: {message}", pos) from None
        if math.prod(shape) > MAX_CONSTANT_ELEMENTS:
            raise self.error(f"{label}: a constant of shape {fmt_shape(shape)} has more than "
                             f"{MAX_CONSTANT_ELEMENTS:,} elements", pos)
        return self.graph.add_constant(op.forward(np, **params), pos, scope.stack)

    def emit(self, op: Op, ids: tuple, params: dict, pos: Pos, label: str, scope: _Scope) -> int:
        return self.graph.add(op, ids, params, pos, label, scope.stack)


class _Expansion:
    """What a composite op's expansion builds with: `E(name, *args, **params)` emits the op
    `name` at the call's place (numbers and arrays become constants) and returns its id."""

    def __init__(self, lowering: _Lowering, pos: Pos, label: str, scope: _Scope):
        self.lowering, self.pos, self.label, self.scope = lowering, pos, label, scope

    def __call__(self, name: str, *args, **params) -> int:
        graph = self.lowering.graph
        ids = tuple(a if isinstance(a, ValueId) else ValueId(graph.add_constant(
            np.asarray(a, dtype=np.float64), self.pos, self.scope.stack)) for a in args)
        op = OPS[name]
        params = dict(op.defaults, **params)
        if op.expand is not None:
            return ValueId(op.expand(self, *ids, **params))
        return ValueId(self.lowering.emit_call(op, ids, params, self.pos, self.label, self.scope))

    def shape(self, id_: int) -> tuple:
        return self.lowering.graph.shapes[id_]

    def known(self, id_: int):
        """The value of a constant or an input (as given for this run), else None."""
        eq = self.lowering.graph.equations[id_]
        while eq.op.repeats is not None or eq.op.memory == "same":  # its input's values, repeated or as they are
            eq = self.lowering.graph.equations[eq.inputs[0]]
        if eq.op.name in ("const", "input"):
            return eq.params["value"]
        return None


_ALL = (None, None, None)  # the slice `:` as an index holds it


def _mixes_integers_and_lists(index) -> bool:
    return ops_index.is_advanced(index) and any(type(item) is int for item in index)


def _torch_index_steps(index) -> tuple:
    """PyTorch's reading of a subscript that mixes integers with lists (or masks): the integers
    select first, with the slices, None and ... in place and the lists' axes kept whole; then
    the lists index what is left, by NumPy's rules there. (selects, the rest), or (None, None)
    where the subscript has no such mix and reads as in NumPy."""
    if not _mixes_integers_and_lists(index):
        return None, None
    selects, rest = [], []
    for item in index:
        if type(item) is int:
            selects.append(item)  # (its axis is gone from what the rest indexes)
        elif isinstance(item, ops_index.IndexArray):
            axes = item.array.ndim if item.array.dtype == np.bool_ else 1  # a mask spans its own axes
            selects.extend([_ALL] * axes)
            rest.append(item)
        else:  # a slice, None (its new axis then taken whole), or ...
            selects.append(item)
            rest.append(item if item is Ellipsis else _ALL)
    return tuple(selects), tuple(rest)


def _integers_part_a_separated_advanced_index(index) -> bool:
    """Whether integers and lists (or masks) index together with a slice, None or ... between
    them: where NumPy moves the indexed axes to the front and PyTorch does not."""
    if not _mixes_integers_and_lists(index):
        return False
    places = [k for k, item in enumerate(index) if type(item) is int or isinstance(item, ops_index.IndexArray)]
    return places[-1] - places[0] + 1 != len(places)


def number_value(node: ast.Number):
    """The value of a number written in the program (gradcli.cli.lines replaces this while it
    learns which numbers lowering only turns into constants)."""
    return np.float64(node.value)


def _bound_names(stmt) -> list[str]:
    if isinstance(stmt, ast.Assign):
        return [stmt.name]
    if isinstance(stmt, ast.Unpack):
        return [name for name, _ in stmt.names]
    return []


def lower(module: ast.Module, source: Source, feeds: dict | None = None, call: ast.Node | None = None,
          symbols: bool = False) -> Graph:
    """The program as a graph, with `feeds` (name -> array) as its input values; `call` (an
    assignment or expression statement) is run after the program, e.g. `f(a, b)`. With
    `symbols`, an input that has no value is a scalar without one (nothing is evaluated)."""
    return _Lowering(module, source, dict(feeds or {}), call, symbols).run()
