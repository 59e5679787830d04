"""Arguments a library refuses (or reads otherwise) where NumPy's reading would give a number:
each op answers under its own name with its library's semantics, or is refused. Refusals are
checked for their exit code, message and place; the neighbouring calls the library accepts
against the library's own numbers (hard-coded from PyTorch 2.13 / JAX 0.10 / NumPy 2.4, or
NumPy itself, or the analytic formula)."""
import math

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

from cli_helpers import invoke

X = np.arange(6.0).reshape(2, 3)
V = np.arange(4.0)

# (program, message, column of the call): refused while the program is read
REFUSED = [
    ("y = torch.gather(x, 1, [[-1], [0]])", "index -1 is out of bounds for dim 1 of length 3 (PyTorch's gather takes "
     "indices 0 to 2; a negative one is not counted from the end)", 5),
    ("y = torch.index_select(x, 1, [-1])", "index -1 is out of bounds: PyTorch's index_select takes indices from 0", 5),
    ("y = x.index_select(0, [-1])", "PyTorch's index_select takes indices from 0", 5),
    ("y = tf.gather(x, [-1])", "index -1 is out of bounds: tf.gather takes indices from 0", 5),
    ("y = F.pad(x, (3, 3), mode='reflect')", "reflect padding 3 along axis 1 of length 3: PyTorch's must be less "
     "than the axis length", 5),
    ("y = F.pad(x, (4, 0), mode='circular')", "circular padding 4 along axis 1 of length 3: PyTorch wraps around "
     "at most once", 5),
    ("y = F.pad(v, (1, 1), mode='reflect')", "mode 'reflect' with 2 pad widths needs an input of rank 2 or 3 "
     "(PyTorch pads the last axis of a batch), got rank 1", 5),
    ("y = F.pad(x, (1, 1, 1, 1), mode='replicate')", "mode 'replicate' with 4 pad widths needs an input of rank "
     "3 or 4", 5),
    ("y = F.pad(x, (1, 1), mode='edge')", "mode 'edge' is not one of PyTorch's", 5),
    ("y = torch.sum(x, dim=())", "sum() with an empty dim: PyTorch reads dim=() or dim=[] as every dim", 5),
    ("y = torch.mean(x, [])", "mean() with an empty dim", 5),
    ("y = torch.linalg.vector_norm(x, dim=())", "vector_norm() with an empty dim", 5),
    ("y = F.hardtanh(x, 1.0, -1.0)", "min_val 1 is greater than max_val -1 (PyTorch refuses it)", 5),
    ("y = F.celu(x, alpha=0.0)", "alpha cannot be 0 for celu", 5),
    ("y = torch.outer(x, v)", "outer of (2, 3) and (4,): PyTorch's takes two vectors", 5),
    ("y = torch.roll(x, (1, 2), (0,))", "shifts (1, 2) and dims (0,) must have the same length", 5),
    ("y = tf.roll(x, 1, [0, 1])", "must have the same length", 5),
    ("a, b = jnp.meshgrid(x, v)", "meshgrid of an array of shape (2, 3): JAX's and PyTorch's take vectors", 8),
    ("a, b = torch.meshgrid(v, x)", "JAX's and PyTorch's take vectors", 8),
    ("a, b, c = jnp.split(v, [3, 1])", "cuts (3, 1) of an axis of length 4: JAX's split takes cuts in order "
     "from 0 to 4", 11),
    ("a, b = jnp.array_split(v, [-1])", "JAX's split takes cuts in order", 8),
    ("y = torch.logsumexp(x)", "torch.logsumexp(x, dim) needs its dim", 5),
    ("y = torch.cumsum(x)", "torch.cumsum(x, dim) needs its dim", 5),
    ("y = np.sort(x, kind='foo')", "sort kind 'foo' is not one of NumPy's", 5),
    ("y = tf.math.reduce_variance(x, ddof=1)", "tf.math.reduce_variance has no ddof", 5),
    ("y = np.round(x, 1.5)", "decimals must be an integer, not 1.5", 5),
    ("y = F.multi_margin_loss(x, [0, -100])", "target -100 is not a class index: multi_margin_loss has 3 classes", 5),
    ("y = F.cosine_similarity(x, x, 1, -1.0)", "eps must be non-negative, got -1 (PyTorch refuses it)", 5),
    ("y = torch.cdist(x, x, p=-1.0)", "p must be non-negative, got -1 (PyTorch's cdist refuses it)", 5),
    ("y = F.pdist(x, p=-1.0)", "p must be non-negative, got -1 (PyTorch's pdist refuses it)", 5),
    ("y = F.triplet_margin_loss(x, x, x, margin=0.0)", "margin must be greater than 0, got 0 (PyTorch refuses it)", 5),
    ("y = np.quantile(x, 0.3, interpolation='lower')", "np.quantile() has no argument 'interpolation'", 5),
    ("y = torch.trace(reshape(v, [1, 2, 2]))", "torch.trace takes a matrix, got shape (1, 2, 2)", 5),
    ("a, b = jnp.hsplit(x, [-1])", "cuts (-1,) of an axis of length 3: JAX's split takes cuts in order", 8),
    ("y = F.linear(x, v[0:3], 1.0)", "a weight vector with a bias takes a vector input (PyTorch refuses a batch)", 5),
]


