"""PyTorch's spellings (`torch.`, `torch.nn.functional.` / `F.`, `torch.linalg.`, and a tensor's
methods in a program that spells only PyTorch): its names for the table's functions, the readings
where its defaults differ (var and std divide by n - 1, `torch.max(x, 1)` gives (values, indices),
`torch.split(x, 2)` makes parts of size 2), the losses' options by keyword, and what the lowering
asks of it: whose methods and subscripts a program's are, its subscripts' reading (integers select
before lists index), its constructors' separate sizes (`torch.ones(3, 4)`) and its empty dims."""
from __future__ import annotations

import re

import numpy as np

from gradcli.language import syntax as ast
from gradcli.language.dialects import layers, pooling
from gradcli.language.dialects.spelling import Autocast, Distribution, ReadingError, assertion, composer, setting
from gradcli.language.dialects.numpy import jax_numpy as _jax_numpy, random_draw
from gradcli.ops import OPS, index as ops_index
from gradcli.ops.casts import CANONICAL


def options_by_keyword(op, call) -> None:
    """PyTorch's losses take their options after the tensors in an order that includes the
    deprecated size_average and reduce (`F.mse_loss(x, t, 'sum')` passes 'sum' as size_average,
    and PyTorch then takes the mean): an option written by position is refused."""
    arity = len(op.args)
    if call.positional > arity:
        raise ReadingError(f"{op.name}() takes its options by keyword (reduction=..., ...): PyTorch's argument "
                           f"{arity + 1} is not what it looks like (the deprecated size_average, or weight)")


def torch_only(meaning: str, others: dict):
    """A spelling whose meaning is PyTorch's; libraries in `others` mean something else."""
    def reading(spelling):
        if spelling.library in others:
            raise ReadingError(f"{spelling.name}: {others[spelling.library]}; gradcli's {spelling.name} is "
                               f"PyTorch's ({meaning}): write F.{spelling.name}(...)")
        return None
    return reading


def _torch_tuple(call):
    """torch.sort(x), torch.cummax(x, dim) and their methods give the named tuple (values,
    indices); NumPy's sort and lax's cummax the values alone."""
    if call.name == "msort":  # torch.msort(x): the values sorted along dim 0
        return "sort", {"axis": 0}
    if call.library == "torch":
        return f"{call.name}_values_indices", {}
    if call.method and call.name == "sort":  # a value the program holds would silently stay unsorted
        raise ReadingError("x.sort() of a NumPy array sorts x in place and gives None (PyTorch's gives "
                           "(values, indices)): write x = np.sort(x)")
    return None


def _moments_reading(name):
    """np.var(x, axis, dtype, out, ddof): past the axis, arguments are read only by name; PyTorch's
    var and std default to the unbiased estimate (ddof=1), NumPy's, TensorFlow's and JAX's to 0."""
    return lambda call: _moments_read(name, call)


def _moments_read(name, call):
    if call.library == "torch" and call.kinds[1:2] == ("boolean",):
        # PyTorch's older torch.std(x, unbiased): a bool second is no dimension
        raise ReadingError(f"{call.name}() with True or False second: PyTorch reads it as unbiased (its older "
                           f"signature, {call.name}(x, unbiased)), not as a dimension; write unbiased= or "
                           "correction= by name")
    if call.library == "torch" and call.positional in (3, 4) and set(call.kinds[2:]) == {"boolean"}:
        return None  # x.var(dim, unbiased, keepdim): the bool binds to ddof, 1 for True and 0 for False
    if call.positional > 2:
        raise ReadingError(f"{call.name}() with {call.positional} arguments: NumPy's third argument is dtype, "
                           f"PyTorch's unbiased, TensorFlow's keepdims; write ddof= and keepdims= by name")
    if call.library == "torch" and not {"correction", "ddof", "unbiased"} & set(call.keywords):
        return name, {"ddof": 1}
    if call.library == "tensorflow" and {"correction", "ddof", "unbiased"} & set(call.keywords):
        raise ReadingError(f"tf.math.reduce_{'variance' if name == 'var' else 'std'} has no ddof: TensorFlow's "
                           "divides by n; write np.{name}(x, ddof=...) for another divisor".replace("{name}", name))
    if name == "std" and (call.library == "tensorflow" or _jax_numpy(call) or call.spelled.startswith("autograd.")):
        # TensorFlow's, JAX's and autograd's std is sqrt(var): a NaN gradient where all values are
        # equal (PyTorch's, and gradcli's own std, give 0 there)
        return "std_by_square_root", {}
    return None


