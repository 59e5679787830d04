# JAX: jax.nn.log_sigmoid, softplus, soft_sign
import jax
y = jax.nn.log_sigmoid(x) + jax.nn.softplus(x) + jax.nn.soft_sign(x)
