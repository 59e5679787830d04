"""TensorFlow's spellings (`tf.`, `tf.math.`, `tf.nn.`, `tf.linalg.`) and Keras' (`keras.ops.`,
`keras.losses.`, `K.`): their names for the table's functions (`reduce_max`, `concat`,
`clip_by_value`), and the readings where their defaults or arguments differ (TensorFlow's cumsum
scans axis 0, its svd is reduced and ordered (s, u, v), Keras' losses average each sample)."""
from __future__ import annotations

import numpy as np

from gradcli.language import syntax as ast
from gradcli.language.dialects import layers
from gradcli.language.dialects.spelling import ReadingError, Spelling, assertion, composer, setting
from gradcli.ops import OPS, index as ops_index
from gradcli.language.dialects.numpy import jax_numpy


def _library_default(op_name: str, param: str, values: dict, message: str, keywords=()):
    given = (lambda call: call.positional >= 2 or param in call.keywords
             or any(k in call.keywords for k in keywords))

    def reading(call):
        if given(call):
            return None
        if call.library in values:
            return op_name, {param: values[call.library]}
        raise ReadingError(message.format(name=call.name))
    return reading


def _tensorflow_axis_zero(name):
    """TensorFlow's cumsum/cumprod and jax.lax's scan axis 0 by default; NumPy's (jnp's) flatten the array."""
    def reading(call):
        if call.library in ("tensorflow", "jax") and call.positional < 2 and "axis" not in call.keywords:
            return name, {"axis": 0}
        if call.library == "torch" and call.positional < 2 and not {"axis", "dim"} & set(call.keywords):
            raise ReadingError(f"torch.{name}(x, dim) needs its dim (PyTorch has no default; NumPy's flattens "
                               f"the array); write torch.{name}(x, dim=...)")
        return None
    return reading


def _tensorflow_arg_extreme(name):
    """tf.math.argmax/argmin without an axis take axis 0 (NumPy's, PyTorch's and Keras' flatten
    the array)."""
    def reading(call):
        if call.library == "tensorflow" and call.positional < 2 and "axis" not in call.keywords:
            return name, {"axis": 0}
        return None
    return reading


def _clip_reading(call):
    """tf.clip_by_value refuses lo > hi (ordered); jnp.clip is minimum(maximum(x, lo), hi), whose
    slope at a bound is 1/2, autograd's is 0 there (NumPy's and PyTorch's clip pass the whole
    gradient to x there)."""
    if call.library in ("tensorflow", "keras"):
        return "clip", {"ordered": True}
    if jax_numpy(call):
        return "clip_splitting_ties", {}
    if call.spelled.startswith("autograd.numpy."):  # autograd's: 0 at a bound (ans != a_min and ans != a_max)
        return "clip_zero_at_bounds", {}
    return None


_LEAKY_RELU_SLOPE = _library_default(
    "leaky_relu", "alpha", {"tensorflow": 0.2, "keras": 0.2, "jax": 0.01, "torch": 0.01},
    "{name}(x) without a slope: TensorFlow and Keras default to 0.2, JAX and PyTorch to 0.01; "
    "write {name}(x, alpha=...)", keywords=("negative_slope",))


def _leaky_relu_reading(call):
    """The default slope per library; JAX's leaky_relu is where(x >= 0, x, alpha x): slope 1 at 0
    (TensorFlow's and PyTorch's take alpha there)."""
    chosen = _LEAKY_RELU_SLOPE(call)
    if call.library != "jax":
        return chosen
    # (the preset slope is JAX's default, 0.01, the composite's own default too)
    return "leaky_relu_slope_one_at_zero", chosen[1] if chosen else {}