def _median_reading(call):
    """torch.median(x) of every element is the lower of the two middle values, its gradient split
    among the elements equal to it; with dim it is a (values, indices) tuple, refused."""
    if call.library == "torch" and call.positional == 1 and not call.keywords:
        return "median_lower_splitting_ties", {}
    if call.library == "torch":
        raise ReadingError("torch.median with dim gives a tuple (values, indices) of the lower of the two middle "
                           "values; NumPy's median averages them: write median(x, axis) for NumPy's, "
                           "quantile(x, 0.5, axis, method='lower') for PyTorch's values")
    return None


def _squeeze_reading(call):
    return ("squeeze_loose", {}) if call.library == "torch" else None


def _ravel_reading(call):
    if "order" in call.keywords:  # np.ravel(x, order='F'), x.ravel(order='F')
        return "reshape_order", {"shape": (-1,)}
    torch_args = any(k in call.keywords for k in ("start_dim", "end_dim"))
    if call.library == "torch" or torch_args or (call.method and call.name == "flatten" and call.positional > 1):
        return "flatten_dims", {}
    return None


def _pad_reading(call):
    if call.library == "jax":
        raise ReadingError("lax.pad(x, padding_value, padding_config) pads with interior (dilation) and negative "
                           "widths, which gradcli does not have: write jnp.pad(x, pad_width, constant_values=...)")
    return ("pad_last_first", {}) if call.library == "torch" else None


def _take_along_reading(call):
    # torch.take_along_dim(x, indices) without a dim reads x flattened; NumPy's default axis is -1
    given = call.positional >= 3 or "dim" in call.keywords or "axis" in call.keywords
    return ("take_along_axis", {"axis": None}) if call.library == "torch" and not given else None


def _meshgrid_reading(call):
    if call.library == "torch" and "indexing" not in call.keywords:
        return "meshgrid", {"indexing": "ij", "flatten": False}  # PyTorch's default
    if call.library == "torch" or _jax_numpy(call):
        return "meshgrid", {"flatten": False}
    return None


def _unfold_reading(call):
    if "functional." in call.spelled or call.spelled.startswith("F."):
        raise ReadingError("torch.nn.functional.unfold extracts image patches (im2col), which gradcli does not "
                           "have; Tensor.unfold(dimension, size, step) (sliding windows along one axis) it has")
    return None


def _one_hot_reading(call):
    return ("one_hot_inferred", {}) if call.library == "torch" else None


def _torch_vectors(call):
    return ("solve", {"vector": True}) if call.library == "torch" and "vector" not in call.keywords else None


def _vander_reading(call):
    if call.library == "torch" and "linalg." in call.spelled:
        return "vander_ascending", {}  # torch.linalg.vander; torch.vander(x, N, increasing=False) is NumPy's
    if call.library == "torch":
        return None
    if call.library == "numpy" or "increasing" in call.keywords:
        return None
    raise ReadingError("vander() without its library: np.vander's powers decrease along a row (increasing=False), "
                       "torch.linalg.vander's increase; write np.vander, torch.linalg.vander, or increasing=")


def _polar_reading(call):
    if call.library == "torch" and "linalg" not in call.spelled:
        raise ReadingError("torch.polar(abs, angle) makes complex numbers, and gradcli's values are real; "
                           "torch.linalg.polar (scipy.linalg.polar) is the polar decomposition")
    return None


def _huber_reading(call):
    if call.library == "torch" and call.name == "huber_loss":  # F.huber_loss: with its reduction
        return "huber_loss_reduced", {}
    if call.library in ("torch", "tensorflow", "keras", "nn"):
        raise ReadingError(f"{call.name}: PyTorch's, TensorFlow's and Keras's huber losses average over "
                           f"elements (reduction); gradcli's {call.name} is elementwise (Optax's): "
                           f"write mean({call.name}(a, b))")
    return None


_DEVICE = re.compile(r"(cpu|cuda|mps|xpu|meta)(:[0-9]+)?")
_TO_FLAGS = ("non_blocking", "copy", "memory_format")


def _text(value) -> str | None:
    """The string a value holds (a dtype's or a device's name), or None."""
    held = getattr(value, "value", None)
    return held if isinstance(held, str) else None


