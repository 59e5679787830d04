# Elastic-net penalty, as scikit-learn's documentation writes its objective
import numpy as np

def objective(w, X, y, alpha=1.0, l1_ratio=0.5):
    n_samples = X.shape[0]
    return (1 / (2 * n_samples) * np.sum((y - X @ w) ** 2)
            + alpha * l1_ratio * np.sum(np.abs(w))
            + 0.5 * alpha * (1 - l1_ratio) * np.sum(w ** 2))
