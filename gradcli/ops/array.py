"""The op table, continued: shape and array functions, constructors, and selection with
constant integer indices.

Each op is one record registered with `gradcli.ops.register` (see gradcli/ops/__init__.py). Gradient
rules are `G.` equations, so second derivatives come from differentiating them again:
- joining (`concatenate`, `stack`, `vstack`, ...) gives each input the slice of the cotangent
  it filled (`G.index`); splitting (`split`, `tf.split`, `torch.chunk`, ...) returns a tuple
  whose parts are constant slices (`index`), as NumPy's views are;
- reordering (`flip`, `roll`, `rot90`, `swapaxes`, `moveaxis`) applies the inverse reordering;
- selection with constant indices (`take`, `repeat`, `pad` in its reflecting modes, `tf.gather`)
  is the pair `gather_axis` / `gather_axis_add`: a gather and its scatter-add (repeated
  indices accumulate), each the other's gradient;
- constructors (`zeros`, `eye`, `arange`, ...) take no array and are constants of the program
  (the lowering evaluates them where they are written).

Where libraries spell one name with different meanings (`np.split(x, 2)` makes 2 parts,
`torch.split(x, 2)` parts of size 2), each meaning is an op of its own (`split`, `split_size`);
which one a spelling means is its library's dialect's (gradcli/language/dialects).
"""
from __future__ import annotations

import math

import numpy as np

from gradcli.ops.trace import G
from gradcli.ops.table import NO_GRADIENT, NOT_DIFFERENTIABLE, REQUIRED, DataError, Op, register
from gradcli.ops.core import _index_shape, _basic_index, _index_tuple
from gradcli.ops.shapes import broadcast_shapes, fmt_shape, nested_ints, normalize_axes
from gradcli.errors import ShapeError

MAX_INDICES = 100_000_000  # the most elements a constant index map (repeat, pad) or split may have
FULL = (None, None, None)  # a whole axis, as the static index of `G.index` spells slices
FLOAT_NAMES = {"float16", "float32", "float64", "double", "single", "half", "float", "bfloat16", "float_"}


def _along(axis: int, item) -> tuple:
    """A static index selecting `item` (an int, or (start, stop, step)) on `axis`."""
    return (FULL,) * axis + (item,)


def _axis(ndim: int, axis, what: str = "axis") -> int:
    """One axis of an array of rank ndim, as a non-negative int."""
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise ShapeError(f"{what} must be one integer, not {axis}")
    if not -ndim <= axis < ndim:
        raise ShapeError(f"{what} {axis} is out of range for an array of rank {ndim}")
    return axis % ndim


def _axes(axis, ndim: int) -> tuple:
    """normalize_axes of an axis or axes that must be integers (not a string or a list of lists)."""
    if axis is not None:
        _ints(axis, "axis")
    return normalize_axes(axis, ndim)


def _int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ShapeError(f"{what} must be an integer, not {value}")
    return value


def _ints(value, what: str) -> tuple:
    """An int or a flat sequence of ints, as a tuple."""
    items = (value,) if isinstance(value, int) else value
    if not isinstance(items, tuple) or not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        raise ShapeError(f"{what} must be an integer or a list of integers, not {value}")
    return items


def _int_array(value, what: str) -> np.ndarray:
    """Constant indices or counts (an int, or nested lists of ints) as an integer array."""
    array = np.asarray(value)
    if array.dtype.kind not in "iu" and not (array.size == 0 and array.dtype.kind == "f"):
        raise ShapeError(f"{what} must be an integer or (nested) lists of integers, not {value!r}")
    return array.astype(np.int64)


def _cotangent_zero(x):
    """A zero cotangent of x's shape (an input a tuple's part does not depend on)."""
    zero = x.graph.constant(0.0)
    return zero if x.shape == () else G.broadcast_to(zero, shape=x.shape)


def _reshaped(g, shape):
    return g if g.shape == tuple(shape) else G.reshape(g, shape=tuple(shape))


# --------------------------------------------------------------------------- joining

def _at_least(shape, rank: int):
    """NumPy's atleast_1d / atleast_2d / atleast_3d of a shape."""
    shape = tuple(shape)
    if len(shape) >= rank:
        return shape
    if rank == 1:
        return (1,)
    if rank == 2:
        return (1,) + shape if shape else (1, 1)
    return {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}[len(shape)]


def _joined(shapes, axis: int):
    """The shape of the promoted inputs `shapes` concatenated along axis."""
    first = shapes[0]
    if not first:
        raise ShapeError("zero-dimensional arrays cannot be concatenated")
    axis = _axis(len(first), axis)
    for s in shapes[1:]:
        if len(s) != len(first):
            raise ShapeError("all the input arrays must have the same rank; got shapes "
                             + ", ".join(fmt_shape(t) for t in shapes))
        if any(a != b for k, (a, b) in enumerate(zip(s, first)) if k != axis):
            raise ShapeError(f"the input arrays' shapes differ off axis {axis}: "
                             + ", ".join(fmt_shape(t) for t in shapes))
    return first[:axis] + (sum(s[axis] for s in shapes),) + first[axis + 1:], axis


def _plan_concatenate(shapes, axis=0):
    if axis is None:
        return [(math.prod(s),) for s in shapes], 0
    return [tuple(s) for s in shapes], axis


def _plan_stack(shapes, axis=0):
    if any(s != shapes[0] for s in shapes):
        raise ShapeError("all input arrays must have the same shape; got "
                         + ", ".join(fmt_shape(s) for s in shapes))
    axis = _axis(len(shapes[0]) + 1, axis)
    return [s[:axis] + (1,) + s[axis:] for s in shapes], axis


def _plan_vstack(shapes):
    return [_at_least(s, 2) for s in shapes], 0


def _plan_hstack(shapes):
    promoted = [_at_least(s, 1) for s in shapes]
    return promoted, 0 if len(promoted[0]) == 1 else 1


def _plan_dstack(shapes):
    return [_at_least(s, 3) for s in shapes], 2


def _plan_column_stack(shapes):
    return [tuple(s) if len(s) >= 2 else ((s[0] if s else 1), 1) for s in shapes], 1


def _plan_append(shapes, axis=None):
    return _plan_concatenate(shapes, axis)


def _join_rules(plan):
    def shape(*shapes, **params):
        promoted, axis = plan(list(shapes), **params)
        return _joined(promoted, axis)[0]

    def forward(xp, *xs, **params):
        promoted, axis = plan([x.shape for x in xs], **params)
        axis = axis % len(promoted[0])
        return xp.concat([xp.reshape(x, s) for x, s in zip(xs, promoted)], axis=axis)

    def rule(i):
        def vjp(g, ans, *xs, **params):
            promoted, axis = plan([x.shape for x in xs], **params)
            axis = axis % len(promoted[0])
            start = sum(s[axis] for s in promoted[:i])
            part = G.index(g, index=_along(axis, (start, start + promoted[i][axis], None)))
            return _reshaped(part, xs[i].shape)
        return vjp
    return shape, forward, rule


