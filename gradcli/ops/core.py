"""The core of the op table: the operators, elementwise basics, reductions and shapes that
programs use most (every other family is imported when one of its names is first used)."""
from __future__ import annotations

import math

from gradcli.errors import ShapeError
from gradcli.ops.shapes import (
    _broadcast, _count, _keep, _nonempty_reduction_shape, _same, _spread, broadcast_shapes,
    fmt_shape, inverse_permutation, normalize_axes, reduced_shape)
from gradcli.ops.table import (
    NO_GRADIENT, NOT_DIFFERENTIABLE, OPS, REQUIRED, UNBOUNDED, DataError, Op, core_registered, register)
from gradcli.ops.trace import G, Sym
from gradcli.ops import casts


# --------------------------------------------------------------------------- forward helpers

def _compare(fn):
    def forward(xp, a, b):
        return xp.astype(fn(a, b), xp.result_type(a, b))
    return forward


def _sigmoid(xp, x):
    # exp of a non-positive number only: no overflow at either end
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _safe_max(xp, x, axis):
    # the shift of a softmax or logsumexp; an empty array has none (and needs none)
    if x.size == 0:
        return xp.zeros(reduced_shape(x.shape, axis, True), dtype=x.dtype)
    return xp.max(x, axis=axis, keepdims=True)


