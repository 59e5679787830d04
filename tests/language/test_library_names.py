"""A library's prefix is dropped only where the names mean the same thing: scipy.special.kl_div
is SciPy's elementwise divergence, not PyTorch's F.kl_div loss of the same name. Expected values
are what SciPy 1.17.1 and JAX 0.10.2 (x64) printed."""
import numpy as np
import pytest

from gradcli import api

P = [0.2, 0.8]
Q = [0.5, 0.5]
# SciPy 1.17.1: kl_div(P, Q), rel_entr(P, Q); jax.grad of their sums (JAX 0.10.2, x64)
KL = [0.11674185362516898, 0.0760029033965885]
KL_GRADS = ([-0.916290731874155, 0.4700036292457357], [0.6, -0.6000000000000001])
REL = [-0.183258146374831, 0.3760029033965885]
REL_GRADS = ([0.083709268125845, 1.4700036292457357], [-0.4, -1.6])


@pytest.mark.parametrize("program", [
    "y = scipy.special.kl_div(p, q)",
    "import scipy.special\ny = scipy.special.kl_div(p, q)",
    "from scipy.special import kl_div\ny = kl_div(p, q)",
    "from scipy import special\ny = special.kl_div(p, q)",
    "y = jax.scipy.special.kl_div(p, q)",
    "import jax.scipy.special as jss\ny = jss.kl_div(p, q)",
])
def test_scipy_kl_div_is_scipy_s_elementwise_divergence(program):
    result = api.grad(program, wrt=["p", "q"], feeds={"p": P, "q": Q})
    np.testing.assert_allclose(result.outputs["y"], KL, rtol=1e-15)
    np.testing.assert_allclose(result.gradients["p"], KL_GRADS[0], rtol=1e-14)
    np.testing.assert_allclose(result.gradients["q"], KL_GRADS[1], rtol=1e-14)


@pytest.mark.parametrize("program", ["y = scipy.special.rel_entr(p, q)", "y = jax.scipy.special.rel_entr(p, q)"])
def test_rel_entr_is_scipy_s(program):
    result = api.grad(program, wrt=["p", "q"], feeds={"p": P, "q": Q})
    np.testing.assert_allclose(result.outputs["y"], REL, rtol=1e-15)
    np.testing.assert_allclose(result.gradients["p"], REL_GRADS[0], rtol=1e-14)
    np.testing.assert_allclose(result.gradients["q"], REL_GRADS[1], rtol=1e-14)


def test_scipy_s_conventions_at_zero_and_below():
    # SciPy 1.17.1: kl_div(x, y) -> [0.7, 0.0, inf, 0.484..., 1.272..., inf]; rel_entr [0, 0, inf, ...]
    x = [0.0, 0.0, 0.3, 0.3, 2.0, -1.0]
    y = [0.7, 0.0, 0.0, 1.2, 0.5, 1.0]
    kl = api.evaluate("y = scipy.special.kl_div(a, b)", feeds={"a": x, "b": y}).outputs["y"]
    np.testing.assert_allclose(kl, [0.7, 0.0, np.inf, 0.4841116916640328, 1.2725887222397811, np.inf], rtol=1e-15)
    rel = api.evaluate("y = scipy.special.rel_entr(a, b)", feeds={"a": x, "b": y}).outputs["y"]
    np.testing.assert_allclose(rel, [0.0, 0.0, np.inf, -0.4158883083359672, 2.772588722239781, np.inf], rtol=1e-15)


def test_pytorch_kl_div_stays_the_loss():
    # PyTorch 2.13: F.kl_div(p, q) (input taken as log-probabilities, reduction='mean') -> -0.5965735902799727
    got = api.evaluate("y = F.kl_div(p, q)", feeds={"p": P, "q": Q}).outputs["y"]
    np.testing.assert_allclose(got, -0.5965735902799727, rtol=1e-15)


# Found by evaluating every name gradcli calls under torch., F., jnp., jax.nn., jax.scipy.special.,
# tf.math., tf.nn., np. and scipy.special. against the library itself (PyTorch 2.13.0, JAX 0.10.2,
# TensorFlow 2.21.0, NumPy 2.4.6, SciPy 1.17.1): the names whose prefix meant another function.
X = [0.5, 1.5, 3.0]


@pytest.mark.parametrize("program,expected", [
    # torch.vander(x) is NumPy's (decreasing powers); torch.linalg.vander's increase
    ("y = torch.vander(x)", [[0.25, 0.5, 1.0], [2.25, 1.5, 1.0], [9.0, 3.0, 1.0]]),
    ("y = torch.linalg.vander(x)", [[1.0, 0.5, 0.25], [1.0, 1.5, 2.25], [1.0, 3.0, 9.0]]),
    # torch.equal(a, b): True for the whole tensors (PyTorch prints True), not elementwise
    ("y = torch.equal(x, x)", 1.0),
    ("y = torch.equal(x, x * 2)", 0.0),
])
def test_torch_names_that_are_not_numpy_s_functions_of_that_name(program, expected):
    got = api.evaluate(program, feeds={"x": X}).outputs["y"]
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-15)


@pytest.mark.parametrize("program,message", [
    ("y = torch.gradient(x)", "torch.gradient: it returns a tuple of tensors"),
    ("y = torch.kl_div(x, x)", "torch.kl_div is ATen's function"),
    ("y = torch.binary_cross_entropy_with_logits(x, x)", "torch.binary_cross_entropy_with_logits: ATen's"),
])
def test_torch_top_level_functions_of_another_shape_are_refused(program, message):
    from gradcli.errors import GradcliError
    with pytest.raises(GradcliError, match=message):
        api.evaluate(program, feeds={"x": X})
