"""The op table, continued: elementwise functions (trigonometric, hyperbolic, exponential and
logarithmic families, SciPy's special functions) and neural-network activations and losses.

Where a derivative needs a function of its own (lgamma' = digamma, digamma' = polygamma,
i1' = (i0 + iv(2, x)) / 2), that function is an op too, so that the rule can be differentiated again.

SciPy is imported by a forward only, so `import gradcli` does not load it; the shape rule of a
SciPy op checks that it is installed, so a program that needs it is refused with its position.
`finite_closed` is set only where the result's magnitude cannot exceed the inputs' (the
diagnostics use it to carry bounds, not only finiteness).
"""
from __future__ import annotations

import importlib.util
import math

from gradcli.errors import ShapeError
from gradcli.ops.trace import G
from gradcli.ops.table import NO_GRADIENT, NOT_DIFFERENTIABLE, REQUIRED, UNBOUNDED, Op, register
from gradcli.ops.core import _binary, _log_softmax, _maximum_weight, _minimum_weight, _sigmoid, _unary
from gradcli.ops.shapes import _broadcast, _same, broadcast_shapes, is_numpy, on_host, reduced_shape

LN2 = math.log(2.0)
LN10 = math.log(10.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
SQRT_2PI = math.sqrt(2.0 * math.pi)


# --------------------------------------------------------------------------- SciPy, lazily

def _special(xp, name: str):
    """scipy.special.<name> for NumPy arrays; for CuPy, cupyx.scipy.special's, or SciPy's
    on a host copy where CuPy has none."""
    if is_numpy(xp):
        import scipy.special
        return getattr(scipy.special, name)
    import cupyx.scipy.special as device_special
    fn = getattr(device_special, name, None)
    if fn is not None:
        return fn
    import scipy.special
    host = getattr(scipy.special, name)
    return lambda *arrays: on_host(xp, host, *arrays)


def _needs_scipy(shape_rule):
    def rule(*shapes, **params):
        if importlib.util.find_spec("scipy") is None:
            raise ShapeError("this function needs SciPy, which is not installed (pip install scipy)")
        return shape_rule(*shapes, **params)
    return rule


def _scipy_unary(name, scipy_name, vjp, doc="", **hints):
    hints.setdefault("nonstandard", f"scipy.special's {scipy_name}")
    hints.setdefault("bound", UNBOUNDED)  # (no bound on |result| follows from the inputs')
    register(Op(name, lambda xp, x: _special(xp, scipy_name)(x), _needs_scipy(_same),
                vjp if isinstance(vjp, tuple) else (vjp,), elementwise=True, doc=doc, **hints))


def _scipy_binary(name, scipy_name, vjp, args=("x", "y"), doc="", **hints):
    hints.setdefault("nonstandard", f"scipy.special's {scipy_name}")
    hints.setdefault("bound", UNBOUNDED)
    register(Op(name, lambda xp, a, b: _special(xp, scipy_name)(a, b), _needs_scipy(_broadcast), vjp,
                args=args, elementwise=True, doc=doc, **hints))


def _on_host(xp, name: str, *arrays):
    """xp.<name>(*arrays), or NumPy's on a host copy where the namespace has none (CuPy)."""
    fn = getattr(xp, name, None)
    if fn is not None:
        return fn(*arrays)
    import numpy
    return on_host(xp, getattr(numpy, name), *arrays)


def _scalar_params(shape_rule):
    """The shape rule of an op whose parameters are single numbers (or words): a list is refused."""
    def rule(*shapes, **params):
        for name, value in params.items():
            if isinstance(value, tuple):
                raise ShapeError(f"{name} must be one number, not a list")
        return shape_rule(*shapes, **params)
    return rule


_SAME = _scalar_params(_same)
_BROADCAST = _scalar_params(_broadcast)


def _where_zero(xp, condition, value):
    """0 where `condition`, else `value` (in value's dtype)."""
    return xp.where(condition, xp.zeros((), dtype=value.dtype), value)


# --------------------------------------------------------------------------- trigonometric, hyperbolic

def _radius_one_at_origin(x, y):
    """hypot(x, y), 1 at (0, 0): there x / r and y / r are 0, the slopes PyTorch's atan2 gives."""
    return G.where(G.equal(x, 0.0) * G.equal(y, 0.0), 1.0, G.hypot(x, y))


def _inv_sqrt_one_minus_square(x):  # 1 / sqrt(1 - x^2), accurate near |x| = 1
    return 1.0 / G.sqrt((1.0 - x) * (1.0 + x))


_unary("arcsin", lambda xp, x: xp.asin(x), lambda g, ans, x: g * _inv_sqrt_one_minus_square(x),
       ufunc="arcsin", bound=UNBOUNDED)
_unary("arccos", lambda xp, x: xp.acos(x), lambda g, ans, x: -(g * _inv_sqrt_one_minus_square(x)),
       ufunc="arccos", bound=UNBOUNDED)
_unary("arctan", lambda xp, x: xp.atan(x), lambda g, ans, x: g / (1.0 + x * x),
       ufunc="arctan", finite_closed=True)
_unary("sinh", "sinh", lambda g, ans, x: g * G.cosh(x), bound=UNBOUNDED, grows=True)
_unary("cosh", "cosh", lambda g, ans, x: g * G.sinh(x), bound=UNBOUNDED, grows=True)
# 1 / sqrt(x^2 + 1) as 1 / hypot(x, 1): no overflow of x^2 for |x| > 1e154
_unary("arcsinh", lambda xp, x: xp.asinh(x), lambda g, ans, x: g / G.hypot(x, 1.0),
       ufunc="arcsinh", finite_closed=True)
_unary("arccosh", lambda xp, x: xp.acosh(x), lambda g, ans, x: g / (G.sqrt(x - 1.0) * G.sqrt(x + 1.0)),
       ufunc="arccosh", bound=UNBOUNDED)
_unary("arctanh", lambda xp, x: xp.atanh(x), lambda g, ans, x: g / ((1.0 - x) * (1.0 + x)),
       ufunc="arctanh", bound=UNBOUNDED)
_binary("arctan2", lambda xp, x, y: xp.atan2(x, y),
        (lambda g, ans, x, y: g * (y / G.hypot(x, y)) / G.hypot(x, y),
         lambda g, ans, x, y: -(g * (x / G.hypot(x, y)) / G.hypot(x, y))),
        ufunc="arctan2", doc="arctan2(x1, x2): the angle of the point (x2, x1)", bound=UNBOUNDED)
# PyTorch's atan2 masks its slopes' 1 / (x^2 + y^2) where it is infinite: slope 0 at the origin (FunctionsManual.cpp)
_binary("arctan2_zero_at_origin", lambda xp, x, y: xp.atan2(x, y),
        (lambda g, ans, x, y: g * (y / _radius_one_at_origin(x, y)) / _radius_one_at_origin(x, y),
         lambda g, ans, x, y: -(g * (x / _radius_one_at_origin(x, y)) / _radius_one_at_origin(x, y))),
        ufunc="arctan2", doc="PyTorch's atan2: arctan2 with slopes 0 at (0, 0)", bound=UNBOUNDED, public=False)
_binary("hypot", "hypot", (lambda g, ans, x, y: g * x / ans, lambda g, ans, x, y: g * y / ans),
        doc="sqrt(x^2 + y^2) without overflow; its gradient is NaN at (0, 0), where it has none", bound=UNBOUNDED)
_unary("deg2rad", "deg2rad", lambda g, ans, x: g * (math.pi / 180.0), finite_closed=True,
       nonstandard="NumPy's deg2rad")
_unary("rad2deg", "rad2deg", lambda g, ans, x: g * (180.0 / math.pi), bound=UNBOUNDED,
       nonstandard="NumPy's rad2deg")


def _sinc_derivative(xp, x, order=1):
    """The order-th derivative of sinc(x) = sin(pi x) / (pi x): the Maclaurin series for
    |x| < 1/2 (exact at 0, no cancellation), Leibniz's rule on sin(pi x) * (pi x)^-1 beyond."""
    order = int(order)
    near = xp.abs(x) < 0.5
    t = xp.where(near, x, 0.5)
    series = xp.zeros_like(x)
    for n in range((order + 1) // 2, (order + 1) // 2 + 18):  # sinc = sum (-1)^n (pi x)^2n / (2n+1)!
        power = 2 * n - order
        coefficient = (-1) ** n * math.pi ** (2 * n) / math.factorial(2 * n + 1) * math.perm(2 * n, order)
        series = series + coefficient * t ** power
    far = xp.where(near, 1.0, x)
    leibniz = xp.zeros_like(x)
    for j in range(order + 1):  # C(k, j) d^j sin(pi x) * d^(k-j) (pi x)^-1
        m = order - j
        trig = math.pi ** j * xp.sin(math.pi * far + j * math.pi / 2)
        leibniz = leibniz + math.comb(order, j) * trig * ((-1) ** m * math.factorial(m) / math.pi) / far ** (m + 1)
    return xp.astype(xp.where(near, series, leibniz), x.dtype)


_unary("sinc", lambda xp, x: xp.sinc(x), lambda g, ans, x: g * G.sinc_derivative(x, order=1),
       doc="sin(pi x) / (pi x), 1 at 0", bound=UNBOUNDED, nonstandard="NumPy's sinc")
def _order_shape(shape, order=1):
    if not isinstance(order, int) or order < 0:
        raise ShapeError(f"order must be a non-negative integer, not {order}")
    return shape


register(Op("sinc_derivative", _sinc_derivative, _order_shape,
            (lambda g, ans, x, order=1: g * G.sinc_derivative(x, order=order + 1),),
            params={"order": 1}, elementwise=True,
            doc="sinc_derivative(x, order): the order-th derivative of sinc, exact at 0", bound=UNBOUNDED))

# --------------------------------------------------------------------------- exponential, logarithmic, powers

_unary("exp2", "exp2", lambda g, ans, x: g * ans * LN2, bound=UNBOUNDED, grows=True, underflows="rounds",
       nonstandard="NumPy's exp2")
_unary("log2", "log2", lambda g, ans, x: g / (x * LN2), bound=UNBOUNDED)
_unary("log10", "log10", lambda g, ans, x: g / (x * LN10), bound=UNBOUNDED)
_binary("logaddexp", "logaddexp",
        (lambda g, ans, x, y: g * G.sigmoid(x - y), lambda g, ans, x, y: g * G.sigmoid(y - x)), bound=UNBOUNDED)
_binary("logaddexp2", "logaddexp2",
        (lambda g, ans, x, y: g * G.sigmoid((x - y) * LN2), lambda g, ans, x, y: g * G.sigmoid((y - x) * LN2)),
        bound=UNBOUNDED, nonstandard="NumPy's logaddexp2")
_unary("reciprocal", "reciprocal", lambda g, ans, x: -(g * ans * ans), bound=UNBOUNDED, grows=True)
# d x^-1/2 = -x^-3/2 / 2, as ans / x: ans^3 overflows for tiny x where the derivative does not
_unary("rsqrt", lambda xp, x: 1.0 / xp.sqrt(x), lambda g, ans, x: -(g * 0.5) * (ans / x), doc="1 / sqrt(x)",
       bound=UNBOUNDED)
_unary("cbrt", "cbrt", lambda g, ans, x: g / (3.0 * G.square(ans)), bound=UNBOUNDED, nonstandard="NumPy's cbrt")
_binary("squared_difference", lambda xp, x, y: xp.square(x - y),
        (lambda g, ans, x, y: g * (2.0 * (x - y)), lambda g, ans, x, y: -(g * (2.0 * (x - y)))),
        doc="(x - y)^2", bound=UNBOUNDED)

# --------------------------------------------------------------------------- rounding, signs, selections

_unary("fabs", "fabs", lambda g, ans, x: g * G.sign(x), finite_closed=True, nonstandard="NumPy's fabs")
_unary("trunc", "trunc", NOT_DIFFERENTIABLE, finite_closed=True)
# lax.round(x): halves away from zero (NumPy's round takes them to even). trunc(x) + sign(x) where the
# fraction is at least a half: x - trunc(x) is exact, where floor(|x| + 0.5) rounds 0.49999999999999994 up
_unary("round_half_away", lambda xp, x: xp.where(xp.abs(x - xp.trunc(x)) >= 0.5, xp.trunc(x) + xp.sign(x), xp.trunc(x)),
       NOT_DIFFERENTIABLE, finite_closed=True, public=False, doc="round to the nearest integer, halves away from zero")
_binary("fmod", "fmod", (lambda g, ans, x, y: g, lambda g, ans, x, y: -(g * G.trunc(x / y))),
        doc="C's remainder: the sign of x (mod and remainder take y's); lax.rem", bound=UNBOUNDED,
        nonstandard="NumPy's fmod")
_binary("copysign", "copysign", (lambda g, ans, x, y: g * (G.sign(x) * G.copysign(1.0, y)), NO_GRADIENT),
        finite_closed=True)
_binary("heaviside", lambda xp, x, h: xp.heaviside(x, h), (NO_GRADIENT, lambda g, ans, x, h: g * G.equal(x, 0.0)),
        doc="heaviside(x, h0): 0 below 0, h0 at 0, 1 above", bound=UNBOUNDED, nonstandard="NumPy's heaviside")
_binary("nextafter", "nextafter", (lambda g, ans, x, y: g, NO_GRADIENT),
        doc="the next number after x towards y (TensorFlow's gradient: 1 for x, none for y)", bound=UNBOUNDED)


def _fmax_weight(x, y):  # fmax ignores a NaN: x wins where y is NaN
    return _maximum_weight(x, y) + G.isnan(y)


def _fmin_weight(x, y):
    return _minimum_weight(x, y) + G.isnan(y)


_binary("fmax", "fmax", (lambda g, ans, x, y: g * _fmax_weight(x, y), lambda g, ans, x, y: g * (1.0 - _fmax_weight(x, y))),
        finite_closed=True, doc="maximum that ignores NaN", nonstandard="NumPy's fmax")
_binary("fmin", "fmin", (lambda g, ans, x, y: g * _fmin_weight(x, y), lambda g, ans, x, y: g * (1.0 - _fmin_weight(x, y))),
        finite_closed=True, doc="minimum that ignores NaN", nonstandard="NumPy's fmin")

for _name in ("isnan", "isinf", "isfinite", "signbit"):
    _unary(_name, (lambda fn: lambda xp, x: xp.astype(getattr(xp, fn)(x), x.dtype))(_name), NOT_DIFFERENTIABLE,
           bound=(0, 1))
_unary("spacing", lambda xp, x: _on_host(xp, "spacing", x), NOT_DIFFERENTIABLE,
       doc="the distance to the next representable number", bound=UNBOUNDED, nonstandard="NumPy's spacing")
# real values: the real part and the conjugate are the value, the imaginary part is 0
_unary("real", lambda xp, x: x, lambda g, ans, x: g, view=True, memory="same",
       finite_closed=True, doc="the real part: the value itself (values are real)")
_unary("imag", lambda xp, x: xp.zeros_like(x), NOT_DIFFERENTIABLE, finite_closed=True,
       doc="the imaginary part: 0 (values are real)")
register(Op("angle", lambda xp, x, deg=False: xp.arctan2(xp.zeros_like(x), x) * (180.0 / math.pi if deg else 1.0),
            _SAME, NOT_DIFFERENTIABLE, params={"deg": False}, elementwise=True,
            doc="the angle of a real number: 0, or pi below 0", bound=UNBOUNDED))
register(Op("nan_to_num",
            lambda xp, x, nan=0.0, posinf=None, neginf=None: xp.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf),
            _SAME, (lambda g, ans, x, **_: g * G.isfinite(x),),
            params={"nan": 0.0, "posinf": None, "neginf": None}, elementwise=True, finite_closed=True,
            nonstandard="NumPy's nan_to_num"))

# --------------------------------------------------------------------------- TensorFlow's guarded arithmetic

_binary("xdivy", lambda xp, x, y: _where_zero(xp, x == 0, x / xp.where(x == 0, 1, y)),
        (lambda g, ans, x, y: g * G.xdivy(G.not_equal(x, 0.0), y),
         lambda g, ans, x, y: g * G.xdivy(-x, y * y)),
        doc="x / y, and 0 where x is 0 (TensorFlow)", bound=UNBOUNDED)
_binary("multiply_no_nan", lambda xp, x, y: _where_zero(xp, y == 0, x * y),
        (lambda g, ans, x, y: G.multiply_no_nan(g, y), lambda g, ans, x, y: G.multiply_no_nan(x, g)),
        doc="x * y, and 0 where y is 0 even if x is not finite (TensorFlow)", bound=UNBOUNDED)
_binary("divide_no_nan", lambda xp, x, y: _where_zero(xp, y == 0, x / xp.where(y == 0, 1, y)),
        (lambda g, ans, x, y: G.divide_no_nan(g, y),
         lambda g, ans, x, y: g * G.divide_no_nan(G.divide_no_nan(-x, y), y)),
        doc="x / y, and 0 where y is 0 (TensorFlow)", bound=UNBOUNDED)

# --------------------------------------------------------------------------- SciPy's special functions

_scipy_unary("erf", "erf", lambda g, ans, x: g * (TWO_OVER_SQRT_PI * G.exp(-(x * x))))
_scipy_unary("erfc", "erfc", lambda g, ans, x: g * (-TWO_OVER_SQRT_PI * G.exp(-(x * x))))
_scipy_unary("erfinv", "erfinv", lambda g, ans, x: g * (SQRT_PI_OVER_2 * G.exp(ans * ans)))
_scipy_unary("erfcinv", "erfcinv", lambda g, ans, x: g * (-SQRT_PI_OVER_2 * G.exp(ans * ans)))
_scipy_unary("erfcx", "erfcx", lambda g, ans, x: g * (2.0 * x * ans - TWO_OVER_SQRT_PI),
             doc="exp(x^2) erfc(x)")
_scipy_unary("ndtr", "ndtr", lambda g, ans, x: g * (INV_SQRT_2PI * G.exp(-0.5 * (x * x))),
             doc="the standard normal CDF")
_scipy_unary("log_ndtr", "log_ndtr", lambda g, ans, x: g * (INV_SQRT_2PI * G.exp(-0.5 * (x * x) - ans)),
             doc="log of the standard normal CDF")
_scipy_unary("ndtri", "ndtri", lambda g, ans, x: g * (SQRT_2PI * G.exp(0.5 * (ans * ans))),
             doc="the inverse of the standard normal CDF")
_scipy_unary("logit", "logit", lambda g, ans, x: g / (x * (1.0 - x)), doc="log(x / (1 - x))")
_scipy_unary("entr", "entr", lambda g, ans, x: -(g * (G.log(x) + 1.0)), doc="-x log(x)")
_scipy_unary("gammaln", "gammaln", lambda g, ans, x: g * G.digamma(x), doc="log |gamma(x)|")
_scipy_unary("digamma", "digamma", lambda g, ans, x: g * G.polygamma(1.0, x))
_scipy_unary("gamma", "gamma", lambda g, ans, x: g * ans * G.digamma(x))
_scipy_unary("rgamma", "rgamma", lambda g, ans, x: -(g * ans * G.digamma(x)), doc="1 / gamma(x)")
_scipy_unary("gammasgn", "gammasgn", NOT_DIFFERENTIABLE, doc="the sign of gamma(x)")
_scipy_binary("polygamma", "polygamma", (None, lambda g, ans, n, x: g * G.polygamma(n + 1.0, x)), args=("n", "x"),
              doc="polygamma(n, x): the n-th derivative of digamma (no gradient in n)")
_scipy_binary("beta", "beta", (lambda g, ans, a, b: g * ans * (G.digamma(a) - G.digamma(a + b)),
                               lambda g, ans, a, b: g * ans * (G.digamma(b) - G.digamma(a + b))), args=("a", "b"))
_scipy_binary("betaln", "betaln", (lambda g, ans, a, b: g * (G.digamma(a) - G.digamma(a + b)),
                                   lambda g, ans, a, b: g * (G.digamma(b) - G.digamma(a + b))), args=("a", "b"))
# regularized incomplete gamma and beta functions: gradients in x only (none in a, b)
_scipy_binary("gammainc", "gammainc",
              (None, lambda g, ans, a, x: g * G.exp(G.xlogy(a - 1.0, x) - x - G.gammaln(a))), args=("a", "x"),
              doc="gammainc(a, x): the regularized lower incomplete gamma function (no gradient in a)")
_scipy_binary("gammaincc", "gammaincc",
              (None, lambda g, ans, a, x: -(g * G.exp(G.xlogy(a - 1.0, x) - x - G.gammaln(a)))), args=("a", "x"),
              doc="gammaincc(a, x): the regularized upper incomplete gamma function (no gradient in a)")
register(Op("betainc", lambda xp, a, b, x: _special(xp, "betainc")(a, b, x), _needs_scipy(_broadcast),
            (None, None, lambda g, ans, a, b, x: g * G.exp(G.xlogy(a - 1.0, x) + G.xlog1py(b - 1.0, -x) - G.betaln(a, b))),
            args=("a", "b", "x"), elementwise=True, doc="betainc(a, b, x): gradient in x only", bound=UNBOUNDED))
_scipy_binary("xlogy", "xlogy", (lambda g, ans, x, y: g * G.xlogy(G.not_equal(x, 0.0), y),
                                 lambda g, ans, x, y: g * G.xdivy(x, y)), doc="x log(y), and 0 where x is 0")
# xlogy's slope in x at x = 0 is each library's own: TensorFlow's (above) 0, JAX's log(y) (its custom
# jvp: x' log(y) + y' x / y), PyTorch's log(y) except 0 where y <= 0 too (derivatives.yaml)
_scipy_binary("xlogy_log_slope", "xlogy", (lambda g, ans, x, y: g * G.log(y), lambda g, ans, x, y: g * x / y),
              doc="JAX's xlogy: x log(y), 0 where x is 0; slopes log(y) and x / y everywhere",
              public=False)  # (a reading of xlogy, not a name of its own: tests/language/test_redteam3_xlogy.py)
_scipy_binary("xlogy_masked_slope", "xlogy",
              (lambda g, ans, x, y: G.where(G.equal(x, 0.0) * G.less_equal(y, 0.0), 0.0 * g, G.xlogy(g, y)),
               lambda g, ans, x, y: g * x / y),
              doc="PyTorch's xlogy: x log(y), 0 where x is 0; slope log(y) in x (0 where x is 0 and y <= 0), x / y in y",
              public=False)
# SciPy's divergences, elementwise: rel_entr(x, y) = x log(x / y), kl_div(x, y) = x log(x / y) - x + y
# (0 where x is 0 and y >= 0, plus y for kl_div; inf where x or y is negative, or y is 0 beside a
# positive x). PyTorch's F.kl_div of the same name is a loss with its reduction (gradcli.ops.nn).
_scipy_binary("rel_entr", "rel_entr", (lambda g, ans, x, y: g * (G.log(x / y) + 1.0),
                                       lambda g, ans, x, y: -(g * G.xdivy(x, y))),
              doc="SciPy's relative entropy x log(x / y), elementwise (0 where x is 0)")
_scipy_binary("kl_div_elementwise", "kl_div", (lambda g, ans, x, y: g * G.log(x / y),
                                                lambda g, ans, x, y: g * (1.0 - G.xdivy(x, y))),
              doc="SciPy's kl_div: x log(x / y) - x + y, elementwise (y where x is 0)")
_scipy_binary("xlog1py", "xlog1py", (lambda g, ans, x, y: g * G.xlog1py(G.not_equal(x, 0.0), y),
                                     lambda g, ans, x, y: g * G.xdivy(x, y + 1.0)),
              doc="x log1p(y), and 0 where x is 0")
# jax.scipy.special.xlog1py differentiates the formula, as its xlogy (above): log1p(y) in x also where x
# is 0 (TensorFlow masks it to 0 there), x / (1 + y) in y
_scipy_binary("xlog1py_log_slope", "xlog1py", (lambda g, ans, x, y: g * G.log1p(y),
                                               lambda g, ans, x, y: g * (x / (y + 1.0))),
              doc="x log1p(y), and 0 where x is 0; its gradient in x is log1p(y) everywhere (JAX's)", public=False)


def _multigammaln(xp, a, d):
    terms = sum(_special(xp, "gammaln")(a + (1 - j) / 2.0) for j in range(1, d + 1))
    out = terms + d * (d - 1) / 4.0 * math.log(math.pi)
    return xp.astype(xp.where(a > (d - 1) / 2.0, out, math.nan), a.dtype)  # SciPy raises there


def _multigammaln_shape(shape, d):
    if not isinstance(d, int) or d < 1:
        raise ShapeError(f"d must be a positive integer, not {d}")
    return shape


register(Op("multigammaln", _multigammaln, _needs_scipy(_multigammaln_shape),
            (lambda g, ans, a, d: g * sum((G.digamma(a + (1 - j) / 2.0) for j in range(2, d + 1)), G.digamma(a)),),
            params={"d": REQUIRED}, elementwise=True, doc="the log of the multivariate gamma function",
            bound=UNBOUNDED))

# Modified Bessel functions: d iv(v, x) = (iv(v-1, x) + iv(v+1, x)) / 2; the exponentially
# scaled ive = iv exp(-|x|) adds -sign(x) ive.
_scipy_binary("iv", "iv", (None, lambda g, ans, v, x: g * (0.5 * (G.iv(v - 1.0, x) + G.iv(v + 1.0, x)))),
              args=("v", "x"), doc="iv(v, x): the modified Bessel function of the first kind (no gradient in v)")
_scipy_binary("ive", "ive", (None, lambda g, ans, v, x: g * (0.5 * (G.ive(v - 1.0, x) + G.ive(v + 1.0, x))
                                                              - G.sign(x) * ans)),
              args=("v", "x"), doc="ive(v, x) = iv(v, x) exp(-|x|) (no gradient in v)")
_scipy_unary("i0", "i0", lambda g, ans, x: g * G.i1(x))
_scipy_unary("i1", "i1", lambda g, ans, x: g * (0.5 * (G.i0(x) + G.iv(2.0, x))))
_scipy_unary("i0e", "i0e", lambda g, ans, x: g * (G.i1e(x) - G.sign(x) * ans))
_scipy_unary("i1e", "i1e", lambda g, ans, x: g * (0.5 * (G.i0e(x) + G.ive(2.0, x)) - G.sign(x) * ans))
# Bessel functions: d jv(v, x) = (jv(v-1, x) - jv(v+1, x)) / 2, and the same for yv
_scipy_binary("jv", "jv", (None, lambda g, ans, v, x: g * (0.5 * (G.jv(v - 1.0, x) - G.jv(v + 1.0, x)))),
              args=("v", "x"), doc="jv(v, x): the Bessel function of the first kind (no gradient in v)")
_scipy_binary("yv", "yv", (None, lambda g, ans, v, x: g * (0.5 * (G.yv(v - 1.0, x) - G.yv(v + 1.0, x)))),
              args=("v", "x"), doc="yv(v, x): the Bessel function of the second kind (no gradient in v)")
_scipy_unary("j0", "j0", lambda g, ans, x: -(g * G.j1(x)))
_scipy_unary("j1", "j1", lambda g, ans, x: g * (0.5 * (G.j0(x) - G.jv(2.0, x))))
_scipy_unary("y0", "y0", lambda g, ans, x: -(g * G.y1(x)))
_scipy_unary("y1", "y1", lambda g, ans, x: g * (0.5 * (G.y0(x) - G.yv(2.0, x))))
# Modified Bessel functions of the second kind: K0' = -K1, K1' = -K0 - K1 / x; the scaled k0e = K0 e^x
# (tf.math.special.bessel_k0e) adds itself
_scipy_unary("k0", "k0", lambda g, ans, x: -(g * G.k1(x)))
_scipy_unary("k1", "k1", lambda g, ans, x: -(g * (G.k0(x) + ans / x)))
_scipy_unary("k0e", "k0e", lambda g, ans, x: g * (ans - G.k1e(x)))
_scipy_unary("k1e", "k1e", lambda g, ans, x: g * (ans - G.k0e(x) - ans / x))
# Dawson's integral D(x) = exp(-x^2) (the integral of exp(t^2) from 0 to x): D' = 1 - 2 x D
_scipy_unary("dawsn", "dawsn", lambda g, ans, x: g * (1.0 - 2.0 * x * ans), doc="Dawson's integral")
# the exponential integral Ei (tf.math.special.expint): Ei' = exp(x) / x
_scipy_unary("expi", "expi", lambda g, ans, x: g * (G.exp(x) / x), doc="the exponential integral Ei(x)")
# SciPy's Spence function, the integral of log(t) / (1 - t) from 1 to x: its slope log(x) / (1 - x), -1 at 1
_scipy_unary("spence", "spence", lambda g, ans, x: g * G.where(G.equal(x, 1.0), -1.0, G.log(x) / (1.0 - x)),
             doc="Spence's function (SciPy's), for x >= 0")


def _fresnel_part(part: int):
    return lambda xp, x: _special(xp, "fresnel")(x)[part]


# the Fresnel integrals S(x) and C(x) (scipy.special.fresnel gives both): S' = sin(pi x^2 / 2), C' = cos(pi x^2 / 2)
for _name, _part, _slope in (("fresnel_sin", 0, lambda x: G.sin((0.5 * math.pi) * (x * x))),
                             ("fresnel_cos", 1, lambda x: G.cos((0.5 * math.pi) * (x * x)))):
    register(Op(_name, _fresnel_part(_part), _needs_scipy(_same),
                (lambda g, ans, x, slope=_slope: g * slope(x),), elementwise=True, bound=UNBOUNDED,
                nonstandard="scipy.special's fresnel", doc=f"the Fresnel integral {'SC'[_part]}(x)"))
# Hurwitz's zeta(x, q) = sum of (k + q)^-x: d/dq = -x zeta(x + 1, q) (TensorFlow's); none in x
_scipy_binary("zeta", "zeta", (None, lambda g, ans, x, q: -(g * x * G.zeta(x + 1.0, q))), args=("x", "q"),
              doc="Hurwitz's zeta(x, q): gradient in q only")
# the Pochhammer symbol gamma(z + m) / gamma(z)
_scipy_binary("poch", "poch", (lambda g, ans, z, m: g * ans * (G.digamma(z + m) - G.digamma(z)),
                               lambda g, ans, z, m: g * ans * G.digamma(z + m)), args=("z", "m"),
              doc="the Pochhammer symbol gamma(z + m) / gamma(z)")
# tf.math.reciprocal_no_nan: 1 / x, and 0 where x is 0 (its gradient there too, as TensorFlow's div_no_nan)
_unary("reciprocal_no_nan", lambda xp, x: xp.where(x == 0, 0.0, 1.0 / xp.where(x == 0, 1.0, x)),
       lambda g, ans, x: -(g * ans * ans), bound=UNBOUNDED, doc="1 / x, and 0 where x is 0")


# --------------------------------------------------------------------------- neural-network activations

def _relu6_gate(x):
    return G.greater(x, 0.0) * G.less(x, 6.0)


_unary("relu6", lambda xp, x: xp.minimum(xp.maximum(x, 0), 6), lambda g, ans, x: g * _relu6_gate(x),
       finite_closed=True, doc="min(max(x, 0), 6); gradient 0 at 0 and 6")

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _elu(xp, x, alpha=1.0):
    negative = x <= 0
    return xp.where(negative, alpha * xp.expm1(xp.where(negative, x, 0)), x)


register(Op("elu", _elu, _SAME,
            (lambda g, ans, x, alpha=1.0: G.where(G.greater(x, 0.0), g, g * (ans + alpha)),),
            params={"alpha": 1.0}, elementwise=True, doc="x above 0, alpha (exp(x) - 1) below", bound=UNBOUNDED))
_unary("selu", lambda xp, x: SELU_SCALE * _elu(xp, x, SELU_ALPHA),
       lambda g, ans, x: G.where(G.greater(x, 0.0), g * SELU_SCALE, g * (ans + SELU_SCALE * SELU_ALPHA)),
       doc="scale * elu(x, alpha) with the self-normalizing constants", bound=UNBOUNDED)
# TensorFlow's SeluGrad takes the exponential branch only where the output is below 0: its slope at
# 0 is scale, where JAX's and PyTorch's is scale * alpha
_unary("selu_zero_right", lambda xp, x: SELU_SCALE * _elu(xp, x, SELU_ALPHA),
       lambda g, ans, x: G.where(G.less(x, 0.0), g * (ans + SELU_SCALE * SELU_ALPHA), g * SELU_SCALE),
       doc="selu whose slope at 0 is scale (tf.nn.selu, Keras')", bound=UNBOUNDED)
def _celu_shape(shape, alpha=1.0):
    if alpha == 0:  # PyTorch raises; jax.nn.celu gives NaN for every positive x
        raise ShapeError("alpha cannot be 0 for celu (it divides by alpha; PyTorch refuses it)")
    return _SAME(shape, alpha=alpha)


register(Op("celu", lambda xp, x, alpha=1.0: xp.where(x > 0, x, alpha * xp.expm1(xp.where(x > 0, 0, x) / alpha)),
            _celu_shape, (lambda g, ans, x, alpha=1.0: G.where(G.greater(x, 0.0), g, g * (ans / alpha + 1.0)),),
            params={"alpha": 1.0}, elementwise=True, doc="max(0, x) + min(0, alpha (exp(x / alpha) - 1))",
            bound=UNBOUNDED))


def _leaky_relu(xp, x, alpha):
    return xp.where(x > 0, x, alpha * x)


register(Op("leaky_relu", _leaky_relu, _SAME,
            (lambda g, ans, x, alpha: G.where(G.greater(x, 0.0), g, g * alpha),),
            params={"alpha": REQUIRED}, elementwise=True,
            doc="x above 0, alpha x below (gradient alpha at 0, as TensorFlow)", bound=UNBOUNDED))

_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_K = 0.044715


def _gelu_tanh(approximate) -> bool:
    if isinstance(approximate, str):
        if approximate not in ("tanh", "none"):
            raise ShapeError(f"approximate must be True, False, 'tanh' or 'none', not {approximate!r}")
        return approximate == "tanh"
    return bool(approximate)


def _gelu(xp, x, approximate):
    if _gelu_tanh(approximate):
        return 0.5 * x * (1.0 + xp.tanh(_GELU_C * (x + _GELU_K * x * x * x)))
    return x * _special(xp, "ndtr")(x)


def _gelu_vjp(g, ans, x, approximate):
    if _gelu_tanh(approximate):
        t = G.tanh(_GELU_C * (x + _GELU_K * x * x * x))
        return g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * (_GELU_C * (1.0 + 3.0 * _GELU_K * x * x)))
    return g * (G.ndtr(x) + x * (INV_SQRT_2PI * G.exp(-0.5 * (x * x))))


