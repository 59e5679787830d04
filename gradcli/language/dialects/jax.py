"""JAX's spellings beyond `jnp.` (which reads as NumPy's): `jax.nn.`, `lax.` and Optax's losses.
`jnp.split` and its kin refuse what NumPy allows (unordered cut points), `lax.select` is
`where`, `lax.slice` takes start and limit indices, Optax's `l2_loss` halves the square."""
from __future__ import annotations

from gradcli.language.dialects import layers
from gradcli.language.dialects.spelling import ReadingError, composer, setting
from gradcli.language.dialects.numpy import jax_numpy as _jax_numpy, random_draw


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


def _lax_round_reading(call):
    if call.library != "jax":
        return None
    if call.positional > 1 or call.keywords:
        raise ReadingError("lax.round(x, rounding_method) is not supported: write lax.round(x) (halves away from "
                           "zero) or jnp.round(x) (halves to even)")
    return "round_half_away", {}


def _standardize(lowering, node, values, scope):
    """jax.nn.standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, algorithm="fast"):
    (x - mean) * rsqrt(variance + epsilon), the variance mean(x^2) - mean^2 clipped at 0 ("fast",
    JAX's default) or mean((x - mean)^2) ("stable"), as JAX computes them."""
    given = lowering.arguments_by_name(node, values, ("x", "axis", "mean", "variance", "epsilon", "where", "algorithm"))
    label, pos = node.func, node.pos
    if "where" in given and not lowering.is_none(given["where"]):
        raise lowering.error(f"{label}(where=...) is not supported: standardize the elements you mean", pos)
    algorithm = lowering.static_param("algorithm", given["algorithm"], label, pos) if "algorithm" in given else "fast"
    if algorithm not in ("fast", "stable"):
        raise lowering.error(f"{label}: unknown algorithm {algorithm!r}; JAX's are 'fast' and 'stable'", pos)
    axis = given.get("axis")
    axis = -1 if axis is None else None if lowering.is_none(axis) else lowering.static_param("axis", axis, label, pos)

    op, number = composer(lowering, pos, label, scope)

    def given_or(name, make):
        value = given.get(name)
        return make() if value is None or lowering.is_none(value) else lowering.materialize(value, scope)

    x = lowering.materialize(given["x"], scope)
    mean = given_or("mean", lambda: op("mean", x, axis=axis, keepdims=True))
    if algorithm == "stable":
        variance = given_or("variance", lambda: op("mean", op("square", op("subtract", x, mean)), axis=axis, keepdims=True))
    else:
        variance = given_or("variance", lambda: op("maximum", op("subtract", op("mean", op("square", x), axis=axis,
                                                                                   keepdims=True), op("square", mean)),
                                                  number(0.0)))
    epsilon = lowering.materialize(given["epsilon"], scope) if "epsilon" in given else number(1e-5)
    return op("multiply", op("subtract", x, mean), op("rsqrt", op("add", variance, epsilon)))


def _dimension_groups(lowering, value, label: str, pos) -> tuple:
    """dimension_numbers ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)) as four
    tuples of integers, written in the program."""
    numbers = lowering.nested_numbers(value)
    sides = numbers if isinstance(numbers, list) and len(numbers) == 2 else []
    groups = [side if isinstance(side, list) else [side]  # (one axis may be written bare, as JAX takes it)
              for pair in sides if isinstance(pair, list) and len(pair) == 2 for side in pair]
    if len(groups) != 4 or any(not isinstance(g, list) or any(isinstance(a, list) or a != int(a) for a in g)
                               for g in groups):
        raise lowering.error(f"{label}(): dimension_numbers must be ((lhs_contracting, rhs_contracting), "
                             "(lhs_batch, rhs_batch)), tuples of integer axes written in the program", pos)
    return tuple(tuple(int(a) for a in g) for g in groups)


def _dot_general(lowering, node, values, scope):
    """lax.dot_general(lhs, rhs, dimension_numbers): the products summed over the contracting axes,
    taken pairwise along the batch axes; the result's axes are the batch ones, then lhs's and rhs's
    others in order, as JAX's (an einsum)."""
    given = lowering.arguments_by_name(node, values, ("lhs", "rhs", "dimension_numbers", "precision",
                                                      "preferred_element_type"), required=3)
    label, pos = node.func, node.pos
    if "preferred_element_type" in given and not lowering.is_none(given["preferred_element_type"]):
        raise lowering.error(f"{label}(preferred_element_type=...) is not supported: cast the operands", pos)
    lhs_c, rhs_c, lhs_b, rhs_b = _dimension_groups(lowering, given["dimension_numbers"], label, pos)
    shapes = [lowering.shape_of(given[side]) for side in ("lhs", "rhs")]
    ndims = [len(shape) for shape in shapes]
    for axes, ndim in ((lhs_c + lhs_b, ndims[0]), (rhs_c + rhs_b, ndims[1])):
        if any(not -ndim <= a < ndim for a in axes) or len({a % ndim for a in axes}) != len(axes):
            raise lowering.error(f"{label}(): dimension_numbers name axes {axes} of an operand with {ndim} axes", pos)
    if len(lhs_c) != len(rhs_c) or len(lhs_b) != len(rhs_b):
        raise lowering.error(f"{label}(): lhs and rhs must name as many contracting and batch axes", pos)
    for left, right in zip(lhs_c + lhs_b, rhs_c + rhs_b):
        if shapes[0][left] != shapes[1][right]:
            raise lowering.error(f"{label}(): lhs axis {left} (length {shapes[0][left]}) and rhs axis {right} "
                                 f"(length {shapes[1][right]}) are paired but differ in length", pos)
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    lhs = [next(letters) for _ in range(ndims[0])]
    rhs = [next(letters) for _ in range(ndims[1])]
    for left, right in zip(lhs_c + lhs_b, rhs_c + rhs_b):
        rhs[right % ndims[1]] = lhs[left % ndims[0]]
    batch = [lhs[a % ndims[0]] for a in lhs_b]
    shared = {lhs[a % ndims[0]] for a in lhs_c + lhs_b}
    out = batch + [c for c in lhs if c not in shared] + [c for k, c in enumerate(rhs) if k not in
                                                          {a % ndims[1] for a in rhs_c + rhs_b}]
    op, _ = composer(lowering, pos, label, scope)
    operands = [lowering.materialize(given[side], scope) for side in ("lhs", "rhs")]
    return op("einsum", *operands, subscripts=f"{''.join(lhs)},{''.join(rhs)}->{''.join(out)}")


