# The Styblinski-Tang function
import numpy as np

def styblinski_tang(x):
    return 0.5 * np.sum(x**4 - 16 * x**2 + 5 * x)
