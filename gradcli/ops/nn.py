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
"""
from __future__ import annotations

import math

import numpy as np

from gradcli.errors import ShapeError
from gradcli.ops.trace import G as G_, Functions, Sym
from gradcli.ops.table import REQUIRED, UNBOUNDED, DataError, Op, register
from gradcli.ops.shapes import broadcast_shapes, fmt_shape, normalize_axes
from gradcli.ops.index import IndexArray



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
    if reduction == "mean":
        return f.mean(loss)
    if reduction == "sum":
        return f.sum(loss)
    if reduction == "none":
        return loss
    raise ShapeError(f"reduction must be 'mean', 'sum' or 'none', not {reduction!r}")


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
    known = var.graph.known(var.id)
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
            public=True, finite_closed=True,
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


@composite("clamp_min", ("input", "min"), {}, "max(input, min); the gradient passes where input >= min (PyTorch)")
def _clamp_min(f, x, low):
    return clamp_min(f, x, low)


@composite("clamp_max", ("input", "max"), {}, "min(input, max); the gradient passes where input <= max (PyTorch)")
def _clamp_max(f, x, high):
    return clamp_max(f, x, high)


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


# --------------------------------------------------------------------------- 2-D convolution
#
# One core, NHWC input (N, H, W, C) and HWIO filters (KH, KW, C, O), with strides, dilations
# and explicit padding ((top, bottom), (left, right)); TensorFlow's and PyTorch's spellings are
# composites that normalize their arguments onto it. The input gradient and the filter gradient
# are ops too, and the three are each other's VJPs (the convolution is bilinear), so second
# derivatives are exact.

def _conv_out(size, k, stride, dilation, pad):
    span = (k - 1) * dilation + 1
    return (size + pad[0] + pad[1] - span) // stride + 1


def _conv_checked(strides, dilations, padding):
    ok = (isinstance(strides, tuple) and isinstance(dilations, tuple) and isinstance(padding, tuple)
          and len(strides) == len(dilations) == len(padding) == 2
          and all(isinstance(v, int) and v >= 1 for v in strides + dilations)
          and all(isinstance(p, tuple) and len(p) == 2 and all(isinstance(v, int) and v >= 0 for v in p)
                  for p in padding))
    if not ok:
        raise ShapeError("strides and dilations must be two positive integers, padding two (before, after) pairs")


def _conv_shape(x, f, strides, dilations, padding):
    _conv_checked(strides, dilations, padding)
    if len(x) != 4 or len(f) != 4:
        raise ShapeError(f"conv2d takes a 4-D input and a 4-D filter, got {fmt_shape(x)} and {fmt_shape(f)}")
    if x[3] != f[2]:
        raise ShapeError(f"the input has {x[3]} channels, the filter takes {f[2]} (its third dimension, HWIO)")
    out = [_conv_out(x[1 + k], f[k], strides[k], dilations[k], padding[k]) for k in range(2)]
    if min(out) < 1:
        raise ShapeError(f"the filter {fmt_shape(f[:2])} (dilated) does not fit the padded input {fmt_shape(x[1:3])}")
    return (x[0], out[0], out[1], f[3])


def _patches(xp, x, fshape, strides, dilations, padding, out_hw):
    """(N, OH, OW, KH, KW, C): the input element each filter tap meets at each output."""
    xp_ = xp.pad(x, ((0, 0), tuple(padding[0]), tuple(padding[1]), (0, 0)))
    (sh, sw), (dh, dw), (oh, ow) = strides, dilations, out_hw
    rows = []
    for i in range(fshape[0]):
        cols = []
        for j in range(fshape[1]):
            cols.append(xp_[:, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw, :])
        rows.append(xp.stack(cols, axis=3))
    return xp.stack(rows, axis=3)


def _conv(xp, x, f, strides, dilations, padding):
    out = _conv_shape(x.shape, f.shape, strides, dilations, padding)
    p = _patches(xp, x, f.shape, strides, dilations, padding, out[1:3])
    return xp.einsum("nhwijc,ijco->nhwo", p, f).astype(xp.result_type(x, f))


def _conv_input_grad(xp, g, f, input_shape, strides, dilations, padding):
    """The adjoint of the convolution in its input: each output's cotangent times the filter,
    added back where each tap read (the padding cut away)."""
    n, h, w, c = input_shape
    (sh, sw), (dh, dw) = strides, dilations
    oh, ow = g.shape[1], g.shape[2]
    taps = xp.einsum("nhwo,ijco->nhwijc", g, f)
    out = xp.zeros((n, h + padding[0][0] + padding[0][1], w + padding[1][0] + padding[1][1], c), dtype=g.dtype)
    for i in range(f.shape[0]):
        for j in range(f.shape[1]):
            out[:, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw, :] += taps[:, :, :, i, j, :]
    return out[:, padding[0][0]: padding[0][0] + h, padding[1][0]: padding[1][0] + w, :]


def _conv_filter_grad(xp, x, g, filter_shape, strides, dilations, padding):
    p = _patches(xp, x, filter_shape, strides, dilations, padding, g.shape[1:3])
    return xp.einsum("nhwijc,nhwo->ijco", p, g).astype(xp.result_type(x, g))


_CONV = {"strides": REQUIRED, "dilations": REQUIRED, "padding": REQUIRED}


def _conv_params(p):
    return {k: p[k] for k in ("strides", "dilations", "padding")}


register(Op("conv2d_nhwc", _conv, _conv_shape,
            (lambda g, ans, x, f, **p: G_.conv2d_input_grad(g, f, input_shape=x.shape, **_conv_params(p)),
             lambda g, ans, x, f, **p: G_.conv2d_filter_grad(x, g, filter_shape=f.shape, **_conv_params(p))),
            args=("input", "filters"), params=dict(_CONV),
            doc="2-D convolution (cross-correlation), NHWC input and HWIO filters, strides and dilations (h, w), "
                "padding ((top, bottom), (left, right)): what tf.nn.conv2d and F.conv2d are written with",
            nonstandard="NumPy's pad and einsum"))
def _input_grad_shape(g, f, input_shape, **p):
    input_shape = tuple(input_shape)
    if len(input_shape) != 4 or _conv_shape(input_shape, f, **p) != tuple(g):
        raise ShapeError(f"a cotangent of shape {fmt_shape(g)} is not conv2d's output for input {fmt_shape(input_shape)}")
    return input_shape


def _filter_grad_shape(x, g, filter_shape, **p):
    filter_shape = tuple(filter_shape)
    if len(filter_shape) != 4 or _conv_shape(x, filter_shape, **p) != tuple(g):
        raise ShapeError(f"a cotangent of shape {fmt_shape(g)} is not conv2d's output for filters {fmt_shape(filter_shape)}")
    return filter_shape


register(Op("conv2d_input_grad", _conv_input_grad, _input_grad_shape,
            (lambda u, ans, g, f, input_shape, **p: G_.conv2d_nhwc(u, f, **_conv_params(p)),
             lambda u, ans, g, f, input_shape, **p: G_.conv2d_filter_grad(u, g, filter_shape=f.shape,
                                                                          **_conv_params(p))),
            args=("g", "filters"), params=dict(_CONV, input_shape=REQUIRED),
            doc="the gradient of conv2d_nhwc in its input", nonstandard="NumPy's einsum"))
register(Op("conv2d_filter_grad", _conv_filter_grad, _filter_grad_shape,
            (lambda u, ans, x, g, filter_shape, **p: G_.conv2d_input_grad(g, u, input_shape=x.shape,
                                                                          **_conv_params(p)),
             lambda u, ans, x, g, filter_shape, **p: G_.conv2d_nhwc(x, u, **_conv_params(p))),
            args=("input", "g"), params=dict(_CONV, filter_shape=REQUIRED),
            doc="the gradient of conv2d_nhwc in its filters", nonstandard="NumPy's pad and einsum"))


def _pair(value, name, n_spatial=2, data_format="NHWC"):
    """strides or dilations as (h, w): an int, a list of 1, 2 or 4 (TensorFlow: N and C must be 1)."""
    if value is None:
        return (1, 1)
    values = (value,) if isinstance(value, (int, float)) else tuple(value)
    if any(v != int(v) or v < 1 for v in values):
        raise ShapeError(f"{name} must be positive integers, got {value}")
    values = tuple(int(v) for v in values)
    if len(values) == 1:
        return values * 2
    if len(values) == 2:
        return values
    if len(values) == 4:
        spatial = values[1:3] if data_format == "NHWC" else values[2:4]
        batch_channel = (values[0], values[3]) if data_format == "NHWC" else values[:2]
        if batch_channel != (1, 1):
            raise ShapeError(f"{name} over the batch and channel dimensions must be 1, got {value}")
        return spatial
    raise ShapeError(f"{name} must be one, two or four integers, got {value}")


def _same_padding(size, k, stride, dilation):
    span = (k - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + span - size, 0)
    return (total // 2, total - total // 2)


def _tf_conv(f, x, w, strides, padding, data_format, dilations, label):
    if data_format not in ("NHWC", "NCHW"):
        raise ShapeError(f"data_format must be 'NHWC' or 'NCHW', not {data_format!r}")
    if x.ndim != 4 or w.ndim != 4:
        raise ShapeError(f"{label} takes a 4-D input and 4-D filters, got {fmt_shape(x.shape)} and {fmt_shape(w.shape)}")
    s, d = _pair(strides, "strides", data_format=data_format), _pair(dilations, "dilations", data_format=data_format)
    if data_format == "NCHW":
        x = f.transpose(x, axes=(0, 2, 3, 1))
    if isinstance(padding, tuple) and len(padding) == 4 and all(isinstance(p, tuple) for p in padding):
        rows = padding[1:3] if data_format == "NHWC" else padding[2:4]
        others = (padding[0], padding[3]) if data_format == "NHWC" else padding[:2]
        if any(p != (0, 0) for p in others):
            raise ShapeError("explicit padding of the batch and channel dimensions must be [0, 0]")
        pad = tuple(rows)
    elif not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        raise ShapeError(f"padding must be 'SAME', 'VALID' or four [before, after] pairs, not {padding!r}")
    elif padding.upper() == "VALID":
        pad = ((0, 0), (0, 0))
    else:
        pad = tuple(_same_padding(x.shape[1 + k], w.shape[k], s[k], d[k]) for k in range(2))
    y = f.conv2d_nhwc(x, w, strides=s, dilations=d, padding=pad)
    return f.transpose(y, axes=(0, 3, 1, 2)) if data_format == "NCHW" else y


@composite("conv2d", ("input", "filters"), {"strides": REQUIRED, "padding": REQUIRED, "data_format": "NHWC",
                                            "dilations": None, "name": None},
           "TensorFlow's tf.nn.conv2d: NHWC input, (KH, KW, in, out) filters, strides, padding 'SAME' or "
           "'VALID', dilations")
def _tf_conv2d(f, x, w, strides, padding, data_format, dilations, name):
    return _tf_conv(f, x, w, strides, padding, data_format, dilations, "conv2d")


@composite("depthwise_conv2d", ("input", "filter"), {"strides": REQUIRED, "padding": REQUIRED,
                                                     "data_format": "NHWC", "dilations": None, "rate": None,
                                                     "name": None},
           "TensorFlow's tf.nn.depthwise_conv2d: each input channel convolved with its own (KH, KW) filters "
           "(filter (KH, KW, in, multiplier)), output channel c * multiplier + m")
def _depthwise(f, x, w, strides, padding, data_format, dilations, rate, name):
    if w.ndim != 4:
        raise ShapeError(f"depthwise_conv2d takes a 4-D filter (KH, KW, in, multiplier), got {fmt_shape(w.shape)}")
    kh, kw, c, m = w.shape
    # the block-diagonal full filter: full[i, j, c', c * m + k] = w[i, j, c, k] where c' = c
    eye = np.eye(c).reshape(1, 1, c, c, 1)
    full = f.reshape(f.reshape(w, shape=(kh, kw, 1, c, m)) * eye, shape=(kh, kw, c, c * m))
    return _tf_conv(f, x, full, strides, padding, data_format, dilations if dilations is not None else rate,
                    "depthwise_conv2d")


def _torch_padding(padding, x, w, s, d):
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0), (0, 0))
        if padding == "same":
            if s != (1, 1):
                raise ShapeError("padding='same' needs stride 1 (as in PyTorch)")
            # PyTorch pads the extra element at the end, as TensorFlow does
            return tuple(_same_padding(x.shape[1 + k], w.shape[k], 1, d[k]) for k in range(2))
        raise ShapeError(f"padding must be 'valid', 'same', an int or a pair, not {padding!r}")
    p = (padding, padding) if isinstance(padding, (int, float)) else tuple(padding)
    if len(p) != 2 or any(v != int(v) or v < 0 for v in p):
        raise ShapeError(f"padding must be 'valid', 'same', an int or a pair of ints of 0 or more, not {padding}")
    return ((int(p[0]), int(p[0])), (int(p[1]), int(p[1])))


def _torch_conv(f, x, w, bias, stride, padding, dilation, groups, label, spatial):
    if groups != 1:
        raise ShapeError("groups other than 1 are not supported")
    rank = spatial + 2
    if x.ndim not in (rank - 1, rank) or w.ndim != rank:
        raise ShapeError(f"{label} takes a {rank}-D input (N, C, ...) and a {rank}-D weight (out, in, ...), got "
                         f"{fmt_shape(x.shape)} and {fmt_shape(w.shape)}")
    unbatched = x.ndim == rank - 1
    if unbatched:
        x = f.reshape(x, shape=(1,) + x.shape)
    if spatial == 1:  # a 1-D convolution is a 2-D one of height 1
        x = f.reshape(x, shape=x.shape[:2] + (1,) + x.shape[2:])
        w = f.reshape(w, shape=w.shape[:2] + (1,) + w.shape[2:])
        one = lambda v: (1, v[0]) if isinstance(v, tuple) else (1, v)  # noqa: E731
        stride, dilation = one(_pair(stride, "stride")[:1]), one(_pair(dilation, "dilation")[:1])
        if not isinstance(padding, str):
            padding = (0, padding if isinstance(padding, (int, float)) else tuple(padding)[0])
    s, d = _pair(stride, "stride"), _pair(dilation, "dilation")
    xh = f.transpose(x, axes=(0, 2, 3, 1))
    wh = f.transpose(w, axes=(2, 3, 1, 0))
    pad = _torch_padding(padding, xh, wh, s, d)
    y = f.transpose(f.conv2d_nhwc(xh, wh, strides=s, dilations=d, padding=pad), axes=(0, 3, 1, 2))
    if bias is not None:
        if bias.shape != (w.shape[0],):
            raise ShapeError(f"bias must have one entry per output channel, ({w.shape[0]},), got {fmt_shape(bias.shape)}")
        y = y + f.reshape(bias, shape=(w.shape[0], 1, 1))
    if spatial == 1:
        y = f.reshape(y, shape=y.shape[:2] + y.shape[3:])
    return f.reshape(y, shape=y.shape[1:]) if unbatched else y


TORCH_CONV = {"bias": None, "stride": 1, "padding": 0, "dilation": 1, "groups": 1}


@composite("conv2d_nchw", ("input", "weight"), dict(TORCH_CONV),
           "PyTorch's F.conv2d: NCHW input, (out, in, KH, KW) weight, bias, stride, padding, dilation",
           tensors=("bias",), public=False, loose=("stride", "padding", "dilation"))
def _torch_conv2d(f, x, w, bias, stride, padding, dilation, groups):
    return _torch_conv(f, x, w, bias, stride, padding, dilation, groups, "conv2d", 2)


@composite("conv1d", ("input", "weight"), dict(TORCH_CONV),
           "PyTorch's F.conv1d: (N, C, L) input, (out, in, K) weight, bias, stride, padding, dilation",
           tensors=("bias",), loose=("stride", "padding", "dilation"))
def _conv1d(f, x, w, bias, stride, padding, dilation, groups):
    return _torch_conv(f, x, w, bias, stride, padding, dilation, groups, "conv1d", 1)


# --------------------------------------------------------------------------- Keras' losses
#
# keras.losses.NAME(y_true, y_pred): one loss per sample, averaged over the last axis.
# K.epsilon() is 1e-7. The bare names are refused: scikit-learn's metrics of the same names
# average over every element.

EPS = 1e-7


def _same_rank(t, p):
    """Keras 3's losses squeeze or expand a trailing 1 where the ranks of y_true and y_pred differ
    by one, Keras 2's functions broadcast them: a pair of such shapes is refused."""
    ts, ps = t.shape, p.shape
    if (len(ts) == len(ps) + 1 and ts and ts[-1] == 1) or (len(ps) == len(ts) + 1 and ps and ps[-1] == 1):
        raise ShapeError(f"y_true {fmt_shape(ts)} and y_pred {fmt_shape(ps)}: Keras 3 squeezes the trailing 1 "
                         "away, Keras 2's loss functions broadcast the two; reshape one to the other's shape")


