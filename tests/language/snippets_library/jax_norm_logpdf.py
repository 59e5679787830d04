# JAX: jax.scipy.stats.norm.logpdf negative log-likelihood
import jax.numpy as jnp
from jax.scipy.stats import norm
def nll(mu, x):
    return -jnp.sum(norm.logpdf(x, loc=mu, scale=2.0))
