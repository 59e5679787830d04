# Keras documentation, keras.losses.binary_crossentropy with from_logits=True
import keras

loss = keras.losses.binary_crossentropy(y_true, y_pred, from_logits=True)
