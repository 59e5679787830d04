# Keras' mean_squared_logarithmic_error
from keras import ops
from keras import backend

def mean_squared_logarithmic_error(y_true, y_pred):
    epsilon = ops.convert_to_tensor(backend.epsilon())
    first_log = ops.log(ops.maximum(y_pred, epsilon) + 1.0)
    second_log = ops.log(ops.maximum(y_true, epsilon) + 1.0)
    return ops.mean(ops.square(first_log - second_log), axis=-1)
