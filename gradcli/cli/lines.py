"""`--lines` on many small programs: lines that differ only in numbers share one compiled program.

A line's *shape* is its text with each number literal taken out. The second time a shape is
seen, its program is compiled once more while every number of the line is watched (a
`Watched` value while it is a literal, a `_WatchedParams` once it is a constant or an input's
default): a number that lowering or differentiation reads (a shape `zeros(3)`, an axis, an
index, `x ** 2` simplified, `x * 1` folded, a condition) is *fixed*: it becomes part of the
key, as its text. A number that only ever becomes the value of one constant (or input
default) equation, never read while compiling, is *free*: later lines of the shape run the
same graph with that equation's value given anew (`evaluate.run`'s overrides). A number in an
array literal (`[a, 1.5, -2]`) is free the same way, as one element of its constant; a constant
that building the gradient folds of free numbers (the seed times k of `sum(...) * k`, `p - 1` of
`x ** p`) is *derived*: its own slot, computed again for each line by the same arithmetic.

The watching is checked twice over: the program is compiled with two different sets of
stand-in numbers, and the two graphs must be the same equation for equation (ops, inputs,
parameters, constants) but for the free numbers' own equations; anything else and the shape
is not shared (every line of it is compiled on its own, as without this module).

A number in a name of the answer (`print(g(2.0))` is named `g(2.0)`) is fixed, and so is one
whose line's own value meets a simplification's constraint (`x ** 2`: its `p - 1` is 1).

A shared program runs without the numerical checks (`_Replay`: the same operations as the
engine's on NumPy) where they would have nothing to say: every value finite and far from
overflowing, no kink or tie to count; any other line runs the checked path.

A line whose run gives any diagnostic (a NaN, an overflow, an unconnected gradient) or any
error is answered by compiling it on its own: diagnostics and errors name places in the
line's own text. So is a line longer than `MAX_SHARED_TEXT` (the parse's memory guard, which
counts characters, then cannot tell it from its shape's first line).
"""
from __future__ import annotations

import math
import re
from collections import OrderedDict

import numpy as np

from gradcli.engine.backends import Backend
from gradcli.engine.evaluate import SCALAR_OPERATORS, needed_equations
from gradcli.language.lower import NumberPolicy, numbers_read_by
from gradcli.numerics.broadcasts import accidental_broadcasts

# The grammar's NUMBER token, whole: not touching a name or a dot on either side (`x1`, `1.e`,
# `a.1`, `2else`), so that what is taken out is always exactly one NUMBER token of the line.
_LITERAL = re.compile(r"(?<![\w.])((?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(?![\w.])")

MAX_SHARED_TEXT = 4096  # characters: far below the parse's fixed allowance (4 MiB)
MAX_TEMPLATES = 1024    # compiled programs kept (least recently used dropped)
MAX_SHAPES = 8192       # shapes remembered (how often seen, how their numbers are split)
BUILDS_PER_SHAPE = 8    # compilations spent learning one shape (its fixed numbers may vary)
_ROUNDS = 8             # watch rounds: each may fix more numbers

_SHAPE_ATTRIBUTES = frozenset({"shape", "ndim", "size", "dtype", "nbytes", "__class__", "__dict__",
                               "__array_finalize__", "__array_priority__"})


