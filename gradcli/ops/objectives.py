"""The op table, continued (after gradcli/ops/convolution.py): losses per sample and their
elementwise forms, more losses, the flags of a matrix product, a rounded division and the normal
distribution, each a composite (gradcli.ops.nn's `composite`) built of other ops at the call's place."""
from __future__ import annotations

import math

import numpy as np

from gradcli.errors import ShapeError
from gradcli.ops.table import REQUIRED
from gradcli.ops.shapes import broadcast_shapes, fmt_shape
from gradcli.ops.index import IndexArray
from gradcli.ops.nn import (
    R, _class_targets, _pairwise_distance, _t_log_t, _weights_along, clamp_min, composite, reduce)


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
    if label_smoothing:
        t = t * (1.0 - label_smoothing) + 0.5 * label_smoothing
    loss = _keras_ops_bce(f, t, p, from_logits)
    return f.mean(loss, axis=axis) if loss.ndim else loss


@composite("binary_crossentropy_elementwise", ("target", "output"), {"from_logits": False},
           "keras.ops.binary_crossentropy (and tf.keras.backend's): the sigmoid cross-entropy of each element, "
           "not averaged (probabilities are refused)", public=False)
def _keras_ops_bce(f, t, p, from_logits):
    if not from_logits:
        raise ShapeError("from probabilities Keras 2 (log(p + 1e-7)) and Keras 3 (log(p)) differ; write "
                         "from_logits=True with the logits, or the formula you mean")
    return -(t * f.log_sigmoid(p) + (1.0 - t) * f.log_sigmoid(-p))


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


@composite("sparse_softmax_cross_entropy", ("labels", "logits"), {},
           "-log_softmax(logits)[labels] over the last axis: softmax cross entropy with class indices, labels first")
def _sparse_sce(f, z, x):
    return _optax_sce_int(f, x, z, -1)


@composite("hinge_loss", ("predictor_outputs", "targets"), {}, "Optax: max(0, 1 - predictor_outputs targets)")
def _optax_hinge(f, p, t):
    return f.maximum(1.0 - p * t, 0.0)


@composite("cosine_similarity_last", ("predictions", "targets"), {"epsilon": 0.0},
           "Optax's cosine_similarity: sum(p t, axis=-1) / (sqrt(max(|p|^2, eps)) sqrt(max(|t|^2, eps)))", public=False)
def _optax_cosine(f, p, t, epsilon):
    def unit(v):  # Optax clips the squared norm: sqrt(max(sum(v^2), epsilon))
        return v / f.sqrt(clamp_min(f, f.sum(f.square(v), axis=-1, keepdims=True), float(epsilon)))
    return f.sum(unit(p) * unit(t), axis=-1)


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
    terms = f.relu(float(margin) - picked + x)  # PyTorch's backward passes nothing at the margin
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


def _norm(name, doc, args=("x",)):
    """Register a function of (x, loc=None, scale=None), loc and scale arrays or left out."""
    return composite(name, args, {"loc": None, "scale": None}, doc, tensors=("loc", "scale"))


@_norm("norm_logpdf", "the normal log density: -z^2/2 - log(scale) - log(2 pi)/2, z = (x - loc) / scale")
def _norm_logpdf(f, x, loc, scale):
    z = _standardized(f, x, loc, scale)
    out = -0.5 * (z * z) - 0.5 * math.log(2 * math.pi)
    return out if scale is None else out - f.log(scale)


@_norm("norm_pdf", "the normal density: exp(norm.logpdf)")
def _norm_pdf(f, x, loc, scale):
    return f.exp(_norm_logpdf(f, x, loc, scale))


@_norm("norm_cdf", "the normal distribution function: ndtr((x - loc) / scale)")
def _norm_cdf(f, x, loc, scale):
    return f.ndtr(_standardized(f, x, loc, scale))


@_norm("norm_logcdf", "log of the normal distribution function: log_ndtr((x - loc) / scale)")
def _norm_logcdf(f, x, loc, scale):
    return f.log_ndtr(_standardized(f, x, loc, scale))


@_norm("norm_sf", "the normal survival function: ndtr(-(x - loc) / scale)")
def _norm_sf(f, x, loc, scale):
    return f.ndtr(-_standardized(f, x, loc, scale))


@_norm("norm_ppf", "the normal quantile function: loc + scale ndtri(q)", args=("q",))
def _norm_ppf(f, q, loc, scale):
    z = f.ndtri(q)
    z = z if scale is None else z * scale
    return z if loc is None else z + loc
