"""The op table, continued: the libraries' functions that are the table's ops composed (composites,
as gradcli/ops/nn.py describes them): PyTorch's `x.item()`, `torch.add`/`torch.sub` with `alpha=`,
`torch.norm(x, p, dim)`, `x.expand_as(y)`, `x.view_as(y)`; NumPy's reductions with `initial=` and
`where=`, `np.interp`, `np.convolve` and `np.polyval`. Each computes what its library documents, in
the order it does (Horner's rule for polyval, the slope form for interp), and its gradients and
second derivatives are those of the ops it is built of.
"""
from __future__ import annotations

import math

from gradcli.errors import ShapeError
from gradcli.ops.table import REQUIRED
from gradcli.ops.shapes import fmt_shape
from gradcli.ops.nn import composite

MAX_POLYNOMIAL_COEFFICIENTS = 10_000  # polyval's Horner steps: two equations each


def _number(value, name):
    if isinstance(value, (str, tuple, bool)) or value is None:
        raise ShapeError(f"'{name}' must be a number, not {value!r}")
    return float(value)


# --------------------------------------------------------------------------- PyTorch's tensor methods

@composite("item", ("x",), {}, "x.item(): the one element of x as a Python number; a number carries no "
           "gradient (PyTorch's float), so none passes back to x")
def _item(f, x):
    if math.prod(x.shape) != 1:
        raise ShapeError(f"item() of an array of shape {fmt_shape(x.shape)}: only a one-element array is a number")
    return f.stop_gradient(f.reshape(x, shape=()))


@composite("new_tensor", ("x", "data"), {}, "x.new_tensor(data): data as a new tensor, which carries no gradient "
           "(x lends only its dtype)")
def _new_tensor(f, x, data):
    return f.stop_gradient(data)


@composite("add_alpha", ("x", "y"), {"alpha": REQUIRED}, "torch.add(x, y, alpha=a): x + a y")
def _add_alpha(f, x, y, alpha):
    return x + _number(alpha, "alpha") * y


@composite("subtract_alpha", ("x", "y"), {"alpha": REQUIRED}, "torch.sub(x, y, alpha=a): x - a y")
def _subtract_alpha(f, x, y, alpha):
    return x - _number(alpha, "alpha") * y


@composite("norm_p", ("x",), {"p": "fro", "axis": None, "keepdims": False},
           "torch.norm(x, p='fro', dim=None, keepdim=False), x.norm(...): a number p is the vector p-norm over dim "
           "(every element when dim is None), 'fro' the 2-norm, 'nuc' the nuclear norm of a matrix", loose=("p",))
def _norm_p(f, x, p, axis, keepdims):
    dims = None if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
    if isinstance(p, str):
        if p == "fro" and (dims is None or len(dims) <= 2):
            return f.vector_norm(x, ord=2, axis=dims, keepdims=keepdims)
        if p == "nuc":
            return f.matrix_norm(x, ord="nuc", axis=dims if dims is not None else tuple(range(x.ndim)),
                                 keepdims=keepdims)
        raise ShapeError(f"p must be a number, 'fro' or 'nuc', not {p!r}")
    return f.vector_norm(x, ord=_number(p, "p"), axis=dims, keepdims=keepdims)


@composite("expand_as", ("x", "other"), {}, "x.expand_as(other): x broadcast to other's shape (other gives only its "
           "shape, and no gradient)")
def _expand_as(f, x, other):
    return f.broadcast_to(x, shape=other.shape)


@composite("view_as", ("x", "other"), {}, "x.view_as(other): x reshaped to other's shape (other gives only its "
           "shape, and no gradient)")
def _view_as(f, x, other):
    return f.reshape(x, shape=other.shape)


# --------------------------------------------------------------------------- NumPy's reductions with initial= and where=

_MASKED = {"axis": None, "keepdims": False, "initial": None, "where": None}


def _masked(f, x, where, fill):
    return x if where is None else f.where(where, x, fill)


@composite("masked_sum", ("x",), dict(_MASKED), "np.sum(x, axis, keepdims=, initial=, where=): the sum of the "
           "elements where `where` holds, plus initial", tensors=("where",))
