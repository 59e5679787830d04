"""The op table, continued: PyTorch's writes by index (`scatter`, `scatter_add`,
`scatter_reduce`, `index_add`, `index_fill`, `index_reduce`) and the selections whose result
follows the index's values (`one_hot`, `masked_select`, `mode`).

The writes are composites (gradcli/ops/nn.py describes them): built at the call's place of
`scatter_along` / `gather_along` (and `scatter` to pad), so their gradients and second
derivatives are those ops' own. The index may be written in the program or be an input: its
values are checked when the program runs, as PyTorch checks them: integers, in range, and
never negative (PyTorch refuses a negative index in these functions, except index_fill).

Where PyTorch's result is unspecified, gradcli refuses: `scatter` (no reduce) with two
entries of the index writing the same position (which one lands is up to the device), and
`reduce='prod'` / `'multiply'` (its gradient at zeros needs the products of the other
elements, which these equations do not hold). `amax` / `amin` split the gradient evenly
between the elements equal to the result, as PyTorch does.
"""
from __future__ import annotations

import math

import numpy as np

from gradcli.errors import ShapeError
from gradcli.ops.table import NO_GRADIENT, NOT_DIFFERENTIABLE, REQUIRED, DataError, Op, register
from gradcli.ops.shapes import FULL, _keep, broadcast_shapes, fmt_shape, on_host, reduced_shape, to_host
from gradcli.ops.trace import G
from gradcli.ops.nn import composite
from gradcli.ops.index import IndexArray


# --------------------------------------------------------------------------- index values, checked at run time

def _checked_index(xp, index, size, axis=0, negative=False, unique=False):
    """An index given as values, checked as PyTorch checks it: integers from 0 (or from -size
    where `negative`) to size - 1; with `unique`, no two entries along axis writing the same
    position. Returned non-negative."""
    if index.size:
        if not bool(xp.all(index == xp.round(index))):
            raise DataError("the index must hold integers")
        low = -size if negative else 0
        bad = (index < low) | (index >= size)
        if bool(xp.any(bad)):
            value = float(index[bad].reshape(-1)[0])
            raise DataError(f"index {value:g} is out of bounds for dim {axis} with size {size}"
                            + ("" if negative or value >= size else " (PyTorch takes no negative index here)"))
        if unique and index.shape[axis] > 1:
            ordered = xp.sort(index, axis=axis)
            if bool(xp.any(xp.diff(ordered, axis=axis) == 0)):
                raise DataError(f"the index writes one position twice along dim {axis}: PyTorch leaves which value "
                                "lands there unspecified; give each position once, or use scatter_add / "
                                "scatter_reduce")
    return xp.mod(index, max(size, 1)).astype(index.dtype) if negative else index


register(Op("checked_index", _checked_index, lambda shape, size, axis=0, negative=False, unique=False: shape,
            NOT_DIFFERENTIABLE, params={"size": REQUIRED, "axis": 0, "negative": False, "unique": False},
            public=False,
            doc="an index's values checked as PyTorch checks them (integers in range; no gradient)"))


def _positions(x_shape, index, axis):
    """Each index entry's position in x: itself, with the index's value on axis."""
    grids = np.meshgrid(*[np.arange(k) for k in index.shape], indexing="ij")
    return tuple(index.astype(np.int64) if k == axis else grids[k] for k in range(len(x_shape)))


def _scatter_extreme(xp, x, v, index, axis, kind, include_self):
    """scatter_reduce's amax / amin: each position's extreme over the values written there (and
    its own, with include_self); positions written by none keep their value. NaN spreads."""
    def extremes(x, v, index):
        at = _positions(x.shape, index, axis)
        ufunc = np.maximum if kind == "amax" else np.minimum
        hit = np.zeros(x.shape, dtype=bool)
        hit[at] = True
        out = x.copy() if include_self else np.where(hit, -np.inf if kind == "amax" else np.inf, x)
        ufunc.at(out, at, v)
        return out
    return on_host(xp, extremes, x, v, index)


def _scatter_extreme_shape(x, v, index, axis, kind, include_self):
    if v != index:
        raise ShapeError(f"values of shape {fmt_shape(v)} for an index of shape {fmt_shape(index)}")
    return x


