# Shannon entropy of a distribution given by logits
import numpy as np

def entropy(logits):
    p = np.exp(logits) / np.sum(np.exp(logits))
    return -np.sum(p * np.log(p))
