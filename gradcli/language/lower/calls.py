"""Calls: which op a call means (a user function is the interpreter's; a library's spelling is
read by its dialect), and binding the written arguments to the op's signature: positional and
keyword arguments, defaults, static parameters, any number of arrays, sequences of arrays,
composites (`_Expansion`), tuples of results, constructors."""
from __future__ import annotations

import math

import numpy as np

from gradcli.errors import GradcliError, OptionError, Pos, ShapeError
from gradcli.language import syntax as ast
from gradcli.limits import MAX_CONSTANT_ELEMENTS
from gradcli.language.lower.integers import INTEGER_SENSITIVE, integer_refusal, written_indices
from gradcli.language.lower.transforms import FUNCTION_VALUES, NOT_MINE, ObjectValue
from gradcli.language.lower.values import (
    NONE, AtIndexed, AtRef, Closure, Literal, Scope, Text, TupleValue, TypeName)
from gradcli.language import dialects
from gradcli.language.dialects import (
    ABSENT, ATTRIBUTES, CONSTANT_FUNCTIONS, CONSTANTS, DTYPE_SECOND_ARGUMENT, FIRST_ARGUMENT_KEYWORDS, FLOAT_DTYPES,
    KEYWORD_ALIASES, OTHER_DTYPES, SEQUENCE_KEYWORDS, SPECIAL_CALLS, ReadingError, Spelling, meaning, split_spelling,
    strip_prefixes)
from gradcli.ops import OPS, REQUIRED, Op, Sym, fmt_shape
from gradcli.ops.casts import CANONICAL
from gradcli.ops.shapes import nested_ints

# Beside the reductions, the calls whose `dtype=` is the type they compute in (their arguments are
# cast to it); any other call's `dtype=` is its result's
_COMPUTE_IN_DTYPE = frozenset({"softmax", "log_softmax", "softmin", "cumsum", "cumprod", "cumlogsumexp"})

# Static parameters that are integers or (nested) lists of integers: constant indices, widths
INTEGER_ARRAY_PARAMS = {"indices", "index", "repeats", "reps", "pad_width", "paddings", "pad", "shift", "shifts",
                        "start_indices", "limit_indices", "strides", "slice_sizes", "indices_or_sections",
                        "num_or_size_splits", "split_size_or_sections", "sections", "begin", "size"}
_ARRAY = ast.Array


def _reading_key(node: ast.Call, name: str, library: str | None) -> tuple:
    """What decides a call's op and reading when only its spelling does (see read_call). A
    method's library is its receiver's; a function's follows from its name (the readings are
    forgotten when an import renames a module), so a function's key holds None."""
    args = node.args
    return (name, node.symbol, node.method, library, len(args),
            tuple([k.name for k in node.keywords]) if node.keywords else (), bool(args) and type(args[0]) is ast.Array)


_PLAIN_OPS: dict = {}  # op -> whether a call of it without keywords takes call_builtin's common path (_plain)
_UNREAD = (None, None, None)  # (a call not read before: call)


def _plain(op: Op) -> bool:
    """Whether a call of `op` with every array argument and no keyword is an equation of its
    defaults: no composite, truth test, parameter to give, variadic, literal or left-out argument."""
    return (op.expand is None and not op.symbol_reads_truth and not op.required and not op.variadic
            and op.literal is None and op.name not in ABSENT)


def _without_keyword(node: ast.Call, values: list, name: str) -> tuple[ast.Call, list]:
    """The call and its argument values without the keyword `name`."""
    count = len(node.args)
    kept = [k for k, kw in enumerate(node.keywords) if kw.name != name]
    return (ast.Call(node.func, node.args, node.pos, [node.keywords[k] for k in kept], node.symbol, node.method),
            values[:count] + [values[count + k] for k in kept])


def _iterated_by_python(lowering, op: Op, preset: dict, value, bare: str, pos: Pos) -> dict:
    """Pasted code's built-in sum, max and min iterate over the first axis: `sum(x)` of a matrix is
    np.sum(x, axis=0); `max(x)` compares rows, which NumPy refuses (gradcli's own sum adds all)."""
    if op.name not in ("sum", "max", "min", "all", "any") or "axis" in preset or not isinstance(value, (int, Literal)):
        return preset
    ndim = len(lowering.shape_of(value))
    if ndim < 2:
        return preset
    if op.name == "sum":
        return {**preset, "axis": 0}
    raise lowering.error(f"{bare}() of an array of {ndim} axes: Python's built-in {bare} iterates over the first axis "
                         f"and {'takes the truth of' if bare in ('all', 'any') else 'compares'} whole rows, an error "
                         "in NumPy and PyTorch (the truth value of an array with "
                         f"more than one element is ambiguous); write np.{bare}(x) for every element, or "
                         f"np.{bare}(x, axis=0)", pos)