def keras_pair(fn):
    def checked(f, t, p, *rest, **params):
        _same_rank(t, p)
        return fn(f, t, p, *rest, **params)
    return checked


def _keras(name, doc, params=None):
    register_it = composite(name, ("y_true", "y_pred"), dict(params or {}), "Keras: " + doc)
    return lambda fn: register_it(keras_pair(fn))


def _last_mean(f, loss):
    return f.mean(loss, axis=-1) if loss.ndim else loss


@_keras("mean_squared_error", "mean((y_pred - y_true)^2, axis=-1)")
def _keras_mse(f, t, p):
    return _last_mean(f, f.square(p - t))


@_keras("mean_absolute_error", "mean(|y_pred - y_true|, axis=-1)")
def _keras_mae(f, t, p):
    return _last_mean(f, f.abs(p - t))


@_keras("mean_absolute_percentage_error", "100 mean(|(y_true - y_pred) / max(|y_true|, 1e-7)|, axis=-1)")
def _keras_mape(f, t, p):
    return 100.0 * _last_mean(f, f.abs((t - p) / f.maximum(f.abs(t), EPS)))


@_keras("mean_squared_logarithmic_error",
        "mean((log(max(y_pred, 1e-7) + 1) - log(max(y_true, 1e-7) + 1))^2, axis=-1)")
