# JAX: entropic OT dual term with logsumexp over axis
import jax.numpy as jnp
from jax.scipy.special import logsumexp
def dual(f, C, eps=0.5):
    return -eps * jnp.sum(logsumexp((f[:, None] - C) / eps, axis=0))
