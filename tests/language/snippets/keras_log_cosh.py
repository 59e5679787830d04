# Keras' log_cosh loss
import math
from keras import ops

def log_cosh(y_true, y_pred):
    log2 = math.log(2.0)

    def _logcosh(x):
        return x + ops.softplus(x * -2.0) - log2

    return ops.mean(_logcosh(y_pred - y_true), axis=-1)