def _gelu_shape(shape, approximate):
    if not _gelu_tanh(approximate) and importlib.util.find_spec("scipy") is None:
        raise ShapeError("the exact gelu needs SciPy, which is not installed (pip install scipy); "
                         "approximate=True needs nothing")
    return shape


register(Op("gelu", _gelu, _scalar_params(_gelu_shape), (_gelu_vjp,), params={"approximate": REQUIRED}, elementwise=True,
            finite_closed=True,
            doc="x Phi(x), or with approximate=True its tanh approximation"))


def _silu(xp, x, beta=1.0):
    return x * _sigmoid(xp, beta * x)


def _silu_vjp(g, ans, x, beta=1.0):
    s = G.sigmoid(beta * x)
    return g * (s * (1.0 + beta * x * (1.0 - s)))


register(Op("silu", _silu, _SAME, (_silu_vjp,), params={"beta": 1.0}, elementwise=True,
            finite_closed=True, doc="x sigmoid(beta x)"))
_unary("softsign", lambda xp, x: x / (1.0 + xp.abs(x)), lambda g, ans, x: g / G.square(1.0 + G.abs(x)),
       finite_closed=True, doc="x / (1 + |x|)")


def _mish(xp, x):
    return x * xp.tanh(xp.astype(xp.logaddexp(0, x), x.dtype))


