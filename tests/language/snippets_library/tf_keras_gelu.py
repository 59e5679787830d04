# TensorFlow: tf.keras.activations.gelu default approximate=False
import tensorflow as tf
y = tf.keras.activations.gelu(x)
