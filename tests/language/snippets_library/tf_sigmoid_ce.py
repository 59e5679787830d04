# TensorFlow: tf.nn.sigmoid_cross_entropy_with_logits
import tensorflow as tf
loss = tf.reduce_sum(tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x))