def _masked_sum(f, x, axis, keepdims, initial, where):
    total = f.sum(_masked(f, x, where, 0.0), axis=axis, keepdims=keepdims)
    return total if initial is None else total + _number(initial, "initial")


@composite("masked_mean", ("x",), {"axis": None, "keepdims": False, "where": None},
           "np.mean(x, axis, keepdims=, where=): the sum of the elements where `where` holds over their count",
           tensors=("where",))
def _masked_mean(f, x, axis, keepdims, where):
    if where is None:
        return f.mean(x, axis=axis, keepdims=keepdims)
    mask = f.broadcast_to(f.where(where, 1.0, 0.0), shape=x.shape)
    return f.sum(f.where(where, x, 0.0), axis=axis, keepdims=keepdims) / f.sum(mask, axis=axis, keepdims=keepdims)


@composite("masked_prod", ("x",), dict(_MASKED), "np.prod(x, axis, keepdims=, initial=, where=): the product of "
           "the elements where `where` holds, times initial", tensors=("where",))
def _masked_prod(f, x, axis, keepdims, initial, where):
    product = f.prod(_masked(f, x, where, 1.0), axis=axis, keepdims=keepdims)
    return product if initial is None else product * _number(initial, "initial")


def _masked_extreme(kind):
    def extreme(f, x, axis, keepdims, initial, where):
        if where is not None and initial is None:
            raise ShapeError(f"{kind}() with where= needs initial= (NumPy: the {kind}imum of no elements is not "
                             f"defined)")
        fill = -math.inf if kind == "max" else math.inf
        reduced = getattr(f, kind)(_masked(f, x, where, fill), axis=axis, keepdims=keepdims)
        if initial is None:
            return reduced
        return getattr(f, f"{kind}imum")(reduced, _number(initial, "initial"))
    return extreme


for _kind in ("max", "min"):
    composite(f"masked_{_kind}", ("x",), dict(_MASKED),
              f"np.{_kind}(x, axis, keepdims=, initial=, where=): the {_kind}imum of initial and the elements where "
              f"`where` holds; a tie with initial shares the gradient, as {_kind}imum", tensors=("where",))(
        _masked_extreme(_kind))


# --------------------------------------------------------------------------- NumPy's interp, convolve, polyval

def _vector(x, name, label):
    if x.ndim != 1 or x.shape[0] == 0:
        raise ShapeError(f"{label}: {name} must be a nonempty 1-D array, got shape {fmt_shape(x.shape)}")
    return x.shape[0]


@composite("interp", ("x", "xp", "fp"), {"left": None, "right": None, "period": None},
           "np.interp(x, xp, fp, left=, right=): the piecewise-linear interpolant through (xp, fp) at x (xp "
           "increasing), fp[0] (left) below xp[0] and fp[-1] (right) above xp[-1]; at a knot the slope is the "
           "segment's to its right (as jnp.interp's)")
def _interp(f, x, xp, fp, left, right, period):
    if period is not None:
        raise ShapeError("interp with period= is not supported")
    n = _vector(xp, "xp", "interp")
    if fp.shape != xp.shape:
        raise ShapeError(f"interp: fp of shape {fmt_shape(fp.shape)} must have xp's shape {fmt_shape(xp.shape)}")
    flat = f.reshape(x, shape=(math.prod(x.shape),))
    first, last = f.index(xp, index=(0,)), f.index(xp, index=(n - 1,))
    low = f.index(fp, index=(0,)) if left is None else _number(left, "left")
    high = f.index(fp, index=(n - 1,)) if right is None else _number(right, "right")
    if n == 1:
        inside = f.broadcast_to(f.index(fp, index=(0,)), shape=flat.shape)
    else:
        # the segment [j, j + 1] with xp[j] <= x < xp[j + 1] (the last one at and past xp[-1])
        j = f.clip(f.searchsorted(xp, flat, side="right") - 1.0, 0.0, float(n - 2))
        x0, x1 = f.gather_along(xp, j, axis=0), f.gather_along(xp, j + 1.0, axis=0)
        f0, f1 = f.gather_along(fp, j, axis=0), f.gather_along(fp, j + 1.0, axis=0)
        slope = (f1 - f0) / (x1 - x0)
        # NumPy's value: slope (x - xp[j]) + fp[j], and fp[-1] itself at xp[-1]
        at_last = f.equal(flat, last)
        inside = f.where(at_last, f.index(fp, index=(n - 1,)) + slope * (flat - last), slope * (flat - x0) + f0)
    out = f.where(f.less(flat, first), low, f.where(f.greater(flat, last), high, inside))
    return f.reshape(out, shape=x.shape)


