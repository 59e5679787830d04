"""Pasted code gets its library's numbers where the libraries choose a derivative (abs at 0,
clip at a bound, a tie of torch.max along a dim, the norm of the zero vector), and its library's
defaults and keywords (tf.math.argmax's axis 0, Tensor.backward's inputs=). Each expected value is
what the library printed for the same code: TensorFlow 2.21.0, JAX 0.10.2, PyTorch 2.13.0+cpu
(CPU, float32; gradcli computes in float64)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gradcli import api


def outputs(program: str) -> dict:
    return api.evaluate(program, fixes=False).outputs


def close(got, want):
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float), rtol=2e-6, atol=1e-6)


# ------------------------------------------------------------------ TensorFlow

def test_tf_argmax_and_argmin_without_an_axis_take_axis_0():
    out = outputs("""
import tensorflow as tf
c = tf.constant([[4.0, 5.0], [10.0, 1.0]])
print(tf.math.argmax(c))
print(tf.argmin(c))
print(tf.math.argmax(c, axis=1))
""")
    close(out["tf.math.argmax(c)"], [1, 0])  # TensorFlow: tf.Tensor([1 0], shape=(2,), dtype=int64)
    close(out["tf.argmin(c)"], [0, 1])  # tf.Tensor([0 1], ...)
    close(out["tf.math.argmax(c, axis=1)"], [1, 0])


def test_numpy_argmax_without_an_axis_still_flattens():
    assert outputs("import numpy as np\nprint(np.argmax(np.array([[4.0, 5.0], [10.0, 1.0]])))\n")[
        "np.argmax(np.array([[4.0, 5.0], [10.0, 1.0]]))"] == 2.0


def test_tf_norm_of_the_zero_vector_has_a_nan_gradient_as_in_tensorflow():
    result = api.evaluate("""
import tensorflow as tf
z = tf.Variable([0.0, 0.0])
with tf.GradientTape() as tape:
  n = tf.norm(z)
print(n)
print(tape.gradient(n, z))
""", fixes=False)
    assert result.outputs["n"] == 0.0
    assert np.isnan(result.outputs["tape.gradient(n, z)"]).all()  # TensorFlow: [nan nan]
    assert any(d.kind == "nonfinite_gradient" for d in result.diagnostics)


# ------------------------------------------------------------------ JAX

def test_jnp_abs_has_slope_1_at_0():
    out = outputs("""
import jax
import jax.numpy as jnp
print(jax.grad(jnp.abs)(0.))
print(jax.vmap(jax.grad(jnp.abs))(jnp.array([-2.0, 0.0, 2.0])))
""")
    assert out["jax.grad(jnp.abs)(0.)"] == 1.0  # JAX: 1.0
    close(out["jax.vmap(jax.grad(jnp.abs))(jnp.array([-2.0, 0.0, 2.0]))"], [-1, 1, 1])


def test_jnp_clip_splits_the_gradient_at_a_bound():
    out = outputs("""
import jax
import jax.numpy as jnp
x = jnp.array([1.0, 2.0, 3.0, 5.0, 6.0])
print(jnp.clip(x, min=2))
print(jax.vmap(jax.grad(lambda t: jnp.clip(t, 2., 5.)))(x))
print(jax.grad(lambda t, lo: jnp.sum(jnp.clip(t, lo, 5.)), argnums=(0, 1))(x, 2.0))
""")
    close(out["jnp.clip(x, min=2)"], [2, 2, 3, 5, 6])
    close(out["jax.vmap(jax.grad(lambda t: jnp.clip(t, 2., 5.)))(x)"], [0, 0.5, 1, 0.5, 0])  # JAX: [0. 0.5 1. 0.5 0.]
    pair = "jax.grad(lambda t, lo: jnp.sum(jnp.clip(t, lo, 5.)), argnums=(0, 1))(x, 2.0)"
    close(out[pair + "[0]"], [0, 0.5, 1, 0.5, 0])
    assert out[pair + "[1]"] == 1.5  # JAX: Array(1.5)


def test_numpy_and_torch_clip_pass_the_whole_gradient_at_a_bound():
    out = outputs("""
