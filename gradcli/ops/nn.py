"""The op table, continued: neural-network losses and layers of PyTorch's functional API
(`F.mse_loss`, `F.cross_entropy`, `F.layer_norm` ...) and PyTorch's fused arithmetic
(`torch.addmm`, `torch.lerp`, `torch.cdist` ...), with PyTorch's semantics and defaults
(`reduction='mean'`).

Each is one record whose `expand` builds the call out of ops of the table at the call's place,
written over the tracer's symbolic values (gradcli.ops.trace: `f.add(a, b)` and `a + b` emit an
equation through the call's expansion; numbers and arrays become constants):
the gradients and second derivatives are those ops' own rules, so nothing here has a
hand-written derivative to get wrong. The value computed is PyTorch's formula as documented,
including its clamps (`binary_cross_entropy`'s log at -100, `gaussian_nll_loss`'s variance
at eps, clamped without a gradient as PyTorch does).

The family continues, in table order, in gradcli/ops/convolution.py and gradcli/ops/objectives.py
(losses per sample, distributions); the composite machinery (`composite`, `reduce`, `R`) stays here.
"""
from __future__ import annotations

import math

import numpy as np

from gradcli.errors import ShapeError
from gradcli.ops.trace import G as G_, Functions, Sym
from gradcli.ops.table import REQUIRED, UNBOUNDED, DataError, Op, register
from gradcli.ops.shapes import broadcast_shapes, fmt_shape, normalize_axes


def _unused(*_, **__):
    raise AssertionError("a composite op is expanded where it is called")


def composite(name: str, args: tuple, params: dict, doc: str, tensors=(), public=True, loose=()):
    """Register `fn(f, *args, **params) -> Sym` as the op `name`: `expand(trace, *ids, **params)`
    calls it with its arguments (and the parameters in `tensors`) as symbolic values of `trace`,
    and `f` the table's functions emitting through it."""
    def wrap(fn):
        def expand(trace, *ids, **given):
            _check_kinds({k: v for k, v in params.items() if k not in loose}, given)
            values = [Sym(trace, i) for i in ids]
            for k in tensors:
                value = given.get(k)
                if value is not None and type(value) is not Sym:
                    given[k] = Sym(trace, value)
            return fn(Functions(trace), *values, **given)
        register(Op(name, _unused, _unused, None, args=args, params=params, doc=doc,
                    expand=expand, tensors=tuple(tensors), public=public))
        return fn
    return wrap


def _check_kinds(defaults: dict, given: dict) -> None:
    """A parameter given where its default is a number, a flag or a word must be one too."""
    for name, default in defaults.items():
        value = given.get(name)
        if value is None or value is default or default is None or default is REQUIRED:
            continue
        if isinstance(default, bool):
            if value not in (0, 1, True, False) or isinstance(value, (str, tuple)):
                raise ShapeError(f"'{name}' must be True or False, not {value!r}")
            given[name] = bool(value)
        elif isinstance(default, (int, float)):
            if isinstance(value, (str, tuple, bool)):
                raise ShapeError(f"'{name}' must be a number, not {value!r}")
        elif isinstance(default, str) and not isinstance(value, str):
            raise ShapeError(f"'{name}' must be a string such as {default!r}, not {value!r}")


def reduce(f, loss: Sym, reduction) -> Sym:
    _check_reduction(reduction)
    if reduction == "mean":
        return f.mean(loss)
    return f.sum(loss) if reduction == "sum" else loss


def clamp_min(f, x: Sym, low) -> Sym:
    """PyTorch's clamp_min: low where x < low, else x (NaN stays); the gradient passes where
    x >= low, and to a tensor low where x < low."""
    return f.where(f.less(x, low), low, x)


def clamp_max(f, x: Sym, high) -> Sym:
    return f.where(f.greater(x, high), high, x)


def no_grad_clamp_min(f, x: Sym, low: float) -> Sym:
    """max(x, low) in value, with the gradient of x itself: PyTorch's `x.clamp_(min=low)`
    under no_grad."""
    return x + f.stop_gradient(f.maximum(x, low) - x)


def _axis(axis, ndim) -> int:
    return normalize_axes(axis, ndim)[0] if ndim else 0


def _check_reduction(reduction):
    if reduction not in ("mean", "sum", "none"):
        raise ShapeError(f"reduction must be 'mean', 'sum' or 'none', not {reduction!r}")


# --------------------------------------------------------------------------- regression losses

R = {"reduction": "mean"}


@composite("mse_loss", ("input", "target"), dict(R), "mean((input - target)^2) (reduction: 'mean', 'sum', 'none')")
def _mse(f, x, t, reduction):
    return reduce(f, f.square(x - t), reduction)


