# NumPy documentation, "Indexing on ndarrays": integer array indexing, repeated and negative indices
import numpy as np

x[np.array([3, 3, 1, 8])] * x[np.array([3, 3, -3, 8])]
