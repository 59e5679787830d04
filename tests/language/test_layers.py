"""Layers written as functionals: PyTorch's F.embedding and F.scaled_dot_product_attention, JAX's
jax.nn.dot_product_attention, TensorFlow's tf.nn.embedding_lookup and tf.add_n, against what
PyTorch 2.13.0, JAX 0.10.2 (x64) and TensorFlow 2.21.0 printed."""
from __future__ import annotations

import re

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

TORCH = """import torch
import torch.nn.functional as F
W = torch.tensor([[0.1, -0.2, 0.3], [1.0, 0.5, -1.5], [2.0, -0.3, 0.7], [0.0, 0.4, 0.9]], dtype=torch.float64, requires_grad=True)
ids = torch.tensor([[1, 2, 0], [3, 1, 1]])
e = F.embedding(ids, W, padding_idx=1)
q = torch.tensor([[[0.2, -0.1], [0.5, 0.3], [-0.4, 0.8]]], dtype=torch.float64, requires_grad=True)
k = torch.tensor([[[0.1, 0.4], [-0.6, 0.2], [0.3, -0.5], [0.7, 0.1]]], dtype=torch.float64)
v = torch.tensor([[[1.0, 0.0, 2.0], [0.5, -1.0, 0.3], [0.2, 0.4, -0.7], [-1.1, 0.6, 0.9]]], dtype=torch.float64)
a = F.scaled_dot_product_attention(q, k, v)
idx = torch.tensor([[0, 1, 0, 0], [1, 0, 0, 1], [0, 0, 1, 0]])
m = idx == 0
b = F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.7)
c = F.scaled_dot_product_attention(q, k[:, :3], v[:, :3], is_causal=True)
loss = (e ** 2).sum() + (a * v[:, :3]).sum() + (b ** 3).sum() + c.sum() * 2
loss.backward()
print(e.sum(), a, b, c, loss)
print(W.grad)
print(q.grad)
"""
TORCH_PRINTED = {  # PyTorch 2.13.0, float64
    "e.sum()": 3.9000000000000004,
    "a": [0.11037427244712977, 0.04531383521593432, 0.6079500732771883, 0.07257129516251726, 0.07968507723592427,
          0.6976958448368349, 0.25958372314645667, -0.12884871167103462, 0.7628892739258702],
    "b": [-0.000850869520909403, 0.3445230789794692, 0.6964957714528206, 0.33742955179581313, -0.24133790838046112,
          -0.24190149401395636, 0.2704000320485744, -0.23511626734761468, 1.059665391897159],
    "c": [1.0, 0.0, 2.0, 0.7859875123935542, -0.4280249752128917, 1.2723575421380842, 0.6240750493454893,
          -0.32424604468751306, 0.7261312063408789],
    "loss": 30.04673673237958,
    "W.grad": [0.2, -0.4, 0.6, 0.0, 0.0, 0.0, 4.0, -0.6, 1.4, 0.0, 0.8, 1.8],  # padding_idx's row: no gradient
    "q.grad": [-0.18149365038455675, 0.8750050817184221, 0.4977603304065658, 0.36123179570294656, 0.8740285760024398,
               0.500235778579875],
}

JAX = """import jax
import jax.numpy as jnp
q = jnp.array([[[0.2, -0.1]], [[0.5, 0.3]], [[-0.4, 0.8]]])
k = jnp.array([[[0.1, 0.4]], [[-0.6, 0.2]], [[0.3, -0.5]], [[0.7, 0.1]]])
v = jnp.array([[[1.0, 0.0]], [[0.5, -1.0]], [[0.2, 0.4]], [[-1.1, 0.6]]])
bias = jnp.array([[[0.1, -0.2, 0.0, 0.3], [0.0, 0.5, -0.1, 0.2], [0.2, 0.0, 0.0, -0.4]]])
def f(q):
    a = jax.nn.dot_product_attention(q, k, v)
    b = jax.nn.dot_product_attention(q, k[:3], v[:3], is_causal=True)
    c = jax.nn.dot_product_attention(q, k, v, bias=bias, scale=0.5)
    return jnp.sum(a ** 2) + jnp.sum(b * 3.0) + jnp.sum(jnp.sin(c))
print(f(q))
print(jax.grad(f)(q))
print(jax.nn.dot_product_attention(q[None], k[None], v[None], is_causal=True))
"""
JAX_PRINTED = {  # JAX 0.10.2 with x64: its softmax runs in float32 whatever the inputs' type
    "f(q)": 5.489339658650657,
    "jax.grad(f)(q)": [-0.0360554345600195, -0.0024422525486988067, 0.5651249030652312, 0.14704696479568158,
                       0.43067300293226995, 0.06373812728407016],
    "jax.nn.dot_product_attention(q[None], k[None], v[None], is_causal=True)":
        [1.0, 0.0, 0.7859875559806824, -0.4280250072479248, 0.6240750074386596, -0.3242460250854492],
}

