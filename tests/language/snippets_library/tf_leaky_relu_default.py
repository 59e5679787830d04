# TensorFlow: tf.nn.leaky_relu default alpha=0.2
import tensorflow as tf
y = tf.nn.leaky_relu(x)
