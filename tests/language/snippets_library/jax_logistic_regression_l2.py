# JAX: JAX logistic regression with l2
import jax
import jax.numpy as jnp
def loss(w, X, y, lam=0.1):
    logits = X @ w
    return jnp.mean(jax.nn.softplus(logits) - y * logits) + lam * jnp.dot(w, w)