register(Op("scatter_extreme", _scatter_extreme, _scatter_extreme_shape, (NO_GRADIENT,) * 3,
            args=("x", "v", "index"), params={"axis": REQUIRED, "kind": REQUIRED, "include_self": True},
            public=False,
            doc="the value of scatter_reduce's amax / amin (no gradient: the composite routes it)"))


# --------------------------------------------------------------------------- shared: where each value lands

class _Targets:
    """The positions in x (shape `x.shape`) that the values of an index of `index.shape` along
    axis write to; `add(v)`: zeros of x's shape with v added there; `read(r)`: r there."""

    def __init__(self, f, x, axis, index):
        self.f, self.x, self.axis, self.index = f, x, axis, index
        self.off = tuple(FULL if k == axis else (0, index.shape[k], None) for k in range(x.ndim))
        self.partial = any(index.shape[k] != x.shape[k] for k in range(x.ndim) if k != axis)

    def add(self, v):
        f = self.f
        out = f.scatter_along(v, self.index, axis=self.axis, size=self.x.shape[self.axis])
        return f.scatter(out, shape=self.x.shape, index=self.off) if self.partial else out

    def read(self, r):
        f = self.f
        return f.gather_along(f.index(r, index=self.off) if self.partial else r, self.index, axis=self.axis)

    def hits(self):
        """How many values land on each position."""
        return self.add(self.f.broadcast_to(1.0, shape=self.index.shape))


def _given(label, **tensors):
    """Tensor arguments are bound as values: one left out is reported here."""
    for name, value in tensors.items():
        if value is None:
            raise ShapeError(f"{label}() needs the argument '{name}'")


def _dim(axis, ndim, label):
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise ShapeError(f"dim must be one integer, not {axis}")
    if ndim == 0:
        raise ShapeError(f"{label} needs an input of rank 1 or more")
    if not -ndim <= axis < ndim:
        raise ShapeError(f"dim {axis} is out of range for an input of rank {ndim}")
    return axis % ndim


def _scatter_plan(f, x, axis, index, src, label, unique=False):
    """PyTorch's rules for (input, dim, index, src): one rank; the index no larger than src
    anywhere, nor than input off dim; only src's leading block of the index's shape is read."""
    _given(label, index=index, src=src)
    axis = _dim(axis, x.ndim, label)
    if index.ndim != x.ndim:
        raise ShapeError(f"the index (rank {index.ndim}) must have the input's rank {x.ndim}")
    if src.ndim == 0:
        src = f.broadcast_to(src, shape=index.shape)
    if src.ndim != x.ndim:
        raise ShapeError(f"src (rank {src.ndim}) must have the input's rank {x.ndim}")
    if any(i > s for i, s in zip(index.shape, src.shape)):
        raise ShapeError(f"index of shape {fmt_shape(index.shape)} is larger than src {fmt_shape(src.shape)}")
    if any(i > s for k, (i, s) in enumerate(zip(index.shape, x.shape)) if k != axis):
        raise ShapeError(f"index of shape {fmt_shape(index.shape)} is larger than the input {fmt_shape(x.shape)} "
                         f"off dim {axis}")
    if src.shape != index.shape:
        src = f.index(src, index=tuple((0, k, None) for k in index.shape))
    checked = f.checked_index(index, size=x.shape[axis], axis=axis, unique=unique)
    return _Targets(f, x, axis, checked), src


def _index_plan(f, x, axis, index, source, label, negative=False):
    """PyTorch's rules for (input, dim, index, source) of the index_ functions: a vector index
    (or one number) along dim; source the input's shape with len(index) along dim."""
    _given(label, index=index)
    axis = _dim(axis, x.ndim, label)
    if index.ndim > 1:
        raise ShapeError(f"the index must be a vector (or one number), got shape {fmt_shape(index.shape)}")
    k = index.shape[0] if index.ndim else 1
    want = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    if source is not None or label != "index_fill":
        _given(label, source=source)
        if source.ndim == 0 and x.ndim == 1 and k == 1:
            source = f.reshape(source, shape=(1,))
        if source.shape != want:
            raise ShapeError(f"source of shape {fmt_shape(source.shape)} must have shape {fmt_shape(want)} "
                             f"(the input's, with the index's length {k} along dim {axis})")
    checked = f.checked_index(index, size=x.shape[axis], axis=axis, negative=negative)
    spread = f.reshape(checked, shape=(1,) * axis + (k,) + (1,) * (x.ndim - axis - 1))
    full = f.broadcast_to(spread, shape=want)
    return _Targets(f, x, axis, full), source


