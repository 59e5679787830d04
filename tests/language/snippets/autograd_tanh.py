# autograd's README: a function written with plain NumPy
import autograd.numpy as np  # Thinly-wrapped numpy

def tanh(x):                 # Define a function
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)
