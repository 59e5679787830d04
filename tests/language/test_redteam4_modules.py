"""A `tf.Module` subclass from TensorFlow's 'Introduction to modules, layers, and models' guide, its
variables given to the tape as `module.trainable_variables`, against what TensorFlow 2.21.0 printed
(float64). TensorFlow orders them by attribute name, the module's own before its sub-modules', each
sub-module depth first. Before, `trainable_variables` was 'Dense has no attribute'."""
from __future__ import annotations

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

DENSE = """
import tensorflow as tf
class Dense(tf.Module):
  def __init__(self, w, b, name=None):
    super().__init__(name=name)
    self.w = tf.Variable(w, name='w')
    self.b = tf.Variable(b, name='b')
  def __call__(self, x):
    y = tf.matmul(x, self.w) + self.b
    return tf.nn.relu(y)
"""


def outputs(program: str) -> dict:
    return api.evaluate(program, fixes=False).outputs


def test_the_gradients_of_a_module_s_trainable_variables_come_in_attribute_order():
    out = outputs(DENSE + """
layer = Dense(tf.constant([[0.5, -1.0], [0.25, 0.75]], dtype=tf.float64), tf.constant([0.1, 0.2], dtype=tf.float64))
x = tf.constant([[1.0, 2.0]], dtype=tf.float64)
with tf.GradientTape() as tape:
  out = tf.reduce_sum(layer(x) ** 2)
grads = tape.gradient(out, layer.trainable_variables)
print(out)
print(grads[0])
print(grads[1])
""")
    # TensorFlow 2.21.0 printed 1.7, then b's gradient, then w's
    np.testing.assert_allclose(out["out"], 1.7000000000000002, rtol=1e-15)
    np.testing.assert_allclose(out["grads[0]"], [2.2, 1.4], rtol=1e-15)
    np.testing.assert_allclose(out["grads[1]"], [[2.2, 1.4], [4.4, 2.8]], rtol=1e-15)


def test_a_module_s_own_variables_come_before_its_sub_modules():
    out = outputs(DENSE + """
class Model(tf.Module):
  def __init__(self, name=None):
    super().__init__(name=name)
    self.second = Dense(tf.constant([[1.0], [-0.5]], dtype=tf.float64), tf.constant([0.3], dtype=tf.float64))
    self.first = Dense(tf.constant([[0.5, -1.0], [0.25, 0.75]], dtype=tf.float64), tf.constant([0.1, 0.2], dtype=tf.float64))
    self.scale = tf.Variable(2.0, dtype=tf.float64)
  def __call__(self, x):
    return self.scale * self.second(self.first(x))

model = Model()
x = tf.constant([[1.0, 2.0]], dtype=tf.float64)
with tf.GradientTape() as tape:
  out = tf.reduce_sum(model(x) ** 2)
grads = tape.gradient(out, model.trainable_variables)
print(len(model.trainable_variables))
print(grads[0], grads[1], grads[2], grads[3], grads[4])
""")
    # TensorFlow 2.21.0 printed 5, then scale's, first.b's, first.w's, second.b's, second.w's gradients
    assert out["len(model.trainable_variables)"] == 5
    for k, want in enumerate([4.41, [8.4, -4.2], [[8.4, -4.2], [16.8, -8.4]], [8.4], [[9.24], [5.88]]]):
        np.testing.assert_allclose(out[f"grads[{k}]"], want, rtol=1e-14)


def test_a_class_that_is_no_module_has_no_trainable_variables():
    with pytest.raises(GradcliError, match="Plain has no attribute 'trainable_variables'"):
        outputs("import tensorflow as tf\nclass Plain:\n  def __init__(self):\n    self.w = tf.Variable(1.0)\n"
                "p = Plain()\nprint(p.trainable_variables)\n")
