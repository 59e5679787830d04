# TensorFlow: tf.tensordot(a, b, axes=1)
import tensorflow as tf
y = tf.tensordot(a, b, axes=1)
