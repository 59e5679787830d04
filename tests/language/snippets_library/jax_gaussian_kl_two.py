# JAX: KL between diagonal gaussians
import jax.numpy as jnp
def kl_normal(mu1, log_sigma1, mu2, log_sigma2):
    return jnp.sum(log_sigma2 - log_sigma1 + (jnp.exp(2 * log_sigma1) + (mu1 - mu2) ** 2) / (2 * jnp.exp(2 * log_sigma2)) - 0.5)
