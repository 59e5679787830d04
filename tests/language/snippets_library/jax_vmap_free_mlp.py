# JAX: JAX quickstart predict with tanh layers
import jax.numpy as jnp
def predict(W1, b1, W2, b2, inputs):
    hidden = jnp.tanh(jnp.dot(inputs, W1) + b1)
    return jnp.dot(hidden, W2) + b2
