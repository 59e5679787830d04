# TensorFlow: tf.math.reduce_std, reduce_variance
import tensorflow as tf
y = tf.math.reduce_std(x, axis=1) + tf.math.reduce_variance(x)