def _norm_reading(call):
    """tf.norm treats the array as one vector unless axis is a pair (NumPy's ord of a matrix is a
    matrix norm): without ord it is sqrt(reduce_sum(x * x)) along axis (norm_by_square_root), with ord
    and no axis vector_norm, with both it is refused. torch.norm(x, p, dim) and
    x.norm(p, dim) are PyTorch's own (norm_p: a number p is a vector norm over dim);
    torch.linalg.norm(x, ord, dim) is NumPy's (a matrix norm of a matrix)."""
    if call.library == "torch" and "linalg." in call.spelled:
        return None
    if call.library == "torch":
        return "norm_p", {}
    if call.library == "tensorflow":
        if (call.positional > 2 or "axis" in call.keywords) and (call.positional > 1 or "ord" in call.keywords):
            raise ReadingError(f"{call.library}'s norm with ord and axis: TensorFlow's ord applies to the vectors "
                               "along axis unless axis is a pair, then to matrices as a matrix norm; write "
                               "vector_norm(x, ord=..., axis=...) or matrix_norm(x, ord=..., axis=...)")
        if call.positional > 1 or "ord" in call.keywords:
            return "vector_norm", {}  # (without axis, the whole tensor is one vector)
        return "norm_by_square_root", {}  # 'euclidean', TensorFlow's sqrt(reduce_sum(x * x)): NaN slope at 0
    if (jax_numpy(call) or call.spelled.startswith("autograd.numpy.")) and call.positional < 2 \
            and "ord" not in call.keywords:
        return "norm_by_square_root", {}  # JAX's and autograd's: the same (PyTorch's gives 0 there)
    if jax_numpy(call):
        return "norm_abs_right_at_zero", {}  # JAX's |x| has slope 1 at 0 (ord 1, inf: sums of |x|)
    return None


def _concat_reading(call):
    # tf.concat(values, axis) has no default axis; keras.backend.concatenate's is -1
    given = call.positional >= 2 or "axis" in call.keywords or "dim" in call.keywords
    if call.library == "tensorflow" and not given:
        raise ReadingError("tf.concat(values, axis) needs its axis (TensorFlow has no default)")
    if call.library == "keras" and not given:
        raise ReadingError(f"{call.name}() without an axis: keras.ops.concatenate joins on axis 0, "
                           "keras.backend.concatenate on axis -1; write axis=...")
    return None


def _diag_reading(call):
    if call.library == "tensorflow":  # tf.linalg.diag / tf.diag: batched vectors to matrices
        return "diag_embed", {}
    return None


def _gather_reading(call):
    """tf.gather(x, indices, axis=0) takes slices; torch.gather(x, dim, index) takes elements
    (np.take_along_axis)."""
    if call.library == "torch" or call.method:
        return "gather_elements", {}
    if call.library in ("tensorflow", "keras") or call.name != "gather":
        return None
    raise ReadingError("gather() without its library: tf.gather(x, indices, axis=0) takes whole slices "
                       "(np.take), torch.gather(x, dim, index) single elements (np.take_along_axis); write "
                       "tf.gather or torch.gather")


def _triangular_reading(call: Spelling):
    if call.library == "tensorflow" and "lower" not in call.keywords:
        return "solve_triangular", {"lower": True}  # tf.linalg.triangular_solve: lower by default
    if call.library == "torch" and "upper" not in call.keywords:
        raise ReadingError("torch.linalg.solve_triangular needs upper=True or upper=False")
    return None


def _svd_reading(call: Spelling):
    if "compute_uv" in call.keywords:  # svd(a, compute_uv=False): the singular values alone, one array
        return "svd_values_only", {}
    if call.library == "tensorflow":
        preset = {"layout": "suv"}
        if "full_matrices" not in call.keywords and call.positional < 2:
            preset["full_matrices"] = False  # tf.linalg.svd: reduced by default
        return "svd", preset
    if call.library == "torch":
        if "some" in call.keywords:
            return "svd", {"layout": "usv"}
        if "full_matrices" not in call.keywords:
            raise ReadingError("torch.svd(a) returns V and full matrices only with some=False; torch.linalg.svd(a) "
                               "returns Vh and full matrices by default: gradcli cannot tell which is meant here; "
                               "write some=... (torch.svd) or full_matrices=... (torch.linalg.svd)")
    return None


def _hard_sigmoid_reading(call):
    if call.name == "hardsigmoid" or call.library in ("jax", "torch"):
        return None
    raise ReadingError(f"{call.name}: Keras 2 (tf.keras before TensorFlow 2.16) defines it as "
                       "clip(0.2 * x + 0.5, 0, 1), JAX, PyTorch and Keras 3 as relu6(x + 3) / 6; "
                       "write the one you mean, or jax.nn.hard_sigmoid(x)")


