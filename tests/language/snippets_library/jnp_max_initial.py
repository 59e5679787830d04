# JAX: a spelling whose meaning differs between libraries, checked against JAX
import jax.numpy as jnp
y = jnp.max(x, axis=1, keepdims=True) - x
