# TensorFlow: tf.math.xlogy, tf.math.divide_no_nan
import tensorflow as tf
y = tf.math.xlogy(p, q) + tf.math.divide_no_nan(p, q)
