# NumPy: a spelling whose meaning differs between libraries, checked against NumPy
import numpy as np
y = x.cumsum() + x.cumsum(axis=0).ravel()
