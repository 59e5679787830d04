# TensorFlow: tf.keras.losses.kl_divergence
import tensorflow as tf
loss = tf.keras.losses.kl_divergence(y_true, y_pred)