@pytest.mark.parametrize("program,message,column", REFUSED, ids=[r[0] for r in REFUSED])
def test_arguments_the_library_refuses_are_refused(program, message, column):
    with pytest.raises(GradcliError) as info:
        api.evaluate(program, feeds={"x": X, "v": V})
    assert message in str(info.value), str(info.value)
    assert (info.value.pos.line, info.value.pos.column) == (1, column)


def test_a_torch_method_without_dim_is_refused_at_its_place():
    with pytest.raises(GradcliError, match="needs its dim") as info:
        api.evaluate("import torch\ndef f(x):\n    return x.logsumexp()\n", feeds={"x": X})
    assert (info.value.pos.line, info.value.pos.column) == (3, 12)


def test_the_command_line_exits_2_with_the_rule_and_its_place():
    result = invoke("eval", "-e", "y = torch.gather(x, 1, [[-1], [0]])", "--set", "x=[[0, 1, 2], [3, 4, 5]]")
    assert result.exit_code == 2
    assert "1:5" in result.output and "PyTorch's gather takes indices 0 to 2" in result.output, result.output


# (program, feeds, message): values PyTorch or NumPy refuse when they arrive, refused when the program runs
AT_RUN_TIME = [
    ("y = F.binary_cross_entropy(p, t)", {"p": [0.2, 0.5], "t": [1.5, 1.0]},
     "all elements of target should be between 0 and 1 (PyTorch refuses others)"),
    ("y = F.binary_cross_entropy(p, t)", {"p": [1.2, 0.5], "t": [1.0, 1.0]},
     "all elements of input should be between 0 and 1 (PyTorch refuses others)"),
    ("y = F.gaussian_nll_loss(p, t, s)", {"p": [0.2, 0.5], "t": [1.5, 1.0], "s": [1.0, -2.0]},
     "var has a negative entry (PyTorch refuses it)"),
    ("y = np.average(p, weights=t)", {"p": [0.2, 0.5], "t": [1.0, -1.0]},
     "the weights sum to zero: the average cannot be normalized (NumPy refuses it)"),
    ("y = tf.clip_by_value(p, t, 0.5)", {"p": [0.2, 0.5], "t": [0.0, 1.0]},
     "clip_value_min is greater than clip_value_max: TensorFlow's clip_by_value then gives the minimum"),
]


@pytest.mark.parametrize("program,feeds,message", AT_RUN_TIME, ids=[r[0] + str(r[1]) for r in AT_RUN_TIME])
def test_values_the_library_refuses_are_refused_when_the_program_runs(program, feeds, message):
    with pytest.raises(GradcliError) as info:
        api.grad(program, wrt=["p"], feeds=feeds)
    assert message in str(info.value), str(info.value)
    assert (info.value.pos.line, info.value.pos.column) == (1, 5)
    result = invoke("grad", "-e", program, "--wrt", "p", *[a for k, v in feeds.items() for a in ("--set", f"{k}={v}")])
    assert result.exit_code == 2 and message in result.output, result.output


