# JAX: optax hinge_loss body
import jax.numpy as jnp
def hinge_loss(predictor_outputs, targets):
    return jnp.maximum(0, 1 - predictor_outputs * targets)
