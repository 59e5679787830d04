# TensorFlow: tf.nn.log_softmax(x, axis=0)
import tensorflow as tf
y = tf.nn.log_softmax(x, axis=0)
