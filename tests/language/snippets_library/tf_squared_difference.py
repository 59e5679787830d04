# TensorFlow: tf.math.squared_difference, tf.reduce_mean
import tensorflow as tf
loss = tf.reduce_mean(tf.math.squared_difference(y_pred, y_true), axis=-1)
