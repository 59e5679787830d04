"""Shapes and axes as the op records compute them: broadcasting, reductions, and the NumPy-only
work some records do on the host."""
from __future__ import annotations

import math
import sys

from gradcli.errors import ShapeError
from gradcli.ops.trace import G, Sym


FULL = (None, None, None)  # a whole axis, as the static index of `G.index` / `G.scatter` spells slices


def _along(axis: int, item) -> tuple:
    """A static index selecting `item` (an int, or (start, stop, step)) on `axis`."""
    return (FULL,) * axis + (item,)


def fmt_shape(shape) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def broadcast_shapes(*shapes):
    first = shapes[0]
    if all(s == first for s in shapes[1:]):  # the common case, and a cheap one
        return tuple(first)
    result: list[int] = []
    for shape in shapes:
        if len(shape) > len(result):
            result = [1] * (len(shape) - len(result)) + result
        for i, dim in enumerate(shape, len(result) - len(shape)):
            if result[i] == 1:
                result[i] = dim
            elif dim != 1 and dim != result[i]:
                raise ShapeError("shapes " + " and ".join(fmt_shape(s) for s in shapes)
                                 + " cannot be broadcast together")
    return tuple(result)


def nonnegative_axes(axes, ndim: int) -> list[int]:
    """Each axis as a non-negative int, in the order given; ShapeError where one is out of range."""
    out = []
    for a in axes:
        if not -ndim <= a < ndim:  # a number has no axis 0 (NumPy and TensorFlow refuse it too)
            raise ShapeError(f"axis {a} is out of range for an array of rank {ndim}")
        out.append(a % ndim)
    return out


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """Axes of a reduction as sorted non-negative ints; None is every axis."""
    if axis is None:
        return tuple(range(ndim))
    out = nonnegative_axes((axis,) if isinstance(axis, int) else tuple(axis), ndim)
    if len(set(out)) != len(out):
        raise ShapeError(f"axis {axis} repeats an axis")
    return tuple(sorted(out))


def reduced_shape(shape, axis=None, keepdims=False):
    axes = normalize_axes(axis, len(shape))
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def nested_ints(array):
    """An integer array as an int or nested tuples of ints (hashable, as static parameters are),
    built level by level from the innermost axis (no recursion)."""
    import numpy as np
    array = np.asarray(array)
    items = [int(v) for v in array.reshape(-1)]
    if array.ndim == 0:
        return items[0]
    for k in reversed(range(array.ndim)):
        d = array.shape[k]
        items = [tuple(items[g * d:(g + 1) * d]) for g in range(math.prod(array.shape[:k]))]
    return items[0]


def _same(shape, **_):
    return shape


def _broadcast(*shapes, **_):
    return broadcast_shapes(*shapes)


# --------------------------------------------------------------------------- NumPy-only work on a device array

def is_numpy(xp) -> bool:
    """Whether the namespace is NumPy itself: the module object asked, not its name (NumPy is
    loaded wherever an array exists, so this module need not import it); or NumPy as a half
    type computes with it (gradcli/engine/half.py: host arrays, NumPy's functions)."""
    return xp is sys.modules.get("numpy") or getattr(type(xp), "host_numpy", False)


def to_host(xp, a):
    """a as a NumPy array: itself under NumPy, a host copy of a device (CuPy) array. A namespace
    with neither (Dask's) fails here, so that an evaluator computing lazily runs the op whole,
    under its memory guard."""
    return a if is_numpy(xp) else xp.asnumpy(a)


def on_host(xp, fn, *arrays):
    """fn(*arrays) with NumPy: on host copies where xp is not NumPy (CuPy lacks ufunc.at,
    ufunc.accumulate, SciPy), its result moved back."""
    if is_numpy(xp):
        return fn(*arrays)
    return xp.asarray(fn(*(to_host(xp, a) for a in arrays)))


def _nonempty_reduction_shape(shape, axis=None, keepdims=False):
    out = reduced_shape(shape, axis, keepdims)
    axes = normalize_axes(axis, len(shape))
    if any(shape[a] == 0 for a in axes):
        raise ShapeError("reduction over an empty axis has no identity")
    return out


def _keep(g: Sym, x_shape, axis, keepdims) -> Sym:
    """g of a reduction's output, reshaped so that it broadcasts against the input."""
    if keepdims:
        return g
    return G.reshape(g, shape=reduced_shape(x_shape, axis, True))


def _spread(g: Sym, x: Sym, axis, keepdims) -> Sym:
    return G.broadcast_to(_keep(g, x.shape, axis, keepdims), shape=x.shape)


def inverse_permutation(perm) -> tuple:
    """The axes that undo a transpose by perm."""
    return tuple(sorted(range(len(perm)), key=perm.__getitem__))


def _permuted(x: Sym, perm) -> Sym:
    """x transposed by perm; x itself where perm keeps every axis in place."""
    return x if tuple(perm) == tuple(range(len(perm))) else G.transpose(x, axes=tuple(perm))


def _count(shape, axis) -> int:
    return math.prod(shape[a] for a in normalize_axes(axis, len(shape)))
