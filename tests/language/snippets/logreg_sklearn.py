# Logistic regression loss with labels in {-1, +1}
import numpy as np

def logistic_loss(w, X, y, alpha=0.1):
    z = X @ w
    return np.mean(np.log(1 + np.exp(-y * z))) + 0.5 * alpha * np.dot(w, w)
