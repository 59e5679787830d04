"""AST -> a straight-line program of equations.

A `Graph` is a list of equations in SSA form: equation i computes value i from earlier values,
with an op of the table, static parameters, and the source position it stands for. Shapes are
computed as each equation is added, so impossible shapes are rejected before anything runs.
Gradients (gradcli.autodiff) are appended to the same graph as more equations.

Lowering walks the AST with an explicit work stack: no recursion over the nesting depth, and
user functions are expanded where they are called, with recursion detected and rejected.
"""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field

import numpy as np

from . import ops as op_table
from . import syntax as ast
from .errors import GradcliError, Pos, ShapeError, Source
from .ops import OPS, Op, Sym, fmt_shape
from .ops import broadcast_shapes as ops_broadcast

# A program that expands (through nested function calls) past this many equations is
# refused rather than left to exhaust memory.
MAX_EQUATIONS = 5_000_000


class Equation:
    """value[i] = op(values[inputs], **params), written at `pos` (inside the user-function
    calls `stack`, outermost first); `label` is the op as the user spelled it (`*`, `exp`,
    `reduce_max`); `backward` is, for an equation of a gradient, the id of the forward
    equation whose rule produced it (None for the program's own equations)."""

    __slots__ = ("op", "inputs", "params", "pos", "label", "stack", "backward")

    def __init__(self, op: Op, inputs: tuple, params: dict, pos: Pos | None, label: str,
                 stack: tuple = (), backward: int | None = None):
        self.op = op
        self.inputs = inputs
        self.params = params
        self.pos = pos
        self.label = label
        self.stack = stack
        self.backward = backward

    def __repr__(self) -> str:
        return f"Equation({self.op.name}, {self.inputs}, {self.params}, {self.pos})"


