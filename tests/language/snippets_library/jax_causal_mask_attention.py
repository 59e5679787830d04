# JAX: causal mask with jnp.tril and jnp.where(-1e10)
import jax
import jax.numpy as jnp
def attn(q, k, v):
    T = q.shape[0]
    mask = jnp.tril(jnp.ones((T, T)))
    scores = q @ k.T / jnp.sqrt(q.shape[-1])
    scores = jnp.where(mask == 0, -1e10, scores)
    return jax.nn.softmax(scores, axis=-1) @ v
