# TensorFlow: tf.einsum multi-head attention scores
import tensorflow as tf
def f(q, k):
    s = tf.einsum('bqhd,bkhd->bhqk', q, k)
    return tf.reduce_sum(tf.nn.softmax(s, axis=-1) * s)
