"""The interpreter of the language's Python subset: statements, scopes, closures, user functions
expanded where they are called, inputs, and the explicit work stack that walks an expression
(no recursion over the nesting depth; recursion of user functions is detected and refused)."""
from __future__ import annotations

import numpy as np

from gradcli.errors import GradcliError, OptionError, Pos, Source
from gradcli.language import syntax as ast
from gradcli.language import dialects
from gradcli.language.dialects.spelling import Distribution
from gradcli.language.dialects import (
    CONSTANTS, FLOAT_DTYPES, OTHER_DTYPES, SEQUENCE_KEYWORDS, meaning, numpy as numpy_dialect, split_spelling)
from gradcli.language.lower.values import (
    NONE, AtIndexed, AtRef, Closure, IndexTrick, Literal, NumberPolicy, Scope, Text, TupleValue, float64)
from gradcli.language.lower.optimizers import OPTIMIZER_VALUES
from gradcli.language.lower.random_draws import RANDOM_VALUES
from gradcli.language.lower.torch_autograd import GradMode
from gradcli.language.lower.transforms import (
    _FINISH, FUNCTION_VALUES, GRADIENT_CALLS, DictValue, Formatted, FunctionRef, Tape, TapeRecording)
from gradcli.ops import OPS
from gradcli.ops.scalar import MODE
from gradcli.ir import Equation, Graph, ShapeOnly

_EVAL, _APPLY, _BIND, _DISCARD, _UNPACK, _DEFINE, _CHOOSE = range(7)
_STATEMENT, _SET, _FLOW = 8, 9, 10  # (7 is statements._FINISH)


_PYTHON_TYPES = ("float", "int", "bool", "complex")

# values a statement computes for its effect (`tape.watch(x)`), and values that are no array
_SHOWN_NOTHING = FUNCTION_VALUES + (Tape, TapeRecording, Text, Formatted, GradMode) + OPTIMIZER_VALUES
_NOT_ARRAYS = FUNCTION_VALUES + (Tape, TapeRecording, DictValue, Distribution) + OPTIMIZER_VALUES + RANDOM_VALUES