@composite("l1_loss", ("input", "target"), dict(R), "mean(|input - target|)")
def _l1(f, x, t, reduction):
    return reduce(f, f.abs(x - t), reduction)


@composite("smooth_l1_loss", ("input", "target"), dict(R, beta=1.0),
           "0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target)")
def _smooth_l1(f, x, t, reduction, beta):
    if beta < 0:
        raise ShapeError("beta must be 0 or more")
    d = x - t
    if beta == 0:
        return reduce(f, f.abs(d), reduction)
    a = f.abs(d)
    small = f.less(a, float(beta))
    return reduce(f, f.where(small, 0.5 * f.square(d) / float(beta), a - 0.5 * beta), reduction)


@composite("huber_loss_reduced", ("input", "target"), dict(R, delta=1.0),
           "PyTorch's huber_loss: 0.5 d^2 where |d| <= delta, else delta (|d| - 0.5 delta), then reduction",
           public=False)
def _torch_huber(f, x, t, reduction, delta):
    if delta <= 0:
        raise ShapeError("delta must be positive")
    return reduce(f, f.huber(x - t, delta=delta), reduction)


@composite("gaussian_nll_loss", ("input", "target", "var"), dict(R, full=False, eps=1e-6),
           "0.5 (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log(2 pi) with full=True)")