def _receiver_moved(lowering, node: ast.Call, values: list, library: str) -> tuple:
    """A method call with its receiver where the function of its name takes it: PyTorch's
    x.where(condition, y) is where(condition, x, y)."""
    try:
        place = dialects.receiver_place(library, node.func)
    except ReadingError as exc:
        raise lowering.error(str(exc), node.pos) from None
    count = len(node.args)
    if place == 0 or count <= place:
        return node, values
    order = list(range(1, place + 1)) + [0] + list(range(place + 1, count))
    moved = ast.Call(node.func, [node.args[k] for k in order], node.pos, node.keywords, node.symbol, node.method)
    return moved, [values[k] for k in order] + values[count:]


def _either_reading(lowering, spelling: Spelling, node: ast.Call):
    """A method of a value made by no library's function (an input, a constant) in a program
    that spells PyTorch beside another library: the reading PyTorch and NumPy agree on, else
    refused, naming both."""
    found = []
    for library in ("torch", "numpy"):
        try:
            op, preset = dialects.resolve(spelling.replace(library=library))
            found.append(f"{op.name}({', '.join(f'{k}={v!r}' for k, v in preset.items())})")
        except ReadingError as exc:
            found.append(f"refused ({exc})")
    if found[0] == found[1] and not found[0].startswith("refused"):
        return dialects.resolve(spelling.replace(library="numpy"))
    raise lowering.error(f".{spelling.name}() reads two ways here: the program spells PyTorch beside another "
                         f"array library, and this value was made by neither's function; PyTorch reads it as "
                         f"{found[0]}, NumPy as {found[1]}: make the value with torch.as_tensor(...) or "
                         f"np.asarray(...) to say whose it is", node.pos)


