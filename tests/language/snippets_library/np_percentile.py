# NumPy: a spelling whose meaning differs between libraries, checked against NumPy
import numpy as np
y = np.percentile(x, 90) + np.quantile(x, 0.3, axis=1).sum()
