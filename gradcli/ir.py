"""The program as gradcli holds it: a straight list of equations in SSA form.

Equation i computes value i from earlier values, with an op of the table, static parameters,
and the source position it stands for. Shapes are computed as each equation is added, so
impossible shapes are rejected before anything runs. Gradients (gradcli.autodiff) are appended
to the same graph as more equations.
"""
from __future__ import annotations

import math

import numpy as np

from gradcli.errors import GradcliError, OptionError, Pos, ShapeError, Source
from gradcli.ops import OPS, Op, Sym
from gradcli.ops.casts import declared_type
from gradcli.ops import broadcast_shapes as ops_broadcast
from gradcli.ops import scalar as numbers
from gradcli.ops.scalar import numbers_only
from gradcli.ops.shapes import _broadcast as _BROADCAST, _same as _SAME
from gradcli.records import NEW, ValueRecord

# A program that expands (through nested function calls) past this many equations is
# refused rather than left to exhaust memory.
MAX_DIMENSIONS = 64  # NumPy's limit, checked here so no op meets it first
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


_MAX_ELEMENTS = 2**63 - 1  # NumPy's intp


class ShapeOnly:
    """An input known by its shape and dtype, not its values. `later`: its values come when the
    program runs (read lazily by Dask), so the graph gets a stand-in that holds no memory and the
    lowering must not read values from it (a decision on data it has not seen would be a silent
    guess). Otherwise it has none (`--set 'x=float64[3]'`): enough for what reads only shapes
    (`derive`, `graph`), refused by what computes numbers."""

    __slots__ = ("shape", "dtype", "later")

    def __init__(self, shape: tuple, dtype, later: bool = True):
        self.shape, self.dtype, self.later = tuple(shape), np.dtype(dtype), later

    def stand_in(self) -> np.ndarray:
        return np.broadcast_to(np.zeros((), dtype=self.dtype), self.shape)

    def __str__(self) -> str:
        return f"{self.dtype.name}[{', '.join(map(str, self.shape))}]"


