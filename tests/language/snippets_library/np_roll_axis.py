# NumPy: a spelling whose meaning differs between libraries, checked against NumPy
import numpy as np
y = np.roll(x, -1, axis=1) * np.arange(12.).reshape(3, 4)
