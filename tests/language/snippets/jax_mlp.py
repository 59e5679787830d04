# A two-layer network's loss, as the JAX tutorials write one
import jax
import jax.numpy as jnp

def predict(params, x):
    W1, b1, W2, b2 = params
    h = jax.nn.relu(x @ W1 + b1)
    return h @ W2 + b2

def loss(W1, b1, W2, b2, x, y):
    preds = predict((W1, b1, W2, b2), x)
    return jnp.mean((preds - y) ** 2)