def _gaussian_nll(f, x, t, var, reduction, full, eps):
    _check_reduction(reduction)
    xs, vs = x.shape, var.shape
    if vs != xs:
        if xs[:-1] == vs:
            var = f.reshape(var, shape=vs + (1,))
        elif not (xs[:-1] == vs[:-1] and vs and vs[-1] == 1):
            raise ShapeError(f"var of shape {fmt_shape(vs)} does not fit input of shape {fmt_shape(xs)} "
                             "(the same shape, one dimension fewer, or a last dimension of 1)")
    known = var.graph.known(var.id, required=False)  # (checked again as it runs)
    if known is not None and np.any(np.asarray(known) < 0):
        raise ShapeError("var has a negative entry (PyTorch refuses it)")
    var = f.checked_range(var, lo=0.0, rule="var has a negative entry (PyTorch refuses it)")
    v = no_grad_clamp_min(f, var, float(eps))
    loss = 0.5 * (f.log(v) + f.square(x - t) / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce(f, loss, reduction)


@composite("poisson_nll_loss", ("input", "target"), dict(R, log_input=True, full=False, eps=1e-8),
           "exp(input) - target input (log_input=True), else input - target log(input + eps); "
           "full=True adds Stirling's term where target > 1")
def _poisson_nll(f, x, t, reduction, log_input, full, eps):
    loss = f.exp(x) - t * x if log_input else x - t * f.log(x + float(eps))
    if full:
        big = f.greater(t, 1.0)
        safe = f.where(big, t, 1.0)
        loss = loss + f.where(big, f.xlogy(safe, safe) - safe + 0.5 * f.log(2 * math.pi * safe), 0.0)
    return reduce(f, loss, reduction)


# --------------------------------------------------------------------------- classification losses

def _bce_forward(xp, p, t):
    with np.errstate(divide="ignore", invalid="ignore"):
        return -(t * xp.maximum(xp.log(p), -100.0) + (1.0 - t) * xp.maximum(xp.log1p(-p), -100.0))


# PyTorch's own gradients: in the input (p - t) / max(p (1 - p), 1e-12), finite at p = 0 and 1
# where the clamped logs are; in the target log(1 - p) - log(p), not clamped (infinite at 0 and 1)
register(Op("bce_terms", _bce_forward, lambda p, t: broadcast_shapes(p, t),
            (lambda g, ans, p, t: g * ((p - t) / G_.maximum((1.0 - p) * p, 1e-12)),
             lambda g, ans, p, t: g * (G_.log1p(-p) - G_.log(p))),
            args=("input", "target"), elementwise=True, public=False, bound=UNBOUNDED,
            doc="-(t log p + (1 - t) log(1 - p)), each log clamped at -100, with PyTorch's gradients"))


def _checked_range(xp, x, lo, hi=None, rule=""):
    if x.size and (bool(xp.any(x < lo)) or (hi is not None and bool(xp.any(x > hi)))):
        raise DataError(rule)
    return x


# PyTorch refuses some values when the program runs (a target outside [0, 1], a negative
# variance): the value passed on unchanged, or that refusal, at the call's place
register(Op("checked_range", _checked_range, lambda shape, lo, hi=None, rule="": tuple(shape),
            (lambda g, ans, x, lo, hi=None, rule="": g,), params={"lo": REQUIRED, "hi": None, "rule": REQUIRED},
            finite_closed=True,
            doc="x unchanged when every element is in [lo, hi] (hi None: no upper end), else the error `rule`"))


def _t_log_t(f, t):
    """t log t, 0 at t = 0, with the slope log t + 1 (-inf at 0, as PyTorch's and Optax's
    gradients in the target are not finite there); xlogy's own slope in t is 0 at t = 0."""
    return f.stop_gradient(f.xlogy(t, t) + f.entr(t)) - f.entr(t)


def _same_size(x, t):
    if x.shape != t.shape:  # PyTorch raises ValueError
        raise ShapeError(f"target {fmt_shape(t.shape)} and input {fmt_shape(x.shape)} must have the same size "
                         "(PyTorch refuses others)")


@composite("binary_cross_entropy", ("input", "target"), dict(R, weight=None),
           "-weight (target log(input) + (1 - target) log(1 - input)), each log clamped at -100 (PyTorch)",
           tensors=("weight",))
def _bce(f, p, t, reduction, weight):
    _same_size(p, t)
    p = f.checked_range(p, lo=0.0, hi=1.0, rule="all elements of input should be between "
                                              "0 and 1 (PyTorch refuses others)")
    t = f.checked_range(t, lo=0.0, hi=1.0, rule="all elements of target should be between "
                                              "0 and 1 (PyTorch refuses others)")
    loss = f.bce_terms(p, t)
    if weight is not None:
        loss = loss * weight
    return reduce(f, loss, reduction)


@composite("binary_cross_entropy_with_logits", ("input", "target"), dict(R, weight=None, pos_weight=None),
           "-weight (pos_weight target log sigmoid(x) + (1 - target) log sigmoid(-x))",
           tensors=("weight", "pos_weight"))
def _bce_logits(f, x, t, reduction, weight, pos_weight):
    _same_size(x, t)
    positive = t * f.log_sigmoid(x)
    if pos_weight is not None:
        positive = positive * pos_weight
    loss = -(positive + (1.0 - t) * f.log_sigmoid(-x))
    if weight is not None:
        loss = loss * weight
    return reduce(f, loss, reduction)


def _class_targets(f, x, t, cdim, ignore_index, label):
    """One-hot rows of class-index targets (0 where the target is ignore_index), and the mask
    of the targets that count; the targets' values are checked against the classes."""
    n_classes = x.shape[cdim]
    known = t.graph.known(t.id)
    if known is None:
        raise ShapeError(f"class-index targets must be written in the program or given as an input (gradcli "
                         f"checks each against the {n_classes} classes)")
    values = np.asarray(known)
    ignored = (values == ignore_index) if ignore_index is not None else np.zeros(values.shape, bool)
    bad = ~((values == np.round(values)) & (((values >= 0) & (values < n_classes)) | ignored))
    if np.any(bad):
        first = values.reshape(-1)[bad.reshape(-1)][0]
        raise ShapeError(f"target {first:g} is not a class index: {label} has {n_classes} classes "
                         f"(0 to {n_classes - 1}){'' if ignore_index in (-100, None) else f', or ignore_index {ignore_index}'}")
    shape = list(t.shape)
    shape.insert(cdim, 1)
    classes = np.arange(n_classes, dtype=np.float64).reshape((n_classes,) + (1,) * (len(shape) - cdim - 1))
    onehot = f.equal(f.reshape(t, shape=tuple(shape)), classes)
    valid = None if ignore_index is None else f.not_equal(t, float(ignore_index))
    return onehot, valid


def _class_dim(x, label):
    if x.ndim == 0:
        raise ShapeError(f"{label} needs scores of rank 1 (C,) or more (N, C, ...), got a number")
    return 0 if x.ndim == 1 else 1


def _weights_along(f, weight, x, cdim):
    if weight.shape != (x.shape[cdim],):
        raise ShapeError(f"weight must have one entry per class, shape ({x.shape[cdim]},), got {fmt_shape(weight.shape)}")
    return f.reshape(weight, shape=(x.shape[cdim],) + (1,) * (x.ndim - cdim - 1))


def _nll(f, logp, t, weight, ignore_index, reduction, label, label_smoothing=0.0):
    _check_reduction(reduction)
    cdim = _class_dim(logp, label)
    n_classes = logp.shape[cdim]
    index_shape = logp.shape[:cdim] + logp.shape[cdim + 1:]
    if t.shape == logp.shape and label == "cross_entropy":  # class probabilities
        target = t
        if label_smoothing:
            target = t * (1.0 - label_smoothing) + label_smoothing / n_classes
        terms = logp * target
        if weight is not None:
            terms = terms * _weights_along(f, weight, logp, cdim)
        return reduce(f, -f.sum(terms, axis=cdim), reduction)
    if t.shape != index_shape:
        expected = fmt_shape(index_shape) + (f" (class indices) or {fmt_shape(logp.shape)} (probabilities)"
                                             if label == "cross_entropy" else " (class indices)")
        raise ShapeError(f"target of shape {fmt_shape(t.shape)} does not fit scores of shape "
                         f"{fmt_shape(logp.shape)}: it must have shape {expected}")
    onehot, valid = _class_targets(f, logp, t, cdim, ignore_index, label)
    picked = -f.sum(f.where(onehot, logp, 0.0), axis=cdim)
    if weight is not None:
        if label_smoothing:
            raise ShapeError("label_smoothing with class weights is not supported; leave one out")
        w = f.sum(onehot * _weights_along(f, weight, logp, cdim), axis=cdim) * valid
    else:
        w = valid
    loss = picked * w
    if label_smoothing:
        smooth = -f.sum(logp, axis=cdim) / float(n_classes) * valid
        loss = (1.0 - label_smoothing) * loss + label_smoothing * smooth
    if reduction == "mean":
        return f.sum(loss) / f.sum(w)
    return f.sum(loss) if reduction == "sum" else loss


@composite("cross_entropy", ("input", "target"), dict(R, weight=None, ignore_index=-100, label_smoothing=0.0),
           "PyTorch's: -log_softmax(input)[target] over the class dimension (1, or 0 unbatched), targets "
           "as class indices (mean weighted by the targets' class weights) or as probabilities",
           tensors=("weight",))
def _cross_entropy(f, x, t, reduction, weight, ignore_index, label_smoothing):
    if not 0.0 <= label_smoothing <= 1.0:
        raise ShapeError("label_smoothing must be between 0 and 1")
    logp = f.log_softmax(x, axis=_class_dim(x, "cross_entropy"))
    return _nll(f, logp, t, weight, ignore_index, reduction, "cross_entropy", label_smoothing)


@composite("nll_loss", ("input", "target"), dict(R, weight=None, ignore_index=-100),
           "-input[target] (input: log-probabilities over dim 1), mean weighted by the class weights",
           tensors=("weight",))
def _nll_loss(f, x, t, reduction, weight, ignore_index):
    return _nll(f, x, t, weight, ignore_index, reduction, "nll_loss")


@composite("kl_div", ("input", "target"), dict(R, log_target=False),
           "target (log(target) - input) pointwise (input: log-probabilities; log_target=True: target too); "
           "reduction 'mean' averages every element, 'batchmean' divides the sum by the batch size")
def _kl_div(f, x, t, reduction, log_target):
    loss = f.exp(t) * (t - x) if log_target else _t_log_t(f, t) - t * x
    if reduction == "batchmean":
        return f.sum(loss) / float(x.shape[0]) if x.ndim else f.sum(loss)
    if reduction not in ("mean", "sum", "none"):
        raise ShapeError(f"reduction must be 'mean', 'batchmean', 'sum' or 'none', not {reduction!r}")
    return reduce(f, loss, reduction)


@composite("soft_margin_loss", ("input", "target"), dict(R), "log(1 + exp(-target input))")
def _soft_margin(f, x, t, reduction):
    return reduce(f, f.softplus(-(t * x)), reduction)


@composite("margin_ranking_loss", ("input1", "input2", "target"), dict(R, margin=0.0),
           "max(0, -target (input1 - input2) + margin)")
def _margin_ranking(f, a, b, t, reduction, margin):
    return reduce(f, clamp_min(f, -(t * (a - b)) + float(margin), 0.0), reduction)


# --------------------------------------------------------------------------- distances and normalization

@composite("cosine_similarity", ("x1", "x2"), {"axis": 1, "eps": 1e-8},
           "sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps), dim) (PyTorch: dim=1, the clamps pass no gradient)")
def _cosine_similarity(f, a, b, axis, eps):
    if eps < 0:
        raise ShapeError(f"eps must be non-negative, got {eps:g} (PyTorch refuses it)")
    shape = broadcast_shapes(a.shape, b.shape)
    if not shape:
        raise ShapeError("cosine_similarity needs arrays of rank 1 or more")
    axis = _axis(axis, len(shape))
    a = f.broadcast_to(a, shape=shape) if a.shape != shape else a
    b = f.broadcast_to(b, shape=shape) if b.shape != shape else b
    na = no_grad_clamp_min(f, f.vector_norm(a, axis=axis, keepdims=True), float(eps))
    nb = no_grad_clamp_min(f, f.vector_norm(b, axis=axis, keepdims=True), float(eps))
    return f.sum((a / na) * (b / nb), axis=axis)


@composite("pairwise_distance", ("x1", "x2"), {"p": 2.0, "eps": 1e-6, "keepdims": False},
           "the p-norm of x1 - x2 + eps over the last dimension")
def _pairwise_distance(f, a, b, p, eps, keepdims):
    d = a - b + float(eps)
    if d.ndim == 0:
        return f.abs(d)
    return f.vector_norm(d, ord=p, axis=-1, keepdims=keepdims)


@composite("normalize", ("input",), {"p": 2.0, "axis": 1, "eps": 1e-12},
           "input / max(|input|_p, eps) along dim (PyTorch: p=2, dim=1)")
def _normalize(f, x, p, axis, eps):
    if x.ndim == 0:
        raise ShapeError("normalize needs an array of rank 1 or more")
    n = f.vector_norm(x, ord=p, axis=_axis(axis, x.ndim), keepdims=True)
    return x / clamp_min(f, n, float(eps))


@composite("clip_splitting_ties", ("x",), {"lo": None, "hi": None},
           "minimum(maximum(x, lo), hi): at a bound the gradient is split evenly (JAX's clip)", tensors=("lo", "hi"))
def _clip_splitting_ties(f, x, lo, hi):
    if lo is not None:
        x = f.maximum(x, lo)
    return x if hi is None else f.minimum(x, hi)


@composite("sparse_sigmoid_splitting_ties", ("x",), {},
           "jax.nn.sparse_sigmoid: 0.5 clip(x + 1, 0, 2) with JAX's clip, slope 1/4 at -1 and 1", public=False)
def _jax_sparse_sigmoid(f, x):
    return 0.5 * _clip_splitting_ties(f, x + 1.0, 0.0, 2.0)


@composite("l2_normalize", ("x",), {"axis": None, "epsilon": 1e-12},
           "x / sqrt(max(sum(x^2, axis), epsilon)): unit vectors along axis (every element when None)")
def _l2_normalize(f, x, axis, epsilon):
    squares = f.sum(f.square(x), axis=axis, keepdims=True)
    return x / f.sqrt(clamp_min(f, squares, float(epsilon)))


def _last_axes(x, normalized_shape, label):
    given = (normalized_shape,) if isinstance(normalized_shape, (int, float)) else normalized_shape
    if isinstance(given, str) or any(isinstance(d, str) or not math.isfinite(d) or d != int(d) for d in given):
        raise ShapeError(f"normalized_shape must be an integer or a list of integers, not {normalized_shape!r}")
    shape = tuple(int(d) for d in given)
    k = len(shape)
    if k == 0 or k > x.ndim or x.shape[x.ndim - k:] != shape:
        raise ShapeError(f"normalized_shape {fmt_shape(shape)} must be the last dimensions of the input, "
                         f"whose shape is {fmt_shape(x.shape)}")
    return tuple(range(x.ndim - k, x.ndim)), shape


def _affine(f, y, weight, bias, shape):
    for name, value in (("weight", weight), ("bias", bias)):
        if value is not None and value.shape != shape:
            raise ShapeError(f"{name} must have the normalized shape {fmt_shape(shape)}, got {fmt_shape(value.shape)}")
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


@composite("layer_norm", ("input",), {"normalized_shape": REQUIRED, "weight": None, "bias": None, "eps": 1e-5},
           "(x - mean) / sqrt(var + eps) over the last dimensions (biased variance), then * weight + bias",
           tensors=("weight", "bias"))
def _layer_norm(f, x, normalized_shape, weight, bias, eps):
    axes, shape = _last_axes(x, normalized_shape, "layer_norm")
    centered = x - f.mean(x, axis=axes, keepdims=True)
    var = f.mean(f.square(centered), axis=axes, keepdims=True)
    return _affine(f, centered / f.sqrt(var + float(eps)), weight, bias, shape)


@composite("batch_norm", ("input",), {"running_mean": None, "running_var": None, "weight": None, "bias": None,
                                     "training": False, "momentum": 0.1, "eps": 1e-5},
           "F.batch_norm: each channel (dim 1) normalized, (x - mean) / sqrt(var + eps), by the batch's mean and "
           "biased variance over the other dims (training=True, running_mean and running_var None) or by "
           "running_mean and running_var (training=False), then * weight + bias per channel",
           tensors=("running_mean", "running_var", "weight", "bias"))
def _batch_norm(f, x, running_mean, running_var, weight, bias, training, momentum, eps):
    if x.ndim < 2:
        raise ShapeError(f"batch_norm takes (N, C, ...), got {fmt_shape(x.shape)}")
    c, per_channel = x.shape[1], (1, x.shape[1]) + (1,) * (x.ndim - 2)
    for name, value in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                        ("bias", bias)):
        if value is not None and value.shape != (c,):
            raise ShapeError(f"{name} must have one entry per channel, shape ({c},), got {fmt_shape(value.shape)}")
    if training:
        if running_mean is not None or running_var is not None:
            raise ShapeError("batch_norm(training=True) updates running_mean and running_var in place (by momentum), "
                             "which gradcli does not: give None for them")
        if math.prod(x.shape) // c < 2:  # (PyTorch: ValueError)
            raise ShapeError("batch_norm(training=True) needs more than 1 value per channel (PyTorch: ValueError)")
        axes = (0,) + tuple(range(2, x.ndim))
        centered = x - f.mean(x, axis=axes, keepdims=True)
        var = f.mean(f.square(centered), axis=axes, keepdims=True)
    else:
        if running_mean is None or running_var is None:
            raise ShapeError("batch_norm(training=False) normalizes by running_mean and running_var: give them")
        centered = x - f.reshape(running_mean, shape=per_channel)
        var = f.reshape(running_var, shape=per_channel)
    y = centered / f.sqrt(var + float(eps))
    if weight is not None:
        y = y * f.reshape(weight, shape=per_channel)
    if bias is not None:
        y = y + f.reshape(bias, shape=per_channel)
    return y


