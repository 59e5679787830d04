"""The op table, continued: reductions, scans and statistics.

Ops that select elements (sort, partition, cummax, median, quantile) route the gradient through the
permutation their forward used, held as an index array (`argsort`, `cumargmax`), with the pair
`gather_along` / `scatter_along` moving values along an axis by such indices.

The family continues, in table order, in gradcli/ops/norms.py (norms, differences, integrals,
covariance, segments, top_k).
"""
from __future__ import annotations

import math

from gradcli.errors import ShapeError
from gradcli.ops.trace import G
from gradcli.ops.table import NO_GRADIENT, NOT_DIFFERENTIABLE, REQUIRED, DataError, Op, register
from gradcli.ops.core import _reduction
from gradcli.ops.shapes import (
    _along, _count, _keep, _nonempty_reduction_shape, _permuted, _spread, broadcast_shapes, inverse_permutation,
    normalize_axes, on_host, reduced_shape)


def _shifted(a, axis: int, toward_start: bool):
    """Along axis: a[i + 1] at i, 0 at the end (toward_start); else a[i - 1] at i, 0 at the start."""
    ahead, behind = _along(axis, (1, None, None)), _along(axis, (None, -1, None))
    source, place = (ahead, behind) if toward_start else (behind, ahead)
    return G.scatter(G.index(a, index=source), shape=a.shape, index=place)


def _single_numbers(**params):
    for name, value in params.items():
        if isinstance(value, tuple):
            raise ShapeError(f"{name} must be one number, not a list")


def _one_axis(shape, axis, what="axis"):
    if not isinstance(axis, int):
        raise ShapeError(f"{what} must be one integer, not {axis}")
    if not shape:
        raise ShapeError("needs an array of rank 1 or more")
    normalize_axes(axis, len(shape))
    return axis % len(shape)


# --------------------------------------------------------------------------- scans

def _linear_recurrence(xp, b, a, axis=0, reverse=False):
    """s[i] = b[i] + a[i] * s[i - 1] along axis (s[i + 1] with reverse), starting from b."""
    b, a = xp.broadcast_arrays(b, a)
    out = xp.empty(b.shape, dtype=xp.result_type(b, a))
    n = b.shape[axis]
    previous = None
    for i in (range(n - 1, -1, -1) if reverse else range(n)):
        at = _along(axis, i)
        at = tuple(slice(*item) if isinstance(item, tuple) else item for item in at) + (Ellipsis,)
        previous = b[at] if previous is None else b[at] + a[at] * previous
        out[at] = previous
    return out


def _linear_recurrence_shape(b, a, axis=0, reverse=False):
    shape = broadcast_shapes(b, a)
    _one_axis(shape, axis)
    return shape


def _linear_recurrence_vjp_b(g, ans, b, a, axis=0, reverse=False):
    return G.linear_recurrence(g, _shifted(a, axis, toward_start=not reverse), axis=axis, reverse=not reverse)


def _linear_recurrence_vjp_a(g, ans, b, a, axis=0, reverse=False):
    return _shifted(ans, axis, toward_start=reverse) * _linear_recurrence_vjp_b(g, ans, b, a, axis, reverse)


register(Op("linear_recurrence", _linear_recurrence, _linear_recurrence_shape,
            (_linear_recurrence_vjp_b, _linear_recurrence_vjp_a), args=("b", "a"),
            params={"axis": 0, "reverse": False},
            doc="s[i] = b[i] + a[i] * s[i-1] along axis (s[i+1] with reverse=True): "
                "the scan that the gradients of cumprod and cumlogsumexp are made of"))


def _scan_shape(shape, axis=None, **_):
    if axis is None:
        return (math.prod(shape),)
    _one_axis(shape, axis)
    return shape


def _scan(xp, x, axis, reverse, exclusive, scan, fill):
    if axis is None:
        x, axis = xp.reshape(x, (-1,)), 0
    if reverse:
        x = xp.flip(x, axis=axis)
    out = scan(x, axis)
    if exclusive and x.shape[axis]:
        head = xp.full(tuple(1 if i == axis % x.ndim else d for i, d in enumerate(x.shape)), fill, dtype=out.dtype)
        body = out[tuple(slice(None, -1) if i == axis % x.ndim else slice(None) for i in range(x.ndim))]
        out = xp.concat([head, body], axis=axis)
    return xp.flip(out, axis=axis) if reverse else out


def _scan_vjp(rule):
    """A scan's rule on a named axis; axis=None (the flattened array) reshapes around it."""
    def vjp(g, ans, x, axis=None, **params):
        if axis is None:
            flat = x if x.ndim == 1 else G.reshape(x, shape=(math.prod(x.shape),))
            out = rule(g, ans, flat, 0, **params)
            return out if x.ndim == 1 else G.reshape(out, shape=x.shape)
        return rule(g, ans, x, axis % x.ndim, **params)
    return vjp


