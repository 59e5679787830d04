# JAX: discounted returns via cumsum of powers
import jax.numpy as jnp
def disc(rewards, gamma=0.9):
    t = jnp.arange(rewards.shape[0])
    return jnp.sum(gamma ** t * rewards)
