# NumPy: np.outer, np.kron
import numpy as np
y = np.sum(np.outer(a, b) ** 2) + np.kron(a, b).sum()