@dataclass
class Graph:
    source: Source
    equations: list[Equation] = field(default_factory=list)
    shapes: list = field(default_factory=list)          # tuple, or None where unknown
    names: dict[str, int] = field(default_factory=dict)  # top-level name -> its last value
    inputs: dict[str, int] = field(default_factory=dict)  # input name -> its equation
    value_names: dict[int, str] = field(default_factory=dict)
    result: tuple[str, int] | None = None                # the last statement's (name, value)
    warnings: list[tuple[str, Pos | None]] = field(default_factory=list)
    # the forward equation whose gradient is being built (set by autodiff)
    context: int | None = None
    differentiated: set = field(default_factory=set)
    _memo: dict = field(default_factory=dict)

    # ----------------------------------------------------------------- adding equations
    def add(self, op: Op, inputs: tuple, params: dict, pos: Pos | None, label: str,
            stack: tuple = (), backward: int | None = None) -> int:
        in_shapes = [self.shapes[i] for i in inputs]
        if None in in_shapes:
            shape = None
        else:
            try:
                shape = tuple(op.shape(*in_shapes, **params))
            except ShapeError as exc:
                raise GradcliError(f"{label}: {exc}", pos, self.source) from None
        if len(self.equations) >= MAX_EQUATIONS:
            raise GradcliError(f"the program expands to more than {MAX_EQUATIONS:,} operations "
                               "(user functions are expanded where they are called)", pos, self.source)
        self.equations.append(Equation(op, inputs, params, pos, label, stack, backward))
        self.shapes.append(shape)
        return len(self.equations) - 1

    def add_input(self, name: str, value, pos: Pos | None = None, label: str | None = None) -> int:
        """An input equation: a named source whose value can be given anew at each run."""
        return self.add(OPS["input"], (), {"name": name, "value": np.asarray(value)}, pos, label or name)

    def add_constant(self, value, pos: Pos | None = None, stack: tuple = (), backward: int | None = None) -> int:
        value = np.asarray(value, dtype=np.float64)
        return self.add(OPS["const"], (), {"value": value}, pos, "constant", stack, backward)

    # ----------------------------------------------------------------- gradient building
    def constant(self, value) -> Sym:
        """A scalar constant for a gradient rule, shared by every rule that uses it."""
        key = ("const", float(value))
        if key not in self._memo:
            ctx = self.equations[self.context] if self.context is not None else None
            self._memo[key] = self.add_constant(value, ctx.pos if ctx else None, ctx.stack if ctx else (),
                                                self.context)
        return Sym(self, self._memo[key])

    def scalar_constant(self, id_: int):
        """The number a value is everywhere, if it is a constant (seen through broadcasts)."""
        eq = self.equations[id_]
        while eq.op.name in ("broadcast_to", "reshape"):
            eq = self.equations[eq.inputs[0]]
        if eq.op.name == "const" and eq.params["value"].ndim == 0:
            return float(eq.params["value"])
        return None

    def derived(self, op: Op, inputs: tuple, params: dict) -> Sym:
        """Emit an equation of a gradient, attributed to the equation being differentiated;
        identical equations are shared and `x * 1`, `x + 0`, `x / 1` are folded away."""
        if op.name == "sum_to" and params.get("shape") == ():
            # a sum down to a scalar is the plain sum, which the program may already compute
            op, params = OPS["sum"], {"keepdims": False}
        inputs = self._unbroadcast(op, inputs)
        simpler = self._simplify(op, inputs)
        if simpler is not None:
            return Sym(self, simpler)
        self._index_equations()
        key = (op.name, inputs, _hashable(params))
        if key in self._memo:
            return Sym(self, self._memo[key])
        ctx = self.equations[self.context] if self.context is not None else None
        id_ = self.add(op, inputs, params, ctx.pos if ctx else None, ctx.label if ctx else op.name,
                       ctx.stack if ctx else (), self.context)
        self._memo[key] = id_
        self._memo["indexed"] = len(self.equations)
        return Sym(self, id_)

    def _index_equations(self) -> None:
        """Let gradient equations reuse identical equations of the program itself
        (`w * y` computed forward is not computed again backward)."""
        start = self._memo.get("indexed", 0)
        for i in range(start, len(self.equations)):
            eq = self.equations[i]
            if eq.inputs:
                self._memo.setdefault((eq.op.name, eq.inputs, _hashable(eq.params)), i)
        self._memo["indexed"] = len(self.equations)

    def _unbroadcast(self, op: Op, inputs: tuple) -> tuple:
        """An elementwise op broadcasts by itself: drop an explicit broadcast_to (or a
        reshape of a scalar) of an input where the result's shape stays the same."""
        if not op.elementwise or len(inputs) < 2 or not any(
                self.equations[j].op.name in ("broadcast_to", "reshape") for j in inputs):
            return inputs
        out = ops_broadcast(*(self.shapes[j] for j in inputs))
        new = list(inputs)
        for k, j in enumerate(inputs):
            eq = self.equations[j]
            while eq.op.name in ("broadcast_to", "reshape") and (
                    eq.op.name == "broadcast_to" or math.prod(self.shapes[eq.inputs[0]]) == 1):
                inner = eq.inputs[0]
                trial = new[:k] + [inner] + new[k + 1:]
                if ops_broadcast(*(self.shapes[t] for t in trial)) != out:
                    break
                new[k] = inner
                eq = self.equations[inner]
        return tuple(new)

    def _simplify(self, op: Op, inputs: tuple) -> int | None:
        if len(inputs) != 2 or op.name not in ("add", "subtract", "multiply", "divide"):
            return None
        a, b = inputs
        ca, cb = self.scalar_constant(a), self.scalar_constant(b)
        out = ops_broadcast(self.shapes[a], self.shapes[b])
        keep_b = self.shapes[b] == out
        keep_a = self.shapes[a] == out
        if op.name == "multiply":
            if cb == 1.0 and keep_a:
                return a
            if ca == 1.0 and keep_b:
                return b
        elif op.name == "add":
            if cb == 0.0 and keep_a:
                return a
            if ca == 0.0 and keep_b:
                return b
        elif op.name in ("subtract", "divide"):
            if cb == (0.0 if op.name == "subtract" else 1.0) and keep_a:
                return a
        return None

    def value_id(self, name: str, what: str = "name") -> int:
        if name not in self.names:
            choices = ", ".join(sorted(self.names)) or "none"
            raise GradcliError(f"unknown {what} '{name}': the program's names are {choices}")
        return self.names[name]


def _hashable(params: dict):
    if not params:
        return ()
    return tuple(sorted((k, v.tobytes() if isinstance(v, np.ndarray) else v) for k, v in params.items()))


# --------------------------------------------------------------------------- lowering

@dataclass(slots=True)
class Literal:
    """A constant not yet placed in the graph: `[1, 2]`, `-3`, `pi`. At top level it makes an
    input with a default; as a static argument (`axis=0`) it is read directly."""

    value: np.ndarray
    pos: Pos


@dataclass(slots=True)
class _Scope:
    locals: dict | None          # None at top level
    stack: tuple = ()             # call sites of the user functions being expanded
    active: tuple = ()            # names of those functions, to detect recursion


_EVAL, _APPLY, _BIND, _DISCARD = range(4)


