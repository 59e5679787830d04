"""The reductions, scans and statistics: each forward against NumPy/SciPy, its gradient and
second derivative against float64 finite differences, a float32 run; then the conventions at
ties and kinks, and how pasted spellings (NumPy's, PyTorch's, TensorFlow's defaults) are read."""
import math

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

from gradcheck import check_op_case


def normal(shape=(2, 3)):
    return lambda rng: rng.standard_normal(shape)


def u(lo, hi, shape=(2, 3)):
    return lambda rng: rng.uniform(lo, hi, shape)


def away(lo=0.3, hi=2.0, shape=(2, 3)):  # |x| in [lo, hi], either sign
    return lambda rng: rng.choice([-1.0, 1.0], shape) * rng.uniform(lo, hi, shape)


def spread(shape=(2, 3)):
    """Values at least 0.1 apart within the array (no near-ties for order statistics)."""
    def make(rng):
        n = math.prod(shape)
        return (rng.permutation(n) * 0.37 - n * 0.15 + rng.uniform(-0.05, 0.05, n)).reshape(shape)
    return make


def with_nan(shape=(2, 4), at=((0, 1), (1, 3))):
    def make(rng):
        x = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
        for i in at:
            x[i] = np.nan
        return x
    return make


def const(value):
    return lambda rng: np.asarray(value, dtype=np.float64)


def exclusive_reverse_cumsum(x):
    return np.flip(np.cumsum(np.flip(x, 0), 0), 0) - x


def linear_recurrence(b, a, reverse=False):
    b, a = np.broadcast_arrays(b, a)
    out = np.empty(b.shape)
    order = range(len(b) - 1, -1, -1) if reverse else range(len(b))
    previous = None
    for i in order:
        previous = b[i] if previous is None else b[i] + a[i] * previous
        out[i] = previous
    return out


def scatter_along(v, i, size):
    out = np.zeros(v.shape[:-1] + (size,))
    for row in range(v.shape[0]):
        np.add.at(out[row], i[row].astype(int), v[row])
    return out


def cumulative_trapezoid(y, **options):
    import scipy.integrate
    return scipy.integrate.cumulative_trapezoid(y, **options)


INDICES = const([[2, 0, 0, 3], [1, 1, 2, 0]])

