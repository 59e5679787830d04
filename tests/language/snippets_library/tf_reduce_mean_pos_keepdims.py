# TensorFlow: a spelling whose meaning differs between libraries, checked against TensorFlow
import tensorflow as tf
y = tf.reduce_mean(x, 1, True)
