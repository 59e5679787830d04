"""PyTorch's functional losses and layers and its fused arithmetic: each forward against the
formula of PyTorch's documentation written here in NumPy (PyTorch is not installed), its
gradient and second derivative against float64 finite differences, a float32 run; then the
reductions, the class-index targets and the refusals."""
import math

import numpy as np
import pytest
import scipy.special as sp

from gradcli import api
from gradcli.errors import GradcliError

from gradcheck import check_op_case


def u(lo, hi, shape=(2, 3)):
    return lambda rng: rng.uniform(lo, hi, shape)


def normal(shape=(2, 3)):
    return lambda rng: rng.standard_normal(shape)


def away(lo=0.3, hi=2.0, shape=(2, 3)):
    return lambda rng: rng.choice([-1.0, 1.0], shape) * rng.uniform(lo, hi, shape)


def const(value):
    return lambda rng: np.asarray(value, dtype=float)


def log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def softmax(x, axis):
    return np.exp(log_softmax(x, axis))


def log_sigmoid(x):
    return -np.logaddexp(0, -x)


def ce_indices(x, t, weight=None, reduction="mean", ignore_index=-100):
    logp = log_softmax(x, 1)
    t = np.asarray(t, dtype=int)
    w = np.ones(x.shape[1]) if weight is None else weight
    rows = [(-logp[n, t[n]] * w[t[n]], w[t[n]]) for n in range(len(t)) if t[n] != ignore_index]
    if reduction == "mean":
        return sum(r[0] for r in rows) / sum(r[1] for r in rows)
    return sum(r[0] for r in rows)


def huber(d, delta):
    return np.where(np.abs(d) <= delta, 0.5 * d * d, delta * (np.abs(d) - 0.5 * delta))


TARGET3 = [2, 0, 1]
PROBS = np.array([[0.2, 0.3, 0.5, 0.0], [0.1, 0.6, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25]])