# (program, differentiated inputs, reference, options)
CASES = [
    # scans
    ("y = cumsum(x)", {"x": normal()}, lambda x: np.cumsum(x), {}),
    ("y = cumsum(x, axis=1)", {"x": normal()}, lambda x: np.cumsum(x, axis=1), {}),
    ("y = cumsum(x, axis=0, exclusive=True, reverse=True)", {"x": normal((4, 2))}, exclusive_reverse_cumsum, {}),
    ("y = tf.cumsum(x)", {"x": normal((3, 2))}, lambda x: np.cumsum(x, axis=0), {}),
    ("y = cumprod(x, axis=1)", {"x": u(-1.5, 1.5, (2, 4))}, lambda x: np.cumprod(x, axis=1), {}),
    ("y = cumprod(x)", {"x": const([[0.5, 0.0, 2.0], [-1.5, 0.0, 0.0]])}, lambda x: np.cumprod(x), {}),
    ("y = cumprod(x, axis=0, exclusive=True, reverse=True)", {"x": u(-1.5, 1.5, (4,))},
     lambda x: np.append(np.flip(np.cumprod(np.flip(x)))[1:], 1.0), {}),
    ("y = tf.math.cumprod(x, exclusive=True)", {"x": u(-1.5, 1.5, (3, 2))},
     lambda x: np.concatenate([np.ones((1, 2)), np.cumprod(x, axis=0)[:-1]]), {}),
    ("y = cumlogsumexp(x)", {"x": normal((4, 2))}, lambda x: np.logaddexp.accumulate(x, axis=0), {}),
    ("y = tf.math.cumulative_logsumexp(x, axis=1, reverse=True)", {"x": normal((2, 4))},
     lambda x: np.flip(np.logaddexp.accumulate(np.flip(x, 1), axis=1), 1), {}),
    ("y = cummax(x)", {"x": spread((5, 2))}, lambda x: np.maximum.accumulate(x, axis=0), {}),
    ("y = lax.cummin(x, axis=1, reverse=True)", {"x": spread((2, 5))},
     lambda x: np.flip(np.minimum.accumulate(np.flip(x, 1), axis=1), 1), {}),
    ("y = linear_recurrence(b, a)", {"b": normal((4, 2)), "a": normal((4, 1))},
     lambda b, a: linear_recurrence(b, a), {}),
    ("y = linear_recurrence(b, a, axis=0, reverse=True)", {"b": normal((5,)), "a": normal((5,))},
     lambda b, a: linear_recurrence(b, a, reverse=True), {}),
    # moving values by constant indices
    ("y = gather_along(v, i, axis=1)", {"v": normal((2, 4))},
     lambda v, i: np.take_along_axis(v, i.astype(int), axis=1), {"fixed": {"i": INDICES}}),
    ("y = scatter_along(v, i, axis=1, size=5)", {"v": normal((2, 4))}, lambda v, i: scatter_along(v, i, 5),
     {"fixed": {"i": INDICES}}),
    # permutations
    ("y = sort(x)", {"x": spread((2, 4))}, lambda x: np.sort(x), {}),
    ("y = sort(x, axis=0)", {"x": spread((3, 2))}, lambda x: np.sort(x, axis=0), {}),
    ("y = np.sort(x, axis=None)", {"x": spread((2, 3))}, lambda x: np.sort(x, axis=None), {}),
    ("y = partition(x, 2)", {"x": spread((2, 5))}, lambda x: np.partition(x, 2), {}),
    ("y = partition(x, kth=[0, 3], axis=0)", {"x": spread((5, 2))}, lambda x: np.partition(x, [0, 3], axis=0), {}),
    # moments
    ("y = var(x)", {"x": normal()}, lambda x: np.var(x), {}),
    ("y = var(x, axis=0, ddof=1)", {"x": normal((3, 2))}, lambda x: np.var(x, axis=0, ddof=1), {}),
    ("y = np.var(x, axis=[0, 2], keepdims=True)", {"x": normal((2, 3, 2))},
     lambda x: np.var(x, axis=(0, 2), keepdims=True), {}),
    ("y = x.var(1)", {"x": normal()}, lambda x: np.var(x, axis=1), {}),
    ("y = std(x)", {"x": normal()}, lambda x: np.std(x), {}),
    ("y = std(x, axis=1, ddof=1, keepdims=True)", {"x": normal((2, 4))},
     lambda x: np.std(x, axis=1, ddof=1, keepdims=True), {}),
    ("y = x.std(axis=0)", {"x": normal((3, 2))}, lambda x: np.std(x, axis=0), {}),
    ("y = tf.math.reduce_std(x, axis=1)", {"x": normal()}, lambda x: np.std(x, axis=1), {}),
    ("y = tf.math.reduce_variance(x, 0)", {"x": normal()}, lambda x: np.var(x, axis=0), {}),
    ("y = torch.var(x)", {"x": normal()}, lambda x: np.var(x, ddof=1), {}),
    ("y = torch.std(x, dim=0, correction=0)", {"x": normal()}, lambda x: np.std(x, axis=0), {}),
    ("y = average(x, axis=0)", {"x": normal()}, lambda x: np.average(x, axis=0), {}),
    ("y = np.average(x, axis=1, weights=w)", {"x": normal(), "w": u(0.5, 2.0, (3,))},
     lambda x, w: np.average(x, axis=1, weights=w), {}),
    ("y = weighted_average(x, w)", {"x": normal(), "w": u(0.5, 2.0)}, lambda x, w: np.average(x, weights=w), {}),
    # order statistics
    ("y = median(x)", {"x": spread((3, 3))}, lambda x: np.median(x), {}),
    ("y = median(x, axis=1)", {"x": spread((2, 4))}, lambda x: np.median(x, axis=1), {}),
    ("y = np.median(x, axis=0, keepdims=True)", {"x": spread((3, 2))},
     lambda x: np.median(x, axis=0, keepdims=True), {}),
    ("y = quantile(x, 0.3)", {"x": spread((2, 4))}, lambda x: np.quantile(x, 0.3), {}),
    ("y = quantile(x, [0.25, 0.9], axis=1, keepdims=True)", {"x": spread((2, 5))},
     lambda x: np.quantile(x, [0.25, 0.9], axis=1, keepdims=True), {}),
    ("y = quantile(x, 0.4, axis=0, method='lower')", {"x": spread((4, 2))},
     lambda x: np.quantile(x, 0.4, axis=0, method="lower"), {}),
    ("y = quantile(x, 0.4, method='higher')", {"x": spread((4,))}, lambda x: np.quantile(x, 0.4, method="higher"), {}),
    ("y = quantile(x, [0.5, 0.7], method='nearest')", {"x": spread((6,))},
     lambda x: np.quantile(x, [0.5, 0.7], method="nearest"), {}),
    ("y = quantile(x, 0.3, method='midpoint')", {"x": spread((6,))},
     lambda x: np.quantile(x, 0.3, method="midpoint"), {}),
    ("y = percentile(x, 40, axis=0)", {"x": spread((4, 2))}, lambda x: np.percentile(x, 40, axis=0), {}),
    ("y = torch.quantile(x, 0.3, interpolation='lower')", {"x": spread((5,))},
     lambda x: np.quantile(x, 0.3, method="lower"), {}),
    ("y = np.percentile(x, [10, 50], method='linear')", {"x": spread((5,))},
     lambda x: np.percentile(x, [10, 50]), {}),
    # norms
    ("y = norm(x)", {"x": normal()}, lambda x: np.linalg.norm(x), {}),
    ("y = np.linalg.norm(x, axis=1)", {"x": normal()}, lambda x: np.linalg.norm(x, axis=1), {}),
    ("y = norm(x, ord=1, axis=1, keepdims=True)", {"x": away()},
     lambda x: np.linalg.norm(x, ord=1, axis=1, keepdims=True), {}),
    ("y = norm(x, np.inf)", {"x": spread((5,))}, lambda x: np.linalg.norm(x, np.inf), {}),
    ("y = norm(x, -inf, axis=0)", {"x": spread((3, 2))}, lambda x: np.linalg.norm(x, -np.inf, axis=0), {}),
    ("y = norm(x, 3, axis=0)", {"x": away(shape=(3, 2))},
     lambda x: np.linalg.norm(x, 3, axis=0), {}),
    ("y = norm(x, 0.5)", {"x": away(shape=(4,))}, lambda x: np.linalg.norm(x, 0.5), {"rtol": 1e-5}),
    ("y = norm(x, 'fro')", {"x": normal()}, lambda x: np.linalg.norm(x, "fro"), {}),
    ("y = norm(x, 1)", {"x": spread((3, 3))}, lambda x: np.linalg.norm(x, 1), {}),
    ("y = norm(x, -1, axis=(1, 0))", {"x": spread((3, 3))}, lambda x: np.linalg.norm(x, -1, axis=(1, 0)), {}),
    ("y = norm(x, inf)", {"x": spread((3, 3))}, lambda x: np.linalg.norm(x, np.inf), {}),
    ("y = norm(x, -inf, keepdims=True)", {"x": spread((3, 3))},
     lambda x: np.linalg.norm(x, -np.inf, keepdims=True), {}),
    ("y = norm(x, 'nuc')", {"x": normal((3, 2))}, lambda x: np.linalg.norm(x, "nuc"), {}),
    ("y = norm(x, 2, axis=(2, 0))", {"x": normal((3, 2, 4))}, lambda x: np.linalg.norm(x, 2, axis=(2, 0)), {}),
    ("y = matrix_norm(x, ord=-2, keepdims=True)", {"x": normal((2, 3, 3))},
     lambda x: np.linalg.norm(x, -2, axis=(-2, -1), keepdims=True), {}),
    ("y = vector_norm(x, ord=3)", {"x": away()}, lambda x: np.linalg.norm(x.reshape(-1), 3), {}),
    ("y = linalg.vector_norm(x, ord=-inf, axis=1)", {"x": spread()}, lambda x: np.min(np.abs(x), axis=1), {}),
    ("y = vector_norm(x, ord=0, axis=1)", {"x": away()}, lambda x: np.sum(x != 0, axis=1) * 1.0, {}),
    ("y = matrix_norm(x, ord=1)", {"x": spread((2, 3, 3))}, lambda x: np.linalg.norm(x, 1, axis=(-2, -1)), {}),
    ("y = matrix_norm(x)", {"x": normal((2, 2, 3))}, lambda x: np.linalg.norm(x, "fro", axis=(-2, -1)), {}),
    ("y = euclidean_norm(x, axis=1)", {"x": normal()}, lambda x: np.linalg.norm(x, axis=1), {}),
    ("y = tf.math.reduce_euclidean_norm(x)", {"x": normal()}, lambda x: np.linalg.norm(x), {}),
    ("y = tf.norm(x)", {"x": normal((2, 2, 2))}, lambda x: np.linalg.norm(x.reshape(-1)), {}),
    # differences and integrals
    ("y = diff(x)", {"x": normal((2, 4))}, lambda x: np.diff(x), {}),
    ("y = diff(x, n=2, axis=0)", {"x": normal((5, 2))}, lambda x: np.diff(x, n=2, axis=0), {}),
    ("y = gradient(f)", {"f": normal((5,))}, lambda f: np.gradient(f), {}),
    ("y = gradient(f, 0.5, axis=1, edge_order=2)", {"f": normal((2, 5))},
     lambda f: np.gradient(f, 0.5, axis=1, edge_order=2), {}),
    ("y = trapezoid(y0)", {"y0": normal((2, 4))}, lambda y0: np.trapezoid(y0), {}),
    ("y = np.trapz(y0, dx=0.5, axis=0)", {"y0": normal((4, 2))}, lambda y0: np.trapezoid(y0, dx=0.5, axis=0), {}),
    # NaN-ignoring reductions, range, unwrap
    ("y = nansum(x)", {"x": with_nan()}, lambda x: np.nansum(x), {}),
    ("y = nansum(x, axis=1, keepdims=True)", {"x": with_nan()}, lambda x: np.nansum(x, axis=1, keepdims=True), {}),
    ("y = nanmean(x, axis=1)", {"x": with_nan()}, lambda x: np.nanmean(x, axis=1), {}),
    ("y = nanmean(x)", {"x": with_nan()}, lambda x: np.nanmean(x), {}),
    ("y = nanprod(x, axis=0)", {"x": with_nan()}, lambda x: np.nanprod(x, axis=0), {}),
    ("y = nanmax(x, axis=1)", {"x": with_nan()}, lambda x: np.nanmax(x, axis=1), {}),
    ("y = nanmin(x)", {"x": with_nan()}, lambda x: np.nanmin(x), {}),
    ("y = ptp(x, axis=0)", {"x": spread((3, 2))}, lambda x: np.ptp(x, axis=0), {}),
    ("y = np.ptp(x)", {"x": spread((3, 2))}, lambda x: np.ptp(x), {}),
    ("y = nanmedian(x)", {"x": with_nan((2, 4), ((0, 1),))}, lambda x: np.nanmedian(x), {}),
    ("y = nanmedian(x, axis=1, keepdims=True)", {"x": with_nan((3, 4), ((0, 1), (2, 0), (2, 2)))},
     lambda x: np.nanmedian(x, axis=1, keepdims=True), {}),
    ("y = nanquantile(x, [0.2, 0.75], axis=0)", {"x": with_nan((4, 3), ((0, 1), (2, 1), (3, 2)))},
     lambda x: np.nanquantile(x, [0.2, 0.75], axis=0), {}),
    ("y = nanquantile(x, 0.4, method='nearest')", {"x": with_nan((2, 4))},
     lambda x: np.nanquantile(x, 0.4, method="nearest"), {}),
    ("y = nanpercentile(x, 35, axis=1, method='midpoint')", {"x": with_nan((2, 5))},
     lambda x: np.nanpercentile(x, 35, axis=1, method="midpoint"), {}),
    ("y = unwrap(p)", {"p": const([0.1, 3.0, 6.5, 0.2, -3.0, 2.5])}, lambda p: np.unwrap(p), {}),
    ("y = unwrap(p, period=4.0, axis=0)", {"p": const([[0.1, 1.0], [1.9, -1.5], [3.8, 1.5]])},
     lambda p: np.unwrap(p, period=4.0, axis=0), {}),
    # trace, cumulative integral, covariance
    ("y = trace(x)", {"x": normal((3, 4))}, lambda x: np.trace(x), {}),
    ("y = np.trace(x, offset=1)", {"x": normal((3, 3))}, lambda x: np.trace(x, offset=1), {}),
    ("y = trace(x, -1, 2, 0)", {"x": normal((3, 2, 4))}, lambda x: np.trace(x, -1, 2, 0), {}),
    # the linalg spellings trace a stack of matrices (the last two axes), np.trace axes 0 and 1
    ("y = np.linalg.trace(x)", {"x": normal((2, 3, 3))}, lambda x: np.trace(x, axis1=-2, axis2=-1), {}),
    ("y = tf.linalg.trace(x) + tf.trace(x)", {"x": normal((2, 3, 4))}, lambda x: 2 * np.trace(x, axis1=-2, axis2=-1), {}),
    ("y = np.trace(x)", {"x": normal((2, 3, 3))}, lambda x: np.trace(x), {}),
    ("y = cumulative_trapezoid(y0)", {"y0": normal((2, 4))}, lambda y0: cumulative_trapezoid(y0), {}),
    ("y = scipy.integrate.cumulative_trapezoid(y0, dx=0.5, axis=0, initial=0)", {"y0": normal((4, 2))},
     lambda y0: cumulative_trapezoid(y0, dx=0.5, axis=0, initial=0), {}),
    ("y = cov(m)", {"m": normal((3, 5))}, lambda m: np.cov(m), {}),
    ("y = np.cov(m)", {"m": normal((5,))}, lambda m: np.cov(m), {}),
    ("y = cov(m, rowvar=False, bias=True)", {"m": normal((5, 2))}, lambda m: np.cov(m, rowvar=False, bias=True), {}),
    ("y = cov(m, ddof=0)", {"m": normal((2, 4))}, lambda m: np.cov(m, ddof=0), {}),
    ("y = corrcoef(m)", {"m": normal((3, 5))}, lambda m: np.corrcoef(m), {}),
    ("y = np.corrcoef(m, rowvar=False)", {"m": normal((6, 2))}, lambda m: np.corrcoef(m, rowvar=False), {}),
    # PyTorch's tuples
    ("s, m = torch.std_mean(x, dim=1); y = s * m", {"x": normal((2, 4))},
     lambda x: np.std(x, axis=1, ddof=1) * np.mean(x, axis=1), {}),
    ("v, m = torch.var_mean(x, correction=0, keepdim=True); y = v + m", {"x": normal()},
     lambda x: np.var(x, keepdims=True) + np.mean(x, keepdims=True), {}),
    ("y = lax.top_k(x, 2)[0]", {"x": spread((2, 5))}, lambda x: -np.sort(-x, axis=-1)[..., :2], {}),
    ("v, i = torch.topk(x, 3, dim=0, largest=False); y = v * i", {"x": spread((4, 2))},
     lambda x: np.sort(x, axis=0)[:3] * np.argsort(x, axis=0)[:3], {}),
    ("y = torch.kthvalue(x, 2)[0]", {"x": spread((2, 4))}, lambda x: np.sort(x, axis=-1)[:, 1], {}),
    ("v, i = torch.kthvalue(x, 3, dim=0, keepdim=True); y = v", {"x": spread((4, 2))},
     lambda x: np.sort(x, axis=0)[2:3], {}),
    ("lo, hi = torch.aminmax(x, dim=0); y = lo * hi", {"x": spread((3, 2))},
     lambda x: x.min(axis=0) * x.max(axis=0), {}),
    # TensorFlow's segments, with constant ids
    ("y = tf.math.segment_sum(x, [0, 0, 1, 3])", {"x": normal((4, 2))},
     lambda x: np.stack([x[0] + x[1], x[2], 0 * x[0], x[3]]), {}),
    ("y = tf.math.segment_mean(x, tf.constant([0, 1, 1, 1]))", {"x": normal((4,))},
     lambda x: np.array([x[0], x[1:].mean()]), {}),
    ("y = tf.math.segment_max(x, [0, 0, 2])", {"x": spread((3, 2))},
     lambda x: np.stack([np.maximum(x[0], x[1]), 0 * x[0], x[2]]), {}),
    ("y = tf.math.segment_min(x, segment_ids=[0, 0, 0])", {"x": spread((3,))}, lambda x: np.min(x, keepdims=True), {}),
    ("y = tf.math.unsorted_segment_sum(x, [2, 0, 2], num_segments=4)", {"x": normal((3, 2))},
     lambda x: np.stack([x[1], 0 * x[0], x[0] + x[2], 0 * x[0]]), {}),
]