def _cumsum_rule(g, ans, x, axis, exclusive=False, reverse=False):
    return G.cumsum(g, axis=axis, exclusive=exclusive, reverse=not reverse)


def _cumprod_rule(g, ans, x, axis, exclusive=False, reverse=False):
    # d out[j] / d x[i] = (product of the x before i) (product of x[i+1..j]): the first factor is
    # the exclusive cumprod, the sum over j a linear scan; exact with zeros, no division
    before = G.cumprod(x, axis=axis, exclusive=True, reverse=reverse)
    b = _shifted(g, axis, toward_start=not reverse) if exclusive else g
    return before * G.linear_recurrence(b, _shifted(x, axis, toward_start=not reverse), axis=axis, reverse=not reverse)


_SCAN_PARAMS = {"axis": None, "exclusive": False, "reverse": False}
register(Op("cumsum", lambda xp, x, axis=None, exclusive=False, reverse=False:
            _scan(xp, x, axis, reverse, exclusive, lambda v, ax: xp.cumulative_sum(v, axis=ax), 0),
            _scan_shape, (_scan_vjp(_cumsum_rule),), params=dict(_SCAN_PARAMS), grows=True,
            doc="cumulative sum along axis (the flattened array by default; TensorFlow's spelling: axis 0)"))
register(Op("cumprod", lambda xp, x, axis=None, exclusive=False, reverse=False:
            _scan(xp, x, axis, reverse, exclusive, lambda v, ax: xp.cumulative_prod(v, axis=ax), 1),
            _scan_shape, (_scan_vjp(_cumprod_rule),), params=dict(_SCAN_PARAMS), grows=True,
            doc="cumulative product along axis; its gradient is exact where x holds zeros"))


def _cumlogsumexp_rule(g, ans, x, axis, reverse=False):
    # d out[j] / d x[i] = exp(x[i] - out[j]) = exp(x[i] - out[i]) * prod of exp(out[k-1] - out[k]):
    # every factor is at most 1, so nothing overflows
    inner, outer = (None, -1, None), (1, None, None)
    if reverse:
        inner, outer = outer, inner
    ratio = G.exp(G.index(ans, index=_along(axis, inner)) - G.index(ans, index=_along(axis, outer)))
    a = G.scatter(ratio, shape=x.shape, index=_along(axis, inner))
    return G.exp(x - ans) * G.linear_recurrence(g, a, axis=axis, reverse=not reverse)


def _logaddexp_accumulate(x, axis):
    import numpy
    return numpy.logaddexp.accumulate(x, axis=axis)


register(Op("cumlogsumexp", lambda xp, x, axis=0, reverse=False:
            _scan(xp, x, axis, reverse, False, lambda v, ax: on_host(xp, lambda u: _logaddexp_accumulate(u, ax), v), 0),
            _scan_shape, (_scan_vjp(_cumlogsumexp_rule),), params={"axis": 0, "reverse": False},
            doc="log(cumsum(exp(x))) along axis (0 by default, as lax and TensorFlow), without overflow",
            nonstandard="NumPy's logaddexp.accumulate"))


def _cumulative_extreme(xp, x, axis, reverse, kind):
    import numpy
    ufunc = numpy.maximum if kind == "max" else numpy.minimum
    return _scan(xp, x, axis, reverse, False, lambda v, ax: on_host(xp, lambda u: ufunc.accumulate(u, axis=ax), v), 0)


def _cumulative_arg(xp, x, axis=0, reverse=False, kind="max", ties="first"):
    """The index of the element each running extreme comes from: on ties, the first that the
    scan reaches (ties="last": the latest, as torch.cummax's indices); a NaN takes over from
    where it stands."""
    if ties not in ("first", "last"):
        raise ShapeError(f"ties must be 'first' or 'last', not {ties!r}")
    import numpy

    def arg_indices(v):
        v = numpy.moveaxis(v, axis, -1) if axis is not None else v.reshape(-1)
        if reverse:
            v = v[..., ::-1]
        better = {("max", "first"): numpy.greater, ("min", "first"): numpy.less,
                  ("max", "last"): numpy.greater_equal, ("min", "last"): numpy.less_equal}[kind, ties]
        running = (numpy.maximum if kind == "max" else numpy.minimum).accumulate(v, axis=-1)
        new = numpy.ones(v.shape, dtype=bool)
        new[..., 1:] = better(v[..., 1:], running[..., :-1]) | (numpy.isnan(v[..., 1:]) & ~numpy.isnan(running[..., :-1]))
        n = v.shape[-1]
        index = numpy.maximum.accumulate(numpy.where(new, numpy.arange(n), 0), axis=-1)
        if reverse:
            index = (n - 1 - index)[..., ::-1]
        return (numpy.moveaxis(index, -1, axis) if axis is not None else index).astype(v.dtype)
    return on_host(xp, arg_indices, x)