def _reduced(f, x, targets, src, reduce, include_self, label):
    """x with the values of src reduced into the positions they name (PyTorch's scatter_reduce
    and index_reduce)."""
    hits = targets.hits()
    hit = f.greater(hits, 0.0)
    if reduce == "sum":
        added = targets.add(src)
        return x + added if include_self else f.where(hit, added, x)
    if reduce == "mean":
        added = targets.add(src)
        if include_self:
            return (x + added) / (hits + 1.0)
        return f.where(hit, added / f.maximum(hits, 1.0), x)
    if reduce in ("amax", "amin"):
        result = f.scatter_extreme(x, src, targets.index, axis=targets.axis, kind=reduce,
                                   include_self=bool(include_self))
        src_is = f.equal(src, targets.read(result))
        self_is = f.where(hit, f.equal(x, result), 1.0) if include_self else f.where(hit, 0.0, 1.0)
        count = self_is + targets.add(src_is)
        # the gradient splits evenly between the elements equal to the result (PyTorch's);
        # the value is the result itself, to the last bit
        live = (f.where(self_is, x, 0.0) + targets.add(f.where(src_is, src, 0.0))) / f.maximum(count, 1.0)
        return f.where(f.isfinite(result), result + (live - f.stop_gradient(live)), result)
    if reduce in ("prod", "multiply"):
        raise ShapeError(f"reduce='{reduce}' is not supported: its gradient where a value is 0 needs the product "
                         "of the others at that position; write the product out, or use 'sum', 'mean', "
                         "'amax' or 'amin'")
    raise ShapeError(f"reduce must be 'sum', 'prod', 'mean', 'amax' or 'amin', not {reduce!r}")


# --------------------------------------------------------------------------- scatter

@composite("scatter_elements", ("input",), {"axis": REQUIRED, "index": REQUIRED, "src": None, "value": None,
                                         "reduce": None},
           "torch.scatter(input, dim, index, src): input with src's values written at the index along dim "
           "(a number for src, or value=, writes that number); two entries writing one position are refused "
           "(PyTorch leaves which lands unspecified); reduce='add' adds them up",
           tensors=("index", "src", "value"))
def _torch_scatter(f, x, axis, index, src, value, reduce):
    if (src is None) == (value is None):
        raise ShapeError("give the values to write as src (a tensor) or value (a number), one of them")
    src = src if src is not None else value
    _given("scatter", index=index)
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise ShapeError(f"reduce must be 'add' or 'multiply', not {reduce!r}")
        targets, src = _scatter_plan(f, x, axis, index, src, "scatter")
        return _reduced(f, x, targets, src, "sum" if reduce == "add" else reduce, True, "scatter")
    targets, src = _scatter_plan(f, x, axis, index, src, "scatter", unique=True)
    return f.where(f.greater(targets.hits(), 0.0), targets.add(src), x)


@composite("scatter_add", ("input",), {"axis": REQUIRED, "index": REQUIRED, "src": REQUIRED},
           "torch.scatter_add(input, dim, index, src): input with src's values added at the index along dim "
           "(repeated positions add up)", tensors=("index", "src"))
def _scatter_add(f, x, axis, index, src):
    targets, src = _scatter_plan(f, x, axis, index, src, "scatter_add")
    return x + targets.add(src)


@composite("scatter_reduce", ("input",), {"axis": REQUIRED, "index": REQUIRED, "src": REQUIRED,
                                          "reduce": REQUIRED, "include_self": True},
           "torch.scatter_reduce(input, dim, index, src, reduce, include_self=True): src's values reduced "
           "into the positions the index names along dim, reduce 'sum', 'mean', 'amax' or 'amin' (amax and "
           "amin split the gradient evenly between ties); 'prod' is refused", tensors=("index", "src"))
def _scatter_reduce(f, x, axis, index, src, reduce, include_self):
    targets, src = _scatter_plan(f, x, axis, index, src, "scatter_reduce")
    return _reduced(f, x, targets, src, reduce, include_self, "scatter_reduce")