@pytest.mark.parametrize("program,inputs,reference,options", CASES, ids=[c[0] for c in CASES])
def test_op(program, inputs, reference, options):
    rng = np.random.default_rng(sum(map(ord, program)))
    check_op_case(program, inputs, reference, rng, **options)

def grad(program, seed=None, **feeds):
    result = api.grad(program, wrt=["x"], feeds={k: np.asarray(v, dtype=float) for k, v in feeds.items()},
                      grad_ys=None if seed is None else {"y": np.asarray(seed, dtype=float)})
    return result.outputs["y"], result.gradients["x"]


def test_sort_passes_the_gradient_through_its_stable_permutation():
    # sorted [1, 2, 3, 3] comes from x[1], x[3], x[0], x[2] (tied 3s keep their order)
    value, g = grad("y = sort(x)", seed=[10, 20, 30, 40], x=[3, 1, 3, 2])
    np.testing.assert_array_equal(value, [1, 2, 3, 3])
    np.testing.assert_array_equal(g, [30, 10, 40, 20])
    _, g = grad("y = lax.top_k(x, 2)[0]", seed=[1, 2], x=[5, 1, 5, 0])  # lower index first, as lax
    np.testing.assert_array_equal(g, [1, 0, 2, 0])


def test_order_statistics_split_the_gradient_among_ties_as_max_does():
    x = [1.0, 3.0, 3.0, 2.0]
    np.testing.assert_array_equal(grad("y = quantile(x, 1.0)", x=x)[1], grad("y = max(x)", x=x)[1])
    np.testing.assert_array_equal(grad("y = quantile(x, 1.0)", x=x)[1], [0, 0.5, 0.5, 0])
    np.testing.assert_allclose(grad("y = median(x)", x=[1.0, 1.0, 1.0])[1], [1 / 3] * 3, rtol=1e-15)
    # the two middle values 1 and 2 each take 1/2, shared by the elements equal to them
    np.testing.assert_array_equal(grad("y = median(x)", x=[2.0, 1.0, 2.0, 1.0])[1], [0.25] * 4)
    np.testing.assert_array_equal(grad("y = nanmedian(x)", x=[2.0, np.nan, 2.0, 0.0])[1], [0.5, 0, 0.5, 0])
    np.testing.assert_array_equal(grad("y = tf.math.segment_max(x, [0, 0, 0])", x=[4.0, 4.0, 1.0])[1], [0.5, 0.5, 0])
    # the running maximum takes its gradient from the first element the scan reaches
    np.testing.assert_array_equal(grad("y = cummax(x)", x=[1.0, 3.0, 3.0, 2.0])[1], [1, 3, 0, 0])