def _join_op(name, plan, params=None, doc="", **fields):
    shape, forward, rule = _join_rules(plan)
    register(Op(name, forward, shape, (rule,), args=(), variadic=True, sequence=1, params=params or {},
                doc=doc, **fields))


# NumPy's index tricks (`np.c_[a, b]`, `np.r_[a, b]`, as jnp's): a subscript, not a call, so
# these are reached through the subscript of `np.c_`/`np.r_` (gradcli.language.lower), not by a name.
def _plan_c_(shapes):
    # np.c_: each at least 2-D, a vector (n,) as a column (n, 1), a number as (1, 1); joined on the last axis
    return [tuple(s) if len(s) >= 2 else ((s[0] if s else 1), 1) for s in shapes], -1


def _plan_r_(shapes):
    # np.r_: each at least 1-D, a number as (1,); joined on the first axis
    return [tuple(s) if s else (1,) for s in shapes], 0


_join_op("concatenate", _plan_concatenate, {"axis": 0},
         "concatenate([a, b, ...], axis=0): the arrays joined along axis (axis=None: flattened first)")
_join_op("stack_arrays", _plan_stack, {"axis": 0},
         "stack([a, b, ...], axis=0): arrays of one shape joined along a new axis")
_join_op("vstack", _plan_vstack, {}, "the arrays (as rows, at least 2-D) joined along axis 0")
_join_op("hstack", _plan_hstack, {}, "the arrays joined along axis 1 (axis 0 for vectors)")
_join_op("dstack", _plan_dstack, {}, "the arrays (at least 3-D) joined along axis 2")
_join_op("column_stack", _plan_column_stack, {}, "vectors as columns (matrices as they are) joined along axis 1")
_join_op("c_", _plan_c_, {}, "np.c_[a, b, ...]: vectors as columns, numbers as 1x1, joined along the last axis",
         public=False, prints_as=lambda *xs: f"np.c_[{', '.join(xs)}]")
_join_op("r_", _plan_r_, {}, "np.r_[a, b, ...]: numbers as 1-element vectors, joined along the first axis",
         public=False, prints_as=lambda *xs: f"np.r_[{', '.join(xs)}]")

_append_shape, _append_forward, _append_rule = _join_rules(_plan_append)
register(Op("append", _append_forward, _append_shape, (_append_rule(0), _append_rule(1)), args=("arr", "values"),
            params={"axis": None}, doc="append(arr, values, axis=None): concatenate((arr, values), axis), "
                                       "flattened where axis is None"))


# --------------------------------------------------------------------------- splitting (tuple results)

def _split_length(shape, axis, label):
    if not shape:
        raise ShapeError("a number has no axis to split")
    axis = _axis(len(shape), axis)
    return axis, shape[axis]


def _slices(axis: int, bounds) -> list:
    """Parts `index` of consecutive (start, stop) bounds along axis."""
    return [("index", {"index": _along(axis, (start, stop, None))}) for start, stop in bounds]


def _numpy_bounds(n: int, sections, equal: bool, label: str, ordered: bool = False):
    """np.split (equal=True) / np.array_split: a count of parts, or the indices to cut at."""
    if isinstance(sections, int) and not isinstance(sections, bool):
        if sections <= 0:
            raise ShapeError(f"the number of sections must be larger than 0, not {sections}")
        if sections > max(n, 1_000):
            raise ShapeError(f"{sections:,} sections of an axis of length {n} (at most {max(n, 1_000):,})")
        if equal and n % sections:
            raise ShapeError(f"an axis of length {n} does not split into {sections} equal parts "
                             f"(np.array_split allows unequal ones)")
        size, extra = divmod(n, sections)
        sizes = [size + 1] * extra + [size] * (sections - extra)
        edges = np.concatenate([[0], np.cumsum(sizes)]).tolist()
        return list(zip(edges[:-1], edges[1:]))
    cuts = list(_ints(sections, "indices_or_sections"))
    if ordered and any(b < a for a, b in zip([0] + cuts, cuts + [n])):
        raise ShapeError(f"cuts {tuple(cuts)} of an axis of length {n}: JAX's split takes cuts in order from 0 to "
                         f"{n} (NumPy's also takes negative, unsorted or past-the-end ones)")
    edges = [0] + cuts
    return [(int(a), int(b)) for a, b in zip(edges, cuts)] + [(edges[-1], None)]


def _sizes_bounds(n: int, sizes, label: str):
    sizes = list(sizes)
    if any(s < 0 for s in sizes if s != -1) or sizes.count(-1) > 1:
        raise ShapeError(f"sizes must be non-negative (one may be -1), got {tuple(sizes)}")
    if -1 in sizes:
        rest = n - sum(s for s in sizes if s != -1)
        if rest < 0:
            raise ShapeError(f"sizes {tuple(sizes)} exceed the axis length {n}")
        sizes[sizes.index(-1)] = rest
    if sum(sizes) != n:
        raise ShapeError(f"sizes {tuple(sizes)} add up to {sum(sizes)}, not the axis length {n}")
    edges = np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()
    return list(zip(edges[:-1], edges[1:]))


def _split_parts(shape, indices_or_sections, axis=0, ordered=False):
    axis, n = _split_length(shape, axis, "split")
    return _slices(axis, _numpy_bounds(n, indices_or_sections, True, "split", ordered))


def _array_split_parts(shape, indices_or_sections, axis=0, ordered=False):
    axis, n = _split_length(shape, axis, "array_split")
    return _slices(axis, _numpy_bounds(n, indices_or_sections, False, "array_split", ordered))


def _fixed_axis_split(label, axis_of, rank):
    def parts(shape, indices_or_sections, ordered=False):
        if len(shape) < rank:
            raise ShapeError(f"needs an array of rank {rank} or more, got {fmt_shape(shape)}")
        axis = axis_of(shape)
        return _slices(axis, _numpy_bounds(shape[axis], indices_or_sections, True, label, ordered))
    return parts


