# JAX: jax.nn.leaky_relu default slope 0.01
import jax
y = jax.nn.leaky_relu(x)
