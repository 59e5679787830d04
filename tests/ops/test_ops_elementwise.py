"""The elementwise, special-function and neural-network ops: each forward against NumPy/SciPy,
its gradient and second derivative against float64 finite differences, a float32 run; then
the conventions at kinks and special points, and how pasted spellings are read."""
import math

import numpy as np
import pytest
import scipy.special as sp

from gradcli import api
from gradcli.errors import GradcliError

from gradcheck import check_op_case


def u(lo, hi, shape=(2, 3)):
    return lambda rng: rng.uniform(lo, hi, shape)


def normal(shape=(2, 3)):
    return lambda rng: rng.standard_normal(shape)


def away(lo=0.3, hi=2.0, shape=(2, 3)):  # |x| in [lo, hi], either sign
    return lambda rng: rng.choice([-1.0, 1.0], shape) * rng.uniform(lo, hi, shape)


def tf_gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def softmax_ce(z, x):
    x = x - x.max(axis=-1, keepdims=True)
    return -(z * (x - np.log(np.exp(x).sum(axis=-1, keepdims=True)))).sum(axis=-1)


SELU = (1.6732632423543772848170429916717, 1.0507009873554804934193349852946)

# (program, differentiated inputs, reference, options)
CASES = [
    # trigonometric, hyperbolic
    ("y = arcsin(x)", {"x": u(-0.9, 0.9)}, lambda x: np.arcsin(x), {}),
    ("y = asin(x)", {"x": u(-0.9, 0.9, (3,))}, lambda x: np.arcsin(x), {}),
    ("y = arccos(x)", {"x": u(-0.9, 0.9)}, lambda x: np.arccos(x), {}),
    ("y = acos(x)", {"x": u(-0.9, 0.9, (3,))}, lambda x: np.arccos(x), {}),
    ("y = arctan(x)", {"x": normal()}, lambda x: np.arctan(x), {}),
    ("y = atan(x)", {"x": normal((3,))}, lambda x: np.arctan(x), {}),
    ("y = arctan2(a, b)", {"a": normal((2, 3)), "b": away(shape=(3,))}, lambda a, b: np.arctan2(a, b), {}),
    ("y = atan2(a, b)", {"a": away(shape=(3,)), "b": normal((3,))}, lambda a, b: np.arctan2(a, b), {}),
    ("y = sinh(x)", {"x": normal()}, lambda x: np.sinh(x), {}),
    ("y = cosh(x)", {"x": normal()}, lambda x: np.cosh(x), {}),
    ("y = arcsinh(x)", {"x": u(-3, 3)}, lambda x: np.arcsinh(x), {}),
    ("y = asinh(x)", {"x": u(-3, 3, (3,))}, lambda x: np.arcsinh(x), {}),
    ("y = arccosh(x)", {"x": u(1.2, 4.0)}, lambda x: np.arccosh(x), {}),
    ("y = acosh(x)", {"x": u(1.2, 4.0, (3,))}, lambda x: np.arccosh(x), {}),
    ("y = arctanh(x)", {"x": u(-0.8, 0.8)}, lambda x: np.arctanh(x), {}),
    ("y = atanh(x)", {"x": u(-0.8, 0.8, (3,))}, lambda x: np.arctanh(x), {}),
    ("y = hypot(a, b)", {"a": away(), "b": normal((3,))}, lambda a, b: np.hypot(a, b), {}),
    ("y = deg2rad(x) + radians(x)", {"x": u(-200, 200)}, lambda x: 2 * np.deg2rad(x), {}),
    ("y = rad2deg(x) + degrees(x)", {"x": normal()}, lambda x: 2 * np.rad2deg(x), {}),
    ("y = sinc(x)", {"x": u(-3, 3, (6,))}, lambda x: np.sinc(x), {}),
    ("y = sinc(x)", {"x": u(-0.45, 0.45, (5,))}, lambda x: np.sinc(x), {}),
    ("y = sinc_derivative(x, order=3)", {"x": u(-2, 2, (6,))}, None, {"float32": False}),
    # exponential, logarithmic, powers
    ("y = exp2(x)", {"x": normal()}, lambda x: np.exp2(x), {}),
    ("y = log2(x)", {"x": u(0.3, 4)}, lambda x: np.log2(x), {}),
    ("y = log10(x)", {"x": u(0.3, 4)}, lambda x: np.log10(x), {}),
    ("y = logaddexp(a, b)", {"a": normal((2, 3)), "b": normal((3,))}, lambda a, b: np.logaddexp(a, b), {}),
    ("y = logaddexp2(a, b)", {"a": normal((3,)), "b": normal((2, 3))}, lambda a, b: np.logaddexp2(a, b), {}),
    ("y = reciprocal(x)", {"x": away()}, lambda x: 1 / x, {}),
    ("y = rsqrt(x)", {"x": u(0.3, 3)}, lambda x: 1 / np.sqrt(x), {}),
    ("y = cbrt(x)", {"x": away()}, lambda x: np.cbrt(x), {}),
    ("y = squared_difference(a, b)", {"a": normal((2, 3)), "b": normal((3,))}, lambda a, b: (a - b) ** 2, {}),
    ("y = float_power(a, b)", {"a": u(0.5, 2), "b": normal()}, lambda a, b: np.float_power(a, b), {}),
    ("y = true_divide(a, b)", {"a": normal(), "b": away()}, lambda a, b: np.true_divide(a, b), {}),
    # signs and selections
    ("y = fabs(x)", {"x": away()}, lambda x: np.fabs(x), {}),
    ("y = fmod(a, b)", {"a": u(-5, 5), "b": u(0.7, 1.3, (3,))}, lambda a, b: np.fmod(a, b), {}),
    ("y = copysign(a, b)", {"a": away()}, lambda a, b: np.copysign(a, b), {"fixed": {"b": away(shape=(3,))}}),
    ("y = heaviside(x, h)", {"h": normal((3,))}, lambda x, h: np.heaviside(x, h),
     {"fixed": {"x": lambda rng: np.array([[-1.0, 0.0, 2.0], [0.0, 0.0, -3.0]])}}),
    ("y = nextafter(a, b)", {"a": normal()}, lambda a, b: np.nextafter(a, b), {"fixed": {"b": normal()}}),
    ("y = fmax(a, b)", {"a": normal((2, 3)), "b": normal((3,))}, lambda a, b: np.fmax(a, b), {}),
    ("y = fmin(a, b)", {"a": normal((2, 3)), "b": normal((3,))}, lambda a, b: np.fmin(a, b), {}),
    ("y = real(x) + conj(x) + conjugate(x) + real_if_close(x)", {"x": normal()}, lambda x: 4 * x, {}),
    ("y = nan_to_num(x)", {"x": normal()}, lambda x: np.nan_to_num(x), {}),
    ("y = xdivy(a, b)", {"a": normal(), "b": away()}, lambda a, b: a / b, {}),
    ("y = multiply_no_nan(a, b)", {"a": normal(), "b": normal()}, lambda a, b: a * b, {}),
    ("y = divide_no_nan(a, b)", {"a": normal(), "b": away()}, lambda a, b: a / b, {}),
    # SciPy's special functions
    ("y = erf(x)", {"x": normal()}, lambda x: sp.erf(x), {}),
    ("y = erfc(x)", {"x": normal()}, lambda x: sp.erfc(x), {}),
    ("y = erfinv(x)", {"x": u(-0.9, 0.9)}, lambda x: sp.erfinv(x), {}),
    ("y = erfcinv(x)", {"x": u(0.1, 1.9)}, lambda x: sp.erfcinv(x), {}),
    ("y = erfcx(x)", {"x": u(-1, 3)}, lambda x: sp.erfcx(x), {}),
    ("y = ndtr(x)", {"x": normal()}, lambda x: sp.ndtr(x), {}),
    ("y = log_ndtr(x)", {"x": u(-6, 3)}, lambda x: sp.log_ndtr(x), {}),
    ("y = ndtri(x)", {"x": u(0.05, 0.95)}, lambda x: sp.ndtri(x), {}),
    ("y = logit(x)", {"x": u(0.1, 0.9)}, lambda x: sp.logit(x), {}),
    ("y = entr(x)", {"x": u(0.2, 3)}, lambda x: sp.entr(x), {}),
    ("y = gammaln(x) + lgamma(x)", {"x": u(0.3, 5)}, lambda x: 2 * sp.gammaln(x), {}),
    ("y = gammaln(x)", {"x": u(-2.9, -2.1, (3,))}, lambda x: sp.gammaln(x), {}),
    ("y = digamma(x) + psi(x)", {"x": u(0.5, 5)}, lambda x: 2 * sp.digamma(x), {}),
    ("y = polygamma(2, x)", {"x": u(0.5, 4)}, lambda x: sp.polygamma(2, x), {}),
    ("y = gamma(x)", {"x": u(0.5, 3)}, lambda x: sp.gamma(x), {}),
    ("y = rgamma(x)", {"x": u(0.5, 3)}, lambda x: sp.rgamma(x), {}),
    ("y = beta(a, b)", {"a": u(0.5, 3), "b": u(0.5, 3, (3,))}, lambda a, b: sp.beta(a, b), {}),
    ("y = betaln(a, b)", {"a": u(0.5, 3), "b": u(0.5, 3, (3,))}, lambda a, b: sp.betaln(a, b), {}),
    ("y = gammainc(a, x)", {"x": u(0.2, 4)}, lambda a, x: sp.gammainc(a, x), {"fixed": {"a": u(0.5, 3)}}),
    ("y = gammaincc(a, x)", {"x": u(0.2, 4)}, lambda a, x: sp.gammaincc(a, x), {"fixed": {"a": u(0.5, 3)}}),
    ("y = betainc(a, b, x)", {"x": u(0.1, 0.9)}, lambda a, b, x: sp.betainc(a, b, x),
     {"fixed": {"a": u(0.5, 3), "b": u(0.5, 3)}}),
    ("y = multigammaln(x, d=3)", {"x": u(1.5, 4)}, lambda x: np.vectorize(lambda v: sp.multigammaln(v, 3))(x), {}),
    ("y = xlogy(a, b)", {"a": normal(), "b": u(0.3, 3)}, lambda a, b: sp.xlogy(a, b), {}),
    ("y = xlog1py(a, b)", {"a": normal(), "b": u(-0.7, 3)}, lambda a, b: sp.xlog1py(a, b), {}),
    ("y = rel_entr(a, b)", {"a": u(0.2, 3), "b": u(0.3, 3)}, lambda a, b: sp.rel_entr(a, b), {}),
    ("y = kl_div_elementwise(a, b) + scipy.special.kl_div(b, a)", {"a": u(0.2, 3), "b": u(0.3, 3)},
     lambda a, b: sp.kl_div(a, b) + sp.kl_div(b, a), {}),
    ("y = i0(x) + bessel_i0(x)", {"x": u(-3, 3)}, lambda x: 2 * sp.i0(x), {}),
    ("y = i0e(x) + bessel_i0e(x)", {"x": away()}, lambda x: 2 * sp.i0e(x), {}),
    ("y = i1(x) + bessel_i1(x)", {"x": u(-3, 3)}, lambda x: 2 * sp.i1(x), {}),
    ("y = i1e(x) + bessel_i1e(x)", {"x": away()}, lambda x: 2 * sp.i1e(x), {}),
    ("y = iv(1.5, x)", {"x": u(0.3, 3)}, lambda x: sp.iv(1.5, x), {}),
    ("y = ive(2, x)", {"x": away()}, lambda x: sp.ive(2, x), {}),
    ("y = j0(x) + j1(x)", {"x": u(-5, 5)}, lambda x: sp.j0(x) + sp.j1(x), {}),
    ("y = jv(2.5, x) + jn(1, x)", {"x": u(0.3, 5)}, lambda x: sp.jv(2.5, x) + sp.jv(1, x), {}),
    ("y = y0(x) + y1(x)", {"x": u(0.5, 5)}, lambda x: sp.y0(x) + sp.y1(x), {}),
    ("y = yv(1.5, x) + yn(2, x)", {"x": u(0.5, 5)}, lambda x: sp.yv(1.5, x) + sp.yn(2, x), {}),
    ("y = k0(x) + k1(x) + bessel_k0e(x) + bessel_k1e(x)", {"x": u(0.3, 3)},
     lambda x: sp.k0(x) + sp.k1(x) + sp.k0e(x) + sp.k1e(x), {}),
    ("y = dawsn(x)", {"x": u(-3, 3)}, lambda x: sp.dawsn(x), {}),
    ("y = expi(x) + expint(x)", {"x": u(0.3, 3)}, lambda x: 2 * sp.expi(x), {}),
    ("y = spence(x)", {"x": u(0.2, 3)}, lambda x: sp.spence(x), {}),
    ("y = fresnel_sin(x) + 2 * fresnel_cos(x)", {"x": u(-2, 2)}, lambda x: sp.fresnel(x)[0] + 2 * sp.fresnel(x)[1], {}),
    ("y = zeta(x, q)", {"q": u(0.5, 3)}, lambda x, q: sp.zeta(x, q), {"fixed": {"x": u(1.5, 4)}}),
    ("y = poch(z, m)", {"z": u(0.5, 3), "m": u(0.5, 2)}, lambda z, m: sp.poch(z, m), {}),
    ("y = reciprocal_no_nan(x)", {"x": away()}, lambda x: 1 / x, {}),
    # neural-network activations and losses
    ("y = relu6(x)", {"x": lambda rng: rng.choice([-1.0, 1.0, 5.5, 7.0], (2, 3)) + rng.uniform(-0.4, 0.4, (2, 3))},
     lambda x: np.clip(x, 0, 6), {}),
    ("y = elu(x)", {"x": away()}, lambda x: np.where(x > 0, x, np.expm1(x)), {}),
    ("y = elu(x, alpha=0.5)", {"x": away()}, lambda x: np.where(x > 0, x, 0.5 * np.expm1(x)), {}),
    ("y = selu(x)", {"x": away()}, lambda x: SELU[1] * np.where(x > 0, x, SELU[0] * np.expm1(x)), {}),
    ("y = celu(x, alpha=2.0)", {"x": away()}, lambda x: np.where(x > 0, x, 2.0 * np.expm1(x / 2.0)), {}),
    ("y = gelu(x, approximate=False)", {"x": normal()}, lambda x: x * sp.ndtr(x), {}),
    ("y = gelu(x, approximate=True)", {"x": normal()}, tf_gelu_tanh, {}),
    ("y = leaky_relu(x, 0.1)", {"x": away()}, lambda x: np.where(x > 0, x, 0.1 * x), {}),
    ("y = silu(x) + swish(x)", {"x": normal()}, lambda x: 2 * x * sp.expit(x), {}),
    ("y = silu(x, beta=1.5)", {"x": normal()}, lambda x: x * sp.expit(1.5 * x), {}),
    ("y = softsign(x)", {"x": away()}, lambda x: x / (1 + np.abs(x)), {}),
    ("y = mish(x)", {"x": normal()}, lambda x: x * np.tanh(np.logaddexp(0, x)), {}),
    ("y = jax.nn.hard_sigmoid(x)", {"x": u(-2.5, 2.5)}, lambda x: np.clip(x + 3, 0, 6) / 6, {}),
    ("y = hard_silu(x) + hard_swish(x)", {"x": u(-2.5, 2.5)}, lambda x: 2 * x * np.clip(x + 3, 0, 6) / 6, {}),
    ("y = hard_tanh(x)", {"x": away(0.3, 0.8) }, lambda x: np.clip(x, -1, 1), {}),
    ("y = squareplus(x)", {"x": normal()}, lambda x: (x + np.sqrt(x * x + 4)) / 2, {}),
    ("y = sparse_plus(x)", {"x": u(-0.9, 0.9)}, lambda x: (x + 1) ** 2 / 4, {}),
    ("y = sparse_sigmoid(x)", {"x": lambda rng: rng.choice([-1.5, 0.0, 1.5], (2, 3)) + rng.uniform(-0.4, 0.4, (2, 3))},
     lambda x: np.clip((x + 1) / 2, 0, 1), {}),
    ("y = log_cosh(x)", {"x": u(-25, 25, (8,))}, lambda x: np.log(np.cosh(x)), {"forward_rtol": 1e-13}),
    ("y = huber(r, delta=0.5)", {"r": away(0.1, 1.0, (6,))}, lambda r: np.where(abs(r) <= 0.5, r * r / 2, 0.5 * (abs(r) - 0.25)), {}),
    ("y = huber_loss(p, t)", {"p": normal((4,)), "t": normal((4,))},
     lambda p, t: sp.huber(1.0, p - t), {}),
    ("y = sigmoid_cross_entropy_with_logits(labels=z, logits=x)", {"z": u(0, 1), "x": normal()},
     lambda z, x: np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x))), {}),
    ("y = softmax_cross_entropy_with_logits(labels=z, logits=x)", {"z": u(0, 1), "x": normal()}, softmax_ce, {}),
    ("y = l2_loss(t)", {"t": normal()}, lambda t: np.sum(t * t) / 2, {}),
    ("y = bias_add(v, b)", {"v": normal((2, 3)), "b": normal((3,))}, lambda v, b: v + b, {}),
]


