# NumPy: Planck's law with np.expm1
import numpy as np
def planck(wav, T):
    h = 6.626e-34; c = 3.0e8; k = 1.38e-23
    return 2.0 * h * c**2 / (wav**5 * np.expm1(h * c / (wav * k * T)))
