"""The op table, continued (after gradcli/ops/reduce.py): norms, differences and integrals,
NaN-ignoring reductions, trace and cumulative integrals, covariance and correlation, reductions
over segments (constant ids), and the tuple-valued `top_k`, `kthvalue`, `aminmax`."""
from __future__ import annotations

import math

from gradcli.errors import ShapeError
from gradcli.ops.trace import G
from gradcli.ops.table import NOT_DIFFERENTIABLE, OPS, REQUIRED, Op, register
from gradcli.ops.core import _extreme_vjp, _reduction
from gradcli.ops.shapes import (
    FULL, _along, _keep, _nonempty_reduction_shape, _permuted, _spread, inverse_permutation, is_numpy, normalize_axes,
    on_host, reduced_shape)
from gradcli.ops.reduce import _gather_along, _nonzero, _one_axis, _single_numbers


# --------------------------------------------------------------------------- norms

_INF = math.inf


def _norm_plan(shape, ord, axis, kind):
    """("vector", axes) or ("matrix", (rows, columns)), as NumPy's linalg.norm (kind "norm"),
    vector_norm or matrix_norm read their arguments; refuses what they refuse."""
    if kind == "norm":
        if axis is None:
            if ord is None:
                kind, axis = "vector", None
            elif len(shape) in (1, 2):
                kind, axis = ("vector", 0) if len(shape) == 1 else ("matrix", (0, 1))
            else:
                raise ShapeError(f"norm with ord of a rank-{len(shape)} array needs axis (one axis, or two)")
        else:
            kind = "vector" if isinstance(axis, int) else "matrix"
    if kind == "vector":
        axes = normalize_axes(axis, len(shape))
        if isinstance(ord, str) or (ord is not None and not isinstance(ord, (int, float))):
            raise ShapeError(f"ord {ord!r} is not a vector norm (a number, inf or -inf)")
        if ord in (_INF, -_INF) and any(shape[a] == 0 for a in axes):
            raise ShapeError("the max or min norm of no elements is undefined")
        return "vector", axes
    pair = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(pair) != 2 or len(shape) < 2:
        raise ShapeError(f"a matrix norm needs two axes of an array of rank 2 or more, got axis {axis}")
    normalize_axes(pair, len(shape))  # in range, and different
    rows, columns = (a % len(shape) for a in pair)
    if ord in (2, -2, "nuc"):
        return "singular", (rows, columns)
    if ord not in (None, "fro", 1, -1, _INF, -_INF):
        raise ShapeError(f"ord {ord!r} is not a matrix norm (fro, nuc, 1, -1, 2, -2, inf, -inf)")
    return "matrix", (rows, columns)


def _norm_forward(xp, x, ord, axis, keepdims, kind):
    plan, axes = _norm_plan(x.shape, ord, axis, kind)
    a = xp.abs(x)
    if plan == "vector":
        if ord in (None, 2):
            return xp.sqrt(xp.sum(x * x, axis=axes, keepdims=keepdims))
        if ord in (_INF, -_INF):
            return (xp.max if ord > 0 else xp.min)(a, axis=axes, keepdims=keepdims)
        if ord == 0:
            return xp.astype(xp.count_nonzero(x != 0, axis=axes, keepdims=keepdims), x.dtype)
        if ord == 1:
            return xp.sum(a, axis=axes, keepdims=keepdims)
        return xp.sum(a ** ord, axis=axes, keepdims=keepdims) ** (1.0 / ord)
    rows, columns = axes
    if plan == "singular":
        s = xp.linalg.svdvals(xp.moveaxis(x, (rows, columns), (-2, -1)))
        out = (xp.sum if ord == "nuc" else xp.max if ord == 2 else xp.min)(s, axis=-1)
        return xp.reshape(out, reduced_shape(x.shape, axes, keepdims))
    if ord in (None, "fro"):
        out = xp.sqrt(xp.sum(x * x, axis=axes, keepdims=True))
    else:
        summed, extreme = (rows, columns) if ord in (1, -1) else (columns, rows)
        out = (xp.max if ord > 0 else xp.min)(xp.sum(a, axis=summed, keepdims=True), axis=extreme, keepdims=True)
    return out if keepdims else xp.squeeze(out, axis=axes)


def _norm_vjp(g, ans, x, ord, axis, keepdims, kind, right_at_zero=False):
    plan, axes = _norm_plan(x.shape, ord, axis, kind)
    if right_at_zero:
        return _jax_norm_vjp(g, ans, x, ord, axes, keepdims, plan)
    if plan == "singular":
        return _singular_norm_vjp(g, x, ord, axes)
    gk, norm = _keep(g, x.shape, axes, keepdims), _keep(ans, x.shape, axes, keepdims)
    return _subgradient_norm_vjp(g, gk, x, norm, ord, axes, keepdims, plan, G)


