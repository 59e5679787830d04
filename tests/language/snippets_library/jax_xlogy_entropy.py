# JAX: entropy with jax.scipy.special.xlogy / entr
import jax.numpy as jnp
from jax.scipy.special import xlogy, entr
def h(p):
    return -jnp.sum(xlogy(p, p)) + jnp.sum(entr(p))
