# NumPy: MLhelper attention.py softmaxT(axis=0)
import numpy as np
def softmaxT(logits, temperature=1):
    return np.exp(logits/temperature) / np.sum(np.exp(logits/temperature), axis=0)