@composite("group_norm", ("input",), {"num_groups": REQUIRED, "weight": None, "bias": None, "eps": 1e-5},
           "F.group_norm: the channels (dim 1) in num_groups groups, each sample's group normalized "
           "(x - mean) / sqrt(var + eps) (biased variance), then * weight + bias per channel",
           tensors=("weight", "bias"))
def _group_norm(f, x, num_groups, weight, bias, eps):
    if x.ndim < 2:
        raise ShapeError(f"group_norm takes (N, C, ...), got {fmt_shape(x.shape)}")
    n, c = x.shape[0], x.shape[1]
    if isinstance(num_groups, bool) or not isinstance(num_groups, int) or num_groups < 1 or c % num_groups:
        raise ShapeError(f"num_groups must divide the {c} channels, not {num_groups!r}")
    grouped = f.reshape(x, shape=(n, num_groups, -1))
    centered = grouped - f.mean(grouped, axis=2, keepdims=True)
    var = f.mean(f.square(centered), axis=2, keepdims=True)
    y = f.reshape(centered / f.sqrt(var + float(eps)), shape=x.shape)
    per_channel = (c,) + (1,) * (x.ndim - 2)
    for name, value in (("weight", weight), ("bias", bias)):
        if value is not None and value.shape != (c,):
            raise ShapeError(f"{name} must have one entry per channel, shape ({c},), got {fmt_shape(value.shape)}")
    if weight is not None:
        y = y * f.reshape(weight, shape=per_channel)
    if bias is not None:
        y = y + f.reshape(bias, shape=per_channel)
    return y