# --------------------------------------------------------------------------- index_add, index_fill, index_reduce

@composite("index_add", ("input",), {"axis": REQUIRED, "index": REQUIRED, "source": REQUIRED, "alpha": 1.0},
           "torch.index_add(input, dim, index, source, alpha=1): input with alpha source's slices added at the "
           "index's positions along dim (repeated positions add up)", tensors=("index", "source"))
def _index_add(f, x, axis, index, source, alpha):
    targets, source = _index_plan(f, x, axis, index, source, "index_add")
    added = targets.add(source)
    return x + (added * float(alpha) if alpha != 1 else added)


@composite("index_fill", ("input",), {"axis": REQUIRED, "index": REQUIRED, "value": REQUIRED},
           "torch.index_fill(input, dim, index, value): input with its slices at the index along dim set to "
           "value (a number or a 0-d tensor, whose gradient sums the slices; negative indices count from the end)",
           tensors=("index", "value"))
def _index_fill(f, x, axis, index, value):
    _given("index_fill", value=value)
    if value.ndim != 0:
        raise ShapeError(f"value must be a number (a 0-d tensor), got shape {fmt_shape(value.shape)}")
    targets, _ = _index_plan(f, x, axis, index, None, "index_fill", negative=True)
    return f.where(f.greater(targets.hits(), 0.0), value, x)


@composite("index_reduce", ("input",), {"axis": REQUIRED, "index": REQUIRED, "source": REQUIRED,
                                        "reduce": REQUIRED, "include_self": True},
           "torch.index_reduce(input, dim, index, source, reduce, include_self=True): source's slices reduced "
           "into the index's positions along dim, reduce 'mean', 'amax' or 'amin' ('prod' is refused)",
           tensors=("index", "source"))
def _index_reduce(f, x, axis, index, source, reduce, include_self):
    if reduce == "sum":
        raise ShapeError("reduce must be 'prod', 'mean', 'amax' or 'amin' (index_add adds)")
    targets, source = _index_plan(f, x, axis, index, source, "index_reduce")
    return _reduced(f, x, targets, source, reduce, include_self, "index_reduce")


# --------------------------------------------------------------------------- one_hot, masked_select

def _as_read(xp, x, values, mask=None, largest=None):
    """x, once the values that decided the call's shape are found to be the ones it runs with:
    a value read lazily (a Dask input, unknown while the program is read) may not be."""
    host = np.asarray(to_host(xp, values) if hasattr(xp, "asnumpy") else values)
    if mask is not None:
        same = host.shape == mask.array.shape and bool(np.array_equal(host != 0, mask.array))
    else:
        same = host.size > 0 and float(np.max(host)) == largest
    if not same:
        raise DataError("the values that decide this result's shape are not the ones read with the program (an "
                        "input read lazily, as on --device dask, is not known then): write them in the program, "
                        "or run on the CPU")
    return x


register(Op("as_read", _as_read, lambda x, values, mask=None, largest=None: x, (lambda g, ans, x, values, **_: g,
                                                                                 NO_GRADIENT),
            args=("x", "values"), params={"mask": None, "largest": None}, public=False, view=True, memory="same",
            doc="x, checked that the values deciding a result's shape are those the program was read with"))


def _known(f, v, what):
    known = v.graph.known(v.id)
    if known is None:
        raise ShapeError(f"{what} must be written in the program or given as an input (its values decide the "
                         "result's shape)")
    return np.asarray(known)


# reached from one_hot where PyTorch spells it (its dialect's reading: gradcli/language/dialects/torch.py)
@composite("one_hot_inferred", ("input",), {"num_classes": -1},
           "torch's F.one_hot(tensor, num_classes=-1): 1 at each class index along a new last axis, else 0 "
           "(num_classes -1: the largest index + 1); no gradient (PyTorch's is an integer tensor)", public=False)
