# JAX: pairwise distances by broadcasting (JAX MD)
import jax.numpy as jnp
def energy(R):
    dR = R[:, None, :] - R[None, :, :]
    dr2 = jnp.sum(dR ** 2, axis=-1) + jnp.eye(R.shape[0])
    return 0.5 * jnp.sum((1 - jnp.eye(R.shape[0])) / jnp.sqrt(dr2))