@composite("rms_norm", ("input",), {"normalized_shape": REQUIRED, "weight": None, "eps": None},
           "x / sqrt(mean(x^2) + eps) over the last dimensions, then * weight (eps must be given)",
           tensors=("weight",))
def _rms_norm(f, x, normalized_shape, weight, eps):
    if eps is None:
        raise ShapeError("rms_norm without eps: PyTorch then uses the machine epsilon of the input's dtype "
                         "(1.19e-07 in float32, 2.2e-16 in float64); write eps=...")
    axes, shape = _last_axes(x, normalized_shape, "rms_norm")
    y = x / f.sqrt(f.mean(f.square(x), axis=axes, keepdims=True) + float(eps))
    return _affine(f, y, weight, None, shape)


# --------------------------------------------------------------------------- layers and activations

@composite("linear", ("input", "weight"), {"bias": None}, "input @ weight.T + bias", tensors=("bias",))
def _linear(f, x, w, bias):
    if w.ndim > 2 or x.ndim == 0:
        raise ShapeError(f"linear takes an input of rank 1 or more and a weight of rank 1 or 2, got "
                         f"{fmt_shape(x.shape)} and {fmt_shape(w.shape)}")
    if w.ndim == 1 and bias is not None and x.ndim >= 2:  # PyTorch's addmm: "mat2 must be a matrix"
        raise ShapeError("a weight vector with a bias takes a vector input (PyTorch refuses a batch): "
                         "write the weight as a matrix of one row")
    y = f.matmul(x, f.transpose(w)) if w.ndim == 2 else f.matmul(x, w)
    return y + bias if bias is not None else y