def test_a_derived_program_keeps_the_run_time_check():
    text = api.derive("y = F.gaussian_nll_loss(p, t, s)", wrt="p",
                      feeds={"p": [0.2, 0.5], "t": [1.5, 1.0], "s": [1.0, 2.0]})
    assert "checked_range(" in text
    with pytest.raises(GradcliError, match="var has a negative entry"):
        api.evaluate(text, feeds={"s": [1.0, -2.0]})


def test_the_run_time_checks_pass_values_in_range_unchanged():
    r = api.grad("y = F.binary_cross_entropy(p, t, reduction='sum')", wrt=["p", "t"],
                 feeds={"p": [0.25, 0.5], "t": [0.5, 1.0]})
    # PyTorch 2.13: p.grad, t.grad
    np.testing.assert_allclose(r.gradients["p"], [-4 / 3, -2.0], rtol=1e-15)
    np.testing.assert_allclose(r.gradients["t"], [math.log(3.0), 0.0], rtol=1e-15, atol=1e-15)
    r = api.evaluate("y = np.average(p, weights=t)", feeds={"p": [0.2, 0.5], "t": [1.0, 3.0]})
    assert r.outputs["y"] == pytest.approx(np.average([0.2, 0.5], weights=[1.0, 3.0]), rel=1e-15)


# (program, expected): the calls next to the refusals, with the library's own numbers
ACCEPTED = [
    ("y = torch.gather(x, 1, [[2], [0]])", [[2.0], [3.0]]),
    ("y = torch.index_select(x, 1, [2, 0])", X[:, [2, 0]]),
    ("y = tf.gather(x, [1, 0], axis=1)", X[:, [1, 0]]),
    ("y = F.pad(x, (2, 2), mode='reflect')", np.pad(X, ((0, 0), (2, 2)), mode="reflect")),
    ("y = F.pad(x, (3, 0), mode='circular')", np.pad(X, ((0, 0), (3, 0)), mode="wrap")),
    ("y = F.pad(v, (5, 5))", np.pad(V, 5)),
    ("y = torch.amax(x, dim=1)", [2.0, 5.0]),
    ("y = torch.amin(x, (0, 1))", 0.0),
    ("y = x.amax(dim=0)", [3.0, 4.0, 5.0]),
    ("y = torch.sum(x)", 15.0),
    ("y = np.sum(x, axis=())", X),
    ("y = tf.reduce_sum(x, axis=[])", X),
    ("y = torch.roll(x, (1, 2), (0, 1))", [[4.0, 5.0, 3.0], [1.0, 2.0, 0.0]]),
    ("y = np.roll(x, (1, 2), axis=(0,))", np.roll(X, (1, 2), axis=(0,))),
    ("y = torch.outer(v[0:2], v[1:4])", [[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]]),
    ("y = np.outer(x, v)", np.outer(X, V)),
    ("y = np.meshgrid(x, v)[0]", np.meshgrid(X, V)[0]),
    ("y = torch.meshgrid(v[0:2], v)[0]", [[0.0] * 4, [1.0] * 4]),
    ("y = jnp.split(v, [1, 3])[1]", V[1:3]),
    ("y = np.split(v, [-1])[1]", np.split(V, [-1])[1]),
    ("y = torch.logsumexp(x, 1)", np.log(np.exp(X).sum(axis=1))),
    ("y = torch.cumsum(x, dim=0)", np.cumsum(X, axis=0)),
    ("y = tf.cumsum(x)", np.cumsum(X, axis=0)),
    ("y = np.cumsum(x)", np.cumsum(X)),
    ("y = np.sort(x, kind='stable')", np.sort(X, kind="stable")),
    ("y = F.hardtanh(x, 1.0, 4.0)", np.clip(X, 1.0, 4.0)),
    ("y = np.clip(x, 3.0, 1.0)", np.clip(X, 3.0, 1.0)),
    ("y = np.round(x / 4, 1)", np.round(X / 4, 1)),
    ("y = torch.quantile(x, 0.3, interpolation='lower')", np.quantile(X, 0.3, method="lower")),
    ("y = F.multi_margin_loss(x, [0, 2])", 5 / 6),  # PyTorch 2.13: 0.8333333333333334
    ("y = torch.trace(x)", 4.0),
    ("y = F.linear(x, v[0:3])", X @ V[0:3]),
    ("y = F.linear(x[1], v[0:3], 1.0)", X[1] @ V[0:3] + 1.0),
    ("y = np.trace(reshape(v, [1, 2, 2]))", np.trace(V.reshape(1, 2, 2))),
    ("y = np.linalg.trace(reshape(v, [1, 2, 2]))", [3.0]),
]


