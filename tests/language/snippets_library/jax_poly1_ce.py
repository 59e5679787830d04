# JAX: optax poly_loss_cross_entropy style
import jax
import jax.numpy as jnp
def poly_loss(logits, labels, epsilon=2.0):
    one_minus_pt = jnp.sum(labels * (1 - jax.nn.softmax(logits)), axis=-1)
    ce = -jnp.sum(labels * jax.nn.log_softmax(logits), axis=-1)
    return ce + epsilon * one_minus_pt
