# JAX documentation, jax.numpy.ndarray.at: x.at[idx].set(y) and x.at[idx].add(y) (repeated indices accumulate)
import jax.numpy as jnp

def update(x, y):
    x = x.at[0].set(y[0])
    return x.at[jnp.array([1, 1, 2])].add(y)
