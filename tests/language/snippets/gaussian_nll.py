# Negative log-likelihood of a Gaussian, as a statistics course writes it
import numpy as np

def gaussian_nll(mu, sigma, x):
    return np.sum(0.5 * np.log(2 * np.pi * sigma**2) + (x - mu)**2 / (2 * sigma**2))
