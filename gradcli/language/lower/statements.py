"""Compound statements (`for` and `while` unrolled, `if` chosen before evaluation, `with` entered and
left; flow.py reads their conditions and items), `print` and f-strings, dict literals."""
from __future__ import annotations

from gradcli.errors import GradcliError, Pos
from gradcli.language import syntax as ast
from gradcli.language.dialects import split_spelling
from gradcli.language.lower.interpret import (
    _SHOWN_NOTHING, _BIND, _DEFINE, _DISCARD, _EVAL, _FLOW, _SET, _STATEMENT, _UNPACK)
from gradcli.language.ast_builder import ITEM_ASSIGNMENT
from gradcli.language.lower.transforms import _FINISH, NOT_MINE, fresh, printed_text
from gradcli.language.lower.pytrees import printed_leaves
from gradcli.language.lower.transforms import (
    BoundMethod, ClassValue, DictValue, Formatted, FunctionRef, ObjectValue, Tape, TapeRecording)
from gradcli.language.lower.values import NONE, Literal, Scope, Text, TupleValue
from gradcli.language.lower.torch_autograd import GradMode, GradModeSet
from gradcli.ops import OPS
from gradcli.language.dialects.spelling import Autocast, Distribution

TENSOR_CONSTRUCTORS = {"constant", "Variable", "convert_to_tensor"}
# a statement the executor pushes after a `with` block's body: leave its contexts
_LEAVE = object()
# the call of a program's last def, pushed after the data bound below it (implicit_calls)
_CALL_AFTER_DATA = object()
# a statement the executor pushes after a function's for loop's passes: where a break goes
_LOOP_END = object()


def _uses_none_of(node, defined: set) -> bool:
    """Whether an expression neither calls nor names a function or class in `defined` (nor
    builds a function value)."""
    work = [node]
    while work:
        item = work.pop()
        if isinstance(item, (ast.Lambda, ast.CallValue)) or (isinstance(item, ast.Call) and item.func in defined) or (
                isinstance(item, ast.Name) and item.id in defined):
            return False
        work.extend(ast.children(item))
    return True
VALUE_PRESERVING_DECORATORS = {"jit", "function", "partial", "checkpoint", "remat",
                               "no_grad", "enable_grad", "inference_mode",  # (torch's: torch_autograd.py applies them)
                               "custom_gradient", "custom_vjp", "custom_jvp"}  # (custom_gradients.py)


# the decorators of a class's methods that change how they are called, as Python's built-ins do
METHOD_KINDS = ("property", "staticmethod", "classmethod")
_PROPERTY = "<property>"  # (the name a property's bound method is called by: no program can spell it)


def method_kind(fn: ast.FuncDef) -> str | None:
    """"property", "staticmethod", "classmethod", or None for a plain method."""
    return next((d.id for d in fn.decorators if isinstance(d, ast.Name) and d.id in METHOD_KINDS), None)


def is_print(stmt) -> bool:
    if not (isinstance(stmt, ast.ExprStmt) and isinstance(stmt.value, ast.Call)):
        return False
    call = stmt.value
    return call.func == "print" or (call.func == ast.SPREAD_CALL and call.args[0].value.startswith("name:")
                                    and call.args[0].value.split(":", 2)[2] == "print")  # `print(*xs)`


def _if_kind(stmt: ast.If) -> str:
    """What an if's condition on data is refused as: an if, or the if around a break or continue."""
    return ast.exits_loop([part for _, body in stmt.branches for part in body] + stmt.orelse) or "if"