CASES = [
    # regression losses
    ("y = F.mse_loss(x, t)", {"x": normal(), "t": normal()}, lambda x, t: np.mean((x - t) ** 2), {}),
    ("y = F.mse_loss(x, t, reduction='sum')", {"x": normal()}, lambda x, t: np.sum((x - t) ** 2),
     {"fixed": {"t": normal()}}),
    ("y = F.mse_loss(x, t, reduction='none')", {"x": normal()}, lambda x, t: (x - t) ** 2,
     {"fixed": {"t": normal((3,))}}),
    ("y = F.l1_loss(x, t)", {"x": normal(), "t": normal()}, lambda x, t: np.mean(np.abs(x - t)), {}),
    ("y = F.smooth_l1_loss(x, t)", {"x": u(-3, 3), "t": u(-0.2, 0.2)},
     lambda x, t: np.mean(np.where(np.abs(x - t) < 1, 0.5 * (x - t) ** 2, np.abs(x - t) - 0.5)), {}),
    ("y = F.smooth_l1_loss(x, t, beta=0.5, reduction='sum')", {"x": u(-2, 2)},
     lambda x, t: np.sum(np.where(np.abs(x - t) < 0.5, 0.5 * (x - t) ** 2 / 0.5, np.abs(x - t) - 0.25)),
     {"fixed": {"t": normal()}}),
    ("y = F.huber_loss(x, t, delta=0.7)", {"x": u(-3, 3), "t": normal()},
     lambda x, t: np.mean(huber(x - t, 0.7)), {}),
    ("y = F.gaussian_nll_loss(x, t, v)", {"x": normal(), "t": normal(), "v": u(0.3, 2)},
     lambda x, t, v: np.mean(0.5 * (np.log(v) + (x - t) ** 2 / v)), {}),
    ("y = F.gaussian_nll_loss(x, t, v, full=True, reduction='sum')", {"x": normal(), "v": u(0.3, 2, (2,))},
     lambda x, t, v: np.sum(0.5 * (np.log(v[:, None]) + (x - t) ** 2 / v[:, None]) + 0.5 * np.log(2 * np.pi)),
     {"fixed": {"t": normal()}}),
    ("y = F.poisson_nll_loss(x, t)", {"x": normal()}, lambda x, t: np.mean(np.exp(x) - t * x),
     {"fixed": {"t": u(0, 4)}}),
    ("y = F.poisson_nll_loss(x, t, log_input=False, full=True)", {"x": u(0.3, 3)},
     lambda x, t: np.mean(x - t * np.log(x + 1e-8)
                          + np.where(t > 1, t * np.log(t) - t + 0.5 * np.log(2 * np.pi * t), 0)),
     {"fixed": {"t": u(0, 4)}}),
    # classification losses
    ("y = checked_range(p, lo=0.0, hi=1.0, rule='p out of range') ** 2", {"p": u(0.05, 0.95)}, lambda p: p ** 2, {}),
    ("y = F.binary_cross_entropy(p, t)", {"p": u(0.05, 0.95)},
     lambda p, t: np.mean(-(t * np.log(p) + (1 - t) * np.log(1 - p))), {"fixed": {"t": u(0, 1)}}),
    ("y = F.binary_cross_entropy(p, t, weight=w, reduction='sum')", {"p": u(0.05, 0.95), "w": u(0.5, 2, (3,))},
     lambda p, t, w: np.sum(-w * (t * np.log(p) + (1 - t) * np.log(1 - p))), {"fixed": {"t": u(0, 1)}}),
    ("y = F.binary_cross_entropy_with_logits(x, t)", {"x": normal()},
     lambda x, t: np.mean(-(t * log_sigmoid(x) + (1 - t) * log_sigmoid(-x))), {"fixed": {"t": u(0, 1)}}),
    ("y = F.binary_cross_entropy_with_logits(x, t, pos_weight=pw, weight=w)",
     {"x": normal(), "pw": u(0.5, 3, (3,)), "w": u(0.5, 2, (2, 1))},
     lambda x, t, pw, w: np.mean(-w * (pw * t * log_sigmoid(x) + (1 - t) * log_sigmoid(-x))),
     {"fixed": {"t": u(0, 1)}}),
    ("y = F.cross_entropy(x, [2, 0, 1])", {"x": normal((3, 4))}, lambda x: ce_indices(x, TARGET3), {}),
    ("y = F.cross_entropy(x, t, weight=w)", {"x": normal((3, 4)), "w": u(0.5, 2, (4,))},
     lambda x, t, w: ce_indices(x, t, w), {"fixed": {"t": const(TARGET3)}}),
    ("y = F.cross_entropy(x, [2, -100, 1], reduction='sum')", {"x": normal((3, 4))},
     lambda x: ce_indices(x, [2, -100, 1], reduction="sum"), {}),
    ("y = F.cross_entropy(x, t)", {"x": normal((3, 4))}, lambda x, t: np.mean(-(t * log_softmax(x, 1)).sum(1)),
     {"fixed": {"t": const(PROBS)}}),
    ("y = F.cross_entropy(x, [2, 0, 1], label_smoothing=0.1)", {"x": normal((3, 4))},
     lambda x: np.mean(-(((1 - 0.1) * np.eye(4)[TARGET3] + 0.1 / 4) * log_softmax(x, 1)).sum(1)), {}),
    ("y = F.cross_entropy(x, [[1, 0], [2, 2]], reduction='none')", {"x": normal((2, 3, 2))},
     lambda x: -np.take_along_axis(log_softmax(x, 1), np.array([[1, 0], [2, 2]])[:, None], 1)[:, 0], {}),
    ("y = F.cross_entropy(x, 1)", {"x": normal((3,))}, lambda x: -log_softmax(x, 0)[1], {}),
    ("y = F.nll_loss(F.log_softmax(x, dim=1), t)", {"x": normal((3, 4))}, lambda x, t: ce_indices(x, t),
     {"fixed": {"t": const(TARGET3)}}),
    ("y = F.nll_loss(x, [0, 1], weight=w)", {"x": normal((2, 3)), "w": u(0.5, 2, (3,))},
     lambda x, w: -(x[0, 0] * w[0] + x[1, 1] * w[1]) / (w[0] + w[1]), {}),
    ("y = F.kl_div(x, t)", {"x": normal(), "t": u(0.05, 1)}, lambda x, t: np.mean(t * (np.log(t) - x)), {}),
    ("y = F.kl_div(x, t, reduction='batchmean', log_target=True)", {"x": normal(), "t": normal()},
     lambda x, t: np.sum(np.exp(t) * (t - x)) / 2, {}),
    ("y = F.soft_margin_loss(x, t)", {"x": normal()}, lambda x, t: np.mean(np.log1p(np.exp(-t * x))),
     {"fixed": {"t": const([[1, -1, 1], [-1, -1, 1]])}}),
    ("y = F.margin_ranking_loss(a, b, t, margin=0.1)", {"a": normal((5,)), "b": normal((5,))},
     lambda a, b, t: np.mean(np.maximum(0, -t * (a - b) + 0.1)), {"fixed": {"t": const([1, -1, 1, 1, -1])}}),
    # distances, normalization
    ("y = F.cosine_similarity(a, b)", {"a": normal((2, 3)), "b": normal((2, 3))},
     lambda a, b: (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)), {}),
    ("y = F.cosine_similarity(a, b, dim=0)", {"a": normal((3, 2)), "b": normal((2,))},
     lambda a, b: (a * b).sum(0) / (np.linalg.norm(a, axis=0) * np.linalg.norm(np.broadcast_to(b, (3, 2)), axis=0)),
     {}),
    ("y = F.pairwise_distance(a, b)", {"a": normal((2, 3)), "b": normal((2, 3))},
     lambda a, b: np.linalg.norm(a - b + 1e-6, axis=-1), {}),
    ("y = F.pairwise_distance(a, b, p=1.5, keepdim=True)", {"a": normal((2, 3)), "b": normal((3,))},
     lambda a, b: (np.abs(a - b + 1e-6) ** 1.5).sum(-1, keepdims=True) ** (1 / 1.5), {}),
    ("y = F.normalize(x)", {"x": normal((2, 3))}, lambda x: x / np.linalg.norm(x, axis=1, keepdims=True), {}),
    ("y = F.normalize(x, p=1.0, dim=0)", {"x": away(shape=(2, 3))},
     lambda x: x / np.abs(x).sum(0, keepdims=True), {}),
    ("y = F.layer_norm(x, (3,))", {"x": normal((2, 3))},
     lambda x: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5), {}),
    ("y = F.layer_norm(x, x.shape[-1:]) * x", {"x": normal((2, 3))},
     lambda x: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * x, {}),
    ("y = F.layer_norm(x, [2, 3], weight=w, bias=b, eps=1e-3)",
     {"x": normal((2, 2, 3)), "w": normal((2, 3)), "b": normal((2, 3))},
     lambda x, w, b: (x - x.mean((1, 2), keepdims=True)) / np.sqrt(x.var((1, 2), keepdims=True) + 1e-3) * w + b, {}),
    ("y = F.rms_norm(x, [3], weight=w, eps=1e-6)", {"x": normal((2, 3)), "w": normal((3,))},
     lambda x, w: x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w, {}),
    # layers and activations
    ("y = F.linear(x, w, b)", {"x": normal((2, 3)), "w": normal((4, 3)), "b": normal((4,))},
     lambda x, w, b: x @ w.T + b, {}),
    ("y = F.linear(x, w)", {"x": normal((3,)), "w": normal((2, 3))}, lambda x, w: x @ w.T, {}),
    ("y = F.bilinear(a, b, w, bias)", {"a": normal((2, 3)), "b": normal((2, 4)), "w": normal((5, 3, 4)),
                                        "bias": normal((5,))},
     lambda a, b, w, bias: np.einsum("ni,kij,nj->nk", a, w, b) + bias, {}),
    ("y = F.glu(x)", {"x": normal((2, 4))}, lambda x: x[:, :2] / (1 + np.exp(-x[:, 2:])), {}),
    ("y = F.glu(x, dim=0)", {"x": normal((2, 3))}, lambda x: x[:1] / (1 + np.exp(-x[1:])), {}),
    ("y = F.softmin(x, dim=1)", {"x": normal()}, lambda x: softmax(-x, 1), {}),
    ("y = F.logsigmoid(x)", {"x": normal()}, log_sigmoid, {}),
    ("y = F.tanhshrink(x)", {"x": normal()}, lambda x: x - np.tanh(x), {}),
    ("y = F.softshrink(x)", {"x": away(0.6, 2)}, lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0)),
     {}),
    ("y = F.softshrink(x, 1.0) ** 2", {"x": away(0.3, 2)}, lambda x: (x - np.clip(x, -1, 1)) ** 2, {}),
    ("y = F.hardshrink(x, lambd=0.4) ** 2", {"x": away(0.5, 2)}, lambda x: np.where(np.abs(x) > 0.4, x, 0) ** 2, {}),
    ("y = F.threshold(x, 0.1, 20.0) ** 2", {"x": away(0.3, 2)}, lambda x: np.where(x > 0.1, x, 20.0) ** 2, {}),
    ("y = F.prelu(x, w)", {"x": away(shape=(2, 3, 2)), "w": normal((3,))},
     lambda x, w: np.where(x > 0, x, w[:, None] * x), {}),
    ("y = F.prelu(x, w)", {"x": away(shape=(4,)), "w": normal((1,))}, lambda x, w: np.where(x > 0, x, w * x), {}),
    # PyTorch's fused arithmetic
    ("y = torch.lerp(a, b, w)", {"a": normal(), "b": normal(), "w": u(0, 1)}, lambda a, b, w: a + w * (b - a), {}),
    ("y = torch.lerp(a, b, 0.3)", {"a": normal(), "b": normal((3,))}, lambda a, b: a + 0.3 * (b - a), {}),
    ("y = torch.addcmul(x, a, b, value=0.5)", {"x": normal(), "a": normal(), "b": normal((3,))},
     lambda x, a, b: x + 0.5 * a * b, {}),
    ("y = torch.addcdiv(x, a, b, value=2)", {"x": normal(), "a": normal(), "b": away()},
     lambda x, a, b: x + 2 * a / b, {}),
    ("y = torch.addmm(x, a, b, beta=0.5, alpha=2)", {"x": normal((3,)), "a": normal((2, 4)), "b": normal((4, 3))},
     lambda x, a, b: 0.5 * x + 2 * a @ b, {}),
    ("y = torch.addmv(x, a, v)", {"x": normal((2,)), "a": normal((2, 3)), "v": normal((3,))},
     lambda x, a, v: x + a @ v, {}),
    ("y = torch.addr(x, a, b, alpha=3)", {"x": normal((2, 3)), "a": normal((2,)), "b": normal((3,))},
     lambda x, a, b: x + 3 * np.outer(a, b), {}),
    ("y = torch.baddbmm(x, a, b)", {"x": normal((2, 2, 3)), "a": normal((2, 2, 4)), "b": normal((2, 4, 3))},
     lambda x, a, b: x + a @ b, {}),
    ("y = torch.addbmm(x, a, b, beta=0)", {"a": normal((2, 2, 4)), "b": normal((2, 4, 3))},
     lambda x, a, b: (a @ b).sum(0), {"fixed": {"x": normal((2, 3))}}),
    ("y = torch.rsub(x, o, alpha=2)", {"x": normal(), "o": normal((3,))}, lambda x, o: o - 2 * x, {}),
    ("y = torch.clamp_min(x, 0.2) ** 2", {"x": normal()}, lambda x: np.maximum(x, 0.2) ** 2, {}),
    ("y = torch.clamp_max(x, m) ** 2", {"x": normal(), "m": normal((3,))}, lambda x, m: np.minimum(x, m) ** 2, {}),
    ("y = torch.clamp(x, min=-0.5, max=0.5) ** 2", {"x": normal()}, lambda x: np.clip(x, -0.5, 0.5) ** 2, {}),
    ("y = torch.clamp(x, max=0.3) ** 2", {"x": normal()}, lambda x: np.minimum(x, 0.3) ** 2, {}),
    ("y = torch.dist(a, b)", {"a": normal(), "b": normal()}, lambda a, b: np.linalg.norm((a - b).ravel()), {}),
    ("y = torch.dist(a, b, p=3)", {"a": normal(), "b": normal((3,))},
     lambda a, b: (np.abs(a - b) ** 3).sum() ** (1 / 3), {}),
    ("y = torch.cdist(a, b)", {"a": normal((3, 2)), "b": normal((4, 2))},
     lambda a, b: np.sqrt(((a[:, None] - b[None]) ** 2).sum(-1)), {}),
    ("y = torch.cdist(a, b, p=1.0)", {"a": normal((2, 3, 2)), "b": normal((2, 2, 2))},
     lambda a, b: np.abs(a[:, :, None] - b[:, None]).sum(-1), {}),
]


