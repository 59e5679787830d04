"""Keras custom training loops as the Keras guides write them ('Customizing what happens in fit()'
train_step, 'Writing a training loop from scratch'): the variables in a Python list given to the
tape and to `optimizer.apply_gradients`, and `keras.config.set_floatx("float64")`. gradcli's numbers
against what Keras 3.15.1 (TensorFlow 2.21.0 backend) printed for the same code.

Before: a list of variables bound to a name was stacked into a new array (its gradient None, or,
with variables of different shapes, refused), a list held the variables as they were before
`apply_gradients` (each step restarted from the first values), and the learning rate was rounded
to float32 where Keras, told float64, holds it in float64."""
from __future__ import annotations

import numpy as np

from gradcli import api


def outputs(program: str) -> dict:
    return api.evaluate(program, fixes=False).outputs


def test_a_train_step_over_a_list_of_variables_takes_every_step():
    out = outputs("""
import tensorflow as tf
import keras
keras.config.set_floatx("float64")
x = tf.constant([[0.5, -1.0], [1.5, 0.2], [0.0, 1.0]], dtype=tf.float64)
y = tf.constant([[1.0], [0.0], [2.0]], dtype=tf.float64)
kernel = tf.Variable([[0.1], [-0.2]], dtype=tf.float64)
bias = tf.Variable([0.0], dtype=tf.float64)
trainable_vars = [kernel, bias]
loss_fn = keras.losses.MeanSquaredError()
optimizer = keras.optimizers.Adam(learning_rate=0.01)
for step in range(3):
    with tf.GradientTape() as tape:
        y_pred = x @ kernel + bias
        loss = loss_fn(y, y_pred)
    gradients = tape.gradient(loss, trainable_vars)
    optimizer.apply_gradients(zip(gradients, trainable_vars))
print(loss)
print(kernel.numpy(), bias.numpy())
""")
    # Keras 3.15.1, float64: loss 1.7467226764809112, kernel [[0.12948928096978032], [-0.1700150532711518]],
    # bias [0.029980448384254683]
    np.testing.assert_allclose(out["loss"], 1.7467226764809112, rtol=1e-12)
    np.testing.assert_allclose(out["kernel.numpy()"], [[0.12948928096978032], [-0.1700150532711518]], rtol=1e-12)
    np.testing.assert_allclose(out["bias.numpy()"], [0.029980448384254683], rtol=1e-12)


def test_a_list_of_scalar_variables_is_a_list_to_the_tape():
    out = outputs("""
import tensorflow as tf
w = tf.Variable(3.0)
b = tf.Variable(1.0)
vs = [w, b]
with tf.GradientTape() as tape:
    loss = (w * 2.0 + b) ** 2
g = tape.gradient(loss, vs)
print(g)
""")
    # TensorFlow 2.21.0: [<tf.Tensor: numpy=28.0>, <tf.Tensor: numpy=14.0>]
    np.testing.assert_array_equal(out["g"], [28.0, 14.0])


def test_sgd_under_float64_floatx_holds_its_learning_rate_in_float64():
    out = outputs("""
import tensorflow as tf
import keras
keras.config.set_floatx("float64")
x = tf.constant([[0.5, -1.0], [1.5, 0.2], [0.0, 1.0]], dtype=tf.float64)
y = tf.constant([[1.0], [0.0], [2.0]], dtype=tf.float64)
w = tf.Variable([[0.1], [-0.2]], dtype=tf.float64)
b = tf.Variable([0.3], dtype=tf.float64)
optimizer = keras.optimizers.SGD(learning_rate=0.1, momentum=0.9, nesterov=True)
loss_fn = keras.losses.MeanSquaredError()
for step in range(4):
    with tf.GradientTape() as tape:
        logits = x @ w + b
        loss_value = loss_fn(y, logits)
    grads = tape.gradient(loss_value, [w, b])
    optimizer.apply_gradients(zip(grads, [w, b]))
print(loss_value)
print(w.numpy(), b.numpy())
""")
    # Keras 3.15.1, float64: 0.3713072785864456; [[-0.4610608372311831], [0.4837670811406073]]; [1.2688263312724544]
    np.testing.assert_allclose(out["loss_value"], 0.3713072785864456, rtol=1e-12)
    np.testing.assert_allclose(out["w.numpy()"], [[-0.4610608372311831], [0.4837670811406073]], rtol=1e-12)
    np.testing.assert_allclose(out["b.numpy()"], [1.2688263312724544], rtol=1e-12)


