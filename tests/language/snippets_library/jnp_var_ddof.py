# JAX: a spelling whose meaning differs between libraries, checked against JAX
import jax.numpy as jnp
y = jnp.var(x, axis=0, ddof=1) + jnp.std(x)
