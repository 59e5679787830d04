# JAX: Poisson regression NLL with gammaln
import jax.numpy as jnp
from jax.scipy.special import gammaln
def nll(log_rate, counts):
    return jnp.sum(jnp.exp(log_rate) - counts * log_rate + gammaln(counts + 1))