def _log_cosh_reading(call):
    """Optax's log_cosh(predictions, targets) and Keras' loss log_cosh(y_true, y_pred) are
    losses of a difference (gradcli.ops.nn); keras.ops.log_cosh(x) would not take two."""
    if call.library == "optax":
        return "log_cosh_error", {}
    if call.library in ("keras", "tensorflow") and call.positional + len(call.keywords) >= 2:
        return "log_cosh_last_mean", {}
    return None


def _cosine_reading(spelling):
    """PyTorch's F.cosine_similarity (dim=1), Keras' loss (negative, last axis), Optax's (last
    axis); a bare name is refused."""
    if spelling.library == "keras" or (spelling.library == "tensorflow" and "losses" in spelling.spelled):
        return "negative_cosine_similarity", {}
    if spelling.library == "optax":
        return "cosine_similarity_last", {}
    if spelling.library in ("python", "tensorflow", "nn"):
        raise ReadingError(f"{spelling.name}: PyTorch's F.cosine_similarity reduces dim=1, Keras' loss is the "
                           "negative similarity over the last axis, Optax's the similarity over the last axis; "
                           "write F., keras.losses. or optax.")
    return None


def _conv2d_reading(spelling):
    if spelling.library == "torch":
        return "conv2d_nchw", {}
    if spelling.library in ("tensorflow", "keras"):
        return None
    raise ReadingError(f"{spelling.name}: TensorFlow's tf.nn.conv2d(input, filters, strides, padding) takes NHWC "
                       "input and (KH, KW, in, out) filters, PyTorch's F.conv2d(input, weight) NCHW input and "
                       "(out, in, KH, KW) weights; write tf.nn.conv2d or F.conv2d")


# keras.losses.NAME(y_true, y_pred): one loss per sample, averaged over the last axis. The bare
# names are refused: scikit-learn's metrics of the same names average over every element.
def _keras_reading(name, optax=None):
    def reading(spelling):
        if spelling.library in ("keras", "tensorflow"):
            return None
        if spelling.library == "optax" and optax:
            return optax, {}
        if spelling.library != "python":
            raise ReadingError(f"{spelling.name}: gradcli's {spelling.name} is Keras' loss (y_true, y_pred), not "
                               f"{spelling.library}'s; write keras.losses.{spelling.name}(y_true, y_pred)")
        raise ReadingError(f"{spelling.name}: Keras' {name} gives one loss per sample (averaged over the last "
                           f"axis), scikit-learn's metric averages every element; write keras.losses."
                           f"{spelling.name}(y_true, y_pred), or the mean you mean")
    return reading


def keras_ops_spelling(call) -> bool:
    """`keras.ops.NAME` (also `from keras import ops`, `tf.keras.ops.`) or a Keras backend's
    `K.NAME`: the functions of one tensor, whose defaults differ from keras.losses' and
    keras.activations' functions of the same names."""
    spelled = call.spelled
    return call.library in ("keras", "tensorflow") and (
        spelled.startswith(("ops.", "K.", "backend.")) or ".ops." in spelled or ".backend." in spelled)


def _gelu_reading(call):
    """keras.ops.gelu(x) defaults to approximate=True (the tanh form), keras.activations.gelu and
    tf.nn.gelu to the exact x Phi(x)."""
    if call.positional < 2 and "approximate" not in call.keywords and keras_ops_spelling(call):
        return "gelu", {"approximate": True}
    return _GELU_DEFAULT(call)


def _keras_bce_reading(call):
    """keras.ops.binary_crossentropy and tf.keras.backend.binary_crossentropy give one loss per
    element; keras.losses.binary_crossentropy averages the last axis."""
    if keras_ops_spelling(call):
        return "binary_crossentropy_elementwise", {}
    return _keras_reading("binary_crossentropy")(call)


_GELU_DEFAULT = _library_default(
    "gelu", "approximate", {"tensorflow": False, "keras": False, "torch": False, "jax": True},
    "{name}(x) without approximate=: TensorFlow, Keras and PyTorch default to the exact x Phi(x), "
    "JAX (and Flax) to the tanh approximation; write {name}(x, approximate=False) or True")

_KERAS_LOSSES = ("mean_squared_error", "mean_absolute_error", "mean_absolute_percentage_error",
                 "mean_squared_logarithmic_error", "poisson", "hinge", "squared_hinge", "categorical_hinge",
                 "categorical_crossentropy", "sparse_categorical_crossentropy", "binary_crossentropy")

