# JAX: batch norm training step
import jax.numpy as jnp
def batch_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(axis=0)
    var = x.var(axis=0)
    xhat = (x - mu) / jnp.sqrt(var + eps)
    return gamma * xhat + beta