class LoopExits:
    """Part of the lowering (gradcli.language.lower): `break` and `continue` of an unrolled loop. The
    loop's passes stand unrolled on the statements to run (the top level's `pending`, a function's
    `work`): a continue drops the rest of its pass, a break the rest of the loop; a `with` block
    left so is left as Python leaves it."""

    def exit_loop_top(self, stmt: ast.LoopExit, pending: list, top: Scope) -> None:
        loop = self.exited_loop(stmt)
        while pending:
            item = pending[-1]
            if item is loop:  # a while loop's next test of its condition
                if stmt.kind == "break":
                    pending.pop()
                    top.stack = self.while_base.pop(id(loop))
                    self.while_passes.pop(id(loop), None)
                return
            if isinstance(item, tuple) and (item[0] == "loop" and item[1] is loop or
                                            item[0] == "end loop" and item[2] is loop):
                if item[0] == "end loop" or stmt.kind == "continue":
                    return  # (the next pass, or the loop's end, which restores the stack before it)
            elif isinstance(item, tuple) and item[0] is _LEAVE:
                for context in reversed(item[1]):
                    self.leave(context)
            pending.pop()
        raise AssertionError(f"the loop of the {stmt.kind} at {stmt.pos.line}:{stmt.pos.column} was not found")

    def exit_loop_local(self, stmt: ast.LoopExit, work: list) -> None:
        loop = self.exited_loop(stmt)
        while work:
            kind, node, _ = work[-1]
            if kind == _STATEMENT and node is loop:  # a while loop's next test of its condition
                if stmt.kind == "break":
                    work.pop()
                return
            if kind == _SET and node[0] is loop and stmt.kind == "continue":
                return  # (the next pass)
            if kind == _STATEMENT and isinstance(node, tuple) and node[0] is _LOOP_END and node[1] is loop:
                return
            if kind == _STATEMENT and isinstance(node, tuple) and node[0] is _LEAVE:
                for context in reversed(node[1]):
                    self.leave(context)
            work.pop()
        raise AssertionError(f"the loop of the {stmt.kind} at {stmt.pos.line}:{stmt.pos.column} was not found")

    def exited_loop(self, stmt: ast.LoopExit):
        if stmt.loop is None:
            raise self.error(f"'{stmt.kind}' outside a loop (in a function, the loop must be in that function too)",
                             stmt.pos)
        return stmt.loop


