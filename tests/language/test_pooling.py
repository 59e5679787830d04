"""Two-dimensional max and average pooling as PyTorch (F.max_pool2d, F.avg_pool2d,
F.adaptive_avg_pool2d, nn.MaxPool2d ...; NCHW) and TensorFlow (tf.nn.max_pool2d, avg_pool2d,
max_pool, avg_pool; NHWC, 'VALID' and 'SAME') compute them, values and gradients against what
PyTorch 2.13.0 and TensorFlow 2.21.0 printed in float64."""
from __future__ import annotations

import re

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

IMAGE = ("[[1.0, 5.0, 2.0, 0.5, 3.0], [4.0, 4.0, -1.0, 2.0, 2.0], [0.0, 3.0, 6.0, 6.0, 1.0], "
         "[2.0, 1.0, 0.5, 7.0, -2.0]]")

TORCH = f"""import torch
import torch.nn.functional as F
x = torch.tensor([[{IMAGE}]], dtype=torch.float64, requires_grad=True)
w = torch.tensor([[[[1.0, -2.0], [0.5, 3.0]]]], dtype=torch.float64)
a = F.max_pool2d(x, 2)
b = F.max_pool2d(x, kernel_size=3, stride=1, padding=1)
c = F.avg_pool2d(x, 2, stride=1)
d = F.avg_pool2d(x, 3, stride=2, padding=1)
e = F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False)
f = F.adaptive_avg_pool2d(x[:, :, :, :4], (2, 2))
loss = (a * w).sum() + (b ** 2).sum() * 0.1 + (c * c.flip(-1)).sum() + d.sum() * 2 + (e ** 3).sum() * 0.01 + f.sum()
loss.backward()
print(a, b, c, d, e, f)
print(loss)
print(x.grad)
"""
TORCH_PRINTED = {  # PyTorch 2.13.0, float64
    "a": [5.0, 2.0, 3.0, 7.0],
    "b": [5, 5, 5, 3, 3, 5, 6, 6, 6, 6, 4, 6, 7, 7, 7, 3, 6, 7, 7, 7],
    "c": [3.5, 2.5, 0.875, 1.875, 2.75, 3.0, 3.25, 2.75, 1.5, 2.625, 4.875, 3.0],
    "d": [1.555555555555556, 1.388888888888889, 0.833333333333333, 1.555555555555556, 3.166666666666667,
          1.777777777777778],
    "e": [3.5, 2.083333333333333, 1.875, 2.333333333333333, 3.166666666666667, 2.666666666666667],
    "f": [3.5, 0.875, 1.5, 4.875],
    "loss": 208.04360894097223,
    "x.grad": [1.5015972222222222, 7.183020833333334, 0.18142361111111116, 3.742513020833333, 3.1985894097222225,
               3.9260416666666664, 5.688113425925926, 5.5620717592592595, 7.130938946759259, 3.6313671875,
               3.3744444444444444, 8.792592592592593, 13.380648148148149, 6.900925925925926, 2.3827777777777777,
               1.9994444444444444, 4.692592592592592, 4.255648148148148, 14.225925925925926, 1.0077777777777777],
}

