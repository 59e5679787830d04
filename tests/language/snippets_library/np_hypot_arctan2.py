# NumPy: polar coordinates with np.hypot and np.arctan2
import numpy as np
def polar(x, y):
    return np.hypot(x, y) + np.arctan2(y, x)