def _one_hot(f, t, num_classes):
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, float)) or num_classes != int(num_classes) \
            or num_classes < -1:
        raise ShapeError(f"num_classes must be a non-negative integer, or -1, not {num_classes!r}")
    num_classes = int(num_classes)
    if num_classes == -1:
        values = _known(f, t, "the class indices (with num_classes=-1)")
        if values.size == 0:
            raise ShapeError("cannot work out num_classes from an empty tensor: give num_classes")
        top = float(np.max(values))
        if not math.isfinite(top) or top != int(top) or top < 0:
            raise ShapeError("class values must be non-negative integers")
        num_classes = int(top) + 1
        largest = top
    else:
        largest = None
    checked = f.checked_index(t, size=num_classes)
    if largest is not None:
        checked = f.as_read(checked, t, largest=largest)
    classes = np.arange(num_classes, dtype=np.float64)
    return f.equal(f.reshape(checked, shape=t.shape + (1,)), classes)


@composite("masked_select", ("input", "mask"), {},
           "torch.masked_select(input, mask): the elements where mask (0 or 1, broadcast with input) is 1, "
           "as a vector in row-major order; the mask must be written or an input")
def _masked_select(f, x, mask):
    values = _known(f, mask, "the mask")
    if not np.all((values == 0) | (values == 1)):
        raise ShapeError("the mask must hold 0 and 1 (True and False) only")
    shape = broadcast_shapes(x.shape, values.shape)
    if x.shape != shape:
        x = f.broadcast_to(x, shape=shape)
    keep = np.broadcast_to(values != 0, shape)
    x = f.as_read(x, mask, mask=IndexArray(values != 0))
    if not shape:
        return f.index(f.reshape(x, shape=(1,)), index=(IndexArray(keep.reshape(1)),))
    return f.index(x, index=(IndexArray(keep),))


# --------------------------------------------------------------------------- mode

def _mode_index(xp, x, axis=-1, keepdims=False):
    """The index of the most frequent value along axis: the smallest such value, its last
    occurrence (PyTorch's)."""
    def mode_index(x):
        moved = np.moveaxis(x, axis, -1)
        lead, n = moved.shape[:-1], moved.shape[-1]
        rows = moved.reshape(-1, n)
        order = np.argsort(rows, axis=-1, kind="stable")
        ordered = np.take_along_axis(rows, order, axis=-1)
        position = np.arange(n)
        starts = np.ones(ordered.shape, dtype=bool)
        starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
        start = np.maximum.accumulate(np.where(starts, position, 0), axis=-1)
        length = position - start + 1
        end = np.argmax(length, axis=-1)  # the first longest run: the smallest value; its end: its last occurrence
        index = order[np.arange(rows.shape[0]), end].astype(x.dtype).reshape(lead + (1,))
        index = np.moveaxis(index, -1, axis)
        return index if keepdims else np.squeeze(index, axis=axis)
    return on_host(xp, mode_index, x)


def _mode_shape(shape, axis=-1, keepdims=False):
    axis = _dim(axis, len(shape), "mode")
    if shape[axis] == 0:
        raise ShapeError(f"mode of an empty dim {axis}")
    return reduced_shape(shape, axis, keepdims)


def _mode_values(xp, x, axis=-1, keepdims=False):
    index = _mode_index(xp, x, axis, True)
    out = xp.take_along_axis(x, index.astype(xp.int64), axis=axis)
    return out if keepdims else xp.squeeze(out, axis=axis)


def _mode_vjp(g, ans, x, axis=-1, keepdims=False):
    axis %= x.ndim
    index = G.mode_indices(x, axis=axis, keepdims=True)
    return G.scatter_along(_keep(g, x.shape, axis, keepdims), index, axis=axis, size=x.shape[axis])


_MODE_PARAMS = {"axis": -1, "keepdims": False}
register(Op("mode_values", _mode_values, _mode_shape, (_mode_vjp,), params=dict(_MODE_PARAMS), public=False,
            finite_closed=True, doc="torch.mode's values: the gradient goes to the element its index names"))
register(Op("mode_indices", _mode_index, _mode_shape, NOT_DIFFERENTIABLE, params=dict(_MODE_PARAMS), public=False,
            doc="torch.mode's indices"))
register(Op("mode", None, None, None, params=dict(_MODE_PARAMS),
            parts=lambda shape, **p: [("mode_values", p), ("mode_indices", p)], fields=("values", "indices"),
            doc="torch.mode(input, dim=-1, keepdim=False): the tuple (the most frequent value along dim, the "
                "smallest on ties; the index of its last occurrence)"))
