# NumPy: x.mean(axis=(0, 1))
import numpy as np
y = x.mean(axis=(0, 1)) + x.sum((1, 2)).sum()
