# Optax documentation, "Getting started": the loss of a linear model with optax.l2_loss
import jax.numpy as jnp
import optax

def compute_loss(params, x, y):
  y_pred = jnp.dot(x, params)
  loss = jnp.mean(optax.l2_loss(y_pred, y))
  return loss
