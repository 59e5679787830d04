"""Which matrix eigh and eigvalsh read, and so their gradient with respect to a full matrix, is
the spelling's library's: NumPy (autograd), TensorFlow and SciPy read one triangle (UPLO='L' by
default) and their gradient lies on it; PyTorch reads the triangle but gives the symmetric
gradient; JAX reads the symmetric part (a + a^T)/2 (symmetrize_input=True); a bare eigh refuses a
matrix that is clearly not symmetric. The expected numbers are what the libraries printed for one
non-symmetric 3x3 matrix, float64: NumPy 2.4.6 with autograd, JAX 0.10.2 (x64), PyTorch
2.13.0+cpu, TensorFlow 2.21.0."""
import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

A = np.array([[2.0, 0.3, -0.5], [1.1, 1.0, 0.4], [0.7, -0.2, 3.0]])
W = np.array([1.0, 2.0, 3.0])

# eigh(A)[0] and the gradient of sum(eigh(A)[0] * W)
LOWER_VALUES = [0.18191574941535701, 2.39823174625519, 3.4198525043294525]  # NumPy, PyTorch, TensorFlow
UPPER_VALUES = [0.7888127505379681, 1.9733206733441575, 3.237866576117874]  # UPLO='U'
SYMMETRIZED_VALUES = [0.6389750142388211, 2.333081577301192, 3.027943408459987]  # JAX
LOWER_GRADIENT = [[1.9793590480246146, 0.0, 0.0], [1.0975283033121053, 1.386413136200668, 0.0],
                  [1.1120362259015584, -0.02207791782819002, 2.63422781577472]]  # autograd, TensorFlow
UPPER_GRADIENT = [[2.0144002209526835, 0.5121529261092362, -0.8006419432449191],
                  [0.0, 1.1773213549941546, 0.6603247676641739], [0.0, 0.0, 2.80827842405316]]  # autograd, UPLO='U'
TORCH_GRADIENT = [[1.9793590480246142, 0.5487641516560526, 0.5560181129507784],
                  [0.5487641516560526, 1.3864131362006682, -0.011038958914094898],
                  [0.5560181129507786, -0.011038958914094898, 2.634227815774718]]
TORCH_UPPER_GRADIENT = [[2.014400220952684, 0.2560764630546185, -0.4003209716224593],
                        [0.2560764630546185, 1.177321354994154, 0.3301623838320872],
                        [-0.4003209716224594, 0.3301623838320872, 2.808278424053161]]
JAX_GRADIENT = [[1.8199701104764152, 0.42370060773503915, 0.15595803577728112],
                [0.42370060773503915, 1.2197595587174368, 0.12042582073973085],
                [0.15595803577728112, 0.12042582073973085, 2.9602703308061438]]


@pytest.mark.parametrize("eigenvalues,values,gradient", [
    ("np.linalg.eigh(a)[0]", LOWER_VALUES, LOWER_GRADIENT),
    ("np.linalg.eigvalsh(a)", LOWER_VALUES, LOWER_GRADIENT),
    ("anp.linalg.eigh(a)[0]", LOWER_VALUES, LOWER_GRADIENT),
    ("np.linalg.eigh(a, UPLO='U')[0]", UPPER_VALUES, UPPER_GRADIENT),
    ("tf.linalg.eigh(a)[0]", LOWER_VALUES, LOWER_GRADIENT),
    ("tf.linalg.eigvalsh(a)", LOWER_VALUES, LOWER_GRADIENT),
    ("scipy.linalg.eigh(a)[0]", LOWER_VALUES, LOWER_GRADIENT),
    ("torch.linalg.eigh(a)[0]", LOWER_VALUES, TORCH_GRADIENT),
    ("torch.linalg.eigvalsh(a, UPLO='U')", UPPER_VALUES, TORCH_UPPER_GRADIENT),
    ("jnp.linalg.eigh(a)[0]", SYMMETRIZED_VALUES, JAX_GRADIENT),
    ("jnp.linalg.eigvalsh(a)", SYMMETRIZED_VALUES, JAX_GRADIENT),
    ("jax.scipy.linalg.eigh(a)[0]", SYMMETRIZED_VALUES, JAX_GRADIENT),
])
def test_each_library_s_eigh_reads_its_matrix_and_gives_its_gradient(eigenvalues, values, gradient):
    result = api.grad(f"e = {eigenvalues}\ny = sum(e * w)", wrt=["a"], of=["y"], feeds={"a": A, "w": W})
    np.testing.assert_allclose(api.evaluate(f"e = {eigenvalues}", feeds={"a": A}).outputs["e"], values, rtol=1e-13)
    np.testing.assert_allclose(result.gradients["a"], gradient, rtol=1e-12, atol=1e-14)


def _numpy_central_differences(f, a, eps=1e-6):
    out = np.zeros_like(a)
    for index in np.ndindex(a.shape):
        step = np.zeros_like(a)
        step[index] = eps
        out[index] = (f(a + step) - f(a - step)) / (2 * eps)
    return out


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_numpy_s_eigenvector_gradient_is_numpy_s_own_finite_differences(uplo):
    weights = np.arange(9.0).reshape(3, 3) / 10.0
    expected = _numpy_central_differences(lambda m: np.sum(np.linalg.eigh(m, UPLO=uplo)[1] * weights), A)
    result = api.grad(f"y = sum(np.linalg.eigh(a, UPLO='{uplo}')[1] * c)", wrt=["a"], feeds={"a": A, "c": weights})
    np.testing.assert_allclose(result.gradients["a"], expected, atol=1e-8)
    assert np.all(np.triu(result.gradients["a"], 1) == 0) if uplo == "L" else np.all(np.tril(result.gradients["a"], -1) == 0)


def test_a_bare_eigh_of_a_matrix_that_is_not_symmetric_is_refused():
    with pytest.raises(GradcliError, match="the matrix is not symmetric"):
        api.evaluate("y = eigvalsh(a)", feeds={"a": A})


def test_a_second_derivative_through_numpy_s_reading_matches_finite_differences_of_its_gradient():
    program = "y = sum(np.linalg.eigvalsh(a) ** 3)"
    def gradient(m):
        w, v = np.linalg.eigh(m)
        s = (v * 3 * w ** 2) @ v.T
        return np.tril(s) + np.tril(s, -1)
    hessian = api.hessian(program, wrt=["a"], feeds={"a": A}).hessians
    block = next(iter(hessian.values()))
    expected = np.stack([_numpy_central_differences(lambda m, k=k: gradient(m).reshape(-1)[k], A)
                         for k in range(9)]).reshape(3, 3, 3, 3)
    np.testing.assert_allclose(np.asarray(block).reshape(3, 3, 3, 3), expected, atol=1e-6)