def _keras_msle(f, t, p):
    return _last_mean(f, f.square(f.log(f.maximum(p, EPS) + 1.0) - f.log(f.maximum(t, EPS) + 1.0)))


@_keras("poisson", "mean(y_pred - y_true log(y_pred + 1e-7), axis=-1)")
def _keras_poisson(f, t, p):
    return _last_mean(f, p - t * f.log(p + EPS))


@_keras("kl_divergence", "sum(y_true log(y_true / y_pred), axis=-1), both clipped to [1e-7, 1]")
def _keras_kld(f, t, p):
    t = f.clip(t, EPS, 1.0)
    p = f.clip(p, EPS, 1.0)
    return f.sum(t * f.log(t / p), axis=-1) if t.ndim else t * f.log(t / p)


def _hinge_labels(f, t, name):
    """Keras turns labels that are all 0 or 1 into -1 and 1 (a decision on the data)."""
    known = t.graph.known(t.id)
    if known is None:
        raise ShapeError(f"{name}: Keras reads labels that are all 0 or 1 as -1 and 1, so the labels must be "
                         "written in the program or given as an input")
    return 2.0 * t - 1.0 if np.all((known == 0) | (known == 1)) else t


@_keras("hinge", "mean(max(1 - y_true y_pred, 0), axis=-1), labels all 0/1 read as -1/1")
def _keras_hinge(f, t, p):
    return _last_mean(f, f.maximum(1.0 - _hinge_labels(f, t, "hinge") * p, 0.0))


