# JAX: soft cross entropy with softmax target
import jax
import jax.numpy as jnp
def soft_x_ent(pred, target):
    logprobs = jax.nn.log_softmax(pred)
    return jnp.mean(-jnp.sum(jax.nn.softmax(target) * logprobs, axis=1))
