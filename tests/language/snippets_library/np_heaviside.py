# NumPy: a spelling whose meaning differs between libraries, checked against NumPy
import numpy as np
y = np.heaviside(x, 0.5) * x
