# NumPy: pairwise squared distances with np.newaxis
import numpy as np
def d2(X, Y):
    return np.sum((X[:, np.newaxis, :] - Y[np.newaxis, :, :]) ** 2, axis=-1)