def conv_nhwc(x, f, stride=(1, 1), dilation=(1, 1), pad=((0, 0), (0, 0))):
    """The convolution by its definition, one output element at a time."""
    x = np.pad(x, ((0, 0), pad[0], pad[1], (0, 0)))
    n, h, w, c = x.shape
    kh, kw, _, o = f.shape
    oh = (h - (kh - 1) * dilation[0] - 1) // stride[0] + 1
    ow = (w - (kw - 1) * dilation[1] - 1) // stride[1] + 1
    out = np.zeros((n, oh, ow, o))
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for p in range(kh):
                    for q in range(kw):
                        out[b, i, j] += x[b, i * stride[0] + p * dilation[0], j * stride[1] + q * dilation[1]] @ f[p, q]
    return out


def conv_input_grad(g, f, input_shape, stride, pad):
    """The adjoint by its definition: <conv(x, f), g> = <x, A(g)>, column by column."""
    n = int(np.prod(input_shape))
    cols = [np.sum(conv_nhwc(np.eye(n)[k].reshape(input_shape), f, stride, pad=pad) * g) for k in range(n)]
    return np.array(cols).reshape(input_shape)


def conv_filter_grad(x, g, filter_shape, stride, pad):
    n = int(np.prod(filter_shape))
    cols = [np.sum(conv_nhwc(x, np.eye(n)[k].reshape(filter_shape), stride, pad=pad) * g) for k in range(n)]
    return np.array(cols).reshape(filter_shape)


