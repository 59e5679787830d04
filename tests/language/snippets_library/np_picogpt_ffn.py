# NumPy: picoGPT ffn with linear
import numpy as np
def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
def linear(x, w, b):
    return x @ w + b
def ffn(x, w1, b1, w2, b2):
    return linear(gelu(linear(x, w1, b1)), w2, b2)