def _indexed(lowering, node, x, index: tuple, scope):
    """x[index] (a tuple of ints, slices, IndexArrays), checked against x's shape as a subscript is."""
    return lowering.emit(OPS["index"], (x,), {"index": lowering.checked_index(x, index, node.pos)},
                         node.pos, node.func, scope)


def _boolean_mask(lowering, node, values, scope):
    """tf.boolean_mask(tensor, mask, axis=None): the elements where the constant mask is True, the
    mask covering the axes from `axis` (NumPy's x[mask])."""
    given = lowering.arguments_by_name(node, values, ("tensor", "mask", "axis", "name"), required=2)
    x = lowering.materialize(given["tensor"], scope)
    mask = lowering.static_index(given["mask"], node.pos)
    if not isinstance(mask, ops_index.IndexArray) or mask.array.dtype != bool:
        raise lowering.error(f"{node.func}(tensor, mask): the mask must be booleans written in the program "
                             "(True/False, or a comparison of constants)", node.pos)
    axis = 0 if "axis" not in given or lowering.is_none(given["axis"]) else \
        lowering.static_param("axis", given["axis"], node.func, node.pos)
    ndim = len(lowering.graph.shapes[x])
    axis = axis % ndim if ndim else axis
    if not 0 <= axis <= ndim - mask.array.ndim:
        raise lowering.error(f"{node.func}: a mask of {mask.array.ndim} axes from axis {axis} does not fit a "
                             f"tensor of {ndim} axes", node.pos)
    return _indexed(lowering, node, x, ((None, None, None),) * axis + (mask,), scope)  # (a slice: a triple)


def _gather_nd(lowering, node, values, scope):
    """tf.gather_nd(params, indices): params[indices[..., 0], indices[..., 1], ...], the indices
    constant integers (an index past an axis is an error, as TensorFlow's on CPU)."""
    given = lowering.arguments_by_name(node, values, ("params", "indices", "batch_dims", "name"), required=2)
    if "batch_dims" in given and lowering.static_param("batch_dims", given["batch_dims"], node.func, node.pos) != 0:
        raise lowering.error(f"{node.func}(batch_dims=...) is not supported: index each batch", node.pos)
    x = lowering.materialize(given["params"], scope)
    indices = lowering.static_index(given["indices"], node.pos)
    array = indices.array if isinstance(indices, ops_index.IndexArray) else None
    if array is None or array.dtype == bool or array.ndim == 0:
        raise lowering.error(f"{node.func}(params, indices): indices must be integers written in the program, "
                             "their last axis one index per leading axis of params", node.pos)
    if array.shape[-1] > len(lowering.graph.shapes[x]):
        raise lowering.error(f"{node.func}: indices of length {array.shape[-1]} index a tensor of "
                             f"{len(lowering.graph.shapes[x])} axes", node.pos)
    index = tuple(ops_index.IndexArray(array[..., k]) for k in range(array.shape[-1]))
    return _indexed(lowering, node, x, index, scope)


def _band_part(lowering, node, values, scope):
    """tf.linalg.band_part(input, num_lower, num_upper): the band of each innermost matrix kept
    (num_lower subdiagonals, num_upper superdiagonals; a negative number keeps that whole
    triangle), the rest 0."""
    given = lowering.arguments_by_name(node, values, ("input", "num_lower", "num_upper", "name"), required=3)
    x = lowering.materialize(given["input"], scope)
    lower, upper = (lowering.static_param(name, given[name], node.func, node.pos) for name in ("num_lower", "num_upper"))
    shape = lowering.graph.shapes[x]
    if len(shape) < 2:
        raise lowering.error(f"{node.func}: input must be at least a matrix, not of shape {shape}", node.pos)
    rows, cols = np.arange(shape[-2])[:, None], np.arange(shape[-1])[None, :]
    band = ((lower < 0) | (rows - cols <= lower)) & ((upper < 0) | (cols - rows <= upper))
    keep = lowering.graph.add_constant(band.astype(np.float64), node.pos, scope.stack)
    zero = lowering.graph.add_constant(0.0, node.pos, scope.stack)
    return lowering.emit(OPS["where"], (keep, x, zero), {}, node.pos, node.func, scope)


