"""The op table, continued (after gradcli/ops/array.py): selection with constant integer indices
(the pair `gather_axis` / `gather_axis_add`: a gather and its scatter-add, each the other's gradient),
padding, broadcasting to a common shape, diagonals and triangles, and selection by value."""
from __future__ import annotations

import math

import numpy as np

from gradcli.ops.trace import G
from gradcli.ops.table import NO_GRADIENT, NOT_DIFFERENTIABLE, REQUIRED, DataError, Op, register
from gradcli.ops.core import _index_shape, _basic_index
from gradcli.ops.shapes import broadcast_shapes, fmt_shape, nested_ints
from gradcli.errors import ShapeError
from gradcli.ops.array import (
    MAX_INDICES, _at_least, _axis, _cotangent_zero, _int, _int_array, _ints, _reshaped, _select_index,
    _shape_param)


# --------------------------------------------------------------------------- gather with constant indices

def _gather_axis_shape(shape, indices, axis):
    idx = _int_array(indices, "indices")
    axis = _axis(len(shape), axis)
    n = shape[axis]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = int(idx.max()) if idx.max() >= n else int(idx.min())
        raise ShapeError(f"index {bad} is out of bounds for axis {axis} with size {n}")
    return tuple(shape[:axis]) + idx.shape + tuple(shape[axis + 1:])


def _gather_axis(xp, x, indices, axis):
    idx = np.asarray(indices, dtype=np.int64)  # taken as one row (the standard's take), then shaped
    out = xp.take(x, xp.asarray(idx.reshape(-1)), axis=axis)
    return out if idx.ndim == 1 else xp.reshape(out, x.shape[:axis] + idx.shape + x.shape[axis + 1:])


def _gather_axis_add(xp, g, indices, axis, size):
    """Zeros with `size` along axis, g's slices added at the indices (repeated ones accumulate)."""
    idx = np.asarray(indices, dtype=np.int64)
    k = idx.ndim
    axis %= max(g.ndim - k + 1, 1)
    lead, rest = g.shape[:axis], g.shape[axis + k:]
    p, q, m = math.prod(lead), math.prod(rest), idx.size
    flat = ((np.arange(p).reshape(p, 1, 1) * size + (idx.reshape(-1) % max(size, 1)).reshape(1, m, 1)) * q
            + np.arange(q).reshape(1, 1, q))
    return _gather_flat_add(xp, g, flat, lead + (size,) + rest)


def _gather_axis_add_shape(shape, indices, axis, size):
    idx = np.asarray(indices)
    size = _int(size, "size")
    if size < 0:
        raise ShapeError(f"size must not be negative, got {size}")
    axis = _axis(len(shape) - idx.ndim + 1, axis)
    if tuple(shape[axis:axis + idx.ndim]) != idx.shape:
        raise ShapeError(f"values of shape {fmt_shape(shape)} do not hold indices of shape {fmt_shape(idx.shape)} "
                         f"at axis {axis}")
    _gather_axis_shape((size,), indices, 0)  # in range
    return tuple(shape[:axis]) + (size,) + tuple(shape[axis + idx.ndim:])


register(Op("gather_axis", _gather_axis, _gather_axis_shape,
            (lambda g, ans, x, indices, axis: G.gather_axis_add(g, indices=indices, axis=axis, size=x.shape[axis]),),
            params={"indices": REQUIRED, "axis": REQUIRED}, finite_closed=True,
            doc="x's slices at constant indices along axis (np.take)"))
register(Op("gather_axis_add", _gather_axis_add, _gather_axis_add_shape,
            (lambda g, ans, x, indices, axis, size: G.gather_axis(g, indices=indices, axis=axis),),
            params={"indices": REQUIRED, "axis": REQUIRED, "size": REQUIRED},
            doc="zeros with x's slices added at constant indices along axis (the gradient of gather_axis)",
            nonstandard="NumPy's bincount"))


def _take_shape(shape, indices, axis=None, mode=None):
    if mode not in (None, "raise"):
        raise ShapeError(f"mode={mode!r} (indices out of range) is not supported: indices must be in range")
    if axis is None:
        return _gather_axis_shape((math.prod(shape),), indices, 0)
    if not shape:
        raise ShapeError("a number has no axis to take along")
    return _gather_axis_shape(shape, indices, _axis(len(shape), axis))


def _take(xp, x, indices, axis=None, mode=None):
    if axis is None:
        return _gather_axis(xp, xp.reshape(x, (-1,)), indices, 0)
    return _gather_axis(xp, x, indices, axis % x.ndim)


def _take_vjp(g, ans, x, indices, axis=None, mode=None):
    if axis is None:
        return G.reshape(G.gather_axis_add(g, indices=indices, axis=0, size=math.prod(x.shape)), shape=x.shape)
    return G.gather_axis_add(g, indices=indices, axis=axis % x.ndim, size=x.shape[axis % x.ndim])


