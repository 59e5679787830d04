# TensorFlow: tf.nn.softmax_cross_entropy_with_logits(labels=, logits=)
import tensorflow as tf
loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits))