def _mish_vjp(g, ans, x):
    t = G.tanh(G.softplus(x))
    return g * (t + x * (1.0 - t * t) * G.sigmoid(x))


_unary("mish", _mish, _mish_vjp, finite_closed=True, doc="x tanh(softplus(x))")


def _hard_sigmoid(xp, x):
    return xp.minimum(xp.maximum(x + 3.0, 0), 6) / 6.0


_unary("hard_sigmoid", _hard_sigmoid, lambda g, ans, x: g * (_relu6_gate(x + 3.0) / 6.0),
       doc="relu6(x + 3) / 6 (JAX, PyTorch)", bound=UNBOUNDED,
       prints_as=lambda x: f"jax.nn.hard_sigmoid({x})")  # the bare name has two readings
_unary("hard_silu", lambda xp, x: x * _hard_sigmoid(xp, x),
       lambda g, ans, x: g * (G.hard_sigmoid(x) + x * (_relu6_gate(x + 3.0) / 6.0)),
       finite_closed=True, doc="x relu6(x + 3) / 6")
def _hard_tanh_shape(shape, min_val=-1.0, max_val=1.0):
    if not isinstance(min_val, tuple) and not isinstance(max_val, tuple) and min_val > max_val:
        raise ShapeError(f"min_val {min_val:g} is greater than max_val {max_val:g} (PyTorch refuses it)")
    return _SAME(shape, min_val=min_val, max_val=max_val)