def _tensor_to(lowering, node, values, scope):
    """x.to(torch.float16), x.to('cuda'), x.to(dtype=..., device=...), x.to(y), x.type_as(y): the value
    cast to the floating type named (lowering.cast: rounded as PyTorch rounds it), or to y's type;
    a device leaves the numbers as they are; a cast to an integer or bool type would change them
    (refused)."""
    if not node.method or not values:
        raise lowering.error(f"{node.func}() is a tensor's method: write x.{node.func}(...)", node.pos)
    if len(values) < 2:
        raise lowering.error(f"x.{node.func}() needs a dtype, a device or a tensor", node.pos)
    names = [None] * len(node.args) + [kw.name for kw in node.keywords]
    cast = None
    for name, value, written in zip(names[1:], values[1:], list(node.args[1:]) + list(node.keywords)):
        text = _text(value)
        if name in _TO_FLAGS:
            continue
        if text is not None and node.func == "to" and _DEVICE.fullmatch(text):
            continue  # a device: the numbers are the same on every device
        if text is not None:
            lowering.check_dtype(value, written.pos)  # a floating type passes, any other is refused
            cast = value
        elif name is not None and name not in ("dtype", "device", "other", "tensor"):
            raise lowering.error(f"x.{node.func}() has no argument '{name}'", written.pos)
        elif name != "device" and lowering.graph.dtypes and type(value) is int:
            cast = lowering.graph.dtypes.get(value, "float64")  # x.to(y): y's type
    return values[0] if cast is None else lowering.cast(values[0], cast, node, scope)


_DROPOUT_TRAINING = {"dropout": True, "dropout1d": True, "dropout2d": True, "dropout3d": True,
                     "alpha_dropout": False, "feature_alpha_dropout": False}


def _dropout(lowering, node, values, scope):
    """F.dropout(x, p, training=False): in evaluation the identity. In training (F.dropout's default)
    it zeroes random elements, a new draw at each call: no one value and no one gradient, refused."""
    spelled = lowering.spelled(node.func)
    bare = spelled.rpartition(".")[2]
    label = node.func
    if not _TORCH_SPELLED.match(spelled) or node.method:
        raise lowering.error(f"{label}() zeroes random elements (a new draw at each call), so it has no one value "
                             "or gradient: leave it out of the program (evaluation: the identity)", node.pos)
    slots = ("input", "p", "training", "inplace")
    given = dict(zip(slots, values[:len(node.args)]))
    for kw, value in zip(node.keywords, values[len(node.args):]):
        if kw.name not in slots or kw.name in given:
            raise lowering.error(f"{label}() takes input, p, training, inplace; got '{kw.name}'", kw.pos)
        given[kw.name] = value
    if "input" not in given:
        raise lowering.error(f"{label}() needs its input", node.pos)
    p = lowering.static_param("p", given["p"], label, node.pos) if "p" in given else 0.5
    training = lowering.static_param("training", given["training"], label, node.pos) \
        if "training" in given else _DROPOUT_TRAINING.get(bare, True)
    if isinstance(p, (str, tuple)) or not 0 <= p <= 1:
        raise lowering.error(f"{label}(): the dropout probability p must be between 0 and 1, not {p!r}", node.pos)
    if training and p != 0:
        raise lowering.error(f"{label}(x, p={p:g}) with training=True{' (its default)' if 'training' not in given else ''} "
                             "zeroes random elements (a new draw at each call) and scales the rest by 1/(1-p): it has "
                             "no one value or gradient; write training=False (evaluation: the identity)", node.pos)
    return given["input"]


def _distribution(lowering, node, values, scope):
    """torch.distributions.Normal(loc, scale, validate_args=None)."""
    if not _TORCH_SPELLED.match(lowering.spelled(node.func)) and node.func != "Normal":
        raise lowering.error(f"{node.func}: gradcli reads PyTorch's torch.distributions.Normal", node.pos)
    slots = ("loc", "scale", "validate_args")
    given = dict(zip(slots, values[:len(node.args)]))
    for kw, value in zip(node.keywords, values[len(node.args):]):
        if kw.name not in slots or kw.name in given:
            raise lowering.error(f"Normal() takes loc, scale, validate_args; got '{kw.name}'", kw.pos)
        given[kw.name] = value
    if "loc" not in given or "scale" not in given:
        raise lowering.error("Normal(loc, scale) needs both", node.pos)
    return Distribution("Normal", {"loc": given["loc"], "scale": given["scale"]}, node.pos)


_NORMAL_METHODS = {"log_prob": "norm_logpdf", "cdf": "norm_cdf", "icdf": "norm_ppf"}


