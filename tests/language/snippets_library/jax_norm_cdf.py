# JAX: jax.scipy.stats.norm.cdf (Black-Scholes)
import jax.numpy as jnp
from jax.scipy.stats import norm
def call_price(S, K, T, r, sigma):
    d1 = (jnp.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * jnp.sqrt(T))
    d2 = d1 - sigma * jnp.sqrt(T)
    return S * norm.cdf(d1) - K * jnp.exp(-r * T) * norm.cdf(d2)