class _Lowering:
    def __init__(self, module: ast.Module, source: Source, feeds: dict):
        self.graph = Graph(source)
        self.source = source
        self.feeds = feeds
        self.globals: dict = {}  # name -> value id | ast.FuncDef
        self.missing: dict[str, Pos] = {}
        self.assigned_at: dict[str, Pos] = {}
        for stmt in module.statements:
            name = getattr(stmt, "name", None)
            if name is not None and name not in self.assigned_at:
                self.assigned_at[name] = stmt.pos
        self.module = module

    def error(self, message: str, pos: Pos | None) -> GradcliError:
        return GradcliError(message, pos, self.source)

    # ----------------------------------------------------------------- statements
    def run(self) -> Graph:
        graph = self.graph
        top = _Scope(None)
        for stmt in self.module.statements:
            if isinstance(stmt, ast.FuncDef):
                self.globals[stmt.name] = stmt
                continue
            value = self.lower(stmt.value, top)
            if isinstance(stmt, ast.Assign):
                if isinstance(value, Literal) and stmt.name not in self.globals:
                    value = self.input(stmt.name, stmt.pos, default=value)
                else:
                    value = self.materialize(value, top)
                self.globals[stmt.name] = value
                graph.names[stmt.name] = value
                graph.value_names.setdefault(value, stmt.name)
                graph.result = (stmt.name, value)
            else:
                value = self.materialize(value, top)
                graph.names["_"] = value
                graph.result = ("_", value)
        if self.missing:
            names = list(self.missing)
            first = self.missing[names[0]]
            listed = ", ".join(f"'{n}'" for n in names)
            hint = " ".join(f"--set {n}=VALUE" for n in names)
            raise self.error(f"missing input{'s' if len(names) > 1 else ''} {listed}: "
                             f"give {'them' if len(names) > 1 else 'it'} with {hint}", first)
        if graph.result is None:
            raise self.error("the program defines functions but computes nothing", None)
        for name in self.feeds:
            if name not in graph.inputs:
                where = self.assigned_at.get(name)
                why = (f"'{name}' is computed by the program (line {where.line}), so it is not an input"
                       if where else f"the program does not use '{name}'")
                graph.warnings.append((f"--set {name}: {why}; the value is ignored", None))
        return graph

    def input(self, name: str, pos: Pos, default: Literal | None = None) -> int:
        graph = self.graph
        if name in graph.inputs:
            return graph.inputs[name]
        if name in self.feeds:
            value = self.feeds[name]
        elif default is not None:
            value = default.value
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

    def materialize(self, value, scope: _Scope) -> int:
        if isinstance(value, Literal):
            return self.graph.add_constant(value.value, value.pos, scope.stack)
        return value

    # ----------------------------------------------------------------- expressions
    def lower(self, root: ast.Node, scope: _Scope):
        """The value of an expression: a graph id or a Literal. Iterative post-order walk;
        a user function call pushes its body onto the same work stack."""
        work = [(_EVAL, root, scope)]
        values: list = []
        while work:
            kind, node, scope = work.pop()
            if kind == _EVAL:
                if isinstance(node, ast.Number):
                    values.append(Literal(np.float64(node.value), node.pos))
                elif isinstance(node, ast.Name):
                    values.append(self.resolve(node, scope))
                else:
                    kids = ast.children(node)
                    work.append((_APPLY, node, scope))
                    work.extend((_EVAL, kid, scope) for kid in reversed(kids))
            elif kind == _APPLY:
                n = (len(node.args) + len(node.keywords) if type(node) is ast.Call
                     else len(ast.children(node)))
                args = values[len(values) - n:]
                del values[len(values) - n:]
                if isinstance(node, ast.Call):
                    result = self.call(node, args, scope, work)
                    if result is not None:
                        values.append(result)
                elif isinstance(node, ast.Array):
                    values.append(self.array(node, args, scope))
                else:
                    values.append(self.index(node, args, scope))
            elif kind == _BIND:
                scope.locals[node] = values.pop()
            else:
                values.pop()
        return values.pop()

    def resolve(self, node: ast.Name, scope: _Scope):
        name = node.id
        if scope.locals is not None and name in scope.locals:
            found = scope.locals[name]
        elif name in self.globals:
            found = self.globals[name]
        elif name in op_table.CONSTANTS:
            return Literal(np.float64(op_table.CONSTANTS[name]), node.pos)
        elif "." not in name and name in self.assigned_at:
            where = self.assigned_at[name]
            raise self.error(f"'{name}' is used before it is assigned (at line {where.line})", node.pos)
        elif op_table.strip_prefixes(name) in op_table.CALLABLE:
            raise self.error(f"'{name}' is a function: call it, as in {name}(x)", node.pos)
        elif "." in name:
            base, _, attribute = name.rpartition(".")
            hints = {"T": f"transpose({base})", "shape": "shapes are not values in gradcli",
                     "sum": f"sum({base})", "mean": f"mean({base})", "max": f"max({base})"}
            hint = f"; write {hints[attribute]}" if attribute in hints and attribute != "shape" else (
                f"; {hints['shape']}" if attribute == "shape" else "")
            raise self.error(f"unknown name '{name}'{hint}", node.pos)
        else:
            return self.input(name, node.pos)
        if isinstance(found, ast.FuncDef):
            raise self.error(f"'{name}' is a function: call it, as in {name}(x)", node.pos)
        return found

    def array(self, node: ast.Array, items: list, scope: _Scope):
        if all(isinstance(v, Literal) for v in items):
            shapes = {v.value.shape for v in items}
            if len(shapes) > 1:
                raise self.error("ragged array literal: its items have shapes "
                                 + ", ".join(fmt_shape(s) for s in sorted(shapes)), node.pos)
            if items and items[0].value.ndim == 0:
                value = np.array([float(v.value) for v in items])
            else:
                value = np.array([v.value for v in items]).reshape((len(items),) + (shapes.pop() if items else ()))
            return Literal(value, node.pos)
        ids = tuple(self.materialize(v, scope) for v in items)
        return self.emit(OPS["stack"], ids, {}, node.pos, "[...]", scope)

    def index(self, node: ast.Index, values: list, scope: _Scope):
        target, rest = values[0], iter(values[1:])
        index = []
        for sub in node.subscripts:
            if isinstance(sub, ast.Slice):
                parts = [self.static_int(next(rest), "a slice bound") if p is not None else None
                         for p in (sub.start, sub.stop, sub.step)]
                if parts[2] == 0:
                    raise self.error("slice step cannot be zero", sub.pos)
                index.append(tuple(parts))
            elif sub is ast.NEWAXIS:
                index.append(None)
            elif sub is ast.ELLIPSIS:
                index.append(Ellipsis)
            else:
                index.append(self.static_int(next(rest), "an index"))
        return self.emit(OPS["index"], (self.materialize(target, scope),), {"index": tuple(index)},
                         node.pos, "[]", scope)

    def static_int(self, value, what: str) -> int:
        if not isinstance(value, Literal) or value.value.ndim != 0:
            pos = value.pos if isinstance(value, Literal) else None
            raise self.error(f"{what} must be a constant integer", pos)
        number = float(value.value)
        if not number.is_integer():
            raise self.error(f"{what} must be an integer, not {number:g}", value.pos)
        return int(number)

    # ----------------------------------------------------------------- calls
    def call(self, node: ast.Call, values: list, scope: _Scope, work: list):
        name = node.func
        bound = None
        if scope.locals is not None and name in scope.locals:
            bound = scope.locals[name]
        elif name in self.globals:
            bound = self.globals[name]
        if isinstance(bound, ast.FuncDef):
            return self.call_user(bound, node, values, scope, work)
        if bound is not None or name in op_table.CONSTANTS:
            where = self.assigned_at.get(name)
            extra = f" (assigned at line {where.line})" if where and scope.locals is None else ""
            raise self.error(f"'{name}' is a value{extra}, not a function", node.pos)
        library, bare = op_table.split_spelling(name)
        op = op_table.CALLABLE.get(bare)
        if op is None:
            known = list(op_table.CALLABLE) + [n for n, v in self.globals.items() if isinstance(v, ast.FuncDef)]
            close = difflib.get_close_matches(bare, known, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise self.error(f"unknown function '{name}'{hint}", node.pos)
        preset: dict = {}
        if op.reading is not None and node.symbol is None:
            spelling = op_table.Spelling(library, bare, len(node.args), tuple(k.name for k in node.keywords),
                                         bool(node.args) and isinstance(node.args[0], ast.Array))
            try:
                chosen = op.reading(spelling)
            except op_table.ReadingError as exc:
                raise self.error(str(exc), node.pos) from None
            if chosen is not None:
                op, preset = OPS[chosen[0]], chosen[1]
        return self.call_builtin(op, node, values, scope, preset)

    def call_builtin(self, op: Op, node: ast.Call, values: list, scope: _Scope, preset: dict | None = None):
        label = node.symbol or op_table.strip_prefixes(node.func)
        if not node.keywords and len(values) == len(op.args) and not op.required and (
                op.name not in ("negative", "positive", "identity")):
            # the common call, `exp(x)` or `a * b`: every argument given, every parameter default
            ids = tuple(v if type(v) is int else self.materialize(v, scope) for v in values)
            return self.emit(op, ids, dict(op.defaults, **(preset or {})), node.pos, label, scope)
        positional = values[:len(node.args)]
        keyword_values = values[len(node.args):]
        slots = op.slots
        given: dict = {}
        if len(positional) > len(slots):
            raise self.error(f"{label}() takes at most {len(slots)} arguments ({', '.join(slots)}), "
                             f"got {len(positional)}", node.pos)
        for slot, value in zip(slots, positional):
            given[slot] = value
        for kw, value in zip(node.keywords, keyword_values):
            slot = op_table.KEYWORD_ALIASES.get(kw.name, kw.name)
            if slot not in slots and kw.name in op_table.FIRST_ARGUMENT_KEYWORDS and op.args:
                slot = op.args[0]
            if slot not in slots:
                raise self.error(f"{label}() has no argument '{kw.name}'; it takes {', '.join(slots)}", kw.pos)
            if slot in given:
                raise self.error(f"{label}() got argument '{slot}' twice", kw.pos)
            given[slot] = value
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
            if pname in given:
                params[pname] = self.static_param(pname, given[pname], label, node.pos)
            elif default is op_table.REQUIRED:
                raise self.error(f"{label}() needs the argument '{pname}'", node.pos)
            elif default is not None:
                params[pname] = default
        if op.name in ("negative", "positive", "identity") and isinstance(given["x"], Literal):
            value = given["x"].value
            return Literal(-value if op.name == "negative" else value, node.pos)
        ids = tuple(self.materialize(given[a], scope) for a in op.args)
        return self.emit(op, ids, params, node.pos, label, scope)

    def static_param(self, pname: str, value, label: str, pos: Pos):
        if not isinstance(value, Literal):
            raise self.error(f"{label}(): '{pname}' must be a constant, written in the program", pos)
        arr = value.value
        if pname == "keepdims":
            if arr.ndim != 0:
                raise self.error(f"{label}(): keepdims must be True or False", value.pos)
            return bool(arr)
        integral = bool(np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)))
        if pname in ("axis", "axes", "shape"):  # positions and sizes: integers
            if arr.ndim > 1 or not integral:
                raise self.error(f"{label}(): '{pname}' must be an integer or a list of integers", value.pos)
            if pname == "axis" and arr.ndim == 0:
                return int(arr)
            return tuple(int(v) for v in np.atleast_1d(arr))
        # any other parameter is a number (alpha=0.2, ord=inf, ddof=1) or a list of numbers
        # (q=[0.25, 0.75]): an int where it is one, so that it prints and compares as written
        if arr.ndim > 1 or bool(np.any(np.isnan(arr))):
            raise self.error(f"{label}(): '{pname}' must be a number or a list of numbers", value.pos)
        numbers = tuple(int(v) if np.isfinite(v) and v == round(v) else float(v) for v in np.atleast_1d(arr))
        return numbers[0] if arr.ndim == 0 else numbers

    def call_user(self, fn: ast.FuncDef, node: ast.Call, values: list, scope: _Scope, work: list):
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
        if len(args) != len(params):
            missing = [p for p in params if p not in args]
            raise self.error(f"{fn.name}() takes {len(params)} argument{'s' * (len(params) != 1)} "
                             f"({', '.join(params)}); missing {', '.join(missing)}", node.pos)
        inner = _Scope(args, scope.stack + (node.pos,), scope.active + (fn.name,))
        *body, ret = fn.body
        work.append((_EVAL, ret.value, inner))
        for stmt in reversed(body):
            if isinstance(stmt, ast.Assign):
                work.append((_BIND, stmt.name, inner))
            else:
                work.append((_DISCARD, None, inner))
            work.append((_EVAL, stmt.value, inner))
        return None

    def emit(self, op: Op, ids: tuple, params: dict, pos: Pos, label: str, scope: _Scope) -> int:
        return self.graph.add(op, ids, params, pos, label, scope.stack)


def lower(module: ast.Module, source: Source, feeds: dict | None = None) -> Graph:
    """The program as a graph, with `feeds` (name -> array) as its input values."""
    return _Lowering(module, source, dict(feeds or {})).run()