def test_norms_and_std_at_zero_give_the_subgradient_zero_not_nan():
    for program, x in (("y = norm(x)", [0.0, 0.0]), ("y = norm(x, 'fro')", [[0.0, 0.0], [0.0, 0.0]]),
                       ("y = vector_norm(x, ord=3)", [0.0, 0.0]), ("y = norm(x, 0.5)", [0.0, 0.0]),
                       ("y = euclidean_norm(x, axis=1)", [[0.0, 0.0], [3.0, 4.0]]),
                       ("y = std(x)", [2.0, 2.0]), ("y = np.std(x)", 3.5)):
        g = grad(program, x=x)[1]
        assert np.all(np.isfinite(g)), program
    np.testing.assert_array_equal(grad("y = euclidean_norm(x, axis=1)", x=[[0.0, 0.0], [3.0, 4.0]])[1],
                                  [[0, 0], [0.6, 0.8]])
    np.testing.assert_array_equal(grad("y = norm(x, 0.5)", x=[0.0, 4.0])[1], [0, 1])  # a cusp at 0: 0
    np.testing.assert_allclose(grad("y = norm(x, -1)", x=[2.0, 1.0])[1], [1 / 9, 4 / 9], rtol=1e-15)
    np.testing.assert_array_equal(grad("y = std(x, axis=0)", x=[[1.0, 2.0], [1.0, 4.0]])[1], [[0, -0.5], [0, 0.5]])