def same(size, k, s, d=1):
    total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
    return (total // 2, total - total // 2)


def depthwise(x, f, **kw):
    kh, kw_, c, m = f.shape
    full = np.zeros((kh, kw_, c, c * m))
    for k in range(c):
        full[:, :, k, k * m:(k + 1) * m] = f[:, :, k, :]
    return conv_nhwc(x, full, **kw)


CASES += [
    ("y = scipy.special.logsumexp(x, b=b)", {"x": normal(), "b": u(0.2, 2, (3,))},
     lambda x, b: np.log(np.sum(b * np.exp(x))), {}),
    ("y = logsumexp(x, axis=1, b=b, keepdims=True)", {"x": normal(), "b": u(0.2, 2)},
     lambda x, b: np.log(np.sum(b * np.exp(x), axis=1, keepdims=True)), {}),
    ("y = tf.nn.conv2d(x, f, [1, 1, 1, 1], 'SAME')", {"x": normal((1, 4, 4, 2)), "f": normal((3, 2, 2, 3))},
     lambda x, f: conv_nhwc(x, f, pad=(same(4, 3, 1), same(4, 2, 1))), {}),
    ("y = tf.nn.conv2d(x, f, strides=2, padding='SAME')", {"x": normal((2, 5, 4, 2)), "f": normal((3, 3, 2, 2))},
     lambda x, f: conv_nhwc(x, f, (2, 2), pad=(same(5, 3, 2), same(4, 3, 2))), {}),
    ("y = tf.nn.conv2d(x, f, [1, 2, 1, 1], 'VALID', dilations=[1, 1, 2, 1])",
     {"x": normal((1, 5, 6, 1)), "f": normal((2, 2, 1, 2))}, lambda x, f: conv_nhwc(x, f, (2, 1), (1, 2)), {}),
    ("y = tf.nn.conv2d(x, f, 1, 'VALID', data_format='NCHW')", {"x": normal((1, 2, 3, 4)), "f": normal((2, 2, 2, 3))},
     lambda x, f: conv_nhwc(x.transpose(0, 2, 3, 1), f).transpose(0, 3, 1, 2), {}),
    ("y = tf.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], 'SAME')", {"x": normal((1, 4, 3, 2)), "f": normal((2, 2, 2, 2))},
     lambda x, f: depthwise(x, f, pad=(same(4, 2, 1), same(3, 2, 1))), {}),
    ("y = F.conv2d(x, w, b, stride=2, padding=1)", {"x": normal((2, 2, 5, 5)), "w": normal((3, 2, 3, 3)),
                                                    "b": normal((3,))},
     lambda x, w, b: conv_nhwc(x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0), (2, 2), pad=((1, 1), (1, 1)))
     .transpose(0, 3, 1, 2) + b[:, None, None], {}),
    ("y = F.conv2d(x, w, padding='same', dilation=2)", {"x": normal((2, 4, 5)), "w": normal((1, 2, 2, 3))},
     lambda x, w: conv_nhwc(x.transpose(1, 2, 0)[None], w.transpose(2, 3, 1, 0), dilation=(2, 2),
                            pad=(same(4, 2, 1, 2), same(5, 3, 1, 2)))[0].transpose(2, 0, 1), {}),
    ("y = F.conv2d(x, w, stride=(2, 1), padding=(0, 1))", {"x": normal((1, 1, 5, 4)), "w": normal((2, 1, 2, 3))},
     lambda x, w: conv_nhwc(x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0), (2, 1), pad=((0, 0), (1, 1)))
     .transpose(0, 3, 1, 2), {}),
    ("y = tf.nn.conv2d(x, f, 1, [[0, 0], [1, 0], [0, 2], [0, 0]])", {"x": normal((1, 3, 3, 1)), "f": normal((2, 2, 1, 2))},
     lambda x, f: conv_nhwc(x, f, pad=((1, 0), (0, 2))), {}),
    ("y = conv2d_nhwc(x, f, strides=[1, 2], dilations=[2, 1], padding=[[1, 1], [0, 1]])",
     {"x": normal((1, 4, 4, 2)), "f": normal((2, 2, 2, 1))},
     lambda x, f: conv_nhwc(x, f, (1, 2), (2, 1), ((1, 1), (0, 1))), {}),
    ("y = conv2d_input_grad(g, f, input_shape=[1, 3, 4, 2], strides=[1, 2], dilations=[1, 1], padding=[[1, 1], [0, 1]])",
     {"g": normal((1, 4, 2, 3)), "f": normal((2, 2, 2, 3))},
     lambda g, f: conv_input_grad(g, f, (1, 3, 4, 2), (1, 2), ((1, 1), (0, 1))), {}),
    ("y = conv2d_filter_grad(x, g, filter_shape=[2, 2, 2, 3], strides=[1, 2], dilations=[1, 1], "
     "padding=[[1, 1], [0, 1]])", {"x": normal((1, 3, 4, 2)), "g": normal((1, 4, 2, 3))},
     lambda x, g: conv_filter_grad(x, g, (2, 2, 2, 3), (1, 2), ((1, 1), (0, 1))), {}),
    ("y = F.conv1d(x, w, stride=2, padding=1)", {"x": normal((2, 2, 7)), "w": normal((3, 2, 3))},
     lambda x, w: conv_nhwc(x.transpose(0, 2, 1)[:, None], w.transpose(2, 1, 0)[None], (1, 2), pad=((0, 0), (1, 1)))
     [:, 0].transpose(0, 2, 1), {}),
]


