"""Library gradients that are the library's own rule rather than the exact derivative, as pasted
from autograd's README and tutorial, against what autograd 1.9.1 (NumPy 2.4.6, float64) printed.

Before: autograd's `np.prod` differentiated as the product of the other elements (JAX's, TensorFlow's
and PyTorch's rule), where autograd's rule is `prod / x`: NaN at an element that is 0, so gradcli
printed 6.0 where autograd printed nan, with no word of it."""
from __future__ import annotations

import numpy as np

from gradcli import api


def run(program: str):
    return api.evaluate(program, fixes=False)


def test_autograd_prod_divides_its_gradient_by_x():
    result = run("""
import autograd.numpy as np
from autograd import grad, hessian
x = np.array([2.0, 0.0, 3.0])
m = np.array([[1.0, 2.0], [0.0, 3.0], [4.0, -1.0]])
print(grad(np.prod)(x))
print(grad(lambda m: np.sum(np.prod(m, axis=0) * np.array([1.0, 2.0])))(m))
print(grad(lambda m: np.sum(np.prod(m, axis=1, keepdims=True) ** 2))(m))
y = np.array([2.0, 0.5, 3.0])
print(hessian(np.prod)(y))
""")
    out = result.outputs
    # autograd 1.9.1 printed:
    np.testing.assert_allclose(out["grad(np.prod)(x)"], [0.0, np.nan, 0.0])
    np.testing.assert_allclose(out["grad(lambda m: np.sum(np.prod(m, axis=0) * np.array([1.0, 2.0])))(m)"],
                               [[0.0, -6.0], [np.nan, -4.0], [0.0, 12.0]])
    np.testing.assert_allclose(out["grad(lambda m: np.sum(np.prod(m, axis=1, keepdims=True) ** 2))(m)"],
                               [[8.0, 4.0], [np.nan, 0.0], [8.0, -32.0]])
    np.testing.assert_allclose(out["hessian(np.prod)(y)"], [[0.0, 3.0, 0.5], [3.0, 0.0, 2.0], [0.5, 2.0, 0.0]],
                               rtol=1e-15)
    assert any(d.kind == "nonfinite_gradient" and d.pos.line == 6 for d in result.diagnostics)


def test_the_other_libraries_prod_gradient_is_the_product_of_the_others():
    out = run("""
import jax
import jax.numpy as jnp
x = jnp.array([2.0, 0.0, 3.0])
print(jax.grad(jnp.prod)(x))
""").outputs
    np.testing.assert_allclose(out["jax.grad(jnp.prod)(x)"], [0.0, 6.0, 0.0])  # JAX 0.10.2 printed