def _cumulative_extreme_rule(kind):
    def rule(g, ans, x, axis, reverse=False, ties="first"):
        arg = G.cumargmax if kind == "max" else G.cumargmin
        index = arg(x, axis=axis, reverse=reverse, ties=ties)
        return G.scatter_along(g, index, axis=axis, size=x.shape[axis])
    return rule


for _kind in ("max", "min"):
    register(Op(f"cum{_kind}", (lambda k: lambda xp, x, axis=0, reverse=False, ties="first":
                                _cumulative_extreme(xp, x, axis, reverse, k))(_kind),
                _scan_shape, (_scan_vjp(_cumulative_extreme_rule(_kind)),),
                params={"axis": 0, "reverse": False, "ties": "first"}, finite_closed=True,
                doc=f"the running {_kind}imum along axis (0 by default, as lax); on ties the gradient goes to the "
                    "first element the scan reaches (ties='last': the latest, as PyTorch's)",
                nonstandard="NumPy's ufunc.accumulate"))
    register(Op(f"cumarg{_kind}", (lambda k: lambda xp, x, axis=0, reverse=False, ties="first":
                                   _cumulative_arg(xp, x, axis, reverse, k, ties))(_kind),
                lambda shape, axis=0, reverse=False, ties="first": _scan_shape(shape, axis), NOT_DIFFERENTIABLE,
                params={"axis": 0, "reverse": False, "ties": "first"},
                doc=f"the index each running {_kind}imum of cum{_kind} comes from (first reached on ties; "
                    "ties='last': the latest)", nonstandard="NumPy's ufunc.accumulate"))
    # PyTorch's torch.cummax(x, dim): the named tuple (values, indices), the latest index on ties
    register(Op(f"cum{_kind}_values_indices", None, None, None, params={"axis": REQUIRED},
                parts=(lambda k: lambda shape, axis: [(f"cum{k}", {"axis": axis, "ties": "last"}),
                                                      (f"cumarg{k}", {"axis": axis, "ties": "last"})])(_kind),
                fields=("values", "indices"), public=False,
                doc=f"PyTorch's cum{_kind}(x, dim): (values, indices), the latest index on ties, where the "
                    "gradient goes"))


# --------------------------------------------------------------------------- permutations: sort, partition

def _argsort(xp, x, axis=-1, kind=None, descending=False, stable=None):
    if axis is None:
        x, axis = xp.reshape(x, (-1,)), 0
    # descending: a stable sort of -x, so that tied elements keep their order (as PyTorch's
    # and JAX's descending sorts)
    return xp.astype(xp.argsort(-x if descending else x, axis=axis, stable=True), x.dtype)


def _sorted(xp, x, axis=-1, kind=None, descending=False, stable=None):
    flat = xp.reshape(x, (-1,)) if axis is None else x
    axis = 0 if axis is None else axis
    return -xp.sort(-flat, axis=axis) if descending else xp.sort(flat, axis=axis)


_SORT_PARAMS = {"axis": -1, "kind": None, "descending": False, "stable": None}


def _sort_shape(shape, axis=-1, kind=None, **_):
    if kind not in (None, "quicksort", "mergesort", "heapsort", "stable"):
        raise ShapeError(f"sort kind {kind!r} is not one of NumPy's: 'quicksort', 'mergesort', 'heapsort', 'stable'")
    return _scan_shape(shape, axis)


def _gather_along_shape(v, indices, axis):
    axis = _one_axis(v, axis)
    if len(indices) != len(v) or any(a != b for i, (a, b) in enumerate(zip(v, indices)) if i != axis):
        raise ShapeError(f"indices of shape {indices} do not match values of shape {v} off axis {axis}")
    return indices


def _scatter_along_shape(v, indices, axis, size):
    axis = _one_axis(v, axis)
    if v != indices:
        raise ShapeError(f"indices of shape {indices} do not match values of shape {v}")
    return v[:axis] + (size,) + v[axis + 1:]


def _gather_along(xp, v, indices, axis):
    return xp.take_along_axis(v, xp.astype(indices, xp.int64), axis=axis)


def _scatter_along(xp, v, indices, axis, size):
    """Zeros with `size` along axis, v[..., j] added at indices[..., j] (repeated indices add)."""
    moved = xp.moveaxis(v, axis, -1)
    index = xp.astype(xp.moveaxis(indices, axis, -1), xp.int64)
    lead = moved.shape[:-1]
    rows = math.prod(lead)
    rows_start = xp.reshape(xp.arange(rows, dtype=xp.int64), (-1, 1)) * size
    flat = xp.reshape(rows_start + xp.reshape(index, (rows, -1)), (-1,))
    out = xp.bincount(flat, weights=moved.reshape(-1), minlength=rows * size)
    return xp.moveaxis(xp.astype(xp.reshape(out, lead + (size,)), v.dtype), -1, axis)


