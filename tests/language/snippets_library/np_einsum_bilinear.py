# NumPy: np.einsum bilinear form
import numpy as np
y = np.einsum('i,ij,j->', x, A, x)
