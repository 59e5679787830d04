# JAX: contrastive logits with normalized embeddings
import jax
import jax.numpy as jnp
def ntxent(z1, z2, temperature=0.5):
    z1 = z1 / jnp.linalg.norm(z1, axis=1, keepdims=True)
    z2 = z2 / jnp.linalg.norm(z2, axis=1, keepdims=True)
    logits = z1 @ z2.T / temperature
    return -jnp.mean(jnp.diag(jax.nn.log_softmax(logits, axis=1)))