def test_assign_sub_through_a_loop_name_updates_the_variable_every_name_holds():
    # before: `v.assign_sub(...)` rebound the loop's name only, so `w` and `b` kept their first values
    # and the second step's gradient was None
    out = outputs("""
import tensorflow as tf
w = tf.Variable([0.5, -0.3], dtype=tf.float64)
b = tf.Variable(0.1, dtype=tf.float64)
x = tf.constant([[1.0, 2.0], [3.0, -1.0]], dtype=tf.float64)
y = tf.constant([1.0, 0.0], dtype=tf.float64)
variables = [w, b]
for step in range(3):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((tf.linalg.matvec(x, w) + b - y) ** 2)
    grads = tape.gradient(loss, variables)
    for v, g in zip(variables, grads):
        v.assign_sub(0.1 * g)
print(w, b, loss)
""")
    # TensorFlow 2.21.0 (float64): w [0.0899 0.3253], b 0.1029, loss 0.06131049999999998
    np.testing.assert_allclose(out["w"], [0.08990000000000002, 0.32530000000000003], rtol=1e-12)
    np.testing.assert_allclose(out["b"], 0.10289999999999999, rtol=1e-12)
    np.testing.assert_allclose(out["loss"], 0.06131049999999998, rtol=1e-12)


def test_a_second_name_of_a_variable_sees_its_assign():
    out = outputs("import tensorflow as tf\na = tf.Variable(1.0)\nb = a\na.assign_add(1.0)\nc = b * 10.0\n"
                  "print(b, c)")
    # TensorFlow 2.21.0: <tf.Variable ... numpy=2.0> tf.Tensor(20.0, ...)
    assert float(out["b"]) == 2.0 and float(out["c"]) == 20.0


def test_a_tape_inside_a_tf_function_train_step():
    # Keras guide 'Writing a training loop from scratch': @tf.function def train_step(x, y) holding the
    # tape (refused before: a 'with' block was read at the top level only)
    out = outputs("""
import tensorflow as tf
import keras
keras.config.set_floatx("float64")
x_batch = tf.constant([[0.5, -1.0], [1.5, 0.2], [0.0, 1.0], [2.0, 2.0]], dtype=tf.float64)
y_batch = tf.constant([0, 1, 1, 0])
W = tf.Variable([[0.1, -0.2], [0.3, 0.4]], dtype=tf.float64)
bias = tf.Variable([0.0, 0.1], dtype=tf.float64)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = keras.optimizers.SGD(learning_rate=0.5)

@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = x @ W + bias
        loss_value = loss_fn(y, logits)
    grads = tape.gradient(loss_value, [W, bias])
    optimizer.apply_gradients(zip(grads, [W, bias]))
    return loss_value

for step in range(3):
    loss_value = train_step(x_batch, y_batch)
print(loss_value)
print(W.numpy(), bias.numpy())
""")
    # Keras 3.15.1, TensorFlow 2.21.0 (float64)
    np.testing.assert_allclose(out["loss_value"], 0.6507782991773421, rtol=1e-12)
    np.testing.assert_allclose(out["W.numpy()"], [[0.17515531470169482, -0.27515531470169485],
                                                  [0.24534040233080867, 0.4546595976691913]], rtol=1e-12)
    np.testing.assert_allclose(out["bias.numpy()"], [-0.0516241050873506, 0.15162410508735058], rtol=1e-12)


def test_a_helper_taking_a_gradient_with_its_own_tape_is_called_again_and_again():
    out = outputs("""
import tensorflow as tf
def g(f, v):
    x = tf.Variable(v, dtype=tf.float64)
    with tf.GradientTape() as t:
        y = f(x)
    return t.gradient(y, x)
a = g(lambda x: tf.norm(x, ord=1), [0.0, 6.0, -1.0, 1.0, 3.0])
c = g(lambda x: tf.reduce_sum(tf.nn.relu6(x)), [0.0, 6.0, -1.0, 1.0, 3.0])
f = g(lambda x: tf.reduce_max(x), [1.0, 3.0, 3.0])
print(a, c, f)
""")
    # TensorFlow 2.21.0: [0. 1. -1. 1. 1.] [0. 0. 0. 1. 1.] [0. 0.5 0.5]
    np.testing.assert_array_equal(out["a"], [0.0, 1.0, -1.0, 1.0, 1.0])
    np.testing.assert_array_equal(out["c"], [0.0, 0.0, 0.0, 1.0, 1.0])
    np.testing.assert_array_equal(out["f"], [0.0, 0.5, 0.5])
