# Keras documentation, keras.losses.categorical_crossentropy (standalone usage example)
import keras

y_true = [[0, 1, 0], [0, 0, 1]]
y_pred = [[0.05, 0.95, 0], [0.1, 0.8, 0.1]]
loss = keras.losses.categorical_crossentropy(y_true, y_pred)