register(Op("take", _take, _take_shape, (_take_vjp,), params={"indices": REQUIRED, "axis": None, "mode": None},
            doc="take(x, indices, axis=None): x's slices at constant integer indices along axis "
                "(of the flattened x where None); the gradient adds up at repeated indices"))


def _gather_shape(shape, indices, validate_indices=None, axis=None, batch_dims=0):
    if batch_dims != 0:
        raise ShapeError(f"batch_dims={batch_dims} is not supported (only 0)")
    idx = _int_array(indices, "indices")
    if idx.size and idx.min() < 0:
        raise ShapeError(f"index {int(idx.min())} is out of bounds: tf.gather takes indices from 0 (TensorFlow "
                         "refuses a negative one on CPU and gives 0 on GPU)")
    return _take_shape(shape, indices, 0 if axis is None else axis)


register(Op("take_batched", lambda xp, x, indices, validate_indices=None, axis=None, batch_dims=0:
            _take(xp, x, indices, 0 if axis is None else axis), _gather_shape,
            (lambda g, ans, x, indices, validate_indices=None, axis=None, batch_dims=0:
             _take_vjp(g, ans, x, indices, 0 if axis is None else axis),),
            params={"indices": REQUIRED, "validate_indices": None, "axis": None, "batch_dims": 0},
            doc="tf.gather(x, indices, axis=0): np.take along axis 0 by default"))
register(Op("index_select", lambda xp, x, axis, index: _take(xp, x, _vector_index(index), axis),
            lambda shape, axis, index: _take_shape(shape, _vector_index(index), axis),
            (lambda g, ans, x, axis, index: _take_vjp(g, ans, x, _vector_index(index), axis),),
            params={"axis": REQUIRED, "index": REQUIRED},
            doc="torch.index_select(x, dim, index): the slices at a vector of constant indices along dim"))


def _vector_index(index):
    if isinstance(index, int):
        index = (index,)  # torch: a 0-d index selects like a vector of one
    if any(not isinstance(i, int) for i in index):
        raise ShapeError("index must be a vector of integers")
    if any(i < 0 for i in index):
        raise ShapeError(f"index {min(index)} is out of bounds: PyTorch's index_select takes indices from 0 "
                         "(a negative one is not counted from the end)")
    return index


def _repeat_plan(shape, repeats, axis=None):
    if axis is None:
        n, axis = math.prod(shape), None
    else:
        if not shape:
            raise ShapeError("a number has no axis to repeat along")
        axis = _axis(len(shape), axis)
        n = shape[axis]
    counts = _int_array(repeats, "repeats")
    if counts.ndim > 1:
        raise ShapeError("repeats must be an integer or a vector of integers")
    if np.any(counts < 0):
        raise ShapeError(f"repeats must not be negative, got {repeats}")
    if counts.ndim == 1 and counts.size not in (1, n):
        raise ShapeError(f"{counts.size} repeats for an axis of length {n}")
    total = int(np.sum(np.broadcast_to(counts.reshape(-1), (n,)), dtype=np.float64)) if n else 0
    if total > MAX_INDICES:
        raise ShapeError(f"the result would have {total:,} elements along the axis (at most {MAX_INDICES:,})")
    indices = tuple(np.repeat(np.arange(n), np.broadcast_to(counts.reshape(-1), (n,))).tolist())
    return indices, axis


def _repeat_shape(shape, repeats, axis=None):
    indices, axis = _repeat_plan(shape, repeats, axis)
    if axis is None:
        return (len(indices),)
    return tuple(shape[:axis]) + (len(indices),) + tuple(shape[axis + 1:])


def _repeat(xp, x, repeats, axis=None):
    return _take(xp, x, *_repeat_plan(x.shape, repeats, axis))


def _repeat_vjp(g, ans, x, repeats, axis=None):
    return _take_vjp(g, ans, x, *_repeat_plan(x.shape, repeats, axis))


register(Op("repeat", _repeat, _repeat_shape, (_repeat_vjp,), params={"repeats": REQUIRED, "axis": None},
            finite_closed=True,
            doc="each element repeated (an int, or a count per element) along axis (flattened where None)"))


# --------------------------------------------------------------------------- padding

PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect", "symmetric": "symmetric",
             "wrap": "wrap", "replicate": "edge", "circular": "wrap"}


def _pad_pairs(shape, pad_width):
    try:
        widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (len(shape), 2))
    except ValueError:
        raise ShapeError(f"pad_width {pad_width} does not fit an array of rank {len(shape)}") from None
    if np.any(widths < 0):
        raise ShapeError(f"pad widths must not be negative, got {pad_width}")
    return tuple((int(a), int(b)) for a, b in widths)


def _pad_mode(mode, reflect_type="even"):
    key = str(mode).lower()
    if key not in PAD_MODES:
        raise ShapeError(f"pad mode {mode!r} is not supported (its gradient is not a rearrangement of the "
                         "input); gradcli pads with 'constant', 'edge', 'reflect', 'symmetric' and 'wrap'")
    if reflect_type != "even":
        raise ShapeError(f"reflect_type={reflect_type!r} is not supported (only 'even')")
    return PAD_MODES[key]


