# TensorFlow: tf.one_hot(labels, depth) cross entropy
import tensorflow as tf
labels = tf.constant([1, 0, 3])
loss = -tf.reduce_mean(tf.reduce_sum(tf.one_hot(labels, 4) * tf.nn.log_softmax(logits), axis=1))
