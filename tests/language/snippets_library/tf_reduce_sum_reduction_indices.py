# TensorFlow: TF1 tutorial reduction_indices=[1]
import tensorflow as tf
cross_entropy = tf.reduce_mean(-tf.reduce_sum(y_ * tf.log(y), reduction_indices=[1]))
