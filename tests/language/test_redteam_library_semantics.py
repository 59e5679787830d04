"""Library functions whose defaults differ by where they are spelled (keras.ops vs keras.losses or
keras.activations): gradcli's numbers against what the real libraries printed, in float64.

References: Keras 3.15.1 (TensorFlow 2.21.0 backend, keras.config.set_floatx("float64")),
x = np.array([1.0, 2.0, -0.7])."""
from __future__ import annotations

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

X = [1.0, 2.0, -0.7]


def value(program: str, x=X) -> np.ndarray:
    return np.asarray(api.evaluate(program, feeds={"x": x}, fixes=False).outputs["y"])


# keras.ops.gelu(x) is the tanh approximation (its approximate=True default):
# array([ 0.8411919902786764 ,  1.9545976932119538 , -0.16942986540356306])
KERAS_OPS_GELU = [0.8411919902786764, 1.9545976932119538, -0.16942986540356306]
# keras.activations.gelu(x) is the exact x Phi(x) (approximate=False):
# array([ 0.8413447419273903 ,  1.9544997324075772 , -0.16937455917471037])
KERAS_ACTIVATIONS_GELU = [0.8413447419273903, 1.9544997324075772, -0.16937455917471037]


@pytest.mark.parametrize("program", [
    "import keras\ny = keras.ops.gelu(x)",
    "from keras import ops\ny = ops.gelu(x)",
    "import keras\ny = keras.ops.nn.gelu(x)",
    "import tensorflow as tf\ny = tf.keras.ops.gelu(x)",
])
def test_keras_ops_gelu_defaults_to_the_tanh_approximation(program):
    np.testing.assert_allclose(value(program), KERAS_OPS_GELU, rtol=1e-7)  # (Keras rounds its constants)


@pytest.mark.parametrize("program", [
    "import keras\ny = keras.activations.gelu(x)",
    "import tensorflow as tf\ny = tf.keras.activations.gelu(x)",
    "import keras\ny = keras.ops.gelu(x, approximate=False)",
])
def test_keras_activations_gelu_stays_exact(program):
    np.testing.assert_allclose(value(program), KERAS_ACTIVATIONS_GELU, rtol=1e-7)


# keras.ops.binary_crossentropy(np.array([1.0, 0.0, 1.0]), x, from_logits=True), and
# tf.keras.backend.binary_crossentropy of the same: one loss per element, not averaged
# array([0.31326168751822286, 2.1269280110429727 , 1.103186048885458  ])
KERAS_OPS_BCE = [0.31326168751822286, 2.1269280110429727, 1.103186048885458]


@pytest.mark.parametrize("program", [
    "import keras\ny = keras.ops.binary_crossentropy(keras.ops.convert_to_tensor([1.0, 0.0, 1.0]), x, "
    "from_logits=True)",
    "from keras import ops\ny = ops.binary_crossentropy(ops.convert_to_tensor([1.0, 0.0, 1.0]), x, from_logits=True)",
    "import tensorflow as tf\ny = tf.keras.backend.binary_crossentropy(tf.constant([1.0, 0.0, 1.0]), x, "
    "from_logits=True)",
])
def test_keras_ops_binary_crossentropy_is_elementwise(program):
    np.testing.assert_allclose(value(program), KERAS_OPS_BCE, rtol=1e-10)


def test_keras_losses_binary_crossentropy_still_averages_the_last_axis():
    program = ("import keras\ny = keras.losses.binary_crossentropy(keras.ops.convert_to_tensor([1.0, 0.0, 1.0]), x, "
               "from_logits=True)")
    # keras.losses.binary_crossentropy(...) printed 1.1811252491488846
    np.testing.assert_allclose(value(program), 1.1811252491488846, rtol=1e-10)


def test_keras_ops_binary_crossentropy_of_probabilities_is_refused():
    with pytest.raises(GradcliError, match="from_logits=True"):
        value("import keras\ny = keras.ops.binary_crossentropy(keras.ops.convert_to_tensor([1.0, 0.0, 1.0]), x)",
              [0.2, 0.7, 0.9])


# jax.lax.cumsum / cumprod scan axis 0 by default (jnp.cumsum flattens). JAX 0.10.2 (x64) printed, for
# x = jnp.array([[1.0, 2.0, 0.5], [3.0, -1.0, 2.0]]):
# jax.lax.cumsum(x) [[1.0, 2.0, 0.5], [4.0, 1.0, 2.5]]; jax.lax.cumprod(x) [[1.0, 2.0, 0.5], [3.0, -2.0, 1.0]]
# jax.lax.cumsum(x, reverse=True) [[4.0, 1.0, 2.5], [3.0, -1.0, 2.0]]
LAX_X = [[1.0, 2.0, 0.5], [3.0, -1.0, 2.0]]