def _jax_norm_vjp(g, ans, x, ord, axes, keepdims, plan):
    """jnp.linalg.norm's gradient as JAX's formulas give it where the norm has none: abs' slope is
    1 at 0; sqrt(sum(x^2)) (ord None, 2 of a vector, fro) and sum(|x|^p)^(1/p) are differentiated
    as written, so a zero norm's slope is NaN or inf there; the largest-value norms (inf, and 1,
    inf, 2 of a matrix) are max(0, m), whose tie with 0 at a zero norm takes half the gradient."""
    gk, norm = _keep(g, x.shape, axes, keepdims), _keep(ans, x.shape, axes, keepdims)
    if plan == "singular":
        grad = _singular_norm_vjp(g, x, ord, axes)
    elif ord in (None, 2, "fro"):
        return gk * x / norm
    elif plan == "vector" and ord not in (0, 1, _INF, -_INF):
        magnitude = G.abs(x)
        power = G.sum(magnitude ** float(ord), axis=axes, keepdims=True)
        return gk * _RightAtZero.sign(x) * power ** (1.0 / ord - 1.0) * magnitude ** float(ord - 1)
    else:
        grad = _subgradient_norm_vjp(g, gk, x, norm, ord, axes, keepdims, plan, _RightAtZero)
    if ord in (_INF, 2) or plan == "matrix" and ord == 1:
        return grad * (1.0 - 0.5 * G.equal(norm, 0.0))
    return grad


def _subgradient_norm_vjp(g, gk, x, norm, ord, axes, keepdims, plan, B):
    """The gradient where the norm has one; where it has none, a subgradient (0 at a zero norm,
    ties sharing the gradient as max and min). B: the graph builder (_RightAtZero for JAX's |x|)."""
    if ord in (None, 2, "fro"):
        return gk * x / _nonzero(norm)  # 0 at 0, where the norm has no gradient: a subgradient
    if plan == "vector":
        if ord in (_INF, -_INF):  # ties share the gradient, as max and min
            tied = B.equal(B.abs(x), norm)
            return gk * B.sign(x) * tied / B.sum(tied, axis=axes, keepdims=True)
        if ord == 0:
            return _spread(g, x, axes, keepdims) * 0.0
        if ord == 1:
            return gk * B.sign(x)
        if ord > 1:  # |x|^(ord-1) is 0 where x is: only the norm's zero needs guarding
            return gk * B.sign(x) * (B.abs(x) / _nonzero(norm)) ** float(ord - 1)
        # ord < 1: the slope is infinite where an element is 0 (a cusp) and, for ord < 0, every
        # slope is 0 where the norm is 0: 0 there, with both sides of the where kept finite
        zero = B.logical_or(B.equal(x, 0.0), B.equal(norm, 0.0))
        ratio = B.abs(B.where(zero, 1.0, x)) / B.where(zero, 1.0, norm)
        return B.where(zero, 0.0, gk * B.sign(x) * ratio ** float(ord - 1))
    rows, columns = axes
    summed, extreme = (rows, columns) if ord in (1, -1) else (columns, rows)
    tied = B.equal(B.sum(B.abs(x), axis=summed, keepdims=True), norm)
    return gk * B.sign(x) * (tied / B.sum(tied, axis=extreme, keepdims=True))


class _RightAtZero:
    """The graph builder G with JAX's sign of abs' slope: 1 at 0 (jnp.abs, op abs_right_at_zero)."""

    def __getattr__(self, name):
        return getattr(_G, name)

    @staticmethod
    def sign(x):
        return 2.0 * _G.greater_equal(x, 0.0) - 1.0


_G, _RightAtZero = G, _RightAtZero()


def _singular_norm_vjp(g, x, ord, axes):
    """ord nuc (the sum of the singular values), 2 (the largest), -2 (the smallest), through the
    gradient rule of svdvals; tied extreme singular values share the gradient, as max."""
    perm = tuple(i for i in range(x.ndim) if i not in axes) + tuple(axes)
    moved = _permuted(x, perm)
    s = G.svdvals(moved)
    g = G.reshape(g, shape=s.shape[:-1] + (1,))
    if ord == "nuc":
        gs = G.broadcast_to(g, shape=s.shape)
    else:
        tied = G.equal(s, (G.max if ord == 2 else G.min)(s, axis=-1, keepdims=True))
        gs = g * tied / G.sum(tied, axis=-1, keepdims=True)
    return _permuted(OPS["svdvals"].rule(0)(gs, s, moved), inverse_permutation(perm))


def _register_norm(name, kind, params, doc, right_at_zero=False):
    ord0, axis0 = params.get("ord", 2), params["axis"]  # defaults: None ones are not passed

    def forward(xp, x, ord=ord0, axis=axis0, keepdims=False):
        return _norm_forward(xp, x, ord, axis, keepdims, kind)

    def shape(x_shape, ord=ord0, axis=axis0, keepdims=False):
        return reduced_shape(x_shape, _norm_plan(x_shape, ord, axis, kind)[1], keepdims)

    def vjp(g, ans, x, ord=ord0, axis=axis0, keepdims=False):
        return _norm_vjp(g, ans, x, ord, axis, keepdims, kind, right_at_zero)

    register(Op(name, forward, shape, (vjp,), params=params, doc=doc, public=not right_at_zero))