import torch
x = torch.tensor([0.0, 1.0], requires_grad=True)
torch.clamp(x, 0.0, 1.0).sum().backward()
print(x.grad)
""")
    close(out["x.grad"], [1, 1])  # PyTorch: tensor([1., 1.])


def test_jax_leaky_relu_and_hard_tanh_have_slope_1_at_their_kinks():
    out = outputs("""
import jax
import jax.numpy as jnp
x = jnp.array([-2.0, -1.0, 0.0, 1.0, 2.0])
print(jax.nn.leaky_relu(x, negative_slope=0.1))
print(jax.vmap(jax.grad(lambda x: jax.nn.leaky_relu(x, negative_slope=0.1)))(x))
print(jax.vmap(jax.grad(jax.nn.hard_tanh))(x))
print(jax.grad(jax.nn.leaky_relu)(0.))
""")
    close(out["jax.nn.leaky_relu(x, negative_slope=0.1)"], [-0.2, -0.1, 0, 1, 2])
    close(out["jax.vmap(jax.grad(lambda x: jax.nn.leaky_relu(x, negative_slope=0.1)))(x)"], [0.1, 0.1, 1, 1, 1])
    close(out["jax.vmap(jax.grad(jax.nn.hard_tanh))(x)"], [0, 1, 1, 1, 0])  # JAX: [0. 1. 1. 1. 0.]
    assert out["jax.grad(jax.nn.leaky_relu)(0.)"] == 1.0


def test_jnp_linalg_norm_of_the_zero_vector_has_a_nan_gradient_as_in_jax():
    out = outputs("""
import jax
import jax.numpy as jnp
x = jnp.array([3., 4., 12.])
print(jnp.linalg.norm(x))
print(jax.grad(jnp.linalg.norm)(x))
print(jax.grad(jnp.linalg.norm)(jnp.zeros(3)))
m = jnp.array([[3.0, 4.0], [1.0, 2.0]])
print(jnp.linalg.norm(m, axis=0, keepdims=True))
""")
    assert out["jnp.linalg.norm(x)"] == 13.0
    close(out["jax.grad(jnp.linalg.norm)(x)"], [3 / 13, 4 / 13, 12 / 13])
    assert np.isnan(out["jax.grad(jnp.linalg.norm)(jnp.zeros(3))"]).all()  # JAX: [nan nan nan]
    close(out["jnp.linalg.norm(m, axis=0, keepdims=True)"], [[math.sqrt(10), math.sqrt(20)]])


def test_torch_norm_of_the_zero_vector_keeps_gradient_0():
    out = outputs("""
import torch
z = torch.zeros(3, requires_grad=True)
torch.linalg.norm(z).backward()
print(z.grad)
""")
    close(out["z.grad"], [0, 0, 0])  # PyTorch: tensor([0., 0., 0.])


# ------------------------------------------------------------------ PyTorch

@pytest.mark.parametrize("inputs, a_grad, b_grad", [("[a]", [3.0, 4.0], None), ("b", None, [1.0, 2.0])])
def test_backward_with_inputs_accumulates_into_those_tensors_alone(inputs, a_grad, b_grad):
    out = outputs(f"""
import torch
a = torch.tensor([1.0, 2.0], requires_grad=True)
b = torch.tensor([3.0, 4.0], requires_grad=True)
loss = (a * b).sum()
loss.backward(inputs={inputs})
print(a.grad)
print(b.grad)
""")
    for name, want in (("a.grad", a_grad), ("b.grad", b_grad)):
        if want is None:
            assert out[name] is None  # PyTorch: None
        else:
            close(out[name], want)


def test_backward_with_a_non_leaf_among_inputs_gives_it_a_grad():
    out = outputs("""
import torch
a = torch.tensor([1.0, 2.0], requires_grad=True)
b = torch.tensor([3.0, 4.0], requires_grad=True)
c = a * b
loss = (c * c).sum()
loss.backward(inputs=[c, b])
print(a.grad)
print(b.grad)
print(c.grad)
""")
    assert out["a.grad"] is None
    close(out["b.grad"], [6.0, 32.0])  # PyTorch: tensor([ 6., 32.])
    close(out["c.grad"], [6.0, 16.0])  # tensor([ 6., 16.])


def test_torch_max_along_a_dim_gives_the_gradient_to_the_element_its_index_names():
    out = outputs("""