@_keras("squared_hinge", "mean(max(1 - y_true y_pred, 0)^2, axis=-1), labels all 0/1 read as -1/1")
def _keras_squared_hinge(f, t, p):
    return _last_mean(f, f.square(f.maximum(1.0 - _hinge_labels(f, t, "squared_hinge") * p, 0.0)))


@_keras("categorical_hinge", "max(max((1 - y_true) y_pred, axis=-1) - sum(y_true y_pred, axis=-1) + 1, 0)")
def _keras_categorical_hinge(f, t, p):
    pos = f.sum(t * p, axis=-1)
    neg = f.max((1.0 - t) * p, axis=-1)
    return f.maximum(neg - pos + 1.0, 0.0)


@composite("huber_last_mean", ("y_true", "y_pred"), {"delta": 1.0},
           "Keras' huber: mean(huber(y_pred - y_true, delta), axis=-1)", public=False)
@keras_pair
def _keras_huber(f, t, p, delta):
    return _last_mean(f, f.huber(p - t, delta=delta))


@composite("log_cosh_last_mean", ("y_true", "y_pred"), {}, "Keras' log_cosh: mean(log(cosh(y_pred - y_true)), axis=-1)",
           public=False)
@keras_pair
def _keras_log_cosh(f, t, p):
    return _last_mean(f, f.log_cosh(p - t))


