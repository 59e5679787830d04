# NumPy: a spelling whose meaning differs between libraries, checked against NumPy
import numpy as np
y = np.sort(x, axis=0) * np.arange(12.).reshape(3, 4)
