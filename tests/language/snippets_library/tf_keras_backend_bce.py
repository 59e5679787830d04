# TensorFlow: keras.backend style BCE with K.clip and K.epsilon
from tensorflow.keras import backend as K
def bce(y_true, y_pred):
    y_pred = K.clip(y_pred, K.epsilon(), 1 - K.epsilon())
    return -K.mean(y_true * K.log(y_pred) + (1 - y_true) * K.log(1 - y_pred), axis=-1)