_register_norm("norm", "norm", {"ord": None, "axis": None, "keepdims": False},
               "NumPy's linalg.norm: ord (None, a number, inf, fro) over axis (one axis: a vector norm; two: a "
               "matrix norm); the gradient at 0, where the norm has none, is 0")
# jnp.linalg.norm with ord: JAX's sums of abs step up at 0 (a reading of norm: dialects/tensorflow.py)
_register_norm("norm_abs_right_at_zero", "norm", {"ord": None, "axis": None, "keepdims": False},
               "JAX's linalg.norm with ord: NumPy's values, JAX's gradient where the norm has none",
               right_at_zero=True)
_register_norm("vector_norm", "vector", {"ord": 2, "axis": None, "keepdims": False},
               "the ord-norm of the elements over axis (all by default), taken as one vector")
_register_norm("matrix_norm", "matrix", {"ord": "fro", "axis": (-2, -1), "keepdims": False},
               "a matrix norm (fro, nuc, 1, -1, 2, -2, inf, -inf) over two axes (the last two by default)")
_register_norm("euclidean_norm", "vector", {"axis": None, "keepdims": False},
               "sqrt(sum(x^2)) over axis (TensorFlow's reduce_euclidean_norm)")


# --------------------------------------------------------------------------- differences and integrals

def _stencil(length: int, kind: str, **params):
    """The linear map along one axis as terms (destination, [(coefficient, source), ...], divisor):
    out[destination] = sum(coefficient * x[source]) / divisor, slices as (start, stop, step)."""
    if kind == "diff":
        return [((None, None, None), [(1.0, (1, None, None)), (-1.0, (None, -1, None))], 1.0)]
    if kind == "trapezoid":  # the pieces of np.trapezoid before the sum: dx (y[i+1] + y[i]) / 2
        return [((None, None, None), [(params["dx"], (1, None, None)), (params["dx"], (None, -1, None))], 2.0)]
    h, order = params["spacing"], params["edge_order"]
    terms = [((1, -1, None), [(1.0, (2, None, None)), (-1.0, (None, -2, None))], 2.0 * h)]
    if order == 1:
        terms += [((0, 1, None), [(1.0, (1, 2, None)), (-1.0, (0, 1, None))], h),
                  ((-1, None, None), [(1.0, (-1, None, None)), (-1.0, (-2, -1, None))], h)]
    else:
        terms += [((0, 1, None), [(-1.5 / h, (0, 1, None)), (2.0 / h, (1, 2, None)), (-0.5 / h, (2, 3, None))], 1.0),
                  ((-1, None, None), [(0.5 / h, (-3, -2, None)), (-2.0 / h, (-2, -1, None)), (1.5 / h, (-1, None, None))], 1.0)]
    return terms


def _stencil_length(length, kind, **params):
    return length if kind == "gradient" else max(length - 1, 0)


def _apply_stencil(xp, x, axis, kind, **params):
    shape = list(x.shape)
    shape[axis] = _stencil_length(x.shape[axis], kind, **params)
    out = xp.empty(tuple(shape), dtype=x.dtype)

    def at(item):
        return tuple(slice(*item) if i == axis else slice(None) for i in range(x.ndim))
    for destination, parts, divisor in _stencil(x.shape[axis], kind, **params):
        total = None
        for coefficient, source in parts:
            term = x[at(source)] if coefficient == 1.0 else (-x[at(source)] if coefficient == -1.0
                                                              else coefficient * x[at(source)])
            total = term if total is None else total + term
        out[at(destination)] = total / divisor if divisor != 1.0 else total
    return out


def _transpose_stencil(g, x_shape, axis, kind, **params):
    out = None
    for destination, parts, divisor in _stencil(x_shape[axis], kind, **params):
        piece = g if destination == FULL else G.index(g, index=_along(axis, destination))
        for coefficient, source in parts:
            term = G.scatter(piece * (coefficient / divisor), shape=x_shape, index=_along(axis, source))
            out = term if out is None else out + term
    return out


def _diff_shape(shape, n=1, axis=-1):
    axis = _one_axis(shape, axis)
    if not isinstance(n, int) or n < 0:
        raise ShapeError(f"n must be a non-negative integer, not {n}")
    return tuple(max(d - n, 0) if i == axis else d for i, d in enumerate(shape))


def _diff(xp, x, n=1, axis=-1):
    axis %= x.ndim
    for _ in range(n):
        x = _apply_stencil(xp, x, axis, "diff")
    return x


def _diff_vjp(g, ans, x, n=1, axis=-1):
    axis %= x.ndim
    for k in range(n - 1, -1, -1):
        g = _transpose_stencil(g, _diff_shape(x.shape, k, axis), axis, "diff")
    return g


register(Op("diff", _diff, _diff_shape, (_diff_vjp,), params={"n": 1, "axis": -1},
            doc="the n-th difference along axis, x[1:] - x[:-1] applied n times"))


