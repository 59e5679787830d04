"""JAX's spellings beyond `jnp.` (which reads as NumPy's): `jax.nn.`, `lax.` and Optax's losses.
`jnp.split` and its kin refuse what NumPy allows (unordered cut points), `lax.select` is
`where`, `lax.slice` takes start and limit indices, Optax's `l2_loss` halves the square."""
from __future__ import annotations

from gradcli.language.dialects.spelling import ReadingError, setting
from gradcli.language.dialects.numpy import jax_numpy as _jax_numpy


def _select_reading(call):
    """np.select(conditions, choices) picks per element; lax.select(c, a, b) is where(c, a, b);
    torch.select(x, dim, index) is the slice x[index] along dim."""
    if call.library == "jax":
        return "where", {}
    if call.library == "torch" or call.method:
        return "take_slice", {}
    return None


def _slice_reading(call):
    if call.library == "jax" or call.name != "slice":
        return None
    if call.library == "tensorflow":
        return "slice_begin_size", {}
    raise ReadingError("slice(...) reads as lax.slice(x, start_indices, limit_indices) or tf.slice(x, begin, size) "
                       "(and Python's slice is an index object): write lax.slice or tf.slice")


def _cond_reading(call):
    """lax.cond(pred, true_fun, false_fun, *operands) branches; np.linalg.cond(x, p) is the condition number."""
    if call.library == "jax":
        raise ReadingError("lax.cond(pred, true_fun, false_fun, *operands) is not supported (gradcli's "
                           "cond is np.linalg.cond, a condition number): write true_fun(x) if pred else "
                           "false_fun(x), or jnp.where(pred, true_fun(x), false_fun(x))")
    return None


def _optax(kind: str):
    """optax.sgd / adam / adamw (lower/optimizers.py); optax.apply_updates(params, updates)."""
    def lower(lowering, node, values, scope):
        if not lowering.spelled(node.func).startswith("optax."):
            raise lowering.error(f"unknown function '{node.func}'", node.pos)
        if kind == "apply_updates":
            return lowering.apply_updates(node, values, scope)
        return lowering.optax_transform(kind, node, values)
    return lower


NAMES = {
    **{kind: _optax(kind) for kind in ("sgd", "adam", "adamw", "apply_updates")},
    "config.update": setting(),  # jax.config.update("jax_enable_x64", True): gradcli computes in float64
    "rem": "fmod", "soft_sign": "softsign", "hard_swish": "hard_silu",
    "slice": "slice_start_limit", "lax_slice": "slice_start_limit",
}

READINGS = {
    "array_split": lambda call: ("array_split", {"ordered": True}) if _jax_numpy(call) else None,
    "hsplit": lambda call: ("hsplit", {"ordered": True}) if _jax_numpy(call) else None,
    "vsplit": lambda call: ("vsplit", {"ordered": True}) if _jax_numpy(call) else None,
    "dsplit": lambda call: ("dsplit", {"ordered": True}) if _jax_numpy(call) else None,
    "abs": lambda call: ("abs_right_at_zero", {}) if _jax_numpy(call) else None,  # (JAX's slope at 0 is 1)
    "select": _select_reading,
    "cond": _cond_reading,
    "slice_start_limit": _slice_reading,
    # jax.nn.hard_tanh is where(x > 1, 1, where(x < -1, -1, x)), keras.ops.hard_tanh TensorFlow's clip_by_value:
    # slope 1 at -1 and 1 (PyTorch's hardtanh 0)
    "hard_tanh": lambda call: ("hard_tanh_slope_one_at_bounds", {})
    if call.library in ("jax", "keras", "tensorflow") else None,
    "l2_loss": lambda call: ("half_squared_error", {}) if call.library == "optax" else None,
    # jax.nn.sparse_sigmoid is 0.5 jnp.clip(x + 1, 0, 2): jnp.clip splits a tie, slope 1/4 at -1 and 1
    "sparse_sigmoid": lambda call: ("sparse_sigmoid_splitting_ties", {}) if call.library == "jax" else None,
    # Keras' celu (tf.keras' too: TensorFlow has no other) is maximum(x, 0) + alpha expm1(minimum(x, 0) / alpha)
    # with tf.maximum's ties: slope 2 at 0
}

ABSENT: dict = {}
