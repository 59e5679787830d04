# NumPy: a spelling whose meaning differs between libraries, checked against NumPy
import numpy as np
y = np.round(x * 2.5) * x + np.round(x, 1) * x
