"""NumPy's ufunc methods (`np.add.reduce`, `np.multiply.accumulate`, ...), `np.count_nonzero`
and `jax.nn.standardize`, against what NumPy 2.4.6 and JAX 0.10.2 (x64) printed."""
from __future__ import annotations

import re

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

X = "import numpy as np\nx = np.array([[1., 5.], [3., 4.]])\n"


@pytest.mark.parametrize("call, expected", [
    ("np.add.reduce(x)", [4.0, 9.0]),  # axis 0 by default (np.sum's default is every axis)
    ("np.maximum.reduce(x, axis=1)", [5.0, 4.0]),
    ("np.add.reduce(x, None)", 13.0),
    ("np.multiply.reduce(x)", [3.0, 20.0]),
    ("np.minimum.reduce(x)", [1.0, 4.0]),
    ("np.multiply.accumulate(x)", [[1.0, 5.0], [3.0, 20.0]]),
    ("np.add.accumulate(x, 1)", [[1.0, 6.0], [3.0, 7.0]]),
    ("np.logaddexp.reduce(x, keepdims=True)", [[3.1269280110429727, 5.313261687518223]]),
    ("np.maximum.accumulate(x, 1)", [[1.0, 5.0], [3.0, 4.0]]),
    ("np.count_nonzero(x - 3.0)", 3.0),
    ("np.count_nonzero(x - 3.0, axis=0)", [1.0, 2.0]),
    ("np.count_nonzero(x - 3.0, 1, keepdims=True)", [[2.0], [1.0]]),
])
def test_numpy_s_ufunc_methods_and_count_nonzero_give_numpy_s_numbers(call, expected):
    value = api.evaluate(X + f"y = {call}\n", fixes=False).outputs["y"]
    np.testing.assert_allclose(value, expected, rtol=1e-15)
    assert np.shape(value) == np.shape(expected)


def test_a_ufunc_reduce_differentiates_as_the_reduction_it_is():
    result = api.grad(X + "y = np.sum(np.multiply.reduce(x) * np.array([1.0, 10.0]))\n", wrt=["x"], fixes=False)
    np.testing.assert_array_equal(result.gradients["x"], [[3.0, 40.0], [1.0, 50.0]])  # d(x0 x1)/dx along axis 0


def test_a_ufunc_method_given_an_argument_twice_is_refused():
    with pytest.raises(GradcliError, match=re.escape("axis")):
        api.evaluate(X + "y = np.add.reduce(x, 0, axis=1)\n", fixes=False)


STANDARDIZE = """import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
x = jnp.array([[1.0, 2.0, 4.0], [3.0, -1.0, 0.5]])
y = jax.nn.standardize(x)
z = jax.nn.standardize(x, axis=0, epsilon=1e-3)
w = jax.nn.standardize(x, axis=None, algorithm="stable")
g = jax.grad(lambda x: jnp.sum(jax.nn.standardize(x) * jnp.array([1.0, 2.0, 3.0])))(x)
print(y)
print(z)
print(w)
print(g)
"""
JAX_STANDARDIZE = {  # JAX 0.10.2, x64, np.asarray(v).ravel().tolist()
    "y": [-1.0690415314502968, -0.26726038286257403, 1.3363019143128716, 1.3131958959276273, -1.1111657580926075,
          -0.2020301378350195],
    "z": [-0.9995003746877732, 0.9997778518244278, 0.999836774666341, 0.9995003746877732, -0.9997778518244278,
          -0.999836774666341],
    "w": [-0.35491343168580414, 0.2535095940612887, 1.4703556455554745, 0.8619326198083815, -1.5717594831799897,
          -0.6591249445593506],
    "g": [-0.11454458203331708, 0.17180914163860128, -0.05726455960528476, -0.2040931465783984, -0.34015153355332783,
          0.5442446801317264],
}


def test_jax_standardize_gives_jax_s_numbers_and_gradient():
    outputs = api.evaluate(STANDARDIZE, fixes=False).outputs
    for name, expected in JAX_STANDARDIZE.items():
        np.testing.assert_allclose(np.ravel(outputs[name]), expected, rtol=1e-13, atol=1e-15, err_msg=name)


def test_jax_standardize_with_where_is_refused():
    with pytest.raises(GradcliError, match=re.escape("standardize(where=...) is not supported")):
        api.evaluate(STANDARDIZE + "v = jax.nn.standardize(x, where=x > 0)\n", fixes=False)
