# TensorFlow: tf.keras.losses.cosine_similarity(axis=-1)
import tensorflow as tf
loss = tf.keras.losses.cosine_similarity(y_true, y_pred, axis=-1)
