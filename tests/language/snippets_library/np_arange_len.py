# NumPy: a spelling whose meaning differs between libraries, checked against NumPy
import numpy as np
y = np.sum(np.arange(0.1, 1.0, 0.3) * a)
