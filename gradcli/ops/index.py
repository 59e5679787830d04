"""The op table, continued: indexing with constant integer arrays and boolean masks (NumPy's
advanced indexing), and JAX's functional updates `x.at[idx].set(v)` / `.add(v)` ...

An index is a static parameter of the `index` op (gradcli/ops/__init__.py): a tuple whose items are
ints, `(start, stop, step)` slices, None (a new axis), Ellipsis, or an `IndexArray` (an
integer array or a boolean mask written in the program). The shapes follow NumPy's rules,
mixed basic and advanced indices included (NumPy computes them, on an array of zero strides
that costs no memory). x[index] with arrays is the same op as with ints and slices, so its
gradient is the same `scatter`, which adds up the values an index array takes from one
position twice; the scatter's own gradient is the gather, so second derivatives are exact,
and `gradcli derive` prints both (`x[[0, 2, 2]]`, a list of sums).

JAX's updates are lowered to the same ops (`update`): `.add(v)` is `x + scatter(v)`,
`.set(v)` is `where(keep, x, scatter(v))` with `keep` the constant mask of the positions not
indexed, `.multiply(v)` is `x * where(keep, 1, scatter(v))` (x itself where not indexed: no
0 * inf), `.min(v)` is `where(keep, x, minimum(x, scatter(v)))`. Gradients in x and v are
those ops' own.
"""
from __future__ import annotations

import numpy as np

from gradcli.errors import ShapeError
from gradcli.ops.core import _index_shape, _index_tuple
from gradcli.ops.shapes import broadcast_shapes, fmt_shape


class IndexArray:
    """An integer array (or a boolean mask) of an index, hashable so that an equation's
    parameters can be compared and shared; prints as the list it is written as."""

    __slots__ = ("array", "_key")

    def __init__(self, array):
        array = np.asarray(array)
        array = array.astype(np.bool_ if array.dtype == np.bool_ else np.intp)
        array.setflags(write=False)
        self.array = array
        self._key = (array.dtype.char, array.shape, array.tobytes())

    def __hash__(self):
        return hash(self._key)

    def __eq__(self, other):
        return isinstance(other, IndexArray) and self._key == other._key

    def __repr__(self):
        return np.array2string(self.array, separator=", ", threshold=self.array.size + 1,
                               max_line_width=10 ** 9).replace("\n", "")

    __str__ = __repr__


def is_advanced(index) -> bool:
    return any(isinstance(item, IndexArray) for item in index)


def indexed_shape(shape, index) -> tuple:
    """The shape of x[index] by NumPy's rules, or ShapeError (an index out of range, a mask
    of the wrong shape)."""
    return _index_shape(tuple(shape), index)


def repeats(shape, index) -> bool:
    """Whether x[index] reads some position of x twice."""
    positions = np.arange(int(np.prod(shape)), dtype=np.intp).reshape(shape)[_index_tuple(index)].reshape(-1)
    return np.unique(positions).size != positions.size


def keep_mask(shape, index) -> np.ndarray:
    """1 where x[index] does not read, 0 where it does."""
    keep = np.ones(shape)
    keep[_index_tuple(index)] = 0.0
    return keep


UPDATES = ("set", "add", "multiply", "mul", "divide", "power", "min", "max", "get")


def update(emit, constant, x: int, v: int | None, method: str, index: tuple, shape: tuple, v_shape):
    """`x.at[index].<method>(v)` as equations: `emit(op name, ids, params) -> id`,
    `constant(array) -> id`. Raises ShapeError for values that do not broadcast to the
    selection, and for a repeated index where the update would be ambiguous."""
    if method == "get":
        return emit("index", (x,), {"index": index})
    selected = indexed_shape(shape, index)
    try:
        fits = broadcast_shapes(v_shape, selected) == selected
    except ShapeError:
        fits = False
    if not fits:
        raise ShapeError(f"values of shape {fmt_shape(v_shape)} cannot be written where the index selects "
                         f"{fmt_shape(selected)} (they must broadcast to it)")
    if tuple(v_shape) != selected:
        v = emit("broadcast_to", (v,), {"shape": selected})
    spread = emit("scatter", (v,), {"shape": tuple(shape), "index": index})
    if method == "add":
        return emit("add", (x, spread), {})
    if is_advanced(index) and repeats(shape, index):
        raise ShapeError(f"{method}() with a repeated index: JAX leaves which update wins unspecified (set) or "
                         "applies each in turn (multiply, min, max); use unique indices, or .add (which adds up)")
    keep = constant(keep_mask(shape, index))
    if method == "set":
        return emit("where", (keep, x, spread), {})
    if method in ("min", "max"):
        chosen = emit("minimum" if method == "min" else "maximum", (x, spread), {})
        return emit("where", (keep, x, chosen), {})
    factor = emit("where", (keep, constant(np.float64(1.0)), spread), {})
    name = {"multiply": "multiply", "mul": "multiply", "divide": "divide", "power": "power"}[method]
    return emit(name, (x, factor), {})