def _gradient_axis(shape, axis, spacing, edge_order):
    if axis is None:
        if len(shape) != 1:
            raise ShapeError(f"gradient of a rank-{len(shape)} array without axis= gives one array per axis; "
                             "give axis=")
        axis = 0
    axis = _one_axis(shape, axis)
    if not isinstance(spacing, (int, float)) or spacing == 0:
        raise ShapeError(f"spacing must be one nonzero number (sample points are not supported), not {spacing}")
    if edge_order not in (1, 2):
        raise ShapeError(f"edge_order must be 1 or 2, not {edge_order}")
    if shape[axis] < edge_order + 1:
        raise ShapeError(f"gradient needs at least {edge_order + 1} elements along the axis, got {shape[axis]}")
    return axis


register(Op("gradient",
            lambda xp, f, spacing=1.0, axis=None, edge_order=1: _apply_stencil(
                xp, f, _gradient_axis(f.shape, axis, spacing, edge_order), "gradient",
                spacing=spacing, edge_order=edge_order),
            lambda shape, spacing=1.0, axis=None, edge_order=1: (_gradient_axis(shape, axis, spacing, edge_order), shape)[1],
            (lambda g, ans, f, spacing=1.0, axis=None, edge_order=1: _transpose_stencil(
                g, f.shape, _gradient_axis(f.shape, axis, spacing, edge_order), "gradient",
                spacing=spacing, edge_order=edge_order),),
            args=("f",), params={"spacing": 1.0, "axis": None, "edge_order": 1},
            doc="NumPy's gradient with one spacing: central differences inside, one-sided at the ends"))


def _trapezoid_shape(shape, dx=1.0, axis=-1):
    axis = _one_axis(shape, axis)
    if not isinstance(dx, (int, float)):
        raise ShapeError(f"dx must be one number, not {dx}")
    return shape[:axis] + shape[axis + 1:]


register(Op("trapezoid",
            lambda xp, y, dx=1.0, axis=-1: xp.sum(_apply_stencil(xp, y, axis % y.ndim, "trapezoid", dx=dx), axis=axis),
            _trapezoid_shape,
            (lambda g, ans, y, dx=1.0, axis=-1: _transpose_stencil(
                G.broadcast_to(G.reshape(g, shape=reduced_shape(y.shape, axis, True)),
                               shape=_diff_shape(y.shape, 1, axis)), y.shape, axis % y.ndim, "trapezoid", dx=dx),),
            args=("y",), params={"dx": 1.0, "axis": -1},
            doc="the trapezoidal rule along axis with spacing dx"))


# --------------------------------------------------------------------------- NaN-ignoring reductions, range, unwrap

_reduction("nansum", lambda xp, x, axis=None, keepdims=False: xp.nansum(x, axis=axis, keepdims=keepdims),
           lambda g, ans, x, axis=None, keepdims=False: G.where(G.isnan(x), 0.0, _spread(g, x, axis, keepdims)),
           doc="the sum of the elements that are not NaN", nonstandard="NumPy's nansum")
def _nanmean(xp, x, axis=None, keepdims=False):
    # nansum / count: NaN (0 / 0) where every element is NaN, without NumPy's RuntimeWarning
    count = xp.count_nonzero(~xp.isnan(x), axis=axis, keepdims=keepdims)
    return xp.astype(xp.nansum(x, axis=axis, keepdims=keepdims) / count, x.dtype)


def _nan_extreme(xp, x, axis=None, keepdims=False, kind="max"):
    # NaN only where every element is NaN (as nanmax), without NumPy's RuntimeWarning
    nan = xp.isnan(x)
    reduce = xp.max if kind == "max" else xp.min
    out = reduce(xp.where(nan, -math.inf if kind == "max" else math.inf, x), axis=axis, keepdims=keepdims)
    return xp.astype(xp.where(xp.all(nan, axis=axis, keepdims=keepdims), math.nan, out), x.dtype)


def _nan_extreme_vjp(g, ans, x, axis=None, keepdims=False):
    # ties share the gradient, as max; none goes to a NaN, nor anywhere in an all-NaN group
    tied = G.equal(x, _keep(ans, x.shape, axis, keepdims))
    return _keep(g, x.shape, axis, keepdims) * tied / _nonzero(G.sum(tied, axis=axis, keepdims=True))


_reduction("nanmean", _nanmean,
           lambda g, ans, x, axis=None, keepdims=False: G.where(
               G.isnan(x), 0.0, _keep(g, x.shape, axis, keepdims) / G.sum(1.0 - G.isnan(x), axis=axis, keepdims=True)),
           shape=_nonempty_reduction_shape, doc="the mean of the elements that are not NaN",
           nonstandard="NumPy's nansum")
_reduction("nanprod", lambda xp, x, axis=None, keepdims=False: xp.nanprod(x, axis=axis, keepdims=keepdims),
           lambda g, ans, x, axis=None, keepdims=False: G.where(
               G.isnan(x), 0.0, _keep(g, x.shape, axis, keepdims) * G.prod_others(G.where(G.isnan(x), 1.0, x), axis=axis)),
           doc="the product of the elements that are not NaN", nonstandard="NumPy's nanprod")
