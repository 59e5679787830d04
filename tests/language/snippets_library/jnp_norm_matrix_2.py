# JAX: a spelling whose meaning differs between libraries, checked against JAX
import jax.numpy as jnp
y = jnp.linalg.norm(x, 2)
