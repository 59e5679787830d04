# Binary cross-entropy on probabilities, clipped as Keras clips them
import numpy as np

def binary_crossentropy(y_true, y_pred, eps=1e-7):
    y_pred = np.clip(y_pred, eps, 1 - eps)
    return -np.mean(y_true * np.log(y_pred) + (1 - y_true) * np.log(1 - y_pred))
