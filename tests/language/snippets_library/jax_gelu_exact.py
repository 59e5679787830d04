# JAX: jax.nn.gelu(approximate=False)
import jax
def f(x):
    return jax.nn.gelu(x, approximate=False)