def _calling(method: str, op: str | None = None):
    """lax.fori_loop, scan, while_loop, cond, switch: they call functions, lowered by
    lower/function_values.py on the lowering's work stack (`calls_functions`: the transformation is
    handed it). `op`: the op the same bare name is in another library (np.linalg.cond)."""
    def lower(lowering, node, values, scope, work):
        if op is not None and lowering.library_of(node) != "jax":
            return lowering.call_op_named(node, values, scope, op)
        return getattr(lowering, method)(node, values, scope, work)
    lower.calls_functions = True
    lower.op_name = op
    return lower


def _optax(kind: str):
    """optax.sgd / adam / adamw / rmsprop (lower/optimizers.py); optax.apply_updates(params, updates)."""
    def lower(lowering, node, values, scope):
        if not lowering.spelled(node.func).startswith("optax."):
            raise lowering.error(f"unknown function '{node.func}'", node.pos)
        if kind == "apply_updates":
            return lowering.apply_updates(node, values, scope)
        return lowering.optax_transform(kind, node, values)
    return lower


NAMES = {
    "standardize": _standardize, "fori_loop": _calling("fori_loop"), "scan": _calling("scan"),
    "while_loop": _calling("while_loop"), "dot_general": _dot_general, "dot_product_attention": layers.jax_attention, "switch": _calling("branch"), "cond": _calling("branch", "cond"),
    **{kind: _optax(kind) for kind in ("sgd", "adam", "adamw", "rmsprop", "apply_updates")},
    **{f"random.{name}": random_draw for name in ("PRNGKey", "key", "split", "fold_in", "bernoulli", "key_data")},
    "config.update": setting(),  # jax.config.update("jax_enable_x64", True): gradcli computes in float64
    "rem": "fmod", "soft_sign": "softsign", "hard_swish": "hard_silu",
    "slice": "slice_start_limit", "lax_slice": "slice_start_limit",
    "batch_matmul": "matmul",  # lax.batch_matmul(lhs, rhs): matmul over the leading (batch) axes
    "erf_inv": "erfinv", "rev": "flip",  # lax.erf_inv(x); lax.rev(x, dimensions) reverses those axes
    "integer_pow": "power",  # lax.integer_pow(x, y): x ** y for a constant integer y
}

READINGS = {
    "array_split": lambda call: ("array_split", {"ordered": True}) if _jax_numpy(call) else None,
    "hsplit": lambda call: ("hsplit", {"ordered": True}) if _jax_numpy(call) else None,
    "vsplit": lambda call: ("vsplit", {"ordered": True}) if _jax_numpy(call) else None,
    "dsplit": lambda call: ("dsplit", {"ordered": True}) if _jax_numpy(call) else None,
    "abs": lambda call: ("abs_right_at_zero", {}) if _jax_numpy(call) else None,  # (JAX's slope at 0 is 1)
    "select": _select_reading,
    "slice_start_limit": _slice_reading,
    # jax.nn.hard_tanh is where(x > 1, 1, where(x < -1, -1, x)), keras.ops.hard_tanh TensorFlow's clip_by_value:
    # slope 1 at -1 and 1 (PyTorch's hardtanh 0)
    "hard_tanh": lambda call: ("hard_tanh_slope_one_at_bounds", {})
    if call.library in ("jax", "keras", "tensorflow") else None,
    "l2_loss": lambda call: ("half_squared_error", {}) if call.library == "optax" else None,
    # jax.nn.sparse_sigmoid is 0.5 jnp.clip(x + 1, 0, 2): jnp.clip splits a tie, slope 1/4 at -1 and 1
    "sparse_sigmoid": lambda call: ("sparse_sigmoid_splitting_ties", {}) if call.library == "jax" else None,
    # lax.round(x) takes halves away from zero (its rounding_method defaults to AWAY_FROM_ZERO), jnp.round to even
    "round": _lax_round_reading,
    # Keras' celu (tf.keras' too: TensorFlow has no other) is maximum(x, 0) + alpha expm1(minimum(x, 0) / alpha)
    # with tf.maximum's ties: slope 2 at 0
}

ABSENT: dict = {}
