# Optax documentation: a classifier's loss, optax.softmax_cross_entropy(logits, labels).mean()
import optax

def loss_fn(logits, labels):
  return optax.softmax_cross_entropy(logits, labels).mean()