class _Watch(NumberPolicy):
    """What one watched compilation saw: the free numbers it was given (slot -> stand-in)
    and those read. It is the compilation's number policy (gradcli.language.lower): a number
    literal's value is its stand-in, watched (an array literal of them too); a constant made of
    them has watched parameters; a simplification reading a constant gets it as a
    _WatchedFloat; a constant a gradient folds of them (`1 * k`) is *derived*: a slot of its
    own, computed again for each line as the fold computed it."""

    def __init__(self, offsets: dict[int, int], standins: dict[int, float], literals: list[str]):
        self.offsets = offsets      # character offset of a number -> its slot
        self.standins = standins    # slot -> stand-in value (free slots only)
        self.literals = literals
        self.read: set[int] = set()
        self.met: dict[int, int] = {}  # slot -> how many Number nodes of it lowering met
        self.by_bits = _by_bits(standins)
        self.compared: set[int] = set()  # slots whose value a simplification looked at
        self.constraints: set[tuple[int, int, float]] = set()  # (slot, sign, a number it was compared with)
        self.derived: list[tuple[int, object, tuple]] = []  # (slot, op, its arguments) of each fold
        self.derived_eq: dict[int, int] = {}  # derived slot -> its constant's equation
        self.next_slot = len(literals)
        self.making: int | None = None  # the derived slot whose constant is being made

    def number_value(self, node):
        if _current is self and not node.boolean and node.pos is not None:
            slot = self.offsets.get(node.pos.start)
            if slot is not None and node.value == float(self.literals[slot]):
                self.met[slot] = self.met.get(slot, 0) + 1
                if slot in self.standins:
                    value = np.array(self.standins[slot], dtype=np.float64).view(Watched)
                    value.__dict__["slot"] = slot
                    return value
        return np.float64(node.value)

    def array_of(self, values: list):
        watched = [v for v in values if isinstance(v, Watched)]
        if _current is not self or not watched:
            return NumberPolicy.array_of(self, values)
        raw = [np.ndarray.view(v, np.ndarray) if isinstance(v, Watched) else v for v in values]
        out = NumberPolicy.array_of(self, raw).view(Watched)
        out.__dict__["slots"] = frozenset().union(*(_slots_of(v) for v in watched))
        return out

    def made(self, graph, id_: int) -> None:
        if _current is not self:
            return
        eq = graph.equations[id_]
        if self.making is not None:
            eq.params = _WatchedParams(eq.params, ((None, self.making, 1),))
            self.derived_eq[self.making] = id_
            return
        value = eq.params.get("value")
        if isinstance(value, np.ndarray) and value.dtype == np.float64 and 0 < value.size <= MAX_WATCHED_ELEMENTS:
            found = _elements(value, self.by_bits)
            if found:
                eq.params = _WatchedParams(eq.params, found)

    def constant_read(self, eq):
        value = NumberPolicy.constant_read(self, eq)  # (read as it is: not a use of the number)
        if value is None or _current is not self:
            return value
        params = eq.params
        if type(params) is _WatchedParams and len(params.elements) == 1 and params.elements[0][0] is None:
            found = params.elements[0][1:]
        else:
            found = self.by_bits.get(np.float64(value).tobytes())
        if found is None:
            return value
        self.compared.add(found[0])
        return _WatchedFloat(value, *found)

    def fold(self, graph, op, constants: list) -> int:
        if _current is not self or not any(type(c) is _WatchedFloat for c in constants):
            return NumberPolicy.fold(self, graph, op, constants)
        args = tuple(("w",) + _slot_sign(c) if type(c) is _WatchedFloat else ("n", float(c)) for c in constants)
        key = ("folded of watched numbers", op.name, args)
        if key in graph._memo:
            return graph._memo[key]
        with np.errstate(all="ignore"):
            folded = float(op.forward(np, *(np.float64(float.__float__(c)) for c in constants)))
        slot, self.next_slot = self.next_slot, self.next_slot + 1
        self.derived.append((slot, op, args))
        ctx = graph.equations[graph.context] if graph.context is not None else None
        self.making = slot
        try:
            id_ = graph.add_constant(folded, ctx.pos if ctx else None, ctx.stack if ctx else (), graph.context)
        finally:
            self.making = None
        graph._memo[key] = id_
        return id_

    def based(self, slots) -> set[int]:
        """The number slots of `slots`, a derived slot standing for those it is folded of."""
        recipes = {slot: args for slot, _, args in self.derived}
        out, work = set(), list(slots)
        while work:
            slot = work.pop()
            if slot in recipes:
                work.extend(a[1] for a in recipes[slot] if a[0] == "w")
            else:
                out.add(slot)
        return out


MAX_WATCHED_ELEMENTS = 4096  # an array constant larger than this is never shared


