"""Library functions pasted code calls that gradcli did not know (refused as unknown before):
tf.nn.moments, tf.nn.batch_normalization, tf.nn.weighted_cross_entropy_with_logits,
keras.losses.CosineSimilarity, torch.set_default_device. Values as the real libraries printed them:
TensorFlow 2.21.0, Keras 3.15.1 (float64 floatx), PyTorch 2.13.0+cpu."""
from __future__ import annotations

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError


def outputs(program: str) -> dict:
    return api.evaluate(program, fixes=False).outputs


def test_tf_nn_moments_and_batch_normalization_with_their_gradients():
    out = outputs("""
import tensorflow as tf
x = tf.Variable([[1.0, 2.0], [3.0, 5.0], [-1.0, 0.5]], dtype=tf.float64)
gamma = tf.Variable([1.5, 0.5], dtype=tf.float64)
beta = tf.Variable([0.1, -0.2], dtype=tf.float64)
w = tf.constant([[1.0, 2.0], [0.5, -1.0], [3.0, 0.2]], dtype=tf.float64)
with tf.GradientTape() as tape:
    mean, variance = tf.nn.moments(x, axes=[0])
    y = tf.nn.batch_normalization(x, mean, variance, beta, gamma, variance_epsilon=1e-3)
    loss = tf.reduce_sum(y * w)
print(mean, variance)
print(y)
g = tape.gradient(loss, [x, gamma, beta])
print(g[0])
print(g[1])
print(g[2])
""")
    # TensorFlow 2.21.0 (float64)
    np.testing.assert_allclose(out["mean"], [1.0, 2.5], rtol=1e-14)
    np.testing.assert_allclose(out["variance"], [2.6666666666666665, 3.5], rtol=1e-14)
    np.testing.assert_allclose(out["y"], [[0.09999999999999998, -0.3336115349572638],
                                          [1.936772944441273, 0.46805767478631854],
                                          [-1.736772944441273, -0.7344461398290549]], rtol=1e-12)
    np.testing.assert_allclose(out["g[0]"], [[-0.45919323611031826, 0.37794394544095233],
                                             [0.22916628577091203, -0.1260474657688805],
                                             [0.23002695033940612, -0.2518964796720718]], rtol=1e-12)
    np.testing.assert_allclose(out["g[1]"], [-3.061288240735455, -2.084339945333314], rtol=1e-12)
    np.testing.assert_allclose(out["g[2]"], [4.5, 1.2], rtol=1e-14)


def test_tf_nn_moments_keepdims_keeps_the_axes():
    out = outputs("import tensorflow as tf\nx = tf.constant([[1.0, 2.0], [3.0, 5.0]])\n"
                  "m, v = tf.nn.moments(x, axes=[1], keepdims=True)\nprint(m, v)")
    # TensorFlow 2.21.0: mean [[1.5], [4.0]], variance [[0.25], [1.0]]
    np.testing.assert_allclose(out["m"], [[1.5], [4.0]])
    np.testing.assert_allclose(out["v"], [[0.25], [1.0]])


def test_keras_moments_is_refused_where_it_differs_from_tensorflows():
    with pytest.raises(GradcliError) as caught:
        outputs("import keras\nfrom keras import ops\nx = ops.convert_to_tensor([1.0, 2.0, 4.0])\n"
                "m, v = ops.moments(x, axes=[0])\nprint(m, v)")
    assert "Keras' moments computes the variance as E[x^2] - E[x]^2" in str(caught.value)
    assert caught.value.pos is not None


def test_weighted_cross_entropy_with_logits_and_its_gradient():
    out = outputs("""
import tensorflow as tf
labels = tf.constant([1., 0.5, 1.], dtype=tf.float64)
logits = tf.constant([1., -0, -1.], dtype=tf.float64)
with tf.GradientTape() as tape:
    tape.watch(logits)
    loss = tf.nn.weighted_cross_entropy_with_logits(labels=labels, logits=logits, pos_weight=tf.constant(1.5, dtype=tf.float64))
print(loss.numpy())
print(tape.gradient(loss, logits))
""")
    # TensorFlow 2.21.0 (float64)
    np.testing.assert_allclose(out["loss.numpy()"], [0.4698925312773343, 0.8664339756999316, 1.9698925312773343],
                               rtol=1e-14)
    np.testing.assert_allclose(out["tape.gradient(loss, logits)"], [-0.4034121320549927, 0.5, -1.0965878679450074],
                               rtol=1e-14)