@pytest.mark.parametrize("program,expected", ACCEPTED, ids=[a[0] for a in ACCEPTED])
def test_the_calls_the_library_accepts_keep_its_numbers(program, expected):
    out = api.evaluate(program, feeds={"x": X, "v": V}).outputs["y"]
    np.testing.assert_allclose(out, expected, rtol=1e-15, atol=0)


def test_clip_with_its_bounds_crossed_has_the_bounds_slopes_of_numpy_jax_and_pytorch():
    # where lo > hi, minimum(maximum(x, lo), hi) is hi whatever x and lo: torch.clamp and jnp.clip's
    # gradients (PyTorch 2.13, JAX 0.10) are 0 in x and lo, 1 in hi
    feeds = {"x": [0.5, -2.0, 3.0, 0.5], "lo": [1.0, 1.0, 1.0, -1.0], "hi": [0.0, 0.0, 0.0, 1.0]}
    for program in ("y = np.clip(x, lo, hi)", "y = torch.clamp(x, lo, hi)", "y = jnp.clip(x, lo, hi)"):
        r = api.grad(program, wrt=["x", "lo", "hi"], feeds=feeds)
        np.testing.assert_array_equal(r.outputs["y"], [0.0, 0.0, 0.0, 0.5])
        np.testing.assert_array_equal(r.gradients["x"], [0.0, 0.0, 0.0, 1.0])
        np.testing.assert_array_equal(r.gradients["lo"], [0.0, 0.0, 0.0, 0.0])
        np.testing.assert_array_equal(r.gradients["hi"], [1.0, 1.0, 1.0, 0.0])


def test_kl_div_slope_in_the_target_is_not_finite_at_a_zero_target():
    # PyTorch 2.13 (batchmean over 2 rows): value 0.36065736907761, d/dinput [[-0.15, -0.35], [0, -0.5]],
    # d/dtarget [[0.70273255, 0.43323430], [nan, 0.84657359]]: (log t + 1 - input) / 2, -inf at t = 0
    x = np.log([[0.2, 0.8], [0.5, 0.5]])
    t = np.array([[0.3, 0.7], [0.0, 1.0]])
    r = api.grad("y = F.kl_div(x, t, reduction='batchmean')", wrt=["x", "t"], feeds={"x": x, "t": t})
    assert r.outputs["y"] == pytest.approx(0.3606573690776143, rel=1e-14)
    np.testing.assert_allclose(r.gradients["x"], [[-0.15, -0.35], [0.0, -0.5]], rtol=1e-14)
    with np.errstate(divide="ignore"):
        slope = (np.log(t) + 1.0 - x) / 2.0
    np.testing.assert_allclose(r.gradients["t"], slope, rtol=1e-14)
    assert r.gradients["t"][1, 0] == -np.inf
    assert [d.kind for d in r.diagnostics] == ["nonfinite_gradient"], r.diagnostics
    # where every target is positive the slope is finite and nothing is flagged
    r = api.grad("y = F.kl_div(x, t, reduction='sum')", wrt=["t"], feeds={"x": x, "t": t + 0.1})
    np.testing.assert_allclose(r.gradients["t"], np.log(t + 0.1) + 1.0 - x, rtol=1e-14)
    assert not r.diagnostics, r.diagnostics


def test_kl_div_second_derivative_in_the_target_is_one_over_the_target():
    t = np.array([0.2, 0.5, 0.3])
    r = api.hessian("y = F.kl_div(x, t, reduction='sum')", wrt=["t"], feeds={"x": np.log([0.3, 0.3, 0.4]), "t": t})
    np.testing.assert_allclose(r.hessians["t"], np.diag(1.0 / t), rtol=1e-14)
