# JAX: jax.nn activations
import jax
y = jax.nn.elu(x) + jax.nn.celu(x, alpha=0.5) + jax.nn.selu(x)
