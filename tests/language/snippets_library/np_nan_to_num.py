# NumPy: a spelling whose meaning differs between libraries, checked against NumPy
import numpy as np
y = np.nan_to_num(np.log(np.abs(x)) * x)