@composite("negative_cosine_similarity", ("y_true", "y_pred"), {"axis": -1},
           "Keras' loss: -sum(l2_normalize(y_true) l2_normalize(y_pred), axis)", public=False)
@keras_pair
def _keras_cosine(f, t, p, axis):
    def unit(v):
        return v / f.sqrt(f.maximum(f.sum(f.square(v), axis=axis, keepdims=True), 1e-12))
    return -f.sum(unit(t) * unit(p), axis=axis)


@composite("categorical_crossentropy", ("y_true", "y_pred"), {"from_logits": False, "label_smoothing": 0.0,
                                                              "axis": -1},
           "Keras: -sum(y_true log(p), axis), p = y_pred / sum(y_pred) clipped to [1e-7, 1 - 1e-7], or "
           "log_softmax(y_pred) with from_logits=True")
@keras_pair
def _keras_cce(f, t, p, from_logits, label_smoothing, axis):
    if label_smoothing:
        # Keras divides by the last dimension, whatever the axis (keras.losses.categorical_crossentropy)
        t = t * (1.0 - label_smoothing) + label_smoothing / float(p.shape[-1])
    if from_logits:
        logp = f.log_softmax(p, axis=axis)
    else:
        logp = f.log(f.clip(p / f.sum(p, axis=axis, keepdims=True), EPS, 1.0 - EPS))
    return -f.sum(t * logp, axis=axis)


@composite("sparse_categorical_crossentropy", ("y_true", "y_pred"), {"from_logits": False, "axis": -1},
           "Keras: -log_softmax(y_pred)[y_true] (from_logits=True; probabilities are refused)")
def _keras_scce(f, t, p, from_logits, axis):
    if not from_logits:
        raise ShapeError("from probabilities Keras 2 and Keras 3 clip differently; write from_logits=True with "
                         "the logits, or categorical_crossentropy with one-hot labels")
    if axis not in (-1, p.ndim - 1):
        raise ShapeError("axis must be the last")
    logp = f.log_softmax(p, axis=-1)
    if t.shape == p.shape[:-1] + (1,):
        t = f.reshape(t, shape=p.shape[:-1])
    onehot, _ = _class_targets(f, logp, t, p.ndim - 1, -100, "sparse_categorical_crossentropy")
    return -f.sum(f.where(onehot, logp, 0.0), axis=-1)


@composite("binary_crossentropy", ("y_true", "y_pred"), {"from_logits": False, "label_smoothing": 0.0, "axis": -1},
           "Keras: mean(sigmoid cross-entropy, axis) with from_logits=True (probabilities are refused)")
