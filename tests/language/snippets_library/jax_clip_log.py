# JAX: BCE of probabilities with jnp.clip
import jax.numpy as jnp
def bce(p, y, eps=1e-7):
    p = jnp.clip(p, eps, 1 - eps)
    return -jnp.mean(y * jnp.log(p) + (1 - y) * jnp.log1p(-p))
