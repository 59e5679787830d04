# NumPy: a spelling whose meaning differs between libraries, checked against NumPy
import numpy as np
y = x.transpose(1, 0) @ x + x.transpose() @ x