@keras_pair
def _keras_bce(f, t, p, from_logits, label_smoothing, axis):
    if not from_logits:
        raise ShapeError("from probabilities Keras 2 (log(p + 1e-7)) and Keras 3 (log(p)) differ; write "
                         "from_logits=True with the logits, or the formula you mean")
    if label_smoothing:
        t = t * (1.0 - label_smoothing) + 0.5 * label_smoothing
    loss = -(t * f.log_sigmoid(p) + (1.0 - t) * f.log_sigmoid(-p))
    return f.mean(loss, axis=axis) if loss.ndim else loss


# --------------------------------------------------------------------------- Optax's losses
#
# optax.NAME(predictions, targets): elementwise (or over the last axis), no reduction.

@composite("half_squared_error", ("predictions", "targets"), {}, "Optax's l2_loss: 0.5 (predictions - targets)^2",
           public=False)
def _optax_l2(f, p, t):
    return 0.5 * _squared_error(f, p, t)


@composite("log_cosh_error", ("predictions", "targets"), {}, "Optax's log_cosh: log(cosh(predictions - targets))",
           public=False)
def _optax_log_cosh(f, p, t):
    return f.log_cosh(p - t)


@composite("squared_error", ("predictions", "targets"), {}, "Optax: (predictions - targets)^2")
def _squared_error(f, p, t):
    if p.shape != t.shape:  # Optax asserts it (chex.assert_equal_shape)
        raise ShapeError(f"predictions {fmt_shape(p.shape)} and targets {fmt_shape(t.shape)} must have the same shape "
                         "(Optax asserts it)")
    return f.square(p - t)


@composite("sigmoid_binary_cross_entropy", ("logits", "labels"), {},
           "Optax: -labels log sigmoid(logits) - (1 - labels) log sigmoid(-logits), elementwise")
def _optax_sbce(f, x, z):
    return -(z * f.log_sigmoid(x) + (1.0 - z) * f.log_sigmoid(-x))


@composite("softmax_cross_entropy", ("logits", "labels"), {"axis": -1},
           "Optax: -sum(labels log_softmax(logits), axis)")
def _optax_sce(f, x, z, axis):
    return -f.sum(z * f.log_softmax(x, axis=axis), axis=axis)


@composite("softmax_cross_entropy_with_integer_labels", ("logits", "labels"), {"axis": -1},
           "Optax: -log_softmax(logits)[labels] over the last axis")
def _optax_sce_int(f, x, z, axis):
    if axis not in (-1, x.ndim - 1):
        raise ShapeError("axis must be the last")
    logp = f.log_softmax(x, axis=-1)
    onehot, _ = _class_targets(f, logp, z, x.ndim - 1, -100, "softmax_cross_entropy_with_integer_labels")
    return -f.sum(f.where(onehot, logp, 0.0), axis=-1)


@composite("hinge_loss", ("predictor_outputs", "targets"), {}, "Optax: max(0, 1 - predictor_outputs targets)")
def _optax_hinge(f, p, t):
    return f.maximum(1.0 - p * t, 0.0)


def _optax_cosine(f, p, t, epsilon):
    def unit(v):  # Optax clips the squared norm: sqrt(max(sum(v^2), epsilon))
        return v / f.sqrt(clamp_min(f, f.sum(f.square(v), axis=-1, keepdims=True), float(epsilon)))
    return f.sum(unit(p) * unit(t), axis=-1)


@composite("cosine_similarity_last", ("predictions", "targets"), {"epsilon": 0.0},
           "Optax's cosine_similarity: sum(p t, axis=-1) / (sqrt(max(|p|^2, eps)) sqrt(max(|t|^2, eps)))", public=False)
def _optax_cos(f, p, t, epsilon):
    return _optax_cosine(f, p, t, epsilon)


@composite("cosine_distance", ("predictions", "targets"), {"epsilon": 0.0},
           "Optax: 1 - cosine_similarity(predictions, targets)")
def _optax_cos_distance(f, p, t, epsilon):
    return 1.0 - _optax_cosine(f, p, t, epsilon)


@composite("kl_divergence_from_log", ("log_predictions", "targets"), {},
           "Optax's kl_divergence: sum(targets (log(targets) - log_predictions), axis=-1), 0 where targets is 0",
           public=False)
def _optax_kld(f, logp, t):
    loss = _t_log_t(f, t) - t * logp
    return f.sum(loss, axis=-1) if loss.ndim else loss


# --------------------------------------------------------------------------- more of PyTorch's losses

@composite("triplet_margin_loss", ("anchor", "positive", "negative"),
           dict(R, margin=1.0, p=2.0, eps=1e-6, swap=False),
           "max(d(anchor, positive) - d(anchor, negative) + margin, 0), d the pairwise_distance (p, eps); "
           "swap=True takes the smaller of d(anchor, negative) and d(positive, negative)")
