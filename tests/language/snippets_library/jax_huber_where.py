# JAX: optax huber_loss body
import jax.numpy as jnp
def huber_loss(predictions, targets, delta=1.0):
    errors = predictions - targets
    abs_errors = jnp.abs(errors)
    quadratic = jnp.minimum(abs_errors, delta)
    linear = abs_errors - quadratic
    return 0.5 * quadratic ** 2 + delta * linear