def _slots_of(value) -> frozenset:
    d = object.__getattribute__(value, "__dict__")
    return frozenset((d["slot"],)) if "slot" in d else d.get("slots", frozenset((-1,)))


def _slot_sign(value: "_WatchedFloat") -> tuple[int, int]:
    d = object.__getattribute__(value, "__dict__")
    return d["slot"], d["sign"]


def _elements(value: np.ndarray, by_bits: dict) -> tuple:
    """(flat index, or None for a 0-d value; slot; sign) of each element holding a stand-in."""
    if value.ndim == 0:
        found = by_bits.get(value.tobytes())
        return ((None,) + found,) if found is not None else ()
    raw = np.ascontiguousarray(value).tobytes()
    out = []
    for k in range(value.size):
        found = by_bits.get(raw[8 * k:8 * k + 8])
        if found is not None:
            out.append((k,) + found)
    return tuple(out)


_current: _Watch | None = None


_SIGNS = {np.negative: -1, np.positive: 1}


class Watched(np.ndarray):
    """A number literal's value under watch: any use but its shape marks its slot read."""

    def _mark(self):
        if _current is not None:
            _current.read.update(_slots_of(self))

    def __getattribute__(self, name):
        if name not in _SHAPE_ATTRIBUTES:
            Watched._mark(self)
        return super().__getattribute__(name)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if ufunc in _SIGNS and method == "__call__" and len(inputs) == 1 and not kwargs:
            # `-3` is folded while lowering: the literal negated, exactly, still watched
            d = object.__getattribute__(self, "__dict__")
            out = np.asarray(ufunc(np.ndarray.view(self, np.ndarray))).view(Watched)
            out.__dict__.update(d)
            if "slot" in d:
                out.__dict__["sign"] = d.get("sign", 1) * _SIGNS[ufunc]
            return out
        for v in inputs:
            if isinstance(v, Watched):
                Watched._mark(v)
        inputs = tuple(v.view(np.ndarray) if isinstance(v, Watched) else v for v in inputs)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        Watched._mark(self)
        return super().__array_function__(func, types, args, kwargs)


def _marking(watched: type, base: type, name: str):
    """`base`'s method `name` for the watched type: it marks the value read, then runs."""
    method_of_base = getattr(base, name)

    def method(self, *args, **kwargs):
        watched._mark(self)
        return method_of_base(self, *args, **kwargs)
    method.__name__ = name
    return method


for _name in ("__float__", "__int__", "__index__", "__bool__", "__complex__", "__getitem__", "__setitem__",
              "__iter__", "__len__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__repr__",
              "__str__", "__format__", "__copy__", "__deepcopy__", "__reduce__", "__reduce_ex__", "__array__",
              "__contains__", "__abs__", "__invert__", "__round__"):  # (- and + are ufuncs: below)
    if hasattr(np.ndarray, _name):
        setattr(Watched, _name, _marking(Watched, np.ndarray, _name))


class _WatchedParams(dict):
    """A free number's equation's parameters: reading its value while compiling marks it.
    `elements`: (flat index, or None for a 0-d value; slot; sign) of each free number in it."""

    def __init__(self, params, elements: tuple):
        super().__init__(params)
        self.elements = elements

    def _mark(self):
        if _current is not None:
            _current.read.update(slot for _, slot, _ in self.elements)

    def __getitem__(self, key):
        if key == "value":
            self._mark()
        return super().__getitem__(key)

    def get(self, key, default=None):
        if key == "value":
            self._mark()
        return super().get(key, default)

    def __iter__(self):  # makes dict(params) and {**params} go through __getitem__
        return super().__iter__()

    __hash__ = None


for _name in ("items", "values", "copy", "__reduce__", "__reduce_ex__", "__eq__", "__ne__", "__repr__", "__or__",
              "__ror__"):
    setattr(_WatchedParams, _name, _marking(_WatchedParams, dict, _name))