def _triplet(f, a, pos, neg, reduction, margin, p, eps, swap):
    if margin <= 0:
        raise ShapeError(f"margin must be greater than 0, got {margin:g} (PyTorch refuses it)")

    def d(u, v):
        return _pairwise_distance(f, u, v, p, eps, False)
    d_an = d(a, neg)
    if swap:
        d_an = f.minimum(d_an, d(pos, neg))
    return reduce(f, clamp_min(f, d(a, pos) - d_an + float(margin), 0.0), reduction)


@composite("multilabel_soft_margin_loss", ("input", "target"), dict(R, weight=None),
           "-(target log sigmoid(x) + (1 - target) log sigmoid(-x)), weighted, averaged over the classes "
           "(the last dimension), then reduction", tensors=("weight",))
def _multilabel_soft_margin(f, x, t, reduction, weight):
    loss = -(t * f.log_sigmoid(x) + (1.0 - t) * f.log_sigmoid(-x))
    if weight is not None:
        loss = loss * weight
    if loss.ndim:
        loss = f.sum(loss, axis=-1) / float(loss.shape[-1])
    return reduce(f, loss, reduction)


@composite("multi_margin_loss", ("input", "target"), dict(R, p=1, margin=1.0, weight=None),
           "sum over i != y of max(0, margin - x[y] + x[i])^p / C (times weight[y]), y the class index",
           tensors=("weight",))
def _multi_margin(f, x, t, reduction, p, margin, weight):
    if p not in (1, 2):
        raise ShapeError("p must be 1 or 2 (as in PyTorch)")
    if x.ndim not in (1, 2):
        raise ShapeError(f"multi_margin_loss takes scores (C,) or (N, C), got {fmt_shape(x.shape)}")
    cdim = x.ndim - 1
    if t.shape != x.shape[:cdim]:
        raise ShapeError(f"target of shape {fmt_shape(t.shape)} does not fit scores of shape {fmt_shape(x.shape)}")
    onehot, _ = _class_targets(f, x, t, cdim, None, "multi_margin_loss")  # no ignore_index: -100 is refused
    picked = f.sum(f.where(onehot, x, 0.0), axis=cdim, keepdims=True)
    terms = clamp_min(f, float(margin) - picked + x, 0.0)
    if p == 2:
        terms = f.square(terms)
    terms = f.where(onehot, 0.0, terms)
    if weight is not None:
        terms = terms * f.sum(onehot * _weights_along(f, weight, x, cdim), axis=cdim, keepdims=True)
    return reduce(f, f.sum(terms, axis=cdim) / float(x.shape[cdim]), reduction)


@composite("pdist", ("input",), {"p": 2.0},
           "the p-norm distances between the rows of input (N, M), i < j in order: N (N - 1) / 2 of them")
def _pdist(f, x, p):

    if x.ndim != 2:
        raise ShapeError(f"pdist takes a matrix (N, M), got {fmt_shape(x.shape)}")
    if p < 0:
        raise ShapeError(f"p must be non-negative, got {p:g} (PyTorch's pdist refuses it)")
    i, j = np.triu_indices(x.shape[0], k=1)
    d = f.index(x, index=(IndexArray(i),)) - f.index(x, index=(IndexArray(j),))
    return f.vector_norm(d, ord=p, axis=-1)


@composite("masked_fill", ("input", "mask", "value"), {}, "value where mask is nonzero, else input")
def _masked_fill(f, x, mask, value):
    shape = broadcast_shapes(x.shape, mask.shape)
    if shape != x.shape:
        raise ShapeError(f"the mask of shape {fmt_shape(mask.shape)} does not broadcast to the input's "
                         f"{fmt_shape(x.shape)}")
    return f.where(mask, value, x)


@composite("clip_by_norm", ("t", "clip_norm"), {"axes": None, "name": None},
           "TensorFlow's: t clip_norm / max(l2norm(t, axes), clip_norm), the norm's gradient 0 where it is 0")
def _clip_by_norm(f, t, clip_norm, axes, name):
    l2sum = f.sum(f.square(t), axis=axes, keepdims=True)
    positive = f.greater(l2sum, 0.0)
    l2norm = f.where(positive, f.sqrt(f.where(positive, l2sum, 1.0)), l2sum)
    return t * clip_norm / f.maximum(l2norm, clip_norm)


@composite("triplet_margin_with_distance_loss", ("anchor", "positive", "negative"),
           dict(R, distance_function=None, margin=1.0, swap=False),
           "triplet_margin_loss with PyTorch's default distance, pairwise_distance (a distance_function is refused)")
def _triplet_distance(f, a, pos, neg, reduction, distance_function, margin, swap):
    if distance_function is not None:
        raise ShapeError("distance_function must be left out (gradcli takes PyTorch's default, pairwise_distance)")
    return _triplet(f, a, pos, neg, reduction, margin, 2.0, 1e-6, swap)