for _name in ("nanmax", "nanmin"):
    _reduction(_name, (lambda kind: lambda xp, x, axis=None, keepdims=False: _nan_extreme(xp, x, axis, keepdims, kind))(_name[3:]),
               _nan_extreme_vjp, shape=_nonempty_reduction_shape, finite_closed=True,
               doc=f"the {_name[3:]}imum of the elements that are not NaN; ties share the gradient")


def _ptp_vjp(g, ans, x, axis=None, keepdims=False):
    top = G.max(x, axis=axis, keepdims=keepdims)
    bottom = G.min(x, axis=axis, keepdims=keepdims)
    return _extreme_vjp(g, top, x, axis, keepdims) - _extreme_vjp(g, bottom, x, axis, keepdims)


_reduction("ptp", lambda xp, x, axis=None, keepdims=False: xp.max(x, axis=axis, keepdims=keepdims)
           - xp.min(x, axis=axis, keepdims=keepdims), _ptp_vjp, shape=_nonempty_reduction_shape,
           doc="max - min (peak to peak); ties share the gradient")
register(Op("unwrap", lambda xp, p, discont=None, axis=-1, period=2 * math.pi:
            xp.unwrap(p, discont=discont, axis=axis, period=period),
            lambda shape, discont=None, axis=-1, period=2 * math.pi: (
                _one_axis(shape, axis), _single_numbers(discont=discont, period=period), shape)[2],
            (lambda g, ans, p, **_: g,), args=("p",), params={"discont": None, "axis": -1, "period": 2 * math.pi},
            doc="p with jumps above period/2 along axis removed (adds constants: gradient 1)",
            nonstandard="NumPy's unwrap"))


# --------------------------------------------------------------------------- trace, cumulative integral

def _trace_plan(shape, offset=0, axis1=0, axis2=1):
    if len(shape) < 2:
        raise ShapeError(f"trace needs an array of rank 2 or more, got shape {tuple(shape)}")
    for name, value in (("offset", offset), ("axis1", axis1), ("axis2", axis2)):
        if not isinstance(value, int):
            raise ShapeError(f"{name} must be one integer, not {value}")
    first, second = normalize_axes((axis1, axis2), len(shape))  # in range, and different
    first, second = axis1 % len(shape), axis2 % len(shape)
    rest = tuple(d for i, d in enumerate(shape) if i not in (first, second))
    return first, second, rest


def _place_diagonal(xp, g, shape, offset, axis1, axis2):
    """Zeros of `shape` with g on the offset diagonal of axes (axis1, axis2) (the gradient of trace)."""
    first, second, _ = _trace_plan(shape, offset, axis1, axis2)
    out = xp.zeros(shape, dtype=g.dtype)
    view = xp.moveaxis(out, (first, second), (-2, -1))
    length = max(0, min(shape[first] - max(-offset, 0), shape[second] - max(offset, 0)))
    steps = xp.arange(length)
    view[..., steps + max(-offset, 0), steps + max(offset, 0)] = g[..., None]
    return out


def _place_diagonal_shape(g_shape, shape, **params):
    if _trace_plan(shape, **params)[2] != tuple(g_shape):
        raise ShapeError(f"values of shape {tuple(g_shape)} do not fit the diagonal of shape {tuple(shape)}")
    return tuple(shape)


_TRACE_PARAMS = {"offset": 0, "axis1": 0, "axis2": 1}


def _trace_shape(shape, matrix=False, **p):
    if matrix and len(shape) != 2:
        raise ShapeError(f"torch.trace takes a matrix, got shape {tuple(shape)} (NumPy's traces axes 0 and 1 "
                         "of a stack; write np.trace or torch.diagonal(...).sum(-1))")
    return _trace_plan(shape, **p)[2]


register(Op("trace", lambda xp, x, offset=0, axis1=0, axis2=1, matrix=False: xp.trace(x, offset, axis1, axis2),
            _trace_shape,
            (lambda g, ans, x, matrix=False, **p: G.place_diagonal(g, shape=x.shape, **p),),
            params=dict(_TRACE_PARAMS, matrix=False),
            doc="the sum of the offset diagonal over axes axis1, axis2 (NumPy's trace)", nonstandard="NumPy's trace"))
register(Op("place_diagonal", _place_diagonal,
            _place_diagonal_shape,
            (lambda g, ans, v, shape, **p: G.trace(g, **p),), params={"shape": REQUIRED, **_TRACE_PARAMS},
            public=False, doc="zeros with the values on a diagonal (the gradient of trace)"))


def _cumulative_trapezoid_shape(shape, dx=1.0, axis=-1, initial=None):
    axis = _one_axis(shape, axis)
    if not isinstance(dx, (int, float)):
        raise ShapeError(f"dx must be one number, not {dx}")
    if initial not in (None, 0):
        raise ShapeError(f"initial must be 0 or left out (as SciPy), not {initial}")
    length = shape[axis] if initial is not None else max(shape[axis] - 1, 0)
    return shape[:axis] + (length,) + shape[axis + 1:]


