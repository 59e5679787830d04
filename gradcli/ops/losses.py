"""The op table, continued: more of PyTorch's functions, as composites (gradcli/ops/nn.py
describes them): `renorm`, `conj_physical` and `F.multilabel_margin_loss`. Their gradients and
second derivatives are those of the ops they are built of.
"""
from __future__ import annotations

import numpy as np

from gradcli.errors import ShapeError
from gradcli.ops.table import NOT_DIFFERENTIABLE, REQUIRED, DataError, Op, register
from gradcli.ops.shapes import fmt_shape, to_host
from gradcli.ops.nn import R, clamp_min, composite, reduce


@composite("renorm", ("input",), {"p": REQUIRED, "axis": REQUIRED, "maxnorm": REQUIRED},
           "torch.renorm(input, p, dim, maxnorm): each slice along dim whose p-norm exceeds maxnorm scaled by "
           "maxnorm / (norm + 1e-7) (PyTorch's), the others kept; the gradient goes through the norm")
def _renorm(f, x, p, axis, maxnorm):
    if isinstance(p, (str, tuple, bool)) or not p > 0:
        raise ShapeError(f"p must be a positive number, not {p!r}")
    if isinstance(maxnorm, (str, tuple, bool)) or not maxnorm >= 0:
        raise ShapeError(f"maxnorm must be a number of 0 or more, not {maxnorm!r}")
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise ShapeError(f"dim must be one integer, not {axis!r}")
    if x.ndim < 2:
        raise ShapeError(f"renorm needs an input of rank 2 or more (slices along dim), got {fmt_shape(x.shape)}")
    if not -x.ndim <= axis < x.ndim:
        raise ShapeError(f"dim {axis} is out of range for an input of rank {x.ndim}")
    others = tuple(k for k in range(x.ndim) if k != axis % x.ndim)
    norm = f.vector_norm(x, ord=float(p), axis=others, keepdims=True)
    over = f.greater(norm, float(maxnorm))
    return x * f.where(over, float(maxnorm) / (norm + 1e-7), 1.0)


@composite("conj_physical", ("input",), {}, "torch.conj_physical: the conjugate, the value itself (values are real)")
def _conj_physical(f, x):
    return f.real(x)


def _multilabel_targets(xp, t):
    """multilabel_margin_loss's targets, checked: each row's class indices up to its first -1."""
    host = np.asarray(to_host(xp, t) if hasattr(xp, "asnumpy") else t)
    classes = host.shape[-1]
    counted = np.cumsum(host == -1, axis=-1) == 0
    bad = counted & ~((host == np.round(host)) & (host >= 0) & (host < classes))
    if bad.any():
        raise DataError(f"target {float(host[bad][0]):g} is not a class index from 0 to {classes - 1} (or -1, "
                        "which ends the targets)")
    return t


register(Op("multilabel_targets", _multilabel_targets, lambda shape: shape, NOT_DIFFERENTIABLE, public=False,
            doc="multilabel_margin_loss's class-index targets, checked (no gradient)"))


@composite("multilabel_margin_loss", ("input", "target"), dict(R),
           "PyTorch's: per sample, the sum over its target classes j and the other classes i of "
           "max(0, 1 - (x[j] - x[i])), divided by the number of classes C; target holds class indices, the "
           "first -1 ending them (input (C,) or (N, C))")
def _multilabel_margin(f, x, t, reduction):
    if x.ndim not in (1, 2):
        raise ShapeError(f"multilabel_margin_loss takes scores (C,) or (N, C), got {fmt_shape(x.shape)}")
    if t.shape != x.shape:
        raise ShapeError(f"target of shape {fmt_shape(t.shape)} must have the input's shape {fmt_shape(x.shape)}")
    classes = x.shape[-1]
    # built from the target's values when the program runs (an input may be read lazily)
    rows = f.multilabel_targets(t if t.ndim == 2 else f.reshape(t, shape=(1, classes)))   # checked
    ended = f.cummax(f.equal(rows, -1.0), axis=-1)                                         # at or after the first -1
    picks = f.reshape(1.0 - ended, shape=rows.shape + (1,)) * f.equal(
        f.reshape(rows, shape=rows.shape + (1,)), np.arange(classes, dtype=np.float64))   # (N, J, C)
    is_target = f.max(picks, axis=1, keepdims=True)                                       # (N, 1, C)
    lead = x.shape[:-1]
    scores = x if x.ndim == 2 else f.reshape(x, shape=(1, classes))
    picked = f.sum(f.where(picks, f.reshape(scores, shape=(scores.shape[0], 1, classes)), 0.0), axis=-1)  # x[y_j]
    counted = f.sum(picks, axis=-1, keepdims=True) * (1.0 - is_target)                    # (N, J, C)
    margins = 1.0 - f.reshape(picked, shape=picked.shape + (1,)) + f.reshape(scores, shape=(scores.shape[0], 1, classes))
    terms = f.where(counted, f.where(f.greater(margins, 0.0), margins, 0.0), 0.0)  # PyTorch's: no gradient at 0
    loss = f.sum(terms, axis=(1, 2)) / float(classes)
    if not lead:
        loss = f.reshape(loss, shape=())
    return reduce(f, loss, reduction)


@composite("cosine_embedding_loss", ("input1", "input2", "target"), {"margin": 0.0, "reduction": "mean"},
           "PyTorch's: cos = sum(x1 x2) / sqrt((sum(x1^2) + 1e-12)(sum(x2^2) + 1e-12)) over dim 1 (0 unbatched); "
           "1 - cos where target is 1, max(0, cos - margin) where it is -1, 0 elsewhere")
def _cosine_embedding(f, x1, x2, t, margin, reduction):
    if x1.ndim not in (1, 2) or x2.shape != x1.shape or t.shape != x1.shape[:-1]:
        raise ShapeError(f"cosine_embedding_loss takes inputs (N, D) or (D,) of one shape and targets (N,) or (), "
                         f"got {fmt_shape(x1.shape)}, {fmt_shape(x2.shape)} and {fmt_shape(t.shape)}")
    axis = x1.ndim - 1
    dot = f.sum(x1 * x2, axis=axis)
    cos = dot / f.sqrt((f.sum(x1 * x1, axis=axis) + 1e-12) * (f.sum(x2 * x2, axis=axis) + 1e-12))
    negative = clamp_min(f, cos - float(margin), 0.0)
    loss = f.where(f.equal(t, 1.0), 1.0 - cos, 0.0) + f.where(f.equal(t, -1.0), negative, 0.0)
    return reduce(f, loss, reduction)
