# NumPy: NumPy scaled dot-product attention with np.max keepdims
import numpy as np
def attention(Q, K, V):
    dk = Q.shape[-1]
    scores = np.matmul(Q, K.T) / np.sqrt(dk)
    scores = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    scores /= np.sum(scores, axis=-1, keepdims=True)
    return np.matmul(scores, V)