def _pad_plan(shape, pad_width, mode="constant", constant_values=0, reflect_type="even"):
    pairs = _pad_pairs(shape, pad_width)
    mode = _pad_mode(mode, reflect_type)
    values = np.asarray(constant_values)
    try:
        fits = values.dtype.kind in "iuf" and np.broadcast_to(values, (len(shape), 2)) is not None
    except ValueError:
        fits = False
    if not fits:
        raise ShapeError(f"constant_values must be a number, or (before, after) numbers per axis, "
                         f"not {constant_values!r}")
    for n, (a, b) in zip(shape, pairs):
        if n + a + b > MAX_INDICES:
            raise ShapeError(f"padding to {n + a + b:,} elements along an axis (at most {MAX_INDICES:,})")
        if n == 0 and (a or b) and mode != "constant":
            raise ShapeError(f"cannot pad an empty axis in mode '{mode}'")
    return pairs, mode


def _pad_shape(shape, pad_width, mode="constant", constant_values=0, reflect_type="even"):
    pairs, _ = _pad_plan(shape, pad_width, mode, constant_values, reflect_type)
    return tuple(n + a + b for n, (a, b) in zip(shape, pairs))


def _pad(xp, x, pad_width, mode="constant", constant_values=0, reflect_type="even"):
    pairs, mode = _pad_plan(x.shape, pad_width, mode, constant_values, reflect_type)
    if not pairs:  # a number: nothing to pad
        return x.copy()
    if mode == "constant":
        return xp.pad(x, pairs, mode="constant", constant_values=constant_values)
    return xp.pad(x, pairs, mode=mode)


def _pad_vjp(g, ans, x, pad_width, mode="constant", constant_values=0, reflect_type="even"):
    pairs, mode = _pad_plan(x.shape, pad_width, mode, constant_values, reflect_type)
    if mode == "constant":
        return G.index(g, index=tuple((a, a + n, None) for n, (a, _) in zip(x.shape, pairs)))
    # each axis is padded by a gather of its own (np.pad's index map): scatter back axis by axis
    for axis in reversed(range(x.ndim)):
        a, b = pairs[axis]
        if a or b:
            n = x.shape[axis]
            indices = tuple(np.pad(np.arange(n), (a, b), mode=mode).tolist())
            g = G.gather_axis_add(g, indices=indices, axis=axis, size=n)
    return g