TENSORFLOW = f"""import tensorflow as tf
image = {IMAGE}
x = tf.Variable(tf.reshape(tf.constant(image, dtype=tf.float64), [1, 4, 5, 1]))
with tf.GradientTape() as tape:
    a = tf.nn.max_pool2d(x, ksize=2, strides=2, padding='VALID')
    b = tf.nn.max_pool2d(x, 3, 1, 'SAME')
    c = tf.nn.avg_pool2d(x, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding='SAME')
    d = tf.nn.avg_pool(x, 2, 1, 'VALID')
    loss = tf.reduce_sum(a ** 2) + tf.reduce_sum(b * 0.5) + tf.reduce_sum(c ** 3) + tf.reduce_sum(d)
g = tape.gradient(loss, x)
print(a, b, c, d, loss, g)
"""
TENSORFLOW_PRINTED = {  # TensorFlow 2.21.0, float64 (SAME average: the elements each window holds)
    "a": [5.0, 2.0, 3.0, 7.0],
    "b": [5, 5, 5, 3, 3, 5, 6, 6, 6, 6, 4, 6, 7, 7, 7, 3, 6, 7, 7, 7],
    "c": [2.8333333333333335, 3.0555555555555554, 2.4166666666666665, 1.5, 3.9166666666666665, 3.0],
    "d": [3.5, 2.5, 0.875, 1.875, 2.75, 3.0, 3.25, 2.75, 1.5, 2.625, 4.875, 3.0],
    "loss": 330.84507887517145,
    "g": [4.263888888888889, 19.62602880658436, 7.6121399176954725, 6.532278806584361, 4.1701388888888875,
          5.013888888888889, 8.126028806584362, 4.1121399176954725, 7.032278806584361, 3.420138888888888,
          6.201388888888889, 23.98366769547325, 14.28227880658436, 21.952417695473248, 10.170138888888888, 1.9375,
          9.857638888888888, 8.170138888888888, 31.920138888888886, 7.0],
}


@pytest.mark.parametrize("program, printed", [(TORCH, TORCH_PRINTED), (TENSORFLOW, TENSORFLOW_PRINTED)],
                         ids=["torch", "tensorflow"])
def test_pooling_gives_the_library_s_values_and_gradients(program, printed):
    result = api.evaluate(program, fixes=False)
    for name, expected in printed.items():
        np.testing.assert_allclose(np.ravel(result.outputs[name]), expected, rtol=1e-14, atol=1e-15, err_msg=name)
    # a tie in a window (2 and 2 in a's second) goes to its first element, as both kernels route it
    ties = [d for d in result.diagnostics if d.kind == "tie"]
    assert ties and all("the first of the tied elements in the window" in d.message for d in ties)


def test_pooling_modules_are_their_functionals():
    program = ("import torch\nimport torch.nn as nn\nx = torch.arange(16.0).reshape(1, 1, 4, 4)\n"
               "pool = nn.MaxPool2d(2, stride=1)\nprint(pool(x))\nprint(nn.AvgPool2d(2)(x), nn.AdaptiveAvgPool2d(1)(x))\n")
    out = api.evaluate(program, fixes=False).outputs  # PyTorch 2.13.0 printed these
    np.testing.assert_array_equal(np.ravel(out["pool(x)"]), [5, 6, 7, 9, 10, 11, 13, 14, 15])
    np.testing.assert_array_equal(np.ravel(out["nn.AvgPool2d(2)(x)"]), [2.5, 4.5, 10.5, 12.5])
    assert float(np.ravel(out["nn.AdaptiveAvgPool2d(1)(x)"])[0]) == 7.5


@pytest.mark.parametrize("call, message", [
    ("F.max_pool2d(x, 2, dilation=2)", "F.max_pool2d(dilation=...) is not supported: leave it at 1"),
    ("F.max_pool2d(x, 2, ceil_mode=True)", "F.max_pool2d(ceil_mode=...) is not supported"),
    ("F.max_pool2d(x, 2, padding=2)", "pad should be at most half of the effective kernel size (PyTorch: RuntimeError)"),
    ("F.avg_pool2d(x, 9)", "the kernel (9, 9) is larger than the (padded) input (4, 4)"),
    ("F.adaptive_avg_pool2d(x, 3)", "output size (3, 3) does not divide the input's (4, 4)"),
    ("F.max_pool2d(x[0, 0], 2)", "the input must be (C, H, W) or (N, C, H, W)"),
])
def test_pooling_gradcli_does_not_compute_is_refused(call, message):
    program = f"import torch\nimport torch.nn.functional as F\nx = torch.ones(1, 1, 4, 4)\ny = {call}\n"
    with pytest.raises(GradcliError, match=re.escape(message)) as caught:
        api.evaluate(program, fixes=False)
    assert caught.value.pos.line == 4
