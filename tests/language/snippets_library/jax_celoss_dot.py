# JAX: nodepert models/losses.py celoss
import jax.numpy as jnp
def celoss(logsoftmaxpred, target):
    loss = -jnp.dot(logsoftmaxpred, target).sum()
    return loss
