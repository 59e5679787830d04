"""Python's control flow around the program's values, settled before evaluation: the items a loop
runs over (range, a tuple or list, an array's rows, zip, enumerate, a dict's items), `while`
unrolled while its condition (known before evaluation) holds, comprehensions unrolled as loops
are, `del`, and `assert` (checked before evaluation where its condition is known then)."""
from __future__ import annotations

import math

import numpy as np

from gradcli.errors import LoopPass, Pos
from gradcli.language import syntax as ast
from gradcli.language.lower.transforms import DictValue
from gradcli.language.lower.interpret import _EVAL
from gradcli.language.lower.values import NONE, Deleted, Literal, Scope, Text, TupleValue, TypeName
from gradcli.engine.evaluate import run

# the most equations a condition may need to be computed before evaluation
_KNOWN_EQUATIONS = 10_000
_KNOWN_ELEMENTS = 1 << 20  # ... and the most numbers they may hold
# the most passes of one while loop
MAX_WHILE_PASSES = 10_000
# what a condition that depends on the data is refused with, by statement
DATA_CONDITION = {
    "if": "this if depends on the data, which is not known before evaluation: compute both sides and "
          "choose with where(condition, a, b) (or `a if condition else b`)",
    "while": "this while loop's condition depends on the data, which is not known before evaluation: "
             "gradcli unrolls a loop whose condition is known then (constants, counters, values written "
             "in the program); loop a fixed number of times (for i in range(N)) and choose each step's "
             "value with where(condition, a, b)",
    "cond": "this lax.cond's predicate depends on the data, which is not known before evaluation: compute "
            "both branches and choose with jnp.where(pred, true_fun(x), false_fun(x))",
    "while_loop": "this lax.while_loop's condition depends on the data, which is not known before evaluation: "
                  "gradcli unrolls a loop whose condition is known then; loop a fixed number of times "
                  "(lax.fori_loop) and choose each step's value with jnp.where",
    "comprehension": "this comprehension's if depends on the data, which is not known before evaluation: "
                     "keep every item and choose with where(condition, a, b)",
    **{exit_: f"this if around a {exit_} depends on the data, which is not known before evaluation: gradcli "
              f"unrolls a loop, and takes a {exit_} only where the if around it is known then (constants, "
              "counters, values written in the program); loop a fixed number of times and choose each step's "
              "value with where(condition, a, b)" for exit_ in ("break", "continue")},
}
# the iterables read by their call: the call's arguments are lowered, then read as items
_ITERATORS = {"range", "zip", "enumerate", "reversed", "list", "tuple"}


