# JAX: fortuna loss/classification/cross_entropy.py
import jax.numpy as jnp
import jax.scipy as jsp
def cross_entropy_loss_fn(outputs, targets):
    return jnp.mean(jsp.special.logsumexp(outputs, -1) - jnp.sum(targets * outputs, -1))
