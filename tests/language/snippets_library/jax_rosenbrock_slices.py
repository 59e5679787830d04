# JAX: JAX rosenbrock
import jax.numpy as jnp
def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1 - x[:-1]) ** 2.0)
