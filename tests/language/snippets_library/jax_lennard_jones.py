# JAX: JAX MD style Lennard-Jones energy
import jax.numpy as jnp
def lj(r, sigma=1.0, epsilon=1.0):
    idr6 = (sigma / r) ** 6
    return jnp.sum(4 * epsilon * (idr6 ** 2 - idr6))