register(Op("gather_along", _gather_along, _gather_along_shape,
            (lambda g, ans, v, indices, axis: G.scatter_along(g, indices, axis=axis, size=v.shape[axis % v.ndim]),
             NO_GRADIENT),
            args=("v", "indices"), params={"axis": REQUIRED},
            doc="gather_along(v, indices, axis): v's elements at the (constant) indices along axis"))
register(Op("scatter_along", _scatter_along, _scatter_along_shape,
            (lambda g, ans, v, indices, axis, size: G.gather_along(g, indices, axis=axis), NO_GRADIENT),
            args=("v", "indices"), params={"axis": REQUIRED, "size": REQUIRED},
            doc="scatter_along(v, indices, axis, size): zeros of length size along axis with v added "
                "at the indices (the gradient of gather_along)", nonstandard="NumPy's bincount"))
register(Op("argsort", _argsort, _sort_shape, NOT_DIFFERENTIABLE, params=dict(_SORT_PARAMS),
            doc="the indices that sort x along axis (stable: ties keep their order; descending=True: "
                "largest first, ties still in their order)"))


def _sort_vjp(g, ans, x, axis=-1, kind=None, descending=False, stable=None):
    if axis is None:
        flat = x if x.ndim == 1 else G.reshape(x, shape=(math.prod(x.shape),))
        out = _sort_vjp(g, ans, flat, 0, descending=descending)
        return out if x.ndim == 1 else G.reshape(out, shape=x.shape)
    axis %= x.ndim
    return G.scatter_along(g, G.argsort(x, axis=axis, descending=descending), axis=axis, size=x.shape[axis])


register(Op("sort", _sorted, _sort_shape, (_sort_vjp,), params=dict(_SORT_PARAMS), finite_closed=True,
            doc="x sorted along axis (descending=True: largest first); the gradient follows the permutation "
                "(stable: tied elements take the gradients of their sorted positions in their original order)"))
def _searchsorted_shape(a, v, side="left", right=None):
    if len(a) != 1:
        raise ShapeError(f"searchsorted needs a 1-D sorted array, got shape {a}")
    if side not in ("left", "right"):
        raise ShapeError(f"side must be 'left' or 'right', not {side!r}")
    return v


def _searchsorted(xp, a, v, side="left", right=None):
    side = "right" if right else side  # PyTorch's right=True
    return xp.astype(xp.searchsorted(a, v, side=side), v.dtype)


register(Op("searchsorted", _searchsorted, _searchsorted_shape, (NO_GRADIENT, NO_GRADIENT), args=("a", "v"),
            params={"side": "left", "right": None},
            doc="np.searchsorted(a, v, side), torch.searchsorted(a, v, right=): for each v, the index where it "
                "would go in the sorted 1-D a (side 'left': before equal elements, 'right' or right=True: after)"))

# PyTorch's torch.sort(x, dim=-1, descending=False): the named tuple (values, indices)
register(Op("sort_values_indices", None, None, None, params={"axis": -1, "descending": False, "stable": None},
            parts=lambda shape, **p: [("sort", p), ("argsort", p)], fields=("values", "indices"), public=False,
            doc="PyTorch's sort: (values, indices), stable (ties keep their order, also descending)"))


def _partition_shape(shape, kth, axis=-1):
    axis = _one_axis(shape, axis)
    for k in (kth,) if isinstance(kth, int) else kth:
        if not isinstance(k, int) or not -shape[axis] <= k < shape[axis]:
            raise ShapeError(f"kth {k} is out of range for an axis of length {shape[axis]}")
    return shape


def _argpartition(xp, x, kth, axis=-1):
    kth = list(kth) if isinstance(kth, tuple) else kth
    return xp.astype(xp.argpartition(x, kth, axis=axis), x.dtype)


register(Op("argpartition", _argpartition, _partition_shape, NOT_DIFFERENTIABLE,
            params={"kth": REQUIRED, "axis": -1}, doc="the indices that partition x around kth",
            nonstandard="NumPy's argpartition"))
register(Op("partition", lambda xp, x, kth, axis=-1: _gather_along(xp, x, _argpartition(xp, x, kth, axis), axis),
            _partition_shape,
            (lambda g, ans, x, kth, axis=-1: G.scatter_along(g, G.argpartition(x, kth=kth, axis=axis), axis=axis,
                                                             size=x.shape[axis % x.ndim]),),
            params={"kth": REQUIRED, "axis": -1}, finite_closed=True,
            doc="x rearranged so that its kth element is in sorted position, smaller ones before",
            nonstandard="NumPy's argpartition"))


# --------------------------------------------------------------------------- moments: var, std, average

