# NumPy: a spelling whose meaning differs between libraries, checked against NumPy
import numpy as np
y = np.log10(p) + np.log2(p)