def _distribution_method(lowering, node, values, scope):
    """Normal(loc, scale).log_prob(x), .cdf(x), .icdf(q): scipy.stats.norm's logpdf, cdf and ppf
    of x with that loc and scale (PyTorch's formulas; gradients in x, loc and scale)."""
    receiver = values[0] if node.method and values else None
    if not isinstance(receiver, Distribution) or receiver.name != "Normal":
        raise lowering.error(f"{node.func}() is a method of a distribution: Normal(loc, scale).{node.func}(x)",
                             node.pos)
    if len(values) != 2 or node.keywords:
        raise lowering.error(f"{node.func}() takes one value: .{node.func}(x)", node.pos)
    op = OPS[_NORMAL_METHODS[node.func]]
    call = ast.Call(op.name, [node.args[1], node.args[0], node.args[0]], node.pos)
    return lowering.call_builtin(op, call, [values[1], receiver.params["loc"], receiver.params["scale"]], scope)


def _autocast(lowering, node, values, scope):
    """torch.autocast(device_type, dtype=None, enabled=True), torch.cuda.amp.autocast(enabled=True,
    dtype=torch.float16), torch.cpu.amp.autocast(...): a region whose ops of PyTorch's autocast
    tables compute in `dtype` or in float32 (gradcli/language/lower/autocast.py)."""
    bare = node.func.rpartition(".")[2] if "." in node.func else node.func
    device = "cuda" if "cuda.amp." in node.func else "cpu" if "cpu.amp." in node.func else None
    slots = ("enabled", "dtype", "cache_enabled") if device else ("device_type", "dtype", "enabled", "cache_enabled")
    names = list(slots[:len(node.args)]) + [kw.name for kw in node.keywords]
    given = dict(zip(names, values))
    unknown = [name for name in names if name not in slots]
    if unknown or len(node.args) > len(slots):
        raise lowering.error(f"{node.func}() takes {', '.join(slots)}", node.pos)
    if device is None:
        device = _text(given.get("device_type"))
        if device not in ("cuda", "cpu"):
            raise lowering.error(f"{node.func}(): give device_type 'cuda' or 'cpu' (gradcli knows PyTorch's autocast "
                                 "tables of those two)", node.pos)
    dtype = given.get("dtype")
    if dtype is None or _text(dtype) is None and getattr(dtype, "value", 0) is None:
        name = "float16" if device == "cuda" else "bfloat16"
    else:
        lowering.check_dtype(dtype, node.pos)
        name = CANONICAL[dtype.value]
    enabled = given.get("enabled")
    on = True if enabled is None else lowering.constant_truth(enabled)
    if on is None:
        raise lowering.error(f"{bare}(enabled=...) must be a constant True or False", node.pos)
    return Autocast(device, name, on, node.pos)


def _random_method(lowering, node, values, scope):
    raise lowering.error(f"x.{node.func}() draws random numbers (a new draw at each call): it has no one value or "
                         "gradient", node.pos)


def _module(function: str, *positional: str):
    """A torch.nn module: F.<function> with the constructor's arguments (`nn.MSELoss(reduction='sum')(a, b)`
    is `F.mse_loss(a, b, reduction='sum')`); `positional`: the constructor's names for its positional
    arguments (the deprecated size_average and reduce are not among them)."""
    def make(lowering, node, values, scope):
        return lowering.function_object(f"torch.nn.functional.{function}", positional, node, values,
                                        dropped=("inplace",))  # (in place or not, the same numbers)
    return make


def _weighted_module(lowering, node, values, scope):
    """nn.Linear(3, 2) and its kin draw their weights at random: no one value or gradient."""
    raise lowering.error(f"{node.func}(...) draws its weights at random (a new draw at each run), so it has no one "
                         "value or gradient: write the weights in the program (W = torch.tensor([...])) and call the "
                         "functional (F.linear(x, W, b), F.conv2d(x, W, b))", node.pos)


def _layer(lowering, node, values, scope, work):
    """nn.Linear(in, out) with the weights PyTorch draws after torch.manual_seed; nn.Sequential
    (lower/torch_layers.py)."""
    return lowering.torch_layer(node.func.rpartition(".")[2], node, values, scope, work)


_layer.calls_functions = True  # (it reads the work stack: a draw in a body JAX traces once is refused)


def _init(lowering, node, values, scope, work):
    """nn.init.zeros_(w) and its kin on a layer's parameters (lower/torch_init.py)."""
    return lowering.torch_init(node.func.rpartition(".")[2], node, values, scope, work)


_init.calls_functions = True