class Resolution:
    """Part of the lowering (gradcli.language.lower): which op a call means. Reads `self.graph`,
    `self.globals`, `self.aliases`, `self.readings`, `self.sequence_ops`, `self.method_library`;
    uses the interpreter's and the binding's methods."""

    pasted: bool  # the program imports a library: its lists are Python's (False in _Lowering.__init__; imports)

    def imports(self, stmt: ast.Import) -> None:
        self.pasted = True  # (a library's code: Python's lists, fold.list_arithmetic)
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

    def takes_sequences(self, node: ast.Call, scope: Scope) -> bool:
        """Whether the call is of an op whose leading arguments are sequences of arrays."""
        if node.method or node.symbol is not None or scope.lookup(node.func) is not None \
                or node.func in self.globals:
            return False
        known = self.sequence_ops.get(node.func)
        if known is None:
            op = meaning(split_spelling(self.spelled(node.func))[1])
            known = self.sequence_ops[node.func] = type(op) is Op and op.sequence > 0
        return known

    def attribute(self, target, name: str, pos: Pos, scope: Scope):
        """`x.T`, `x.shape`, `x.ndim`, `x.size` of a value, as the functions and numbers they are."""
        found = self.read_attribute(target, name, pos, scope)
        if self.torch_beside_others:  # `x.T` of a tensor is a tensor
            self.mark_made_by(ast.Call(name, [], pos, method=True), [target], found)
        return found

    def read_attribute(self, target, name: str, pos: Pos, scope: Scope):
        if isinstance(target, ObjectValue):
            return self.object_attribute(target, name, pos, scope)
        if name == "__name__" and isinstance(target, TypeName):
            return Text(target.value, pos)
        if name == "at" and not isinstance(target, (Text, AtRef, AtIndexed)):
            return AtRef(target, pos)
        found = self.torch_attribute(target, name, pos, scope)  # .grad, .requires_grad (torch_autograd.py)
        if found is not None:
            return found
        if isinstance(target, TupleValue) and name in target.fields:  # a named tuple's field
            return target.items[target.fields.index(name)]
        if isinstance(target, TupleValue) and len(target.items) == 2 and name in ("values", "indices"):
            # PyTorch's (values, indices) of torch.max(x, dim), torch.sort, torch.topk, by field name
            return target.items[name == "indices"]
        if target is NONE:  # (`w.grad.data` before a backward: PyTorch's AttributeError)
            raise self.error(f"None has no attribute '{name}': the value is None here (Python: AttributeError)", pos)
        shape = self.shape_of(target)
        if name == "shape":
            return TupleValue([Literal(np.float64(d), pos) for d in shape], pos)
        if name == "ndim":
            return Literal(np.float64(len(shape)), pos)
        if name == "size":
            return Literal(np.float64(math.prod(shape)), pos)
        if name == "dtype":  # a cast's type (gradcli/ops/casts.py), else the run's (--dtype says which)
            dtypes = self.graph.dtypes
            return Text(dtypes.get(target, "float") if dtypes and type(target) is int else "float", pos)
        if name in ATTRIBUTES:
            op = meaning(ATTRIBUTES[name])
            if op is not None:
                call = ast.Call(ATTRIBUTES[name], [ast.Name("", pos)], pos, method=True)
                return self.call_builtin(op, call, [target], scope)
        raise self.error(f"unknown attribute '.{name}' of a value; gradcli knows .T, .shape, .ndim, .size "
                         "and the methods that are functions (x.sum(axis=0), x.reshape(...))", pos)

    def call(self, node: ast.Call, values: list, scope: Scope, work: list):
        # a call read before (`sin(x)`, `a * b`): found as read_call's first look finds it, in no frame of its own
        symbol, name, args = node.symbol, node.func, node.args
        if node.method or (self.active_tapes or scope.locals is not None and scope.lookup(name) is not None
                           or self.globals.get(name) is not None if symbol is None else
                           symbol == "is" or symbol == "is not" or self.pasted or type(values[0]) is not int
                           or type(values[-1]) is not int):
            result = self.read_call(node, values, scope, work)
        else:
            op, preset, label = self.readings.get((name, symbol, node.method, None, len(args), tuple(
                [k.name for k in node.keywords]) if node.keywords else (), type(args[0]) is _ARRAY if args else False), _UNREAD)
            if op is None:
                result = self.read_call(node, values, scope, work)
            elif _PLAIN_OPS.get(op) and label and not self.autocasts and len(values) == len(op.args) and op.parts is None \
                    and not node.keywords and 0 < len(values) <= 2 and type(values[0]) is int and type(values[-1]) is int:
                # call_builtin's common path written out, for an equation of values of the graph
                result = self.graph.add(op, tuple(values), dict(op.defaults, **preset) if preset else dict(op.defaults),
                                        node.pos, label, scope.stack)
            else:
                result = self.call_builtin(op, node, values, scope, preset, label)
        if self.graph.dtypes and type(result) is int and self.graph.equations[result].op.name == "cumsum" \
                and not node.method and self.spelled(node.func).startswith(("np.", "numpy.")):
            # NumPy's cumsum of float16 adds in float16 (its sums, means and products in float32)
            self.graph.accumulates_in_type = self.graph.accumulates_in_type | {result}
        if result is not None and self.torch_beside_others:
            self.mark_made_by(node, values, result)
        return result

    def made_by_of(self, value) -> str | None:
        """The array library whose function made a value (or a value it was computed from), where
        the program spells PyTorch beside another library; None where unknown (an input)."""
        if type(value) is int:
            return self.made_by.get(value)
        return value.library if isinstance(value, Literal) else None

    def made_value(self, id_: int, written: Literal) -> int:
        """The value a constant became, made by the library that made the constant
        (`t = torch.tensor([1.0])` is a tensor)."""
        if written.library is not None:
            self.made_by[id_] = written.library
        if written.listed and self.pasted:
            self.list_ids.add(id_)
        return id_

    def mark_made_by(self, node: ast.Call, values: list, result) -> None:
        """Which library made a call's result: the library its prefix names (`torch.exp`,
        `np.sqrt`), else the library of its arguments (`a * b`, `x.sum()`, `exp(x)`; a tensor
        among them makes a tensor, as PyTorch's operators do with NumPy's arrays)."""
        library = None if node.method or node.symbol is not None else split_spelling(self.spelled(node.func))[0]
        made = library in dialects.ARRAY_LIBRARIES
        if not made:
            known = [self.made_by_of(v) for v in values]
            library = "torch" if "torch" in known else next((k for k in known if k is not None), None)
            if library is None:
                return
        results = result.items if isinstance(result, TupleValue) else [result]
        for item in results:
            if type(item) is int and (made or item not in self.made_by):
                self.made_by[item] = library
            elif isinstance(item, Literal) and (made or item.library is None):
                item.library = library

    def receiver_library(self, receiver, method: str) -> str | None:
        """Whose methods a value's are: the program's library, or where the program spells PyTorch
        beside another library, the library that made the value (None where unknown)."""
        if not self.torch_beside_others:
            return self.method_library
        return dialects.methods_of(self.made_by_of(receiver), method)

    def read_call(self, node: ast.Call, values: list, scope: Scope, work: list):
        name = node.func
        bound = None
        operator = node.symbol is not None  # (`a * b` is multiply whatever the program calls `multiply`)
        if not operator and not node.method:
            bound = scope.lookup(name) if scope.locals is not None else None
            if bound is None:
                bound = self.globals.get(name)
        if bound is not None:
            if isinstance(bound, ast.FuncDef):
                return self.call_user(bound, node, values, scope, work, None)
            if isinstance(bound, Closure):
                return self.call_user(bound.fn, node, values, scope, work, bound.scope)
            if isinstance(bound, FUNCTION_VALUES):
                return self.apply_function(bound, node, values, scope, work)
        elif not node.method and (not self.active_tapes and not operator or operator and (
                node.symbol not in ("is", "is not") and not self.pasted and type(values[0]) is int
                and type(values[-1]) is int)):  # (an operator of arrays: no tuple arithmetic)
            # a call of an op written the same way before (found NOT_MINE by the gradient API then)
            found = self.readings.get(_reading_key(node, name, None))
            if found is not None:
                return self.call_builtin(found[0], node, values, scope, found[1], found[2])
        if not operator:  # (an operator takes no gradient and sets none up)
            taken = self.call_gradient_api(node, values, scope, work)
            if taken is not NOT_MINE:
                return taken
        if bound is not None or name in CONSTANTS:
            where = self.assigned_at.get(name)
            extra = f" (assigned at line {where.line})" if where and scope.locals is None else ""
            raise self.error(f"'{name}' is a value{extra}, not a function", node.pos)
        if node.symbol in ("is", "is not", "==", "!=") and (found := self.identity_or_text(node, values, scope)):
            return found  # (python_operators.py)
        if name == "type" and len(values) == 1 and not node.keywords:
            return self.type_name(values[0], node.pos)  # (flow.py: a label, `type(x).__name__`)
        if node.method and values and isinstance(values[0], AtIndexed):
            return self.at_update(node, values, scope)
        if (joined := self.tuple_arithmetic(node, values, scope)) is not None:  # `x.shape + (1,)`
            return joined
        if node.method:  # whose method: the receiver's library's
            library, bare = self.receiver_library(values[0], name), name
            self.receiver_methods = library  # (check_empty_dims: the method being bound is this one's)
            if library is not None:
                node, values = _receiver_moved(self, node, values, library)
        elif operator:
            library, bare = "python", name
        else:
            library, bare = split_spelling(self.spelled(name))
        key = _reading_key(node, name, library if node.method else None)
        found = self.readings.get(key)
        if found is not None:  # this call written the same way before: the same op, read the same way
            return self.call_builtin(found[0], node, values, scope, found[1], found[2])
        special = self.call_special(bare, node, values, scope)
        if special is not None:
            return special
        op = meaning(bare)
        if op is None:
            raise self.unknown_call(node, name, bare)
        if type(op) is not Op:  # a dialect's transformation (not an op): it lowers the call itself
            return op(self, node, values, scope, work) if getattr(op, "calls_functions", False) \
                else op(self, node, values, scope)
        return self.call_as_read(node, values, scope, key, library, bare, op)

    def call_op_named(self, node: ast.Call, values: list, scope: Scope, bare: str):
        """A call read as the op `bare` where a dialect's transformation of that name is another library's (np.linalg.cond, lax.cond)."""
        library = self.library_of(node)
        return self.call_as_read(node, values, scope, _reading_key(node, node.func, library if node.method else None),
                                 library, bare, OPS[bare])

    def call_as_read(self, node: ast.Call, values: list, scope: Scope, key: tuple, library, bare: str, op: Op):
        """read_call's end for an op: its reading resolved, remembered under `key`, bound, emitted."""
        name = node.func
        # a call is remembered only where its spelling alone decides its reading: never where the
        # reading looks at what the arguments are (a constant, an input, an array) or rewrites them
        remember = bare not in SPECIAL_CALLS  # (call_special reads the values)
        if self.pasted and bare in INTEGER_SENSITIVE:  # (`tf.reduce_mean([1, 2])` is 1 in TensorFlow)
            remember = False
            refused = integer_refusal(self, node, library, bare, op)
            if refused is not None:
                raise self.error(refused, node.pos)
        if len(node.args) == 2 and bare in DTYPE_SECOND_ARGUMENT and library != "python":
            remember = False  # (the dtype as its keyword: `tf.constant([1, 2], tf.float32)`)
            node = ast.Call(node.func, node.args[:1], node.pos, [ast.Keyword("dtype", node.args[1], node.args[1].pos),
                                                                 *node.keywords], node.symbol, node.method)
        if library == "torch" and any(kw.name == "device" for kw in node.keywords):
            remember = False  # (`torch.zeros(3, device=device)`: a device changes no number)
            node, values = _without_keyword(node, values, "device")
        if dialects.sizes_written_apart(library, op, len(node.args)):
            remember = False  # (`torch.ones(3, 4)`: the sizes as one shape)
            count = len(node.args)
            values = [TupleValue(values[:count], node.pos)] + values[count:]
            node = ast.Call(node.func, node.args[:1], node.pos, node.keywords, node.symbol, node.method)
        preset: dict = {}
        if node.symbol is None and dialects.reads(op):
            remember = False
            spelling = Spelling(library, bare, len(node.args), tuple(k.name for k in node.keywords),
                                bool(node.args) and isinstance(node.args[0], ast.Array),
                                node.method, name if node.method else self.spelled(name),
                                tuple(self.written_kind(v, a) for v, a in zip(values, node.args)))
            try:
                op, preset = dialects.resolve(spelling) if library is not None else _either_reading(self, spelling, node)
            except ReadingError as exc:
                raise self.error(str(exc), node.pos) from None
            if self.pasted and library == "python" and len(values) == 1 and not node.keywords:
                preset = _iterated_by_python(self, op, preset, values[0], bare, node.pos)
        if remember:
            self.readings[key] = (op, preset, node.symbol or strip_prefixes(name))
        return self.call_builtin(op, node, values, scope, preset)

    def unknown_call(self, node: ast.Call, name: str, bare: str) -> GradcliError:
        """The error for a call of no op, method or function the program knows, with close names."""
        if bare == "print":
            return OptionError("print() is not needed: print is a statement (print(x) on its own line), and "
                               "gradcli prints the last statement's value; name more values with {option} NAME",
                               "prints", node.pos, self.source)
        known = dialects.callable_names() + [n for n, v in self.globals.items() if isinstance(v, ast.FuncDef)]
        import difflib

        close = difflib.get_close_matches(bare, known, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        what = "method" if node.method else "function"
        return self.error(f"unknown {what} '{'.' if node.method else ''}{name}'{hint}", node.pos)

    def written_kind(self, value, node) -> str:
        """What an argument is, for an op's reading: "constant" (a number), "boolean" (True or
        False written), "number input" (an
        input of shape (), which pasted code may have meant as an int) or "array" (anything else:
        a computed value, a constant of more than one number, or one written as an array,
        `torch.tensor(0.0)`)."""
        if isinstance(value, Literal):
            if value.boolean:
                return "boolean"
            called = meaning(strip_prefixes(self.spelled(node.func))) \
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

    def call_special(self, bare: str, node: ast.Call, values: list, scope: Scope):
        """Calls that are numbers or casts rather than operations: `len(x)`, `K.epsilon()`,
        `tf.cast(x, tf.float32)`, `x.astype(np.float32)`, `np.float32(x)`. None otherwise."""
        if bare in CONSTANT_FUNCTIONS and not values:
            return Literal(np.float64(CONSTANT_FUNCTIONS[bare]), node.pos)
        if bare == "device" and len(values) == 1 and isinstance(values[0], Text) and not node.keywords:
            return values[0]  # torch.device("cpu"): a device changes no number
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
        if bare in ("cast", "astype") and node.keywords:  # (x.astype(t, copy=False), tf.cast(x, t, name='c'))
            values = values[:len(node.args)] + [v for kw, v in zip(node.keywords, values[len(node.args):])
                                                if kw.name not in ("copy", "name", "casting")]
        if bare in ("cast", "astype") and len(values) == 2 or bare in FLOAT_DTYPES | OTHER_DTYPES and len(values) == 1:
            # (x.float() is PyTorch's float32; Python's float(x) and NumPy's float are float64)
            dtype = values[1] if len(values) == 2 else Text("float32" if node.method and bare == "float" else bare,
                                                              node.pos)
            return self.cast(values[0], dtype, node, scope)
        return None

    def cast(self, value, dtype, node: ast.Call, scope: Scope):
        """`value` cast to the floating type `dtype` (a Text) names, as its library rounds it: a cast
        equation (its type and the types after it: gradcli/ops/casts.py), or the value itself
        where its type is that type already. A number written in the program cast to float32 or
        float64 is rounded here and stays a number (np.float32(1e-7) as an epsilon)."""
        if not isinstance(dtype, str):  # (a name of the table's: a value's own type)
            self.check_dtype(dtype, node.pos)
            dtype = dtype.value
        name = CANONICAL[dtype]
        graph = self.graph
        if isinstance(value, Literal) and value.value.ndim == 0 and name in ("float32", "float64"):
            rounded = Literal(np.float64(np.asarray(value.value).astype(name)), value.pos, value.boolean)
            rounded.library = value.library
            return rounded
        if not isinstance(value, Literal) and type(value) is not int:
            value = self.materialize(value, scope, node.pos)
        held = graph.dtypes.get(value, "float64") if type(value) is int and graph.dtypes else "float64"
        if held == name:
            return value
        if graph.dtypes is None:  # the program's first cast: every value from here on has a type
            graph.dtypes, graph.zero_dims_promote = {}, self.method_library != "torch"
        ids = (value if type(value) is int else self.materialize(value, scope, node.pos),)
        return graph.add(OPS["cast"], ids, {"dtype": name}, node.pos, node.symbol or node.func, scope.stack)

    def check_dtype(self, dtype, pos: Pos) -> None:
        """A floating dtype is what gradcli computes in (--dtype chooses which); any other
        would change the numbers (truncation), so it is refused."""
        if not isinstance(dtype, Text):
            raise self.error("a dtype must be written as a name such as tf.float32 or 'float32'", pos)
        if dtype.value in FLOAT_DTYPES:
            return
        raise self.error(f"a cast to {dtype.value} would change the numbers (gradcli computes in floating "
                         "point): write floor(x), round(x) or x > 0 for what the cast should do", dtype.pos)


class Binding:
    """Part of the lowering (gradcli.language.lower): a call bound to its op's signature and
    emitted. Reads `self.graph`; uses `self.error`, `self.materialize`, `self.constant_value`,
    `self.check_dtype`, `self.check_truth_values`."""

    def call_in_type(self, op: Op, node: ast.Call, values: list, scope: Scope, preset, label: str):
        """A call given `dtype=`: a reduction's or a softmax's (`np.sum(x, dtype=np.float32)`,
        `F.softmax(x, -1, dtype=torch.float32)`) array arguments cast to the type (it computes in
        it, as the libraries' do); any other call's result (`torch.zeros(3, dtype=torch.float16)`,
        `np.linspace(0, 7e4, 3, dtype=np.float16)`: computed, then rounded)."""
        k = next(k for k, kw in enumerate(node.keywords) if kw.name == "dtype")
        dtype = values[len(node.args) + k]
        self.check_dtype(dtype, node.keywords[k].pos)
        keywords = node.keywords[:k] + node.keywords[k + 1:]
        values = values[:len(node.args) + k] + values[len(node.args) + k + 1:]
        node = ast.Call(node.func, node.args, node.pos, keywords, node.symbol, node.method)
        computes_in_type = "keepdims" in op.params or op.name in _COMPUTE_IN_DTYPE
        arrays = min(len(op.args), len(node.args)) if computes_in_type and not op.variadic else 0
        values = [self.cast(v, dtype, node, scope) for v in values[:arrays]] + values[arrays:]
        result = self.call_builtin(op, node, values, scope, preset, label)
        return result if arrays else self.cast(result, dtype, node, scope)

    def call_builtin(self, op: Op, node: ast.Call, values: list, scope: Scope, preset: dict | None = None,
                     label: str | None = None):
        label = label or node.symbol or strip_prefixes(node.func)
        if self.autocasts:  # (a torch.autocast region: autocast.py)
            values = self.autocast_arguments(op, node, values, scope, label)
        plain = _PLAIN_OPS.get(op)
        if plain is None:
            plain = _PLAIN_OPS[op] = _plain(op)
        if plain and not node.keywords and len(values) == len(op.args):
            # the common call, `exp(x)` or `a * b`, as below: every argument given, every
            # parameter default (the one or two values by hand: a list comprehension is a frame)
            count = len(values)
            if count == 1:
                a = values[0]
                ids = (a if type(a) is int else self.materialize(a, scope, node.pos),)
            elif count == 2:
                a, b = values
                ids = (a if type(a) is int else self.materialize(a, scope, node.pos),
                       b if type(b) is int else self.materialize(b, scope, node.pos))
            else:
                ids = tuple([v if type(v) is int else self.materialize(v, scope, node.pos) for v in values])
            params = dict(op.defaults, **preset) if preset else dict(op.defaults)
            if ids and op.parts is None:  # one equation
                return self.graph.add(op, ids, params, node.pos, label, scope.stack)
            return self.emit_call(op, ids, params, node.pos, label, scope)
        return self.call_bound(op, node, values, scope, preset, label)

    def call_bound(self, op: Op, node: ast.Call, values: list, scope: Scope, preset: dict | None, label: str):
        """call_builtin past its common path: keywords, a dtype, composites, arguments bound to the
        op's signature, parameters read, defaults and arguments left out filled in."""
        if node.keywords and any(kw.name == "dtype" for kw in node.keywords):
            return self.call_in_type(op, node, values, scope, preset, label)
        if op.expand is not None:
            return self.call_composite(op, node, values, scope, label, preset)
        if node.symbol is not None and op.symbol_reads_truth:
            self.check_truth_values(node, values, op)
        if not node.keywords and len(values) == len(op.args) and not op.required and not op.variadic and (
                op.literal is None) and op.name not in ABSENT:
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
        if node.method and len(positional) > len(slots) and len(slots) == 2 and slots[1] in ("shape", "axes", "reps"):
            # NumPy's methods take a shape as separate numbers: x.reshape(2, 3), x.transpose(1, 0) (and
            # PyTorch's x.repeat(2, 3), its tile)
            positional = [positional[0], TupleValue(positional[1:], node.pos)]
        given, where = self.bind_arguments(op, node, positional, keywords, keyword_values, label)
        absent = ABSENT.get(op.name, {})
        for a in op.args:
            if given.get(a, NONE) is NONE and a in absent:
                given[a] = Literal(np.float64(absent[a]), where.get(a, node.pos))
            elif given.get(a) is NONE:
                raise self.error(f"{label}(): {a} is None, which is not a number", where.get(a, node.pos))
        missing = [a for a in op.args if a not in given]
        if missing:
            raise self.error(f"{label}() takes {len(op.args)} array argument{'s' * (len(op.args) != 1)} "
                             f"({', '.join(op.args)}), got {len(op.args) - len(missing)}", node.pos)
        if op.name == "full" and "fill_value" in given and "shape" in given and \
                not isinstance(self.constant_value(given["fill_value"]), (Literal, Text)):
            # `np.full(shape, g)` of a computed g (autograd's vjp rules): g broadcast to the shape
            shape = self.static_param("shape", given["shape"], label, node.pos)
            return self.emit(OPS["broadcast_to"], (self.materialize(given["fill_value"], scope, node.pos),),
                             {"shape": shape}, node.pos, label, scope)
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
        library = (self.receiver_methods or "torch") if node.method else split_spelling(self.spelled(node.func))[0]
        refusal = dialects.empty_axes_refusal(library, label)  # (a receiver of no known library: refused)
        if refusal is not None:
            raise self.error(refusal, node.pos)

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
            if slot == "axis" and slot not in slots and "axes" in slots:  # PyTorch's dims= of tensordot, permute
                slot = "axes"
            if slot not in slots and kw.name in FIRST_ARGUMENT_KEYWORDS and op.args:
                slot = op.args[0]
            if slot not in slots:
                raise self.error(f"{label}() has no argument '{kw.name}'; it takes {', '.join(slots)}", kw.pos)
            if slot in given:
                raise self.error(f"{label}() got argument '{slot}' twice", kw.pos)
            given[slot] = value
            where[slot] = kw.pos
        return given, where

    def call_composite(self, op: Op, node: ast.Call, values: list, scope: Scope, label: str, preset):
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
        ids = tuple(self.materialize(given[a], scope) for a in op.args)
        expansion = _Expansion(self, node.pos, label, scope)
        if any(self.graph.shapes[i] is None for i in ids + tuple(v for k, v in params.items() if k in op.tensors
                                                                  and v is not None)):
            return ids[0]  # a missing input: lowering goes on to list them all
        try:
            return op.expand(expansion, *ids, **params).id
        except (TypeError, ValueError, IndexError) as exc:  # a parameter of a kind the op does not take
            raise self.error(f"{label}(): an argument is not of a kind {label}() takes ({exc})", node.pos) from None
        except ShapeError as exc:
            message = str(exc)
            raise self.error(message if message.startswith(f"{label}") else f"{label}(): {message}",
                             node.pos) from None

    def call_variadic(self, op: Op, node: ast.Call, values: list, scope: Scope, label: str, preset):
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

    def call_sequences(self, op: Op, node: ast.Call, values: list, scope: Scope, label: str, preset):
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

    def sequence_items(self, value, label: str, pos: Pos, scope: Scope) -> list:
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
        if type(value) is int and pname in INTEGER_ARRAY_PARAMS:
            value = written_indices(self, value, pos)
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

    def emit_call(self, op: Op, ids: tuple, params: dict, pos: Pos, label: str, scope: Scope):
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
                           for name, part_params in parts], pos, op.fields if len(op.fields) == len(parts) else ())

    def construct(self, op: Op, params: dict, pos: Pos, label: str, scope: Scope) -> int:
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

    def emit(self, op: Op, ids: tuple, params: dict, pos: Pos, label: str, scope: Scope) -> int:
        return self.graph.add(op, ids, params, pos, label, scope.stack)


