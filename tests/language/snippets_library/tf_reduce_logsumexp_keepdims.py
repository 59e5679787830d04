# TensorFlow: tf.reduce_logsumexp(x, 1, keepdims=True) log_softmax
import tensorflow as tf
y = x - tf.reduce_logsumexp(x, 1, keepdims=True)