@pytest.mark.parametrize("program, printed", [
    ("import jax\ny = jax.lax.cumsum(x)", [[1.0, 2.0, 0.5], [4.0, 1.0, 2.5]]),
    ("from jax import lax\ny = lax.cumsum(x)", [[1.0, 2.0, 0.5], [4.0, 1.0, 2.5]]),
    ("import jax\ny = jax.lax.cumprod(x)", [[1.0, 2.0, 0.5], [3.0, -2.0, 1.0]]),
    ("import jax\ny = jax.lax.cumsum(x, reverse=True)", [[4.0, 1.0, 2.5], [3.0, -1.0, 2.0]]),
    ("import jax.numpy as jnp\ny = jnp.cumsum(x)", [1.0, 3.0, 3.5, 6.5, 5.5, 7.5]),
])
def test_lax_cumulative_ops_scan_axis_zero(program, printed):
    np.testing.assert_allclose(value(program, LAX_X), printed, rtol=1e-12)


def test_lax_cumsum_gradient_follows_axis_zero():
    # jax.grad(lambda x: (jax.lax.cumsum(x) * w).sum())(x), w = [[1, 2, 3], [4, 5, 6]]: [[5, 7, 9], [4, 5, 6]]
    program = "import jax\nimport jax.numpy as jnp\ny = jnp.sum(jax.lax.cumsum(x) * jnp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))"
    grads = api.compile(program, feeds={"x": LAX_X}).grad(["x"]).gradients["x"]
    np.testing.assert_allclose(grads, [[5.0, 7.0, 9.0], [4.0, 5.0, 6.0]], rtol=1e-12)


# keras.ops.linalg.lstsq(a, b) gives the solution alone (as tf.linalg.lstsq), not NumPy's tuple
# (solution, residuals, rank, singular values): `[0]` is the solution's first row. Keras 3.15.1 printed
# array([[ 0.4361068083770735 ], [ 0.21166876240753946], [-0.04915289373083226]]) and, for [0],
# array([0.4361068083770735]).
LSTSQ_A = [[1.0, 2.0, 0.5], [3.0, -1.0, 2.0], [0.7, 4.0, 1.5], [2.2, 0.3, -0.6]]


def test_keras_lstsq_is_the_solution_alone():
    got = value("import keras\ny = keras.ops.linalg.lstsq(x, keras.ops.ones((4, 1)))", LSTSQ_A)
    np.testing.assert_allclose(got, [[0.4361068083770735], [0.21166876240753946], [-0.04915289373083226]], rtol=1e-10)


def test_keras_lstsq_indexed_is_a_row_of_the_solution():
    got = value("import keras\ny = keras.ops.linalg.lstsq(x, keras.ops.ones((4, 1)))[0]", LSTSQ_A)
    np.testing.assert_allclose(got, [0.4361068083770735], rtol=1e-10)


def test_numpy_lstsq_indexed_is_still_the_solution():
    # np.linalg.lstsq(a, b, rcond=None)[0]: array([ 0.5699068836806285 , -0.07611688220139722,  0.10442616426828251])
    got = value("import numpy as np\ny = np.linalg.lstsq(x, np.array([1.0, 2.0, 0.0, 1.0]), rcond=None)[0]", LSTSQ_A)
    np.testing.assert_allclose(got, [0.5699068836806285, -0.07611688220139722, 0.10442616426828251], rtol=1e-10)


# keras.ops.maximum / minimum call tf.maximum / tf.minimum (TensorFlow backend), which give a tie's
# gradient to their first argument: tf.GradientTape over x = [1.0, 2.0, 0.5] (Keras 3.15.1, TF 2.21.0):
# maximum(x, 1.0) [1. 1. 0.]; minimum(1.0, x) [0. 0. 1.]; minimum(x, 1.0) [1. 0. 1.]; maximum(x, x) [1. 1. 1.].
# gradcli splits every maximum's tie evenly, TensorFlow's included (the contract's peer case
# testMinimumGradient; docs/language.md, Ties), with a tie note: 0.5 where TensorFlow gives 1 or 0
@pytest.mark.parametrize("call, printed", [
    ("keras.ops.maximum(x, 1.0)", [0.5, 1.0, 0.0]),
    ("keras.ops.minimum(1.0, x)", [0.5, 0.0, 1.0]),
    ("keras.ops.minimum(x, 1.0)", [0.5, 0.0, 1.0]),
    ("keras.ops.maximum(x, x)", [1.0, 1.0, 1.0]),
])
def test_keras_maximum_minimum_split_a_tie_as_every_maximum(call, printed):
    grads = api.compile(f"import keras\ny = {call}", feeds={"x": [1.0, 2.0, 0.5]}).grad(["x"]).gradients["x"]
    np.testing.assert_array_equal(grads, printed)