class Graph(ValueRecord):
    """The equations, their shapes and names. `numbers` (a gradcli.language.lower.NumberPolicy, set
    by the lowering) is told of each constant or input made, and reads each constant's number
    that building the program looks at; None: nobody is told."""

    _fields = ("source", "equations", "shapes", "names", "inputs", "value_names", "result", "warnings", "context",
               "differentiated", "_memo")
    source: Source
    equations: list[Equation]
    shapes: list  # tuple, or None where unknown
    names: dict[str, int]  # top-level name -> its last value
    inputs: dict[str, int]  # input name -> its equation
    value_names: dict[int, str]
    result: tuple[str, int] | None = None                # the last statement's (name, value)
    warnings: list[tuple[str, Pos | None]]
    # the forward equation whose gradient is being built (set by autodiff)
    context: int | None = None
    differentiated: set
    _memo: dict
    numbers: object  # (not a field: how the program's numbers are watched, not what it computes)
    # (not fields either) a gradient taken inside the program: equation id -> (the call that took
    # it as spelled, "tf.gradients", and its Pos); what the program prints: [(text, id or None)]
    made_by: dict | None
    printed: list | None
    # (not a field) the inputs given neither values nor a shape, each taken to be a number
    # (`derive`, `graph`): {id: name}; a shape rule that fails on one of them says it needs a shape
    unshaped: dict | None
    # (not a field) the local names of the user functions called: {"loss.probs": [[_, value id]
    # of each call]}, which the options naming values may name (value_id)
    local_values: dict | None
    # (not a field) the program's asserts on data given from outside, checked after evaluation:
    # (the condition's id, the message, the assert's Pos)
    assertions = ()
    unread_inputs: frozenset  # (not a field) input equations made from a ShapeOnly: no values yet
    # (not a field) where the program casts (x.half()): equation id -> the type it is computed in,
    # for those not of the run's type (gradcli/ops/casts.py); None: the program casts nowhere.
    # `zero_dims_promote`: whether a 0-d value's type counts beside values of dimensions (NumPy's
    # and JAX's rule) or not (PyTorch's)
    dtypes: dict | None
    zero_dims_promote = True
    accumulates_in_type: frozenset  # (not a field) the cast parts' sums that add in their type (np.cumsum)

    def __init__(self, source, equations=NEW, shapes=NEW, names=NEW, inputs=NEW, value_names=NEW, result=None,
                 warnings=NEW, context=None, differentiated=NEW, _memo=NEW):
        self.source = source
        self.equations = [] if equations is NEW else equations
        self.shapes = [] if shapes is NEW else shapes
        self.names = {} if names is NEW else names
        self.inputs = {} if inputs is NEW else inputs
        self.value_names = {} if value_names is NEW else value_names
        self.result = result
        self.warnings = [] if warnings is NEW else warnings
        self.context = context
        self.differentiated = set() if differentiated is NEW else differentiated
        self._memo = {} if _memo is NEW else _memo
        # what is no field, declared above, starts here: on the instance, as what is read for
        # every equation must be (a class's default is read through Python's slow path)
        self.numbers = self.dtypes = self.made_by = self.printed = self.unshaped = self.local_values = None
        self.unread_inputs = self.accumulates_in_type = frozenset()

    def check_assertions(self, values: dict) -> None:
        """The program's asserts on data given from outside, on the values just computed (id ->
        host array): a false one is an error at the assert, as Python's AssertionError."""
        for j, message, pos in self.assertions:
            if not np.all(values[j]):
                raise GradcliError(message, pos, self.source)

    def fork(self, casts: bool = True) -> Graph:
        """A copy to add equations to (a command's gradients and seeds), this graph left as it is
        (the equations, never changed once made, are shared): which equations were differentiated
        decides later runs' tie and kink diagnostics. With the in-program gradients' calls and what
        the program prints.
        `casts=False`: the program's casts read as the run's type (`check` compares the rules with
        float64 differences: a difference across a rounding to float16 measures the rounding)."""
        forked = Graph(self.source, list(self.equations), list(self.shapes), dict(self.names), dict(self.inputs),
                       dict(self.value_names), self.result, list(self.warnings), None, set(self.differentiated),
                       dict(self._memo))
        # what is no field but known of the program (made_by, printed), and how its numbers are
        # watched (a gradient built on the fork reads the program's constants as the lowering did);
        # attribute by attribute: reading vars() would give both graphs a real dict, whose
        # attributes and methods CPython 3.11 then reads the slow way, at every equation
        for name in _NOT_FIELDS:
            setattr(forked, name, getattr(self, name))
        if self.made_by:
            forked.made_by = dict(self.made_by)
        forked.dtypes = dict(self.dtypes) if self.dtypes is not None and casts else None
        return forked

    # ----------------------------------------------------------------- adding equations
    def add(self, op: Op, inputs: tuple, params: dict, pos: Pos | None, label: str,
            stack: tuple = (), backward: int | None = None) -> int:
        shapes = self.shapes
        rule = op.shape
        count = len(inputs)
        # the common case (`sin(x)`, `a * b` of one shape): the result has the inputs' shape,
        # which was checked when they were made
        if count == 1 and (rule is _SAME or rule is _BROADCAST) and shapes[inputs[0]] is not None:
            shape = shapes[inputs[0]]
        elif count == 2 and (rule is _SAME or rule is _BROADCAST) and shapes[inputs[0]] is not None \
                and shapes[inputs[0]] == shapes[inputs[1]]:
            shape = shapes[inputs[0]]
        elif None in (in_shapes := [shapes[i] for i in inputs] if count else []):  # (a source: no list's frame)
            shape = None
        elif in_shapes and (rule is _SAME or rule is _BROADCAST) and in_shapes.count(in_shapes[0]) == len(in_shapes):
            shape = in_shapes[0]
        else:
            try:
                shape = tuple(op.shape(*in_shapes, **params))
            except ShapeError as exc:
                message = str(exc)
                prefix = f"{label}: "
                message = message if message.startswith(prefix) else prefix + message
                raise self._unshaped_error(inputs, message, pos) or GradcliError(message, pos, self.source) from None
            if not shape:
                pass  # a number: nothing to bound
            elif len(shape) > MAX_DIMENSIONS:
                raise GradcliError(f"{label}: the result would have {len(shape)} dimensions; arrays have at most "
                                   f"{MAX_DIMENSIONS} (as in NumPy)", pos, self.source)
            elif any(d < 0 for d in shape):  # a shape rule that let one through (broadcast_to [-5])
                raise GradcliError(f"{label}: negative dimension in the result's shape {shape}",
                                   pos, self.source)
            elif (count := math.prod(shape)) > _MAX_ELEMENTS:  # broadcast_to(x, shape=[1e300]): no index reaches
                shown = f"{count:,}" if count < 10**24 else f"about 10^{len(str(count)) - 1}"
                raise GradcliError(f"{label}: the result would have {shown} elements, more than any array "
                                   f"can ({_MAX_ELEMENTS:,})", pos, self.source)
        if len(self.equations) >= MAX_EQUATIONS:
            raise GradcliError(f"the program expands to more than {MAX_EQUATIONS:,} operations "
                               "(user functions are expanded where they are called)", pos, self.source)
        self.equations.append(Equation(op, inputs, params, pos, label, stack, backward))
        shapes.append(shape)
        if self.dtypes is not None and inputs:  # (a program that casts: the new value's type)
            declared = declared_type(self, op, inputs, params)
            if declared is not None:
                self.dtypes[len(shapes) - 1] = declared
        return len(shapes) - 1

    def _unshaped_error(self, inputs: tuple, message: str, pos: Pos | None) -> GradcliError | None:
        """Where a shape rule fails on values computed from inputs taken to be numbers for want of
        a shape (`unshaped`), the error naming those inputs, at the first one's place; else None."""
        if not self.unshaped:
            return None
        found, seen, work = [], set(inputs), list(inputs)
        while work:  # the inputs' ancestors (the error's path only: no cost to a program that is right)
            i = work.pop()
            if i in self.unshaped:
                found.append(i)
            for j in self.equations[i].inputs:
                if j not in seen:
                    seen.add(j)
                    work.append(j)
        if not found:
            return None
        found.sort()
        names = [self.unshaped[i] for i in found]
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        ask = "has no shape: give one with" if len(names) == 1 else "have no shape: give each one a shape, as in"
        return OptionError(f"{listed} {ask} {{option}} '{names[0]}=float64[3]'",
                           "feeds", self.equations[found[0]].pos, self.source,
                           note=f"taken to be a number, {'it' if len(names) == 1 else 'they'} cannot be used here: "
                                f"{message}" + (f" (at {pos})" if pos is not None else ""))

    def add_input(self, name: str, value, pos: Pos | None = None, label: str | None = None) -> int:
        """An input equation: a named source whose value can be given anew at each run (a
        ShapeOnly: given only when it runs)."""
        unread = isinstance(value, ShapeOnly)
        if not (type(value) is float and numbers_only()):  # (a number of the numbers-only attempt stays one)
            value = value.stand_in() if unread else np.asarray(value)
        equations = self.equations
        if len(equations) >= MAX_EQUATIONS:
            return self.add(OPS["input"], (), {"name": name, "value": value}, pos, label or name)  # (the error)
        # add()'s work, written out: the input op's shape rule is its value's shape (ops/core.py),
        # which NumPy has already bounded (dimensions, elements)
        equations.append(Equation(OPS["input"], (), {"name": name, "value": value}, pos, label or name))
        self.shapes.append(() if type(value) is float else value.shape)
        id_ = len(equations) - 1
        if unread:
            self.unread_inputs = self.unread_inputs | {id_}
        if self.numbers is not None:
            self.numbers.made(self, id_)
        return id_

    def add_constant(self, value, pos: Pos | None = None, stack: tuple = (), backward: int | None = None) -> int:
        if numbers_only():  # (gradcli.ops.scalar: numbers as Python floats; an array needs NumPy)
            value = float(value) if type(value) in (float, int, bool) else _needs_arrays(value)
        else:
            value = np.asarray(value, dtype=np.float64)
        id_ = self.add(OPS["const"], (), {"value": value}, pos, "constant", stack, backward)
        if self.numbers is not None:
            self.numbers.made(self, id_)
        return id_

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
        while eq.op.repeats:
            eq = self.equations[eq.inputs[0]]
        if eq.op.name == "const":
            if self.numbers is not None:
                return self.numbers.constant_read(eq)
            value = eq.params["value"]
            return float(value) if type(value) is float or value.ndim == 0 else None
        return None

    def derived(self, op: Op, inputs: tuple, params: dict) -> Sym:
        """Emit an equation of a gradient, attributed to the equation being differentiated;
        identical equations are shared and `x * 1`, `x + 0`, `x / 1` are folded away."""
        if op.simpler is not None:
            plain = op.simpler(**params)
            if plain is not None:
                # the same op written simpler: a sum down to a scalar is the plain sum, which the
                # program may already compute
                op, params = OPS[plain[0]], plain[1]
        memo, equations = self._memo, self.equations
        if op.elementwise and len(inputs) > 1:
            for j in inputs:  # (_unbroadcast changes nothing where no input is a broadcast: not called)
                if equations[j].op.repeats:
                    inputs = self._unbroadcast(op, inputs)
                    break
        # _simplify, asked only where it may find something: an involution, a first operand that
        # is a constant (or a broadcast of one), an op with identities
        first = equations[inputs[0]].op if inputs else None
        if op.involution and len(inputs) == 1 or op.elementwise and first is not None and (
                first.repeats or first.name == "const") or len(inputs) == 2 and op.identities != (None, None):
            simpler = self._simplify(op, inputs)
            if simpler is not None:
                return Sym(self, simpler)
        if memo.get("indexed", 0) < len(equations):
            self._index_equations()
        key = (op.name, inputs, _hashable(params) if params else ())
        found = memo.get(key)
        if found is not None:
            return Sym(self, found)
        context = self.context
        if context is None:
            id_ = self.add(op, inputs, params, None, op.name)
        else:
            ctx = equations[context]
            id_ = self.add(op, inputs, params, ctx.pos, ctx.label, ctx.stack, context)
        memo[key] = id_
        memo["indexed"] = id_ + 1
        return Sym(self, id_)

    emit = derived  # the graph as the trace a gradient rule's `G.` ops go to (gradcli.ops.trace)

    def _index_equations(self) -> None:
        """Let gradient equations reuse identical equations of the program itself
        (`w * y` computed forward is not computed again backward)."""
        memo, equations = self._memo, self.equations
        for i in range(memo.get("indexed", 0), len(equations)):
            eq = equations[i]
            if eq.inputs:
                params = eq.params
                memo.setdefault((eq.op.name, eq.inputs, _hashable(params) if params else ()), i)
        self._memo["indexed"] = len(self.equations)

    def _unbroadcast(self, op: Op, inputs: tuple) -> tuple:
        """An elementwise op (of two or more inputs) broadcasts by itself: drop an explicit
        broadcast_to (or a reshape of a scalar) of an input where the result's shape stays the same."""
        equations = self.equations
        for j in inputs:
            if equations[j].op.repeats:
                break
        else:
            return inputs
        out = ops_broadcast(*(self.shapes[j] for j in inputs))
        new = list(inputs)
        for k, j in enumerate(inputs):
            eq = self.equations[j]
            while eq.op.repeats and (eq.op.repeats == "broadcast" or math.prod(self.shapes[eq.inputs[0]]) == 1):
                inner = eq.inputs[0]
                trial = new[:k] + [inner] + new[k + 1:]
                if ops_broadcast(*(self.shapes[t] for t in trial)) != out:
                    break
                new[k] = inner
                eq = self.equations[inner]
        return tuple(new)

    def _simplify(self, op: Op, inputs: tuple) -> int | None:
        """An equation of a gradient that needs no computing, by its op record's algebra:
        an operand beside the op's identity (`x * 1`, `x + 0`, `x ** 1`), an involution applied
        twice (`-(-x)`), or an elementwise op of scalar constants (folded into one)."""
        if op.involution and len(inputs) == 1:
            inner = self.equations[inputs[0]]
            if inner.op is op:
                return inner.inputs[0]
        if op.elementwise and inputs:
            constants = []
            for j in inputs:  # (stops at the first that is not a constant: most are not)
                c = self.scalar_constant(j)
                if c is None:
                    break
                constants.append(c)
            if len(constants) == len(inputs) and all(self.shapes[j] == () for j in inputs):
                if self.numbers is not None:  # (a policy watching the numbers: gradcli.cli.lines)
                    return self.numbers.fold(self, op, constants)
                if numbers_only():
                    folded = op.forward(numbers.NAMESPACE, *constants) if op.name in numbers.SCALAR_OPS \
                        else _needs_arrays(op.name)
                else:
                    with np.errstate(all="ignore"):
                        folded = float(op.forward(np, *(np.float64(c) for c in constants)))
                return self.constant(folded).id
        if len(inputs) != 2 or op.identities == (None, None):
            return None
        a, b = inputs
        out = ops_broadcast(self.shapes[a], self.shapes[b])
        left, right = op.identities
        if right is not None and self.scalar_constant(b) == right and self.shapes[a] == out:
            return a
        if left is not None and self.scalar_constant(a) == left and self.shapes[b] == out:
            return b
        return None

    def valueless(self) -> set[int]:
        """The equations computed from an input that has no values (a shape alone, or nothing:
        what `derive` and `graph` take): they have shapes and no values."""
        found: set[int] = set()
        for i, eq in enumerate(self.equations):
            if (eq.op.name == "input" and eq.params.get("value") is None) or any(j in found for j in eq.inputs):
                found.add(i)
        return found

    def option_value_id(self, name: str, option: str) -> int:
        """The value a name given to the argument `option` (--of, --wrt, --print) stands for
        (an OptionError naming the option if none)."""
        try:
            return self.value_id(name, "name for {option}")
        except GradcliError as err:
            raise OptionError(err.message, option, err.pos, err.source, err.note) from None

    def value_id(self, name: str, what: str = "name") -> int:
        if name in self.names:
            return self.names[name]
        shown = next((id_ for text, id_ in self.printed or () if text == name and id_ is not None), None)
        if shown is not None:  # a value the program prints or shows, by its text (`g[0]`, `grads['w']`)
            return shown
        local = self._local_id(name, what)
        if local is not None:
            return local
        import difflib

        choices = ", ".join(sorted(n for n in self.names if not n.startswith("<"))) or "none"  # (not `(a, b), c =`'s own)
        locals_ = sorted(self.local_values or ())
        bare = {q.rpartition(".")[2]: q for q in locals_}  # `prob` is close to loss.probs's `probs`
        close = [bare.get(c, c) for c in difflib.get_close_matches(name, list(self.names) + locals_ + list(bare), n=1)]
        maybe = f" (did you mean {close[0]}?)" if close else ""
        also = f"; its functions' local names are {', '.join(locals_)}" if locals_ else ""
        raise GradcliError(f"unknown {what} '{name}'{maybe}: the program's names are {choices}{also}")

    def _local_id(self, name: str, what: str) -> int | None:
        """The value of a user function's local name: `loss.probs`, or `probs` where only one
        function has a local of that name; None where none has. A function called more than
        once has a value in each call: which one is asked."""
        table = self.local_values or {}
        found = ([name] if name in table else []) if "." in name else \
            sorted(q for q in table if q.rpartition(".")[2] == name)
        if len(found) > 1:
            raise GradcliError(f"ambiguous {what} '{name}': it is a local name of several functions "
                               f"({', '.join(found)}); give one of these")
        if not found:
            return None
        calls = table[found[0]]
        if len({value for _, value in calls}) > 1:
            function = found[0].rpartition(".")[0]
            raise GradcliError(f"ambiguous {what} '{name}': {function} is called {len(calls)} times, and "
                               f"{found[0]} has a value in each call; name the value you mean at the top level")
        return calls[-1][1]


# What a graph holds beside its fields (declared in the class, "not a field"), copied by fork
_NOT_FIELDS = tuple(name for name in Graph.__annotations__ if name not in Graph._fields) + (
    "assertions", "zero_dims_promote")


def _hashable(params: dict):
    if not params:
        return ()
    arrays = not numbers.MODE.active  # (no array in the numbers-only attempt, and NumPy is not asked)
    return tuple(sorted((k, v.tobytes() if arrays and isinstance(v, np.ndarray) else v) for k, v in params.items()))


def _needs_arrays(what):
    raise numbers.NeedsArrays(f"{what!r} needs NumPy")