@pytest.mark.parametrize("program,inputs,reference,options", CASES, ids=[c[0] for c in CASES])
def test_op(program, inputs, reference, options):
    rng = np.random.default_rng(sum(map(ord, program)))
    if reference is None:  # no library has it: the forward is checked by its own test
        reference = lambda **feeds: api.evaluate(program, feeds=feeds).outputs["y"]  # noqa: E731
    check_op_case(program, inputs, reference, rng, **options)


def test_sinc_derivatives_are_exact_at_zero_and_continuous_near_it():
    x = np.array([0.0, 1e-9, 0.49999, 0.50001, 2.0])
    h = api.hessian("y = sum(sinc(x))", wrt=["x"], feeds={"x": x}).hessians["x"]
    # sinc''(x) from its Maclaurin series at 0, and from the closed form elsewhere
    pi = math.pi
    closed = lambda t: ((2 - (pi * t) ** 2) * np.sin(pi * t) - 2 * pi * t * np.cos(pi * t)) / (pi * t ** 3)  # noqa: E731
    want = np.array([-pi ** 2 / 3, -pi ** 2 / 3] + [closed(t) for t in x[2:]])
    np.testing.assert_allclose(np.diag(h), want, rtol=1e-9, atol=1e-12)
    assert api.grad("y = sinc(x)", wrt=["x"], feeds={"x": 0.0}).gradients["x"] == 0.0
    third = api.evaluate("y = sinc_derivative(x, order=3)", feeds={"x": [0.0, 0.2]}).outputs["y"]
    t = 0.2
    np.testing.assert_allclose(third[0], 0.0, atol=1e-15)
    step = 1e-4
    np.testing.assert_allclose(third[1], (closed(t + step) - closed(t - step)) / (2 * step), rtol=1e-6)


