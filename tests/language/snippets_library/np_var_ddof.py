# NumPy: a spelling whose meaning differs between libraries, checked against NumPy
import numpy as np
y = np.var(x, ddof=1) + x.var(axis=1, ddof=1).sum()