def _resolved_ddof(ddof, unbiased, default=0):
    """ddof (NumPy), correction (PyTorch, read as ddof) or unbiased (PyTorch's older spelling)."""
    if unbiased is not None:
        if ddof is not None:
            raise ShapeError("give ddof (correction) or unbiased, not both")
        return int(bool(unbiased))
    if ddof is None:
        return default
    if not isinstance(ddof, (int, float)):
        raise ShapeError(f"ddof must be one number, not {ddof}")
    return ddof


def _divisor(shape, axis, ddof, unbiased, default=0) -> float:
    """n - ddof, refused where it is not positive (NumPy would divide by 0: inf or NaN)."""
    ddof = _resolved_ddof(ddof, unbiased, default)
    n = _count(shape, axis)
    if n - ddof <= 0:
        raise ShapeError(f"ddof={ddof:g} over {n} element{'s' * (n != 1)} leaves no degrees of freedom "
                         f"(n - ddof = {n - ddof:g}): the result would be inf or NaN")
    return float(n - ddof)


def _nonzero(a):
    """a, with 1 where it is 0: the denominator of a rule whose numerator is 0 there too."""
    return G.where(G.equal(a, 0.0), 1.0, a)


def _var_forward(xp, x, axis=None, ddof=None, keepdims=False, unbiased=None, default=0):
    d = _divisor(x.shape, axis, ddof, unbiased, default)
    return xp.var(x, axis=axis, correction=_count(x.shape, axis) - d, keepdims=keepdims)


def _var_vjp(g, ans, x, axis=None, ddof=None, keepdims=False, unbiased=None, default=0):
    centred = x - G.mean(x, axis=axis, keepdims=True)
    return _keep(g, x.shape, axis, keepdims) * centred * (2.0 / _divisor(x.shape, axis, ddof, unbiased, default))


def _std_vjp(g, ans, x, axis=None, ddof=None, keepdims=False, unbiased=None, default=0):
    # sqrt(var) has no derivative where all values are equal (a cone): 0 there, a subgradient
    centred = x - G.mean(x, axis=axis, keepdims=True)
    scale = 1.0 / _divisor(x.shape, axis, ddof, unbiased, default)
    return _keep(g, x.shape, axis, keepdims) * centred * scale / _nonzero(_keep(ans, x.shape, axis, keepdims))


def _moment_shape(shape, axis=None, ddof=None, keepdims=False, unbiased=None, default=0):
    _divisor(shape, axis, ddof, unbiased, default)
    return reduced_shape(shape, axis, keepdims)


_MOMENT_PARAMS = {"axis": None, "ddof": None, "keepdims": False, "unbiased": None}
register(Op("var", _var_forward, _moment_shape, (_var_vjp,), params=dict(_MOMENT_PARAMS),
            doc="the variance, sum((x - mean)^2) / (n - ddof); ddof=0 by default (torch.var: 1)"))
register(Op("std", lambda xp, *a, **p: xp.sqrt(_var_forward(xp, *a, **p)), _moment_shape, (_std_vjp,),
            params=dict(_MOMENT_PARAMS),
            doc="the standard deviation, sqrt(var); its gradient is 0 where it is 0 (all values equal)"))


def _moment_and_mean(name):
    """torch.std_mean / var_mean: (std or var, mean), unbiased (ddof=1) by default, as PyTorch."""
    def parts(shape, axis=None, ddof=None, keepdims=False, unbiased=None):
        moment = {"axis": axis, "ddof": _resolved_ddof(ddof, unbiased, 1), "keepdims": keepdims}
        return [(name, moment), ("mean", {"axis": axis, "keepdims": keepdims})]
    return parts


for _name in ("std", "var"):
    register(Op(f"{_name}_mean", None, None, None, params=dict(_MOMENT_PARAMS), parts=_moment_and_mean(_name),
                doc=f"PyTorch's {_name}_mean: the tuple ({_name}, mean), ddof=1 unless correction= says otherwise"))


_reduction("average", lambda xp, x, axis=None, keepdims=False: xp.mean(x, axis=axis, keepdims=keepdims),
           lambda g, ans, x, axis=None, keepdims=False: _spread(g, x, axis, keepdims) / float(_count(x.shape, axis)),
           shape=_nonempty_reduction_shape,
           doc="the mean, or with weights= the weighted mean")


def _weights_shape(x_shape, w_shape, axis):
    """How weights line up with x: their own shape if it is x's, else 1-D along the one axis."""
    if tuple(w_shape) == tuple(x_shape):
        return tuple(w_shape)
    if isinstance(axis, int) and len(w_shape) == 1 and x_shape and w_shape[0] == x_shape[axis % len(x_shape)]:
        return tuple(w_shape[0] if i == axis % len(x_shape) else 1 for i in range(len(x_shape)))
    raise ShapeError(f"weights of shape {tuple(w_shape)} must have x's shape {tuple(x_shape)}, "
                     "or be 1-D along the one axis given")