class _WatchedFloat(float):
    """A free number as Graph.scalar_constant gives it to a simplification (`x * 1` is x,
    `x ** 0`): comparing it for equality with a number is recorded as a constraint (the
    shared program holds for the lines whose number differs from it, as the stand-in did);
    any other use marks it read."""

    def __new__(cls, value, slot, sign):
        self = super().__new__(cls, value)
        self.__dict__.update(slot=slot, sign=sign)
        return self

    def _mark(self):
        if _current is not None:
            _current.read.add(object.__getattribute__(self, "__dict__")["slot"])

    def __getattribute__(self, name):
        if name != "__dict__":
            _WatchedFloat._mark(self)
        return super().__getattribute__(name)

    def _compare(self, other, equal: bool):
        if other is None:
            return NotImplemented
        if type(other) in (float, int, np.float64) and _current is not None:
            d = object.__getattribute__(self, "__dict__")
            _current.constraints.add((d["slot"], d["sign"], float(other)))
            same = float.__eq__(self, float(other))
            return same if equal else not same
        _WatchedFloat._mark(self)
        return float.__eq__(self, other) if equal else float.__ne__(self, other)

    def __eq__(self, other):
        return _WatchedFloat._compare(self, other, True)

    def __ne__(self, other):
        return _WatchedFloat._compare(self, other, False)


for _name in ("__hash__", "__float__", "__int__", "__bool__", "__lt__", "__le__", "__gt__", "__ge__", "__add__",
              "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__", "__pow__",
              "__rpow__", "__neg__", "__pos__", "__abs__", "__round__", "__floor__", "__ceil__", "__trunc__",
              "__repr__", "__str__", "__format__", "__mod__", "__rmod__", "__floordiv__", "__rfloordiv__",
              "__divmod__", "__rdivmod__", "__reduce__", "__reduce_ex__", "__getnewargs__"):
    setattr(_WatchedFloat, _name, _marking(_WatchedFloat, float, _name))


class _Template:
    """A prepared program of a shape, the equation each free number's value goes to, and the
    constants folded of them (computed again for each line, as the fold computed them)."""

    __slots__ = ("prepared", "numbers", "free", "derived", "constraints", "arrays", "replay")

    def __init__(self, prepared, free: list[tuple[int, int, int, int | None]], derived: list, constraints):
        self.prepared = prepared
        self.numbers = sorted({slot for slot, _, _, _ in free if slot not in {d[0] for d in derived}})
        # (slot, equation id, sign: -1 where the literal was negated (`-3`), flat index in an array or None)
        self.free = free
        self.derived = derived  # (slot, op, arguments: ("w", slot, sign) or ("n", number)), in order
        self.constraints = constraints  # (slot, sign, number): lines where it equals the number are not shared
        graph = prepared.graph
        self.arrays = {id_: np.array(dict.__getitem__(graph.equations[id_].params, "value"))
                       for _, id_, _, index in free if index is not None}  # each array's other numbers
        self.replay: _Replay | None | bool = None  # made after the first run (False: none can be)

    def values(self, literals: list[str]) -> dict[int, float] | None:
        """Each free number's value in a line (and each folded constant's), or None where one
        is not finite."""
        values = {}
        for slot in self.numbers:
            value = float(literals[slot])
            if not math.isfinite(value):
                return None
            values[slot] = value
        for slot, op, args in self.derived:
            numbers = [_signed(values[a[1]], a[2]) if a[0] == "w" else a[1] for a in args]
            exact = _EXACT.get(op.name)
            if exact is not None and len(numbers) == len(exact.__code__.co_varnames):
                values[slot] = exact(*numbers)  # (Python's float arithmetic: the same IEEE operation)
            else:
                with np.errstate(all="ignore"):
                    values[slot] = float(op.forward(np, *map(np.float64, numbers)))
        return values

    def overrides(self, values: dict[int, float]) -> dict[int, np.ndarray]:
        """The free numbers' equations' values ({equation id: array}, as `result()` takes them)."""
        overrides = {id_: base.copy() for id_, base in self.arrays.items()}
        for slot, id_, sign, index in self.free:
            if index is None:
                overrides[id_] = np.array(_signed(values[slot], sign), dtype=np.float64)
            else:
                overrides[id_].flat[index] = _signed(values[slot], sign)
        return overrides

    def unshared(self, values: dict[int, float]) -> set[int]:
        """The slots whose value is one a simplification compared with (`x * 1`): a program
        compiled with it would be simplified differently."""
        return {slot for slot, sign, number in self.constraints if _signed(values[slot], sign) == number}


