# NumPy: a spelling whose meaning differs between libraries, checked against NumPy
import numpy as np
from scipy import special
y = special.erfinv(q) + special.digamma(p) + special.i0(p) + special.expit(q)