def _weighted_average(xp, x, w, axis=None, keepdims=False):
    wb = xp.broadcast_to(xp.reshape(w, _weights_shape(x.shape, w.shape, axis)), x.shape)
    total = xp.sum(wb, axis=axis, keepdims=keepdims)
    if bool(xp.any(total == 0)):
        raise DataError("the weights sum to zero: the average cannot be normalized (NumPy refuses it)")
    return xp.sum(x * wb, axis=axis, keepdims=keepdims) / total


def _weighted_average_parts(x, w, axis, keepdims, g, ans):
    aligned = _weights_shape(x.shape, w.shape, axis)
    wb = w if aligned == w.shape else G.reshape(w, shape=aligned)
    total = G.sum(G.broadcast_to(wb, shape=x.shape), axis=axis, keepdims=True)
    return wb, total, _keep(g, x.shape, axis, keepdims), _keep(ans, x.shape, axis, keepdims)


def _weighted_average_vjp_w(g, ans, x, w, axis=None, keepdims=False):
    wb, total, gk, avg = _weighted_average_parts(x, w, axis, keepdims, g, ans)
    ct = gk * (x - avg) / total
    if wb.shape == w.shape:
        return ct
    return G.reshape(G.sum(ct, axis=tuple(i for i in range(x.ndim) if i != axis % x.ndim)), shape=w.shape)


register(Op("weighted_average", _weighted_average,
            lambda x, w, axis=None, keepdims=False: (_weights_shape(x, w, axis), reduced_shape(x, axis, keepdims))[1],
            (lambda g, ans, x, w, axis=None, keepdims=False: (lambda p: p[2] * p[0] / p[1])(
                _weighted_average_parts(x, w, axis, keepdims, g, ans)),
             _weighted_average_vjp_w),
            args=("x", "weights"), params={"axis": None, "keepdims": False},
            doc="sum(x * weights) / sum(weights) over axis (what average(x, weights=w) reads as)"))


# --------------------------------------------------------------------------- order statistics: median, quantile

_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _quantile_plan(shape, q, axis, method):
    """Static: the axes kept, the length n of the sorted axis, and per quantile the two sorted
    positions it reads and the weight of the upper one (NumPy's methods)."""
    axes = normalize_axes(axis, len(shape))
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    n = math.prod(shape[a] for a in axes)
    if n == 0:
        raise ShapeError("the quantile of no elements is undefined")
    if method not in _METHODS and not (method == "median" and q == 0.5):  # "median": median's own
        raise ShapeError(f"method {method!r} is not one of {', '.join(_METHODS)}")
    picks = []
    for value in (q if isinstance(q, tuple) else (q,)):
        if not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise ShapeError(f"q must be between 0 and 1 (percentiles between 0 and 100), got {value}")
        position = value * (n - 1)
        lo = math.floor(position)
        hi, t = min(lo + 1, n - 1), position - lo
        if method == "median":
            lo, hi = (n - 1) // 2, n // 2
            t = 0.5 if lo != hi else 0.0
        elif method == "lower":
            hi, t = lo, 0.0
        elif method == "higher":
            lo = hi = math.ceil(position)
            t = 0.0
        elif method == "nearest":
            lo = hi = round(position)  # half to even, as NumPy
            t = 0.0
        elif method == "midpoint":
            t = 0.5 if t else 0.0
        picks.append((lo, hi, t))
    return axes, kept, n, picks


def _sorted_rows(xp, x, kept, axes, n):
    lead = tuple(x.shape[i] for i in kept)
    return xp.sort(xp.reshape(xp.permute_dims(x, kept + axes), lead + (n,)), axis=-1)  # NaN last


def _quantile_forward(xp, x, q, axis=None, method="linear", keepdims=False):
    axes, kept, n, picks = _quantile_plan(x.shape, q, axis, method)
    ordered = _sorted_rows(xp, x, kept, axes, n)
    values = []
    for lo, hi, t in picks:
        a, b = ordered[..., lo], ordered[..., hi]
        if method == "median":
            values.append((a + b) / 2 if lo != hi else a)
        elif t == 0:
            values.append(a)
        else:  # NumPy's lerp: from the nearer end
            values.append(a + (b - a) * t if t < 0.5 else b - (b - a) * (1 - t))
    out = xp.stack(values) if isinstance(q, tuple) else values[0]
    out = xp.astype(xp.where(xp.isnan(ordered[..., -1]), math.nan, out), x.dtype)  # a NaN makes the slice NaN
    if keepdims:
        out = xp.reshape(out, out.shape[:out.ndim - len(kept)] + reduced_shape(x.shape, axes, True))
    return out


def _moved(x, kept, axes, n):
    """x with the reduced axes moved last and merged into one of length n: shape lead + (n,)."""
    lead = tuple(x.shape[i] for i in kept)
    perm = kept + axes
    moved = _permuted(x, perm)
    return moved if moved.shape == lead + (n,) else G.reshape(moved, shape=lead + (n,))


