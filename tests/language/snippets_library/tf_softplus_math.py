# TensorFlow: tf.math.softplus, tf.math.log1p, tf.math.expm1
import tensorflow as tf
y = tf.math.softplus(x) + tf.math.log1p(tf.abs(x)) + tf.math.expm1(x)
