# JAX: jax.nn.glu
import jax
y = jax.nn.glu(x)
