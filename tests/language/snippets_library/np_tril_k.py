# NumPy: a spelling whose meaning differs between libraries, checked against NumPy
import numpy as np
y = np.tril(x, -1) + np.triu(x, 1) * 2
