# NumPy: a spelling whose meaning differs between libraries, checked against NumPy
import numpy as np
y = np.fmod(x * 3, 1.3) + np.mod(x * 3, 1.3) + np.remainder(x, 0.7)
