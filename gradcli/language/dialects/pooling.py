"""Two-dimensional max and average pooling, as PyTorch (`F.max_pool2d`, `F.avg_pool2d`,
`F.adaptive_avg_pool2d`, NCHW) and TensorFlow (`tf.nn.max_pool2d`, `tf.nn.avg_pool2d`, NHWC)
spell them: each window is cut with two `unfold`s of the image axes and reduced.

Max pooling's gradient goes to the first maximum of a window (row by row), as both libraries'
kernels pick it; its padding is -inf, as theirs. Average pooling divides each window's sum by PyTorch's
divisor (the window's size, or with count_include_pad=False the elements it holds) or
TensorFlow's (the elements it holds)."""
from __future__ import annotations

import math

import numpy as np

from gradcli.language.dialects.spelling import composer

TORCH_NAMES = ("input", "kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices",
               "count_include_pad", "divisor_override")
TF_NAMES = ("input", "ksize", "strides", "padding", "data_format", "name")


def _pair(lowering, value, what: str, label: str, pos) -> tuple[int, int]:
    number = lowering.static_param(what, value, label, pos)
    numbers = number if isinstance(number, tuple) else (number, number)
    if isinstance(number, str) or len(numbers) != 2 or any(float(n) != int(n) or n < 0 for n in numbers):
        raise lowering.error(f"{label}: {what} must be an integer or a pair of integers, not {number!r}", pos)
    return int(numbers[0]), int(numbers[1])


def torch_pool(kind: str):
    """F.max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
    return_indices=False), F.avg_pool2d(input, kernel_size, stride=None, padding=0,
    ceil_mode=False, count_include_pad=True, divisor_override=None)."""
    def lower(lowering, node, values, scope):
        label, pos = node.func, node.pos
        given = lowering.arguments_by_name(node, values, TORCH_NAMES, required=2)
        for name, plain in (("dilation", 1), ("ceil_mode", False), ("return_indices", False),
                            ("divisor_override", None)):
            if name in given and not lowering.is_none(given[name]) and \
                    lowering.static_param(name, given[name], label, pos) != plain:
                raise lowering.error(f"{label}({name}=...) is not supported: leave it at {plain}", pos)
        kernel = _pair(lowering, given["kernel_size"], "kernel_size", label, pos)
        stride = kernel if "stride" not in given or lowering.is_none(given["stride"]) else \
            _pair(lowering, given["stride"], "stride", label, pos)
        padding = _pair(lowering, given["padding"], "padding", label, pos) if "padding" in given else (0, 0)
        if any(2 * p > k for p, k in zip(padding, kernel)):
            raise lowering.error(f"{label}: pad should be at most half of the effective kernel size (PyTorch: "
                                 "RuntimeError)", pos)
        x = lowering.materialize(given["input"], scope, pos)
        if len(lowering.graph.shapes[x]) not in (3, 4):
            raise lowering.error(f"{label}: the input must be (C, H, W) or (N, C, H, W)", pos)
        include_pad = "count_include_pad" not in given or bool(lowering.constant_truth(given["count_include_pad"]))
        pads = [(padding[0], padding[0]), (padding[1], padding[1])]
        return pool(lowering, x, kind, kernel, stride, pads, -2, include_pad, label, pos, scope)
    return lower