def _through_sort(on_sorted, x, kept, axes, n):
    """A cotangent given on the sorted values (lead + (n,)) taken back to x through the sorting
    permutation; tied elements share it evenly (so quantile(x, 1) splits as max does)."""
    moved = _moved(x, kept, axes, n)
    at = len(kept)
    out = G.tie_average(G.scatter_along(on_sorted, G.argsort(moved, axis=at), axis=at, size=n), moved, axis=at)
    perm = kept + axes
    permuted = tuple(x.shape[i] for i in perm)
    out = out if out.shape == permuted else G.reshape(out, shape=permuted)
    return _permuted(out, inverse_permutation(perm))


def _quantile_vjp(g, ans, x, q, axis=None, method="linear", keepdims=False):
    axes, kept, n, picks = _quantile_plan(x.shape, q, axis, method)
    lead = tuple(x.shape[i] for i in kept)
    on_sorted = None
    for k, (lo, hi, t) in enumerate(picks):
        gk = G.index(g, index=(k,)) if isinstance(q, tuple) else g
        gk = gk if gk.shape == lead else G.reshape(gk, shape=lead)
        weights = {lo: 1.0 - t}
        weights[hi] = weights.get(hi, 0.0) + t
        for position, weight in weights.items():
            if weight:
                term = G.scatter(gk * weight, shape=lead + (n,), index=(Ellipsis, position))
                on_sorted = term if on_sorted is None else on_sorted + term
    return _through_sort(on_sorted, x, kept, axes, n)


def _tie_average(xp, w, x, axis):
    """For each element, the mean of w over the elements of its group along axis whose x is equal."""
    import numpy

    def tie_average(w, x):
        n = x.shape[axis]
        xm = numpy.moveaxis(x, axis, -1).reshape(-1, n)
        wm = numpy.moveaxis(w, axis, -1).reshape(-1, n)
        order = numpy.argsort(xm, axis=-1, kind="stable")
        xs = numpy.take_along_axis(xm, order, axis=-1)
        new = numpy.ones(xs.shape, dtype=bool)
        new[:, 1:] = xs[:, 1:] != xs[:, :-1]  # NaN != NaN: each NaN a group of its own
        run = numpy.cumsum(new.reshape(-1)) - 1
        sums = numpy.bincount(run, numpy.take_along_axis(wm, order, axis=-1).reshape(-1))
        means = (sums / numpy.bincount(run))[run].reshape(xs.shape)
        out = numpy.empty_like(means)
        numpy.put_along_axis(out, order, means, axis=-1)
        moved_shape = numpy.moveaxis(x, axis, -1).shape
        return numpy.moveaxis(out.reshape(moved_shape), -1, axis).astype(w.dtype)
    if w.size == 0:
        return w
    return on_host(xp, tie_average, w, x)


register(Op("tie_average", _tie_average, lambda w, x, axis: (_one_axis(w, axis), w)[1],
            (lambda g, ans, w, x, axis: G.tie_average(g, x, axis=axis), NO_GRADIENT),
            args=("w", "x"), params={"axis": REQUIRED}, public=False,
            doc="w averaged over the elements with equal x along axis (the even split of a gradient at ties)",
            nonstandard="NumPy's bincount and ufunc.accumulate"))


def _quantile_shape(shape, q, axis=None, method="linear", keepdims=False):
    _quantile_plan(shape, q, axis, method)
    return ((len(q),) if isinstance(q, tuple) else ()) + reduced_shape(shape, axis, keepdims)


def _percent(q):
    return tuple(v / 100 for v in q) if isinstance(q, tuple) else q / 100 if isinstance(q, (int, float)) else q


def _in_percent(forward, vjp):
    """(forward, shape, vjp) of a quantile op taking q in percent (percentile, nanpercentile)."""
    return (lambda xp, x, q, **p: forward(xp, x, _percent(q), **p),
            lambda shape, q, **p: _quantile_shape(shape, _percent(q), **p),
            (lambda g, ans, x, q, **p: vjp(g, ans, x, _percent(q), **p),))


def _at_half(forward, vjp, method):
    """(forward, shape, vjp) of a quantile op at q = 0.5 by `method` (median, nanmedian)."""
    return (lambda xp, x, axis=None, keepdims=False: forward(xp, x, 0.5, axis, method, keepdims),
            lambda shape, axis=None, keepdims=False: _quantile_shape(shape, 0.5, axis, method, keepdims),
            (lambda g, ans, x, axis=None, keepdims=False: vjp(g, ans, x, 0.5, axis, method, keepdims),))