class Interpreter:
    """Part of the lowering (gradcli.language.lower): the program's statements and expressions."""

    def __init__(self, module: ast.Module, source: Source, feeds: dict, call: ast.Node | None, symbols: bool,
                 max_steps: int, steps_per_character: int, numbers: NumberPolicy | None = None):
        self.graph = Graph(source)
        # how numbers written in the program become values (and who is told of them)
        self.number_value = number_value if numbers is None else numbers.number_value
        self.graph.numbers = numbers
        # the expansion's work is bounded, not only the operations it adds: a call tree that
        # adds none (`pick(f(a), f(a))` forty deep) must end too
        self.max_steps = max_steps
        self.steps_left = max_steps + steps_per_character * len(source.text)
        self.symbols = symbols  # an input with no value is a scalar symbol (derive)
        self.source = source
        self.feeds = feeds
        self.globals: dict = {}  # name -> value id | ast.FuncDef
        self.aliases: dict[str, str] = {}  # `import numpy as onp`: onp -> numpy
        self.missing: dict[str, Pos] = {}
        self.assigned_at: dict[str, Pos] = {}
        for stmt in module.statements:
            if type(stmt) is ast.Assign:  # (the common statement: no call of _bound_names)
                self.assigned_at.setdefault(stmt.name, stmt.pos)
                continue
            for name in _bound_names(stmt):
                self.assigned_at.setdefault(name, stmt.pos)
        self.module = module
        self.call_text = call
        # whose methods and subscripts the program's are; in a program spelling PyTorch beside
        # another library, a value's: the library's whose function made it (calls.mark_made_by)
        self.method_library, self.torch_beside_others = dialects.spelled_libraries(module, source.text)
        self.made_by: dict[int, str] = {}  # value id -> that library
        self.list_ids: set[int] = set()  # ids of pasted code's lists (`a = [x, 1.0]`): fold.list_arithmetic
        self.receiver_methods = self.method_library  # whose methods the method call being read has
        # how a call spelled so (name, operator symbol, method or not, arguments and keywords
        # given, a list first) reads, once found: (op, preset); an import renames, and forgets them
        self.readings: dict[tuple, tuple] = {}
        self.sequence_ops: dict[str, bool] = {}  # a function's name -> whether takes_sequences
        self.active_tapes: list = []  # the tf.GradientTapes recording now
        self.variables: set = set()  # ids made by tf.Variable (a tape watches them)
        self.shown: list = []  # (source text, value id or None, whether printed): print() and bare expressions
        self.deleted: dict[str, Pos] = {}  # a top-level name -> where `del` unbound it

    def error(self, message: str, pos: Pos | None) -> GradcliError:
        return GradcliError(message, pos, self.source)

    def run(self) -> Graph:
        graph = self.graph
        top = Scope(None)
        number_value = self.number_value
        statements = list(self.module.statements)
        if self.call_text is not None:
            call = self.call_text
            defined = {stmt.name for stmt in statements if isinstance(stmt, ast.FuncDef)}
            if isinstance(call, ast.ExprStmt) and isinstance(call.value, ast.Call) and call.value.func in defined:
                call = ast.Assign(call.value.func, call.value, call.pos)  # named after the function
            statements.append(call)
        else:
            statements.extend(self.implicit_calls(statements))  # a pasted function with no call line
        pending = list(reversed(statements))
        globals_, inputs, feeds, Assign, Number = self.globals, graph.inputs, self.feeds, ast.Assign, ast.Number
        while True:  # (not `while pending`: CPython 3.11 specializes a loop that jumps back unconditionally)
            if not pending:
                break
            stmt = pending.pop()
            if type(stmt) is Assign and type(stmt.value) is Number and stmt.name not in globals_ and \
                    stmt.name not in inputs and stmt.name not in feeds and not self.deleted and self._torch_state is None:
                # `x0 = 0.5`, often most of a generated program's lines: a new input of that default,
                # as bind_global and input make it (its Literal, made by no library, is not kept)
                self.steps_left -= 1
                name, node = stmt.name, stmt.value
                value = graph.add_input(name, number_value(node), stmt.pos)
                inputs[name] = globals_[name] = graph.names[name] = value
                graph.value_names.setdefault(value, name)
                graph.result = (name, value)
                continue
            if (type(stmt) is not ast.Assign or type(stmt.value) is ast.Call) and \
                    self.expand_statement(stmt, pending, top):  # (a `name = value` line is never compound)
                continue
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
                if self._torch_state is not None and self.torch_leaves:  # `w -= ...` of a PyTorch leaf
                    value = self.in_place_update(stmt, value, top)
                self.bind_global(stmt.name, value, stmt.pos, top)
            elif value is NONE or self.shown_nothing(node, value, pending) or \
                    self.show_tree(node, value, top):  # a dict: one output per item (pytrees.py)
                continue  # `tape.watch(x)`: a statement for its effect
            else:
                self.show_expression(node, value, top)
        self.settle_outputs(top)
        if self.missing:
            raise self.missing_inputs_error()
        if graph.result is None and not self.shown:
            raise self.error("the program computes nothing: it binds no number (only strings or functions)", None)
        graph.warnings.extend(_ignored_feeds(self.feeds, graph, self.assigned_at))
        return graph

    def bind_global(self, name: str, value, pos: Pos, scope: Scope) -> None:
        graph = self.graph
        deleted = self.deleted.pop(name, None)  # (a name bound again after `del` is no input)
        written = value if isinstance(value, (TupleValue, Literal)) else None  # (torch_autograd.py)
        if isinstance(value, Literal) and name not in self.globals and deleted is None:
            value = self.made_value(self.input(name, pos, default=value), written)  # (given anew or not)
        elif isinstance(value, _NOT_ARRAYS) or value is NONE or isinstance(value, (Text, Formatted)) or (
                isinstance(value, TupleValue) and (not one_array(value, graph) or self.holds_variables(value.items))):
            self.globals[name] = self.not_input(name, value, pos)  # not an array: a function, a tape, `dtype = ...`
            self.last_tree = (name, value, pos) if isinstance(value, (TupleValue, DictValue)) else self.last_tree
            return
        else:
            value = self.materialize(value, scope)
        self.globals[name] = value
        graph.names[name] = value
        graph.value_names.setdefault(value, name)
        graph.result = (name, value)
        if written is not None and (type(written) is TupleValue or written.from_tuple):
            self.remember_tuple(written, value)

    def input(self, name: str, pos: Pos, default: Literal | None = None) -> int:
        graph = self.graph
        if name in graph.inputs:
            return graph.inputs[name]
        if name in self.feeds:
            value = self.feeds[name]
            if isinstance(value, ShapeOnly) and not value.later:
                return symbol(self, name, pos, value)
        elif default is not None:
            value = default.value
        elif self.symbols:  # no value, no shape: taken to be a number, a free name in what `derive` prints
            return symbol(self, name, pos, None)
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

    def materialize(self, value, scope: Scope, pos: Pos | None = None) -> int:
        if type(value) is int:  # (a value of the graph already: the common case)
            return value
        if isinstance(value, Literal):
            return self.made_value(self.graph.add_constant(value.value, value.pos, scope.stack), value)
        if isinstance(value, TupleValue):  # read as one array, as np.asarray reads a tuple
            return self.array(ast.Array([], value.pos), value.items, scope, as_value=True)
        if isinstance(value, Text):
            raise self.error(f"the string '{value.value}' is not a number", value.pos)
        if value is NONE:
            raise self.error("None is not a number (an argument left out is used as one)", pos)
        if isinstance(value, IndexTrick):
            raise self.error(f"{value.spelled} is not a value: it joins the arrays in its brackets, as in "
                             f"{value.spelled}[a, b]", value.pos)
        if isinstance(value, _NOT_ARRAYS):
            self.refuse_as_number(value)
        if isinstance(value, (AtRef, AtIndexed)):
            raise self.error("x.at[index] is not a value: JAX's update syntax needs its method, as in "
                             "x.at[index].set(v), .add(v), .multiply(v), .divide(v), .power(v), .min(v), "
                             ".max(v) or .get()", value.pos)
        return value

    def lower(self, root: ast.Node, scope: Scope):
        """The value of an expression: a graph id, a Literal, a TupleValue or a Text.
        Iterative post-order walk; a user function call pushes its body onto the same work
        stack. One function on purpose: the hot loop of the benchmarks 'deep' and 'terms'
        (`benchmarks/run.py --only terms`, `--only deep`), whose fast paths are inlined here."""
        work = [(_EVAL, root, scope)]
        values: list = []
        push, pop = work.append, work.pop
        Name, Number, Call, Closure_ = ast.Name, ast.Number, ast.Call, Closure
        globals_ = self.globals
        number_value = self.number_value
        sequence_ops = self.sequence_ops  # (takes_sequences' answers: False is False whatever the scope)
        steps = self.steps_left  # (a local, counted once per work item; an error ends the lowering)
        while work:
            kind, node, scope = pop()
            steps -= 1
            if steps < 0:
                self.steps_left = steps
                raise self.error(f"the program expands to more than {self.max_steps:,} steps of lowering: user "
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
                if node_type is Call and not node.keywords and node.symbol != "if" and (node.method or "." not in node.func
                        and node.func not in GRADIENT_CALLS and (node.symbol or sequence_ops.get(node.func) is False
                                                                 or not self.takes_sequences(node, scope))):
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
                elif isinstance(node, ast.Lambda):
                    fn = node.fn if scope.locals is None else Closure(node.fn, scope)
                    values.append(FunctionRef(fn, "<lambda>", node.pos))
                elif node_type is ast.Comprehension:
                    self.comprehension_start(node, scope, work, len(values), _FLOW)
                elif isinstance(node, ast.Call) and node.symbol == "if":
                    # the condition first: a constant one picks its side, as Python does
                    work.append((_CHOOSE, node, scope))
                    work.append((_EVAL, node.args[0], scope))
                else:
                    if isinstance(node, ast.Call) and not node.method and "." in node.func:
                        node = _as_method(self, node, scope)
                    kids = ast.children(node)
                    if isinstance(node, ast.Call) and node.func.rpartition(".")[2] in GRADIENT_CALLS:
                        kids = [ast.Tuple(kid.items, kid.pos) if isinstance(kid, ast.Array) else kid for kid in kids]
                    elif isinstance(node, ast.Call) and self.takes_sequences(node, scope):
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
                elif isinstance(node, (ast.Dict, ast.FString)) or (
                        isinstance(node, ast.Index) and isinstance(args[0], DictValue)):
                    values.append(self.mapping_or_text(node, args))
                elif isinstance(node, ast.CallValue):
                    result = self.apply_function(args[0], node, args[1:], scope, work)
                    if result is not None:
                        values.append(result)
                else:
                    values.append(self.index(node, args, scope))
            elif kind == _BIND:
                value = scope.locals[node] = values.pop()
                remember_local(self.graph, scope, node, value)
            elif kind == _UNPACK:
                for (name, _), item in zip(node.names, self.unpack(values.pop(), len(node.names), node.pos, scope)):
                    scope.locals[name] = item
                    remember_local(self.graph, scope, name, item)
            elif kind == _DEFINE:
                scope.locals[node.name] = Closure(node, scope)
            elif kind == _STATEMENT:
                self.steps_left = steps
                self.local_statement(node, scope, work)
                steps = self.steps_left
            elif kind == _SET:
                loop, item = node
                self.bind_loop_names(loop.names, item, loop.pos, scope.locals, scope)
            elif kind == _FINISH:
                self.finish(node, values, scope, work)
            elif kind == _FLOW:
                self.flow_step(node, values, scope, work, _FLOW)
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

    def is_value_name(self, name: str, scope: Scope) -> bool:
        """Whether `name` stands for a value of the program (not a module such as `np`)."""
        return (scope.lookup(name) is not None or name in self.globals or name in self.feeds
                or name in self.assigned_at or name in self.graph.inputs)

    def as_method(self, node: ast.Call, scope: Scope) -> ast.Call:  # (see _as_method)
        return _as_method(self, node, scope)

    def resolve(self, node: ast.Name, scope: Scope):
        name = node.id
        found = scope.lookup(name)
        self.refuse_deleted(name, found, node.pos)
        if found is None and name in self.globals:
            found = self.globals[name]
        if found is not None:
            if isinstance(found, (ast.FuncDef, Closure)):
                return FunctionRef(found, name, node.pos)
            return found
        return _unbound_name(self, node, scope, name)

    def missing_inputs_error(self) -> GradcliError:
        return missing_inputs_error(self)

    def call_user(self, fn: ast.FuncDef, node: ast.Call, values: list, scope: Scope, work: list,
                  defined_in: Scope | None):
        label = self.function_label(fn)  # (function_values.py)
        if label in scope.active:
            chain = " -> ".join(scope.active[scope.active.index(label):] + (label,))
            raise self.error(f"recursion is not supported: '{fn.name}' calls itself ({chain}); "
                             "functions are expanded where they are called", node.pos)
        params = [p for p, _ in fn.params]
        self.decorated_call(fn, node, values, work, scope)  # @torch.no_grad(), @tf.custom_gradient (torch_autograd.py)
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
        inner = Scope(args, scope.stack + (node.pos,), scope.active + (label,), defined_in)
        *body, ret = fn.body
        # (`if c: return a else: return b`: the value of the branch chosen)
        work.append((_STATEMENT, ret, inner) if isinstance(ret, ast.TailIf) else (_EVAL, ret.value, inner))
        self.push_body(body, inner, work)
        # parameters left out take their defaults, computed where the function was defined
        for p in reversed([p for p in params if p not in args]):
            work.append((_BIND, p, inner))
            work.append((_EVAL, fn.defaults[p], defined_in or Scope(None, scope.stack, scope.active)))
        return None




def _as_method(lowering, node: ast.Call, scope: Scope) -> ast.Call:
    """`x.sum(axis=0)` where x is a value: the method call `sum(x, axis=0)`; `x.T.sum()`
    calls it on the attribute `x.T`."""
    base, _, method = node.func.rpartition(".")
    first = base.partition(".")[0]
    if not lowering.is_value_name(first, scope) or first in lowering.aliases:
        return node
    receiver = ast.Name(base, Pos(node.pos.line, node.pos.column, node.pos.start,
                                  node.pos.start + len(base) if node.pos.start >= 0 else -1))
    return ast.Call(method, [receiver] + node.args, node.pos, node.keywords, method=True)


def _unbound_name(lowering, node: ast.Name, scope: Scope, name: str):
    """A name bound to no value of the program: a library's constant, dtype or function spelled as a
    value, a module's attribute of a value (`x.T`), else an input (resolve's rarer half)."""
    if "." in name:
        base, _, attribute = name.partition(".")
        if lowering.is_value_name(base, scope) and base not in lowering.aliases:
            target = lowering.resolve(ast.Name(base, node.pos), scope)
            for part in attribute.split("."):
                target = lowering.attribute(target, part, node.pos, scope)
            return target
    library, bare = split_spelling(lowering.spelled(name))
    if bare in CONSTANTS and (bare == name or library != "python" or "." in name):
        return Literal(float64(CONSTANTS[bare]), node.pos)
    if "." in name and bare in FLOAT_DTYPES | OTHER_DTYPES or name in _PYTHON_TYPES:
        # (Python's float, int, bool as a dtype: x.astype(float); PyTorch's torch.float is float32)
        return Text("float32" if bare == "float" and library == "torch" else bare, node.pos)
    if "." in name and library == "numpy" and bare == numpy_dialect.NEW_AXIS:  # None in a subscript
        return NONE
    if "." not in name and name in lowering.assigned_at:
        where = lowering.assigned_at[name]
        raise lowering.error(f"'{name}' is used before it is assigned (at line {where.line})", node.pos)
    # a bare name that is also a function (`beta`, `gamma` of a layer norm) is an input;
    # a library's function spelled as a value (`np.sin * 2`) is a slip
    if ("." in name or name in lowering.aliases and "." in lowering.spelled(name)) and meaning(bare) is not None:
        return FunctionRef(name, name, node.pos)  # (`from jax.numpy import tanh`: `grad(tanh)`)
    if "." in name and library == "numpy" and bare in numpy_dialect.INDEX_TRICKS:
        return IndexTrick(OPS[numpy_dialect.INDEX_TRICKS[bare]], name, node.pos)
    if name.endswith(("UnconnectedGradients.ZERO", "UnconnectedGradients.NONE")):
        return Text(name.rpartition(".")[2].lower(), node.pos)  # tf.UnconnectedGradients.ZERO: the mode's name
    if "." in name:
        raise lowering.error(f"unknown name '{name}'", node.pos)
    return lowering.input(name, node.pos)


def symbol(lowering: Interpreter, name: str, pos: Pos, given: ShapeOnly | None) -> int:
    """An input without values, what `derive` prints as a free name (`symbols`; refused otherwise):
    of the shape `given`, or where none is a number, remembered as such (gradcli.ir.Graph.unshaped)."""
    if given is not None and not lowering.symbols:
        raise OptionError(f"{name} has a shape ({{option}} {name}={given}) but no values, and this command computes "
                          f"with them: give {name}'s values (a shape alone serves derive and graph)", "feeds", pos,
                          lowering.source)
    graph = lowering.graph
    graph.equations.append(Equation(OPS["input"], (), {"name": name, "value": None}, pos, name))
    graph.shapes.append(() if given is None else given.shape)
    value = graph.inputs[name] = len(graph.equations) - 1
    if given is None:
        graph.unshaped = {**(graph.unshaped or {}), value: name}
    graph.names.setdefault(name, value)
    graph.value_names.setdefault(value, name)
    return value


def remember_local(graph: Graph, scope: Scope, name: str, value) -> None:
    """The value a user function's local name is bound to, for `--print loss.probs`: under
    `function.name`, the last value of each call of the function (gradcli.ir.Graph.local_values).
    Two calls of one function never overlap (recursion is refused): a new locals dict is a new call."""
    if type(value) is not int or not scope.active:
        return
    if graph.local_values is None:
        graph.local_values = {}
    calls = graph.local_values.setdefault(f"{scope.active[-1]}.{name}", [])
    if calls and calls[-1][0] is scope.locals:
        calls[-1][1] = value
        return
    if calls:
        calls[-1][0] = None  # (only the current call's dict is held)
    calls.append([scope.locals, value])


def _ignored_feeds(feeds: dict, graph: Graph, assigned_at: dict) -> list:
    """The warnings for values given (--set) for names that are no input of the program."""
    found = []
    for name in feeds:
        if name not in graph.inputs:
            where = assigned_at.get(name)
            why = (f"'{name}' is computed by the program (line {where.line}), so it is not an input" if where else
                   f"'{name}' is the constant {CONSTANTS[name]!r} in gradcli's language, not an input" if name in CONSTANTS
                   else f"the program does not use '{name}'")
            found.append((f"the value given for {name} is ignored: {why}", None))
    return found


def number_value(node: ast.Number):
    """The value of a number written in the program (NumberPolicy's, without a policy): float64()
    written out (a call per number)."""
    return float(node.value) if MODE.active else np.float64(node.value)


def _bound_names(stmt) -> list[str]:
    if isinstance(stmt, ast.Assign):
        return [stmt.name]
    if isinstance(stmt, ast.Unpack):
        return [name for name, _ in stmt.names]
    return []


def one_array(value: TupleValue, graph: Graph) -> bool:
    """Whether a tuple's items stack into one array (numbers of one shape), as a top-level
    `t = (a, b)` is kept; a list of gradients of several shapes stays a list."""
    shapes = set()
    for item in value.items:
        if isinstance(item, Literal):
            shapes.add(item.value.shape)
        elif type(item) is int:
            shapes.add(graph.shapes[item])
        else:
            return False
    return len(shapes) <= 1


def missing_inputs_error(lowering) -> GradcliError:
    """The error naming every missing input found so far (at the first one's use)."""
    graph = lowering.graph
    names = list(lowering.missing)
    first = lowering.missing[names[0]]
    shown = names[:8]
    listed = ", ".join(f"'{n}'" for n in shown) + (f" and {len(names) - 8:,} more" if len(names) > 8 else "")
    hint = " ".join(f"{{option}} {n}=VALUE" for n in shown) + (" ..." if len(names) > 8 else "")
    known = [n for n in graph.names if n not in lowering.missing]
    import difflib

    close = [c for n in names for c in difflib.get_close_matches(n, known, n=1)]
    maybe = f" (did you mean {', '.join(close)}?)" if close and len(names) == 1 else ""
    functions = [n for n in names if meaning(n) is not None]
    if functions and not maybe and len(names) == 1:
        maybe = f" (or call the function: {functions[0]}(x))"
    return OptionError(f"missing input{'s' if len(names) > 1 else ''} {listed}{maybe}: "
                       f"give {'them' if len(names) > 1 else 'it'} with {hint}", "feeds", first, lowering.source)
