# JAX: RMSNorm (T5 / LLaMA style)
import jax
import jax.numpy as jnp
def rms_norm(x, weight, eps=1e-6):
    var = jnp.mean(jnp.square(x), axis=-1, keepdims=True)
    return weight * x * jax.lax.rsqrt(var + eps)