register(Op("hard_tanh", lambda xp, x, min_val=-1.0, max_val=1.0: xp.minimum(xp.maximum(x, min_val), max_val),
            _hard_tanh_shape, (lambda g, ans, x, min_val=-1.0, max_val=1.0: g * (G.greater(x, min_val) * G.less(x, max_val)),),
            params={"min_val": -1.0, "max_val": 1.0}, elementwise=True, doc="clip(x, -1, 1)", bound=UNBOUNDED))


def _squareplus(xp, x, b=4.0):
    return 0.5 * (x + xp.sqrt(x * x + b))


register(Op("squareplus", _squareplus, _SAME,
            (lambda g, ans, x, b=4.0: g * (0.5 * (1.0 + x / G.sqrt(x * x + b))),),
            params={"b": 4.0}, elementwise=True, doc="(x + sqrt(x^2 + b)) / 2", bound=UNBOUNDED))


def _sparse_plus(xp, x):
    return xp.astype(xp.where(x <= -1.0, 0.0, xp.where(x >= 1.0, x, 0.25 * (x + 1.0) ** 2)), x.dtype)


def _sparse_sigmoid(xp, x):
    return xp.astype(xp.clip(0.5 * (x + 1.0), 0.0, 1.0), x.dtype)


_unary("sparse_plus", _sparse_plus, lambda g, ans, x: g * G.sparse_sigmoid(x),
       doc="0 below -1, (x + 1)^2 / 4 between, x above 1", bound=UNBOUNDED)