def _tensorflow_only(lowering, node, keras_differs: str) -> None:
    """Refuses Keras' function of a tf.nn name where Keras' differs (`keras_differs`: how)."""
    spelled = lowering.spelled(node.func)
    if "keras" in spelled.split(".") or spelled.startswith(("K.", "ops.")):
        name = node.func.rpartition(".")[2]
        raise lowering.error(f"{node.func}: Keras' {name} {keras_differs}, unlike tf.nn.{name}; gradcli reads "
                             f"tf.nn.{name}", node.pos)


def _moments(lowering, node, values, scope):
    """tf.nn.moments(x, axes, shift=None, keepdims=False): (mean, variance), TensorFlow's way: the
    variance the mean of squared differences from the mean held by stop_gradient (the same first
    derivative as the plain variance's, and TensorFlow's second)."""
    _tensorflow_only(lowering, node, "computes the variance as E[x^2] - E[x]^2")
    given = lowering.arguments_by_name(node, values, ("x", "axes", "shift", "keepdims", "name"), required=2)
    x = lowering.materialize(given["x"], scope)
    axes = lowering.static_param("axes", given["axes"], node.func, node.pos)
    axes = tuple(int(a) for a in np.atleast_1d(axes))
    keepdims = "keepdims" in given and bool(lowering.constant_truth(given["keepdims"]))
    op, _ = composer(lowering, node.pos, node.func, scope)
    mean = op("mean", x, axis=axes, keepdims=True)
    variance = op("mean", op("squared_difference", x, op("stop_gradient", mean)), axis=axes, keepdims=True)
    if not keepdims:
        mean, variance = op("squeeze", mean, axis=axes), op("squeeze", variance, axis=axes)
    return lowering.tuple(ast.Tuple([], node.pos), [mean, variance])


def _batch_normalization(lowering, node, values, scope):
    """tf.nn.batch_normalization(x, mean, variance, offset, scale, variance_epsilon), as TensorFlow
    writes it: inv = rsqrt(variance + epsilon) * scale; x * inv + (offset - mean * inv)."""
    _tensorflow_only(lowering, node, "takes (x, mean, variance, axis, offset, scale, epsilon)")
    names = ("x", "mean", "variance", "offset", "scale", "variance_epsilon", "name")
    given = lowering.arguments_by_name(node, values, names, required=6)
    op, _ = composer(lowering, node.pos, node.func, scope)
    x, mean, variance, epsilon = (lowering.materialize(given[k], scope, node.pos)
                                  for k in ("x", "mean", "variance", "variance_epsilon"))
    inv = op("rsqrt", op("add", variance, epsilon))
    if not lowering.is_none(given["scale"]):
        inv = op("multiply", inv, lowering.materialize(given["scale"], scope, node.pos))
    shift = op("multiply", mean, inv)
    shift = op("negative", shift) if lowering.is_none(given["offset"]) else \
        op("subtract", lowering.materialize(given["offset"], scope, node.pos), shift)
    return op("add", op("multiply", x, inv), shift)


def _weighted_cross_entropy(lowering, node, values, scope):
    """tf.nn.weighted_cross_entropy_with_logits(labels, logits, pos_weight), TensorFlow's formula:
    (1 - z) x + (1 + (q - 1) z) (log1p(exp(-|x|)) + relu(-x))."""
    given = lowering.arguments_by_name(node, values, ("labels", "logits", "pos_weight", "name"), required=3)
    z, x, q = (lowering.materialize(given[k], scope, node.pos) for k in ("labels", "logits", "pos_weight"))
    op, number = composer(lowering, node.pos, node.func, scope)
    one = number(1.0)
    log_weight = op("add", one, op("multiply", op("subtract", q, one), z))
    softplus_part = op("add", op("log1p", op("exp", op("negative", op("abs", x)))), op("relu", op("negative", x)))
    return op("add", op("multiply", op("subtract", one, z), x), op("multiply", log_weight, softplus_part))


def _loss_object(function: str, *positional: str):
    """A Keras loss object: `keras.losses.<function>`'s per-sample losses, reduced by the object's
    `reduction` (the mean by default: "sum_over_batch_size"); `positional`: the constructor's
    names for its positional arguments (reduction and name last, as Keras orders them)."""
    def make(lowering, node, values, scope):
        return lowering.function_object(f"keras.losses.{function}", (*positional, "reduction", "name"), node, values,
                                        dropped=("name",), keras=True)  # (a name is for Keras' logs)
    return make