def _cumulative_trapezoid(xp, y, dx=1.0, axis=-1, initial=None):
    axis %= y.ndim
    out = xp.cumulative_sum(_apply_stencil(xp, y, axis, "trapezoid", dx=dx), axis=axis)
    if initial is not None:
        head = xp.zeros(tuple(1 if i == axis else d for i, d in enumerate(y.shape)), dtype=out.dtype)
        out = xp.concat([head, out], axis=axis)
    return out


def _cumulative_trapezoid_vjp(g, ans, y, dx=1.0, axis=-1, initial=None):
    axis %= y.ndim
    if initial is not None:
        g = G.index(g, index=_along(axis, (1, None, None)))
    return _transpose_stencil(G.cumsum(g, axis=axis, reverse=True), y.shape, axis, "trapezoid", dx=dx)


register(Op("cumulative_trapezoid", _cumulative_trapezoid, _cumulative_trapezoid_shape,
            (_cumulative_trapezoid_vjp,), args=("y",), params={"dx": 1.0, "axis": -1, "initial": None},
            doc="SciPy's cumulative_trapezoid: the running trapezoidal integral (initial=0 prepends 0)"))


# --------------------------------------------------------------------------- covariance, correlation

def _cov_plan(shape, rowvar=True, bias=False, ddof=None):
    """(rows, observations) of NumPy's cov(m): a 1-D m is one variable; and n - ddof."""
    if len(shape) > 2 or not shape:
        raise ShapeError(f"cov and corrcoef take a 1-D or 2-D array, got shape {tuple(shape)}")
    rows, observations = (1, shape[0]) if len(shape) == 1 else (shape if rowvar else shape[::-1])
    if ddof is None:
        ddof = 0 if bias else 1
    if not isinstance(ddof, (int, float)):
        raise ShapeError(f"ddof must be one number, not {ddof}")
    if observations - ddof <= 0:
        raise ShapeError(f"cov of {observations} observation{'s' * (observations != 1)} with ddof={ddof:g} "
                         "leaves no degrees of freedom: the result would be inf or NaN")
    out = (rows, rows) if rows > 1 else ()  # NumPy squeezes a single variable to a number
    return rows, observations, float(observations - ddof), out


def _as_rows(x, rowvar):
    """m as (variables, observations), symbolically."""
    if x.ndim == 1:
        return G.reshape(x, shape=(1,) + x.shape)
    return x if rowvar else G.transpose(x)


def _from_rows(d, x, rowvar):
    if x.ndim == 1:
        return G.reshape(d, shape=x.shape)
    return d if rowvar else G.transpose(d)


def _cov_vjp(g, ans, x, rowvar=True, bias=False, ddof=None):
    rows, _, divisor, _ = _cov_plan(x.shape, rowvar, bias, ddof)
    m = _as_rows(x, rowvar)
    centred = m - G.mean(m, axis=1, keepdims=True)
    g = G.reshape(g, shape=(rows, rows)) if g.shape != (rows, rows) else g
    # d(c c^T / d) = (g + g^T) c / d; its rows sum to 0, so centring passes it unchanged
    return _from_rows(G.matmul(g + G.transpose(g), centred) / divisor, x, rowvar)


def _corrcoef_vjp(g, ans, x, rowvar=True):
    # R = z z^T with z = c / |c| row by row (c centred): dz = (g + g^T) z, then through the
    # normalisation dc = (dz - z sum(dz z)) / |c|; its rows sum to 0 (sum(z) = 0)
    rows, _, _, _ = _cov_plan(x.shape, rowvar)
    m = _as_rows(x, rowvar)
    centred = m - G.mean(m, axis=1, keepdims=True)
    length = G.sqrt(G.sum(centred * centred, axis=1, keepdims=True))
    z = centred / length
    g = G.reshape(g, shape=(rows, rows)) if g.shape != (rows, rows) else g
    dz = G.matmul(g + G.transpose(g), z)
    return _from_rows((dz - z * G.sum(dz * z, axis=1, keepdims=True)) / length, x, rowvar)


register(Op("cov", lambda xp, x, rowvar=True, bias=False, ddof=None: xp.cov(x, rowvar=rowvar, bias=bias, ddof=ddof),
            lambda shape, **p: _cov_plan(shape, **p)[3], (_cov_vjp,),
            params={"rowvar": True, "bias": False, "ddof": None},
            doc="NumPy's cov: rows are variables (rowvar), divided by n - 1 (bias=True: n; or n - ddof)",
            nonstandard="NumPy's cov"))
register(Op("corrcoef", lambda xp, x, rowvar=True: xp.corrcoef(x, rowvar=rowvar),
            lambda shape, **p: _cov_plan(shape, **p)[3], (_corrcoef_vjp,), params={"rowvar": True},
            doc="NumPy's corrcoef: Pearson correlations of the rows (NaN for a constant row)",
            nonstandard="NumPy's corrcoef"))


# --------------------------------------------------------------------------- segments (constant ids)