def _logsumexp(xp, x, axis=None, keepdims=False):
    m = _safe_max(xp, x, axis)
    m = xp.where(xp.isfinite(m), m, 0)
    out = xp.log(xp.sum(xp.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else xp.squeeze(out, axis=normalize_axes(axis, x.ndim))


def _softmax(xp, x, axis=-1):
    m = _safe_max(xp, x, axis)
    e = xp.exp(x - xp.where(xp.isfinite(m), m, 0))
    return e / xp.sum(e, axis=axis, keepdims=True)


def _log_softmax(xp, x, axis=-1):
    # (x - m) - log(sum(exp(x - m))): x - m is exact near the maximum, x - logsumexp(x) is not
    m = _safe_max(xp, x, axis)
    z = x - xp.where(xp.isfinite(m), m, 0)
    return z - xp.log(xp.sum(xp.exp(z), axis=axis, keepdims=True))


def _prod_others(xp, x, axis=None):
    """For each element, the product of the other elements of its reduction group, exact
    where the group holds zeros (no division by zero)."""
    zero = x == 0
    nonzero_x = xp.where(zero, 1, x)
    n_zero = xp.count_nonzero(zero, axis=axis, keepdims=True)
    p = xp.prod(nonzero_x, axis=axis, keepdims=True)
    return xp.astype(xp.where(n_zero == 0, p / nonzero_x, xp.where((n_zero == 1) & zero, p, 0)), x.dtype)


def _sum_to(xp, x, shape):
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, d in enumerate(shape) if d == 1 and x.shape[i + lead] != 1)
    out = xp.sum(x, axis=axes, keepdims=True) if axes else x
    return xp.reshape(out, shape)


def _index_tuple(index, expand_masks: bool = False):
    """The static index (hashable tuples) as a NumPy index. Its items are ints, (start, stop,
    step) slices, None, Ellipsis, and constant integer arrays or boolean masks (`IndexArray`
    of gradcli.ops.index, NumPy's advanced indexing); with `expand_masks` a mask becomes the
    integer arrays of its nonzero(), as NumPy reads it (for `add.at`)."""
    out = []
    for item in index:
        if isinstance(item, tuple):
            out.append(slice(*item))
        elif hasattr(item, "array"):
            out.extend(item.array.nonzero() if expand_masks and item.array.dtype == bool else (item.array,))
        else:
            out.append(item)
    return tuple(out)


def _index_of(xp, x, index):
    """x[index]; a basic index naming fewer axes than x has ends in an Ellipsis (NumPy implies
    it, the standard asks it written)."""
    return x[_basic_index(index, x.ndim)]


def _basic_index(index, ndim: int):
    items = _index_tuple(index)
    if _advanced(index) or any(i is Ellipsis for i in items) or sum(i is not None for i in items) >= ndim:
        return items
    return items + (Ellipsis,)


def _advanced_index_claim(index, **_):
    return "NumPy's advanced indexing (an index array)" if _advanced(index) else None


def _advanced(index) -> bool:
    return any(hasattr(item, "array") for item in index)


def _index_shape(shape, index):
    import numpy as np
    probe = np.broadcast_to(np.empty((), dtype=np.int8), shape)  # no memory, any shape
    try:
        return probe[_index_tuple(index)].shape
    except IndexError as exc:
        raise ShapeError(str(exc)) from None  # as NumPy (JAX would clamp an index out of bounds)
    except OverflowError:  # x[2**63]: past any array's end
        raise ShapeError(f"an index of {index} is too large for any array") from None


def _subscripts(index) -> str:
    """The static index as the language writes it: `1:3, None, ...`."""
    parts = []
    for item in index:
        if item is None:
            parts.append("None")
        elif item is Ellipsis:
            parts.append("...")
        elif isinstance(item, tuple):
            start, stop, step = ("" if v is None else str(v) for v in item)
            parts.append(f"{start}:{stop}" + (f":{step}" if step else ""))
        else:
            parts.append(str(item))
    return ", ".join(parts) + ("," if len(parts) == 1 and parts[0] == "None" else "")


def _scatter(xp, g, shape, index):
    out = xp.zeros(shape, dtype=g.dtype)
    if _advanced(index):  # an index array may repeat a position: its values add up
        xp.add.at(out, _index_tuple(index, expand_masks=True), g)
    else:
        out[_basic_index(index, out.ndim)] = g
    return out


def _scatter_claim(index, **_):
    if _advanced(index):
        return "NumPy's add.at (an index array)"
    return "NumPy's assignment through a new axis (None)" if any(i is None for i in index) else None


def _shape_of(value) -> tuple:
    """An array's shape; a Python float's (gradcli.ops.scalar: the numbers-only attempt) is ()."""
    return () if type(value) is float else value.shape


def _matmul_shape(a, b):
    if not a or not b:
        raise ShapeError(f"matmul needs arrays of rank 1 or more, got {fmt_shape(a)} and {fmt_shape(b)}; "
                         "use * to multiply by a scalar")
    a2 = a if len(a) >= 2 else (1,) + a
    b2 = b if len(b) >= 2 else b + (1,)
    if a2[-1] != b2[-2]:
        raise ShapeError(f"matmul of {fmt_shape(a)} and {fmt_shape(b)}: the inner dimensions differ "
                         f"({a2[-1]} != {b2[-2]})")
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    return batch + a[-2:-1] * (len(a) >= 2) + b[-1:] * (len(b) >= 2)


def _mT(x: Sym) -> Sym:
    perm = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return G.transpose(x, axes=perm)


def _matmul_vjp_a(g, ans, a, b):
    if a.ndim == 1 and b.ndim == 1:
        return g * b
    if b.ndim == 1:  # (..., n, k) @ (k,) -> (..., n)
        return G.reshape(g, shape=g.shape + (1,)) * b
    if a.ndim == 1:  # (k,) @ (..., k, m) -> (..., m)
        return G.reshape(G.matmul(b, G.reshape(g, shape=g.shape + (1,))), shape=g.shape[:-1] + (a.shape[0],))
    return G.matmul(g, _mT(b))


def _matmul_vjp_b(g, ans, a, b):
    if a.ndim == 1 and b.ndim == 1:
        return g * a
    if a.ndim == 1:  # (k,) @ (..., k, m) -> (..., m)
        return G.reshape(a, shape=(a.shape[0], 1)) * G.reshape(g, shape=g.shape[:-1] + (1, g.shape[-1]))
    if b.ndim == 1:  # (..., n, k) @ (k,) -> (..., n)
        return G.reshape(G.matmul(_mT(a), G.reshape(g, shape=g.shape + (1,))), shape=g.shape[:-1] + (b.shape[0],))
    return G.matmul(_mT(a), g)


def _reshape_shape(x_shape, shape):
    size = math.prod(x_shape)
    target = list(shape)
    if target.count(-1) > 1:
        raise ShapeError("reshape: at most one dimension may be -1")
    if any(d < -1 for d in target):
        raise ShapeError(f"reshape: negative dimension in {fmt_shape(shape)}")
    if -1 in target:
        rest = math.prod(d for d in target if d != -1)
        if rest == 0 or size % rest:
            raise ShapeError(f"cannot reshape {fmt_shape(x_shape)} ({size} elements) to {fmt_shape(shape)}")
        target[target.index(-1)] = size // rest
    if math.prod(target) != size:
        raise ShapeError(f"cannot reshape {fmt_shape(x_shape)} ({size} elements) to {fmt_shape(shape)} "
                         f"({math.prod(target)} elements)")
    return tuple(target)


def _transpose_shape(shape, axes=None):
    if axes is None:
        return tuple(reversed(shape))
    n = len(shape)
    if any(not -n <= a < n for a in axes) or sorted(a % n for a in axes) != list(range(n)) or len(axes) != n:
        raise ShapeError(f"transpose: axes {tuple(axes)} are not a permutation of the {n} axes")
    return tuple(shape[a] for a in axes)


def _transpose_vjp(g, ans, x, axes=None):
    if axes is None:
        return G.transpose(g)
    perm = [a % x.ndim for a in axes]
    return G.transpose(g, axes=inverse_permutation(perm))


def _broadcast_to_shape(x_shape, shape):
    out = broadcast_shapes(x_shape, tuple(shape))
    if out != tuple(shape):
        raise ShapeError(f"cannot broadcast {fmt_shape(x_shape)} to {fmt_shape(shape)}")
    return out


def _sum_to_shape(x_shape, shape):
    _broadcast_to_shape(tuple(shape), x_shape)
    return tuple(shape)


def _stack_shape(*shapes):
    if any(s != shapes[0] for s in shapes):
        raise ShapeError("the items of an array literal have different shapes: "
                         + ", ".join(fmt_shape(s) for s in shapes))
    return (len(shapes),) + (shapes[0] if shapes else ())


def _maximum_weight(a, b):  # 1 where a wins, 1/2 at a tie (split evenly), 0 where b wins
    return G.greater(a, b) + 0.5 * G.equal(a, b)


def _minimum_weight(a, b):
    return G.less(a, b) + 0.5 * G.equal(a, b)


def _extreme_vjp(g, ans, x, axis=None, keepdims=False):
    # ties share the gradient evenly (as autograd and TensorFlow's reduce_max do)
    tied = G.equal(x, _keep(ans, x.shape, axis, keepdims))
    return _keep(g, x.shape, axis, keepdims) * tied / G.sum(tied, axis=axis, keepdims=True)


def _first_extreme_vjp(g, ans, x, axis=None, keepdims=False):
    # the first of tied extremes takes the gradient: the index PyTorch's max and min along a dim return
    tied = G.equal(x, _keep(ans, x.shape, axis, keepdims))
    if axis is None:  # (the first in the flattened order)
        seen = G.reshape(G.cumsum(G.reshape(tied, shape=(math.prod(x.shape),)), axis=0), shape=x.shape)
    else:
        seen = G.cumsum(tied, axis=axis)
    return _keep(g, x.shape, axis, keepdims) * (tied * G.equal(seen, 1.0))


def _reduced_to(g: Sym, like: Sym) -> Sym:
    """g summed down to `like`'s shape where `like` was broadcast, before any more
    elementwise work (the engine would sum it afterwards, at full size)."""
    if g.shape == like.shape or len(g.shape) < len(like.shape):
        return g
    return G.sum_to(g, shape=like.shape)


def _safe_log_base(a):
    # d(a**b)/db = a**b * log(a) for a > 0 and 0 elsewhere (TensorFlow's convention); the
    # inner where keeps log away from a <= 0 even in the branch that is discarded
    positive = G.greater(a, 0.0)
    return G.where(positive, G.log(G.where(positive, a, 1.0)), 0.0)


def _power_vjp_base(g, ans, x, y):
    # d(x**y)/dx = y * x**(y-1), and exactly 0 at x = y = 0 (x**0 is the constant 1; y * x**-1
    # would be 0 * inf there), as JAX and autograd require. Elsewhere the plain formula, so
    # its derivative in y stays exact (d²(x**y)/dxdy = 1/4 at (4, 0), JAX's second-derivative
    # test); the base is replaced at the special point so no branch computes inf (a gradient
    # through `where` would turn it into NaN). A constant exponent decides while building.
    exponent = y.graph.scalar_constant(y.id)
    if exponent is not None:
        if exponent == 0:
            return g * 0.0
        return g if exponent == 1 else g * (y * x ** (y - 1.0))  # x ** 1 is x: no x ** 0.0 to print
    special = G.logical_and(G.equal(x, 0.0), G.equal(y, 0.0))
    safe_x = G.where(special, 1.0, x)
    return g * G.where(special, 0.0, y * safe_x ** (y - 1.0))


# --------------------------------------------------------------------------- bounds and fixes
# How a bound on |result| follows from bounds on |inputs| (a record's `bound`): called as
# `rule(bounds, input shapes, result shape, input arrays or None)`.

def _bound_of_sum(bounds, shapes, shape, args):  # add, subtract
    return bounds[0] + bounds[1]


def _bound_of_product(bounds, shapes, shape, args):
    return bounds[0] * bounds[1]


def _bound_of_square(bounds, shapes, shape, args):
    return bounds[0] * bounds[0]


def _bound_of_exp(bounds, shapes, shape, args):
    # |exp(x)| <= exp(max|x|), with room for exp's rounding in any dtype (float16's 5e-4 included);
    # none near the end of float64's range
    return math.exp(bounds[0]) * 1.01 if bounds[0] < 700 else None


def _bound_of_quotient(bounds, shapes, shape, args):
    # by one number (a softmax's sum): |a / s| <= max|a| / |s|, rounding included
    if args is None or args[1].size != 1:
        return None
    denominator = abs(float(args[1][(0,) * args[1].ndim]))
    return bounds[0] / denominator * (1 + 1e-6) if denominator > 0 else None


def _bound_of_reduced_sum(bounds, shapes, shape, args):  # at most (elements summed) x the largest
    return bounds[0] * max(1, math.prod(shapes[0]) // max(1, math.prod(shape)))


def _bound_of_matmul(bounds, shapes, shape, args):  # at most (inner dimension) x the product of the largest
    inner = shapes[0]
    return bounds[0] * bounds[1] * (inner[-1] if inner else 1)


# --------------------------------------------------------------------------- the table

def _ufunc(name):
    return lambda xp, *args: getattr(xp, name)(*args)


def _unary(name, forward, vjp, doc="", **hints):
    if isinstance(forward, str):
        hints["ufunc"], forward = forward, _ufunc(forward)
    register(Op(name, forward, _same, vjp if vjp is None or isinstance(vjp, tuple) else (vjp,),
                elementwise=True, doc=doc, **hints))


def _binary(name, forward, vjp, doc="", **hints):
    if isinstance(forward, str):
        hints["ufunc"], forward = forward, _ufunc(forward)
    register(Op(name, forward, _broadcast, vjp, args=("x", "y"), elementwise=True,
                doc=doc, **hints))


def _reduction(name, forward, vjp, shape=reduced_shape, doc="", **hints):
    register(Op(name, forward, shape, (vjp,), params={"axis": None, "keepdims": False},
                doc=doc, **hints))


_unary("negative", "negative", lambda g, ans, x: -g, finite_closed=True, involution=True,
       symbol="-", precedence=4, literal=lambda value: -value)
_unary("identity", lambda xp, x: x, lambda g, ans, x: g,
       view=True, memory="same", finite_closed=True, literal=lambda value: value)
_unary("positive", "positive", lambda g, ans, x: g, finite_closed=True, symbol="+", precedence=4,
       literal=lambda value: value)
_unary("exp", "exp", lambda g, ans, x: g * ans, grows=True, bound=_bound_of_exp, underflows="rounds")
_unary("log", "log", lambda g, ans, x: g / x, bound=UNBOUNDED)
_unary("log1p", "log1p", lambda g, ans, x: g / (1.0 + x), bound=UNBOUNDED)
_unary("expm1", "expm1", lambda g, ans, x: g * (ans + 1.0), grows=True)
_unary("sqrt", "sqrt", lambda g, ans, x: g / (2.0 * ans), bound=UNBOUNDED)
_unary("square", "square", lambda g, ans, x: g * (2.0 * x), grows=True, bound=_bound_of_square, underflows="rounds")
_unary("abs", lambda xp, x: xp.abs(x), lambda g, ans, x: g * G.sign(x), finite_closed=True, kink="zero",
       ufunc="absolute")
# JAX's abs takes the right derivative, 1, at 0 (autograd's, TensorFlow's and PyTorch's take 0)
_unary("abs_right_at_zero", lambda xp, x: xp.abs(x), lambda g, ans, x: g * G.where(G.less(x, 0.0), -1.0, 1.0),
       finite_closed=True, kink="zero_right", ufunc="absolute", doc="|x|; its derivative at 0 is 1, the right one")
_unary("sign", "sign", NOT_DIFFERENTIABLE, finite_closed=True, bound=(-1, 1))
_unary("sin", "sin", lambda g, ans, x: g * G.cos(x), finite_closed=True, bound=(-1, 1))
_unary("cos", "cos", lambda g, ans, x: -(g * G.sin(x)), finite_closed=True, bound=(-1, 1))
_unary("tan", "tan", lambda g, ans, x: g * (1.0 + ans * ans), bound=UNBOUNDED)
_unary("tanh", "tanh", lambda g, ans, x: _slope_times(g, x, "tanh"), finite_closed=True, bound=(-1, 1))
_unary("sigmoid", _sigmoid, lambda g, ans, x: _slope_times(g, x, "sigmoid"), finite_closed=True, bound=(0, 1),
       underflows="rounds")


# The slopes of tanh and sigmoid, computed from x with full relative accuracy in the tails
# (1 - tanh(x)**2 is 0 from |x| > 19 on, where sech(x)**2 is still 1e-16 .. 1e-308):
# with t = exp(-2|x|), sech(x)**2 = 4t / (1 + t)**2; sigmoid'(x) = e / (1 + e)**2, e = exp(-|x|).
def _tanh_slope(xp, x):
    t = xp.exp(-2.0 * abs(x))  # (the operator: on a number, no ufunc call)
    u = 1.0 + t
    return 4.0 * t / (u * u)


def _sigmoid_slope(xp, x):
    e = xp.exp(-abs(x))
    u = 1.0 + e
    return e / (u * u)


_unary("tanh_slope", _tanh_slope, lambda g, ans, x: g * (-2.0 * ans * G.tanh(x)), public=False,
       finite_closed=True, doc="d tanh(x)/dx = sech(x)**2", prints_as=lambda x: (f"1.0 / cosh({x}) ** 2", 3))
_unary("sigmoid_slope", _sigmoid_slope, lambda g, ans, x: g * (ans * (1.0 - 2.0 * G.sigmoid(x))), public=False,
       finite_closed=True, doc="d sigmoid(x)/dx = sigmoid(x) * sigmoid(-x)",
       prints_as=lambda x: (f"sigmoid({x}) * sigmoid(-{x})", 3))


# The gradient through tanh or sigmoid, g * slope(x), as one equation rather than two (a chain
# of 100,000 tanh is differentiated into 100,000 equations, not 200,000); the same numbers as
# computing the slope and multiplying. Where g is 1 (the seed) the slope alone is the gradient.
def _slope_times(g, x, name: str):
    graph = g.graph  # (the equation made straight away: a chain of 100,000 tanh makes 100,000 of them)
    if graph.scalar_constant(g.id) == 1.0:
        return graph.derived(OPS[name + "_slope"], (x.id,), {})
    return graph.derived(OPS[name + "_grad"], (g.id, x.id), {})


def _bound_of_scaled_slope(bounds, shapes, shape, args):
    return bounds[0]  # |g * slope(x)| <= |g|: both slopes lie in [0, 1]


register(Op("tanh_grad", lambda xp, g, x: g * _tanh_slope(xp, x), _broadcast,
            (lambda h, ans, g, x: G.tanh_grad(h, x), lambda h, ans, g, x: h * (-2.0 * ans * G.tanh(x))),
            args=("g", "x"), elementwise=True, public=False, finite_closed=True, bound=_bound_of_scaled_slope,
            doc="g * d tanh(x)/dx = g * sech(x)**2: the gradient through tanh in one equation",
            prints_as=lambda g, x: (f"{g} / cosh({x}) ** 2", 3)))
register(Op("sigmoid_grad", lambda xp, g, x: g * _sigmoid_slope(xp, x), _broadcast,
            (lambda h, ans, g, x: G.sigmoid_grad(h, x), lambda h, ans, g, x: h * (ans * (1.0 - 2.0 * G.sigmoid(x)))),
            args=("g", "x"), elementwise=True, public=False, finite_closed=True, bound=_bound_of_scaled_slope,
            doc="g * d sigmoid(x)/dx = g * sigmoid(x) * sigmoid(-x): the gradient through sigmoid in one equation",
            prints_as=lambda g, x: (f"{g} * sigmoid({x}) * sigmoid(-{x})", 3)))

_unary("softplus", lambda xp, x: xp.astype(xp.logaddexp(0, x), x.dtype), lambda g, ans, x: g * G.sigmoid(x),
       finite_closed=True)
# log(sigmoid(x)) without its underflow: -softplus(-x)
_unary("log_sigmoid", lambda xp, x: -xp.astype(xp.logaddexp(0, -x), x.dtype),
       lambda g, ans, x: g * G.sigmoid(-x), bound=UNBOUNDED)
_unary("relu", lambda xp, x: xp.maximum(x, 0), lambda g, ans, x: g * G.greater(x, 0.0), finite_closed=True,
       kink="zero")
_unary("floor", "floor", NOT_DIFFERENTIABLE, finite_closed=True)
_unary("ceil", "ceil", NOT_DIFFERENTIABLE, finite_closed=True)
# NumPy's round: half to even, `decimals` places (Python's round(x, n) of an array is np.round)
def _round_shape(shape, decimals=0):
    if not isinstance(decimals, int) or isinstance(decimals, bool):  # NumPy: a TypeError
        raise ShapeError(f"decimals must be an integer, not {decimals!r}")
    return shape


register(Op("round", lambda xp, x, decimals=0: xp.round(x, decimals), _round_shape, NOT_DIFFERENTIABLE,
            elementwise=True, finite_closed=True, params={"decimals": 0}))
# stop_gradient: the value passes, the gradient does not
_unary("stop_gradient", lambda xp, x: x, NOT_DIFFERENTIABLE, view=True, memory="same",
       finite_closed=True, stops_gradient=True)

_binary("add", "add", (lambda g, ans, x, y: g, lambda g, ans, x, y: g), identities=(0.0, 0.0),
        symbol="+", precedence=2, bound=_bound_of_sum)
_binary("subtract", "subtract", (lambda g, ans, x, y: g, lambda g, ans, x, y: -g),
        identities=(None, 0.0), symbol="-", precedence=2, bound=_bound_of_sum)
_binary("multiply", "multiply", (lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x),
        identities=(1.0, 1.0), symbol="*", precedence=3, bound=_bound_of_product, grows=True, underflows="rounds")
_binary("divide", "divide",
        (lambda g, ans, x, y: g / y, lambda g, ans, x, y: -_reduced_to(g * ans, y) / y),
        identities=(None, 1.0), symbol="/", precedence=3, bound=_bound_of_quotient, grows=True, underflows="rounds")
_binary("power", lambda xp, x, y: xp.pow(x, y), (_power_vjp_base, lambda g, ans, x, y: g * (ans * _safe_log_base(x))),
        ufunc="power", identities=(None, 1.0), symbol="**", precedence=5, grows=True, underflows="rounds")
_binary("maximum", "maximum",
        (lambda g, ans, x, y: g * _maximum_weight(x, y), lambda g, ans, x, y: g * (1.0 - _maximum_weight(x, y))),
        finite_closed=True, kink="pair")
_binary("minimum", "minimum",
        (lambda g, ans, x, y: g * _minimum_weight(x, y), lambda g, ans, x, y: g * (1.0 - _minimum_weight(x, y))),
        finite_closed=True, kink="pair")
for _name, _fn, _symbol in (("less", lambda a, b: a < b, "<"), ("less_equal", lambda a, b: a <= b, "<="),
                            ("greater", lambda a, b: a > b, ">"), ("greater_equal", lambda a, b: a >= b, ">="),
                            ("equal", lambda a, b: a == b, "=="), ("not_equal", lambda a, b: a != b, "!=")):
    _binary(_name, _compare(_fn), NOT_DIFFERENTIABLE * 2, finite_closed=True, boolean=True, symbol=_symbol,
            precedence=1, bound=(0, 1))
# `and`, `or` and `not` print as calls (precedence None): `derive` writes logical_and(a, b)
for _name, _fn, _symbol in (("logical_and", lambda a, b: (a != 0) & (b != 0), "and"),
                            ("logical_or", lambda a, b: (a != 0) | (b != 0), "or")):
    _binary(_name, _compare(_fn), NOT_DIFFERENTIABLE * 2, finite_closed=True, boolean=True, symbol=_symbol,
            symbol_reads_truth=True)
_unary("logical_not", lambda xp, x: xp.astype(x == 0, x.dtype), NOT_DIFFERENTIABLE, finite_closed=True, boolean=True,
       symbol="not", symbol_reads_truth=True)
# Python's `//` and `%` (NumPy's floor_divide and mod: the remainder takes the divisor's sign); `derive`
# writes them as calls
_binary("floor_divide", "floor_divide", NOT_DIFFERENTIABLE * 2, symbol="//", bound=UNBOUNDED)
_binary("mod", lambda xp, x, y: xp.remainder(x, y),
        (lambda g, ans, x, y: g, lambda g, ans, x, y: -(g * G.floor_divide(x, y))),
        ufunc="mod", symbol="%", bound=UNBOUNDED)

register(Op("where", lambda xp, c, x, y: xp.where(c != 0, x, y), _broadcast,
            (NO_GRADIENT, lambda g, ans, c, x, y: G.where(c, g, 0.0), lambda g, ans, c, x, y: G.where(c, 0.0, g)),
            args=("condition", "x", "y"), elementwise=True, finite_closed=True,
            doc="where(c, x, y): x where c is nonzero, else y"))
def _clip(xp, x, lo, hi, ordered=False):
    if ordered and bool(xp.any(lo > hi)):
        # tf.clip_by_value is maximum(minimum(x, hi), lo): lo where NumPy's gives hi
        raise DataError("clip_value_min is greater than clip_value_max: TensorFlow's clip_by_value then gives "
                        "the minimum and NumPy's clip the maximum (TensorFlow's documentation calls the result "
                        "incorrect)")
    return xp.minimum(xp.maximum(x, lo), hi)


# minimum(maximum(x, lo), hi): where lo > hi the result is hi whatever x and lo are (NumPy, JAX and
# PyTorch agree), so lo's slope needs lo <= hi and hi's is where maximum(x, lo) passes it
register(Op("clip", _clip, _broadcast,
            (lambda g, ans, x, lo, hi, ordered=False: g * (G.greater_equal(x, lo) * G.less_equal(x, hi)),
             lambda g, ans, x, lo, hi, ordered=False: g * (G.less(x, lo) * G.less_equal(lo, hi)),
             lambda g, ans, x, lo, hi, ordered=False: g * G.greater(G.maximum(x, lo), hi)),
            args=("x", "lo", "hi"), elementwise=True, finite_closed=True,
            params={"ordered": False}))

_reduction("sum", lambda xp, x, axis=None, keepdims=False: xp.sum(x, axis=axis, keepdims=keepdims),
           lambda g, ans, x, axis=None, keepdims=False: _spread(g, x, axis, keepdims),
           bound=_bound_of_reduced_sum, grows=True, underflows="terms",
           reduce_ufunc="add")
_reduction("mean", lambda xp, x, axis=None, keepdims=False: xp.mean(x, axis=axis, keepdims=keepdims),
           lambda g, ans, x, axis=None, keepdims=False: _spread(g, x, axis, keepdims) / float(_count(x.shape, axis)),
           _nonempty_reduction_shape, bound=_bound_of_reduced_sum, underflows="terms")
_reduction("prod", lambda xp, x, axis=None, keepdims=False: xp.prod(x, axis=axis, keepdims=keepdims),
           lambda g, ans, x, axis=None, keepdims=False: _keep(g, x.shape, axis, keepdims) * G.prod_others(x, axis=axis),
           grows=True, underflows="rounds")
# autograd's prod: its gradient is ans / x, NaN where x holds a 0 (the exact one is prod_others)
_reduction("prod_by_division", lambda xp, x, axis=None, keepdims=False: xp.prod(x, axis=axis, keepdims=keepdims),
           lambda g, ans, x, axis=None, keepdims=False: _keep(g * ans, x.shape, axis, keepdims) / x,
           grows=True, underflows="rounds",
           doc="prod(x, axis) with autograd's gradient, prod / x: NaN where an element is 0")
_reduction("max", lambda xp, x, axis=None, keepdims=False: xp.max(x, axis=axis, keepdims=keepdims),
           _extreme_vjp, _nonempty_reduction_shape, finite_closed=True,
           kink="extremes", reduce_ufunc="maximum")
_reduction("min", lambda xp, x, axis=None, keepdims=False: xp.min(x, axis=axis, keepdims=keepdims),
           _extreme_vjp, _nonempty_reduction_shape, finite_closed=True,
           kink="extremes", reduce_ufunc="minimum")
for _name in ("all", "any"):  # (no gradient: a truth)
    _reduction(_name, (lambda test: lambda xp, x, axis=None, keepdims=False: xp.astype(
        getattr(xp, test)(x != 0, axis=axis, keepdims=keepdims), x.dtype))(_name), NO_GRADIENT,
        finite_closed=True, boolean=True, bound=(0, 1),
        doc=f"{_name}(x, axis=None): whether {_name} of the elements along axis are nonzero (1 or 0)")
for _name, _ufunc_name in (("max", "maximum"), ("min", "minimum")):
    register(Op(f"{_name}_first", (lambda fn: lambda xp, x, axis=None, keepdims=False: fn(xp, x, axis=axis,
                                                                                        keepdims=keepdims))(
                    OPS[_name].forward), _nonempty_reduction_shape, (_first_extreme_vjp,),
                params={"axis": REQUIRED, "keepdims": False}, finite_closed=True, kink="extremes_first",
                reduce_ufunc=_ufunc_name, public=False,
                doc=f"{_name} along axis; at a tie the gradient goes to the first of the tied elements"))
# d logsumexp(x) = softmax(x): computed shifted by the maximum, not as exp(x - ans), which
# cancels catastrophically for large |x| (found by fuzzing: 1e-3 off at x ~ 1e13)
_reduction("logsumexp", _logsumexp,
           lambda g, ans, x, axis=None, keepdims=False:
               _keep(g, x.shape, axis, keepdims) * G.softmax(x, axis=normalize_axes(axis, x.ndim)),
           _nonempty_reduction_shape)
def _same_checking_axis(shape, axis=-1):
    normalize_axes(axis, len(shape))
    return shape


def _arg_extreme_shape(shape, axis=None, keepdims=False):
    if not (axis is None or isinstance(axis, int)):
        raise ShapeError("argmax and argmin take a single axis")
    return _nonempty_reduction_shape(shape, axis, keepdims)


register(Op("prod_others", _prod_others, _same_checking_axis,
            (lambda g, ans, x, axis=None: (G.sum(g * ans, axis=axis, keepdims=True) - g * ans) / x,),
            params={"axis": None},
            doc="for each element, the product of the others in its group (the gradient of prod)"))
for _name, _fn in (("argmax", "argmax"), ("argmin", "argmin")):
    register(Op(_name, (lambda fn: lambda xp, x, axis=None, keepdims=False:
                        xp.astype(getattr(xp, fn)(x, axis=axis, keepdims=keepdims), x.dtype))(_fn),
                _arg_extreme_shape,
                NOT_DIFFERENTIABLE, params={"axis": None, "keepdims": False}))
    # PyTorch's torch.max(x, dim) / x.max(dim=...): the tuple (values, indices) along one axis
    register(Op(f"{_fn[3:]}_values_indices", None, None, None, params={"axis": REQUIRED, "keepdims": False},
                parts=(lambda fn: lambda shape, axis, keepdims=False:
                       [(fn[3:] + "_first", {"axis": axis, "keepdims": keepdims}),
                        (fn, {"axis": axis, "keepdims": keepdims})])(_fn),
                fields=("values", "indices"),
                public=False, doc="PyTorch's max/min along dim: (values, indices); the index takes a tie's gradient"))

register(Op("softmax", _softmax, _same_checking_axis,
            (lambda g, ans, x, axis=-1: ans * (g - G.sum(g * ans, axis=axis, keepdims=True)),),
            params={"axis": -1}, finite_closed=True, bound=(0, 1), underflows="rounds"))
register(Op("log_softmax", _log_softmax, _same_checking_axis,
            (lambda g, ans, x, axis=-1: g - G.exp(ans) * G.sum(g, axis=axis, keepdims=True),),
            params={"axis": -1}))

register(Op("matmul", lambda xp, a, b: xp.matmul(a, b), _matmul_shape, (_matmul_vjp_a, _matmul_vjp_b),
            args=("a", "b"), symbol="@", precedence=3, bound=_bound_of_matmul, grows=True,
            underflows="rounds"))
register(Op("transpose",
            lambda xp, x, axes=None: xp.permute_dims(x, tuple(range(x.ndim))[::-1] if axes is None else axes),
            _transpose_shape,
            (_transpose_vjp,), params={"axes": None}, view=True, memory="view",
            finite_closed=True))
register(Op("reshape", lambda xp, x, shape: xp.reshape(x, shape), _reshape_shape,
            (lambda g, ans, x, shape: G.reshape(g, shape=x.shape),), params={"shape": REQUIRED},
            view=True, memory="reshape", finite_closed=True, repeats="reshape"))
register(Op("broadcast_to", lambda xp, x, shape: xp.broadcast_to(x, shape), _broadcast_to_shape,
            (lambda g, ans, x, shape: G.sum_to(g, shape=x.shape),), params={"shape": REQUIRED},
            view=True, memory="view", finite_closed=True, repeats="broadcast"))
register(Op("sum_to", _sum_to, _sum_to_shape,
            (lambda g, ans, x, shape: G.broadcast_to(g, shape=x.shape),), params={"shape": REQUIRED}, view=True,
            bound=_bound_of_reduced_sum, simpler=lambda shape: ("sum", {"keepdims": False}) if shape == () else None,
            doc="sum_to(x, shape): sum the broadcast axes of x away, down to shape"))
register(Op("index", _index_of, _index_shape,
            (lambda g, ans, x, index: G.scatter(g, shape=x.shape, index=index),), params={"index": REQUIRED},
            public=False, view=True, memory="view", finite_closed=True, nonstandard=_advanced_index_claim,
            doc="x[index] with a constant index: basic (a view), or with integer arrays and masks (a copy)",
            prints_as=lambda x, index: f"{x}[{_subscripts(index)}]"))
register(Op("scatter", _scatter, lambda x_shape, shape, index: tuple(shape),
            (lambda g, ans, x, shape, index: G.index(g, index=index),),
            params={"shape": REQUIRED, "index": REQUIRED}, public=False, nonstandard=_scatter_claim,
            doc="zeros of `shape` with x placed at `index` (the gradient of indexing; where an index array "
                "repeats a position, its values add up)"))
register(Op("stack", lambda xp, *xs: xp.stack(xs), _stack_shape,
            (lambda i: lambda g, ans, *xs: G.index(g, index=(i,)),), args=(), variadic=True, public=False,
            doc="[a, b, ...] of computed values"))

# A cast written in the program (x.half(), x.astype(np.float16)): its value rounded to the type
# `dtype` names, as its library rounds it; the types of the values after it: gradcli/ops/casts.py
register(Op("cast", casts.forward, _same, (casts.cotangent,), params={"dtype": REQUIRED},
            public=False, bound=UNBOUNDED, underflows="rounds", prints_as=lambda x, dtype: f"{x}.astype('{dtype}')",
            doc="a cast to another floating type (x.half(), x.astype(np.float16), tf.cast(x, tf.bfloat16)): "
                "the value rounded to that type; the gradient is rounded back to the input's"))


# Sources: a constant written in the program, and an input (`--set`, or a literal default).
register(Op("const", lambda xp, value: value, lambda value: _shape_of(value), (), args=(),
            params={"value": REQUIRED}, public=False))
register(Op("input", lambda xp, name, value: value, lambda name, value: _shape_of(value), (), args=(),
            params={"name": REQUIRED, "value": REQUIRED}, public=False))


# The rest of the table: one module per family (FAMILIES), each registering its ops when it is
# imported, which the tables do when one of its names is first looked up (_Table).
core_registered()
