# The KL term of a variational autoencoder's loss (Kingma and Welling)
import jax.numpy as jnp

def kl_divergence(mean, logvar):
    return -0.5 * jnp.sum(1 + logvar - jnp.square(mean) - jnp.exp(logvar))