TENSORFLOW = """import tensorflow as tf
params = tf.Variable([[0.1, -0.2, 0.3], [1.0, 0.5, -1.5], [2.0, -0.3, 0.7]], dtype=tf.float64)
with tf.GradientTape() as tape:
    e = tf.nn.embedding_lookup(params, [[2, 0], [1, 2]])
    s = tf.add_n([e[0], e[1], e[0] * 2.0])
    loss = tf.reduce_sum(s ** 2)
g = tape.gradient(loss, params)
print(e, s, loss, g)
print(tf.math.is_nan(tf.constant([1.0, float('nan')])), tf.math.is_finite(tf.constant([1.0, float('inf')])))
"""
TENSORFLOW_PRINTED = {  # TensorFlow 2.21.0 (g: IndexedSlices, here dense)
    "e": [2.0, -0.3, 0.7, 0.1, -0.2, 0.3, 1.0, 0.5, -1.5, 2.0, -0.3, 0.7],
    "s": [7.0, -0.39999999999999997, 0.5999999999999999, 2.3000000000000003, -0.9, 1.6],
    "loss": 58.18,
    "g": [13.8, -5.4, 9.6, 14.0, -0.8, 1.2, 46.6, -4.2, 6.8],
    "tf.math.is_nan(tf.constant([1.0, float('nan')]))": [0.0, 1.0],
    "tf.math.is_finite(tf.constant([1.0, float('inf')]))": [1.0, 0.0],
}


# (JAX's float32 softmax: within float32's rounding of JAX's, whose XLA exp rounds its own way)
@pytest.mark.parametrize("program, printed, tolerance", [(TORCH, TORCH_PRINTED, 1e-13), (JAX, JAX_PRINTED, 2e-7),
                                                         (TENSORFLOW, TENSORFLOW_PRINTED, 1e-13)],
                         ids=["torch", "jax", "tensorflow"])
def test_layers_give_the_library_s_values_and_gradients(program, printed, tolerance):
    outputs = api.evaluate(program, fixes=False).outputs
    for name, expected in printed.items():
        np.testing.assert_allclose(np.ravel(outputs[name]), expected, rtol=tolerance, atol=tolerance, err_msg=name)


def test_a_non_finite_element_is_named_by_its_value_not_the_array_s_first():
    result = api.evaluate(TENSORFLOW, fixes=False)
    messages = sorted(d.message for d in result.diagnostics if d.kind == "nonfinite_input")
    assert messages == ["this array holds 1 number not finite in float64 (the first is inf)",
                        "this array holds 1 number not finite in float64 (the first is nan)"]


@pytest.mark.parametrize("line, message", [
    ("y = F.scaled_dot_product_attention(q, q, q, attn_mask=m)", "attn_mask holds only 0 and 1"),
    ("y = F.scaled_dot_product_attention(q, q, q, dropout_p=0.1)", "dropout_p=...) draws at random"),
    ("y = F.scaled_dot_product_attention(q, q, q, attn_mask=q > 0, is_causal=True)", "give attn_mask or is_causal"),
    ("y = F.embedding(torch.tensor([0, 5]), q[0])", "index 5 is out of range for a table of 3 rows"),
    ("y = F.embedding(torch.tensor([0]), q[0], max_norm=1.0)", "F.embedding(max_norm=...) is not supported"),
])
def test_layer_calls_gradcli_cannot_answer_for_are_refused(line, message):
    program = ("import torch\nimport torch.nn.functional as F\nq = torch.ones(1, 3, 2)\n"
               "m = torch.tensor([[True, False, True]])\n" + line + "\n")
    with pytest.raises(GradcliError, match=re.escape(message)) as caught:
        api.evaluate(program, fixes=False)
    assert caught.value.pos.line == 5
