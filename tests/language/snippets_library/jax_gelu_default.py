# JAX: jax.nn.gelu (approximate=True by default)
import jax
def f(x):
    return jax.nn.gelu(x)
