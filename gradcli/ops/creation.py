"""The op table, continued (after gradcli/ops/selection.py): constructors (`zeros`, `eye`, `arange`, ...),
which take no array and are constants of the program (the lowering evaluates them where they are
written), the floating-point parts of a number, and the array functions of one library's own."""
from __future__ import annotations

import math

import numpy as np

from gradcli.ops.trace import G
from gradcli.ops.table import NO_GRADIENT, NOT_DIFFERENTIABLE, REQUIRED, DataError, Op, register
from gradcli.ops.shapes import FULL, _along, broadcast_shapes, fmt_shape, inverse_permutation
from gradcli.errors import ShapeError
from gradcli.ops.array import (
    FLOAT_NAMES, MAX_INDICES, _axis, _back, _cotangent_zero, _int, _ints,
    _reshaped, _sizes_bounds, _slices, _split_length, _select_index, _shape_param)
from gradcli.ops.selection import (
    _DIAGONAL, _diagonal_plan, _embed_diagonal, _gather_axis, _pad, _pad_shape, _pad_vjp, _part_number, _replaced,
    _torch_pad_widths)


# --------------------------------------------------------------------------- constructors (constants)

def _dtype_check(dtype):
    if dtype is not None and dtype not in FLOAT_NAMES:
        if isinstance(dtype, (int, float)):
            raise ShapeError("the shape must be one argument (a tuple): write zeros((2, 3)), not zeros(2, 3)")
        raise ShapeError(f"dtype {dtype} would change the numbers (gradcli computes in floating point)")


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


# PyTorch's x.new_zeros(sizes), x.new_ones(sizes), x.new_full(sizes, fill_value): an array of the
# sizes given, x lending only its dtype (and so no gradient)
# (a dtype= written is the computation's own, checked where the call is read)
for _name, _fill, _params in (("new_zeros", 0.0, {"shape": REQUIRED}), ("new_ones", 1.0, {"shape": REQUIRED}),
                              ("new_full", None, {"shape": REQUIRED, "fill_value": REQUIRED})):
    register(Op(_name, (lambda fill: lambda xp, x, shape, fill_value=fill, dtype=None:
                        xp.full(_shape_param(shape), _fill_value(fill_value), dtype=x.dtype))(_fill),
                (lambda fill: lambda x, shape, fill_value=fill, dtype=None: _filled_shape(shape, fill_value, dtype))(_fill),
                NOT_DIFFERENTIABLE, params=_params, finite_closed=True,
                doc=f"PyTorch's x.{_name}(sizes{', fill_value' if _fill is None else ''}): a new array of those sizes "
                    "(no gradient passes to x)"))


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
            params={"num": 50, "endpoint": True, "axis": 0},
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
            params={"k": 0, "indexing": "xy", "sparse": False, "copy": True, "flatten": True},
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

# np.isclose / np.allclose (also torch's and jnp's, with the same defaults): |a - b| <= atol + rtol |b|
_CLOSE = {"rtol": 1e-05, "atol": 1e-08, "equal_nan": False}


def _isclose(xp, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return xp.astype(xp.isclose(a, b, rtol=rtol, atol=atol, equal_nan=bool(equal_nan)), xp.result_type(a, b))


def _allclose(xp, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return xp.asarray(float(bool(xp.all(xp.isclose(a, b, rtol=rtol, atol=atol, equal_nan=bool(equal_nan))))),
                      dtype=xp.result_type(a, b))


def _close_shape(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    for name, value in (("rtol", rtol), ("atol", atol)):
        if isinstance(value, (bool, str, tuple, list)) or np.ndim(value) != 0 or not np.isfinite(value):
            raise ShapeError(f"'{name}' must be a finite number, not {value!r}")
    if np.ndim(equal_nan) != 0 or isinstance(equal_nan, str):
        raise ShapeError(f"'equal_nan' must be True or False, not {equal_nan!r}")
    return broadcast_shapes(a, b)


register(Op("isclose", _isclose, _close_shape, NOT_DIFFERENTIABLE * 2, args=("a", "b"),
            params=dict(_CLOSE), elementwise=True, boolean=True, finite_closed=True,
            doc="1 where |a - b| <= atol + rtol |b| (or a == b), else 0"))
register(Op("allclose", _allclose, lambda a, b, **params: (_close_shape(a, b, **params), ())[1], NOT_DIFFERENTIABLE * 2,
            args=("a", "b"), params=dict(_CLOSE), boolean=True, finite_closed=True,
            doc="1 where isclose(a, b) holds for every element, else 0"))


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


def _slice_scatter_index(shape, axis=0, start=None, end=None, step=1):
    axis = _axis(len(shape), axis, "dim")
    if _int(step, "step") < 1:
        raise ShapeError(f"step must be positive, not {step}")
    for bound, what in ((start, "start"), (end, "end")):
        if bound is not None:
            _int(bound, what)
    return _along(axis, (start, end, step))


# (the block's place does not depend on src's shape, which _replaced checks against it)
_replaced(lambda x_shape, src_shape, **p: _select_index(x_shape, **p),
          "torch.select_scatter(x, src, dim, index): x with x.select(dim, index) replaced by src",
          "select_scatter", {"axis": REQUIRED, "index": REQUIRED})
_replaced(lambda x_shape, src_shape, **p: _slice_scatter_index(x_shape, **p),
          "torch.slice_scatter(x, src, dim=0, start=None, end=None, step=1)",
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
    moved = G.transpose(g, axes=inverse_permutation(_unfold_perm(x.ndim, axis)))
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
