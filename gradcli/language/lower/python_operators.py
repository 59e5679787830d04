"""Python's bitwise operators, membership tests, string comparisons and `*args` / `**kwargs`, as
pasted NumPy / PyTorch / JAX code uses them.

`&`, `|`, `^`, `~` of truth values (comparisons, masks, True/False) are NumPy's logical_and,
logical_or, logical_xor and logical_not (no gradient); of integers known before evaluation they
give Python's bitwise result, as do `<<` and `>>`; of floats they are refused, as NumPy and
PyTorch refuse them. `x in c` / `x not in c` is known before evaluation: a dict's keys, a tuple's
or a list's items, a string's text, a range; of an array, NumPy's `(arr == x).any()`.
`f(*xs, **d)`, `[*a, b]` and `a, *rest = t` spread values known as tuples, lists, an array's rows
or a dict's items; `def f(*args, **kwargs)` binds the arguments left over to a tuple and a dict.
The python dialect (gradcli/language/dialects/python.py) maps the operators' spellings here.
"""
from __future__ import annotations

import operator

import numpy as np

from gradcli.errors import Pos
from gradcli.language import syntax as ast
from gradcli.language.ast_builder import BINARY_OPS
from gradcli.language.lower.integers import every_written, written_boolean, written_integer
from gradcli.language.lower.transforms import DictValue
from gradcli.language.lower.values import Literal, Scope, Text, TupleValue
from gradcli.ops import OPS

# each operator's Python function (on integers), and the op it is on truth values
_PYTHON_BITWISE = {"bitwise_and": operator.and_, "bitwise_or": operator.or_, "bitwise_xor": operator.xor,
                   "left_shift": operator.lshift, "right_shift": operator.rshift, "invert": operator.invert}
_LOGICAL = {"bitwise_and": "logical_and", "bitwise_or": "logical_or", "bitwise_xor": "not_equal",
            "invert": "logical_not"}
_SPELLED = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^", "left_shift": "<<", "right_shift": ">>",
            "invert": "~"}
_EXACT_INTEGERS = 2 ** 53  # the integers float64 holds exactly (gradcli computes in float64)
# the operators whose result on integers is an integer (`n = n & 3`, `k = 2 * n + 1`)
_INTEGER_CLOSED = frozenset({"&", "|", "^", "<<", ">>", "~", "+", "-", "*", "//", "%"})
_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
            "!=": operator.ne}


def _size(shape) -> int:
    """The number of elements of a value of this shape (None, not known yet: taken as one)."""
    return 1 if shape is None else int(np.prod(shape, dtype=np.int64))