def test_keras_cosine_similarity_loss_object_on_either_axis():
    out = outputs("""
import tensorflow as tf
import keras
keras.config.set_floatx("float64")
y_true = tf.constant([[0., 1.], [1., 1.], [2., -1.]], dtype=tf.float64)
y_pred = tf.Variable([[1., 1.], [1., 0.5], [0.3, 0.2]], dtype=tf.float64)
with tf.GradientTape(persistent=True) as tape:
    c1 = keras.losses.CosineSimilarity(axis=1)(y_true, y_pred)
    c0 = keras.losses.CosineSimilarity(axis=0)(y_true, y_pred)
    c2 = keras.losses.CosineSimilarity(axis=-1, reduction="sum")(y_true, y_pred)
print(c1, c0, c2)
print(tape.gradient(c1, y_pred))
print(tape.gradient(c0, y_pred))
""")
    # Keras 3.15.1 (float64)
    np.testing.assert_allclose([out["c1"], out["c0"], out["c2"]],
                               [-0.7173096725312983, -0.5778888590098752, -2.1519290175938948], rtol=1e-12)
    np.testing.assert_allclose(out["tape.gradient(c1, y_pred)"], [
        [0.11785113019775788, -0.11785113019775793], [0.04216370213557835, -0.08432740427115679],
        [-0.4452528933971585, 0.6678793400957377]], rtol=1e-12)
    np.testing.assert_allclose(out["tape.gradient(c0, y_pred)"], [
        [0.11840922964397048, 0.0019702657665711665], [-0.03626282657846601, -0.12609700906055166],
        [-0.27382134355168186, 0.30539119381852364]], rtol=1e-12)


def test_torch_set_default_device_changes_no_number():
    out = outputs("""
import torch
import math
dtype = torch.float
device = "cpu"
torch.set_default_device(device)
x = torch.linspace(-math.pi, math.pi, 5, dtype=dtype)
a = torch.tensor(0.5, dtype=dtype, requires_grad=True)
loss = (a * x - torch.sin(x)).pow(2).sum()
loss.backward()
print(a.grad)
""")
    # PyTorch 2.13.0 (float32): tensor(18.3908); in float64 18.39083...
    np.testing.assert_allclose(out["a.grad"], 18.390830993652344, rtol=1e-6)


def test_hinge_embedding_loss_as_function_and_module():
    out = outputs("""
import torch
import torch.nn as nn
import torch.nn.functional as F
a = torch.tensor([[0.5, -1.2, 2.0], [0.1, 0.4, -0.3]], requires_grad=True)
y = torch.tensor([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]])
m = F.hinge_embedding_loss(a, y)
l = nn.HingeEmbeddingLoss(margin=0.45, reduction='sum')(a, y)
n = F.hinge_embedding_loss(a, y, reduction='none')
(l + (n * torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum()).backward()
print(m, l, n, a.grad)
""")
    # PyTorch 2.13.0 (float64): m 0.9833333333333334; l 4.25; n [[0.5, 2.2, 2.0], [0.9, 0.6, -0.3]];
    # a.grad [[2., -3., 4.], [-5., -6., 7.]]
    np.testing.assert_allclose(out["m"], 0.9833333333333334, rtol=1e-14)
    np.testing.assert_allclose(out["l"], 4.25, rtol=1e-14)
    np.testing.assert_allclose(out["n"], [[0.5, 2.2, 2.0], [0.9, 0.6, -0.3]], rtol=1e-14)
    np.testing.assert_allclose(out["a.grad"], [[2.0, -3.0, 4.0], [-5.0, -6.0, 7.0]], rtol=1e-14)