def test_var_and_std_follow_the_spelling_s_library_default():
    x = [1.0, 2.0, 4.0, 7.0]

    def value(program):
        return float(api.evaluate(program, feeds={"x": x}).outputs["y"])
    for program, ddof in (("y = var(x)", 0), ("y = np.var(x)", 0), ("y = x.var()", 0), ("y = jnp.var(x)", 0),
                          ("y = tf.math.reduce_variance(x)", 0), ("y = torch.var(x)", 1),
                          ("y = torch.var(x, unbiased=False)", 0), ("y = torch.var(x, unbiased=True)", 1),
                          ("y = torch.var(x, correction=0)", 0), ("y = torch.var(x, dim=0, keepdim=True)[0]", 1),
                          ("y = np.var(x, ddof=1)", 1), ("y = torch.var_mean(x)[0]", 1)):
        assert value(program) == pytest.approx(np.var(x, ddof=ddof), rel=1e-15), program
    for program, ddof in (("y = std(x)", 0), ("y = tf.math.reduce_std(x)", 0), ("y = torch.std(x)", 1),
                          ("y = x.std(ddof=1)", 1), ("y = torch.std_mean(x, correction=0)[0]", 0)):
        assert value(program) == pytest.approx(np.std(x, ddof=ddof), rel=1e-15), program
    for program, words in (("y = torch.var(x, unbiased=True, correction=1)", "give ddof (correction) or unbiased"),
                           ("y = np.var(x, 0, None)", "NumPy's third argument is dtype, PyTorch's unbiased"),
                           ("y = cov(x, x)", "cov([x, y])")):
        with pytest.raises(GradcliError) as info:
            api.evaluate(program, feeds={"x": x})
        assert words in str(info.value), str(info.value)


