# JAX: a spelling whose meaning differs between libraries, checked against JAX
import jax
import jax.numpy as jnp
def f(logits):
    labels = jnp.array([0, 3, 1])
    return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(3), labels])
