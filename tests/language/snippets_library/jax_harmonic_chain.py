# JAX: spring chain energy with jnp.diff
import jax.numpy as jnp
def energy(x, k=2.0):
    return 0.5 * k * jnp.sum(jnp.diff(x) ** 2)
