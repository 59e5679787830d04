# JAX: flax MNIST tutorial cross_entropy_loss with jax.nn.one_hot
import jax
import jax.numpy as jnp
labels = jnp.array([1, 0, 2])
def cross_entropy_loss(logits):
    one_hot_labels = jax.nn.one_hot(labels, num_classes=4)
    return -jnp.mean(jnp.sum(one_hot_labels * jax.nn.log_softmax(logits), axis=-1))