@composite("bilinear", ("input1", "input2", "weight"), {"bias": None},
           "y_k = input1 weight_k input2 + bias_k (weight of shape (out, in1, in2))", tensors=("bias",))
def _bilinear(f, a, b, w, bias):
    if w.ndim != 3 or a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"bilinear takes a weight of shape (out, in1, in2), got {fmt_shape(w.shape)}")
    y = f.einsum(a, w, b, subscripts="...i,kij,...j->...k")
    return y + bias if bias is not None else y


@composite("glu", ("input",), {"axis": -1}, "a sigmoid(b), a and b the two halves of input along dim")
def _glu(f, x, axis):
    if x.ndim == 0:
        raise ShapeError("glu needs an array of rank 1 or more")
    d = _axis(axis, x.ndim)
    n = x.shape[d]
    if n % 2:
        raise ShapeError(f"glu halves dimension {d}, whose size {n} is odd")
    lead = ((None, None, None),) * d
    a = f.index(x, index=lead + ((0, n // 2, None),))
    b = f.index(x, index=lead + ((n // 2, n, None),))
    return a * f.sigmoid(b)


@composite("softmin", ("input",), {"axis": None}, "softmax(-input, dim)")
def _softmin(f, x, axis):
    if axis is None:
        raise ShapeError("softmin without dim: PyTorch then picks a dimension by the input's rank (deprecated); "
                         "write dim=...")
    return f.softmax(-x, axis=axis)


@composite("tanhshrink", ("input",), {}, "input - tanh(input)")
def _tanhshrink(f, x):
    return x - f.tanh(x)


@composite("softshrink", ("input",), {"lambd": 0.5}, "input - lambd above lambd, input + lambd below -lambd, else 0")
def _softshrink(f, x, lambd):
    if lambd < 0:
        raise ShapeError("lambd must be 0 or more")
    return x - f.clip(x, -float(lambd), float(lambd))


@composite("hardshrink", ("input",), {"lambd": 0.5}, "input where |input| > lambd, else 0")
def _hardshrink(f, x, lambd):
    return x * f.greater(f.abs(x), float(lambd))


@composite("threshold", ("input",), {"threshold": REQUIRED, "value": REQUIRED, "inplace": False},
           "input where input > threshold, else value")
def _threshold(f, x, threshold, value, inplace):
    return f.where(f.greater(x, float(threshold)), x, float(value))


@composite("prelu", ("input", "weight"), {}, "input where input > 0, else weight input (weight per channel, dim 1)")
def _prelu(f, x, w):
    if w.ndim > 1:
        raise ShapeError(f"prelu's weight must be 1-D, got shape {fmt_shape(w.shape)}")
    if w.ndim == 1 and w.shape[0] != 1:
        channels = x.shape[1] if x.ndim >= 2 else None
        if channels != w.shape[0]:
            raise ShapeError(f"prelu's weight has {w.shape[0]} entries, the input {channels or 1} channels (dim 1)")
        w = f.reshape(w, shape=(channels,) + (1,) * (x.ndim - 2))
    return f.where(f.greater(x, 0.0), x, w * x)


# --------------------------------------------------------------------------- PyTorch's fused arithmetic

@composite("lerp", ("input", "end", "weight"), {}, "input + weight (end - input)")
def _lerp(f, x, end, weight):
    return x + weight * (end - x)


@composite("addcmul", ("input", "tensor1", "tensor2"), {"value": 1.0}, "input + value tensor1 tensor2")
def _addcmul(f, x, a, b, value):
    return x + float(value) * (a * b)


@composite("addcdiv", ("input", "tensor1", "tensor2"), {"value": 1.0}, "input + value tensor1 / tensor2")
def _addcdiv(f, x, a, b, value):
    return x + float(value) * (a / b)


def _scaled_sum(f, x, product, beta, alpha):
    """beta input + alpha product; with beta = 0 the input is ignored (PyTorch: its NaN and inf
    do not propagate)."""
    shape = broadcast_shapes(x.shape, product.shape)
    if shape != product.shape:
        raise ShapeError(f"input of shape {fmt_shape(x.shape)} does not broadcast to the product's "
                         f"{fmt_shape(product.shape)}")
    scaled = product if alpha == 1 else float(alpha) * product
    if beta == 0:
        return scaled
    return (x if beta == 1 else float(beta) * x) + scaled


def _ranks(label, *pairs):
    for name, v, rank in pairs:
        if v.ndim != rank:
            raise ShapeError(f"{label}: {name} must have rank {rank}, got shape {fmt_shape(v.shape)}")


AB = {"beta": 1.0, "alpha": 1.0}


@composite("addmm", ("input", "mat1", "mat2"), dict(AB), "beta input + alpha mat1 @ mat2")
def _addmm(f, x, a, b, beta, alpha):
    _ranks("addmm", ("mat1", a, 2), ("mat2", b, 2))
    return _scaled_sum(f, x, f.matmul(a, b), beta, alpha)


@composite("addmv", ("input", "mat", "vec"), dict(AB), "beta input + alpha mat @ vec")
def _addmv(f, x, a, v, beta, alpha):
    _ranks("addmv", ("mat", a, 2), ("vec", v, 1))
    return _scaled_sum(f, x, f.matmul(a, v), beta, alpha)


@composite("addr", ("input", "vec1", "vec2"), dict(AB), "beta input + alpha outer(vec1, vec2)")
def _addr(f, x, a, b, beta, alpha):
    _ranks("addr", ("vec1", a, 1), ("vec2", b, 1))
    outer = f.reshape(a, shape=(a.shape[0], 1)) * f.reshape(b, shape=(1, b.shape[0]))
    return _scaled_sum(f, x, outer, beta, alpha)


@composite("baddbmm", ("input", "batch1", "batch2"), dict(AB), "beta input + alpha batch1 @ batch2 (batched)")
def _baddbmm(f, x, a, b, beta, alpha):
    _ranks("baddbmm", ("batch1", a, 3), ("batch2", b, 3))
    if a.shape[0] != b.shape[0]:
        raise ShapeError(f"baddbmm: the batches differ ({a.shape[0]} and {b.shape[0]})")
    return _scaled_sum(f, x, f.matmul(a, b), beta, alpha)


@composite("addbmm", ("input", "batch1", "batch2"), dict(AB), "beta input + alpha sum over the batch of batch1 @ batch2")
def _addbmm(f, x, a, b, beta, alpha):
    _ranks("addbmm", ("batch1", a, 3), ("batch2", b, 3))
    if a.shape[0] != b.shape[0]:
        raise ShapeError(f"addbmm: the batches differ ({a.shape[0]} and {b.shape[0]})")
    return _scaled_sum(f, x, f.sum(f.matmul(a, b), axis=0), beta, alpha)


@composite("rsub", ("input", "other"), {"alpha": 1.0}, "other - alpha input")
def _rsub(f, x, other, alpha):
    return other - (x if alpha == 1 else float(alpha) * x)


composite("clamp_min", ("input", "min"), {}, "max(input, min); the gradient passes where input >= min (PyTorch)")(
    clamp_min)
composite("clamp_max", ("input", "max"), {}, "min(input, max); the gradient passes where input <= max (PyTorch)")(
    clamp_max)


@composite("clamp", ("input",), {"min": None, "max": None},
           "PyTorch's clamp(input, min, max): either bound may be left out; the gradient passes where "
           "min <= input <= max", tensors=("min", "max"))
def _clamp(f, x, min, max):  # noqa: A002 (PyTorch's names)
    if min is None and max is None:
        raise ShapeError("clamp needs min or max")
    if min is not None:
        x = clamp_min(f, x, min)
    return x if max is None else clamp_max(f, x, max)


@composite("dist", ("input", "other"), {"p": 2.0}, "the p-norm of input - other, over every element")
def _dist(f, x, y, p):
    return f.vector_norm(x - y, ord=p)


@composite("cdist", ("x1", "x2"), {"p": 2.0, "compute_mode": "use_mm_for_euclid_dist_if_necessary"},
           "the p-norm distances between the rows of x1 (..., P, M) and x2 (..., R, M): (..., P, R)")
def _cdist(f, a, b, p, compute_mode):
    if p < 0:
        raise ShapeError(f"p must be non-negative, got {p:g} (PyTorch's cdist refuses it)")
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-1]:
        raise ShapeError(f"cdist takes x1 (..., P, M) and x2 (..., R, M), got {fmt_shape(a.shape)} "
                         f"and {fmt_shape(b.shape)}")
    d = (f.reshape(a, shape=a.shape[:-1] + (1, a.shape[-1]))
         - f.reshape(b, shape=b.shape[:-2] + (1,) + b.shape[-2:]))
    return f.vector_norm(d, ord=p, axis=-1)


# --------------------------------------------------------------------------- weighted logsumexp

@composite("weighted_logsumexp", ("a",), {"axis": None, "b": None, "keepdims": False},
           "log(sum(b exp(a), axis)) (SciPy's logsumexp with b=), computed shifted by the maximum; NaN where "
           "the weighted sum is negative", tensors=("b",), public=False)
def _weighted_logsumexp(f, a, axis, b, keepdims):
    if b is None:
        return f.logsumexp(a, axis=axis, keepdims=keepdims)
    shape = broadcast_shapes(a.shape, b.shape)
    a = f.broadcast_to(a, shape=shape) if a.shape != shape else a
    axes = normalize_axes(axis, len(shape))
    if any(shape[k] == 0 for k in axes):
        raise ShapeError("logsumexp over an empty axis has no value")
    # SciPy and JAX leave out the terms whose weight is 0 (their a may be anything, inf included)
    weighted = f.not_equal(b, 0.0)
    a = f.where(weighted, a, -np.finfo(np.float64).max)  # exp of it is 0: no inf * 0
    m = f.stop_gradient(f.max(a, axis=axes, keepdims=True))
    m = f.where(f.isfinite(m), m, 0.0)
    out = f.log(f.sum(b * f.exp(a - m), axis=axes, keepdims=True)) + m
    if keepdims:
        return out
    return f.reshape(out, shape=tuple(d for k, d in enumerate(shape) if k not in axes))
