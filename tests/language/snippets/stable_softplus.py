# A numerically stable softplus
import numpy as np

def softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)
