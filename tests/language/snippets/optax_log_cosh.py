# Optax's log_cosh loss
import jax.numpy as jnp

def log_cosh(predictions, targets):
  errors = predictions - targets
  # log(cosh(x)) = log((exp(x) + exp(-x))/2) = log(exp(x) + exp(-x)) - log(2)
  return jnp.logaddexp(errors, -errors) - jnp.log(2.0).astype(errors.dtype)