def _segment_plan(shape, segment_ids, num_segments=None, sorted_ids=True):
    """The ids as a tuple of ints, checked against data's first axis; the number of segments."""
    ids = (segment_ids,) if not isinstance(segment_ids, tuple) else segment_ids
    if not shape or len(ids) != shape[0]:
        raise ShapeError(f"segment_ids has {len(ids)} entries; data of shape {tuple(shape)} needs one per row")
    if any(not isinstance(i, int) or i < 0 for i in ids):
        raise ShapeError("segment_ids must be non-negative integers")
    if sorted_ids and any(a > b for a, b in zip(ids, ids[1:])):
        raise ShapeError("segment_ids must be sorted (unsorted_segment_sum takes them in any order)")
    count = max(ids, default=-1) + 1
    if num_segments is not None:
        if not isinstance(num_segments, int) or num_segments < count:
            raise ShapeError(f"num_segments must be an integer above every id, not {num_segments}")
        count = num_segments
    return ids, count


def _segment_shape(shape, segment_ids, num_segments=None, sorted_ids=True):
    return (_segment_plan(shape, segment_ids, num_segments, sorted_ids)[1],) + tuple(shape[1:])


def _segment_reduce(xp, data, segment_ids, num_segments=None, kind="sum"):
    import numpy
    ids, count = _segment_plan(data.shape, segment_ids, num_segments, False)

    def segment_reduce(d):
        index = numpy.asarray(ids, dtype=numpy.int64)
        if kind in ("sum", "mean"):
            out = numpy.zeros((count,) + d.shape[1:], dtype=d.dtype)
            numpy.add.at(out, index, d)
            if kind == "mean":  # an empty segment is 0, as TensorFlow
                out /= numpy.maximum(numpy.bincount(index, minlength=count), 1).reshape((-1,) + (1,) * (d.ndim - 1))
            return out
        fill = -numpy.inf if kind == "max" else numpy.inf
        out = numpy.full((count,) + d.shape[1:], fill, dtype=d.dtype)
        (numpy.maximum if kind == "max" else numpy.minimum).at(out, index, d)
        out[numpy.bincount(index, minlength=count) == 0] = 0  # an empty segment is 0, as TensorFlow
        return out
    return on_host(xp, segment_reduce, data)


register(Op("take_rows", lambda xp, x, rows: x[xp.asarray(rows, dtype=xp.int64)],
            lambda shape, rows: (len(rows),) + tuple(shape[1:]),
            (lambda g, ans, x, rows: G.unsorted_segment_sum(g, segment_ids=rows, num_segments=x.shape[0]),),
            params={"rows": REQUIRED}, public=False, doc="x[rows] for a constant list of rows"))
register(Op("unsorted_segment_sum", lambda xp, data, segment_ids, num_segments: _segment_reduce(
                xp, data, segment_ids, num_segments, "sum"),
            lambda shape, segment_ids, num_segments: _segment_shape(shape, segment_ids, num_segments, False),
            (lambda g, ans, data, segment_ids, num_segments: G.take_rows(
                g, rows=_segment_plan(data.shape, segment_ids, num_segments, False)[0]),),
            args=("data",), params={"segment_ids": REQUIRED, "num_segments": REQUIRED},
            doc="TensorFlow's unsorted_segment_sum with constant ids: row i adds into output row ids[i]",
            nonstandard="NumPy's add.at"))
register(Op("segment_sum", lambda xp, data, segment_ids: _segment_reduce(xp, data, segment_ids),
            _segment_shape, (lambda g, ans, data, segment_ids: G.take_rows(
                g, rows=_segment_plan(data.shape, segment_ids)[0]),),
            args=("data",), params={"segment_ids": REQUIRED},
            doc="TensorFlow's segment_sum with constant sorted ids", nonstandard="NumPy's add.at"))


def _segment_mean_vjp(g, ans, data, segment_ids):
    ids, _ = _segment_plan(data.shape, segment_ids)
    ones = G.logical_or(data, 1.0)  # 1 everywhere, NaN included: the rules' constants are scalars
    counts = G.segment_sum(ones, segment_ids=segment_ids)
    return G.take_rows(g / _nonzero(counts), rows=ids)


register(Op("segment_mean", lambda xp, data, segment_ids: _segment_reduce(xp, data, segment_ids, None, "mean"),
            _segment_shape, (_segment_mean_vjp,), args=("data",), params={"segment_ids": REQUIRED},
            doc="TensorFlow's segment_mean with constant sorted ids (0 for an empty segment)",
            nonstandard="NumPy's add.at"))


def _segment_extreme_vjp(g, ans, data, segment_ids):
    # ties share the gradient evenly, as TensorFlow's segment_max
    ids, count = _segment_plan(data.shape, segment_ids)
    tied = G.equal(data, G.take_rows(ans, rows=ids))
    share = G.take_rows(g / _nonzero(G.segment_sum(tied, segment_ids=segment_ids)), rows=ids)
    return share * tied


