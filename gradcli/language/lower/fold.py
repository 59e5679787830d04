"""Constants while lowering: a value computed from constants alone (`5 * 4`, `x.shape[0] * 2`) read
as a number where the program must write one (a shape, an axis, an index), array and tuple
literals, and shapes. The one place the lowering runs the engine (`constant_value`)."""
from __future__ import annotations

import math

import numpy as np

from gradcli.errors import Pos
from gradcli.engine.evaluate import needed_equations, run
from gradcli.language import syntax as ast
from gradcli.language.lower.transforms import FUNCTION_VALUES
from gradcli.language.lower.values import NONE, Literal, Scope, Text, TupleValue
from gradcli.ops import OPS, fmt_shape


class Constants:
    """Part of the lowering (gradcli.language.lower): reads `self.graph`; uses `self.error`,
    `self.emit`, `self.materialize`, `self.missing_inputs_error`."""

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

    def static_int(self, value, what: str, pos: Pos | None = None) -> int:
        value = self.constant_value(value)
        if not isinstance(value, Literal) or value.value.ndim != 0:
            where = value.pos if isinstance(value, (Literal, Text, TupleValue)) else pos
            raise self.error(f"{what} must be a constant integer, written in the program", where)
        number = float(value.value)
        if not number.is_integer():
            raise self.error(f"{what} must be an integer, not {number:g}", value.pos)
        return int(number)

    def shape_of(self, value) -> tuple:
        if isinstance(value, Literal):
            return value.value.shape
        if isinstance(value, TupleValue):
            return (len(value.items),)
        if isinstance(value, Text):
            raise self.error("a string has no shape", value.pos)
        if type(value) is not int:  # a function, an object, a distribution: no array
            raise self.error("this value is not an array: it has no shape (nor .T, .ndim, .size)", getattr(value, "pos", None))
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

    def tuple_arithmetic(self, node: ast.Call, values: list, scope: Scope):
        """Python's arithmetic of tuples, where both operands (or, for `*`, one) are tuples: `+`
        joins them (`x.shape + (1,)`, `(n,) + x.shape`), `*` by an integer repeats, `==` and `!=`
        compare them whole; the others are Python's TypeError. None where an operand is no tuple
        (a tuple beside an array is an array, as NumPy reads it)."""
        if node.symbol is None or len(values) != 2 or (
                type(values[0]) is int and type(values[1]) is int and not self.pasted):
            return None  # (two values of the graph: arrays, the common case)
        if (listed := self.list_arithmetic(node, values, scope)) is not None:
            return listed
        left, right = (_tuple_items(v) for v in values)
        if left is None and right is None:
            return None
        if node.symbol == "*" and (left is None or right is None):
            items, count = (left, values[1]) if right is None else (right, values[0])
            count = self.constant_value(count)
            if not isinstance(count, Literal) or count.from_tuple:
                return None  # a tuple times an array: NumPy's elementwise product
            if count.value.ndim != 0 or not float(count.value).is_integer():
                raise self.error("a tuple repeats only by an integer (tuple * n), as in Python", node.pos)
            return self.tuple(ast.Tuple([], node.pos), items * max(int(count.value), 0))
        if left is None or right is None:
            return None
        if node.symbol == "+":
            return self.tuple(ast.Tuple([], node.pos), left + right)
        if node.symbol in ("==", "!="):
            known = [self.constant_value(v) for v in left + right]
            if all(isinstance(v, Literal) for v in known):
                same = len(left) == len(right) and all(
                    np.array_equal(a.value, b.value) for a, b in zip(known[:len(left)], known[len(left):]))
                return Literal(np.float64(same == (node.symbol == "==")), node.pos, True)
        raise self.error(f"'{node.symbol}' of two tuples: Python's tuples join with + and compare whole with "
                         f"== and !=; for arithmetic of their numbers write np.array(...) {node.symbol} "
                         "np.array(...)", node.pos)

    def list_arithmetic(self, node: ast.Call, values: list, scope: Scope):
        """`[a, b] + [c]`, `a + [c]` and `[0.0] * 3`: the language reads `[...]` as an array and adds
        or multiplies its numbers (the contract), but pasted code (a program that imports a library)
        means Python's lists, which join and repeat: there a list display, or a name bound to one,
        joins (`np.concatenate` of the two, axis 0: `np.array` of the joined list) and repeats by an
        integer written in the program. None: the array reading."""
        if not self.pasted or node.symbol not in ("+", "*") or len(node.args) != 2:
            return None
        lists = [type(a) is ast.Array or (isinstance(v, Literal) and v.listed) or (type(v) is int and v in self.list_ids)
                 for a, v in zip(node.args, values)]
        if node.symbol == "+" and all(lists):
            return self.joined_list(node, values, scope)
        if node.symbol == "*" and any(lists) and not all(lists):
            count = node.args[lists.index(False)]
            text = self.source.text[count.pos.start:count.pos.end] if count.pos and count.pos.start >= 0 else ""
            if type(count) is ast.Number and not count.boolean and text.isdigit():
                return self.joined_list(node, [values[lists.index(True)]] * int(text), scope)
            if type(node.args[lists.index(True)]) is not ast.Array:
                raise self.error(f"a list * {text or 'n'} reads two ways: Python repeats the list, gradcli would "
                                 "multiply its numbers; write np.tile(a, n) to repeat, or np.array(a) * n to "
                                 "multiply", node.pos)
        return None

    def joined_list(self, node: ast.Call, items: list, scope: Scope):
        """Python's join of lists (read as one array): constants folded, else `concatenate`."""
        if not items:
            return Literal(np.zeros((0,)), node.pos)
        if all(isinstance(v, Literal) for v in items):
            joined = Literal(np.concatenate([v.value for v in items], axis=0), node.pos, all(v.boolean for v in items))
        else:
            ids = tuple(self.materialize(v, scope) for v in items)
            joined = self.emit(OPS["concatenate"], ids, {"axis": 0}, node.pos, node.symbol, scope)
            self.list_ids.add(joined)
            return joined
        joined.listed = True
        return joined

    def array(self, node, items: list, scope: Scope | None, as_value: bool = False):
        items = [self.flatten_tuple(v) for v in items]
        if not as_value and type(node) is ast.Array and not self.stackable(items, self.pasted):
            # `[kernel, bias]`, `[(w1, b1), (w2, b2)]`, `in_axes=[0, None]`: Python's list, no array
            # (a tuple value, which is an error where it is used as one array)
            return TupleValue(items, node.pos)
        if all(isinstance(v, Literal) for v in items):
            shapes = {v.value.shape for v in items}
            if len(shapes) > 1:
                raise self.error("ragged array literal: its items have shapes "
                                 + ", ".join(fmt_shape(s) for s in sorted(shapes)), node.pos)
            numbers = self.graph.numbers
            if numbers is not None and items:  # (a policy watching the numbers: gradcli.cli.lines)
                value = numbers.array_of([v.value for v in items])
            elif items and items[0].value.ndim == 0:
                value = np.array([float(v.value) for v in items])
            else:
                value = np.array([v.value for v in items]).reshape((len(items),) + (shapes.pop() if items else ()))
            if as_value:
                return self.graph.add_constant(value, node.pos, scope.stack if scope else ())
            made = Literal(value, node.pos, bool(items) and all(v.boolean for v in items))
            made.listed = type(node) is ast.Array
            return made
        if any(isinstance(v, FUNCTION_VALUES) for v in items):  # (lax.switch's branches)
            return TupleValue(items, node.pos)
        ids = tuple(self.materialize(v, scope, node.pos) for v in items)
        stacked = self.emit(OPS["stack"], ids, {}, node.pos, "[...]", scope)
        if self.pasted and type(node) is ast.Array:
            self.list_ids.add(stacked)
        return stacked

    def stackable(self, items: list, pasted: bool) -> bool:
        """Whether a list display's items stack into one array: no None and no tf.Variable among them
        (a list of variables is a list: lists.py), and, in pasted code (Python's lists), arrays or
        tuples of arrays of one shape (the language's ragged literal is an error where it stands)."""
        if self.holds_variables(items) or any(v is NONE or isinstance(v, Text) for v in items):  # (["w", "b"])
            return False
        if not pasted:
            return True
        shapes = set()
        for item in items:
            if isinstance(item, TupleValue):
                inner = {self.stack_shape(v) for v in item.items}
                if len(inner) != 1 or None in inner:
                    return False
                shapes.add((len(item.items),) + inner.pop())
            else:
                shapes.add(self.stack_shape(item))
        return len(shapes) <= 1 and None not in shapes

    def stack_shape(self, value) -> tuple | None:
        """An array's shape, None for what is no array (None, a function, a tuple, a dict)."""
        if isinstance(value, Literal):
            return value.value.shape
        return self.graph.shapes[value] if type(value) is int else None

    def flatten_tuple(self, value):
        """A tuple inside an array literal, `[(1, 2), (3, 4)]`, is one of its rows."""
        if isinstance(value, TupleValue) and all(isinstance(v, Literal) for v in value.items) and (
                not self.pasted or len({v.value.shape for v in value.items}) <= 1):
            return self.array(ast.Array([], value.pos), value.items, None)
        return value  # (in pasted code a tuple of arrays of several shapes stays a tuple: `[(w, b)]`)


def _tuple_items(value) -> list | None:
    """The items of a value written as a tuple (`(1, 3)`, `x.shape`, `return a, b`), else None."""
    if isinstance(value, TupleValue):
        return list(value.items)
    if isinstance(value, Literal) and value.from_tuple and value.value.ndim >= 1:
        return [Literal(row, value.pos, value.boolean) for row in value.value]
    return None