import torch
a = torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, -1.0]], requires_grad=True)
v = a.max(dim=-1, keepdim=True).values
w = torch.min(a, 0)[0]
loss = (v ** 2).sum() + (w ** 3).sum()
g, = torch.autograd.grad(loss, a, create_graph=True)
print(g)
h, = torch.autograd.grad(g.sum(), a)
print(h)
""")
    close(out["g"], [[3, 6, 0], [4, 12, 3]])  # PyTorch: tensor([[ 3.,  6.,  0.], [ 4., 12.,  3.]])
    close(out["h"], [[6, 2, 0], [2, 12, -6]])  # tensor([[ 6.,  2.,  0.], [ 2., 12., -6.]])


def test_autograd_clip_passes_no_gradient_at_a_bound():
    out = outputs("""
import autograd.numpy as np
from autograd import elementwise_grad
x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
print(elementwise_grad(lambda x: np.clip(x, 0.0, 1.0))(x))
print(elementwise_grad(lambda x: np.clip(x, 0.0, None))(x))
""")
    # autograd 1.9.1: [0. 0. 1. 0. 0.] and [0. 0. 1. 1. 1.]
    close(out["elementwise_grad(lambda x: np.clip(x, 0.0, 1.0))(x)"], [0, 0, 1, 0, 0])
    close(out["elementwise_grad(lambda x: np.clip(x, 0.0, None))(x)"], [0, 0, 1, 1, 1])


def test_std_where_all_values_are_equal_has_a_nan_gradient_in_tensorflow_jax_and_autograd():
    out = outputs("""
import jax
import jax.numpy as jnp
import tensorflow as tf
import autograd
import autograd.numpy as anp
import torch
x = jnp.array([[1.0, 2.0, 4.0], [3.0, 3.0, 3.0]])
print(jax.grad(lambda x: jnp.std(x, axis=1).sum())(x))
v = tf.Variable([[1.0, 2.0, 4.0], [3.0, 3.0, 3.0]])
with tf.GradientTape() as t:
    s = tf.math.reduce_std(v, axis=1)
print(t.gradient(s, v))
print(autograd.grad(anp.std)(anp.array([2.0, 2.0, 2.0])))
print(autograd.grad(anp.linalg.norm)(anp.zeros(3)))
p = torch.tensor([2.0, 2.0, 2.0], requires_grad=True)
torch.std(p).backward()
print(p.grad)
""")
    # JAX 0.10.2 and TensorFlow 2.21.0: [[-0.35634837 -0.08908709  0.44543543] [nan nan nan]]
    for name in ("jax.grad(lambda x: jnp.std(x, axis=1).sum())(x)", "t.gradient(s, v)"):
        close(out[name][0], [-0.35634837, -0.08908709, 0.44543543])
        assert np.isnan(out[name][1]).all()
    assert np.isnan(out["autograd.grad(anp.std)(anp.array([2.0, 2.0, 2.0]))"]).all()  # autograd 1.9.1: [nan nan nan]
    assert np.isnan(out["autograd.grad(anp.linalg.norm)(anp.zeros(3))"]).all()  # [nan nan nan]
    close(out["p.grad"], [0, 0, 0])  # PyTorch: tensor([0., 0., 0.])


def test_tf_reduce_euclidean_norm_of_a_zero_row_has_a_nan_gradient():
    out = outputs("""
import tensorflow as tf
x = tf.Variable([[0.0, 0.0], [3.0, 4.0]])
with tf.GradientTape() as t:
    a = tf.math.reduce_euclidean_norm(x, axis=1)
print(a)
print(t.gradient(a, x))
""")
    close(out["a"], [0, 5])
    # TensorFlow 2.21.0: [[nan nan] [0.6 0.8]]
    assert np.isnan(out["t.gradient(a, x)"][0]).all()
    close(out["t.gradient(a, x)"][1], [0.6, 0.8])