@pytest.mark.parametrize("program,words", [
    ("y = var(x, axis=2)", "var: axis 2 is out of range for an array of rank 2"),
    ("y = norm(x, ord=7, axis=(0, 1))", "ord 7 is not a matrix norm (fro, nuc, 1, -1, 2, -2, inf, -inf)"),
    ("y = norm(x, ord='abc', axis=0)", "ord 'abc' is not a vector norm"),
    ("y = norm(x, 'abc')", "ord 'abc' is not a matrix norm"),
    ("y = var(x, axis=0, ddof=2)", "ddof=2 over 2 elements leaves no degrees of freedom"),
    ("y = torch.var(x[0, 0])", "ddof=1 over 1 element leaves no degrees of freedom"),
    ("y = quantile(x, 1.5)", "q must be between 0 and 1"),
    ("y = percentile(x, 50, method='weibull')", "method 'weibull' is not one of linear"),
    ("y = sort(x, axis=2)", "axis 2 is out of range"),
    ("y = diff(x, n=-1)", "n must be a non-negative integer"),
    ("y = trace(x[0])", "trace needs an array of rank 2 or more"),
    ("y = trace(x, axis1=1, axis2=-1)", "repeats an axis"),
    ("y = cov(x, ddof=3)", "leaves no degrees of freedom"),
    ("y = tf.math.segment_sum(x, [1, 0])", "segment_ids must be sorted"),
    ("y = tf.math.segment_sum(x, [0, 0, 1])", "segment_ids has 3 entries"),
    ("y = torch.topk(x, 3)[0]", "k must be an integer from 0 to the axis length 2"),
    ("y = torch.kthvalue(x, 0)[0]", "k must be an integer from 1 to the axis length 2"),
    ("y = cumulative_trapezoid(x, initial=1)", "initial must be 0 or left out"),
])
def test_bad_arguments_are_user_errors_at_the_call(program, words):
    with pytest.raises(GradcliError) as info:
        api.evaluate("z = x * 1\n" + program, feeds={"x": np.ones((2, 2))})
    assert words in str(info.value), str(info.value)
    assert (info.value.pos.line, info.value.pos.column) == (2, 5)


def test_nan_ignoring_reductions_are_nan_only_where_every_value_is(recwarn):
    x = np.array([[np.nan, np.nan], [1.0, np.nan]])
    r = api.grad("y = nanmax(x, axis=1) + nanmean(x, axis=1) + nanmedian(x, axis=1)", wrt=["x"], feeds={"x": x})
    np.testing.assert_array_equal(r.outputs["y"], [np.nan, 3.0])
    np.testing.assert_array_equal(r.gradients["x"], [[0, 0], [3, 0]])
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]  # NumPy's are not printed


def test_explicit_axis_none_is_every_axis():
    r = api.evaluate("y = np.sort(x, axis=None) + sum(x, axis=None)", feeds={"x": [[3.0, 1.0], [2.0, 0.0]]})
    np.testing.assert_array_equal(r.outputs["y"], [6.0, 7.0, 8.0, 9.0])