for _kind in ("max", "min"):
    register(Op(f"segment_{_kind}", (lambda k: lambda xp, data, segment_ids: _segment_reduce(
                    xp, data, segment_ids, None, k))(_kind),
                _segment_shape, (_segment_extreme_vjp,), args=("data",), params={"segment_ids": REQUIRED},
                finite_closed=True,
                doc=f"TensorFlow's segment_{_kind} with constant sorted ids (0 for an empty segment); ties "
                    "share the gradient", nonstandard="NumPy's ufunc.at"))


# --------------------------------------------------------------------------- top_k, kthvalue, aminmax (tuples)

def _k_plan(shape, k, axis=-1, least=0):
    """The axis, k checked: an integer from `least` (top_k: 0, kthvalue: 1) to the axis length."""
    axis = _one_axis(shape, axis)
    if not isinstance(k, int) or not least <= k <= shape[axis]:
        raise ShapeError(f"k must be an integer from {least} to the axis length {shape[axis]}, not {k}")
    return axis


def _top_k_indices(xp, x, k, axis=-1, largest=True, sorted=True):
    """The indices of the k largest (smallest) along axis, in order; on ties the lower index first,
    as lax.top_k and tf.math.top_k."""
    axis %= x.ndim
    key = -x if largest else x
    order = xp.argsort(key, axis=axis, kind="stable") if is_numpy(xp) else xp.argsort(key, axis=axis)
    return xp.astype(order[tuple(slice(0, k) if i == axis else slice(None) for i in range(x.ndim))], x.dtype)


def _top_k_shape(shape, k, axis=-1, largest=True, sorted=True):
    axis = _k_plan(shape, k, axis)
    return shape[:axis] + (k,) + shape[axis + 1:]


_TOP_K_PARAMS = {"k": REQUIRED, "axis": -1, "largest": True, "sorted": True}
register(Op("top_k_indices", _top_k_indices, _top_k_shape, NOT_DIFFERENTIABLE, params=dict(_TOP_K_PARAMS),
            public=False, doc="the indices of top_k's values"))
register(Op("top_k_values", lambda xp, x, **p: _gather_along(xp, x, _top_k_indices(xp, x, **p), p.get("axis", -1)),
            _top_k_shape,
            (lambda g, ans, x, k, axis=-1, **p: G.scatter_along(g, G.top_k_indices(x, k=k, axis=axis, **p), axis=axis,
                                                                size=x.shape[axis % x.ndim]),),
            params=dict(_TOP_K_PARAMS), finite_closed=True,
            public=False, doc="the k largest values along axis (largest=False: smallest), in order; the gradient goes to "
                "the elements picked (the lower index first on ties)"))
register(Op("top_k", None, None, None, params=dict(_TOP_K_PARAMS),
            parts=lambda shape, **p: [("top_k_values", p), ("top_k_indices", p)], fields=("values", "indices"),
            doc="lax.top_k, tf.math.top_k, torch.topk: the tuple (values, indices) along the last axis"))


def _kth_index(xp, x, k, axis=-1, keepdims=False):
    axis = _k_plan(x.shape, k, axis, least=1)
    index = _top_k_indices(xp, x, k, axis, largest=False)
    index = index[tuple(slice(k - 1, k) if i == axis else slice(None) for i in range(x.ndim))]
    return index if keepdims else xp.squeeze(index, axis=axis)


def _kth_shape(shape, k, axis=-1, keepdims=False):
    return reduced_shape(shape, _k_plan(shape, k, axis, least=1), keepdims)


def _kth_vjp(g, ans, x, k, axis=-1, keepdims=False):
    index = G.kth_smallest_index(x, k=k, axis=axis, keepdims=True)
    return G.scatter_along(_keep(g, x.shape, axis, keepdims), index, axis=axis, size=x.shape[axis % x.ndim])


_KTH_PARAMS = {"k": REQUIRED, "axis": -1, "keepdims": False}
register(Op("kth_smallest_index", _kth_index, _kth_shape, NOT_DIFFERENTIABLE, params=dict(_KTH_PARAMS),
            public=False, doc="the index of kthvalue's value"))
register(Op("kth_smallest", lambda xp, x, k, axis=-1, keepdims=False: xp.reshape(_gather_along(
                xp, x, _kth_index(xp, x, k, axis, True), axis), _kth_shape(x.shape, k, axis, keepdims)),
            _kth_shape, (_kth_vjp,), params=dict(_KTH_PARAMS), finite_closed=True,
            public=False, doc="the k-th smallest value along axis (k from 1)"))
register(Op("kthvalue", None, None, None, params=dict(_KTH_PARAMS),
            parts=lambda shape, **p: [("kth_smallest", p), ("kth_smallest_index", p)], fields=("values", "indices"),
            doc="torch.kthvalue: the tuple (k-th smallest value, its index) along dim"))
register(Op("aminmax", None, None, None, params={"axis": None, "keepdims": False},
            parts=lambda shape, **p: [("min", p), ("max", p)], fields=("min", "max"),
            doc="torch.aminmax: the tuple (min, max); ties share the gradient, as min and max"))
