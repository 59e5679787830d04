"""xlogy's slope at x = 0 is each library's own, and gradcli gives each library's: TensorFlow's
tf.math.xlogy 0 in x (xlogy(x != 0, y)) and xdivy in y; JAX's jax.scipy.special.xlogy log(y) in x
and x / y in y (its custom jvp); PyTorch's torch.xlogy log(y) in x but 0 where y <= 0 too, and x / y
in y. Values as TensorFlow 2.21.0, JAX 0.10.2 (x64) and PyTorch 2.13.0+cpu (float64) printed them.
Before, every spelling had TensorFlow's slopes: JAX's and PyTorch's d/dx xlogy(0, 2) is log 2, not 0,
and JAX's gradient of an entropy sum(xlogy(p, p)) at p = 0 is NaN, not 0."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gradcli import api

INF, NAN = math.inf, math.nan

PROGRAM = """
import jax
import jax.numpy as jnp
import torch
import tensorflow as tf
from jax.scipy.special import xlogy
x = jnp.array([0.0, 0.0, 0.5, 0.3])
y = jnp.array([2.0, 0.0, 0.0, 0.7])
g = jax.grad(lambda x, y: jnp.sum(xlogy(x, y)), argnums=(0, 1))(x, y)
print(g[0], g[1])
tx = torch.tensor([0.0, 0.0, 0.5, 0.3], requires_grad=True)
ty = torch.tensor([2.0, 0.0, 0.0, 0.7], requires_grad=True)
torch.xlogy(tx, ty).sum().backward()
print(tx.grad, ty.grad)
a = tf.Variable([0.0, 0.0, 0.5, 0.3], dtype=tf.float64)
b = tf.Variable([2.0, 0.0, 0.0, 0.7], dtype=tf.float64)
with tf.GradientTape() as t:
    s = tf.reduce_sum(tf.math.xlogy(a, b))
h = t.gradient(s, [a, b])
print(h[0], h[1])
"""


@pytest.fixture(scope="module")
def out():
    return api.evaluate(PROGRAM, fixes=False).outputs


@pytest.mark.parametrize("name, expected", [
    ("g[0]", [0.6931471805599453, -INF, -INF, -0.35667494393873245]),   # JAX
    ("g[1]", [0.0, NAN, INF, 0.42857142857142855]),
    ("tx.grad", [0.6931471805599453, 0.0, -INF, -0.35667494393873245]),  # PyTorch
    ("ty.grad", [0.0, NAN, INF, 0.4285714285714286]),
    ("h[0]", [0.0, 0.0, -INF, -0.35667494393873245]),                    # TensorFlow
    ("h[1]", [0.0, 0.0, INF, 0.4285714285714286]),
])
def test_each_librarys_xlogy_slopes(out, name, expected):
    np.testing.assert_allclose(np.asarray(out[name], dtype=float), expected, rtol=1e-14)


def test_jax_entropy_with_xlogy_has_jaxs_nan_gradient_at_zero():
    out = api.evaluate("""
import jax
import jax.numpy as jnp
from jax.scipy.special import xlogy
x = jnp.array([0.0, 0.5, 1.0])
print(jax.grad(lambda x: jnp.sum(xlogy(x, x)))(x))
""", fixes=False).outputs
    # JAX 0.10.2: [nan 0.30685282 1.]
    np.testing.assert_allclose(out["jax.grad(lambda x: jnp.sum(xlogy(x, x)))(x)"], [NAN, 0.3068528194400547, 1.0],
                               rtol=1e-14)


@pytest.mark.parametrize("spelling", ["jax.scipy.special.xlogy", "torch.xlogy", "tf.math.xlogy"])
def test_away_from_zero_each_reading_is_the_derivative(spelling):
    # (the two readings have no row in the op tables: central differences here, where x != 0 and y > 0)
    x, y = np.array([0.4, -1.3, 2.0]), np.array([0.3, 1.7, 2.5])
    library = spelling.partition(".")[0]
    program = f"import {'tensorflow as tf' if library == 'tf' else library}\nimport jax.scipy.special\nz = {spelling}(x, y)"
    result = api.grad(program, wrt=["x", "y"], feeds={"x": x, "y": y}, fixes=False)
    h = 1e-6
    for name, step in (("x", (h, 0.0)), ("y", (0.0, h))):
        numeric = ((x + step[0]) * np.log(y + step[1]) - (x - step[0]) * np.log(y - step[1])) / (2 * h)
        np.testing.assert_allclose(result.gradients[name], numeric, rtol=1e-7)
