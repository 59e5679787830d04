# JAX: softmax with inputs.max(axis=1, keepdims=True)
import jax.numpy as xp
def softmax(inputs):
    un_normalized = xp.exp(inputs - inputs.max(axis=1, keepdims=True))
    return un_normalized / xp.sum(un_normalized, axis=1, keepdims=True)