_unary("sparse_sigmoid", _sparse_sigmoid,
       lambda g, ans, x: g * (0.5 * (G.greater(x, -1.0) * G.less(x, 1.0))), finite_closed=True,
       doc="clip((x + 1) / 2, 0, 1), the derivative of sparse_plus")


def _log_cosh(xp, x):
    # log1p(2 sinh(x/2)^2) keeps its digits near 0, where log(cosh x) = x^2/2 vanishes;
    # |x| - log 2 + log1p(exp(-2|x|)) does not overflow far out
    a = xp.abs(x)
    near = a < 20.0
    s = xp.sinh(xp.where(near, x, 0.0) / 2.0)
    return xp.astype(xp.where(near, xp.log1p(2.0 * s * s), a - LN2 + xp.log1p(xp.exp(-2.0 * a))), x.dtype)


_unary("log_cosh", _log_cosh, lambda g, ans, x: g * G.tanh(x), doc="log(cosh(x))", bound=UNBOUNDED)


def _huber(xp, r, delta=1.0):
    a = xp.abs(r)
    return xp.astype(xp.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta)), r.dtype)


register(Op("huber", _huber, _SAME, (lambda g, ans, r, delta=1.0: g * G.clip(r, -delta, delta),),
            args=("r",), params={"delta": 1.0}, elementwise=True,
            doc="huber(r, delta): r^2 / 2 for |r| <= delta, delta (|r| - delta / 2) beyond", bound=UNBOUNDED))