def unit(v, eps=0.0):
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), eps)


LABELS01 = [[0, 1, 1], [1, 0, 0]]
ONEHOT = [[0, 0, 1], [1, 0, 0]]

CASES += [
    # Keras' losses: one per sample, over the last axis
    ("y = keras.losses.mean_squared_error(t, p)", {"p": normal(), "t": normal()}, lambda t, p: ((p - t) ** 2).mean(-1), {}),
    ("y = tf.keras.losses.mse(t, p)", {"p": normal((3,))}, lambda t, p: ((p - t) ** 2).mean(-1),
     {"fixed": {"t": normal((3,))}}),
    ("y = keras.losses.mean_absolute_error(t, p)", {"p": normal()}, lambda t, p: np.abs(p - t).mean(-1),
     {"fixed": {"t": normal()}}),
    ("y = keras.losses.mean_absolute_percentage_error(t, p)", {"p": normal()},
     lambda t, p: 100 * np.abs((t - p) / np.abs(t)).mean(-1), {"fixed": {"t": away()}}),
    ("y = keras.losses.mean_squared_logarithmic_error(t, p)", {"p": u(0.1, 3)},
     lambda t, p: ((np.log(p + 1) - np.log(t + 1)) ** 2).mean(-1), {"fixed": {"t": u(0.1, 3)}}),
    ("y = keras.losses.poisson(t, p)", {"p": u(0.1, 3)}, lambda t, p: (p - t * np.log(p + 1e-7)).mean(-1),
     {"fixed": {"t": u(0, 3)}}),
    ("y = keras.losses.kl_divergence(t, p)", {"p": u(0.05, 1), "t": u(0.05, 1)},
     lambda t, p: (t * np.log(t / p)).sum(-1), {}),
    ("y = keras.losses.hinge(t, p)", {"p": u(-0.9, 0.9)},
     lambda t, p: np.maximum(1 - (2 * t - 1) * p, 0).mean(-1), {"fixed": {"t": const(LABELS01)}}),
    ("y = keras.losses.squared_hinge(t, p)", {"p": u(-0.9, 0.9)},
     lambda t, p: (np.maximum(1 - (2 * t - 1) * p, 0) ** 2).mean(-1), {"fixed": {"t": const(LABELS01)}}),
    ("y = keras.losses.categorical_hinge(t, p)", {"p": u(-0.4, 0.4)},
     lambda t, p: np.maximum(((1 - t) * p).max(-1) - (t * p).sum(-1) + 1, 0), {"fixed": {"t": const(ONEHOT)}}),
    ("y = keras.losses.huber(t, p, delta=0.5)", {"p": u(-2, 2)}, lambda t, p: huber(p - t, 0.5).mean(-1),
     {"fixed": {"t": normal()}}),
    ("y = keras.losses.log_cosh(t, p)", {"p": normal()}, lambda t, p: np.log(np.cosh(p - t)).mean(-1),
     {"fixed": {"t": normal()}}),
    ("y = keras.losses.cosine_similarity(t, p)", {"p": normal(), "t": normal()},
     lambda t, p: -(unit(t) * unit(p)).sum(-1), {}),
    ("y = keras.losses.categorical_crossentropy(t, p)", {"p": u(0.1, 1)},
     lambda t, p: -(t * np.log(p / p.sum(-1, keepdims=True))).sum(-1), {"fixed": {"t": const(ONEHOT)}}),
    ("y = keras.losses.categorical_crossentropy(t, p, from_logits=True, label_smoothing=0.1)", {"p": normal()},
     lambda t, p: -((t * 0.9 + 0.1 / 3) * log_softmax(p, -1)).sum(-1), {"fixed": {"t": const(ONEHOT)}}),
    ("y = keras.losses.sparse_categorical_crossentropy([2, 0], p, from_logits=True)", {"p": normal()},
     lambda p: -log_softmax(p, -1)[[0, 1], [2, 0]], {}),
    ("y = keras.losses.binary_crossentropy(t, p, from_logits=True)", {"p": normal()},
     lambda t, p: -(t * log_sigmoid(p) + (1 - t) * log_sigmoid(-p)).mean(-1), {"fixed": {"t": u(0, 1)}}),
    # Optax's losses: elementwise, or over the last axis
    ("y = optax.l2_loss(p, t)", {"p": normal(), "t": normal()}, lambda p, t: 0.5 * (p - t) ** 2, {}),
    ("y = optax.squared_error(p, t)", {"p": normal(), "t": normal()}, lambda p, t: (p - t) ** 2, {}),
    ("y = optax.losses.log_cosh(p, t)", {"p": normal()}, lambda p, t: np.log(np.cosh(p - t)), {"fixed": {"t": normal()}}),
    ("y = optax.sigmoid_binary_cross_entropy(x, z)", {"x": normal()},
     lambda x, z: -(z * log_sigmoid(x) + (1 - z) * log_sigmoid(-x)), {"fixed": {"z": u(0, 1)}}),
    ("y = optax.softmax_cross_entropy(x, z)", {"x": normal()}, lambda x, z: -(z * log_softmax(x, -1)).sum(-1),
     {"fixed": {"z": const(ONEHOT)}}),
    ("y = optax.softmax_cross_entropy_with_integer_labels(x, [1, 2])", {"x": normal()},
     lambda x: -log_softmax(x, -1)[[0, 1], [1, 2]], {}),
    # TensorFlow's, labels first: tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
    ("y = tf.nn.sparse_softmax_cross_entropy_with_logits([1, 2], x)", {"x": normal()},
     lambda x: -log_softmax(x, -1)[[0, 1], [1, 2]], {}),
    ("y = tf.nn.sparse_softmax_cross_entropy_with_logits(logits=x, labels=[2, 0])", {"x": normal()},
     lambda x: -log_softmax(x, -1)[[0, 1], [2, 0]], {}),
    # tf.nn.l2_normalize (tf.math.l2_normalize): x / sqrt(max(sum(x^2, axis), 1e-12))
    ("y = tf.nn.l2_normalize(x, axis=1)", {"x": normal()}, lambda x: unit(x), {}),
    ("y = tf.math.l2_normalize(x)", {"x": normal()}, lambda x: x / np.sqrt((x ** 2).sum()), {}),
    ("y = tf.math.l2_normalize(x, axis=[0, 1], epsilon=1e3)", {"x": normal()}, lambda x: x / np.sqrt(1e3), {}),
    ("y = optax.hinge_loss(p, t)", {"p": u(-0.9, 0.9)}, lambda p, t: np.maximum(0, 1 - p * t),
     {"fixed": {"t": const([[1, -1, 1], [-1, 1, 1]])}}),
    ("y = optax.kl_divergence(lp, t)", {"lp": normal(), "t": u(0.05, 1)},
     lambda lp, t: (t * (np.log(t) - lp)).sum(-1), {}),
    ("y = optax.cosine_similarity(p, t)", {"p": normal(), "t": normal()}, lambda p, t: (unit(p) * unit(t)).sum(-1), {}),
    ("y = optax.cosine_distance(p, t, epsilon=1e-6)", {"p": normal(), "t": normal()},
     lambda p, t: 1 - (unit(p) * unit(t)).sum(-1), {}),
]


