"""The op table, continued: shape and array functions, constructors, and selection with
constant integer indices.

The gradient rules (`G.` equations, as everywhere in the table):
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

The family continues, in table order, in gradcli/ops/selection.py (selection, padding, diagonals)
and gradcli/ops/creation.py (constructors), each a module of at most 900 lines.
"""
from __future__ import annotations

import math

import numpy as np

from gradcli.ops.core import _reshape_shape
from gradcli.ops.trace import G
from gradcli.ops.table import REQUIRED, Op, register
from gradcli.ops.shapes import _along, fmt_shape, inverse_permutation, normalize_axes
from gradcli.errors import ShapeError

MAX_INDICES = 100_000_000  # the most elements a constant index map (repeat, pad) or split may have
FLOAT_NAMES = {"float16", "float32", "float64", "double", "single", "half", "float", "bfloat16", "float_"}


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


def _shape_param(shape):
    dims = _ints(shape, "shape")
    if any(d < 0 for d in dims):
        raise ShapeError(f"negative dimensions are not allowed: {fmt_shape(dims)}")
    return tuple(dims)


def _select_index(shape, axis, index):
    axis = _axis(len(shape), axis, "dim")
    index = _int(index, "index")
    if not -shape[axis] <= index < shape[axis]:
        raise ShapeError(f"index {index} is out of range for dim {axis} of length {shape[axis]}")
    return _along(axis, index % shape[axis])


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
            _squeeze_loose_shape, (_back,), params={"axis": None}, view=True, memory="view",
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
            _flatten_dims_shape, (_back,), params={"start_dim": 0, "end_dim": -1}, view=True,
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


def _permuting(name, perm_of, params=None, doc=""):
    register(Op(name, lambda xp, x, **p: xp.permute_dims(x, perm_of(x.ndim, **p)),
                lambda shape, **p: tuple(shape[a] for a in perm_of(len(shape), **p)),
                (lambda g, ans, x, **p: G.transpose(g, axes=inverse_permutation(perm_of(x.ndim, **p))),),
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
            (lambda g, ans, x, axis=None: G.flip(g, axis=axis),), params={"axis": None}, view=True, memory="view",
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


# --------------------------------------------------------------------------- NumPy's order='F', PyTorch's expand and .mT

def _matrix_transpose_shape(shape):
    if len(shape) < 2:
        raise ShapeError(f"matrix_transpose needs an array of rank 2 or more, got {fmt_shape(shape)}")
    return shape[:-2] + (shape[-1], shape[-2])


def _last_two_swapped(ndim):
    return tuple(range(ndim - 2)) + (ndim - 1, ndim - 2)


register(Op("matrix_transpose", lambda xp, x: xp.permute_dims(x, _last_two_swapped(x.ndim)), _matrix_transpose_shape,
            (lambda g, ans, x: G.matrix_transpose(g),), view=True, memory="view", finite_closed=True, involution=True,
            doc="the last two axes swapped (np.matrix_transpose, x.mT): a stack of matrices transposed"))


def _reshape_order_shape(x_shape, shape, order="C"):
    if order not in ("C", "F"):
        raise ShapeError(f"reshape order {order!r}: 'C' and 'F' are supported ('A' and 'K' follow the memory layout "
                         "of NumPy's array, which gradcli's values do not have)")
    return _reshape_shape(x_shape, shape)


def _reshape_order(xp, x, shape, order="C"):
    out_shape = _reshape_order_shape(x.shape, shape, order)
    if order == "C":
        return xp.reshape(x, out_shape)
    # Fortran order: the first index changes fastest, a C-order reshape of the reversed axes
    flipped = xp.reshape(xp.permute_dims(x, tuple(range(x.ndim))[::-1]), out_shape[::-1])
    return xp.permute_dims(flipped, tuple(range(len(out_shape)))[::-1])


register(Op("reshape_order", _reshape_order, _reshape_order_shape,
            (lambda g, ans, x, shape, order="C": G.reshape_order(g, shape=x.shape, order=order),),
            params={"shape": REQUIRED, "order": "C"}, finite_closed=True,
            doc="np.reshape(x, shape, order=): order 'F' reads and writes the elements with the first index "
                "changing fastest"))


def _expand_sizes_shape(x_shape, shape):
    sizes = tuple(shape) if isinstance(shape, tuple) else (shape,)
    lead = len(sizes) - len(x_shape)
    if lead < 0:
        raise ShapeError(f"expand: {len(sizes)} sizes for an array of rank {len(x_shape)} (at least one per axis)")
    if any(d == -1 for d in sizes[:lead]):
        raise ShapeError("expand: -1 keeps an existing axis's size, and a new leading axis has none")
    out = sizes[:lead] + tuple(d if s == -1 else s for d, s in zip(x_shape, sizes[lead:]))
    for d, s in zip(x_shape, out[lead:]):
        if d != s and d != 1:
            raise ShapeError(f"expand: an axis of size {d} cannot become {s} (only size 1 expands)")
    if any(s < 0 for s in out):
        raise ShapeError(f"expand: sizes must be 0 or more, or -1, got {sizes}")
    return out


register(Op("expand_sizes", lambda xp, x, shape: xp.broadcast_to(x, _expand_sizes_shape(x.shape, shape)),
            _expand_sizes_shape, (lambda g, ans, x, shape: G.sum_to(g, shape=x.shape),), params={"shape": REQUIRED},
            view=True, memory="view", finite_closed=True,
            doc="PyTorch's x.expand(*sizes): x broadcast to sizes, -1 keeping an axis's size"))
