# NumPy: a spelling whose meaning differs between libraries, checked against NumPy
import numpy as np
y = np.corrcoef(x)