def test_tensorflow_guarded_arithmetic_follows_tensorflow():
    # tf.math.multiply_no_nan's documented example; its gradient as TensorFlow's tests give it
    r = api.grad("y = multiply_no_nan(x, w)", wrt=["x", "w"],
                 feeds={"x": [5.0, np.inf, np.nan, 0.0, 1.0], "w": [-6.0, 0.0, 0.0, 0.0, 0.0]})
    np.testing.assert_array_equal(r.outputs["y"], [-30.0, 0.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(r.gradients["x"], [-6.0, 0.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(r.gradients["w"], [5.0, np.inf, np.nan, 0.0, 1.0])
    r = api.grad("y = xdivy(x, w)", wrt=["x", "w"], feeds={"x": [0.0, 0.1, 0.0], "w": [0.0, 0.0, 3.1]})
    np.testing.assert_array_equal(r.outputs["y"], [0.0, np.inf, 0.0])
    np.testing.assert_array_equal(r.gradients["x"], [0.0, np.inf, 0.0])
    np.testing.assert_array_equal(r.gradients["w"], [0.0, -np.inf, 0.0])
    r = api.grad("y = xlogy(x, w) + xlog1py(x, w - 1)", wrt=["x", "w"], feeds={"x": 0.0, "w": 0.0})
    assert (r.outputs["y"], r.gradients["x"], r.gradients["w"]) == (0.0, 0.0, 0.0)
    r = api.grad("y = divide_no_nan(x, w)", wrt=["x", "w"], feeds={"x": [1.0, 2.0], "w": [0.0, 4.0]})
    np.testing.assert_array_equal(r.outputs["y"], [0.0, 0.5])
    np.testing.assert_array_equal(r.gradients["x"], [0.0, 0.25])
    np.testing.assert_array_equal(r.gradients["w"], [0.0, -0.125])


def test_conventions_at_kinks_and_ties():
    def grad(program, **feeds):
        return api.grad(program, wrt=["x"], feeds=feeds).gradients["x"]
    np.testing.assert_array_equal(grad("y = relu6(x)", x=[0.0, 6.0, 3.0]), [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(grad("y = leaky_relu(x, alpha=0.1)", x=[0.0, -1.0]), [0.1, 0.1])
    np.testing.assert_array_equal(grad("y = elu(x, alpha=2.0)", x=[0.0, 1.0]), [2.0, 1.0])
    np.testing.assert_array_equal(grad("y = fabs(x)", x=[0.0, -2.0]), [0.0, -1.0])
    np.testing.assert_array_equal(grad("y = fmax(x, w)", x=[1.0, np.nan, 2.0, 1.0], w=[np.nan, 1.0, 1.0, 1.0]),
                                  [1.0, 0.0, 1.0, 0.5])
    np.testing.assert_array_equal(grad("y = fmin(x, w)", x=[1.0, np.nan, 0.0], w=[np.nan, 1.0, 1.0]),
                                  [1.0, 0.0, 1.0])
    # i0e has a kink at 0 (slopes -1 and 1): 0 there, as JAX
    assert grad("y = i0e(x)", x=0.0) == 0.0
    np.testing.assert_allclose(grad("y = i1e(x)", x=0.0), 0.5, rtol=1e-15)
    assert grad("y = heaviside(w, x)", w=[0.0], x=[0.3])[0] == 1.0
    assert grad("y = trunc(x) + fix(x)", x=[1.5]) is None


def test_library_defaults_follow_the_spelling_or_are_refused():
    def value(program, x=-2.0):
        return float(api.evaluate(program, feeds={"x": x}).outputs["y"])
    assert value("y = tf.nn.leaky_relu(x)") == pytest.approx(-0.4)
    assert value("y = jax.nn.leaky_relu(x)") == pytest.approx(-0.02)
    assert value("y = jax.nn.leaky_relu(x, negative_slope=0.3)") == pytest.approx(-0.6)
    assert value("y = jax.nn.gelu(x)", 0.7) == pytest.approx(tf_gelu_tanh(0.7), rel=1e-15)
    assert value("y = tf.nn.gelu(x)", 0.7) == pytest.approx(0.7 * sp.ndtr(0.7), rel=1e-15)
    for program, words in (("y = leaky_relu(x)", "0.2, JAX and PyTorch to 0.01"),
                           ("y = nn.leaky_relu(x)", "write leaky_relu(x, alpha=...)"),
                           ("y = nn.gelu(x)", "JAX (and Flax) to the tanh approximation"),
                           ("y = tf.keras.activations.hard_sigmoid(x)", "clip(0.2 * x + 0.5, 0, 1)"),
                           ("y = tf.keras.losses.huber_loss(x, x)", "write mean(huber_loss(a, b))")):
        with pytest.raises(GradcliError, match=r"\(") as info:
            api.evaluate(program, feeds={"x": 1.0})
        assert words in str(info.value), str(info.value)
        assert info.value.pos is not None and info.value.pos.line == 1


def test_domain_errors_give_nan_with_a_diagnostic_never_a_crash():
    r = api.grad("y = arcsin(x) + gammaln(w) + logit(x)", wrt=["x"], feeds={"x": [2.0, 0.5], "w": [1.0, 2.0]})
    assert np.isnan(r.outputs["y"][0]) and np.isfinite(r.outputs["y"][1])
    assert any(d.kind == "invalid" for d in r.diagnostics)
    r = api.evaluate("y = gamma(x) + polygamma(1.5, x) + multigammaln(x, d=4)", feeds={"x": [1.0]})
    assert np.isnan(r.outputs["y"][0]) and r.diagnostics


def test_static_parameters_take_numbers_and_refuse_lists():
    r = api.evaluate("y = elu(x, alpha=0.25) + huber(x, delta=1.5) + squareplus(x, b=2)", feeds={"x": -1.0})
    np.testing.assert_allclose(r.outputs["y"], 0.25 * np.expm1(-1.0) + 0.5 + (-1 + np.sqrt(3)) / 2, rtol=1e-15)
    with pytest.raises(GradcliError, match="alpha must be one number, not a list"):
        api.evaluate("y = elu(x, alpha=[1, 2])", feeds={"x": 1.0})
    with pytest.raises(GradcliError, match="'alpha' must be a number"):
        api.evaluate("y = elu(x, alpha=nan)", feeds={"x": 1.0})
    with pytest.raises(GradcliError, match="order must be a non-negative integer"):
        api.evaluate("y = sinc_derivative(x, order=1.5)", feeds={"x": 1.0})


def test_a_program_needing_scipy_without_it_is_refused_at_its_place(monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "scipy" else real(name, *a))
    with pytest.raises(GradcliError, match="erf: this function needs SciPy") as info:
        api.evaluate("z = x * 2\ny = erf(z)", feeds={"x": 1.0})
    assert (info.value.pos.line, info.value.pos.column) == (2, 5)
    assert api.evaluate("y = gelu(x, approximate=True)", feeds={"x": 1.0}).outputs["y"] > 0


def test_importing_gradcli_does_not_import_scipy():
    import subprocess
    import sys
    code = "import sys, gradcli; gradcli.grad('y = arcsin(x)', wrt=['x'], feeds={'x': 0.5}); print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_bias_add_and_cross_entropy_shapes():
    v = np.arange(24.0).reshape(2, 3, 4)
    b = np.array([1.0, 2.0, 3.0, 4.0])
    r = api.grad("y = bias_add(v, b)", wrt=["b"], feeds={"v": v, "b": b})
    np.testing.assert_array_equal(r.gradients["b"], [6.0] * 4)
    with pytest.raises(GradcliError, match="the bias must be 1-D with 4 elements"):
        api.evaluate("y = bias_add(v, b)", feeds={"v": v, "b": [1.0, 2.0]})
    z = np.array([[0.2, 0.8], [1.0, 0.0]])
    x = np.array([[1.0, -1.0], [0.5, 3.0]])
    r = api.grad("y = softmax_cross_entropy_with_logits(labels=z, logits=x, axis=0)", wrt=["x"], feeds={"z": z, "x": x})
    np.testing.assert_allclose(r.outputs["y"], softmax_ce(z.T, x.T), rtol=1e-14)
