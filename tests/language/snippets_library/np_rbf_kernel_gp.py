# NumPy: GP negative log marginal likelihood
import numpy as np
def nlml(ell, X, y, noise=0.1):
    sq = np.sum(X**2, 1).reshape(-1, 1) + np.sum(X**2, 1) - 2 * X @ X.T
    K = np.exp(-0.5 / ell**2 * sq) + noise * np.eye(len(y))
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(K, y)
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(L)))
