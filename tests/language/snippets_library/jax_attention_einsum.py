# JAX: flax dot_product_attention core (einsum)
import jax
import jax.numpy as jnp
def attention(query, key, value):
    depth = query.shape[-1]
    query = query / jnp.sqrt(depth)
    attn_weights = jnp.einsum('...qhd,...khd->...hqk', query, key)
    attn_weights = jax.nn.softmax(attn_weights)
    return jnp.einsum('...hqk,...khd->...qhd', attn_weights, value)