def _torch_pad_widths(shape, pad, mode="constant"):
    pad = _ints(pad, "pad")
    if len(pad) % 2 or len(pad) // 2 > len(shape):
        raise ShapeError(f"pad {pad} must have an even length of at most twice the rank {len(shape)}")
    if any(p < 0 for p in pad):
        raise ShapeError(f"negative padding (cropping) is not supported, got {pad}")
    pairs = [(0, 0)] * len(shape)
    for k in range(len(pad) // 2):  # the last axis first, as PyTorch lists them
        pairs[len(shape) - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    if mode != "constant":
        _torch_pad_rules(shape, pad, mode, pairs)
    return tuple(pairs)


def _torch_pad_rules(shape, pad, mode, pairs):
    """PyTorch's limits on its other modes, which np.pad does not have (it reflects again and
    again): the mode's own name, the last 1, 2 or 3 axes of an input with 1 or 2 more, a
    reflection shorter than its axis, a circular pad no longer than it."""
    if mode not in ("reflect", "replicate", "circular"):
        raise ShapeError(f"mode {mode!r} is not one of PyTorch's: 'constant', 'reflect', 'replicate', 'circular'")
    k = len(pad) // 2
    if k not in (1, 2, 3) or len(shape) not in (k + 1, k + 2):
        raise ShapeError(f"mode '{mode}' with {len(pad)} pad widths needs an input of rank {k + 1} or {k + 2} "
                         f"(PyTorch pads the last {'axis' if k == 1 else f'{k} axes'} of a batch), got rank {len(shape)}")
    for axis in range(len(shape) - k, len(shape)):
        n, (a, b) = shape[axis], pairs[axis]
        if mode == "reflect" and max(a, b) >= n:
            raise ShapeError(f"reflect padding {max(a, b)} along axis {axis} of length {n}: PyTorch's must be "
                             "less than the axis length")
        if mode == "circular" and max(a, b) > n:
            raise ShapeError(f"circular padding {max(a, b)} along axis {axis} of length {n}: PyTorch wraps "
                             "around at most once")


register(Op("pad", _pad, _pad_shape, (_pad_vjp,),
            params={"pad_width": REQUIRED, "mode": "constant", "constant_values": 0, "reflect_type": "even"},
            finite_closed=True,
            doc="np.pad / tf.pad: modes constant, edge, reflect, symmetric, wrap (the gradient gathers back)",
            nonstandard="NumPy's pad"))
register(Op("pad_last_first", lambda xp, x, pad, mode="constant", value=0:
            _pad(xp, x, _torch_pad_widths(x.shape, pad, mode), mode, 0 if value is None else value),
            lambda shape, pad, mode="constant", value=0: _pad_shape(shape, _torch_pad_widths(shape, pad, mode), mode,
                                                                  0 if value is None else value),
            (lambda g, ans, x, pad, mode="constant", value=0:
             _pad_vjp(g, ans, x, _torch_pad_widths(x.shape, pad, mode), mode),),
            params={"pad": REQUIRED, "mode": "constant", "value": 0}, finite_closed=True,
            doc="torch.nn.functional.pad(x, pad): pad lists (before, after) pairs from the last axis back",
            nonstandard="NumPy's pad"))


# --------------------------------------------------------------------------- broadcasting to a common shape

def _part_number(k, count):
    if not isinstance(k, int) or not 0 <= k < count:
        raise ShapeError(f"k must be an integer from 0 to {count - 1}, not {k}")
    return k


def _broadcast_part_shape(*shapes, k=0):
    _part_number(k, len(shapes))
    return broadcast_shapes(*shapes)


def _nth_rule(i):
    def vjp(g, ans, *xs, k=0, **_):
        return g if i == k else _cotangent_zero(xs[i])
    return vjp


register(Op("broadcast_arrays", None, None, None, args=(), variadic=True,
            parts=lambda *shapes: [("broadcast_part", {"k": k}) for k in range(len(shapes))],
            doc="a, b = broadcast_arrays(a, b): each broadcast to the common shape"))
register(Op("broadcast_part", lambda xp, *xs, k=0: xp.broadcast_to(xs[k], broadcast_shapes(*(x.shape for x in xs))),
            _broadcast_part_shape, (_nth_rule,), args=(), variadic=True,
            params={"k": 0}, view=True, memory="view", finite_closed=True,
            doc="the k-th array broadcast to the shape common to all"))


# --------------------------------------------------------------------------- diagonals and triangles

def _diagonal_plan(shape, offset=0, axis1=0, axis2=1):
    if len(shape) < 2:
        raise ShapeError(f"needs an array of rank 2 or more, got {fmt_shape(shape)}")
    _int(offset, "offset")
    a, b = _axis(len(shape), axis1, "axis1"), _axis(len(shape), axis2, "axis2")
    if a == b:
        raise ShapeError("axis1 and axis2 cannot be the same")
    length = max(0, min(shape[a] + min(offset, 0), shape[b] - max(offset, 0)))
    return a, b, tuple(d for k, d in enumerate(shape) if k not in (a, b)) + (length,)


def _embed_diagonal(xp, v, shape, offset=0, axis1=0, axis2=1):
    """Zeros of `shape` with v's last axis on the offset diagonal of (axis1, axis2)."""
    a, b, _ = _diagonal_plan(shape, offset, axis1, axis2)
    out = xp.zeros(shape, dtype=v.dtype)
    view = xp.moveaxis(out, (a, b), (-2, -1))
    steps = xp.arange(v.shape[-1])
    view[..., steps + max(-offset, 0), steps + max(offset, 0)] = v
    return out


def _embed_diagonal_shape(v_shape, shape, offset=0, axis1=0, axis2=1):
    shape = _shape_param(shape)
    if _diagonal_plan(shape, offset, axis1, axis2)[2] != tuple(v_shape):
        raise ShapeError(f"values of shape {fmt_shape(v_shape)} do not fit the diagonal of {fmt_shape(shape)}")
    return tuple(shape)


_DIAGONAL = {"offset": 0, "axis1": 0, "axis2": 1}


register(Op("diagonal", lambda xp, x, offset=0, axis1=0, axis2=1: xp.diagonal(x, offset, axis1, axis2),
            lambda shape, **p: _diagonal_plan(shape, **p)[2],
            (lambda g, ans, x, **p: G.embed_diagonal(g, shape=x.shape, **p),), params=dict(_DIAGONAL),
            view=True, memory="view",
            finite_closed=True, doc="the offset diagonal of axes axis1, axis2, as the last axis"))
register(Op("embed_diagonal", _embed_diagonal, _embed_diagonal_shape,
            (lambda g, ans, v, shape, **p: G.diagonal(g, **p),), params={"shape": REQUIRED, **_DIAGONAL},
            finite_closed=True, doc="zeros with v on a diagonal (the gradient of diagonal)",
            nonstandard="NumPy's writes through a view, by index arrays"))


def _diag_embed_shape(shape, offset=0, axis1=-2, axis2=-1):
    if not shape:
        raise ShapeError("needs a vector (or a stack of them)")
    n = shape[-1] + abs(_int(offset, "offset"))
    ndim = len(shape) + 1
    a, b = _axis(ndim, axis1, "axis1"), _axis(ndim, axis2, "axis2")
    if a == b:
        raise ShapeError("axis1 and axis2 cannot be the same")
    rest = iter(shape[:-1])
    return tuple(n if k in (a, b) else next(rest) for k in range(ndim))


register(Op("diag_embed", lambda xp, v, offset=0, axis1=-2, axis2=-1:
            _embed_diagonal(xp, v, _diag_embed_shape(v.shape, offset, axis1, axis2), offset, axis1, axis2),
            _diag_embed_shape, (lambda g, ans, v, **p: G.diagonal(g, **p),),
            params={"offset": 0, "axis1": -2, "axis2": -1}, finite_closed=True,
            doc="matrices with the vectors' values on their offset diagonal (torch.diag_embed, tf.linalg.diag)",
            nonstandard="NumPy's writes through a view, by index arrays"))


def _diag_shape(shape, k=0):
    _int(k, "k")
    if len(shape) == 1:
        n = shape[0] + abs(k)
        return (n, n)
    if len(shape) == 2:
        return _diagonal_plan(shape, k)[2]
    raise ShapeError(f"takes a vector or a matrix, got shape {fmt_shape(shape)}")


def _diag_vjp(g, ans, x, k=0):
    if x.ndim == 1:
        return G.diagonal(g, offset=k)
    return G.embed_diagonal(g, shape=x.shape, offset=k)


register(Op("diag", lambda xp, x, k=0: xp.diag(x, k), _diag_shape, (_diag_vjp,), params={"k": 0},
            view=True, finite_closed=True,
            doc="diag(v, k): a vector on the k-th diagonal of a matrix; diag(m, k): a matrix's k-th diagonal",
            nonstandard="NumPy's diag"))
register(Op("diagflat", lambda xp, x, k=0: xp.diagflat(x, k),
            lambda shape, k=0: (math.prod(shape) + abs(_int(k, "k")),) * 2,
            (lambda g, ans, x, k=0: _reshaped(G.diagonal(g, offset=k), x.shape),), params={"k": 0}, finite_closed=True,
            doc="the flattened x on the k-th diagonal of a matrix", nonstandard="NumPy's diagflat"))


def _triangle_shape(shape, k=0):
    _int(k, "k")
    if len(shape) < 2:
        raise ShapeError(f"needs a matrix (or a stack of them, shape (..., m, n)), got {fmt_shape(shape)}")
    return tuple(shape)


register(Op("tril", lambda xp, x, k=0: xp.tril(x, k=k), _triangle_shape,
            (lambda g, ans, x, k=0: G.triangle_part(g, lower=True, k=k),), params={"k": 0}, finite_closed=True,
            doc="x with the elements above the k-th diagonal zeroed (the last two axes)"))
register(Op("triu", lambda xp, x, k=0: xp.triu(x, k=k), _triangle_shape,
            (lambda g, ans, x, k=0: G.triangle_part(g, lower=False, k=k),), params={"k": 0}, finite_closed=True,
            doc="x with the elements below the k-th diagonal zeroed (the last two axes)"))


def _block_plan(shapes):
    blocks = []
    for s in shapes:
        if len(s) > 2:
            raise ShapeError(f"takes arrays of rank 2 or less, got {fmt_shape(s)}")
        blocks.append(_at_least(s, 2))
    return blocks


def _block_diag(xp, *xs):
    blocks = _block_plan([x.shape for x in xs])
    out = xp.zeros((sum(b[0] for b in blocks), sum(b[1] for b in blocks)), dtype=xp.result_type(*xs))
    r = c = 0
    for x, (m, n) in zip(xs, blocks):
        out[r:r + m, c:c + n] = xp.reshape(x, (m, n))
        r, c = r + m, c + n
    return out


def _block_rule(i):
    def vjp(g, ans, *xs):
        blocks = _block_plan([x.shape for x in xs])
        r, c = sum(b[0] for b in blocks[:i]), sum(b[1] for b in blocks[:i])
        m, n = blocks[i]
        return _reshaped(G.index(g, index=((r, r + m, None), (c, c + n, None))), xs[i].shape)
    return vjp


register(Op("block_diag", _block_diag,
            lambda *shapes: tuple(sum(b[k] for b in _block_plan(shapes)) for k in (0, 1)),
            (_block_rule,), args=(), variadic=True, finite_closed=True,
            doc="block_diag(a, b, ...): the arrays (vectors as rows) as blocks on a matrix's diagonal"))


# --------------------------------------------------------------------------- selection

def _check_integers(xp, indices, n):
    """Indices given as values (an input): integers in range, else a user error."""
    if indices.size == 0:
        return
    if not bool(xp.all(indices == xp.round(indices))):
        raise DataError("indices must be integers")
    if bool(xp.any(indices < -n)) or bool(xp.any(indices >= n)):
        raise DataError(f"an index is out of bounds for an axis of length {n}")


def _checked_indices(xp, indices, size):
    _check_integers(xp, indices, size)
    return xp.astype(xp.remainder(indices, max(size, 1)), indices.dtype)


def _checked_indices_shape(shape, size):
    _shape_param((size,))
    return tuple(shape)


register(Op("checked_indices", _checked_indices, _checked_indices_shape,
            NOT_DIFFERENTIABLE, params={"size": REQUIRED},
            doc="integer indices checked to be in range for an axis of length size, made non-negative"))


def _take_along_plan(x_shape, i_shape, axis):
    if axis is None:
        if len(i_shape) != 1:
            raise ShapeError(f"with axis=None the indices must be a vector, got shape {fmt_shape(i_shape)}")
        return None, tuple(i_shape)
    if len(x_shape) != len(i_shape):
        raise ShapeError(f"the indices (shape {fmt_shape(i_shape)}) and the array (shape {fmt_shape(x_shape)}) "
                         "must have the same rank")
    axis = _axis(len(x_shape), axis)
    try:
        off = broadcast_shapes(tuple(1 if k == axis else d for k, d in enumerate(x_shape)),
                               tuple(1 if k == axis else d for k, d in enumerate(i_shape)))
    except ShapeError:
        raise ShapeError(f"the indices' shape {fmt_shape(i_shape)} does not broadcast against the array's "
                         f"{fmt_shape(x_shape)} off axis {axis}") from None
    return axis, off[:axis] + (i_shape[axis],) + off[axis + 1:]


def _take_along(xp, x, indices, axis=-1):
    n = x.size if axis is None else x.shape[axis]
    _check_integers(xp, indices, n)
    idx = xp.astype(indices, xp.int64)
    if axis is None:
        return xp.take(xp.reshape(x, (-1,)), idx)
    return xp.take_along_axis(x, idx, axis=axis)


def _take_along_vjp(g, ans, x, indices, axis=-1):
    axis_, out = _take_along_plan(x.shape, indices.shape, axis)
    if axis_ is None:
        size = math.prod(x.shape)
        idx = G.checked_indices(indices, size=size)
        return G.reshape(G.scatter_along(g, idx, axis=0, size=size), shape=x.shape)
    idx = G.checked_indices(indices, size=x.shape[axis_])
    if idx.shape != out:
        idx = G.broadcast_to(idx, shape=out)
    return G.scatter_along(g, idx, axis=axis_, size=x.shape[axis_])


register(Op("take_along_axis", _take_along, lambda x, i, axis=-1: _take_along_plan(x, i, axis)[1],
            (_take_along_vjp, NO_GRADIENT), args=("arr", "indices"), params={"axis": -1},
            doc="take_along_axis(x, indices, axis): x's elements at integer indices along axis (the indices "
                "may be an input); the gradient adds up at repeated indices"))


def _torch_gather_plan(shape, axis, index):
    idx = _int_array(index, "index")
    if idx.ndim != len(shape):
        raise ShapeError(f"index of rank {idx.ndim} for an input of rank {len(shape)}: they must be equal")
    axis = _axis(len(shape), axis, "dim")
    if any(i > s for k, (i, s) in enumerate(zip(idx.shape, shape)) if k != axis):
        raise ShapeError(f"index of shape {fmt_shape(idx.shape)} is larger than the input {fmt_shape(shape)} "
                         f"off dim {axis}")
    n = shape[axis]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        bad = int(idx.min()) if idx.min() < 0 else int(idx.max())
        raise ShapeError(f"index {bad} is out of bounds for dim {axis} of length {n} (PyTorch's gather takes "
                         f"indices 0 to {n - 1}; a negative one is not counted from the end)")
    flat = np.ravel_multi_index(
        tuple(idx % max(n, 1) if k == axis else np.arange(d).reshape((-1,) + (1,) * (idx.ndim - 1 - k))
              for k, d in enumerate(idx.shape)), shape) if idx.size else np.zeros(idx.shape, dtype=np.int64)
    return np.broadcast_to(flat, idx.shape)


def _gather_flat(xp, x, flat):
    return xp.reshape(x, (-1,))[xp.asarray(np.asarray(flat, dtype=np.int64))]


def _gather_flat_add(xp, g, flat, shape):
    out = xp.bincount(xp.asarray(np.asarray(flat, dtype=np.int64).reshape(-1)), weights=g.reshape(-1),
                      minlength=math.prod(shape))
    return xp.astype(xp.reshape(out, shape), g.dtype)


register(Op("gather_elements", lambda xp, x, axis, index, sparse_grad=False:
            _gather_flat(xp, x, _torch_gather_plan(x.shape, axis, index)),
            lambda shape, axis, index, sparse_grad=False: _torch_gather_plan(shape, axis, index).shape,
            (lambda g, ans, x, axis, index, sparse_grad=False: G.gather_flat_add(
                g, flat=nested_ints(_torch_gather_plan(x.shape, axis, index)), shape=x.shape),),
            params={"axis": REQUIRED, "index": REQUIRED, "sparse_grad": False},
            doc="torch.gather(x, dim, index): out[i][j] = x[index[i][j]][j] (dim 0) for constant indices"))
def _flat_positions(flat, shape, of_shape=None):
    """Checks of gather_flat's constant positions: integers in range of an array of `shape`."""
    shape = _shape_param(shape)
    positions = _int_array(flat, "flat")
    if of_shape is not None and positions.shape != tuple(of_shape):
        raise ShapeError(f"positions of shape {fmt_shape(positions.shape)} for values of shape {fmt_shape(of_shape)}")
    if positions.size and (positions.min() < 0 or positions.max() >= math.prod(shape)):
        raise ShapeError(f"a position is out of range for an array of shape {fmt_shape(shape)}")
    return positions.shape


def _gather_flat_add_shape(g_shape, flat, shape):
    _flat_positions(flat, shape, g_shape)
    return _shape_param(shape)


def _gather_flat_shape(x_shape, flat, shape):
    if tuple(x_shape) != _shape_param(shape):
        raise ShapeError(f"shape {shape} is not the array's shape {fmt_shape(x_shape)}")
    return _flat_positions(flat, shape)


register(Op("gather_flat", lambda xp, x, flat, shape: _gather_flat(xp, x, flat), _gather_flat_shape,
            (lambda g, ans, x, flat, shape: G.gather_flat_add(g, flat=flat, shape=x.shape),),
            params={"flat": REQUIRED, "shape": REQUIRED}, doc="the flattened x's elements at constant positions"))
register(Op("gather_flat_add", _gather_flat_add, _gather_flat_add_shape,
            (lambda g, ans, v, flat, shape: G.gather_flat(g, flat=flat, shape=shape),),
            params={"flat": REQUIRED, "shape": REQUIRED},
            doc="zeros of shape with v's elements added at constant flat positions (the gradient of gather_flat)",
            nonstandard="NumPy's bincount"))


def _select_shape(*shapes, counts, default=0):
    n, m = counts
    if isinstance(default, bool) or not isinstance(default, (int, float)):
        raise ShapeError(f"default must be a number written in the program, not {default!r}")
    if n != m:
        raise ShapeError(f"{n} conditions and {m} choices: there must be as many of each")
    if n == 0:
        raise ShapeError("needs at least one condition and choice")
    return broadcast_shapes(*shapes)


def _select(xp, *xs, counts, default=0):
    n = counts[0]
    out_shape = broadcast_shapes(*(x.shape for x in xs))
    return xp.select([xp.broadcast_to(c != 0, out_shape) for c in xs[:n]],
                     [xp.broadcast_to(c, out_shape) for c in xs[n:]], default).astype(xp.result_type(*xs))


def _select_rule(i):
    def vjp(g, ans, *xs, counts, default=0):
        n = counts[0]
        if i < n:  # a condition: no gradient (a zero)
            return _cotangent_zero(xs[i])
        j = i - n
        chosen = G.not_equal(xs[j], 0.0)
        for c in xs[:j]:  # the first true condition wins
            chosen = G.logical_and(chosen, G.logical_not(c))
        return G.where(chosen, g, 0.0)
    return vjp


register(Op("select", _select, _select_shape, (_select_rule,), args=(), variadic=True, sequence=2,
            params={"default": 0, "counts": REQUIRED}, finite_closed=True,
            doc="np.select(conditions, choices, default=0): per element, the choice of the first true condition",
            nonstandard="NumPy's select"))
register(Op("take_slice", lambda xp, x, axis, index: x[_basic_index(_select_index(x.shape, axis, index), x.ndim)],
            lambda shape, axis, index: _index_shape(shape, _select_index(shape, axis, index)),
            (lambda g, ans, x, axis, index: G.scatter(g, shape=x.shape, index=_select_index(x.shape, axis, index)),),
            params={"axis": REQUIRED, "index": REQUIRED}, view=True, memory="view", finite_closed=True,
            doc="torch.select(x, dim, index): the slice at index along dim, the dim removed"))


def _static_slice_index(shape, start_indices, limit_indices, strides=None, what="slice"):
    """The index of lax.slice(x, start_indices, limit_indices, strides) (the other slices' too)."""
    starts, limits = _ints(start_indices, "start_indices"), _ints(limit_indices, "limit_indices")
    steps = (1,) * len(shape) if strides is None else _ints(strides, "strides")
    if not len(starts) == len(limits) == len(steps) == len(shape):
        raise ShapeError(f"{what}: give one start, limit (and stride) per axis of the rank-{len(shape)} array")
    for n, a, b, s in zip(shape, starts, limits, steps):
        if not 0 <= a <= b <= n or s < 1:
            raise ShapeError(f"{what}: start {tuple(starts)}, limit {tuple(limits)} (strides {tuple(steps)}) do not "
                             f"fit shape {fmt_shape(shape)}")
    return tuple((a, b, s) for a, b, s in zip(starts, limits, steps))


def _index_shape_of(shape, index):
    return tuple(-(-(b - a) // s) for a, b, s in index)


def _sliced(params_to_index):
    """forward, shape rule and gradient rule of a slice with constant bounds."""
    def forward(xp, x, **p):
        return x[tuple(slice(*item) for item in params_to_index(x.shape, **p))]

    def shape(x_shape, **p):
        return _index_shape_of(x_shape, params_to_index(x_shape, **p))

    def vjp(g, ans, x, **p):
        return G.scatter(g, shape=x.shape, index=params_to_index(x.shape, **p))
    return forward, shape, vjp


def _tf_slice_index(shape, begin, size):
    begin, size = _ints(begin, "begin"), _ints(size, "size")
    if len(size) != len(shape):
        raise ShapeError(f"tf.slice: give one size per axis of the rank-{len(shape)} array")
    limits = tuple(n if s == -1 else b + s for n, b, s in zip(shape, begin, size))
    return _static_slice_index(shape, begin, limits, None, "tf.slice")


def _dynamic_index(shape, start_indices, slice_sizes):
    starts, sizes = _ints(start_indices, "start_indices"), _ints(slice_sizes, "slice_sizes")
    if not len(starts) == len(sizes) == len(shape):
        raise ShapeError(f"dynamic_slice: give one start and size per axis of the rank-{len(shape)} array")
    if any(not 0 <= s <= n for s, n in zip(sizes, shape)):
        raise ShapeError(f"dynamic_slice: sizes {tuple(sizes)} do not fit shape {fmt_shape(shape)}")
    # JAX counts a negative start from the end (allow_negative_indices), then clamps the start
    # so that the slice lies inside the array
    clamped = tuple(min(max(a + n if a < 0 else a, 0), n - s) for a, s, n in zip(starts, sizes, shape))
    return tuple((a, a + s, 1) for a, s in zip(clamped, sizes))


def _narrow_index(shape, axis, start, length):
    axis = _axis(len(shape), axis, "dim")
    n = shape[axis]
    start, length = _int(start, "start"), _int(length, "length")
    if start < 0:
        start += n
    if not 0 <= start <= n or length < 0 or start + length > n:
        raise ShapeError(f"narrow: start {start}, length {length} do not fit dim {axis} of length {n}")
    return tuple((start, start + length, 1) if k == axis else (0, d, 1) for k, d in enumerate(shape))


for _name, _plan, _params, _doc in (
        ("slice_start_limit", _static_slice_index, {"start_indices": REQUIRED, "limit_indices": REQUIRED, "strides": None},
         "lax.slice(x, start_indices, limit_indices, strides=None)"),
        ("slice_begin_size", _tf_slice_index, {"begin": REQUIRED, "size": REQUIRED},
         "tf.slice(x, begin, size): size -1 runs to the end"),
        ("dynamic_slice", _dynamic_index, {"start_indices": REQUIRED, "slice_sizes": REQUIRED},
         "lax.dynamic_slice(x, start_indices, slice_sizes) with constant starts (clamped into the array)"),
        ("narrow", _narrow_index, {"axis": REQUIRED, "start": REQUIRED, "length": REQUIRED},
         "torch.narrow(x, dim, start, length)")):
    _f, _s, _v = _sliced(_plan)
    register(Op(_name, _f, _s, (_v,), params=_params, view=True, memory="view", finite_closed=True, doc=_doc))


def _update_index(shape, u_shape, start_indices):
    if len(u_shape) != len(shape):
        raise ShapeError(f"the update (shape {fmt_shape(u_shape)}) must have the rank of the array "
                         f"(shape {fmt_shape(shape)})")
    return _dynamic_index(shape, start_indices, tuple(u_shape))


def _replaced(index_of, doc, name, params, args=("x", "src")):
    """x with the block `index_of(x shape, src shape, **params)` replaced by src (lax's
    dynamic_update_slice, PyTorch's *_scatter)."""
    def forward(xp, x, src, **p):
        out = xp.asarray(x, dtype=xp.result_type(x, src), copy=True)
        out[_basic_index(index_of(x.shape, src.shape, **p), x.ndim)] = src
        return out

    def shape(x_shape, src_shape, **p):
        want = _index_shape(x_shape, index_of(x_shape, src_shape, **p))
        if tuple(src_shape) != want:
            raise ShapeError(f"src of shape {fmt_shape(src_shape)} does not fill the block of shape {fmt_shape(want)}")
        return tuple(x_shape)

    def vjp_x(g, ans, x, src, **p):
        index = index_of(x.shape, src.shape, **p)
        return g - G.scatter(G.index(g, index=index), shape=g.shape, index=index)

    register(Op(name, forward, shape,
                (vjp_x, lambda g, ans, x, src, **p: G.index(g, index=index_of(x.shape, src.shape, **p))),
                args=args, params=params, finite_closed=True, doc=doc))


_replaced(_update_index, "lax.dynamic_update_slice(x, update, start_indices): x with the block at start replaced",
          "dynamic_update_slice", {"start_indices": REQUIRED}, args=("operand", "update"))


