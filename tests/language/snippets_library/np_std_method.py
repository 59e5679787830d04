# NumPy: a spelling whose meaning differs between libraries, checked against NumPy
import numpy as np
y = x.std() + x.var() + x.mean()
