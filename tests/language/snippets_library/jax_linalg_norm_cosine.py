# JAX: cosine similarity loss with xp.maximum(norm, sqrt(eps))
import jax.numpy as xp
def cos_loss(x, y):
    eps = 1e-8
    y /= xp.maximum(xp.linalg.norm(y), xp.sqrt(eps))
    x /= xp.maximum(xp.linalg.norm(x), xp.sqrt(eps))
    return -xp.mean(x * y)
