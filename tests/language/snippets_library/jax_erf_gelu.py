# JAX: exact gelu with jax.scipy.special.erf
import jax.numpy as jnp
from jax.scipy.special import erf
def gelu(x):
    return 0.5 * x * (1 + erf(x / jnp.sqrt(2.0)))