# selu's slope at 0: tf.nn.selu's SeluGrad (and Keras', which calls it) takes the linear branch there,
# JAX's and PyTorch's the exponential one. Gradients of sum(selu(x)) at x = [-1.0, 0.0, 1.0]
# (TF 2.21.0 GradientTape, Keras 3.15.1, jax 0.10.2 jax.grad, torch 2.13.0 backward):
# TensorFlow / Keras [0.6467686030348141, 1.0507009873554805, 1.0507009873554805]
# JAX / PyTorch      [0.6467686030348141, 1.7580993408473766, 1.0507009873554805]
@pytest.mark.parametrize("call, printed", [
    ("import tensorflow as tf\ny = tf.nn.selu(x)", [0.6467686030348141, 1.0507009873554805, 1.0507009873554805]),
    ("import keras\ny = keras.ops.selu(x)", [0.6467686030348141, 1.0507009873554805, 1.0507009873554805]),
    ("import keras\ny = keras.activations.selu(x)", [0.6467686030348141, 1.0507009873554805, 1.0507009873554805]),
    ("import jax\ny = jax.nn.selu(x)", [0.6467686030348141, 1.7580993408473766, 1.0507009873554805]),
    ("import torch\ny = torch.nn.functional.selu(x)", [0.6467686030348141, 1.7580993408473766, 1.0507009873554805]),
])
def test_selu_slope_at_zero_follows_each_library(call, printed):
    grads = api.compile(call, feeds={"x": [-1.0, 0.0, 1.0]}).grad(["x"]).gradients["x"]
    np.testing.assert_allclose(grads, printed, rtol=1e-12)


# keras.ops.hard_tanh (TensorFlow backend: clip_by_value) passes the gradient at -1 and 1, as
# jax.nn.hard_tanh; PyTorch's F.hardtanh does not. tf.GradientTape of sum(hard_tanh(x)) at
# x = [-3.0, -1.0, 0.0, 1.0, 3.0] (Keras 3.15.1): [0. 1. 1. 1. 0.] for keras.ops and keras.activations
@pytest.mark.parametrize("call, printed", [
    ("import keras\ny = keras.ops.hard_tanh(x)", [0.0, 1.0, 1.0, 1.0, 0.0]),
    ("import keras\ny = keras.activations.hard_tanh(x)", [0.0, 1.0, 1.0, 1.0, 0.0]),
    ("import torch\ny = torch.nn.functional.hardtanh(x)", [0.0, 0.0, 1.0, 0.0, 0.0]),
])
def test_hard_tanh_slope_at_its_bounds_follows_each_library(call, printed):
    grads = api.compile(call, feeds={"x": [-3.0, -1.0, 0.0, 1.0, 3.0]}).grad(["x"]).gradients["x"]
    np.testing.assert_array_equal(grads, printed)


# Gradients of sum(f(x)) at x = [-3.0, -1.0, 0.0, 1.0, 3.0]:
# jax.nn.sparse_sigmoid (0.5 jnp.clip(x + 1, 0, 2), jax 0.10.2 jax.grad): [0.   0.25 0.5  0.25 0.  ]
# keras.ops.sparse_sigmoid (Keras 3.15.1, tf.GradientTape): [0.  0.  0.5 0.  0. ]
# keras.ops.celu(x, alpha=0.5): array([0.00247875217666636, 0.1353352832366127 , 2., 1., 1.]) (slope 2 at 0:
# tf.maximum(x, 0) + alpha expm1(tf.minimum(x, 0) / alpha), both ties to x); tf.keras.activations.celu(x):
# [0.04978706836786394 0.3678794411714423 2. 1. 1.]; jax.nn.celu and F.celu: slope 1 at 0, celu's own
# derivative there (both sides 1), which gradcli gives for Keras' too (its 2 is TensorFlow's tie rule)
KINKS = [-3.0, -1.0, 0.0, 1.0, 3.0]


