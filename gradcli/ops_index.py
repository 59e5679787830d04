"""The op table, continued: indexing with constant integer arrays and boolean masks (NumPy's
advanced indexing), and JAX's functional updates `x.at[idx].set(v)` / `.add(v)`.

An index is a static parameter: a tuple whose items are ints, `(start, stop, step)` slices,
None (a new axis), Ellipsis, or an `IndexArray` (an integer array or a boolean mask written
in the program). The shapes follow NumPy's rules, mixed basic and advanced indices included
(NumPy itself computes them, on an array of zero strides that costs no memory).

- `gather_index(x, index)`: `x[index]`. Its gradient is `scatter_add_index`, which adds the
  cotangent back where the index took it from (a repeated index accumulates), and whose own
  gradient is the gather again: second derivatives are exact.
- `index_set(x, v, index)`: x with v (broadcast to the indexed shape) written at `index`
  (`x.at[idx].set(v)`); d/dx is g with zeros at the index, d/dv the gather of g.

Each op is one record registered with `gradcli.ops.register` (see gradcli/ops.py).
"""
from __future__ import annotations

import numpy as np

from .errors import ShapeError
from .ops import G, REQUIRED, Op, broadcast_shapes, fmt_shape, register


class IndexArray:
    """An integer array (or a boolean mask) of an index, hashable so that an equation's
    parameters can be compared and shared."""

    __slots__ = ("array", "_key")

    def __init__(self, array):
        array = np.asarray(array)
        array = array.astype(np.bool_ if array.dtype == np.bool_ else np.intp)
        array.setflags(write=False)
        self.array = array
        self._key = (array.dtype.char, array.shape, array.tobytes())

    @property
    def boolean(self) -> bool:
        return self.array.dtype == np.bool_

    def __hash__(self):
        return hash(self._key)

    def __eq__(self, other):
        return isinstance(other, IndexArray) and self._key == other._key

    def __repr__(self):
        return np.array2string(self.array, separator=", ", threshold=20).replace("\n", "")

    __str__ = __repr__


def is_advanced(index) -> bool:
    return any(isinstance(item, IndexArray) for item in index)


def numpy_index(index, expand_masks: bool = False):
    """The static index as a NumPy index. With `expand_masks`, a boolean mask becomes the
    integer arrays of its nonzero() (what NumPy reads it as), for `np.add.at`."""
    out = []
    for item in index:
        if isinstance(item, tuple):
            out.append(slice(*item))
        elif isinstance(item, IndexArray):
            if expand_masks and item.boolean:
                out.extend(np.nonzero(item.array))
            else:
                out.append(item.array)
        else:
            out.append(item)
    return tuple(out)


def indexed_shape(shape, index) -> tuple:
    """The shape of x[index] by NumPy's rules, or ShapeError (an index out of range, a mask
    of the wrong shape)."""
    probe = np.broadcast_to(np.empty((), dtype=np.int8), tuple(shape))  # no memory, any shape
    try:
        return probe[numpy_index(index)].shape
    except IndexError as exc:
        raise ShapeError(_reworded(str(exc))) from None


def _reworded(message: str) -> str:
    if message.startswith("index ") and "out of bounds" in message:
        return message.replace("is out of bounds", "is out of range") + " (as in NumPy; JAX would clamp it)"
    return message


def flat_positions(shape, index) -> np.ndarray:
    """The flat positions of x that x[index] reads, in its order (to find repeats)."""
    return np.arange(int(np.prod(shape)), dtype=np.intp).reshape(shape)[numpy_index(index)].reshape(-1)


def _gather(xp, x, index):
    return x[numpy_index(index)]


def _scatter_add(xp, g, shape, index):
    out = xp.zeros(shape, dtype=g.dtype)
    idx = numpy_index(index, expand_masks=True)
    if hasattr(xp, "add") and hasattr(xp.add, "at"):
        xp.add.at(out, idx, g)
    else:  # CuPy
        import cupyx  # noqa: PLC0415

        cupyx.scatter_add(out, idx, g)
    return out


def _scatter_add_shape(g, shape, index):
    want = indexed_shape(shape, index)
    if tuple(g) != want:
        raise ShapeError(f"the values have shape {fmt_shape(g)}, the index selects {fmt_shape(want)}")
    return tuple(shape)


def _set(xp, x, v, index):
    out = x.copy()
    out[numpy_index(index)] = v
    return out


def _set_shape(x, v, index):
    want = indexed_shape(x, index)
    try:
        ok = broadcast_shapes(v, want) == want
    except ShapeError:
        ok = False
    if not ok:
        raise ShapeError(f"values of shape {fmt_shape(v)} cannot be written where the index selects "
                         f"{fmt_shape(want)} (they must broadcast to it)")
    return tuple(x)


def gather(g, index):
    """g[index] as an equation of a gradient: the basic index op where it is one."""
    return G.gather_index(g, index=index) if is_advanced(index) else G.index(g, index=index)


register(Op("gather_index", _gather, lambda x, index: indexed_shape(x, index),
            (lambda g, ans, x, index: G.scatter_add_index(g, shape=x.shape, index=index),),
            params={"index": REQUIRED}, public=False, finite_closed=True,
            doc="x[index] with constant integer arrays or boolean masks (NumPy's advanced indexing)"))
register(Op("scatter_add_index", _scatter_add, _scatter_add_shape,
            (lambda g, ans, x, shape, index: G.gather_index(g, index=index),),
            params={"shape": REQUIRED, "index": REQUIRED}, public=False,
            doc="zeros of `shape` with x added at `index` (repeated positions accumulate): the gradient "
                "of advanced indexing"))
register(Op("index_set", _set, _set_shape,
            (lambda g, ans, x, v, index: G.index_set(g, 0.0, index=index),
             lambda g, ans, x, v, index: gather(g, index)),
            args=("x", "v"), params={"index": REQUIRED}, public=False, finite_closed=True,
            doc="x with v written at index (JAX's x.at[index].set(v))"))
