# NumPy: gaussian pdf written out
import numpy as np
def pdf(x, mu, sigma):
    return np.exp(-(x - mu)**2 / (2 * sigma**2)) / (sigma * np.sqrt(2 * np.pi))
