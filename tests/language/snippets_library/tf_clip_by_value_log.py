# TensorFlow: tf.clip_by_value in cross entropy (TF1 MNIST)
import tensorflow as tf
cross_entropy = -tf.reduce_sum(y_ * tf.log(tf.clip_by_value(y, 1e-10, 1.0)))
