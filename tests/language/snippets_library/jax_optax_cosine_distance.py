# JAX: optax cosine_similarity body
import jax.numpy as jnp
def cosine_similarity(predictions, targets, epsilon=0.0):
    unit_targets = targets / jnp.expand_dims(jnp.clip(jnp.linalg.norm(targets, axis=-1), min=epsilon), axis=-1)
    unit_predictions = predictions / jnp.expand_dims(jnp.clip(jnp.linalg.norm(predictions, axis=-1), min=epsilon), axis=-1)
    return jnp.sum(unit_targets * unit_predictions, axis=-1)
