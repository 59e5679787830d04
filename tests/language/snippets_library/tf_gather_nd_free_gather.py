# TensorFlow: tf.gather(params, indices) rows
import tensorflow as tf
y = tf.reduce_sum(tf.gather(params, [2, 0, 2]) ** 2)