def pnorm(d, p=2.0):
    return (np.abs(d) ** p).sum(-1) ** (1 / p)


def multi_margin(x, t, p=1, margin=1.0, w=None):
    out = []
    for n, y in enumerate(t):
        terms = [max(0.0, margin - x[n, y] + x[n, i]) ** p * (1.0 if w is None else w[y])
                 for i in range(x.shape[1]) if i != y]
        out.append(sum(terms) / x.shape[1])
    return np.mean(out)


CASES += [
    ("y = F.triplet_margin_loss(a, b, c)", {"a": normal((4, 3)), "b": normal((4, 3)), "c": normal((4, 3))},
     lambda a, b, c: np.mean(np.maximum(pnorm(a - b + 1e-6) - pnorm(a - c + 1e-6) + 1.0, 0)), {}),
    ("y = F.triplet_margin_loss(a, b, c, margin=2.0, p=1.5, swap=True, reduction='sum')",
     {"a": normal((4, 3)), "b": normal((4, 3)), "c": normal((4, 3))},
     lambda a, b, c: np.sum(np.maximum(pnorm(a - b + 1e-6, 1.5) - np.minimum(pnorm(a - c + 1e-6, 1.5),
                                                                            pnorm(b - c + 1e-6, 1.5)) + 2.0, 0)),
     {}),
    ("y = F.triplet_margin_with_distance_loss(a, b, c, margin=0.5)",
     {"a": normal((4, 3)), "b": normal((4, 3)), "c": normal((4, 3))},
     lambda a, b, c: np.mean(np.maximum(pnorm(a - b + 1e-6) - pnorm(a - c + 1e-6) + 0.5, 0)), {}),
    ("y = torch.mvlgamma(x, p=3)", {"x": u(1.5, 4)}, lambda x: np.vectorize(lambda v: sp.multigammaln(v, 3))(x), {}),
    ("y = F.multilabel_soft_margin_loss(x, t, weight=w)", {"x": normal(), "w": u(0.5, 2, (3,))},
     lambda x, t, w: np.mean(np.sum(-w * (t * log_sigmoid(x) + (1 - t) * log_sigmoid(-x)), -1) / 3),
     {"fixed": {"t": const([[0, 1, 1], [1, 0, 0]])}}),
    ("y = F.multi_margin_loss(x, [2, 0, 1])", {"x": u(-0.3, 0.3, (3, 4))}, lambda x: multi_margin(x, [2, 0, 1]), {}),
    ("y = F.multi_margin_loss(x, [2, 0, 1], p=2, margin=0.8, weight=w)",
     {"x": u(-0.3, 0.3, (3, 4)), "w": u(0.5, 2, (4,))}, lambda x, w: multi_margin(x, [2, 0, 1], 2, 0.8, w), {}),
    ("y = F.pdist(x)", {"x": normal((4, 3))},
     lambda x: np.array([pnorm(x[i] - x[j]) for i in range(4) for j in range(i + 1, 4)]), {}),
    ("y = F.pdist(x, p=1.0)", {"x": normal((3, 2))},
     lambda x: np.array([pnorm(x[i] - x[j], 1.0) for i in range(3) for j in range(i + 1, 3)]), {}),
    ("y = torch.masked_fill(x, m, v)", {"x": normal(), "v": normal(())},
     lambda x, m, v: np.where(m != 0, v, x), {"fixed": {"m": const([1.0, 0.0, 1.0])}}),
    ("y = tf.clip_by_norm(t, 1.5)", {"t": normal()}, lambda t: t * 1.5 / max(np.linalg.norm(t), 1.5), {}),
    ("y = tf.clip_by_norm(t, c, axes=[1])", {"t": normal(), "c": u(0.5, 3, (2, 1))},
     lambda t, c: t * c / np.maximum(np.linalg.norm(t, axis=1, keepdims=True), c), {}),
    ("y = lax.rem(a, b)", {"a": u(-5, 5), "b": u(0.7, 1.3, (3,))}, lambda a, b: np.fmod(a, b), {}),
]


