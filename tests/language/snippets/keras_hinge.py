# Keras' hinge loss, with labels in {-1, 1}
from keras import ops

def hinge(y_true, y_pred):
    return ops.mean(ops.maximum(1.0 - y_true * y_pred, 0.0), axis=-1)
