# NumPy: np.std(ddof=1), np.var(axis=0)
import numpy as np
y = np.std(x, ddof=1) + np.var(x, axis=0).sum()