def _tf_split_parts(shape, num_or_size_splits, axis=0, num=None):
    axis, n = _split_length(shape, axis, "tf.split")
    if isinstance(num_or_size_splits, int):
        count = num_or_size_splits
        if count <= 0 or n % count:
            raise ShapeError(f"an axis of length {n} does not split into {count} equal parts")
        return _slices(axis, [(k * (n // count), (k + 1) * (n // count)) for k in range(count)])
    return _slices(axis, _sizes_bounds(n, _ints(num_or_size_splits, "num_or_size_splits"), "tf.split"))


def _torch_split_parts(shape, split_size_or_sections, axis=0):
    axis, n = _split_length(shape, axis, "torch.split")
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size <= 0:
            raise ShapeError(f"the split size must be positive, not {size}")
        return _slices(axis, [(start, min(start + size, n)) for start in range(0, max(n, 1), size)])
    return _slices(axis, _sizes_bounds(n, _ints(split_size_or_sections, "split_size_or_sections"), "torch.split"))


def _chunk_parts(shape, chunks, axis=0):
    axis, n = _split_length(shape, axis, "chunk")
    chunks = _int(chunks, "chunks")
    if chunks <= 0:
        raise ShapeError(f"the number of chunks must be positive, not {chunks}")
    size = max(1, -(-n // chunks))  # PyTorch's: chunks of ceil(n / chunks), possibly fewer of them
    return _slices(axis, [(start, min(start + size, n)) for start in range(0, max(n, 1), size)])


def _unbind_parts(shape, axis=0):
    axis, n = _split_length(shape, axis, "unbind")
    return [("index", {"index": _along(axis, k)}) for k in range(n)]


register(Op("split", None, None, None, params={"indices_or_sections": REQUIRED, "axis": 0, "ordered": False},
            parts=_split_parts,
            doc="a, b = split(x, 2): NumPy's: n equal parts, or cut at a list of indices"))
register(Op("array_split", None, None, None, params={"indices_or_sections": REQUIRED, "axis": 0, "ordered": False},
            parts=_array_split_parts,
            doc="NumPy's array_split (torch.tensor_split): n parts of sizes differing by at most 1"))
register(Op("hsplit", None, None, None, params={"indices_or_sections": REQUIRED, "ordered": False},
            parts=_fixed_axis_split("hsplit", lambda s: 1 if len(s) > 1 else 0, 1),
            doc="split along axis 1 (0 of a vector)"))
register(Op("vsplit", None, None, None, params={"indices_or_sections": REQUIRED, "ordered": False},
            parts=_fixed_axis_split("vsplit", lambda s: 0, 2), doc="split along axis 0 of an array of rank >= 2"))
register(Op("dsplit", None, None, None, params={"indices_or_sections": REQUIRED, "ordered": False},
            parts=_fixed_axis_split("dsplit", lambda s: 2, 3), doc="split along axis 2 of an array of rank >= 3"))
register(Op("split_parts", None, None, None, params={"num_or_size_splits": REQUIRED, "axis": 0, "num": None},
            parts=_tf_split_parts, public=False,
            doc="tf.split(x, num_or_size_splits, axis=0): n equal parts, or parts of the listed sizes (one may be -1)"))
register(Op("split_size", None, None, None, params={"split_size_or_sections": REQUIRED, "axis": 0},
            parts=_torch_split_parts, public=False,
            doc="torch.split(x, size, dim=0): parts of that size (the last smaller), or of the listed sizes"))
register(Op("chunk", None, None, None, params={"chunks": REQUIRED, "axis": 0}, parts=_chunk_parts,
            doc="torch.chunk(x, chunks, dim=0): parts of size ceil(n / chunks)"))
def _unstack_parts(shape, num=None, axis=0):
    parts = _unbind_parts(shape, axis)
    if num is not None and num != len(parts):
        raise ShapeError(f"num={num}, but the axis has length {len(parts)}")
    return parts


register(Op("unbind", None, None, None, params={"axis": 0}, parts=_unbind_parts,
            doc="torch.unbind(x, dim=0): the slices along dim, the dim removed"))
register(Op("unstack", None, None, None, params={"num": None, "axis": 0}, parts=_unstack_parts,
            doc="tf.unstack(x, num=None, axis=0) / np.unstack(x, axis=0): the slices along axis, the axis removed"))


# --------------------------------------------------------------------------- reshaping

def _squeeze_shape(shape, axis=None):
    if axis is None:
        return tuple(d for d in shape if d != 1)
    axes = _axes(axis, len(shape))
    for a in axes:
        if shape[a] != 1:
            raise ShapeError(f"cannot squeeze axis {a}: its length is {shape[a]}, not 1")
    return tuple(d for k, d in enumerate(shape) if k not in axes)


def _squeeze_loose_shape(shape, axis=None):
    # torch.squeeze(x, dim): a dim whose length is not 1 is left as it is
    if axis is None:
        return _squeeze_shape(shape)
    axes = _axes(axis, len(shape)) if shape else ()
    return tuple(d for k, d in enumerate(shape) if not (k in axes and d == 1))


def _expand_dims_shape(shape, axis):
    axes = _ints(axis, "axis")
    out_ndim = len(shape) + len(axes)
    new = normalize_axes(axes, out_ndim)
    rest = iter(shape)
    return tuple(1 if k in new else next(rest) for k in range(out_ndim))


def _back(g, ans, x, **_):
    return G.reshape(g, shape=x.shape)


register(Op("squeeze", lambda xp, x, axis=None: xp.reshape(x, _squeeze_shape(x.shape, axis)), _squeeze_shape, (_back,),
            params={"axis": None}, view=True, memory="view", finite_closed=True,
            doc="x without its axes of length 1 (those named by axis, each of which must be 1)"))
register(Op("squeeze_loose", lambda xp, x, axis=None: xp.reshape(x, _squeeze_loose_shape(x.shape, axis)),
            _squeeze_loose_shape, (_back,), params={"axis": None}, public=True, view=True, memory="view",
            finite_closed=True, doc="torch.squeeze(x, dim): a dim of length other than 1 is kept"))
register(Op("expand_dims", lambda xp, x, axis: xp.reshape(x, _expand_dims_shape(x.shape, axis)), _expand_dims_shape,
            (_back,), params={"axis": REQUIRED}, view=True, memory="view", finite_closed=True,
            doc="x with new axes of length 1 at the positions axis (of the result)"))


def _ravel_shape(shape, order="C"):
    if order != "C":
        raise ShapeError(f"only order='C' (row-major) is supported, not {order!r}")
    return (math.prod(shape),)


def _flatten_dims_shape(shape, start_dim=0, end_dim=-1):
    if not shape:
        return (1,)
    start, end = _axis(len(shape), start_dim, "start_dim"), _axis(len(shape), end_dim, "end_dim")
    if start > end:
        raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    return shape[:start] + (math.prod(shape[start:end + 1]),) + shape[end + 1:]


register(Op("ravel", lambda xp, x, order="C": xp.reshape(x, (-1,)), _ravel_shape, (_back,), params={"order": "C"},
            view=True, memory="reshape", finite_closed=True,
            doc="the elements in one axis, row-major (x.flatten(), np.ravel)"))
register(Op("flatten_dims",
            lambda xp, x, start_dim=0, end_dim=-1: xp.reshape(x, _flatten_dims_shape(x.shape, start_dim, end_dim)),
            _flatten_dims_shape, (_back,), params={"start_dim": 0, "end_dim": -1}, public=True, view=True,
            memory="reshape", finite_closed=True, doc="torch.flatten(x, start_dim, end_dim)"))

for _rank in (1, 2, 3):
    register(Op(f"atleast_{_rank}d", (lambda r: lambda xp, x: xp.reshape(x, _at_least(x.shape, r)))(_rank),
                (lambda r: lambda shape: _at_least(shape, r))(_rank), (_back,), view=True, memory="view",
                finite_closed=True, doc=f"x with axes of length 1 added up to rank {_rank} (NumPy's placement)"))


# --------------------------------------------------------------------------- reordering

def _swap_perm(ndim, axis1, axis2):
    a, b = _axis(ndim, axis1, "axis1"), _axis(ndim, axis2, "axis2")
    perm = list(range(ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return tuple(perm)


def _move_perm(ndim, source, destination):
    src, dst = _ints(source, "source"), _ints(destination, "destination")
    if len(src) != len(dst):
        raise ShapeError(f"source {source} and destination {destination} name different numbers of axes")
    src, dst = [_axis(ndim, a, "source") for a in src], [_axis(ndim, a, "destination") for a in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ShapeError("source and destination must not repeat an axis")
    order = [a for a in range(ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return tuple(order)


def _roll_axis_perm(ndim, axis, start=0):
    axis = _axis(ndim, axis)
    start = _int(start, "start")
    if start < 0:
        start += ndim
    if not 0 <= start <= ndim:
        raise ShapeError(f"start {start} is out of range for an array of rank {ndim} (0 <= start <= {ndim})")
    if axis < start:
        start -= 1
    order = [a for a in range(ndim) if a != axis]
    order.insert(start, axis)
    return tuple(order)


def _inverse(perm):
    return tuple(sorted(range(len(perm)), key=perm.__getitem__))


def _permuting(name, perm_of, params=None, doc=""):
    register(Op(name, lambda xp, x, **p: xp.permute_dims(x, perm_of(x.ndim, **p)),
                lambda shape, **p: tuple(shape[a] for a in perm_of(len(shape), **p)),
                (lambda g, ans, x, **p: G.transpose(g, axes=_inverse(perm_of(x.ndim, **p))),),
                params=params, view=True, memory="view", finite_closed=True, doc=doc))


_permuting("swapaxes", _swap_perm, {"axis1": REQUIRED, "axis2": REQUIRED},
           "x with two axes exchanged (torch.transpose(x, d0, d1) is this)")
_permuting("moveaxis", _move_perm, {"source": REQUIRED, "destination": REQUIRED},
           "x with the axes source moved to the positions destination, the others in order")
_permuting("rollaxis", _roll_axis_perm, {"axis": REQUIRED, "start": 0},
           "x with axis moved to before position start (NumPy's rollaxis)")


def _flip_axes(shape, axis=None):
    return tuple(range(len(shape))) if axis is None else _axes(axis, len(shape))


def _flip(xp, x, axis=None):
    axes = _flip_axes(x.shape, axis)
    return x[tuple(slice(None, None, -1) if k in axes else slice(None) for k in range(x.ndim))]


def _flip_shape(shape, axis=None):
    _flip_axes(shape, axis)
    return tuple(shape)


register(Op("flip", _flip, _flip_shape,
            (lambda g, ans, x, axis=None: G.flip(g, axis=axis),), params={"axis": None},
            view=True, memory="view",
            finite_closed=True, doc="x in reverse order along axis (every axis where None); fliplr: axis 1, flipud: 0"))


def _roll_plan(shape, shift, axis, broadcast=True):
    if not broadcast and axis is not None and len(_ints(shift, "shift")) != len(_ints(axis, "axis")):
        raise ShapeError(f"shifts {shift} and dims {axis} must have the same length (PyTorch's and TensorFlow's "
                         "roll pair them; NumPy's broadcasts)")
    shifts = _ints(shift, "shift")
    if not shifts:
        raise ShapeError("a shift is needed")
    if axis is None:
        if len(shifts) != 1:
            raise ShapeError("without an axis, one shift is taken")
        return shifts, None
    axes = _ints(axis, "axis")
    if not axes:
        raise ShapeError("an axis is needed (or axis=None)")
    for a in axes:
        _axis(len(shape), a)
    if len(shifts) != len(axes):
        if len(shifts) == 1:
            shifts = shifts * len(axes)
        elif len(axes) == 1:
            axes = axes * len(shifts)
        else:
            raise ShapeError(f"shift {shift} and axis {axis} have different lengths")
    return shifts, axes


def _roll_shape(shape, shift, axis=None, broadcast=True):
    _roll_plan(shape, shift, axis, broadcast)
    return tuple(shape)


def _negated(shift):
    return -shift if isinstance(shift, int) else tuple(-s for s in shift)


register(Op("roll", lambda xp, x, shift, axis=None, broadcast=True: xp.roll(x, shift, axis=axis),
            _roll_shape,
            (lambda g, ans, x, shift, axis=None, broadcast=True: G.roll(g, shift=_negated(shift), axis=axis),),
            params={"shift": REQUIRED, "axis": None, "broadcast": True}, finite_closed=True,
            doc="x shifted cyclically by shift along axis (the flattened array where None)"))


def _rot90_plan(shape, k=1, axes=(0, 1)):
    _int(k, "k")
    axes = _ints(axes, "axes")
    if len(axes) != 2:
        raise ShapeError(f"axes must be two axes, not {axes}")
    a, b = _axis(len(shape), axes[0]), _axis(len(shape), axes[1])
    if a == b:
        raise ShapeError("needs two different axes")
    out = list(shape)
    if k % 2:
        out[a], out[b] = out[b], out[a]
    return tuple(out)


register(Op("rot90", lambda xp, x, k=1, axes=(0, 1): xp.rot90(x, k, axes), _rot90_plan,
            (lambda g, ans, x, k=1, axes=(0, 1): G.rot90(g, k=-k, axes=axes),), params={"k": 1, "axes": (0, 1)},
            view=True, memory="view", finite_closed=True,
            doc="x rotated by 90 degrees k times, from the first axis towards the second",
            nonstandard="NumPy's rot90"))


def _tile_plan(shape, reps):
    reps = _ints(reps, "reps")
    if any(r < 0 for r in reps):
        raise ShapeError(f"reps must not be negative, got {reps}")
    d = max(len(reps), len(shape))
    padded_x = (1,) * (d - len(shape)) + tuple(shape)
    padded_r = (1,) * (d - len(reps)) + tuple(reps)
    return padded_x, padded_r


def _tile_vjp(g, ans, x, reps):
    xs, rs = _tile_plan(x.shape, reps)
    split = tuple(v for pair in zip(rs, xs) for v in pair)
    summed = G.sum(G.reshape(g, shape=split), axis=tuple(range(0, 2 * len(xs), 2)))
    return _reshaped(summed, x.shape)


register(Op("tile", lambda xp, x, reps: xp.tile(x, reps if isinstance(reps, tuple) else (reps,)),
            lambda shape, reps: tuple(a * b for a, b in zip(*_tile_plan(shape, reps))),
            (_tile_vjp,), params={"reps": REQUIRED}, finite_closed=True,
            doc="x repeated reps times along each axis (tf.tile, torch.tile)"))


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
            + np.arange(q).reshape(1, 1, q)).reshape(-1)
    out = xp.bincount(xp.asarray(flat), weights=g.reshape(-1), minlength=p * size * q)
    return xp.astype(xp.reshape(out, lead + (size,) + rest), g.dtype)


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
            params={"indices": REQUIRED, "axis": REQUIRED}, public=True, finite_closed=True,
            doc="x's slices at constant indices along axis (np.take)"))
register(Op("gather_axis_add", _gather_axis_add, _gather_axis_add_shape,
            (lambda g, ans, x, indices, axis, size: G.gather_axis(g, indices=indices, axis=axis),),
            params={"indices": REQUIRED, "axis": REQUIRED, "size": REQUIRED}, public=True,
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
    indices, axis = _repeat_plan(x.shape, repeats, axis)
    return _gather_axis(xp, xp.reshape(x, (-1,)), indices, 0) if axis is None else _gather_axis(xp, x, indices, axis)


def _repeat_vjp(g, ans, x, repeats, axis=None):
    indices, axis = _repeat_plan(x.shape, repeats, axis)
    return _take_vjp(g, ans, x, indices, axis)


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
            params={"pad": REQUIRED, "mode": "constant", "value": 0}, public=True, finite_closed=True,
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
            params={"k": 0}, public=True, view=True, memory="view", finite_closed=True,
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
            public=True, finite_closed=True, doc="zeros with v on a diagonal (the gradient of diagonal)",
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
            NOT_DIFFERENTIABLE,
            params={"size": REQUIRED}, public=True,
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
            params={"axis": REQUIRED, "index": REQUIRED, "sparse_grad": False}, public=True,
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
            params={"flat": REQUIRED, "shape": REQUIRED}, public=True,
            doc="the flattened x's elements at constant positions"))
register(Op("gather_flat_add", lambda xp, g, flat, shape: _gather_flat_add(xp, g, flat, shape),
            _gather_flat_add_shape,
            (lambda g, ans, v, flat, shape: G.gather_flat(g, flat=flat, shape=shape),),
            params={"flat": REQUIRED, "shape": REQUIRED}, public=True,
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


def _static_slice_index(shape, starts, limits, strides=None, what="slice"):
    starts, limits = _ints(starts, "start_indices"), _ints(limits, "limit_indices")
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


def _lax_slice_index(shape, start_indices, limit_indices, strides=None):
    return _static_slice_index(shape, start_indices, limit_indices, strides)


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


for _name, _plan, _params, _public, _doc in (
        ("slice_start_limit", _lax_slice_index, {"start_indices": REQUIRED, "limit_indices": REQUIRED, "strides": None},
         True, "lax.slice(x, start_indices, limit_indices, strides=None)"),
        ("slice_begin_size", _tf_slice_index, {"begin": REQUIRED, "size": REQUIRED}, True,
         "tf.slice(x, begin, size): size -1 runs to the end"),
        ("dynamic_slice", _dynamic_index, {"start_indices": REQUIRED, "slice_sizes": REQUIRED}, True,
         "lax.dynamic_slice(x, start_indices, slice_sizes) with constant starts (clamped into the array)"),
        ("narrow", _narrow_index, {"axis": REQUIRED, "start": REQUIRED, "length": REQUIRED}, True,
         "torch.narrow(x, dim, start, length)")):
    _f, _s, _v = _sliced(_plan)
    register(Op(_name, _f, _s, (_v,), params=_params, public=_public, view=True, memory="view", finite_closed=True,
                doc=_doc))


def _update_index(shape, u_shape, start_indices):
    if len(u_shape) != len(shape):
        raise ShapeError(f"the update (shape {fmt_shape(u_shape)}) must have the rank of the array "
                         f"(shape {fmt_shape(shape)})")
    return _dynamic_index(shape, start_indices, tuple(u_shape))


def _dynamic_update_slice(xp, x, u, start_indices):
    index = tuple(slice(*item) for item in _update_index(x.shape, u.shape, start_indices))
    out = xp.asarray(x, dtype=xp.result_type(x, u), copy=True)
    out[index] = u
    return out


def _dynamic_update_slice_shape(x_shape, u_shape, start_indices):
    _update_index(x_shape, u_shape, start_indices)
    return tuple(x_shape)


def _dus_vjp_x(g, ans, x, u, start_indices):
    index = _update_index(x.shape, u.shape, start_indices)
    return g - G.scatter(G.index(g, index=index), shape=g.shape, index=index)


register(Op("dynamic_update_slice", _dynamic_update_slice,
            _dynamic_update_slice_shape,
            (_dus_vjp_x, lambda g, ans, x, u, start_indices:
             G.index(g, index=_update_index(x.shape, u.shape, start_indices))),
            args=("operand", "update"), params={"start_indices": REQUIRED}, finite_closed=True,
            doc="lax.dynamic_update_slice(x, update, start_indices): x with the block at start replaced"))


# --------------------------------------------------------------------------- constructors (constants)

def _dtype_check(dtype):
    if dtype is not None and dtype not in FLOAT_NAMES:
        if isinstance(dtype, (int, float)):
            raise ShapeError("the shape must be one argument (a tuple): write zeros((2, 3)), not zeros(2, 3)")
        raise ShapeError(f"dtype {dtype} would change the numbers (gradcli computes in floating point)")


def _shape_param(shape):
    dims = _ints(shape, "shape")
    if any(d < 0 for d in dims):
        raise ShapeError(f"negative dimensions are not allowed: {fmt_shape(dims)}")
    return tuple(dims)


def _fill_value(value):
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ShapeError(f"fill_value must be a number written in the program, not {value}")
    return float(value)


def _filled_shape(shape, fill_value=0.0, dtype=None):
    _dtype_check(dtype)
    _fill_value(fill_value)
    return _shape_param(shape)


def _constructor(name, fill, params, doc=""):
    """zeros / ones / full: an array of `shape` holding one number (a constant)."""
    register(Op(name, lambda xp, shape, fill_value=fill, dtype=None:
                xp.full(_shape_param(shape), _fill_value(fill_value)),
                lambda shape, fill_value=fill, dtype=None: _filled_shape(shape, fill_value, dtype), (), args=(),
                params=params, doc=doc))


_constructor("zeros", 0.0, {"shape": REQUIRED, "dtype": None}, doc="an array of zeros (a constant)")
_constructor("ones", 1.0, {"shape": REQUIRED, "dtype": None}, doc="an array of ones (a constant)")
_constructor("full", None, {"shape": REQUIRED, "fill_value": REQUIRED, "dtype": None},
             doc="an array of one value (a constant; tf.fill(dims, value))")


def _eye_shape(N, M=None, k=0, dtype=None):
    _dtype_check(dtype)
    n = _shape_param((N,))[0]
    m = n if M is None else _shape_param((M,))[0]
    _int(k, "k")
    return (n, m)


register(Op("eye", lambda xp, N, M=None, k=0, dtype=None: xp.eye(*_eye_shape(N, M, k), k=k), _eye_shape, (),
            args=(), params={"N": REQUIRED, "M": None, "k": 0, "dtype": None},
            doc="the identity matrix (ones on the k-th diagonal); np.identity(n)"))
register(Op("tri", lambda xp, N, M=None, k=0, dtype=None: xp.tri(*_eye_shape(N, M, k), k=k), _eye_shape, (),
            args=(), params={"N": REQUIRED, "M": None, "k": 0, "dtype": None},
            doc="ones at and below the k-th diagonal"))


def _arange_values(start, stop=None, step=None, dtype=None):
    _dtype_check(dtype)
    for v in (start, stop, step):
        if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v)):
            raise ShapeError(f"takes finite numbers written in the program, not {v}")
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    if step == 0:
        raise ShapeError("arange: the step must not be 0")
    count = max(0, math.ceil((stop - start) / step))
    if count > 100_000_000:
        raise ShapeError(f"the result would have {count:.4g} elements (at most 100,000,000)")
    return np.arange(start, stop, step, dtype=np.float64) if count else np.zeros(0)


register(Op("arange", lambda xp, **p: xp.asarray(_arange_values(**p)), lambda **p: _arange_values(**p).shape, (),
            args=(), params={"start": REQUIRED, "stop": None, "step": None, "dtype": None},
            doc="evenly spaced numbers in [start, stop) (a constant, in floating point; "
                                        "tf.range)"))


register(Op("empty", lambda xp, *a, **p: None, lambda *a, **p: (), (), args=(), params={"shape": REQUIRED},
            doc="refused: uninitialized memory"))

def _like_shape(shape, fill_value=0.0, dtype=None):
    _dtype_check(dtype)
    _fill_value(fill_value)
    return tuple(shape)


for _name, _fill, _params, _doc in (
        ("zeros_like", 0.0, {"dtype": None}, "zeros of x's shape (no gradient passes to x)"),
        ("ones_like", 1.0, {"dtype": None}, "ones of x's shape (no gradient passes to x)"),
        ("full_like", None, {"fill_value": REQUIRED, "dtype": None},
         "fill_value everywhere in x's shape (no gradient passes to x)")):
    register(Op(_name, (lambda fill: lambda xp, x, fill_value=fill, dtype=None:
                        xp.full_like(x, _fill_value(fill_value)))(_fill),
                (lambda fill: lambda shape, fill_value=fill, dtype=None: _like_shape(shape, fill_value, dtype))(_fill),
                NOT_DIFFERENTIABLE, params=_params, finite_closed=True, doc=_doc))


def _linspace_shape(start, stop, num=50, endpoint=True, axis=0):
    num = _int(num, "num")
    if num < 0:
        raise ShapeError(f"num must not be negative, got {num}")
    common = broadcast_shapes(start, stop)
    axis = _axis(len(common) + 1, axis)
    return common[:axis] + (num,) + common[axis:]


def _linspace_fraction(g, num, endpoint, axis):
    """The fractions t (0 .. 1) of linspace, shaped to broadcast against its result g."""
    t = G.linspace(g.graph.constant(0.0), g.graph.constant(1.0), num=num, endpoint=endpoint, axis=0)
    return G.reshape(t, shape=tuple(num if k == axis else 1 for k in range(g.ndim)))


def _linspace_vjp_stop(g, ans, start, stop, num=50, endpoint=True, axis=0):
    axis %= g.ndim
    return G.sum(g * _linspace_fraction(g, num, endpoint, axis), axis=axis)


def _linspace_vjp_start(g, ans, start, stop, num=50, endpoint=True, axis=0):
    axis %= g.ndim
    return G.sum(g, axis=axis) - _linspace_vjp_stop(g, ans, start, stop, num, endpoint, axis)


register(Op("linspace", lambda xp, start, stop, num=50, endpoint=True, axis=0:
            xp.linspace(start, stop, num, endpoint=bool(endpoint), axis=axis), _linspace_shape,
            (_linspace_vjp_start, _linspace_vjp_stop), args=("start", "stop"),
            params={"num": 50, "endpoint": True, "axis": 0}, finite_closed=False,
            doc="num evenly spaced numbers from start to stop (differentiable in start and stop)",
            nonstandard="NumPy's linspace of arrays"))


def _meshgrid_axis(k, count, indexing):
    if indexing == "xy" and count >= 2 and k < 2:
        return 1 - k
    return k


def _meshgrid_shape(*shapes, k=0, indexing="xy", sparse=False, copy=True, flatten=True):
    if not flatten and any(len(s) > 1 for s in shapes):
        raise ShapeError(f"meshgrid of an array of shape {fmt_shape(next(s for s in shapes if len(s) > 1))}: "
                         "JAX's and PyTorch's take vectors (NumPy's flattens); flatten it first")
    if indexing not in ("xy", "ij"):
        raise ShapeError(f"indexing must be 'xy' or 'ij', not {indexing!r}")
    if sparse:
        raise ShapeError("sparse=True is not supported (write the broadcasting yourself)")
    _part_number(k, len(shapes))
    sizes = [math.prod(s) for s in shapes]
    if indexing == "xy" and len(sizes) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    return tuple(sizes)


def _meshgrid_part(xp, *xs, k=0, indexing="xy", sparse=False, copy=True, flatten=True):
    return xp.meshgrid(*(xp.reshape(x, (-1,)) for x in xs), indexing=indexing)[k]


def _meshgrid_rule(i):
    def vjp(g, ans, *xs, k=0, indexing="xy", sparse=False, copy=True, flatten=True):
        if i != k:
            return _cotangent_zero(xs[i])
        keep = _meshgrid_axis(k, len(xs), indexing)
        summed = G.sum(g, axis=tuple(a for a in range(g.ndim) if a != keep))
        return _reshaped(summed, xs[i].shape)
    return vjp


register(Op("meshgrid", None, None, None, args=(), variadic=True,
            params={"indexing": "xy", "sparse": False, "copy": True, "flatten": True},
            parts=lambda *shapes, **p: [("meshgrid_part", {"k": k, **p}) for k in range(len(shapes))],
            doc="X, Y = meshgrid(x, y, indexing='xy'): coordinate grids (torch.meshgrid: 'ij')"))
register(Op("meshgrid_part", _meshgrid_part, _meshgrid_shape, (_meshgrid_rule,), args=(), variadic=True,
            params={"k": 0, "indexing": "xy", "sparse": False, "copy": True, "flatten": True}, public=True,
            finite_closed=True, doc="the k-th grid of meshgrid"))


# --------------------------------------------------------------------------- floating-point parts

register(Op("frexp", None, None, None, parts=lambda shape: [("frexp_mantissa", {}), ("frexp_exponent", {})],
            doc="m, e = frexp(x): x = m * 2**e with 0.5 <= |m| < 1"))
register(Op("frexp_mantissa", lambda xp, x: xp.frexp(x)[0], lambda shape: tuple(shape),
            (lambda g, ans, x: g * G.exp2(-G.frexp_exponent(x)),), public=False, prints_as=lambda x: f"frexp({x})[0]",
            finite_closed=True, doc="the mantissa of frexp", nonstandard="NumPy's frexp"))
register(Op("frexp_exponent", lambda xp, x: xp.astype(xp.frexp(x)[1], x.dtype), lambda shape: tuple(shape),
            NOT_DIFFERENTIABLE, public=False, finite_closed=True, prints_as=lambda x: f"frexp({x})[1]",
            doc="the exponent of frexp", nonstandard="NumPy's frexp"))
register(Op("modf", None, None, None, parts=lambda shape: [("modf_fraction", {}), ("modf_integral", {})],
            doc="f, i = modf(x): the fractional and integral parts, each with x's sign"))
register(Op("modf_fraction", lambda xp, x: xp.modf(x)[0], lambda shape: tuple(shape),
            (lambda g, ans, x: g,), public=False, prints_as=lambda x: f"modf({x})[0]",
            doc="the fractional part of modf", nonstandard="NumPy's modf"))
register(Op("modf_integral", lambda xp, x: xp.modf(x)[1], lambda shape: tuple(shape), NOT_DIFFERENTIABLE,
            public=False, prints_as=lambda x: f"modf({x})[1]", doc="the integral part of modf",
            nonstandard="NumPy's modf"))


def _ldexp(xp, x, e):
    if not bool(xp.all(e == xp.round(e))):
        raise DataError("the exponents of ldexp must be integers")
    return xp.ldexp(x, e.astype(xp.int64)).astype(xp.result_type(x, e))


register(Op("ldexp", _ldexp, lambda a, b: broadcast_shapes(a, b), (lambda g, ans, x, e: g * G.exp2(e), NO_GRADIENT),
            args=("x", "e"), elementwise=True, grows=True, underflows="rounds", doc="x * 2**e for integer e",
            nonstandard="NumPy's ldexp"))


def _array_equal(xp, a, b, equal_nan=False):
    same = a.shape == b.shape and bool(xp.all((a == b) | (bool(equal_nan) & xp.isnan(a) & xp.isnan(b))))
    return xp.asarray(float(same), dtype=xp.result_type(a, b))


def _array_equiv(xp, a, b):
    try:
        out = broadcast_shapes(a.shape, b.shape)
    except ShapeError:
        return xp.asarray(0.0, dtype=xp.result_type(a, b))
    return xp.asarray(float(bool(xp.all(xp.broadcast_to(a, out) == xp.broadcast_to(b, out)))),
                      dtype=xp.result_type(a, b))


register(Op("array_equal", _array_equal, lambda a, b, equal_nan=False: (), NOT_DIFFERENTIABLE * 2, args=("a1", "a2"),
            params={"equal_nan": False}, boolean=True, finite_closed=True,
            doc="1 where the arrays have one shape and equal elements, else 0"))
register(Op("array_equiv", _array_equiv, lambda a, b: (), NOT_DIFFERENTIABLE * 2, args=("a1", "a2"), boolean=True,
            finite_closed=True, doc="1 where the arrays broadcast to equal elements, else 0"))


# --------------------------------------------------------------------------- PyTorch's own array functions

def _split_with_sizes_parts(shape, split_sizes, axis=0):
    axis, n = _split_length(shape, axis, "split_with_sizes")
    return _slices(axis, _sizes_bounds(n, _ints(split_sizes, "split_sizes"), "split_with_sizes"))


register(Op("split_with_sizes", None, None, None, params={"split_sizes": REQUIRED, "axis": 0},
            parts=_split_with_sizes_parts, doc="torch.split_with_sizes(x, sizes, dim=0): parts of the listed sizes"))


def _unflatten_shape(shape, axis, sizes):
    axis = _axis(len(shape), axis, "dim")
    sizes = list(_ints(sizes, "sizes"))
    if sizes.count(-1) > 1 or any(s < -1 for s in sizes):
        raise ShapeError(f"sizes {tuple(sizes)} may hold one -1 and no other negative number")
    known = math.prod(s for s in sizes if s != -1)
    if -1 in sizes:
        if known == 0 or shape[axis] % known:
            raise ShapeError(f"sizes {tuple(sizes)} do not divide dim {axis} of length {shape[axis]}")
        sizes[sizes.index(-1)] = shape[axis] // known
    if math.prod(sizes) != shape[axis]:
        raise ShapeError(f"sizes {tuple(sizes)} do not multiply to dim {axis}'s length {shape[axis]}")
    return tuple(shape[:axis]) + tuple(sizes) + tuple(shape[axis + 1:])


register(Op("unflatten", lambda xp, x, axis, sizes: xp.reshape(x, _unflatten_shape(x.shape, axis, sizes)),
            _unflatten_shape, (_back,), params={"axis": REQUIRED, "sizes": REQUIRED}, view=True, memory="reshape",
            finite_closed=True, doc="torch.unflatten(x, dim, sizes): dim split into axes of those sizes"))
register(Op("constant_pad_nd", lambda xp, x, pad, value=0: _pad(xp, x, _torch_pad_widths(x.shape, pad), "constant",
                                                                  value),
            lambda shape, pad, value=0: _pad_shape(shape, _torch_pad_widths(shape, pad), "constant", value),
            (lambda g, ans, x, pad, value=0: _pad_vjp(g, ans, x, _torch_pad_widths(x.shape, pad)),),
            params={"pad": REQUIRED, "value": 0}, finite_closed=True,
            doc="torch.constant_pad_nd(x, pad, value=0): F.pad in constant mode", nonstandard="NumPy's pad"))


def _replaced(index_of, doc, name, params):
    """x with the block `index_of(x shape, **params)` replaced by src (PyTorch's *_scatter)."""
    def forward(xp, x, src, **p):
        out = xp.asarray(x, dtype=xp.result_type(x, src), copy=True)
        out[_basic_index(index_of(x.shape, **p), x.ndim)] = src
        return out

    def shape(x_shape, src_shape, **p):
        want = _index_shape(x_shape, index_of(x_shape, **p))
        if tuple(src_shape) != want:
            raise ShapeError(f"src of shape {fmt_shape(src_shape)} does not fill the block of shape {fmt_shape(want)}")
        return tuple(x_shape)

    def vjp_x(g, ans, x, src, **p):
        index = index_of(x.shape, **p)
        return g - G.scatter(G.index(g, index=index), shape=g.shape, index=index)

    register(Op(name, forward, shape, (vjp_x, lambda g, ans, x, src, **p: G.index(g, index=index_of(x.shape, **p))),
                args=("x", "src"), params=params, finite_closed=True, doc=doc))


def _select_index(shape, axis, index):
    axis = _axis(len(shape), axis, "dim")
    index = _int(index, "index")
    if not -shape[axis] <= index < shape[axis]:
        raise ShapeError(f"index {index} is out of range for dim {axis} of length {shape[axis]}")
    return _along(axis, index % shape[axis])


def _slice_scatter_index(shape, axis=0, start=None, end=None, step=1):
    axis = _axis(len(shape), axis, "dim")
    if _int(step, "step") < 1:
        raise ShapeError(f"step must be positive, not {step}")
    for bound, what in ((start, "start"), (end, "end")):
        if bound is not None:
            _int(bound, what)
    return _along(axis, (start, end, step))


_replaced(_select_index, "torch.select_scatter(x, src, dim, index): x with x.select(dim, index) replaced by src",
          "select_scatter", {"axis": REQUIRED, "index": REQUIRED})
_replaced(_slice_scatter_index, "torch.slice_scatter(x, src, dim=0, start=None, end=None, step=1)",
          "slice_scatter", {"axis": 0, "start": None, "end": None, "step": 1})


def _diagonal_scatter_shape(x_shape, src_shape, offset=0, axis1=0, axis2=1):
    want = _diagonal_plan(x_shape, offset, axis1, axis2)[2]
    if tuple(src_shape) != want:
        raise ShapeError(f"src of shape {fmt_shape(src_shape)} does not fit the diagonal of shape {fmt_shape(want)}")
    return tuple(x_shape)


def _diagonal_scatter(xp, x, src, offset=0, axis1=0, axis2=1):
    placed = _embed_diagonal(xp, src, x.shape, offset, axis1, axis2)
    on = _embed_diagonal(xp, xp.ones_like(src), x.shape, offset, axis1, axis2)
    return xp.where(on != 0, placed, x)


register(Op("diagonal_scatter", _diagonal_scatter, _diagonal_scatter_shape,
            (lambda g, ans, x, src, **p: g - G.embed_diagonal(G.diagonal(g, **p), shape=g.shape, **p),
             lambda g, ans, x, src, **p: G.diagonal(g, **p)),
            args=("x", "src"), params=dict(_DIAGONAL), finite_closed=True,
            doc="torch.diagonal_scatter(x, src, offset=0, dim1=0, dim2=1): x with its diagonal replaced by src",
            nonstandard="NumPy's writes through a view, by index arrays"))


def _combinations_indices(n, r=2, with_replacement=False):
    import itertools
    r = _int(r, "r")
    if r < 0:
        raise ShapeError(f"r must not be negative, got {r}")
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    count = math.comb(n + r - 1, r) if with_replacement else math.comb(n, r)
    if count == 0:
        return ()  # (itertools would first allocate r places)
    if count * max(r, 1) > MAX_INDICES:
        raise ShapeError(f"{count:,} combinations (at most {MAX_INDICES // max(r, 1):,})")
    return tuple(pick(range(n), r))


def _combinations_shape(shape, r=2, with_replacement=False):
    if len(shape) != 1:
        raise ShapeError(f"takes a vector, got shape {fmt_shape(shape)}")
    rows = _combinations_indices(shape[0], r, with_replacement)
    return (len(rows), r) if rows and r else (0,) if not r else (0, r)


def _combinations(xp, x, r=2, with_replacement=False):
    rows = _combinations_indices(x.shape[0], r, with_replacement)
    if not rows or not r:
        return xp.zeros(_combinations_shape(x.shape, r, with_replacement), dtype=x.dtype)
    return _gather_axis(xp, x, rows, 0)


def _combinations_vjp(g, ans, x, r=2, with_replacement=False):
    rows = _combinations_indices(x.shape[0], r, with_replacement)
    if not rows or not r:
        return _cotangent_zero(x)
    return G.gather_axis_add(g, indices=rows, axis=0, size=x.shape[0])


register(Op("combinations", _combinations, _combinations_shape, (_combinations_vjp,),
            params={"r": 2, "with_replacement": False}, finite_closed=True,
            doc="torch.combinations(x, r=2): the r-element combinations of a vector's elements, as rows"))


def _cartesian_shape(*shapes):
    if any(len(s) != 1 for s in shapes):
        raise ShapeError("takes vectors, got shapes " + ", ".join(fmt_shape(s) for s in shapes))
    n = math.prod(s[0] for s in shapes)
    return (n,) if len(shapes) == 1 else (n, len(shapes))


def _cartesian_prod(xp, *xs):
    if len(xs) == 1:
        return xs[0].copy()
    grids = xp.meshgrid(*xs, indexing="ij")
    return xp.stack([xp.reshape(grid, (-1,)) for grid in grids], axis=1)


def _cartesian_rule(i):
    def vjp(g, ans, *xs):
        if len(xs) == 1:
            return g
        column = G.index(g, index=(FULL, i))
        grid = G.reshape(column, shape=tuple(x.shape[0] for x in xs))
        return G.sum(grid, axis=tuple(a for a in range(len(xs)) if a != i))
    return vjp


register(Op("cartesian_prod", _cartesian_prod, _cartesian_shape, (_cartesian_rule,), args=(), variadic=True,
            finite_closed=True,
            doc="torch.cartesian_prod(a, b, ...): every combination of the vectors' elements, as rows"))


def _unfold_plan(shape, dimension, size, step):
    axis = _axis(len(shape), dimension, "dimension") if shape else None
    size, step = _int(size, "size"), _int(step, "step")
    n = shape[axis] if shape else 1
    if size < 0 or size > n or step < 1:
        raise ShapeError(f"unfold: windows of size {size}, step {step} do not fit a dimension of length {n}")
    count = (n - size) // step + 1
    if count * size > MAX_INDICES:
        raise ShapeError(f"unfold: {count * size:,} window elements (at most {MAX_INDICES:,})")
    windows = tuple(tuple(range(k * step, k * step + size)) for k in range(count))
    return axis, windows


def _unfold_perm(ndim, axis):
    # gather_axis puts (windows, size) at axis: move the size axis to the end
    order = list(range(ndim + 1))
    order.append(order.pop(axis + 1))
    return tuple(order)


def _unfold_shape(shape, dimension, size, step):
    axis, windows = _unfold_plan(shape, dimension, size, step)
    if axis is None:
        return (size,)
    return tuple(shape[:axis]) + (len(windows),) + tuple(shape[axis + 1:]) + (size,)


def _unfold(xp, x, dimension, size, step):
    axis, windows = _unfold_plan(x.shape, dimension, size, step)
    if axis is None:
        return xp.broadcast_to(x, (size,)).copy()
    out = _gather_axis(xp, x, windows, axis)
    if not windows:
        return xp.reshape(out, _unfold_shape(x.shape, dimension, size, step))
    return xp.permute_dims(out, _unfold_perm(x.ndim, axis))


def _unfold_vjp(g, ans, x, dimension, size, step):
    axis, windows = _unfold_plan(x.shape, dimension, size, step)
    if axis is None:
        return G.sum(g)
    moved = G.transpose(g, axes=_inverse(_unfold_perm(x.ndim, axis)))
    return G.gather_axis_add(moved, indices=windows, axis=axis, size=x.shape[axis])


register(Op("unfold", _unfold, _unfold_shape, (_unfold_vjp,),
            params={"dimension": REQUIRED, "size": REQUIRED, "step": REQUIRED}, finite_closed=True,
            doc="torch's x.unfold(dimension, size, step): the windows along dimension, as a new last axis"))


# jax.nn.one_hot(x, num_classes), tf.one_hot(indices, depth): 1 where x equals the class, along a new
# last axis; a value that is no class (out of range, not an integer) gives a row of zeros, as JAX and
# TensorFlow give. PyTorch's F.one_hot refuses such a value: its own record (gradcli/ops/scatter.py)
def _one_hot_shape(shape, num_classes):
    if not isinstance(num_classes, int) or num_classes < 0:
        raise ShapeError(f"the number of classes must be a non-negative integer, not {num_classes}")
    return tuple(shape) + (num_classes,)


register(Op("one_hot", lambda xp, x, num_classes: (x[..., None] == xp.arange(num_classes)).astype(x.dtype),
            _one_hot_shape, NOT_DIFFERENTIABLE, params={"num_classes": REQUIRED},
            boolean=True, finite_closed=True,
            doc="one_hot(x, num_classes): 1 where x equals the class along a new last axis, else 0 (no gradient)"))
