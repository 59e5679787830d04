# TensorFlow: tf.keras.losses.Huber functional tf.keras.losses.huber
import tensorflow as tf
loss = tf.keras.losses.huber(y_true, y_pred, delta=0.5)
