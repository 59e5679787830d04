# JAX: jnp.take_along_axis NLL (optax integer labels style)
import jax
import jax.numpy as jnp
labels = jnp.array([[1], [0], [3]])
def loss(logits):
    log_p = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(log_p, labels, axis=-1))