class Flow:
    """Part of the lowering (gradcli.language.lower): loops, comprehensions, del, assert."""

    # (made on first use; not through self.__dict__, which would move the lowering's attributes
    # to a dict and slow every later read of them)
    known_values: dict | None = None  # value id -> its Literal, once computed before evaluation
    while_passes: dict | None = None  # a while statement's id -> the passes unrolled
    while_base: dict | None = None  # a top-level while statement's id -> the stack before it

    # ------------------------------------------------------------------ known before evaluation
    def known_literal(self, value):
        """A value computed from constants and the values the program writes for its inputs
        (`x = torch.tensor([1., 2.])`), as a Literal; None where it depends on a value given from
        outside (--set, a file) or is too large to compute before evaluation (`self.unknown_why`
        says which). Values computed so are kept: a while loop's condition reads its counter's
        last value, not the whole chain again."""
        if isinstance(value, Literal):
            return value
        graph = self.graph
        known = self.known_values
        if known is None:
            known = self.known_values = {}
        if type(value) is not int:
            return None
        new, pending = set(), [value]
        while pending:  # the equations not computed yet (a walk, no recursion)
            i = pending.pop()
            if i in known or i in new:
                continue
            eq = graph.equations[i]
            if graph.shapes[i] is None or eq.op.name == "input" and eq.params.get("name") in self.feeds:
                self.unknown_why = "data"
                return None
            new.add(i)
            if len(new) > _KNOWN_EQUATIONS:
                self.unknown_why = "size"
                return None
            pending.extend(eq.inputs)
        if sum(math.prod(graph.shapes[i]) for i in new) > _KNOWN_ELEMENTS:
            self.unknown_why = "size"
            return None
        if new:
            self.compute_known(sorted(new), known)
        eq = graph.equations[value]
        return Literal(np.asarray(known[value], dtype=np.float64), eq.pos, eq.op.boolean)

    def known_or_given(self, value):
        """`value` as a Literal where it is known before evaluation (known_literal: a value the
        program writes, `learning_rate = 1e-3`), else as it is (a value given from outside stays one)."""
        known = self.known_literal(value) if type(value) is int else None
        return value if known is None else known

    def compute_known(self, order: list, known: dict) -> None:
        """The values of the equations `order` (sorted), their other inputs in `known`: each op's
        forward on NumPy, one by one (the engine's run would walk the whole graph each time); an
        op that cannot is left to the engine."""
        graph = self.graph
        with np.errstate(all="ignore"):
            try:
                for i in order:
                    eq = graph.equations[i]
                    known[i] = np.asarray(eq.params["value"] if not eq.inputs else
                                          eq.op.forward(np, *[known[j] for j in eq.inputs], **eq.params),
                                          dtype=np.float64)
            except Exception:  # (an op the engine evaluates its own way, or an error it places)
                given = {j: known[j] for i in order for j in graph.equations[i].inputs if j in known}
                known.update(run(graph, order, overrides=given))

    def known_truth(self, value, pos: Pos, statement: str = "if") -> bool:
        """The truth of a condition known before evaluation (see known_literal); a condition on a
        value given from outside is data, refused with the `where` rewrite."""
        truth = self.constant_truth(value) if type(value) is not int else None
        if truth is not None:
            return truth
        known = self.known_literal(value)
        if known is not None and known.value.size == 1:
            return bool(known.value.reshape(()))
        if known is not None:
            raise self.error("the truth value of an array with more than one element is ambiguous (as in "
                             "NumPy): use .all() or .any(), or write where(condition, a, b)", pos)
        if getattr(self, "unknown_why", "data") == "size":
            raise self.error(f"this condition needs more than {_KNOWN_EQUATIONS:,} operations or "
                             f"{_KNOWN_ELEMENTS:,} numbers to be computed before evaluation: "
                             + DATA_CONDITION[statement].partition(": ")[2], pos)
        raise self.error(DATA_CONDITION[statement], pos)

    def known_int(self, value, what: str, pos: Pos) -> int:
        """An integer known before evaluation: a constant, or one computed from the values the
        program writes (`n_steps = 100; range(n_steps)`, as a while loop's counter is); one given
        from outside (--set, a file) is data, and refused."""
        if type(value) is int and not isinstance(self.constant_value(value), Literal):
            known = self.known_literal(value)
            if known is None:
                why = ("needs too much work to be computed before evaluation"
                       if getattr(self, "unknown_why", "data") == "size" else "depends on a value given from outside")
                raise self.error(f"{what} must be known before evaluation: this one {why} (--set, a file); "
                                 "write the number in the program", pos)
            value = known
        return self.static_int(value, what, pos)

    # ------------------------------------------------------------------ iteration
    def iteration_parts(self, node) -> tuple[str, list]:
        """How a loop's iterable is read: its kind and the expressions lowered for it."""
        if isinstance(node, ast.Call) and not node.method and node.func in _ITERATORS:
            if node.func == "enumerate":
                start = [kw.value for kw in node.keywords if kw.name == "start"]
                return "enumerate", node.args[:1] + start
            if node.keywords:
                raise self.error(f"{node.func}() with keywords is not supported in a loop", node.pos)
            # (a list iterated is its items, as a tuple's: `zip([w, b], grads)` of values of two shapes)
            return node.func, [ast.Tuple(a.items, a.pos) if isinstance(a, ast.Array) else a for a in node.args]
        if isinstance(node, ast.Call) and not node.args[node.method:] and not node.keywords:
            base, _, method = node.func.rpartition(".")
            if method in ("items", "keys", "values") and (node.method or base):
                return method, node.args[:1] if node.method else [ast.Name(base, node.pos)]
        if isinstance(node, ast.Array):  # a list display iterated is its items (`for name in ["w", "b"]`)
            return "items of", [ast.Tuple(node.items, node.pos)]
        return "items of", [node]

    def iteration_items(self, kind: str, values: list, node, scope: Scope) -> list:
        """The items a loop runs over, from its iterable's parts (see iteration_parts)."""
        pos = node.pos
        if kind == "range":
            bounds = [self.known_int(v, "a range() bound", pos) for v in values]
            if not 1 <= len(bounds) <= 3 or (len(bounds) == 3 and bounds[2] == 0):
                raise self.error("range() takes 1 to 3 integers, the step not 0", pos)
            if len(range(*bounds)) > self.max_steps:
                raise self.error(f"the program expands to more than {self.max_steps:,} steps of lowering "
                                 "(a for loop is unrolled)", pos)
            return [Literal(np.float64(k), pos) for k in range(*bounds)]
        if kind in ("items", "keys", "values"):
            mapping = values[0]
            if not isinstance(mapping, DictValue):
                raise self.error(f".{kind}() is read of a dict written in the program", pos)
            keys = [Text(k, pos) for k in mapping.keys]
            return {"keys": keys, "values": list(mapping.items),
                    "items": [TupleValue([k, v], pos) for k, v in zip(keys, mapping.items)]}[kind]
        if kind == "zip":
            columns = [self.items_of(v, pos, scope) for v in values]
            return [TupleValue(list(row), pos) for row in zip(*columns)]
        if kind == "enumerate":
            if not values:
                raise self.error("enumerate() takes the sequence to number", pos)
            start = self.static_int(values[1], "enumerate's start", pos) if len(values) > 1 else 0
            return [TupleValue([Literal(np.float64(start + k), pos), item], pos)
                    for k, item in enumerate(self.items_of(values[0], pos, scope))]
        if kind in ("reversed", "list", "tuple"):
            if len(values) != 1:
                raise self.error(f"{kind}() takes one sequence here", pos)
            items = self.items_of(values[0], pos, scope)
            return items[::-1] if kind == "reversed" else items
        return self.items_of(values[0], pos, scope)

    def items_of(self, value, pos: Pos, scope: Scope) -> list:
        """The items of a tuple or list, a dict's keys, or an array's rows."""
        if isinstance(value, TupleValue):
            return list(value.items)
        if isinstance(value, DictValue):
            return [Text(k, pos) for k in value.keys]
        if isinstance(value, Literal) and value.value.ndim:
            return [Literal(row, pos, value.boolean) for row in value.value]
        if type(value) is int and self.graph.shapes[value]:
            return self.unpack(value, self.graph.shapes[value][0], pos, scope)
        if type(value) is int and self.graph.shapes[value] is None:
            if self.missing:  # an input not given: that is the error to report
                raise self.missing_inputs_error()
            raise self.error("a loop runs over values whose number is known before evaluation: this one's "
                             "shape is not known", pos)
        raise self.error("a loop runs over range(N), a tuple or a list, a dict, zip(...) or enumerate(...) "
                         "of them, or an array's rows: not over a single number", pos)

    def loop_items(self, stmt: ast.For, scope: Scope) -> list:
        """The items a for statement runs over, known before evaluation."""
        self.mark_loop_body(stmt)
        kind, parts = self.iteration_parts(stmt.iterable)
        return self.iteration_items(kind, [self.lower(part, scope) for part in parts], stmt.iterable, scope)

    def expand_for(self, stmt: ast.For, pending: list, top: Scope) -> None:
        """A top-level for loop, unrolled onto `pending`: each pass's body after a marker that
        binds its names and marks the equations it makes with the pass (a LoopPass frame)."""
        items = self.loop_items(stmt, top)
        self.steps_left -= len(items)
        if self.steps_left < 0:
            raise self.error(f"the program expands to more than {self.max_steps:,} steps of lowering "
                             "(a for loop is unrolled)", stmt.pos)
        pending.append(("end loop", top.stack, stmt))
        for number in range(len(items), 0, -1):
            pending.extend(reversed(stmt.body))
            pending.append(("loop", stmt, items[number - 1], number, top.stack))

    def expand_while(self, stmt: ast.While, pending: list, top: Scope) -> None:
        """One more pass of a top-level while loop while its condition, known before evaluation, holds."""
        if self.while_base is None:
            self.while_base = {}
        if self.while_passes is None or id(stmt) not in self.while_passes:  # (its first pass: the stack before it)
            self.while_base[id(stmt)] = top.stack
        if self.known_truth(self.lower(stmt.condition, top), stmt.condition.pos, "while"):
            self.unroll_once(stmt)
            top.stack = self.while_base[id(stmt)] + (LoopPass(stmt.pos, self.while_passes[id(stmt)]),)
            pending.append(stmt)
            pending.extend(reversed(stmt.body))
        else:
            top.stack = self.while_base.pop(id(stmt))
            self.while_passes.pop(id(stmt), None)

    def loop_marker(self, marker: tuple, top: Scope) -> None:
        if marker[0] == "end loop":
            top.stack = marker[1]
            return
        _, loop, item, number, base = marker
        self.bind_loop_names(loop.names, item, loop.pos, self.globals, top)
        binding = ""
        if len(loop.names) == 1 and isinstance(item, Literal) and item.value.ndim == 0:
            binding = f"{loop.names[0][0]} = {float(item.value):g}"
        top.stack = base + (LoopPass(loop.pos, number, binding),)

    def bind_loop_names(self, names: list, item, pos: Pos, table: dict, scope: Scope) -> None:
        if len(names) == 1:
            table[names[0][0]] = item
            return
        for (name, _), value in zip(names, self.unpack(item, len(names), pos, scope)):
            table[name] = value

    # ------------------------------------------------------------------ comprehensions
    def comprehension_start(self, node: ast.Comprehension, scope: Scope, work: list, mark: int, flow_kind) -> None:
        """`[e for x in xs if c]`: the items, each bound in a scope of its own, then the elements
        gathered into a list (a tuple value) or a dict. Driven by the work stack (no recursion)."""
        work.append((flow_kind, ("collect", node, mark), scope))
        self.push_clause(node, 0, scope, work, flow_kind)

    def push_clause(self, node: ast.Comprehension, k: int, scope: Scope, work: list, flow_kind) -> None:
        if k == len(node.clauses):
            if node.kind == "dict":
                work.append((_EVAL, node.element[1], scope))
                work.append((_EVAL, node.element[0], scope))
            else:
                work.append((_EVAL, node.element, scope))
            return
        kind, parts = self.iteration_parts(node.clauses[k][1])
        work.append((flow_kind, ("iterate", node, k, kind, len(parts)), scope))
        for part in reversed(parts):
            work.append((_EVAL, part, scope))

    def flow_step(self, step: tuple, values: list, scope: Scope, work: list, flow_kind) -> None:
        """One step of a comprehension on the work stack (see comprehension_start), or a local tensor made."""
        what, node = step[0], step[1]
        if what == "tensor":  # (see Statements.push_body)
            if isinstance(values[-1], Literal):
                values[-1] = self.materialize(values[-1], scope, node)
        elif what == "iterate":
            _, _, k, kind, n = step
            parts = values[len(values) - n:]
            del values[len(values) - n:]
            items = self.iteration_items(kind, parts, node.clauses[k][1], scope)
            for item in reversed(items):
                work.append((flow_kind, ("bind", node, k, item), scope))
        elif what == "bind":
            _, _, k, item = step
            names, iterable, conditions = node.clauses[k]
            inner = Scope({}, scope.stack, scope.active, scope)
            self.bind_loop_names(names, item, iterable.pos, inner.locals, scope)
            if conditions:
                work.append((flow_kind, ("filter", node, k, 0), inner))
                work.append((_EVAL, conditions[0], inner))
            else:
                self.push_clause(node, k + 1, inner, work, flow_kind)
        elif what == "filter":
            _, _, k, j = step
            conditions = node.clauses[k][2]
            if not self.known_truth(values.pop(), conditions[j].pos, "comprehension"):
                return
            if j + 1 < len(conditions):
                work.append((flow_kind, ("filter", node, k, j + 1), scope))
                work.append((_EVAL, conditions[j + 1], scope))
            else:
                self.push_clause(node, k + 1, scope, work, flow_kind)
        else:  # "collect"
            mark = step[2]
            items = values[mark:]
            del values[mark:]
            if node.kind == "dict":
                keys = [self.dict_key(key, node) for key in items[0::2]]
                values.append(DictValue(keys, items[1::2], node.pos))
            else:
                values.append(TupleValue(items, node.pos))

    def type_name(self, value, pos: Pos) -> TypeName:
        """`type(x)`: a label naming the type the library would give x (a tf.Variable is a
        ResourceVariable, another TensorFlow value an EagerTensor, PyTorch's a Tensor, ...)."""
        if isinstance(value, (Text, TupleValue, DictValue)) or value is NONE:
            name = {Text: "str", TupleValue: "tuple", DictValue: "dict"}.get(type(value), "NoneType")
        elif type(value) is not int and not isinstance(value, Literal):
            name = "function"
        elif value in self.variables:
            name = "ResourceVariable"
        else:
            modules = {module.partition(".")[0] for module in self.aliases.values()}
            name = next((kind for library, kind in (("tensorflow", "EagerTensor"), ("torch", "Tensor"),
                                                    ("jax", "ArrayImpl")) if library in modules), "ndarray")
        return TypeName(name, pos)

    # ------------------------------------------------------------------ while, del, assert
    def unroll_once(self, stmt) -> None:
        """One more pass of a while loop, counted against the expansion limit."""
        self.mark_loop_body(stmt)
        passes = self.while_passes
        if passes is None:
            passes = self.while_passes = {}
        passes[id(stmt)] = passes.get(id(stmt), 0) + 1
        self.steps_left -= 1 + len(stmt.body)
        if self.steps_left < 0 or passes[id(stmt)] > MAX_WHILE_PASSES:
            limit = (f"{MAX_WHILE_PASSES:,} passes of a while loop" if self.steps_left >= 0
                     else f"{self.max_steps:,} steps of lowering")
            raise self.error(f"the program expands to more than {limit} (the loop is unrolled: does its "
                             "condition become false?)", stmt.pos)

    def delete(self, stmt: ast.Delete, scope: Scope) -> None:
        """`del a`: a is unbound; a later use is an error that names the del."""
        for name, pos in stmt.names:
            if scope.locals is not None:
                if name not in scope.locals or isinstance(scope.locals[name], Deleted):
                    raise self.error(f"name '{name}' is not defined here, so it cannot be deleted", pos)
                scope.locals[name] = Deleted(pos)
            elif name in self.globals:
                del self.globals[name]
                self.deleted[name] = pos
            else:
                raise self.error(f"name '{name}' is not defined, so it cannot be deleted", pos)

    def refuse_deleted(self, name: str, found, pos: Pos) -> None:
        """The error for a use of a name after `del` (`found`: its local binding, or None)."""
        where = found.pos if isinstance(found, Deleted) else \
            self.deleted.get(name) if found is None and name not in self.globals else None
        if where is not None:
            raise self.error(f"'{name}' is used after `del {name}` (line {where.line})", pos)

    def check_assert(self, stmt: ast.Assert, scope: Scope) -> None:
        """`assert c, message`: checked before evaluation, where c is known (see known_literal); a
        condition on values given from outside is checked after evaluation, at each evaluation
        (gradcli.api), never skipped. A false one is an error at the assert."""
        self.check_condition(self.lower(stmt.condition, scope), stmt.pos, scope,
                             lambda: self.assert_message(stmt, scope))

    def check_condition(self, condition, pos: Pos, scope: Scope, message) -> None:
        """A condition asserted at `pos` (`message()`: the error's text), checked as `assert` is."""
        truth = self.constant_truth(condition) if type(condition) is not int else None
        if truth is None:
            known = self.known_literal(condition)
            if known is None:
                self.graph.assertions = (*self.graph.assertions, (self.materialize(condition, scope, pos), message(), pos))
                return
            truth = bool(np.all(known.value))
        if not truth:
            raise self.error(message(), pos)

    def assert_message(self, stmt: ast.Assert, scope: Scope) -> str:
        if stmt.message is None:
            text = self.source.text[stmt.condition.pos.start:stmt.condition.pos.end] \
                if stmt.condition.pos.start >= 0 else "the condition"
            return f"assertion failed: {text}"
        if isinstance(stmt.message, ast.FString):  # `f'i is {i}'`: its fields' values, known before evaluation
            text = []
            for part in stmt.message.parts:
                known = self.known_literal(self.lower(part.value, scope)) if isinstance(part, ast.Field) else None
                text.append(part if isinstance(part, str) else f"{part.text}=" * part.shown +
                            (_shown(known.value) if known is not None else "{" + part.text + "}"))
            return "assertion failed: " + "".join(text)
        message = self.lower(stmt.message, scope)
        if isinstance(message, Text):
            return f"assertion failed: {message.value}"
        return "assertion failed"


def _shown(value: np.ndarray) -> str:
    """A value in an assert's message, as Python prints a loop counter (2, not 2.0) or a number."""
    if value.ndim == 0:
        number = float(value)
        return str(int(number)) if number.is_integer() else repr(number)
    return np.array2string(value)