register(Op("huber_loss", lambda xp, p, t, delta=1.0: _huber(xp, p - t, delta), _BROADCAST,
            (lambda g, ans, p, t, delta=1.0: g * G.clip(p - t, -delta, delta),
             lambda g, ans, p, t, delta=1.0: -(g * G.clip(p - t, -delta, delta))),
            args=("predictions", "targets"), params={"delta": 1.0}, elementwise=True,
            doc="huber(predictions - targets, delta), elementwise (Optax)", bound=UNBOUNDED))

# --------------------------------------------------------------------------- neural-network losses and layers


def _sigmoid_cross_entropy(xp, z, x):
    return xp.astype(xp.maximum(x, 0) - x * z + xp.log1p(xp.exp(-xp.abs(x))), xp.result_type(x, z))


register(Op("sigmoid_cross_entropy_with_logits", _sigmoid_cross_entropy, _broadcast,
            (lambda g, ans, z, x: -(g * x), lambda g, ans, z, x: g * (G.sigmoid(x) - z)),
            args=("labels", "logits"), elementwise=True,
            doc="max(x, 0) - x z + log(1 + exp(-|x|)), x the logits and z the labels", bound=UNBOUNDED))


def _softmax_ce_shape(z, x, axis=-1):
    if not isinstance(axis, int):
        raise ShapeError("axis must be one integer")
    return reduced_shape(broadcast_shapes(z, x), axis, False)


