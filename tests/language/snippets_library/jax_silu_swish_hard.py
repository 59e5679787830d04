# JAX: jax.nn.silu, swish, hard_tanh, relu6, hard_sigmoid
import jax
y = jax.nn.silu(x) + jax.nn.swish(x) + jax.nn.hard_tanh(x) + jax.nn.relu6(3 * x) + jax.nn.hard_sigmoid(x)