@pytest.mark.parametrize("call, printed", [
    ("import jax\ny = jax.nn.sparse_sigmoid(x)", [0.0, 0.25, 0.5, 0.25, 0.0]),
    ("import keras\ny = keras.ops.sparse_sigmoid(x)", [0.0, 0.0, 0.5, 0.0, 0.0]),
    ("import keras\ny = keras.ops.celu(x, alpha=0.5)", [0.00247875217666636, 0.1353352832366127, 1.0, 1.0, 1.0]),
    ("import tensorflow as tf\ny = tf.keras.activations.celu(x)", [0.04978706836786394, 0.3678794411714423, 1.0, 1.0, 1.0]),
    ("import tensorflow as tf\ny = tf.keras.activations.hard_tanh(x)", [0.0, 1.0, 1.0, 1.0, 0.0]),
    ("import jax\ny = jax.nn.celu(x)", [0.04978706836786394, 0.3678794411714423, 1.0, 1.0, 1.0]),
    ("import torch\ny = torch.nn.functional.celu(x)", [0.04978706836786394, 0.3678794411714423, 1.0, 1.0, 1.0]),
])
def test_activation_slopes_at_their_kinks_follow_each_library(call, printed):
    grads = api.compile(call, feeds={"x": KINKS}).grad(["x"]).gradients["x"]
    np.testing.assert_allclose(grads, printed, rtol=1e-12)


def test_keras_celu_values_are_unchanged():
    # keras.ops.celu(x, alpha=0.5): array([-0.4987606239116668, -0.43233235838169376, 0., 1., 3.])
    np.testing.assert_allclose(value("import keras\ny = keras.ops.celu(x, alpha=0.5)", KINKS),
                               [-0.4987606239116668, -0.43233235838169376, 0.0, 1.0, 3.0], rtol=1e-12)


# At the margin: Keras' hinge and categorical_hinge are tf.maximum(..., 0), whose tie TensorFlow gives to
# the first argument (the gradient passes); gradcli splits it, as every maximum's tie (see above).
# PyTorch's multi_margin_loss backward passes nothing where the term is 0.
# x = [[1.0, 1.0, 1.5], [0.0, 1.0, -1.0]]; tf.GradientTape (Keras 3.15.1) of
# sum(keras.losses.hinge([[0, 1, 0.5], [1, 0, 0]], x)): [[-0.0, -0.3333333333333333, -0.16666666666666666],
# [-0.3333333333333333, -0.0, -0.0]]; torch 2.13.0 F.multi_margin_loss(x, tensor([0, 1])) 0.4166666666666667,
# x.grad [[-0.3333333333333333, 0.16666666666666666, 0.16666666666666666], [0.0, 0.0, 0.0]]
MARGIN_X = [[1.0, 1.0, 1.5], [0.0, 1.0, -1.0]]


def test_keras_hinge_splits_the_gradient_at_the_margin():
    program = "import keras\ny = keras.losses.hinge(keras.ops.convert_to_tensor([[0.0, 1.0, 0.5], [1.0, 0.0, 0.0]]), x)"
    grads = api.compile(program, feeds={"x": MARGIN_X}).grad(["x"]).gradients["x"]
    np.testing.assert_allclose(grads, [[0.0, -1 / 6, -1 / 6], [-1 / 3, 0.0, 0.0]], rtol=1e-12)


def test_keras_categorical_hinge_splits_the_gradient_at_zero():
    # keras.losses.categorical_hinge([[0, 1, 0]], [[1.0, 0.0, 0.5]]) is max(1 - 0 + 1 - ..., 0): written at a tie,
    # neg - pos + 1 = 0 for x = [[1.0, 2.0, 0.5]] (neg 1.0, pos 2.0); TensorFlow's gradient there:
    # [[1.0, -1.0, 0.0]] (tf.maximum's tie to its first argument)
    program = "import keras\ny = keras.losses.categorical_hinge(keras.ops.convert_to_tensor([[0.0, 1.0, 0.0]]), x)"
    grads = api.compile(program, feeds={"x": [[1.0, 2.0, 0.5]]}).grad(["x"]).gradients["x"]
    np.testing.assert_allclose(grads, [[0.5, -0.5, 0.0]], rtol=1e-12)  # (TensorFlow's [[1.0, -1.0, 0.0]], halved)


def test_torch_multi_margin_loss_passes_nothing_at_the_margin():
    program = "import torch\ny = torch.nn.functional.multi_margin_loss(x, torch.tensor([0, 1]))"
    result = api.compile(program, feeds={"x": MARGIN_X})
    np.testing.assert_allclose(result.evaluate().outputs["y"], 0.4166666666666667, rtol=1e-12)
    np.testing.assert_allclose(result.grad(["x"]).gradients["x"],
                               [[-1 / 3, 1 / 6, 1 / 6], [0.0, 0.0, 0.0]], rtol=1e-12)
