# NumPy documentation, "Indexing on ndarrays": combining advanced and basic indexing
import numpy as np

y[np.array([0, 2, 4]), 1:3]
