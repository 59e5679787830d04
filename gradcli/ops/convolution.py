"""The op table, continued (after gradcli/ops/nn.py): 2-D convolution.

One core, NHWC input (N, H, W, C) and HWIO filters (KH, KW, C, O), with strides, dilations and
explicit padding; the libraries' spellings are composites (gradcli.ops.nn's `composite`) that
normalize their arguments onto it."""
from __future__ import annotations

import numpy as np

from gradcli.errors import ShapeError
from gradcli.ops.trace import G as G_
from gradcli.ops.table import REQUIRED, Op, register
from gradcli.ops.shapes import fmt_shape
from gradcli.ops.nn import composite


# --------------------------------------------------------------------------- 2-D convolution
#
# The core's padding is explicit, ((top, bottom), (left, right)). The input gradient and the
# filter gradient are ops too, and the three are each other's VJPs (the convolution is
# bilinear), so second derivatives are exact.

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
        cols = [xp_[:, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw, :]
                for j in range(fshape[1])]
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


def _pair(value, name, data_format="NHWC"):
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


# --------------------------------------------------------------------------- pooling over one axis

def _pool_input(x, label):
    if x.ndim not in (2, 3):
        raise ShapeError(f"{label} takes (N, C, L) or (C, L), got {fmt_shape(x.shape)}")


@composite("max_pool1d", ("input",), {"kernel_size": REQUIRED, "stride": None, "padding": 0, "dilation": 1,
                                      "ceil_mode": False, "return_indices": False},
           "F.max_pool1d: the maximum of each window along the last axis (padding: -inf); the gradient goes to the "
           "first maximum of its window, as PyTorch's")
def _max_pool1d(f, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    _pool_input(x, "max_pool1d")
    k = kernel_size
    s = k if stride is None else stride
    if dilation != 1 or ceil_mode or return_indices:
        raise ShapeError("max_pool1d with dilation, ceil_mode or return_indices is not supported")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (k, s, padding)) or k < 1 or s < 1 \
            or not 0 <= padding <= k // 2:
        raise ShapeError(f"max_pool1d: kernel_size and stride must be positive integers and padding at most half "
                         f"the kernel, got {k!r}, {s!r}, {padding!r}")
    if padding:
        widths = ((0, 0),) * (x.ndim - 1) + ((padding, padding),)
        x = f.pad(x, pad_width=widths, mode="constant", constant_values=-np.inf)
    if x.shape[-1] < k:
        raise ShapeError(f"max_pool1d: a window of {k} does not fit a length of {x.shape[-1]}")
    windows = f.unfold(x, dimension=x.ndim - 1, size=k, step=s)                 # (..., L_out, k)
    first = f.argmax(windows, axis=-1, keepdims=True)                           # the first maximum
    return f.reshape(f.gather_along(windows, first, axis=-1), shape=windows.shape[:-1])


@composite("adaptive_avg_pool1d", ("input",), {"output_size": REQUIRED},
           "F.adaptive_avg_pool1d: output_size means along the last axis, window i from floor(i L / n) to "
           "ceil((i + 1) L / n)")
def _adaptive_avg_pool1d(f, x, output_size):
    _pool_input(x, "adaptive_avg_pool1d")
    n, length = output_size, x.shape[-1]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ShapeError(f"output_size must be a positive integer, not {n!r}")
    if length * n > 10_000_000:  # (the averaging matrix, length x output_size)
        raise ShapeError(f"adaptive_avg_pool1d of a length of {length:,} to {n:,}: too large an averaging matrix")
    weights = np.zeros((length, n))
    for i in range(n):
        start, stop = (i * length) // n, -((-(i + 1) * length) // n)
        weights[start:stop, i] = 1.0 / (stop - start)
    return f.matmul(x, weights)
