# TensorFlow: a spelling whose meaning differs between libraries, checked against TensorFlow
import tensorflow as tf
y = tf.nn.softmax(x) + tf.nn.softmax(x, 0)
