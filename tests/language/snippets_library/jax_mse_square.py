# JAX: nodepert models/losses.py mseloss
import jax.numpy as jnp
def mseloss(pred, target):
    loss = jnp.mean(jnp.square(pred - target))
    return loss
