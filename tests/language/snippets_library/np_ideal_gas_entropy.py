# NumPy: Sackur-Tetrode-like formula with logs
import numpy as np
def S(V, T, N=1.0):
    return N * (np.log(V / N) + 1.5 * np.log(T) + 2.5)