def _hinge_embedding_loss(lowering, node, values, scope):
    """F.hinge_embedding_loss(input, target, margin=1.0, reduction='mean'), PyTorch's formula: x where
    the target is not -1, plus clamp_min(margin - x, 0) where it is not 1, reduced."""
    names = ("input", "target", "margin", "size_average", "reduce", "reduction")
    given = lowering.arguments_by_name(node, values, names, required=2)
    for old in ("size_average", "reduce"):
        if old in given and not lowering.is_none(given[old]):
            raise lowering.error(f"{node.func}({old}=...) is deprecated in PyTorch: write reduction=", node.pos)
    x, target = (lowering.materialize(given[k], scope, node.pos) for k in ("input", "target"))
    margin = lowering.static_param("margin", given["margin"], node.func, node.pos) if "margin" in given else 1.0
    reduction = lowering.static_param("reduction", given["reduction"], node.func, node.pos) \
        if "reduction" in given else "mean"
    if reduction not in ("mean", "sum", "none"):
        raise lowering.error(f"{node.func}(reduction={reduction!r}): reduction is 'mean', 'sum' or 'none'", node.pos)

    op, number = composer(lowering, node.pos, node.func, scope)
    zero = number(0.0)
    clamped = op("clip", op("subtract", number(margin), x), zero, number(np.inf))  # (clamp_min: slope 1 at 0)
    output = op("add", op("where", op("not_equal", target, number(1.0)), clamped, zero),
                op("where", op("not_equal", target, number(-1.0)), x, zero))
    return output if reduction == "none" else op(reduction, output)


def _optimizer(kind: str):
    """torch.optim.<kind>(params, lr=...): an optimizer of the program's leaves (lower/optimizers.py)."""
    def make(lowering, node, values, scope):
        return lowering.torch_optimizer(kind, node, values, scope)
    return make


def _clip_grad(kind: str):
    """torch.nn.utils.clip_grad_norm_ / clip_grad_value_: each .grad clipped in place (lower/clipping.py)."""
    def clip(lowering, node, values, scope):
        return lowering.torch_clip_grad(kind, node, values, scope)
    return clip


def _scheduler(kind: str):
    """torch.optim.lr_scheduler.<kind>(optimizer, ...): a learning-rate schedule (lower/schedules.py)."""
    def make(lowering, node, values, scope):
        return lowering.torch_scheduler(kind, node, values, scope)
    return make


