# Keras documentation, keras.losses.huber (standalone usage)
import keras

loss = keras.losses.huber(y_true, y_pred, delta=1.0)