_QUANTILE_PARAMS = {"q": REQUIRED, "axis": None, "method": "linear", "keepdims": False}
register(Op("quantile", _quantile_forward, _quantile_shape, (_quantile_vjp,), params=dict(_QUANTILE_PARAMS),
            finite_closed=True,
            doc="quantile(x, q, axis, method): NumPy's methods linear (default), lower, higher, nearest, "
                "midpoint; the gradient goes to the (one or two) sorted elements it reads"))
register(Op("percentile", *_in_percent(_quantile_forward, _quantile_vjp), params=dict(_QUANTILE_PARAMS),
            finite_closed=True, doc="quantile with q in percent"))
register(Op("median", *_at_half(_quantile_forward, _quantile_vjp, "median"),
            params={"axis": None, "keepdims": False}, finite_closed=True,
            doc="the middle value, or the mean of the two middle values; the gradient is split between them"))


def _nan_quantile_weights(xp, x, q, axis=None, method="linear"):
    """The weights on the sorted values (lead + (n,), NaN last) that make np.nanquantile: where
    they fall depends on how many values are not NaN, so they are computed, not planned."""
    axes, kept, n, _ = _quantile_plan(x.shape, q, axis, method)
    ordered = _sorted_rows(xp, x, kept, axes, n)
    m = xp.count_nonzero(~xp.isnan(ordered), axis=-1, keepdims=True)
    top = xp.maximum(m - 1, 0)
    stacked = []
    for value in (q if isinstance(q, tuple) else (q,)):
        position = value * top
        lo = xp.floor(position)
        t = position - lo
        hi = xp.minimum(lo + 1, top)
        if method == "lower":
            hi, t = lo, 0 * t
        elif method == "higher":
            lo = hi = xp.ceil(position)
            t = 0 * t
        elif method == "nearest":
            lo = hi = xp.round(position)  # half to even, as NumPy
            t = 0 * t
        elif method == "midpoint":
            t = xp.where(t > 0, 0.5, 0.0)
        weights = xp.zeros(ordered.shape, dtype=x.dtype)
        xp.put_along_axis(weights, xp.astype(lo, xp.int64), xp.astype(1 - t, x.dtype), axis=-1)
        upper = xp.take_along_axis(weights, xp.astype(hi, xp.int64), axis=-1) + t
        xp.put_along_axis(weights, xp.astype(hi, xp.int64), xp.astype(upper, x.dtype), axis=-1)
        stacked.append(xp.where(m > 0, weights, 0))
    return xp.stack(stacked) if isinstance(q, tuple) else stacked[0]


def _nanquantile_forward(xp, x, q, axis=None, method="linear", keepdims=False):
    axes, kept, n, _ = _quantile_plan(x.shape, q, axis, method)
    ordered = _sorted_rows(xp, x, kept, axes, n)
    weights = _nan_quantile_weights(xp, x, q, axis, method)
    out = xp.sum(xp.where(weights == 0, 0, weights * ordered), axis=-1)
    out = xp.astype(xp.where(xp.isnan(ordered[..., 0]), math.nan, out), x.dtype)  # every value NaN
    if keepdims:
        out = xp.reshape(out, out.shape[:out.ndim - len(kept)] + reduced_shape(x.shape, axes, True))
    return out


def _nanquantile_vjp(g, ans, x, q, axis=None, method="linear", keepdims=False):
    axes, kept, n, _ = _quantile_plan(x.shape, q, axis, method)
    weights = G.nan_quantile_weights(x, q=q, axis=axis, method=method)
    g = g if g.shape == weights.shape[:-1] else G.reshape(g, shape=weights.shape[:-1])
    on_sorted = G.reshape(g, shape=g.shape + (1,)) * weights
    if isinstance(q, tuple):
        on_sorted = G.sum(on_sorted, axis=0)
    return _through_sort(on_sorted, x, kept, axes, n)


register(Op("nan_quantile_weights", _nan_quantile_weights,
            lambda shape, q, axis=None, method="linear": (
                ((len(q),) if isinstance(q, tuple) else ()) + tuple(shape[i] for i in _quantile_plan(shape, q, axis, method)[1])
                + (_quantile_plan(shape, q, axis, method)[2],)),
            NOT_DIFFERENTIABLE, params={"q": REQUIRED, "axis": None, "method": "linear"}, public=False,
            doc="the weights of nanquantile on the sorted values"))
register(Op("nanquantile", _nanquantile_forward, _quantile_shape, (_nanquantile_vjp,), params=dict(_QUANTILE_PARAMS),
            finite_closed=True, doc="quantile of the values that are not NaN (NaN where all are)"))
register(Op("nanpercentile", *_in_percent(_nanquantile_forward, _nanquantile_vjp), params=dict(_QUANTILE_PARAMS),
            finite_closed=True, doc="nanquantile with q in percent"))
register(Op("nanmedian", *_at_half(_nanquantile_forward, _nanquantile_vjp, "linear"),
            params={"axis": None, "keepdims": False}, finite_closed=True,
            doc="the median of the values that are not NaN"))