@pytest.mark.parametrize("program,inputs,reference,options", CASES, ids=[c[0] for c in CASES])
def test_op(program, inputs, reference, options):
    rng = np.random.default_rng(sum(map(ord, program)))
    check_op_case(program, inputs, reference, rng, **options)


def test_binary_cross_entropy_clamps_its_logs_at_minus_100_as_pytorch():
    r = api.evaluate("y = F.binary_cross_entropy(p, t, reduction='none')", feeds={"p": [0.0, 1.0], "t": [1.0, 1.0]})
    np.testing.assert_array_equal(r.outputs["y"], [100.0, 0.0])
    # PyTorch's gradients there: (p - t) / max(p (1 - p), 1e-12) in the input; in the target
    # log(1 - p) - log(p), not clamped (torch 2.13 gives [inf, -inf, log 3]), which is flagged
    r = api.grad("y = F.binary_cross_entropy(p, t, reduction='sum')", wrt=["p", "t"],
                 feeds={"p": [0.0, 1.0, 0.25], "t": [1.0, 1.0, 0.5]})
    np.testing.assert_allclose(r.gradients["p"], [-1e12, 0.0, -0.25 / 0.1875], rtol=1e-15)
    np.testing.assert_allclose(r.gradients["t"], [np.inf, -np.inf, math.log(0.75) - math.log(0.25)], rtol=1e-15)
    assert {d.kind for d in r.diagnostics} == {"nonfinite_gradient"}, r.diagnostics
    r = api.grad("y = F.binary_cross_entropy(p, t, reduction='sum')", wrt=["p"],
                 feeds={"p": [0.0, 1.0, 0.25], "t": [1.0, 1.0, 0.5]})
    assert not r.diagnostics, r.diagnostics


def test_gaussian_nll_clamps_the_variance_without_blocking_its_gradient():
    r = api.grad("y = F.gaussian_nll_loss(x, t, v, reduction='sum')", wrt=["v"],
                 feeds={"x": [1.0], "t": [0.0], "v": [1e-9]})
    assert float(r.outputs["y"]) == pytest.approx(0.5 * (math.log(1e-6) + 1e6))
    # the gradient of log(v) + d^2 / v at the clamped value, as PyTorch's in-place clamp gives
    assert float(r.gradients["v"][0]) == pytest.approx(0.5 * (1 / 1e-6 - 1 / 1e-12))


@pytest.mark.parametrize("program,words", [
    ("y = F.cross_entropy(x, [0, 4])", "target 4 is not a class index: cross_entropy has 3 classes"),
    ("y = F.cross_entropy(x, [0, 1.5])", "target 1.5 is not a class index"),
    ("y = F.cross_entropy(x, [0, 1, 1])", "target of shape (3,) does not fit scores of shape (2, 3)"),
    ("y = F.cross_entropy(x, argmax(x, axis=1))", "class-index targets must be written in the program"),
    ("y = F.mse_loss(x, x, reduction='avg')", "reduction must be 'mean', 'sum' or 'none', not 'avg'"),
    ("y = F.mse_loss(x, x, size_average=True)", "has no argument 'size_average'"),
    ("y = F.glu(x)", "glu halves dimension 1, whose size 3 is odd"),
    ("y = F.softmin(x)", "softmin without dim"),
    ("y = F.rms_norm(x, [3])", "rms_norm without eps"),
    ("y = F.layer_norm(x, [2])", "normalized_shape (2,) must be the last dimensions"),
    ("y = jax.nn.normalize(x)", "jax.nn.normalize standardizes"),
    ("y = cosine_similarity(x, x)", "PyTorch's F.cosine_similarity reduces dim=1"),
    ("y = mean_squared_error(x, x)", "scikit-learn's metric averages every element"),
    ("y = jnp.poisson(x, x)", "gradcli's poisson is Keras' loss"),
    ("y = keras.losses.mean_squared_error(x[:, 0], x[:, :1])", "Keras 3 squeezes the trailing 1 away"),
    ("y = keras.losses.categorical_crossentropy(reshape(x, [2, 3, 1]), x)", "Keras 3 squeezes the trailing 1"),
    ("y = optax.l2_loss(x, x[0])", "must have the same shape (Optax asserts it)"),
    ("y = F.binary_cross_entropy_with_logits(x, x[0])", "must have the same size (PyTorch refuses others)"),
    ("y = keras.losses.binary_crossentropy(x, x)", "Keras 2 (log(p + 1e-7)) and Keras 3 (log(p)) differ"),
    ("y = keras.losses.sparse_categorical_crossentropy([0, 3], x, from_logits=True)", "target 3 is not a class"),
    ("y = keras.losses.hinge(x * 2, x)", "the labels must be written in the program"),
    ("y = torch.addmm(x, x, x)", "the inner dimensions differ"),
    ("y = torch.clamp(x)", "clamp needs min or max"),
    ("y = F.kl_div(x, x, reduction='batch')", "'batchmean'"),
    ("y = conv2d(x, x, 1, 'SAME')", "write tf.nn.conv2d or F.conv2d"),
    ("y = tf.nn.conv2d(x, x, 1, 'SAME')", "takes a 4-D input and 4-D filters"),
    ("y = F.conv2d(x, x, groups=2)", "groups other than 1"),
    ("y = conv2d_nhwc(x, x, strides=1, dilations=[1, 1], padding=[[0, 0], [0, 0]])", "strides and dilations must be"),
    ("y = F.smooth_l1_loss(x, x, beta='a')", "'beta' must be a number, not 'a'"),
    ("y = F.kl_div(x, x, log_target=2)", "'log_target' must be True or False"),
    ("y = F.threshold(x, [1, 2], 0)", "an argument is not of a kind threshold() takes"),
    ("y = F.layer_norm(x, 'a')", "normalized_shape must be an integer or a list of integers"),
])
def test_nn_errors_are_positioned(program, words):
    with pytest.raises(GradcliError) as info:
        api.evaluate(program, feeds={"x": np.ones((2, 3))})
    assert words in str(info.value), str(info.value)
    assert info.value.pos is not None and info.value.pos.line == 1


