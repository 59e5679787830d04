"""jnp.linalg.norm with ord sums |x|, and JAX's |x| has slope 1 at 0: at an array holding zeros the
gradient of ord 1 (vector or matrix) and of a matrix's ord inf is JAX's, where NumPy's, PyTorch's
and TensorFlow's sign(0) = 0 stays theirs. Values as JAX 0.10.2 (x64) and PyTorch 2.13.0 printed them.
Before, jnp.linalg.norm(v, ord=1) had slope 0 at v = 0 where JAX's is 1."""
from __future__ import annotations

import numpy as np
import pytest

from gradcli import api

SETUP = """
import jax
import jax.numpy as jnp
v = jnp.array([0.0, -2.0, 0.0, 1.0])
m = jnp.array([[0.0, 1.0], [0.0, -1.0], [2.0, 0.0]])
"""


@pytest.mark.parametrize("expression, expected", [
    ("jax.grad(lambda v: jnp.linalg.norm(v, ord=1))(v)", [1.0, -1.0, 1.0, 1.0]),
    ("jax.grad(lambda v: jnp.linalg.norm(v, ord=3))(v)", [0.0, -0.9244816991341793, 0.0, 0.23112042478354483]),
    ("jax.grad(lambda m: jnp.linalg.norm(m, ord=1))(m)", [[0.5, 0.5], [0.5, -0.5], [0.5, 0.5]]),
    ("jax.grad(lambda m: jnp.linalg.norm(m, ord=jnp.inf))(m)", [[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]),
    ("jax.grad(lambda m: jnp.linalg.norm(m, ord='fro'))(m)",
     [[0.0, 0.4082482904638631], [0.0, -0.4082482904638631], [0.8164965809277261, 0.0]]),
    ("jax.grad(lambda m: jnp.sum(jnp.linalg.norm(m, ord=1, axis=1)))(m)", [[1.0, 1.0], [1.0, -1.0], [1.0, 1.0]]),
])
def test_jax_norms_with_ord_at_zeros(expression, expected):
    out = api.evaluate(SETUP + f"g = {expression}\n", fixes=False).outputs
    np.testing.assert_allclose(out["g"], expected, rtol=1e-14)


def test_pytorchs_and_numpys_ord_one_keep_sign_zero():
    out = api.evaluate("""
import torch
x = torch.tensor([0.0, -2.0, 0.0, 1.0], requires_grad=True)
torch.linalg.vector_norm(x, ord=1).backward()
print(x.grad)
""", fixes=False).outputs
    # PyTorch 2.13.0: tensor([ 0., -1.,  0.,  1.])
    np.testing.assert_array_equal(out["x.grad"], [0.0, -1.0, 0.0, 1.0])
    numpy_grad = api.grad("import numpy as np\ny = np.linalg.norm(x, ord=1)", wrt=["x"],
                          feeds={"x": np.array([0.0, -2.0, 0.0, 1.0])}, fixes=False).gradients["x"]
    np.testing.assert_array_equal(numpy_grad, [0.0, -1.0, 0.0, 1.0])