MODULES = {
    **{f"optim.{kind}": _optimizer(kind) for kind in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad")},
    "utils.clip_grad_norm_": _clip_grad("norm"), "utils.clip_grad_value_": _clip_grad("value"),
    **{f"optim.lr_scheduler.{kind}": _scheduler(kind)
       for kind in ("StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR", "ConstantLR",
                    "LinearLR")},
    "Linear": _layer, "Sequential": _layer,
    **{f"init.{name}": _init for name in ("zeros_", "ones_", "constant_", "uniform_", "normal_", "xavier_uniform_",
                                          "xavier_normal_", "kaiming_uniform_", "kaiming_normal_")},
    **{name: _weighted_module for name in ("Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
                                           "ConvTranspose2d", "Embedding", "RNN", "LSTM", "GRU", "MultiheadAttention")},
    "MSELoss": _module("mse_loss"), "L1Loss": _module("l1_loss"), "SmoothL1Loss": _module("smooth_l1_loss"),
    "HuberLoss": _module("huber_loss", "reduction", "delta"), "BCELoss": _module("binary_cross_entropy", "weight"),
    "BCEWithLogitsLoss": _module("binary_cross_entropy_with_logits", "weight"),
    "CrossEntropyLoss": _module("cross_entropy", "weight"), "NLLLoss": _module("nll_loss", "weight"),
    "KLDivLoss": _module("kl_div"), "SoftMarginLoss": _module("soft_margin_loss"),
    "MarginRankingLoss": _module("margin_ranking_loss", "margin"),
    "CosineEmbeddingLoss": _module("cosine_embedding_loss", "margin"),
    "PoissonNLLLoss": _module("poisson_nll_loss", "log_input", "full"), "GaussianNLLLoss": _module("gaussian_nll_loss"),
    "MultiMarginLoss": _module("multi_margin_loss", "p", "margin", "weight"),
    "MultiLabelSoftMarginLoss": _module("multilabel_soft_margin_loss", "weight"),
    "TripletMarginLoss": _module("triplet_margin_loss", "margin", "p"),
    "HingeEmbeddingLoss": _module("hinge_embedding_loss", "margin"),
    "ReLU": _module("relu", "inplace"), "ReLU6": _module("relu6", "inplace"), "Sigmoid": _module("sigmoid"),
    "Tanh": _module("tanh"), "Softmax": _module("softmax", "dim"), "LogSoftmax": _module("log_softmax", "dim"),
    "Softmin": _module("softmin", "dim"), "LeakyReLU": _module("leaky_relu", "negative_slope", "inplace"),
    "ELU": _module("elu", "alpha", "inplace"), "CELU": _module("celu", "alpha", "inplace"),
    "SELU": _module("selu", "inplace"), "GELU": _module("gelu", "approximate"), "SiLU": _module("silu", "inplace"),
    "Mish": _module("mish", "inplace"), "Softplus": _module("softplus", "beta", "threshold"),
    "Softsign": _module("softsign"), "Tanhshrink": _module("tanhshrink"), "LogSigmoid": _module("logsigmoid"),
    "Hardtanh": _module("hardtanh", "min_val", "max_val", "inplace"),
    "Hardsigmoid": _module("hardsigmoid", "inplace"), "Hardswish": _module("hardswish", "inplace"),
    "Threshold": _module("threshold", "threshold", "value", "inplace"), "GLU": _module("glu", "dim"),
    "MaxPool2d": _module("max_pool2d", "kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode"),
    "AvgPool2d": _module("avg_pool2d", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
                         "divisor_override"),
    "AdaptiveAvgPool2d": _module("adaptive_avg_pool2d", "output_size"),
}

NAMES = {
    **{name: random_draw for name in ("manual_seed", "rand", "randn", "randint", "normal", "rand_like", "randn_like",
                                      "randperm")},  # seeded draws of the CPU generator (lower/random_draws.py)
    **MODULES, **pooling.NAMES, "hinge_embedding_loss": _hinge_embedding_loss, "set_default_dtype": setting(0),
    "set_default_device": setting(),  # (a device changes no number)
    "set_detect_anomaly": setting(),  # torch.autograd.set_detect_anomaly(True) (it checks the backward pass for NaN, as gradcli's diagnostics do)
    "testing.assert_close": assertion("PyTorch", 1.3e-6, 1e-5, False),  # (float32's tolerances, PyTorch's default type)
    "embedding": layers.embedding, "scaled_dot_product_attention": layers.torch_attention,
    "distributions.Normal": _distribution, "Normal": _distribution,
    **{name: _distribution_method for name in _NORMAL_METHODS}, "sample": _random_method, "rsample": _random_method,
    # x.to(dtype or device), x.type_as(y): the value itself (a float dtype); F.dropout in evaluation
    "to": _tensor_to, "type_as": _tensor_to, **{name: _dropout for name in _DROPOUT_TRAINING},
    **{name: _autocast for name in ("autocast", "amp.autocast", "cuda.amp.autocast", "cpu.amp.autocast")},
    "mv": "matmul", "cpu": "identity", "cuda": "identity",  # a device: the same numbers
    # torch.tensor([...]) and its kin in pasted code: the value itself
    "tensor": "identity", "as_tensor": "identity", "contiguous": "identity", "clone": "identity",
    "neg": "negative", "sub": "subtract", "mul": "multiply", "div": "divide",
    "logsigmoid": "log_sigmoid", "detach": "stop_gradient",
    "mm": "matmul", "bmm": "matmul", "permute": "transpose", "t": "transpose",
    "view": "reshape", "expand": "expand_sizes",
    "hardsigmoid": "hard_sigmoid", "hardswish": "hard_silu", "hardtanh": "hard_tanh",
    "logcumsumexp": "cumlogsumexp", "topk": "top_k", "cat": "concatenate", "tensor_split": "array_split",
    "unsqueeze": "expand_dims", "swapdims": "swapaxes", "movedim": "moveaxis",
    "repeat_interleave": "repeat", "broadcast_tensors": "broadcast_arrays", "take_along_dim": "take_along_axis",
    "ger": "outer", "msort": "sort", "inverse": "inv", "pinverse": "pinv",
    "scatter": "scatter_elements", "orgqr": "householder_product",
    # the table's ops that are PyTorch's functions, by the names they had
    "torch_pad": "pad_last_first", "torch_gather": "gather_elements", "torch_select": "take_slice",
    "torch_scatter": "scatter_elements",
}

def _torch_top_level_refusal(why: str):
    """torch.<name> whose meaning is not the op of that name (a whole-tensor test, a tuple)."""
    def reading(call):
        if call.library == "torch" and "functional." not in call.spelled and not call.spelled.startswith("F."):
            raise ReadingError(f"torch.{call.name}: {why}")
        return None
    return reading


READINGS = {
    "arctan2": lambda call: ("arctan2_zero_at_origin", {}) if call.library == "torch" else None,
    # torch.add(x, y, alpha=a), torch.sub(x, y, alpha=a), x.sub(y, alpha=a): x + a y, x - a y
    "add": lambda call: ("add_alpha", {}) if "alpha" in call.keywords else None,
    "subtract": lambda call: ("subtract_alpha", {}) if "alpha" in call.keywords else None,
    # torch.equal(a, b) is one truth value for the whole tensors; equal(a, b) compares elementwise
    "equal": lambda call: ("array_equal", {}) if call.library == "torch" and call.name == "equal" else None,
    "gradient": _torch_top_level_refusal("it returns a tuple of tensors, one per dim (and spacing= is "
                                         "a tuple of them); write np.gradient(x, axis=...) for one dim"),
    "binary_cross_entropy_with_logits": _torch_top_level_refusal(
        "ATen's function (its reduction an integer) is not F.binary_cross_entropy_with_logits: write F.'s"),
    "softplus": lambda call: ("softplus_beta", {}) if call.library == "torch" and (
        call.positional > 1 or {"beta", "threshold"} & set(call.keywords)) else None,
    "divide": lambda call: ("divide_rounded", {}) if "rounding_mode" in call.keywords else None,
    # torch.transpose(x, dim0, dim1) swaps two axes (NumPy's swapaxes); torch.permute(x, dims) and
    # np.permute_dims(x, axes) are NumPy's transpose
    "transpose": lambda call: ("swapaxes", {}) if call.library == "torch" and call.name == "transpose" else None,
    "cummax": _torch_tuple,
    "cummin": _torch_tuple,
    "sort": _torch_tuple,
    "var": _moments_reading("var"),
    "std": _moments_reading("std"),
    # JAX's nanstd is sqrt(nanvar): NaN gradient where all values are equal (NumPy-spelled: 0 there, as std)
    "nanstd": lambda call: ("nanstd_by_square_root", {}) if _jax_numpy(call) else None,
    "median": _median_reading,
    "nanmedian": _median_reading,
    "squeeze": _squeeze_reading,
    "ravel": _ravel_reading,
    "roll": lambda call: ("roll", {"broadcast": False}) if call.library in ("torch", "tensorflow") else None,
    "pad": _pad_reading,
    "take_along_axis": _take_along_reading,
    "meshgrid": _meshgrid_reading,
    "unfold": _unfold_reading,
    "one_hot": _one_hot_reading,
    "outer": lambda call: ("outer", {"flatten": False}) if call.library == "torch" else None,
    "solve": _torch_vectors,
    "cholesky_solve": lambda call: ("cholesky_solve_b_first", {}) if call.library == "torch" else None,
    "vander": _vander_reading,
    "polar": _polar_reading,
    "huber_loss": _huber_reading,
    "cross_entropy": torch_only("log_softmax over dim 1, then the target's entry", {
        "keras": "Keras' categorical cross-entropy takes (y_true, y_pred) probabilities over the last axis",
        "tensorflow": "TensorFlow's losses take (labels, logits) over the last axis"}),
    "normalize": torch_only("p=2, dim=1, eps=1e-12", {
        "jax": "jax.nn.normalize standardizes (subtracts the mean, divides by the deviation)",
        "keras": "Keras' normalize divides by max(norm, epsilon) over the last axis, epsilon 1e-7 (write "
                 "x / ops.maximum(ops.norm(x, axis=-1, keepdims=True), 1e-7))",
        "tensorflow": "tf.linalg.normalize returns the normalized tensor and the norm"}),
    "conv1d": torch_only("(N, C, L) input, (out, in, K) weight", {
        "tensorflow": "tf.nn.conv1d takes (N, W, C) input and (K, in, out) filters, with strides and padding"}),
}

ABSENT: dict = {}

# Reductions that PyTorch refuses on an integer tensor (gradcli, computing in floating point,
# would answer): name as written -> PyTorch's error
ON_INTEGERS = {
    "mean": "is an error in PyTorch (RuntimeError: mean(): could not infer output dtype. Input dtype must be "
            "either a floating point or complex dtype)",
    "nanmean": "is an error in PyTorch (RuntimeError: nanmean(): expected input to have floating point or complex "
               "dtype)",
    **{name: f"is an error in PyTorch (RuntimeError: {'std and var' if '_' not in name else name} only support "
             "floating point and complex dtypes)" for name in ("var", "std", "var_mean", "std_mean")},
}

# Tensor methods whose receiver is not the first argument of the function of the same name:
# x.where(condition, y) is torch.where(condition, x, y), x.polygamma(n) torch.polygamma(n, x)
RECEIVER_PLACES = {"where": 1, "polygamma": 1}


# --------------------------------------------------------------------------- what the lowering asks

_TORCH_SPELLED = re.compile(r"(?<![\w.])(?:torch|F)\.")
_OTHER_ARRAY_LIBRARIES = ("np", "numpy", "jnp", "onp", "anp", "tf", "tensorflow", "jax", "keras", "K")
_OTHER_ARRAY_LIBRARY_SPELLED = re.compile(rf"(?<![\w.])(?:{'|'.join(_OTHER_ARRAY_LIBRARIES)})\.")


def spelled(module: ast.Module, text: str) -> tuple[bool, bool]:
    """(whether the program spells PyTorch: imports it, or calls torch./F.; whether it spells
    NumPy, JAX, TensorFlow, Keras or autograd). Whose methods `x.std()`, `x.max(1)` and subscripts
    `x[0, :, [1, 2]]` are follows from them: PyTorch's where the program spells only PyTorch,
    else NumPy's. They differ: torch's x.std() divides by n - 1, its x.max(1) gives (values,
    indices), its integer subscripts select before its lists index."""
    imported = {module_name.partition(".")[0] for stmt in module.statements if isinstance(stmt, ast.Import)
                for module_name, _ in stmt.bindings}
    # (a substring test first: the searches' lookbehind is slow over a long generated program)
    torch = "torch" in imported or (("torch." in text or "F." in text) and _TORCH_SPELLED.search(text) is not None)
    other = bool(imported & {"numpy", "jax", "tensorflow", "keras", "autograd"}) \
        or (any(f"{prefix}." in text for prefix in _OTHER_ARRAY_LIBRARIES)
            and _OTHER_ARRAY_LIBRARY_SPELLED.search(text) is not None)
    return torch, other


def sizes_written_apart(op, count: int) -> bool:
    """PyTorch's constructors take the sizes as separate numbers: torch.ones(3, 4)."""
    return count > 1 and not op.args and not op.variadic and op.slots[0] == "shape" \
        and all(slot == "dtype" for slot in op.slots[1:])


def empty_dims_refusal(label: str) -> str:
    """A reduction over an empty list of axes: NumPy, JAX and TensorFlow reduce none,
    PyTorch reads `dim=()` as every dim (or fails): the same text, other numbers."""
    return (f"{label}() with an empty dim: PyTorch reads dim=() or dim=[] as every dim (NumPy "
            f"as none); leave dim out to reduce every dim")


_ALL = (None, None, None)  # the slice `:` as an index holds it


def _mixes_integers_and_lists(index) -> bool:
    return ops_index.is_advanced(index) and any(type(item) is int for item in index)


def subscript_steps(index) -> tuple:
    """PyTorch's reading of a subscript that mixes integers with lists (or masks): the integers
    select first, with the slices, None and ... in place and the lists' axes kept whole; then
    the lists index what is left, by NumPy's rules there. (selects, the rest), or (None, None)
    where the subscript has no such mix and reads as in NumPy. A negative step is refused."""
    if any(isinstance(item, tuple) and item[2] is not None and item[2] < 0 for item in index):
        raise ReadingError("PyTorch takes no negative slice step (x[::-1] is a ValueError there): "
                           "flip the axis with torch.flip(x, dims)")
    if not _mixes_integers_and_lists(index):
        return None, None
    selects, rest = [], []
    for item in index:
        if type(item) is int:
            selects.append(item)  # (its axis is gone from what the rest indexes)
        elif isinstance(item, ops_index.IndexArray):
            axes = item.array.ndim if item.array.dtype == np.bool_ else 1  # a mask spans its own axes
            selects.extend([_ALL] * axes)
            rest.append(item)
        else:  # a slice, None (its new axis then taken whole), or ...
            selects.append(item)
            rest.append(item if item is Ellipsis else _ALL)
    return tuple(selects), tuple(rest)


def reads_apart_from_numpy(index) -> bool:
    """Whether integers and lists (or masks) index together with a slice, None or ... between
    them: where NumPy moves the indexed axes to the front and PyTorch does not."""
    if not _mixes_integers_and_lists(index):
        return False
    places = [k for k, item in enumerate(index) if type(item) is int or isinstance(item, ops_index.IndexArray)]
    return places[-1] - places[0] + 1 != len(places)


# The message where a program spelling PyTorch beside another library writes such a subscript
MIXED_SUBSCRIPT = ("this subscript mixes integers and lists apart from each other, which NumPy and "
                   "PyTorch read differently (NumPy moves the indexed axes to the front, PyTorch "
                   "selects the integers first), and the program uses both: write it in steps, "
                   "such as x[0][:, [1, 2]]")