class PythonOperators:
    """Part of the lowering (gradcli.language.lower): bitwise operators and `in`."""

    # ------------------------------------------------------------------ & | ^ ~ << >>
    def bitwise_operator(self, name: str, node: ast.Call, values: list, scope: Scope):
        spelled = node.symbol or _SPELLED[name]
        if node.keywords:
            raise self.error(f"{node.func}() takes its arrays alone here (no keywords)", node.keywords[0].pos)
        if len(values) != (1 if name == "invert" else 2):
            raise self.error(f"'{spelled}' takes {1 if name == 'invert' else 2} operand(s)", node.pos)
        if name == "invert" and isinstance(node.args[0], ast.Number) and node.args[0].boolean:
            raise self.error("~ of True or False is Python's integer invert (~True is -2, deprecated since "
                             "Python 3.12): write `not`", node.pos)
        kinds = [self.bitwise_kind(value, arg, spelled) for value, arg in zip(values, node.args)]
        if all(kind == "boolean" for kind in kinds) and name in _LOGICAL:
            if all(isinstance(v, Literal) for v in values):
                truths = [v.value != 0 for v in values]
                return Literal(np.asarray(_PYTHON_BITWISE[name](*truths) if name != "invert" else ~truths[0],
                                          dtype=np.float64), node.pos, True)
            op = OPS[_LOGICAL[name]]  # (the operands' truth is read here: no check_truth_values)
            return self.emit(op, tuple(self.materialize(v, scope, node.pos) for v in values), dict(op.defaults),
                             node.pos, spelled, scope)
        known = [self.known_literal(v) if type(v) is int else v for v in values]
        for value, arg in zip(known, node.args):
            if value is None:
                raise self.error(f"'{spelled}' of a mask or an integer that is not known before evaluation (it "
                                 "depends on a value given from outside): Python's bitwise result needs the "
                                 "integer; compare to make a mask instead", arg.pos)
        integers = []
        for value, arg in zip(known, node.args):
            number = value.value
            if not np.all(np.mod(number, 1) == 0):
                raise self.float_refusal(spelled, arg.pos)
            if number.size and (not np.all(np.isfinite(number)) or np.max(np.abs(number)) >= _EXACT_INTEGERS):
                raise self.error(f"'{spelled}' of an integer beyond 2**53, which float64 does not hold exactly",
                                 arg.pos)
            integers.append(number.astype(np.int64))
        if name in ("left_shift", "right_shift") and np.any(integers[1] < 0):
            raise self.error("negative shift count (Python's ValueError)", node.args[1].pos)
        if name == "left_shift" and integers[1].size and np.max(integers[1]) > 52:
            raise self.error("a shift by more than 52 places gives an integer beyond 2**53, which float64 "
                             "does not hold exactly", node.args[1].pos)
        result = _PYTHON_BITWISE[name](*integers)
        if np.size(result) and np.max(np.abs(result)) >= _EXACT_INTEGERS:
            raise self.error(f"'{spelled}' gives an integer beyond 2**53, which float64 does not hold exactly",
                             node.pos)
        return Literal(np.asarray(result, dtype=np.float64), node.pos)

    def logical_xor(self, node: ast.Call, values: list, scope: Scope):
        """np.logical_xor(a, b), torch.logical_xor, tf.math.logical_xor: true where exactly one is,
        as `a ^ b` of truth values (not_equal of the truths); a number's truth is its being nonzero,
        as NumPy and PyTorch read it. No gradient."""
        if node.keywords or len(values) != 2:
            raise self.error(f"{node.func}() takes two arrays (no keywords)", node.pos)
        if all(isinstance(v, Literal) for v in values):
            truth = (values[0].value != 0) != (values[1].value != 0)
            return Literal(np.asarray(truth, dtype=np.float64), node.pos, True)
        truths = []
        for value, arg in zip(values, node.args):
            truth = self.materialize(value, scope, arg.pos)
            if not self.graph.equations[truth].op.boolean:  # a number: its truth, `x != 0`
                truth = self.emit(OPS["logical_not"], (truth,), {}, arg.pos, "not", scope)
                truth = self.emit(OPS["logical_not"], (truth,), {}, arg.pos, "not", scope)
            truths.append(truth)
        return self.emit(OPS["not_equal"], tuple(truths), dict(OPS["not_equal"].defaults), node.pos, node.func, scope)

    def bitwise_kind(self, value, arg, spelled: str) -> str:
        """"boolean" (a truth value: a comparison's, a mask, True/False) or "integer" (written as
        one, or a number that Python's loops and len() give); a float is refused as NumPy refuses it."""
        if isinstance(value, Literal) and value.boolean or type(value) is int and self.graph.equations[value].op.boolean:
            return "boolean"
        if type(value) is int and written_boolean(self, arg):  # `m = torch.tensor([True, False])`: an input
            return "boolean"
        if isinstance(value, Literal) and value.value.ndim == 0 and float(value.value).is_integer() and not (
                isinstance(arg, ast.Number) and not written_integer(self, arg)):
            return "integer"  # (a loop's counter, len(x), x.shape[0])
        if isinstance(value, (Literal, int)) and _integer_written(self, arg):
            known = value if isinstance(value, Literal) else None
            if known is None or np.all(np.mod(known.value, 1) == 0):
                return "integer"
        if isinstance(value, (Literal, int)):
            raise self.float_refusal(spelled, arg.pos)
        raise self.error(f"'{spelled}' takes truth values (comparisons, masks) or integers, not this value",
                         getattr(value, "pos", None) or arg.pos)

    def float_refusal(self, spelled: str, pos):
        """NumPy's TypeError (ufunc 'bitwise_and' not supported for the input types) and PyTorch's
        NotImplementedError ("bitwise_and_cpu" not implemented for 'Float') of a float operand."""
        return self.error(f"'{spelled}' of a float value: NumPy and PyTorch refuse bitwise operators on floats "
                          f"(NumPy's ufunc is not supported for the input types); for a mask compare first, as "
                          f"in (x > 0) {spelled if spelled in ('&', '|', '^') else '&'} (x < 1); for a number write "
                          "an integer", pos)

    # ------------------------------------------------------------------ == of strings
    def identity_or_text(self, node: ast.Call, values: list, scope: Scope):
        """`a is None` (calls.py's identity_test), or `mode == kind` of values that are strings
        (names bound to them); None for a comparison of numbers."""
        if node.symbol in ("is", "is not"):
            return self.identity_test(node, values)
        if isinstance(values[0], Text) or isinstance(values[-1], Text):
            return self.text_comparison(node, values, scope)
        return None

    def text_comparison(self, node: ast.Call, values: list, scope: Scope):
        """`mode == "relu"`: Python's equality of two strings, known before evaluation. A string
        compared with a number or an array is refused (NumPy compares elementwise, PyTorch gives
        one False)."""
        left, right = values
        if not isinstance(left, Text) or not isinstance(right, Text):
            other = node.args[0] if not isinstance(left, Text) else node.args[1]
            raise self.error(f"'{node.symbol}' of a string and a value that is not one: compare strings with "
                             "strings", other.pos)
        return Literal(np.float64((left.value == right.value) == (node.symbol == "==")), node.pos, True)

    # ------------------------------------------------------------------ a < b < c
    def chained_comparison(self, node: ast.Call, values: list, scope: Scope):
        """`a < b <= c`: Python's `(a < b) and (b <= c)`, each operand computed once. A comparison
        before the last is read for its truth: known before evaluation, a False ends the chain as
        Python's `and` does; computed, it is `and`-ed with the rest as NumPy's logical_and (0/1, the
        reading of `and` of computed comparisons); of more than one element it is ambiguous, as in
        NumPy and PyTorch, and refused."""
        ops = node.symbol.split()
        result = None  # the computed truths met so far, and-ed
        for k, symbol in enumerate(ops):
            left, right = node.args[k], node.args[k + 1]
            pair = Pos(left.pos.line, left.pos.column, left.pos.start, right.pos.end)
            truth = self.compared(symbol, values[k], values[k + 1], left, right, pair, scope)
            size = truth.value.size if isinstance(truth, Literal) else _size(self.graph.shapes[truth])
            last = k == len(ops) - 1
            if size > 1 and last and result is not None:
                raise self.error(f"'{self.expression_text(pair)}' ends a chained comparison with an array of {size} "
                                 "elements after comparisons computed from data: Python gives False or this array "
                                 "by their truth; for an elementwise mask write (a < b) & (b < c)", pair)
            if size > 1 and not last:
                raise self.error(f"'{self.expression_text(pair)}' in a chained comparison is an array of {size} "
                                 "elements, whose truth value is ambiguous (Python reads a < b < c as (a < b) and "
                                 "(b < c), and NumPy raises ValueError): for an elementwise mask write "
                                 "(a < b) & (b < c)", pair)
            if isinstance(truth, Literal) and not last and result is None:
                if not truth.value.all():
                    return Literal(np.float64(0.0), node.pos, True)
                continue
            if result is None:
                result = truth
            elif isinstance(result, Literal) and isinstance(truth, Literal):
                result = Literal(np.asarray((result.value != 0) & (truth.value != 0), np.float64), node.pos, True)
            else:
                ids = (self.materialize(result, scope, node.pos), self.materialize(truth, scope, node.pos))
                result = self.emit(OPS["logical_and"], ids, dict(OPS["logical_and"].defaults), node.pos, "and", scope)
        return result

    def compared(self, symbol: str, left, right, left_node, right_node, pos: Pos, scope: Scope):
        """One comparison of a chain: of two values known before evaluation a Literal, else an equation."""
        if isinstance(left, Text) or isinstance(right, Text):
            if not (isinstance(left, Text) and isinstance(right, Text)):
                other = left_node if not isinstance(left, Text) else right_node
                raise self.error(f"'{symbol}' of a string and a value that is not one: compare strings with "
                                 "strings", other.pos)
            return Literal(np.float64(_COMPARE[symbol](left.value, right.value)), pos, True)
        if isinstance(left, Literal) and isinstance(right, Literal):
            try:
                truth = _COMPARE[symbol](left.value, right.value)
            except ValueError:  # (shapes that do not broadcast)
                raise self.error(f"'{symbol}' of arrays of shapes {left.value.shape} and {right.value.shape}, "
                                 "which do not broadcast", pos) from None
            return Literal(np.asarray(truth, np.float64), pos, True)
        op = OPS[BINARY_OPS[symbol]]
        ids = (self.materialize(left, scope, left_node.pos), self.materialize(right, scope, right_node.pos))
        return self.emit(op, ids, dict(op.defaults), pos, symbol, scope)

    # ------------------------------------------------------------------ in, not in
    def membership_test(self, node: ast.Call, values: list, scope: Scope):
        """`x in c`: a truth value known before evaluation, or NumPy's `(c == x).any()` of an array c."""
        item, container = values
        if type(container) is int:  # an array: NumPy's and PyTorch's __contains__
            if isinstance(item, (Text, TupleValue, DictValue)) or type(item) is not int and not isinstance(item, Literal):
                raise self.error(f"'{node.symbol}' of an array tests a number against its elements", node.args[0].pos)
            found = self.emit(OPS["equal"], (self.materialize(container, scope, node.pos),
                                             self.materialize(item, scope, node.pos)), dict(OPS["equal"].defaults),
                              node.pos, node.symbol, scope)
            found = self.emit(OPS["any"], (found,), dict(OPS["any"].defaults), node.pos, node.symbol, scope)
            if node.symbol == "not in":
                found = self.emit(OPS["logical_not"], (found,), {}, node.pos, node.symbol, scope)
            return found
        found = self.contained(item, container, node)
        return Literal(np.float64(found != (node.symbol == "not in")), node.pos, True)

    def contained(self, item, container, node: ast.Call) -> bool:
        """Python's `item in container` of values known before evaluation."""
        if isinstance(container, Text):
            if not isinstance(item, Text):
                raise self.error("'in <string>' requires a string on its left (Python's TypeError)", node.args[0].pos)
            return item.value in container.value
        if isinstance(container, DictValue):  # (a dict's keys are strings)
            return isinstance(item, Text) and item.value in container.keys
        if isinstance(container, TupleValue):
            return any(self.same_item(item, other, node) for other in container.items)
        if isinstance(container, Literal) and container.value.ndim:
            number = self.known_number(item, node)
            if container.value.ndim > 1 and (container.listed or container.from_tuple):
                raise self.error(f"'{node.symbol}' of a number in a list of lists: Python compares it with each row, "
                                 "never equal; write the rows' elements flat", node.args[1].pos)
            return bool(np.any(container.value == number))
        raise self.error(f"'{node.symbol}' needs a container known before evaluation: a dict, a tuple or a list, "
                         "a string, a range or an array", node.args[1].pos)

    def same_item(self, item, other, node: ast.Call) -> bool:
        """Python's `item == other` of one item of a tuple or a list, known before evaluation."""
        if isinstance(item, Text) or isinstance(other, Text):
            return isinstance(item, Text) and isinstance(other, Text) and item.value == other.value
        if item is other or type(item) is int and item == other:  # (Python's `in` tests identity first: `w in [w, b]`)
            return True
        left, right = (self.known_literal(v) if type(v) is int else v for v in (item, other))
        if not isinstance(left, Literal) or not isinstance(right, Literal):
            raise self.error(f"'{node.symbol}' compares with items that are not known before evaluation (they "
                             "depend on a value given from outside) or are not numbers", node.pos)
        if left.value.size != 1 or right.value.size != 1:
            raise self.error(f"'{node.symbol}' of an array in a list compares arrays, whose truth is ambiguous (as "
                             "in NumPy): compare them with (a == b).all()", node.pos)
        return float(left.value.reshape(())) == float(right.value.reshape(()))

    def known_number(self, item, node: ast.Call) -> float:
        known = self.known_literal(item) if type(item) is int else item
        if not isinstance(known, Literal):
            raise self.error(f"'{node.symbol}' tests a number known before evaluation here (not one given from "
                             "outside, --set or a file)", node.args[0].pos)
        if known.value.size != 1:
            raise self.error(f"'{node.symbol}' of an array in a list or a range: Python's truth of the comparison is "
                             "ambiguous (as in NumPy)", node.args[0].pos)
        return float(known.value.reshape(()))

    def membership_in_range(self, node: ast.Call, values: list, scope: Scope):
        """`x in range(a, b, s)`: whether x is one of range's integers (x known before evaluation)."""
        number = self.known_number(values[0], node)
        bounds = [self.known_int(v, "range()'s argument", arg.pos) for v, arg in zip(values[1:], node.args[1:])]
        if len(bounds) == 3 and bounds[2] == 0:
            raise self.error("range() arg 3 must not be zero (Python's ValueError)", node.args[3].pos)
        found = number.is_integer() and int(number) in range(*bounds)
        return Literal(np.float64(found != (node.symbol == "not in")), node.pos, True)