def _keras_optimizer(kind: str):
    """keras.optimizers.SGD / Adam (tf.keras.optimizers.): for apply_gradients (lower/optimizers.py)."""
    def make(lowering, node, values, scope):
        return lowering.keras_optimizer(kind, node, values)
    return make


def _keras_schedule(kind: str):
    """keras.optimizers.schedules.ExponentialDecay / PiecewiseConstantDecay: a learning_rate (lower/schedules.py)."""
    def make(lowering, node, values, scope):
        return lowering.keras_schedule(kind, node, values)
    return make


def _clip_by_global_norm(lowering, node, values, scope):
    """tf.clip_by_global_norm(t_list, clip_norm): (the clipped list, the global norm) (lower/clipping.py)."""
    return lowering.tf_clip_by_global_norm(node, values, scope)


LOSS_OBJECTS = {
    "MeanSquaredError": _loss_object("mean_squared_error"), "MeanAbsoluteError": _loss_object("mean_absolute_error"),
    "MeanAbsolutePercentageError": _loss_object("mean_absolute_percentage_error"),
    "MeanSquaredLogarithmicError": _loss_object("mean_squared_logarithmic_error"),
    "BinaryCrossentropy": _loss_object("binary_crossentropy", "from_logits", "label_smoothing", "axis"),
    "CategoricalCrossentropy": _loss_object("categorical_crossentropy", "from_logits", "label_smoothing", "axis"),
    "SparseCategoricalCrossentropy": _loss_object("sparse_categorical_crossentropy", "from_logits", "ignore_class"),
    "Huber": _loss_object("huber", "delta"), "LogCosh": _loss_object("log_cosh"),
    "KLDivergence": _loss_object("kl_divergence"), "Poisson": _loss_object("poisson"),
    "Hinge": _loss_object("hinge"), "SquaredHinge": _loss_object("squared_hinge"),
    "CategoricalHinge": _loss_object("categorical_hinge"),
    "CosineSimilarity": _loss_object("cosine_similarity", "axis"),
}

NAMES = {
    "embedding_lookup": layers.embedding, "add_n": layers.add_n,
    "is_nan": "isnan", "is_finite": "isfinite", "is_inf": "isinf",
    **LOSS_OBJECTS, **{f"optimizers.{kind}": _keras_optimizer(kind) for kind in ("SGD", "Adam")},
    **{f"optimizers.schedules.{kind}": _keras_schedule(kind) for kind in ("ExponentialDecay", "PiecewiseConstantDecay")},
    "clip_by_global_norm": _clip_by_global_norm,
    "boolean_mask": _boolean_mask, "gather_nd": _gather_nd, "band_part": _band_part,
    "matrix_band_part": _band_part, "moments": _moments, "batch_normalization": _batch_normalization,
    "weighted_cross_entropy_with_logits": _weighted_cross_entropy,
    "igamma": "gammainc", "igammac": "gammaincc",  # tf.math.igamma(a, x): the regularized lower (upper) gamma
    # keras.config.set_floatx("float64") (keras.backend.set_floatx), tf.config.run_functions_eagerly(True)
    "config.set_floatx": setting(0), "set_floatx": setting(0), "config.run_functions_eagerly": setting(),
    "debugging.assert_near": assertion("TensorFlow", 1.1920929e-06, 1.1920929e-06, False),  # (10 eps of float32)
    # tf.constant([...]), tf.Variable([...]) in pasted code: the value itself
    "constant": "identity", "convert_to_tensor": "identity", "Variable": "identity",
    "sparse_softmax_cross_entropy_with_logits": "sparse_softmax_cross_entropy",
    "truediv": "divide", "floordiv": "floor_divide", "floormod": "mod", "floor_mod": "mod", "truncatemod": "fmod",
    "clip_by_value": "clip",
    "reduce_sum": "sum", "reduce_mean": "mean", "reduce_prod": "prod", "reduce_max": "max", "reduce_min": "min", "reduce_all": "all", "reduce_any": "any",
    "reduce_logsumexp": "logsumexp", "reduce_variance": "var", "reduce_std": "std",
    "reduce_euclidean_norm": "euclidean_norm", "cumulative_logsumexp": "cumlogsumexp",
    "lgamma": "gammaln",
    "bessel_i0": "i0", "bessel_i1": "i1", "bessel_i0e": "i0e", "bessel_i1e": "i1e",
    "bessel_j0": "j0", "bessel_j1": "j1", "bessel_y0": "y0", "bessel_y1": "y1",
    "bessel_k0": "k0", "bessel_k1": "k1", "bessel_k0e": "k0e", "bessel_k1e": "k1e", "expint": "expi",
    "swish": "silu", "logcosh": "log_cosh",
    "concat": "concatenate", "reverse": "flip",
    "gather": "take_batched", "tf_gather": "take_batched",
    "tf_slice": "slice_begin_size",
    "diag_part": "diagonal", "matrix_diag_part": "diagonal", "matrix_diag": "diag_embed",
    "fill": "full", "range": "arange",
    "matrix_inverse": "inv", "triangular_solve": "solve_triangular", "matrix_determinant": "det",
    "matvec": "matmul",  # (tf.linalg.matvec(a, b): a @ b of a vector b)
    # Keras' short names of its losses
    "mse": "mean_squared_error", "MSE": "mean_squared_error", "mae": "mean_absolute_error",
    "MAE": "mean_absolute_error", "mape": "mean_absolute_percentage_error", "MAPE": "mean_absolute_percentage_error",
    "msle": "mean_squared_logarithmic_error", "MSLE": "mean_squared_logarithmic_error",
    "kld": "kl_divergence", "KLD": "kl_divergence",
}