@composite("mvlgamma", ("input",), {"p": REQUIRED}, "PyTorch's mvlgamma(input, p): multigammaln(input, d=p)")
def _mvlgamma(f, x, p):
    if p != int(p) or p < 1:
        raise ShapeError(f"p must be a positive integer, not {p}")
    return f.multigammaln(x, d=int(p))


# --------------------------------------------------------------------------- TensorFlow's matmul flags

@composite("matmul_transposed", ("a", "b"),
           {"transpose_a": False, "transpose_b": False, "adjoint_a": False, "adjoint_b": False},
           "tf.matmul(a, b, transpose_a=, transpose_b=, adjoint_a=, adjoint_b=): the last two axes of a "
           "flagged operand swapped (the adjoint of a real matrix is its transpose) before the product",
           public=False)
def _matmul_transposed(f, a, b, transpose_a, transpose_b, adjoint_a, adjoint_b):
    if transpose_a or adjoint_a:
        a = f.swapaxes(a, axis1=-1, axis2=-2)
    if transpose_b or adjoint_b:
        b = f.swapaxes(b, axis1=-1, axis2=-2)
    return f.matmul(a, b)


# --------------------------------------------------------------------------- PyTorch's softplus options

@composite("softplus_beta", ("input",), {"beta": 1.0, "threshold": 20.0},
           "F.softplus(input, beta=1, threshold=20): log(1 + exp(beta input)) / beta, and input itself where "
           "beta input > threshold (PyTorch's switch to the line, whose slope is then exactly 1)", public=False)
def _torch_softplus(f, x, beta, threshold):
    scaled = x * float(beta)
    return f.where(f.greater(scaled, float(threshold)), x, f.softplus(scaled) / float(beta))


# --------------------------------------------------------------------------- PyTorch's rounded division

@composite("divide_rounded", ("input", "other"), {"rounding_mode": None},
           "torch.div(input, other, rounding_mode=): the quotient, 'floor' rounded down (NumPy's floor_divide), "
           "'trunc' rounded toward zero; no gradient where rounded, as PyTorch's", public=False)
def _torch_div_rounded(f, a, b, rounding_mode):
    if rounding_mode is None:
        return a / b
    if rounding_mode == "floor":
        return f.floor_divide(a, b)
    if rounding_mode == "trunc":
        return f.trunc(a / b)
    raise ShapeError(f"rounding_mode must be None, 'floor' or 'trunc', not {rounding_mode!r}")


# --------------------------------------------------------------------------- the normal distribution

# scipy.stats.norm / jax.scipy.stats.norm (imported as `norm`): functions of (x, loc=0, scale=1)
def _standardized(f, x, loc, scale):
    z = x if loc is None else x - loc
    return z if scale is None else z / scale


_NORM = {"loc": None, "scale": None}


@composite("norm_logpdf", ("x",), dict(_NORM), "the normal log density: -z^2/2 - log(scale) - log(2 pi)/2, "
           "z = (x - loc) / scale", tensors=("loc", "scale"))
def _norm_logpdf(f, x, loc, scale):
    z = _standardized(f, x, loc, scale)
    out = -0.5 * (z * z) - 0.5 * math.log(2 * math.pi)
    return out if scale is None else out - f.log(scale)


@composite("norm_pdf", ("x",), dict(_NORM), "the normal density: exp(norm.logpdf)",
           tensors=("loc", "scale"))
def _norm_pdf(f, x, loc, scale):
    return f.exp(_norm_logpdf(f, x, loc, scale))


@composite("norm_cdf", ("x",), dict(_NORM), "the normal distribution function: ndtr((x - loc) / scale)",
           tensors=("loc", "scale"))
def _norm_cdf(f, x, loc, scale):
    return f.ndtr(_standardized(f, x, loc, scale))


@composite("norm_logcdf", ("x",), dict(_NORM), "log of the normal distribution function: log_ndtr((x - loc) / scale)",
           tensors=("loc", "scale"))
def _norm_logcdf(f, x, loc, scale):
    return f.log_ndtr(_standardized(f, x, loc, scale))


@composite("norm_sf", ("x",), dict(_NORM), "the normal survival function: ndtr(-(x - loc) / scale)",
           tensors=("loc", "scale"))
def _norm_sf(f, x, loc, scale):
    return f.ndtr(-_standardized(f, x, loc, scale))


@composite("norm_ppf", ("q",), dict(_NORM), "the normal quantile function: loc + scale ndtri(q)",
           tensors=("loc", "scale"))
def _norm_ppf(f, q, loc, scale):
    z = f.ndtri(q)
    z = z if scale is None else z * scale
    return z if loc is None else z + loc