def test_derive_of_a_convolution_round_trips():
    program = "y = sum(tf.nn.conv2d(x, f, 2, 'SAME') ** 2) + sum(F.conv2d(x, g, padding=1))"
    rng = np.random.default_rng(3)
    feeds = {"x": rng.standard_normal((1, 3, 3, 3)), "f": rng.standard_normal((2, 2, 3, 2)),
             "g": rng.standard_normal((2, 3, 2, 2))}
    for name in feeds:
        printed = api.derive(program, wrt=name, feeds=feeds)
        got = next(iter(api.evaluate(printed).outputs.values()))
        np.testing.assert_allclose(got, api.grad(program, wrt=[name], feeds=feeds).gradients[name], rtol=1e-13,
                                   err_msg=printed)


def test_composites_called_with_odd_arguments_give_positioned_errors_never_a_crash():
    from gradcli.ops import OPS

    names = sorted(n for n, op in OPS.items() if op.expand is not None)
    for name in names:
        for args in ("x", "x, x", "x, x, x", "x, 'a'", "x, [1, 2]", "x, x, x, x", "x, x, 1", "x, x, weight='a'",
                     "x, x, dim=[0, 1]"):
            for shape in ((2, 3), ()):
                program = f"y = {name}({args})"
                try:
                    api.grad(program, wrt=["x"], feeds={"x": np.full(shape, 0.5)})
                except GradcliError as exc:
                    assert exc.pos is not None, (program, str(exc))


def test_cli_reports_a_bad_class_index_with_exit_2(tmp_path):
    import subprocess
    import sys
    program = tmp_path / "loss.py"
    program.write_text("import torch.nn.functional as F\nloss = F.cross_entropy(x, [0, 7])\n")
    done = subprocess.run([sys.executable, "-m", "gradcli", "grad", str(program), "--wrt", "x",
                           "--set", "x=[[1, 2, 3], [4, 5, 6]]"], capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "loss.py:2:8: error: cross_entropy(): target 7 is not a class index" in done.stderr
    assert "^" in done.stderr


# found by comparing with PyTorch, Optax, SciPy and Keras' sources
def test_label_smoothing_of_one_is_the_number_one_not_a_value_of_the_program():
    x = np.array([[1.0, 2.0, 3.0]] * 3)
    r = api.evaluate("y = F.cross_entropy(x, t, label_smoothing=1.0, reduction='none')",
                     feeds={"x": x, "t": [0.0, 1.0, 2.0]})
    logp = x - np.log(np.exp(x).sum(1, keepdims=True))
    np.testing.assert_allclose(r.outputs["y"], -logp.mean(1), rtol=1e-13)


def test_optax_cosine_similarity_clips_the_squared_norm():
    p, t = np.array([[0.3, 0.4]]), np.array([[1.0, 0.0]])
    r = api.evaluate("y = optax.cosine_similarity(p, t, epsilon=0.5)", feeds={"p": p, "t": t})
    expected = (p * t).sum(-1) / (np.sqrt(max((p * p).sum(), 0.5)) * np.sqrt(max((t * t).sum(), 0.5)))
    np.testing.assert_allclose(r.outputs["y"], expected, rtol=1e-13)


def test_weighted_logsumexp_leaves_out_terms_of_weight_zero_as_scipy():
    from scipy.special import logsumexp
    for a, b in (([1000.0, 0.0], [0.0, 1.0]), ([np.inf, 1.0], [0.0, 1.0]), ([1.0, 2.0], [0.5, 2.0])):
        r = api.grad("y = scipy.special.logsumexp(a, b=b)", wrt=["a"], feeds={"a": a, "b": b})
        assert r.outputs["y"] == pytest.approx(logsumexp(np.array(a), b=np.array(b)), rel=1e-13)
        assert np.isfinite(r.gradients["a"]).all()


def test_pytorch_loss_options_by_position_are_refused():
    # F.mse_loss(x, t, 'sum'): PyTorch reads 'sum' as the deprecated size_average and takes the mean
    with pytest.raises(GradcliError, match=r"mse_loss\(\) takes its options by keyword"):
        api.evaluate("y = F.mse_loss(x, t, 'sum')", feeds={"x": [1.0, 2.0], "t": [0.0, 0.0]})


def test_keras_label_smoothing_divides_by_the_last_dimension():
    t, p = np.eye(3)[:, :2], np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]])
    r = api.evaluate("y = keras.losses.categorical_crossentropy(t, p, from_logits=True, label_smoothing=0.2, axis=0)",
                     feeds={"t": t, "p": p})
    smooth = t * 0.8 + 0.2 / p.shape[-1]
    logp = p - np.log(np.exp(p).sum(0, keepdims=True))
    np.testing.assert_allclose(r.outputs["y"], -(smooth * logp).sum(0), rtol=1e-13)


def test_layer_norm_of_an_infinite_shape_is_a_user_error():
    with pytest.raises(GradcliError, match="normalized_shape must be an integer"):
        api.evaluate("y = F.layer_norm(x, inf)", feeds={"x": np.zeros((2, 2))})
