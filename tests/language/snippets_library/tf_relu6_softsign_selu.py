# TensorFlow: tf.nn.relu6, softsign, selu, elu, swish
import tensorflow as tf
y = tf.nn.relu6(3 * x) + tf.nn.softsign(x) + tf.nn.selu(x) + tf.nn.elu(x) + tf.nn.swish(x) + tf.nn.silu(x)