def _softmax_ce(xp, z, x, axis=-1):
    return -xp.sum(z * _log_softmax(xp, x, axis=axis), axis=axis)


def _softmax_ce_keep(g, z, x, axis):
    return G.reshape(g, shape=reduced_shape(broadcast_shapes(z.shape, x.shape), axis, True))


register(Op("softmax_cross_entropy_with_logits", _softmax_ce, _softmax_ce_shape,
            (lambda g, ans, z, x, axis=-1: -(_softmax_ce_keep(g, z, x, axis) * G.log_softmax(x, axis=axis)),
             lambda g, ans, z, x, axis=-1: _softmax_ce_keep(g, z, x, axis)
             * (G.softmax(x, axis=axis) * G.sum(z, axis=axis, keepdims=True) - z)),
            args=("labels", "logits"), params={"axis": -1},
            doc="-sum(labels * log_softmax(logits), axis)"))
register(Op("l2_loss", lambda xp, t: xp.sum(t * t) / 2, lambda shape: (), (lambda g, ans, t: g * t,),
            args=("t",), doc="sum(t^2) / 2"))


def _bias_add_axis(value, data_format):
    if data_format is None or (isinstance(data_format, str) and data_format.startswith("N")
                               and data_format.endswith("C")):
        return len(value) - 1
    if isinstance(data_format, str) and data_format.startswith("NC"):
        return 1
    raise ShapeError(f"data_format {data_format!r} is not one of NHWC, NCHW (and their 1-D and 3-D forms)")


def _bias_add_shape(value, bias, data_format=None):
    if len(value) < 2:
        raise ShapeError(f"the value must have rank 2 or more, got shape {value}")
    axis = _bias_add_axis(value, data_format)
    if len(bias) != 1 or bias[0] != value[axis]:
        raise ShapeError(f"the bias must be 1-D with {value[axis]} elements (the channels), got shape {bias}")
    return value


def _bias_add(xp, value, bias, data_format=None):
    axis = _bias_add_axis(value.shape, data_format)
    return value + xp.reshape(bias, (-1,) + (1,) * (value.ndim - 1 - axis))


register(Op("bias_add", _bias_add, _scalar_params(_bias_add_shape),
            (lambda g, ans, value, bias, data_format=None: g,
             lambda g, ans, value, bias, data_format=None: G.sum(
                 g, axis=tuple(i for i in range(g.ndim) if i != _bias_add_axis(value.shape, data_format)))),
            args=("value", "bias"), params={"data_format": None},
            doc="value + bias along the channel axis (the last, or the second with NCHW)"))
