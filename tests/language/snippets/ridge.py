# Ridge regression objective
import numpy as np

def ridge(w, X, y, alpha=1.0):
    residual = X.dot(w) - y
    return residual.dot(residual) + alpha * w.dot(w)
