# NumPy: a spelling whose meaning differs between libraries, checked against NumPy
import numpy as np
y = np.tensordot(x, m, axes=([1], [0]))