def torch_adaptive_avg_pool(lowering, node, values, scope):
    """F.adaptive_avg_pool2d(input, output_size) where each output size divides its axis: the
    average pool whose kernel and stride are the axis over the size (PyTorch's windows then)."""
    label, pos = node.func, node.pos
    given = lowering.arguments_by_name(node, values, ("input", "output_size"), required=2)
    x = lowering.materialize(given["input"], scope, pos)
    shape = lowering.graph.shapes[x]
    if len(shape) not in (3, 4):
        raise lowering.error(f"{label}: the input must be (C, H, W) or (N, C, H, W)", pos)
    out = _pair(lowering, given["output_size"], "output_size", label, pos)
    if any(o == 0 or n % o for n, o in zip(shape[-2:], out)):
        raise lowering.error(f"{label}: output size {out} does not divide the input's {tuple(shape[-2:])}: "
                             "PyTorch's windows then overlap unevenly, which gradcli does not compute", pos)
    kernel = tuple(n // o for n, o in zip(shape[-2:], out))
    return pool(lowering, x, "avg", kernel, kernel, [(0, 0), (0, 0)], -2, True, label, pos, scope)


def tf_pool(kind: str):
    """tf.nn.max_pool2d / avg_pool2d (and max_pool / avg_pool of a 4-D input): NHWC, padding
    'VALID' or 'SAME' (TensorFlow's split: the extra row and column at the end)."""
    def lower(lowering, node, values, scope):
        label, pos = node.func, node.pos
        given = lowering.arguments_by_name(node, values, TF_NAMES, required=4)
        layout = lowering.static_param("data_format", given["data_format"], label, pos) if "data_format" in given \
            else "NHWC"
        if layout not in ("NHWC", None):
            raise lowering.error(f"{label}: data_format {layout!r} is not supported: gradcli pools NHWC input", pos)
        x = lowering.materialize(given["input"], scope, pos)
        shape = lowering.graph.shapes[x]
        if len(shape) != 4:
            raise lowering.error(f"{label}: the input must be (N, H, W, C)", pos)
        kernel, stride = (_tf_window(lowering, given[name], name, label, pos) for name in ("ksize", "strides"))
        padding = lowering.static_param("padding", given["padding"], label, pos)
        if padding not in ("VALID", "SAME"):
            raise lowering.error(f"{label}: padding must be 'VALID' or 'SAME', not {padding!r}", pos)
        pads = [(0, 0), (0, 0)]
        if padding == "SAME":
            pads = []
            for n, k, s in zip(shape[1:3], kernel, stride):
                total = max((math.ceil(n / s) - 1) * s + k - n, 0)
                pads.append((total // 2, total - total // 2))
        return pool(lowering, x, kind, kernel, stride, pads, 1, False, label, pos, scope)
    return lower


def _tf_window(lowering, value, what: str, label: str, pos) -> tuple[int, int]:
    """ksize or strides: one integer, two (H, W), or four (1, H, W, 1)."""
    number = lowering.static_param(what, value, label, pos)
    numbers = number if isinstance(number, tuple) else (number,)
    if len(numbers) == 4 and numbers[0] == numbers[3] == 1:
        numbers = numbers[1:3]
    if len(numbers) == 1:
        numbers = numbers * 2
    if len(numbers) != 2 or any(float(n) != int(n) or n < 1 for n in numbers):
        raise lowering.error(f"{label}: {what} must be an integer, (H, W) or (1, H, W, 1), not {number!r}", pos)
    return int(numbers[0]), int(numbers[1])


def pool(lowering, x: int, kind: str, kernel, stride, pads, first_axis: int, include_pad: bool, label, pos, scope):
    """Max or average pooling of x's two image axes from `first_axis` (-2: NCHW, 1: NHWC)."""
    op, number = composer(lowering, pos, label, scope)
    shape = lowering.graph.shapes[x]
    rank = len(shape)
    axes = [first_axis % rank, first_axis % rank + 1]
    if any(k < 1 or s < 1 for k, s in zip(kernel, stride)):
        raise lowering.error(f"{label}: the kernel and the stride must be positive", pos)
    padded = [shape[a] + sum(p) for a, p in zip(axes, pads)]
    if any(n < k for n, k in zip(padded, kernel)):
        raise lowering.error(f"{label}: the kernel {tuple(kernel)} is larger than the (padded) input "
                             f"{tuple(padded)}", pos)
    widths = [(0, 0)] * rank
    for a, p in zip(axes, pads):
        widths[a] = p
    source = x
    if any(sum(p) for p in pads):
        source = op("pad", x, pad_width=tuple(widths), constant_values=-np.inf if kind == "max" else 0.0)
    windows = op("unfold", source, dimension=axes[0], size=kernel[0], step=stride[0])
    windows = op("unfold", windows, dimension=axes[1], size=kernel[1], step=stride[1])
    flat_shape = lowering.graph.shapes[windows][:-2] + (kernel[0] * kernel[1],)
    windows = op("reshape", windows, shape=flat_shape)
    if kind == "max":
        pooled = op("max_first", windows, axis=-1)
    else:
        pooled = op("sum", windows, axis=-1)
        count = np.full(lowering.graph.shapes[pooled], float(kernel[0] * kernel[1]))
        if not include_pad and any(sum(p) for p in pads):  # the elements each window holds
            ones = np.pad(np.ones(tuple(shape[a] for a in axes)), pads)
            held = np.lib.stride_tricks.sliding_window_view(ones, kernel)[::stride[0], ::stride[1]].sum(axis=(-2, -1))
            count = np.broadcast_to(held.reshape(held.shape + (1,) * (rank - 1 - axes[1])), count.shape).copy()
        pooled = op("divide", pooled, number(count))
    return pooled


def _by_library(kind: str):
    """One entry for both libraries' spelling of a pool (the dialects' names are shared)."""
    torch, tensorflow = torch_pool(kind), tf_pool(kind)

    def lower(lowering, node, values, scope):
        library = lowering.library_of(node)
        if library == "torch":
            return torch(lowering, node, values, scope)
        if library == "tensorflow":
            return tensorflow(lowering, node, values, scope)
        raise lowering.error(f"unknown function '{node.func}': gradcli pools as F.{kind}_pool2d (NCHW) or "
                             f"tf.nn.{kind}_pool2d (NHWC) do", node.pos)
    return lower


NAMES = {"max_pool2d": _by_library("max"), "avg_pool2d": _by_library("avg"),
         "max_pool": _by_library("max"), "avg_pool": _by_library("avg"),
         "adaptive_avg_pool2d": torch_adaptive_avg_pool}
