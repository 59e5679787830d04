# TensorFlow: tf.nn.gelu default approximate=False
import tensorflow as tf
y = tf.nn.gelu(x)