class _Replay:
    """A template's program run as `engine.evaluate.run` runs it on NumPy in float64 (the same
    operations on the same values, in the same order: the same numbers), without the numerical
    checks, for the lines where those checks would find nothing to say: every value (each
    equation's, as it is made) finite and far below float32's largest number squared (the
    checks' headroom), in a program with no kink or tie to look for (no differentiated op with
    one), no assertion and nothing the shapes alone diagnose. Any other line (None) runs the
    checked path: what it says is then the line's own compilation's (LineCache._run)."""

    __slots__ = ("command", "steps", "fetch", "free")

    @classmethod
    def of(cls, template: _Template) -> _Replay | None:
        prepared = template.prepared
        command = prepared._default()  # (the command `result()` runs: its graph, fetch and finish)
        graph, chosen = command.graph, prepared._compiled()[1]
        if type(chosen) is not Backend or prepared.options.dtype != "float64" or command.store is not None \
                or not command.checked or command.overrides or graph.assertions or graph.warnings \
                or graph.dtypes or accidental_broadcasts(graph):  # (dtypes: casts, each value in its type)
            return None
        keep = set(command.fetch.values())
        free = {id_: index is None for _, id_, _, index in template.free}
        replay = object.__new__(cls)
        replay.command, replay.fetch, replay.steps = command, list(command.fetch.items()), []
        replay.free = [(slot, id_, sign) for slot, id_, sign, index in template.free if index is None]
        for i in needed_equations(graph, list(dict.fromkeys(command.fetch.values()))):
            eq = graph.equations[i]
            if eq.op.kink is not None and i in graph.differentiated:
                return None  # (its check counts ties and kinks in the values)
            if not eq.inputs:  # a source: (i, None, its value as the run holds it or None: the line's, a 0-d kept)
                value = np.asarray(dict.__getitem__(eq.params, "value"), np.float64)
                if not _clean(value):  # (a constant the checks would speak of)
                    return None
                number = value.ndim == 0 and i not in keep
                replay.steps.append((i, None, None if i in free else value[()] if number else value,
                                     value.ndim == 0 and i in keep, None))
            else:  # an op: (i, its inputs, the scalar operator or None, its forward, its parameters or None)
                replay.steps.append((i, eq.inputs, SCALAR_OPERATORS.get(eq.op.ufunc), eq.op.forward,
                                     dict(dict.items(eq.params)) or None))
        return replay

    def __call__(self, template: _Template, values: dict[int, float]):
        """The line's answer (its free numbers' `values`), or None where the checks must run."""
        given = {id_: base.copy() for id_, base in template.arrays.items()}
        for slot, id_, sign, index in template.free:
            value = _signed(values[slot], sign)
            if not abs(value) <= _LARGEST_CLEAN:
                return None
            if index is None:
                given[id_] = np.float64(value)
            else:
                given[id_].flat[index] = value
        env, scalar, f64, limit = {}, np.float64, np.float64, _SQUARE_LIMIT
        try:
            with np.errstate(all="ignore"):
                for i, inputs, a, b, params in self.steps:
                    if inputs is None:  # a source: checked once (a constant) or above (the line's)
                        env[i] = (np.array(given[i]) if b else given[i]) if a is None else a
                        continue
                    args = [env[j] for j in inputs]
                    if a is not None and type(args[0]) is scalar and type(args[-1]) is scalar:
                        value = a(*args)
                        square = value * value
                    else:
                        value = b(np, *args, **params) if params else b(np, *args)
                        if type(value) is scalar:
                            square = value * value
                        else:
                            if value.dtype != f64:
                                value = value.astype(f64)
                            square = np.vdot(value, value)
                    if not square <= limit:  # (NaN too) the checks would look closer: their path
                        return None
                    env[i] = value
            result = self.command.finish({name: np.array(env[i]) for name, i in self.fetch}, [])
        except Exception:  # (the checked path meets it too, and says it in the line's own terms)
            return None
        return None if result.diagnostics else result


