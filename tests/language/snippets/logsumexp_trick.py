# The log-sum-exp trick
import numpy as np

def logsumexp(x):
    c = x.max()
    return c + np.log(np.sum(np.exp(x - c)))