@composite("convolve", ("a", "v"), {"mode": "full"},
           "np.convolve(a, v, mode='full'): the discrete linear convolution of two 1-D arrays ('full', 'same' or "
           "'valid')")
def _convolve(f, a, v, mode):
    la, lv = _vector(a, "a", "convolve"), _vector(v, "v", "convolve")
    if lv > la:  # NumPy swaps them: the convolution is the same, 'same' and 'valid' follow the longer
        a, v, la, lv = v, a, lv, la
    if mode not in ("full", "same", "valid"):
        raise ShapeError(f"mode must be 'full', 'same' or 'valid', not {mode!r}")
    kernel = f.reshape(f.flip(v, axis=0), shape=(1, 1, lv))
    full = f.reshape(f.conv1d(f.reshape(a, shape=(1, 1, la)), kernel, bias=None, stride=1,
                                     padding=lv - 1, dilation=1, groups=1), shape=(la + lv - 1,))
    if mode == "full":
        return full
    start, length = ((lv - 1) // 2, la) if mode == "same" else (lv - 1, la - lv + 1)
    return f.index(full, index=((start, start + length, None),))


@composite("polyval", ("p", "x"), {}, "np.polyval(p, x): p[0] x^(n-1) + ... + p[n-1], by Horner's rule as NumPy "
           "(y = y x + p[k])")
def _polyval(f, p, x):
    n = _vector(p, "p", "polyval")
    if n > MAX_POLYNOMIAL_COEFFICIENTS:
        raise ShapeError(f"polyval of {n:,} coefficients (at most {MAX_POLYNOMIAL_COEFFICIENTS:,})")
    y = f.zeros_like(x)
    for k in range(n):
        y = y * x + f.index(p, index=(k,))
    return y


# --------------------------------------------------------------------------- the libraries' slopes at kinks
# Where a function has no derivative (abs at 0, clip at a bound, a norm at 0) each library
# picks one, and a pasted program gets its library's: these are its definitions written as the
# table's ops, so the slope there is the one the library computes (gradcli's own ops split a tie
# evenly and give abs, relu and sign 0 at 0: docs/language.md).

@composite("leaky_relu_slope_one_at_zero", ("x",), {"alpha": 0.01}, "JAX's leaky_relu: where(x >= 0, x, "
           "alpha x), slope 1 at 0", public=False)
def _leaky_relu_slope_one_at_zero(f, x, alpha):
    return f.where(f.greater_equal(x, 0.0), x, _number(alpha, "negative_slope") * x)


@composite("hard_tanh_slope_one_at_bounds", ("x",), {}, "JAX's hard_tanh: where(x > 1, 1, where(x < -1, -1, x)), "
           "slope 1 at -1 and 1", public=False)
def _hard_tanh_slope_one_at_bounds(f, x):
    return f.where(f.greater(x, 1.0), 1.0, f.where(f.less(x, -1.0), -1.0, x))


@composite("norm_by_square_root", ("x",), {"axis": None, "keepdims": False}, "JAX's linalg.norm and TensorFlow's "
           "norm without ord: sqrt(sum(x * x, axis)) (the 2-norm, or Frobenius over two axes), whose gradient at "
           "the zero vector is NaN, as theirs is", public=False)
def _norm_by_square_root(f, x, axis=None, keepdims=False):
    return f.sqrt(f.sum(x * x, axis=axis, keepdims=keepdims))


@composite("clip_zero_at_bounds", ("x",), {"lo": None, "hi": None}, "autograd's clip: the gradient passes to x "
           "strictly between the bounds only (0 at a bound), and to neither bound", tensors=("lo", "hi"), public=False)
def _clip_zero_at_bounds(f, x, lo=None, hi=None):
    clipped = x if lo is None else f.maximum(x, lo)
    clipped = clipped if hi is None else f.minimum(clipped, hi)
    clipped = f.stop_gradient(clipped)
    at_bound = [f.not_equal(clipped, bound) for bound in (lo, hi) if bound is not None]
    if not at_bound:
        return x
    inside = at_bound[0] if len(at_bound) == 1 else f.logical_and(*at_bound)
    return f.where(inside, x, clipped)


@composite("std_by_square_root", ("x",), {"axis": None, "ddof": None, "keepdims": False}, "TensorFlow's, JAX's and "
           "autograd's std: sqrt(var(x)), whose gradient where all values are equal is NaN, as theirs is",
           public=False)
def _std_by_square_root(f, x, axis=None, ddof=None, keepdims=False):
    return f.sqrt(f.var(x, axis=axis, ddof=ddof, keepdims=keepdims))


# --------------------------------------------------------------------------- NumPy's NaN-ignoring moments

_NAN_MOMENT = {"axis": None, "ddof": 0, "keepdims": False}


def _nan_squares(f, x, axis, ddof):
    """NumPy's nanvar before its last division: the squared deviations from the mean of the elements
    that are not NaN, summed, kept over axis, and their divisor (count - ddof)."""
    nan = f.isnan(x)
    count = f.sum(f.where(nan, 0.0, 1.0), axis=axis, keepdims=True)
    mean = f.sum(f.where(nan, 0.0, x), axis=axis, keepdims=True) / count
    centred = f.where(nan, 0.0, x - mean)
    return f.sum(centred * centred, axis=axis, keepdims=True), count - _number(ddof, "ddof")


def _nan_variance(f, x, axis, ddof):
    """nanvar kept over axis: NaN where count - ddof <= 0 (as NumPy's and JAX's), no gradient there."""
    squares, divisor = _nan_squares(f, x, axis, ddof)
    positive = f.greater(divisor, 0.0)
    return f.where(positive, squares / f.where(positive, divisor, 1.0), math.nan)


def _squeezed(f, value, axis, keepdims):
    return value if keepdims else f.squeeze(value, axis=axis)


@composite("nanvar", ("x",), dict(_NAN_MOMENT), "np.nanvar(x, axis, ddof=0, keepdims=): the variance of the "
           "elements that are not NaN (NaN where count - ddof <= 0, as NumPy's)")
def _nanvar(f, x, axis, ddof, keepdims):
    return _squeezed(f, _nan_variance(f, x, axis, ddof), axis, keepdims)


@composite("nanstd", ("x",), dict(_NAN_MOMENT), "np.nanstd(x, axis, ddof=0, keepdims=): sqrt(nanvar); its gradient "
           "is 0 where it is 0 (all values equal), as std's")
def _nanstd(f, x, axis, ddof, keepdims):
    var = _nan_variance(f, x, axis, ddof)
    zero = f.equal(var, 0.0)
    return _squeezed(f, f.where(zero, 0.0, f.sqrt(f.where(zero, 1.0, var))), axis, keepdims)


@composite("nanstd_by_square_root", ("x",), dict(_NAN_MOMENT), "JAX's nanstd: sqrt(nanvar), whose gradient where "
           "all values are equal is NaN, as JAX's", public=False)
def _nanstd_by_square_root(f, x, axis, ddof, keepdims):
    return _squeezed(f, f.sqrt(_nan_variance(f, x, axis, ddof)), axis, keepdims)


@composite("median_lower_splitting_ties", ("x",), {}, "PyTorch's median(x) of every element: the lower of the two "
           "middle values; its gradient is split evenly among the elements equal to it, as PyTorch's is",
           public=False)
def _median_lower_splitting_ties(f, x):
    median = f.stop_gradient(f.quantile(x, q=0.5, method="lower"))
    ties = f.equal(x, median)
    share = f.stop_gradient(ties / f.sum(ties))
    return median + f.sum((x - f.stop_gradient(x)) * share)  # (the value is the median's, exactly)
