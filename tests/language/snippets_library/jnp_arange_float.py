# JAX: a spelling whose meaning differs between libraries, checked against JAX
import jax.numpy as jnp
y = jnp.sum(jnp.arange(0.0, 1.0, 0.25) * a)
