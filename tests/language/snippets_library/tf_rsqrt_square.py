# TensorFlow: tf.math.rsqrt, tf.square, tf.math.reduce_euclidean_norm
import tensorflow as tf
y = tf.math.rsqrt(tf.square(x) + 1.0) + tf.math.reduce_euclidean_norm(x)