class _Expansion:
    """The trace a composite's expansion emits through (gradcli.ops.trace): each op bound as a call
    at the composite's call's place, a composite in it expanded in turn; numbers and arrays
    become constants there."""

    def __init__(self, lowering: Binding, pos: Pos, label: str, scope: Scope):
        self.lowering, self.pos, self.label, self.scope = lowering, pos, label, scope
        self.shapes = lowering.graph.shapes

    def emit(self, op: Op, ids: tuple, params: dict) -> Sym:
        params = dict(op.defaults, **params)
        if op.expand is not None:
            return op.expand(self, *ids, **params)
        id_ = self.lowering.emit_call(op, ids, params, self.pos, self.label, self.scope)
        if type(id_) is not int:  # (a tuple of results is no value of an expansion)
            raise TypeError(f"{op.name} gives a tuple")
        return Sym(self, id_)

    def constant(self, value) -> Sym:
        return Sym(self, self.lowering.graph.add_constant(np.asarray(value, dtype=np.float64), self.pos,
                                                          self.scope.stack))

    def known(self, id_: int, required: bool = True):
        """The value of a constant or an input (as given for this run), else None. An input whose
        values are read only when the program runs (Dask) is refused where they are `required`
        (a decision on them would be a guess), else None."""
        graph = self.lowering.graph
        while graph.equations[id_].op.repeats is not None or graph.equations[id_].op.memory == "same":
            id_ = graph.equations[id_].inputs[0]  # its input's values, repeated or as they are
        eq = graph.equations[id_]
        if id_ in graph.unread_inputs:
            if required:
                raise ShapeError(f"this needs the values of '{eq.params['name']}' while the program is built, "
                                 "but --device dask reads them only when it runs: evaluate it on the CPU, "
                                 "or write them in the program")
            return None
        if eq.op.name in ("const", "input"):
            return eq.params["value"]
        return None
