# JAX quickstart: the function whose gradient the tutorial takes
import jax.numpy as jnp

def sum_logistic(x):
  return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))
