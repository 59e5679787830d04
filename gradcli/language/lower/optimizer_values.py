"""The values of the optimizers a program makes (optimizers.py steps them): torch.optim's, optax's
transformations and their states, Keras'. Apart from the lowering, so that clipping.py,
schedules.py and optax_chain.py can name them."""
from __future__ import annotations

from gradcli.records import ValueRecord


class Optimizer(ValueRecord):
    """A torch.optim optimizer: its kind, its parameters (leaf ids, updated at each step), its
    options, and its state per parameter (momentum buffer; Adam's averages and step count)."""

    __slots__ = _fields = ("kind", "params", "options", "state", "pos")


class OptaxTransform(ValueRecord):
    """`optax.sgd(0.1)`, `optax.adam(1e-3)`, `optax.adamw(...)`: a gradient transformation."""

    __slots__ = _fields = ("kind", "options", "pos")


class OptaxState(ValueRecord):
    """What `opt.init(params)` and `opt.update(...)` give: the step count and the moments, each a
    list of leaf ids in JAX's leaf order ("trace" for SGD's momentum; "mu", "nu" for Adam's)."""

    __slots__ = _fields = ("kind", "count", "moments", "pos")


class KerasOptimizer(ValueRecord):
    """`tf.keras.optimizers.SGD(...)` / `Adam(...)`: its options, its step count (`iterations`) and its
    state per variable (the variable's current id -> momentum, velocity)."""

    __slots__ = _fields = ("kind", "options", "iterations", "state", "pos")