def _integer_written(lowering, node) -> bool:
    """Whether the program writes `node` as an integer (integers.written_integer), through the
    operators that keep integers and the top level's names assigned them (`n = 6; n &= 3; n | 8`)."""
    def look(n):
        if isinstance(n, ast.Call) and n.symbol in _INTEGER_CLOSED and not n.method:
            return n.args
        return written_integer(lowering, n)
    return every_written(lowering, node, look)


class PythonArguments:
    """Part of the lowering (gradcli.language.lower): `*` and `**` in calls, displays, targets and
    definitions (their AST: syntax.spread_call, spread_display, star_target, function_parameters)."""

    def spread_call(self, node: ast.Call, values: list, scope: Scope, work: list):
        """`f(a, *xs, k=v, **d)`: f called with xs's items after a, and d's items by name."""
        callee_kind, kinds, name = values[0].value.split(":", 2)
        if callee_kind == "name" and name == "print":  # (a print statement is statements.print_call's)
            raise self.error("print(...) inside an expression: a print is a statement, on its own line", node.pos)
        args, arg_values, keywords, keyword_values = [], [], [], []
        callee = None
        for kind, arg, value in zip(kinds, node.args[1:], values[1:len(node.args)]):
            if kind == "c":
                callee = value
            elif kind == "p":
                args.append(arg)
                arg_values.append(value)
            elif kind == "*":
                items = self.spread_items(value, arg, scope)
                args += [ast.Name("_", arg.pos)] * len(items)
                arg_values += items
            else:  # "d": `**d`
                if not isinstance(value, DictValue):
                    raise self.error("the argument after ** must be a dict (its keys strings written in the program)",
                                     arg.pos)
                keywords += [ast.Keyword(key, ast.Name("_", arg.pos), arg.pos) for key in value.keys]
                keyword_values += list(value.items)
        keywords, keyword_values = list(node.keywords) + keywords, values[len(node.args):] + keyword_values
        names = [kw.name for kw in keywords]
        for k, kw in enumerate(keywords):
            if kw.name in names[:k]:
                raise self.error(f"{name or 'the function'}() got multiple values for the argument '{kw.name}'",
                                 kw.pos)
        call = ast.Call(name or "<function>", args, node.pos, keywords, method=callee_kind == "method")
        if callee_kind == "value":
            return self.apply_function(callee, call, arg_values + keyword_values, scope, work)
        if callee_kind == "name" and "." in name:  # `self.forward(*xs)`, `obj.f(**d)`: a method of a value
            method = self.as_method(ast.Call(name, [], node.pos), scope)
            if method.method:
                call = ast.Call(method.func, method.args + args, node.pos, keywords, method=True)
                arg_values.insert(0, self.lower(method.args[0], scope))
        return self.call(call, arg_values + keyword_values, scope, work)

    def spread_items(self, value, arg, scope: Scope) -> list:
        """The items `*value` spreads: a tuple's or a list's, a dict's keys, an array's rows."""
        if isinstance(value, Text) or (isinstance(value, Literal) and value.value.ndim == 0) or (
                type(value) is int and self.graph.shapes[value] == ()):
            raise self.error("the value after * must be a tuple, a list, a dict or an array (Python's TypeError: "
                             "it is not iterable)", arg.pos)
        return self.items_of(value, arg.pos, scope)

    def dict_display(self, node: ast.Call, values: list, scope: Scope):
        """`{**d, "k": v}`: d's items, then the others in order; a key met again keeps its first place
        and takes the later value, as Python's dict does."""
        items: dict = {}
        rest = iter(zip(node.args[1:], values[1:]))
        for kind in values[0].value:
            arg, value = next(rest)
            if kind == "k":
                value_arg, item = next(rest)
                items[self.dict_key(value, arg)] = item
            elif not isinstance(value, DictValue):
                raise self.error("the value after ** in a dict display must be a dict (its keys strings written in "
                                 "the program)", arg.pos)
            else:
                items.update(zip(value.keys, value.items))
        return DictValue(list(items), list(items.values()), node.pos)

    def spread_display(self, node: ast.Call, values: list, scope: Scope):
        """`(*a, b)`, `[*a, b]`: the tuple (a list is one too) of a's items, then b."""
        items = []
        for kind, arg, value in zip(values[0].value, node.args[1:], values[1:]):
            items += self.spread_items(value, arg, scope) if kind == "*" else [value]
        return TupleValue(items, node.pos)

    def star_target(self, node: ast.Call, values: list, scope: Scope):
        """`a, *rest, z = t`: the tuple (t[0], t[1:-1] as a tuple, t[-1]) that (a, rest, z) unpack."""
        before, after = (int(n) for n in values[0].value.split(":"))
        items = self.spread_items(values[1], node.args[1], scope)
        if len(items) < before + after:
            raise self.error(f"not enough values to unpack (expected at least {before + after}, got {len(items)})",
                             node.pos)
        rest = TupleValue(items[before:len(items) - after], node.pos)
        return TupleValue(items[:before] + [rest] + items[len(items) - after:], node.pos)

    def starred_alone(self, node: ast.Call, values: list, scope: Scope):
        raise self.error(f"{node.symbol}{'x' if node.symbol == '*' else 'd'} spreads its items in a call's arguments, "
                         "a tuple or a list, or a starred assignment (a, *rest = t) only (Python's SyntaxError: can't "
                         "use starred expression here)", node.pos)

    def call_user(self, fn: ast.FuncDef, node: ast.Call, values: list, scope: Scope, work: list, defined_in):
        """A call of the program's function (interpret.py's), `def f(*args, **kwargs)` first given
        its arguments left over as a tuple and a dict (this class stands before the interpreter's)."""
        if fn.variadic is not None:
            node, values = self.variadic_arguments(fn, node, values)
        return super().call_user(fn, node, values, scope, work, defined_in)

    def variadic_arguments(self, fn: ast.FuncDef, node: ast.Call, values: list) -> tuple[ast.Call, list]:
        """The call of `def f(a, *args, b=1, **kwargs)` with the arguments past f's positional
        parameters given as the tuple `args`, and the keywords that name no parameter as the dict
        `kwargs` (each given by name: the call then binds as any other)."""
        positional, star, double = fn.variadic
        count = len(node.args)
        if star is None and count > positional:
            raise self.error(f"{fn.name}() takes {positional} positional argument{'s' * (positional != 1)}, got "
                             f"{count}", node.pos)
        args, arg_values = node.args[:positional], values[:min(count, positional)]
        named = {p for p, _ in fn.params} - {star, double}
        keywords, keyword_values, extra, extra_values = [], [], [], []
        for kw, value in zip(node.keywords, values[count:]):
            if kw.name in named or double is None:
                keywords.append(kw)
                keyword_values.append(value)
            else:
                extra.append(kw.name)
                extra_values.append(value)
        if star is not None:
            keywords.append(ast.Keyword(star, ast.Name("_", node.pos), node.pos))
            keyword_values.append(TupleValue(values[positional:count] if count > positional else [], node.pos))
        if double is not None:
            keywords.append(ast.Keyword(double, ast.Name("_", node.pos), node.pos))
            keyword_values.append(DictValue(extra, extra_values, node.pos))
        return ast.Call(node.func, args, node.pos, keywords, node.symbol, node.method), arg_values + keyword_values
