# JAX: VAE ELBO gaussian kl with jnp.exp
import jax.numpy as jnp
def kl(mean, logvar):
    return -0.5 * jnp.sum(1 + logvar - jnp.square(mean) - jnp.exp(logvar))
