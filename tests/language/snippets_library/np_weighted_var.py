# NumPy: np.average with weights
import numpy as np
def wvar(x, w):
    m = np.average(x, weights=w)
    return np.average((x - m) ** 2, weights=w)