class ProgramClasses:
    """Part of the lowering (gradcli.language.lower): the program's classes (their methods'
    decorators, attributes, properties), `raise`, and the refusals of strings as results and inputs."""

    def check_decorator(self, decorator) -> None:
        spelled = decorator.func if isinstance(decorator, ast.Call) else getattr(decorator, "id", "")
        if split_spelling(self.spelled(spelled))[1] not in VALUE_PRESERVING_DECORATORS:
            raise self.error(f"the decorator @{spelled} is not supported (gradcli accepts those that do "
                             "not change values: @jax.jit, @tf.function, @partial(jax.jit, ...), and on a "
                             "method @property, @staticmethod, @classmethod)", decorator.pos)

    def define_class(self, stmt: ast.ClassDef, top: Scope) -> None:
        """A class: its methods (`@property`, `@staticmethod`, `@classmethod` read as Python's) and constants."""
        methods = {s.name: s for s in stmt.body if isinstance(s, ast.FuncDef)}
        for fn in methods.values():
            kinds = [d.id for d in fn.decorators if isinstance(d, ast.Name) and d.id in METHOD_KINDS]
            for decorator in fn.decorators:
                if isinstance(decorator, ast.Name) and decorator.id.rpartition(".")[2] in ("setter", "deleter"):
                    raise self.error(f"@{decorator.id} is not supported: a property is read, never set (set "
                                     "the attribute it reads instead)", decorator.pos)
                if not (isinstance(decorator, ast.Name) and decorator.id in METHOD_KINDS):
                    self.check_decorator(decorator)
            if len(kinds) > 1:
                raise self.error(f"{fn.name} is decorated with @{kinds[0]} and @{kinds[1]}: one of them only",
                                 fn.pos)
        constants = {s.name: self.lower(s.value, top) for s in stmt.body if isinstance(s, ast.Assign)}
        bases = tuple(self.spelled(base.id) for base in stmt.bases if isinstance(base, ast.Name))
        self.globals[stmt.name] = ClassValue(stmt.name, methods, constants, stmt.pos, bases)

    def program_method(self, receiver, node: ast.Call, values: list, scope: Scope, work: list):
        """`obj.f(x)`, `Cls.f(x)`: a method of the program's class (method_call), else what an
        object holds (gradient_calls.call_method); NOT_MINE for a class's other calls."""
        cls = receiver if isinstance(receiver, ClassValue) else receiver.cls
        if node.func in cls.methods:
            return self.method_call(receiver, cls.methods[node.func], node, values, scope, work)
        return NOT_MINE if receiver is cls else self.call_method(receiver, node, values, scope, work)

    def method_call(self, receiver, method: ast.FuncDef, node: ast.Call, values: list, scope: Scope, work: list):
        """`obj.f(x)`, `Cls.f(x)` of a method of the program's class: self is the object, cls the class
        (@classmethod), neither for @staticmethod, and a method read of the class takes its self
        among the arguments (`Cls.forward(obj, x)`), as Python's do."""
        kind = method_kind(method)
        if kind == "property":
            raise self.error(f"'{method.name}' is a property: read it without calling it (obj.{method.name})",
                             node.pos)
        if kind == "classmethod":
            cls = receiver if isinstance(receiver, ClassValue) else receiver.cls
            return self.call_user(method, node, [cls] + list(values[1:]), scope, work, None)
        if kind == "staticmethod" or isinstance(receiver, ClassValue):
            rest = ast.Call(node.func, node.args[1:], node.pos, node.keywords)
            return self.call_user(method, rest, values[1:], scope, work, None)
        return self.call_user(method, node, values, scope, work, None)

    def set_attribute(self, stmt, value, scope: Scope) -> None:
        target = self.resolve(stmt.target, scope) if isinstance(stmt.target, ast.Name) else None
        state = self._torch_state
        if type(target) is int and stmt.name == "grad" and value is NONE and state is not None:
            for grads in (state.leaves, state.retained):  # `x.grad = None`: as before any backward()
                if target in grads:
                    grads[target] = None
            return
        if not isinstance(target, ObjectValue):
            raise self.error("an attribute can be set on an object of a class of the program (self.w = ...)",
                             stmt.pos)
        target.attrs[stmt.name] = value

    def object_attribute(self, obj, name: str, pos: Pos, scope: Scope | None = None):
        """`m.w`: what __init__ set, a class constant, a property's value, or a method (bound to
        the object; to its class for @classmethod, to nothing for @staticmethod)."""
        if name in obj.attrs:
            return obj.attrs[name]
        if name in obj.cls.constants:
            return obj.cls.constants[name]
        if name in obj.cls.methods:
            fn = obj.cls.methods[name]
            kind = method_kind(fn)
            if kind == "property":  # its method called with self, here (its own lowering)
                inner = Scope({_PROPERTY: BoundMethod(obj, fn, pos)}, scope.stack if scope else (),
                              scope.active if scope else (), scope)
                return self.lower(ast.CallValue(ast.Name(_PROPERTY, pos), [], [], pos), inner)
            if kind == "staticmethod":
                return FunctionRef(fn, name, pos)
            return BoundMethod(obj.cls if kind == "classmethod" else obj, fn, pos)
        if name in ("trainable_variables", "variables") and "tensorflow.Module" in obj.cls.bases:
            return TupleValue(module_variables(obj, self.variables), pos)
        raise self.error(f"{obj.cls.name} has no attribute '{name}'", pos)

    def raised(self, stmt: ast.Raise) -> GradcliError:
        """`raise E(...)` reached (the ifs around it chosen before evaluation): the program's own error."""
        if stmt.exception is None:
            return self.error("raise with no exception outside an except clause (Python's RuntimeError: no "
                              "active exception to reraise)", stmt.pos)
        return self.error(f"the program raises {self.expression_text(stmt.exception.pos)}", stmt.pos)

    def text_result(self, node, value) -> GradcliError:
        """A program that ends with a string (`mode` or an f-string on its own line): Python's
        notebook would show the text, but gradcli's outputs are numbers (docs/contract.md)."""
        what = f"the string '{value.value}'" if isinstance(value, Text) else "an f-string"
        return self.error(f"the program ends with {what}, which gradcli does not show: its outputs are numbers; "
                          "print the text with them (print(f\"{name} = {x}\")) or end with a number", node.pos)

    def shown_nothing(self, node, value, pending: list) -> bool:
        """Whether a bare top-level expression is computed for its effect (`tape.watch(x)`) or is a
        string (one that ends the program refused: text_result)."""
        if isinstance(value, (Text, Formatted)) and not pending:
            raise self.text_result(node, value)
        return isinstance(value, _SHOWN_NOTHING)

    def not_input(self, name: str, value, pos: Pos):
        """A value that is no array, bound to a top-level name; `--set mode=...` of a name the
        program binds to a string is refused: a string is never an input."""
        if name in self.feeds and isinstance(value, (Text, Formatted)):
            what = f"the string '{value.value}'" if isinstance(value, Text) else "an f-string"
            raise self.error(f"--set {name}: '{name}' is bound to {what} here, so it is not an "
                             "input (a string is never one): edit the program to change it", pos)
        return value