READINGS = {
    "clip": _clip_reading,
    "matmul": lambda call: ("matmul_transposed", {}) if {"transpose_a", "transpose_b", "adjoint_a", "adjoint_b"}
    & set(call.keywords) else None,
    "cumsum": _tensorflow_axis_zero("cumsum"),
    "cumprod": _tensorflow_axis_zero("cumprod"),
    "argmax": _tensorflow_arg_extreme("argmax"),
    "argmin": _tensorflow_arg_extreme("argmin"),
    "norm": _norm_reading,
    # tf.math.reduce_euclidean_norm is sqrt(reduce_sum(x * x)): NaN gradient at a zero vector, as TensorFlow's
    "euclidean_norm": lambda call: ("norm_by_square_root", {}) if call.library == "tensorflow" else None,
    "concatenate": _concat_reading,
    "diag": _diag_reading,
    "take_batched": _gather_reading,
    "solve_triangular": _triangular_reading,
    "svd": _svd_reading,
    # tf.linalg.lstsq and keras.ops.linalg.lstsq give the solution alone (NumPy's a tuple)
    "lstsq": lambda call: ("lstsq_solution", {}) if call.library in ("tensorflow", "keras") else None,
    "leaky_relu": _leaky_relu_reading,
    "gelu": _gelu_reading,
    "hard_sigmoid": _hard_sigmoid_reading,
    # tf.nn.selu's (and Keras', which calls it) slope at 0 is scale, JAX's and PyTorch's scale * alpha
    "selu": lambda call: ("selu_zero_right", {}) if call.library in ("tensorflow", "keras") else None,
    "log_cosh": _log_cosh_reading,
    # keras.losses.huber(y_true, y_pred, delta): a loss per sample (gradcli.ops.nn)
    "huber": lambda call: ("huber_last_mean", {}) if call.library in ("keras", "tensorflow") else None,
    "cosine_similarity": _cosine_reading,
    "conv2d": _conv2d_reading,
    **{name: _keras_reading(name) for name in _KERAS_LOSSES},
    "binary_crossentropy": _keras_bce_reading,
    "kl_divergence": _keras_reading("kl_divergence", "kl_divergence_from_log"),
}

ABSENT: dict = {}

# Reductions whose answer on an integer tensor TensorFlow gives otherwise than gradcli's floating
# point: name as written -> what TensorFlow does (gradcli refuses, saying so)
ON_INTEGERS = {
    "reduce_mean": "is an integer division in TensorFlow (tf.reduce_mean([1, 2]) is 1, not 1.5)",
    "reduce_variance": "is an error in TensorFlow (TypeError: Input must be either real or complex)",
    "reduce_std": "is an error in TensorFlow (TypeError: Input must be either real or complex)",
}