def _clean(value: np.ndarray) -> bool:
    flat = value.reshape(-1)
    return bool(flat @ flat <= _SQUARE_LIMIT / 2)


_SQUARE_LIMIT = float(np.finfo(np.float32).max) ** 2  # the checks' headroom trigger in float64
# a number of the line, at most 4096 of them in an array (MAX_WATCHED_ELEMENTS) beside constants
# whose square sum is at most half the trigger: the array's square sum stays below it
_LARGEST_CLEAN = 1e30


# folds that Python's floats compute exactly as NumPy's float64 does (correctly rounded, an
# overflow giving an infinity, not an exception; not division: Python raises on a zero)
_EXACT = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b, "multiply": lambda a, b: a * b,
          "negative": lambda a: -a}


def _signed(value: float, sign: int) -> float:
    return -value if sign < 0 else value


class LineCache:
    """`compute(text, name)` for --lines: `full(text, name)` is the command's own library
    call (a Result), `prepare(text, name)` the same call up to running (an api.Prepared);
    the answer is always what `full` gives."""

    def __init__(self, full, prepare):
        self.full, self.prepare = full, prepare
        self.shapes: OrderedDict = OrderedDict()  # shape -> [times seen, builds left, set of fixed slot tuples]
        self.templates: OrderedDict = OrderedDict()  # (shape, fixed slots, their texts) -> _Template | None

    def __call__(self, text: str, name: str):
        if len(text) > MAX_SHARED_TEXT or "\r" in text or text.startswith("\ufeff"):
            return self.full(text, name)
        pieces = _LITERAL.split(text)
        if len(pieces) == 1:  # no numbers: nothing to share
            return self.full(text, name)
        shape = tuple(pieces[0::2])
        literals = pieces[1::2]
        known = self.shapes.get(shape)
        if known is None:
            self.shapes[shape] = [1, BUILDS_PER_SHAPE, set()]
            if len(self.shapes) > MAX_SHAPES:
                self.shapes.popitem(last=False)
            return self.full(text, name)
        self.shapes.move_to_end(shape)
        known[0] += 1
        for fixed in known[2]:
            key = (shape, fixed, tuple(literals[i] for i in fixed))
            if key in self.templates:
                self.templates.move_to_end(key)
                return self._run(self.templates[key], text, name, literals)
        if known[1] <= 0:
            return self.full(text, name)
        known[1] -= 1
        template, fixed = self._build(text, name, pieces)
        known[2].add(fixed)
        self.templates[(shape, fixed, tuple(literals[i] for i in fixed))] = template
        if len(self.templates) > MAX_TEMPLATES:
            self.templates.popitem(last=False)
        return self._run(template, text, name, literals)

    def _run(self, template: _Template | None, text: str, name: str, literals: list[str]):
        if template is None:  # the shape is not shared
            return self.full(text, name)
        values = template.values(literals)
        if values is None or template.unshared(values):  # compiled alone, it would be another program
            return self.full(text, name)
        replay = template.replay
        if replay:
            result = replay(template, values)
            if result is not None:
                return result
        try:
            result = template.prepared.result(template.overrides(values))
        except Exception:  # the line's own compilation says what went wrong, and where
            return self.full(text, name)
        if replay is None:
            template.replay = _Replay.of(template) or False
        if result.diagnostics:
            return self.full(text, name)
        return result

    def _build(self, text: str, name: str, pieces: list[str]):
        """The line's shape's template (None where it cannot be shared) and its fixed slots."""
        try:
            return self._learn(text, name, pieces)
        except Exception:  # learning is an optimisation: the line is then compiled on its own
            return None, tuple(range(len(pieces) // 2))

    def _learn(self, text: str, name: str, pieces: list[str]):
        literals = pieces[1::2]
        offsets, at = {}, 0
        for k, piece in enumerate(pieces):
            if k % 2:
                offsets[at] = k // 2
            at += len(piece)
        slots = range(len(literals))
        free = {i for i in slots if math.isfinite(float(literals[i]))}
        for _ in range(_ROUNDS):
            first = self._watched(text, name, offsets, literals, free, 0)
            if first is None:
                break
            prepared, watch, unmade = first
            read = watch.based(watch.read)
            if -1 in read:  # a watched value whose numbers are not known was used
                break
            if read or unmade:
                free -= read | unmade
                continue
            if not free:
                break
            second = self._watched(text, name, offsets, literals, free, 1)
            if second is None or second[0] is None or second[1].read or second[2]:
                break
            if not _same_graph(first, second):
                compared = watch.based(watch.compared)
                if free & compared:  # a simplification used a value (folded it): those are fixed
                    free -= compared
                    continue
                break
            if prepared.graph.warnings:
                break
            found = _slot_equations(prepared.graph, watch.standins, skip=set(watch.derived_eq.values()))
            free_eqs = [(slot, id_, sign, index) for slot, (id_, sign, index) in sorted(found.items())]
            free_eqs += [(slot, watch.derived_eq[slot], 1, None) for slot, _, _ in watch.derived]
            named = _named(prepared, literals) & free
            if named:  # a name taken from the text (`print(f(2.0))` is named `f(2.0)`): those are fixed
                free -= named
                continue
            template = _Template(prepared, free_eqs, watch.derived, sorted(watch.constraints | second[1].constraints))
            values = template.values(literals)
            unshared = set() if values is None else watch.based(template.unshared(values))
            if unshared:  # this line's own numbers would be simplified (`x ** 2`): those are fixed
                free -= unshared
                continue
            return template, tuple(i for i in slots if i not in free)
        return None, tuple(slots)

    @staticmethod
    def _standins(free, round_: int) -> dict[int, float]:
        # numbers no program means: not integers, not 0, 1, 2 or 1/2, different in each round
        # and for each number
        return {i: (0.6180339887498949 + 0.0137 * i) * (1.7320508075688772 if round_ else 1.0) + 0.31 * round_
                for i in free}

    def _watched(self, text, name, offsets, literals, free, round_: int):
        """Compile with the free numbers watched: (prepared, the watch, slots that did not
        become exactly one constant (or array element)); (None, the watch, set()) where it
        failed after reading numbers; None where it failed without a read to blame."""
        global _current
        standins = self._standins(free, round_)
        watch = _Watch(offsets, standins, literals)
        _current = watch
        try:
            with numbers_read_by(watch):
                prepared = self.prepare(text, name)
        except Exception:
            if watch.read:
                return None, watch, set()
            return None
        finally:
            _current = None
        graph = prepared.graph
        if set(watch.derived_eq) != {slot for slot, _, _ in watch.derived}:
            return None
        derived = set(watch.derived_eq.values())
        made = _slot_equations(graph, standins, count=True, skip=derived)
        unmade = {i for i in free if made.get(i) != 1 or watch.met.get(i) != 1}
        for slot, (id_, _, _) in _slot_equations(graph, standins, skip=derived).items():
            if type(graph.equations[id_].params) is not _WatchedParams:
                unmade.add(slot)  # its reads were not watched: it cannot be shared
        return prepared, watch, unmade


def _named(prepared, literals: list[str]) -> set[int]:
    """The slots whose text is in a name of the answer (a printed expression's own text)."""
    written = {m for name in prepared.fetch for m in _LITERAL.findall(name)}
    return {i for i, literal in enumerate(literals) if literal in written}


def _by_bits(standins: dict[int, float]) -> dict[bytes, tuple[int, int]]:
    """A stand-in's bits, and its negation's, -> (slot, sign)."""
    out = {}
    for slot, v in standins.items():
        out[np.float64(v).tobytes()] = (slot, 1)
        out[np.float64(-v).tobytes()] = (slot, -1)
    return out


def _slot_equations(graph, standins: dict[int, float], count: bool = False, skip=frozenset()) -> dict:
    """Each free slot's (equation, sign, flat index or None) (or with `count`, how many
    parameters anywhere hold its stand-in or its negation: exactly one, an element of its own
    constant or input default, is what sharing needs). `skip`: the derived constants."""
    by_bits = _by_bits(standins)
    values = np.array([x for v in standins.values() for x in (v, -v)], dtype=np.float64)
    found: dict = {}
    for id_, eq in enumerate(graph.equations):
        if id_ in skip:
            continue
        for key, value in dict.items(eq.params):
            if not isinstance(value, np.ndarray) or value.dtype.kind not in "fc" or value.size == 0:
                if isinstance(value, (float, np.floating)) and np.float64(value).tobytes() in by_bits:
                    slot = by_bits[np.float64(value).tobytes()][0]
                    found[slot] = found.get(slot, 0) + 2  # a parameter, not a value: never shared
                continue
            if key == "value" and eq.op.name in ("const", "input") and value.dtype == np.float64 and \
                    value.size <= MAX_WATCHED_ELEMENTS:
                for index, slot, sign in _elements(value, by_bits):
                    if count:
                        found[slot] = found.get(slot, 0) + 1
                    else:
                        found[slot] = (id_, sign, index)
                continue
            if count and np.isin(value, values).any():
                for slot, v in standins.items():
                    if (value == v).any() or (value == -v).any():
                        found[slot] = found.get(slot, 0) + 2
    return found


def _same_graph(first, second) -> bool:
    """The two watched compilations made the same program but for the free numbers' values."""
    (a, wa, _), (b, wb, _) = first, second
    ga, gb = a.graph, b.graph
    if len(ga.equations) != len(gb.equations) or ga.shapes != gb.shapes or a.fetch != b.fetch:
        return False
    if ga.names != gb.names or ga.inputs != gb.inputs or ga.result != gb.result or ga.warnings != gb.warnings:
        return False
    if wa.derived_eq != wb.derived_eq or [(s, op, args) for s, op, args in wa.derived] != [
            (s, op, args) for s, op, args in wb.derived]:
        return False
    derived = set(wa.derived_eq.values())
    slots_a = _slot_equations(ga, wa.standins, skip=derived)
    if slots_a != _slot_equations(gb, wb.standins, skip=derived):
        return False
    free_at: dict[int, list] = {}  # equation -> the flat indices of its free numbers (None: all of it)
    for id_, _, index in slots_a.values():
        free_at.setdefault(id_, []).append(index)
    for id_ in derived:
        free_at[id_] = [None]
    for id_, (ea, eb) in enumerate(zip(ga.equations, gb.equations)):
        if ea.op is not eb.op or ea.inputs != eb.inputs or ea.backward != eb.backward or ea.label != eb.label:
            return False
        pa, pb = dict(dict.items(ea.params)), dict(dict.items(eb.params))
        if id_ in free_at:
            pa["value"], pb["value"] = (_without(p["value"], free_at[id_]) for p in (pa, pb))
        if pa.keys() != pb.keys():
            return False
        for key in pa:
            x, y = pa[key], pb[key]
            if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
                if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.dtype == y.dtype
                        and x.shape == y.shape and x.tobytes() == y.tobytes()):
                    return False
            elif type(x) is not type(y) or repr(x) != repr(y):
                return False
    return True


def _without(value: np.ndarray, indices: list) -> np.ndarray | None:
    """An array with its free numbers (at `indices`, None: the whole value) taken out."""
    if None in indices:
        return None
    out = np.array(value)
    out.flat[indices] = 0.0
    return out


def cached(full, prepare):
    """A --lines `compute(text, name, feeds, limit)` that shares compiled programs between
    lines (see the module's docstring); `full` and `prepare` take the same arguments."""
    caches: dict = {}

    def compute(text, name, feeds, limit):
        key = (id(feeds), limit)
        if key not in caches:
            caches.clear()
            caches[key] = LineCache(lambda t, n: full(t, n, feeds, limit), lambda t, n: prepare(t, n, feeds, limit))
        return caches[key](text, name)
    return compute