class Statements(LoopExits, ProgramClasses):
    """Part of the lowering (gradcli.language.lower): compound statements and in-program gradients."""

    in_loops: set | None = None  # (made on first use) ids of the statements and bare expressions inside loops
    last_in_loop = None  # (node, value) of the last bare expression inside a loop, not shown

    def expand_statement(self, stmt, pending: list, top: Scope) -> bool:
        """Handles a compound statement (pushing what it runs onto `pending`, last first);
        False where `stmt` is a plain one."""
        if type(stmt) is ast.Assign:  # (first: most of a long program's lines; `x[i] = v` of a leaf)
            return type(stmt.value) is ast.Call and stmt.value.symbol == ITEM_ASSIGNMENT and self.update_leaf_item(stmt, top)
        if isinstance(stmt, ast.For):
            self.expand_for(stmt, pending, top)
            return True
        if isinstance(stmt, tuple) and stmt[0] in ("loop", "end loop"):  # a pass begins, or the loop ends (flow.py)
            self.loop_marker(stmt, top)
            return True
        if isinstance(stmt, ast.While):
            self.expand_while(stmt, pending, top)
            return True
        if isinstance(stmt, ast.Delete):
            self.delete(stmt, top)
            return True
        if isinstance(stmt, ast.Assert):
            self.check_assert(stmt, top)
            return True
        if type(stmt) is ast.LoopExit:
            self.exit_loop_top(stmt, pending, top)
            return True
        if type(stmt) is ast.Raise:
            raise self.raised(stmt)
        if isinstance(stmt, ast.If):
            for condition, body in stmt.branches:
                truth = self.known_truth(self.lower(condition, top), condition.pos, _if_kind(stmt))
                if truth:
                    pending.extend(reversed(body))
                    return True
            pending.extend(reversed(stmt.orelse))
            return True
        if isinstance(stmt, ast.With):
            entered = []
            for expr, name, pos in stmt.items:
                context = self.lower(expr, top)
                entered.append(self.enter(context, expr.pos))
                if name is not None:
                    self.globals[name] = entered[-1]
            pending.append((_LEAVE, entered))
            pending.extend(reversed(stmt.body))
            return True
        if isinstance(stmt, tuple) and stmt[0] is _CALL_AFTER_DATA:
            # each name after the last def an input with the value written (bind_global): data
            if all(self.globals.get(name) == self.graph.inputs.get(name, ()) for name in stmt[2]):
                pending.append(stmt[1])
            return True
        if isinstance(stmt, tuple) and stmt[0] is _LEAVE:
            for context in reversed(stmt[1]):
                self.leave(context)
            return True
        if isinstance(stmt, ast.SetAttribute):
            self.set_attribute(stmt, self.lower(stmt.value, top), top)
            return True
        if isinstance(stmt, ast.ClassDef):
            self.define_class(stmt, top)
            return True
        if isinstance(stmt, ast.FuncDef):
            for decorator in stmt.decorators:
                if not self.custom_decorator(stmt, decorator):  # @f.defjvp (custom_gradients.py)
                    self.check_decorator(decorator)
            return False
        if is_print(stmt):
            return self.print_call(stmt.value, top) or True
        return self.is_list_method(stmt) and self.list_method(stmt, top)  # `out.append(v)`: rebound (lists.py)

    def push_body(self, body: list, inner: Scope, work: list) -> None:
        """A function body's statements (or a block of one) onto the work stack, last first."""
        for stmt in reversed(body):
            if isinstance(stmt, ast.SetAttribute):
                work.append((_FINISH, ("setattr", stmt), inner))
                work.append((_EVAL, stmt.value, inner))
                continue
            if isinstance(stmt, (ast.For, ast.If, ast.With, ast.Return, ast.ClassDef, ast.While, ast.Delete,
                                 ast.Assert, ast.LoopExit, ast.Raise)) or is_print(stmt) or self.is_list_method(stmt):
                work.append((_STATEMENT, stmt, inner))
                continue
            if isinstance(stmt, ast.Assign):
                work.append((_BIND, stmt.name, inner))
                if self.makes_tensor(stmt.value):
                    # `a = tf.constant(0.)` in a function: one value of the graph, which tf.gradients
                    # can differentiate with respect to (a constant is otherwise placed at each use)
                    work.append((_FLOW, ("tensor", stmt.value.pos), inner))
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


    def local_statement(self, stmt, scope: Scope, work: list) -> None:
        """A compound statement inside a function: a loop unrolled, an if chosen, here."""
        if isinstance(stmt, ast.For):
            items = self.loop_items(stmt, scope)
            work.append((_STATEMENT, (_LOOP_END, stmt), scope))
            for item in reversed(items):
                self.push_body(stmt.body, scope, work)
                work.append((_SET, (stmt, item), scope))
        elif isinstance(stmt, ast.If):
            chosen = next((body for condition, body in stmt.branches
                           if self.known_truth(self.lower(condition, scope), condition.pos, _if_kind(stmt))),
                          stmt.orelse)
            if isinstance(stmt, ast.TailIf) and isinstance(chosen[-1], ast.Return):
                work.append((_EVAL, chosen[-1].value, scope))  # the function's value
                chosen = chosen[:-1]
            self.push_body(chosen, scope, work)
        elif isinstance(stmt, ast.While):
            if self.known_truth(self.lower(stmt.condition, scope), stmt.condition.pos, "while"):
                self.unroll_once(stmt)
                work.append((_STATEMENT, stmt, scope))
                self.push_body(stmt.body, scope, work)
        elif isinstance(stmt, ast.Delete):
            self.delete(stmt, scope)
        elif isinstance(stmt, ast.Assert):
            self.check_assert(stmt, scope)
        elif is_print(stmt):  # each call's values printed, in order (a print in a loop: print_call)
            self.print_call(stmt.value, scope)
        elif self.is_list_method(stmt):
            if not self.list_method(stmt, scope):
                self.lower(stmt.value, scope)  # (a call that only looks like a list's method)
        elif isinstance(stmt, ast.With):  # a tape (or no_grad) in a function: entered, the body, left
            entered = [self.enter(self.lower(expr, scope), expr.pos) for expr, _, _ in stmt.items]
            scope.locals.update((name, context) for (_, name, _), context in zip(stmt.items, entered) if name)
            work.append((_STATEMENT, (_LEAVE, entered), scope))
            self.push_body(stmt.body, scope, work)
        elif isinstance(stmt, tuple) and stmt[0] is _LEAVE:
            for context in reversed(stmt[1]):
                self.leave(context)
        elif type(stmt) is ast.LoopExit:
            self.exit_loop_local(stmt, work)
        elif isinstance(stmt, tuple) and stmt[0] is _LOOP_END:
            pass  # (the passes of a for loop are over: a break leaves up to here)
        elif type(stmt) is ast.Raise:
            raise self.raised(stmt)
        elif isinstance(stmt, ast.Return):
            raise self.error("'return' inside a for or an if is not supported: return once, at the end of the "
                             "function (choose the value with where)", stmt.pos)
        else:
            raise self.error("a class is defined at the top level only", stmt.pos)

    def makes_tensor(self, node) -> bool:
        """Whether `node` calls a library's tensor constructor (tf.constant, tf.Variable)."""
        return isinstance(node, ast.Call) and not node.method and "." in node.func and \
            split_spelling(self.spelled(node.func))[1] in TENSOR_CONSTRUCTORS

    def unpack(self, value, count: int, pos: Pos, scope: Scope) -> list:
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

    def implicit_call(self, fn: ast.FuncDef) -> ast.Assign:
        """A pasted function with no call: call it with its parameters bound to the inputs
        of the same names (a parameter with a default keeps it unless --set gives it); the
        result is named after the function."""
        positional, *spread = fn.variadic or (len(fn.params), None, None)  # (`*args`, `**kwargs`: left empty)
        params = [(p, pos) for p, pos in fn.params if p not in spread]
        args = [ast.Name(p, pos) for p, pos in params[:positional] if p not in fn.defaults]
        given = [ast.Keyword(p, ast.Name(p, pos), pos) for k, (p, pos) in enumerate(params)
                 if p in fn.defaults and p in self.feeds or k >= positional and p not in fn.defaults]
        return ast.Assign(fn.name, ast.Call(fn.name, args, fn.pos, given), fn.pos)

    def implicit_calls(self, statements: list) -> list:
        """What a program run without --call ends with: the call of a pasted function that is
        its last statement (an `import` or a docstring after it is no call), or of the last def
        when all the statements after it bind data (`inputs = np.array([...])`, `weights =
        np.array([0.0, 0.0])`), as a script is pasted without its training loop; that call
        waits (as `_CALL_AFTER_DATA`) until the data turns out constant, known once lowered."""
        kinds = list(map(type, statements))
        if ast.FuncDef not in kinds:
            return []
        last = len(kinds) - 1 - kinds[::-1].index(ast.FuncDef)
        tail = [stmt for stmt in statements[last + 1:] if not isinstance(stmt, ast.Import)
                and not (isinstance(stmt, ast.ExprStmt) and isinstance(stmt.value, ast.Str))]
        if not tail:
            return [self.implicit_call(statements[last])]
        defined = {stmt.name for stmt in statements if isinstance(stmt, (ast.FuncDef, ast.ClassDef))}
        if not all(isinstance(stmt, ast.Assign) and _uses_none_of(stmt.value, defined) for stmt in tail):
            return []
        return [(_CALL_AFTER_DATA, self.implicit_call(statements[last]), [stmt.name for stmt in tail])]

    # ------------------------------------------------------------------ with
    def enter(self, context, pos: Pos):
        if isinstance(context, GradModeSet):  # torch.set_grad_enabled(flag): in force since the call
            return context
        if isinstance(context, GradMode):  # torch.no_grad() / torch.enable_grad() (torch_autograd.py)
            return self.torch_enter(context)
        if isinstance(context, Autocast):  # torch.autocast(...) (autocast.py)
            return self.autocast_enter(context)
        if isinstance(context, Tape):
            context.open_at = len(self.graph.equations)
            self.active_tapes.append(context)
            return context
        if isinstance(context, TapeRecording):
            tape = context.tape
            if tape.open_at is not None:
                tape.windows.append((tape.open_at, len(self.graph.equations)))
                tape.open_at = None
            return context
        raise self.error("'with' blocks are supported for tf.GradientTape() and tape.stop_recording(); "
                         "this is not one of them: write its statements at the top level", pos)

    def leave(self, context) -> None:
        if isinstance(context, GradMode):
            return self.torch_leave(context)
        if isinstance(context, Autocast):
            return self.autocast_leave(context)
        if isinstance(context, Tape):
            if context.open_at is not None:
                context.windows.append((context.open_at, len(self.graph.equations)))
                context.open_at = None
            if context in self.active_tapes:
                self.active_tapes.remove(context)
        elif isinstance(context, TapeRecording):
            context.tape.open_at = len(self.graph.equations)

    # ------------------------------------------------------------------ print
    def printed(self, node: ast.Call, top: Scope):
        """A print's (expression, its text, value): `print(*xs)` prints each item of xs, as
        `xs[0]`, `xs[1]`, ... (Python prints them separated by spaces)."""
        spread = node.func == ast.SPREAD_CALL
        kinds, args = (node.args[0].value.split(":", 2)[1], node.args[1:]) if spread else ("p" * len(node.args), node.args)
        for kind, arg in zip(kinds, args):
            text = self.expression_text(arg.pos) if arg.pos.start >= 0 else f"print {len(self.shown)}"
            if kind == "p":
                yield arg, text, self.lower(arg, top)
            elif kind == "*":
                for k, item in enumerate(self.spread_items(self.lower(arg, top), arg, top)):
                    yield arg, f"{text}[{k}]", item
            else:
                raise self.error("print(**d) passes d's items as print's keywords (Python's TypeError): print "
                                 "the dict, print(d)", arg.pos)

    def print_call(self, node: ast.Call, top: Scope) -> None:
        shown = self.shown
        for arg, text, value in self.printed(node, top):
            if isinstance(value, Text):
                continue  # a label
            fields = value.fields if isinstance(value, Formatted) else [(text, value)]
            for text, value in (pair for field in fields for pair in self.shown_fields(*field)):
                if value is NONE:
                    shown.append((text, None, True))
                elif not isinstance(value, Text):
                    value = self.materialize(value, top, arg.pos)
                    shown.append((text, value, True))
                    self.graph.result = (text, value)

    def mark_loop_body(self, loop) -> None:
        """The bare expressions inside a loop's body, at any depth: not shown (`w.grad.zero_()` in a
        training loop), as a script or a notebook cell shows none of them."""
        marked = self.in_loops
        if marked is None:
            marked = self.in_loops = set()
        if not loop.body or id(loop.body[0]) in marked:
            return
        stack = list(loop.body)
        while stack:
            stmt = stack.pop()
            marked.add(id(stmt))
            if isinstance(stmt, ast.ExprStmt):
                marked.add(id(stmt.value))
            elif isinstance(stmt, (ast.For, ast.While, ast.With)):
                stack.extend(stmt.body)
            elif isinstance(stmt, ast.If):
                stack.extend(stmt.orelse)
                stack.extend(statement for _, body in stmt.branches for statement in body)

    def show_expression(self, node, value, top: Scope) -> None:
        """A top-level bare expression: shown (a notebook's display), the program's value so far;
        one inside a loop only where the program shows nothing else (settle_outputs)."""
        if self.in_loops is not None and id(node) in self.in_loops:
            self.last_in_loop = (node, value)
            return
        shown = not (isinstance(node, ast.Call) and node.func.rpartition(".")[2].startswith("assign"))
        for text, item in self.shown_fields(self.expression_text(node.pos), value):
            if item is NONE:
                self.shown.append((text, None, False))
                continue
            value = self.materialize(item, top)
            if shown:
                self.shown.append((text, value, False))
            self.graph.names["_"] = value
            self.graph.result = ("_", value)

    def shown_fields(self, text: str, value) -> list:
        """A printed or shown value as (text, value) pairs: a dict, or a tuple that is not one
        array (a value and its gradient, a list holding None), is shown leaf by leaf, `text['w']`,
        `text[k]`."""
        return printed_leaves(text, value, self.graph)

    def expression_text(self, pos: Pos) -> str:
        """An expression's source text, with the brackets that open it (`(x ** 2).sum()` starts
        at its `(`, where the expression's place starts at `x`)."""
        return printed_text(self.source.text, pos.start, pos.end)

    def as_tuple(self, value):
        """`(0.1,)` written with constants is one Literal: its items, as a tuple of values."""
        if isinstance(value, Literal) and value.from_tuple and value.value.ndim >= 1:  # (rows: `(array,)`)
            return TupleValue([Literal(v, value.pos) for v in value.value], value.pos)
        return value

    def update_leaf_item(self, stmt: ast.Assign, top: Scope) -> bool:
        """`x[i] = v` where x is a PyTorch leaf that requires grad: refused where gradients are
        recorded, as PyTorch refuses it; under torch.no_grad() x is updated and stays the leaf.
        False where x is no such leaf (the update is a new value of x)."""
        state = self._torch_state
        old = self.globals.get(stmt.name)
        if state is None or type(old) is not int or old not in state.leaves:
            return False
        pos = stmt.value.pos
        if not (state.modes and not state.modes[-1][0]):
            raise self.error("a view of a leaf Variable that requires grad is being used in an in-place operation "
                             "(PyTorch: RuntimeError): update it inside `with torch.no_grad():`, or assign into "
                             "a copy (y = x.clone(); y[i] = v)", pos)
        leaf = fresh(self, self.materialize(self.lower(stmt.value, top), top, pos), pos, top)
        state.leaves[leaf] = state.leaves.pop(old)
        self.rebind_id(old, leaf, top)
        self.bind_global(stmt.name, leaf, stmt.pos, top)
        return True

    def mapping_or_text(self, node, args: list):
        """A dict literal's value, a dict's item, or an f-string's fields."""
        if isinstance(node, ast.Dict):
            keys = [self.dict_key(k, v) for k, v in zip(args[:len(node.keys)], node.keys)]
            if len({type(k) for k in keys}) > 1:
                raise self.error("a dict's keys must be all strings or all integers", node.pos)
            return DictValue(keys, args[len(node.keys):], node.pos)
        if isinstance(node, ast.FString):
            fields = [p for p in node.parts if isinstance(p, ast.Field)]
            return Formatted([(f.text, v) for f, v in zip(fields, args)], node.pos)
        return self.dict_item(args[0], args[1:], node)

    def refuse_as_number(self, value):
        if isinstance(value, Distribution):
            raise self.error(f"{value.name}(...) is a distribution object, not a number: use its methods, as in "
                             f"{value.name}(loc, scale).log_prob(x)", value.pos)
        if isinstance(value, DictValue):
            raise self.error("a dict is not a number: gradcli reads a dict only as tape.gradient's sources, "
                             "indexed with a constant key", value.pos)
        if isinstance(value, FunctionRef):
            raise self.error(f"'{value.name}' is a function: call it, as in {value.name}(x)", value.pos)
        if isinstance(value, ObjectValue):
            raise self.error(f"an object of class {value.cls.name} is not a number: use its attributes "
                             "(m.w) or call it", value.pos)
        raise self.error("this is not a number: a function, an optimizer, a gradient transform or a tape; "
                         "call it or use what it gives", value.pos)

    def dict_key(self, value, node) -> str | int:
        """A string, or an integer written in the program (optax's {step: scale})."""
        known = self.constant_value(value) if type(value) is int else value
        if isinstance(known, Literal) and known.value.ndim == 0 and not known.boolean \
                and float(known.value).is_integer():
            return int(known.value)
        if not isinstance(value, Text):
            raise self.error("a dict's keys must be strings or integers written in the program", node.pos)
        return value.value

    def dict_item(self, mapping: DictValue, subscripts: list, node):
        key = subscripts[0] if len(subscripts) == 1 else None
        if isinstance(key, Text):
            key = key.value
        elif isinstance(key, Literal) and key.value.ndim == 0 and not key.boolean and float(key.value).is_integer():
            key = int(key.value)  # (an integer key: {100: 0.1}[100])
        else:
            key = None
        if key is None or key not in mapping.keys:
            raise self.error(f"this dict's keys are {', '.join(repr(k) for k in mapping.keys)}", node.pos)
        return mapping.items[mapping.keys.index(key)]


def module_variables(obj: ObjectValue, variables) -> list:
    """A tf.Module's variables in TensorFlow's order: its own, by attribute name (in a list, in the
    list's order), then each sub-module's, by attribute name, depth first."""
    found, stack = [], [obj]
    while stack:  # (no recursion: sub-modules are walked with a stack)
        module = stack.pop()
        submodules = []
        for _, value in sorted(module.attrs.items()):
            for item in value.items if isinstance(value, TupleValue) else [value]:
                if type(item) is int and item in variables and item not in found:
                    found.append(item)
                elif isinstance(item, ObjectValue) and "tensorflow.Module" in item.cls.bases:
                    submodules.append(item)
        stack.extend(reversed(submodules))
    return found
