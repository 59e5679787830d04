# JAX: binary cross entropy via jnp.logaddexp
import jax.numpy as jnp
def bce(logits, labels):
    return jnp.mean(jnp.logaddexp(0.0, logits) - labels * logits)
