# JAX: Gaussian mixture log-likelihood
import jax
import jax.numpy as jnp
def loglik(x, means, log_weights):
    log_w = jax.nn.log_softmax(log_weights)
    comp = -0.5 * (x[:, None] - means[None, :]) ** 2 - 0.5 * jnp.log(2 * jnp.pi)
    return jnp.sum(jax.scipy.special.logsumexp(log_w + comp, axis=1))
