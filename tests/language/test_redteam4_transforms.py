"""Function transforms and grad modes as the autodiff guides paste them (the JAX Autodiff Cookbook
and Advanced autodiff pages, the torch.func tutorials, PyTorch's 'Autograd mechanics'), against what
the libraries printed for the same code: JAX 0.10.2 with jax_enable_x64, PyTorch 2.13.0+cpu, in
float64.

Before: a function imported by name (`from jax.scipy.special import logsumexp`) passed to jax.grad
was 'unknown function jax.grad'; jax.checkpoint was unknown; jax.vjp/jvp with has_aux=True read the
(output, aux) pair as one array literal; torch.func.vmap's in_dims= was refused;
torch.inference_mode was unknown; and `torch.set_grad_enabled(False)` as a statement of its own was
an internal error (exit 70)."""
from __future__ import annotations

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

X64 = 'import jax\njax.config.update("jax_enable_x64", True)\nimport jax.numpy as jnp\n'


def outputs(program: str) -> dict:
    return api.evaluate(program, fixes=False).outputs


def close(got, want) -> bool:
    return np.allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float), rtol=1e-12, atol=1e-14)


def test_a_function_imported_by_name_is_a_function_value_for_grad():
    out = outputs(X64 + """
from jax.scipy.special import logsumexp
from jax.numpy import tanh
x = jnp.array([1.0, 2.0, 3.0])
print(jax.grad(logsumexp)(x))
f = logsumexp
print(jax.grad(f)(x))
print(jax.grad(tanh)(2.0))
""")
    softmax = [0.09003057317038046, 0.2447284710547976, 0.6652409557748219]  # JAX 0.10.2 printed
    assert close(out["jax.grad(logsumexp)(x)"], softmax)
    assert close(out["jax.grad(f)(x)"], softmax)
    assert close(out["jax.grad(tanh)(2.0)"], 1 - np.tanh(2.0) ** 2)


def test_jax_checkpoint_changes_no_gradient():
    out = outputs(X64 + """
def g(W, x):
    y = jnp.dot(W, x)
    return jnp.sin(y)

def f2(W1, W2, W3, x):
    x = jax.checkpoint(g)(W1, x)
    x = jax.checkpoint(g)(W2, x)
    x = jax.remat(g)(W3, x)
    return x

W1 = jnp.array([[0.5, -0.3], [0.2, 0.8]])
W2 = jnp.array([[1.0, 0.1], [-0.4, 0.6]])
W3 = jnp.array([[0.3, 0.3], [0.7, -0.2]])
x = jnp.array([1.0, -2.0])
print(jax.grad(lambda W: jnp.sum(f2(W, W2, W3, x)))(W1))
""")
    assert close(out["jax.grad(lambda W: jnp.sum(f2(W, W2, W3, x)))(W1)"],  # JAX 0.10.2 printed
                 [[0.2563866257261553, -0.5127732514523106], [0.01861948935099252, -0.03723897870198504]])


def test_vjp_and_jvp_with_has_aux_return_the_aux_last():
    out = outputs(X64 + """
def f(x):
    return jnp.sin(x) * 2.0, jnp.sum(x)

x = jnp.array([0.1, 0.2, 0.3])
y, f_vjp, aux = jax.vjp(f, x, has_aux=True)
print(y)
print(aux)
print(f_vjp(jnp.array([1.0, -1.0, 2.0])))
out, tangent, aux2 = jax.jvp(f, (x,), (jnp.array([1.0, 0.0, 0.0]),), has_aux=True)
print(tangent)
print(aux2)
""")
    # JAX 0.10.2 printed:
    assert close(out["y"], [0.1996668332936563, 0.39733866159012243, 0.5910404133226791])
    assert close(out["aux"], 0.6000000000000001)
    assert close(out["f_vjp(jnp.array([1.0, -1.0, 2.0]))"], [1.9900083305560516, -1.9601331556824833, 3.821345956502424])
    assert close(out["tangent"], [2 * np.cos(0.1), 0.0, 0.0])
    assert close(out["aux2"], 0.6000000000000001)


def test_vjp_with_has_aux_needs_a_pair():
    with pytest.raises(GradcliError, match=r"has_aux=True\): the function must return \(output, aux\)"):
        outputs(X64 + "x = jnp.array([0.1, 0.2])\ny, f_vjp, aux = jax.vjp(jnp.sin, x, has_aux=True)\nprint(y)\n")


def test_torch_func_vmap_reads_in_dims():
    out = outputs("""
import torch
from torch.func import grad, vmap

def compute_loss(w, sample, target):
    prediction = sample @ w
    return torch.nn.functional.mse_loss(prediction, target)

w = torch.tensor([0.5, -0.25], dtype=torch.float64)
data = torch.tensor([[1.0, 2.0], [3.0, -1.0], [0.0, 1.0]], dtype=torch.float64)
targets = torch.tensor([1.0, 0.5, -2.0], dtype=torch.float64)
ft_per_sample_grads = vmap(grad(compute_loss), in_dims=(None, 0, 0), out_dims=0)(w, data, targets)
print(ft_per_sample_grads)
""")
    assert close(out["ft_per_sample_grads"], [[-2.0, -4.0], [7.5, -2.5], [0.0, 3.5]])  # PyTorch 2.13.0 printed


def test_vmap_stacks_on_axis_zero_only():
    with pytest.raises(GradcliError, match=r"vmap: gradcli stacks the results on axis 0 only \(out_dims=0\)"):
        outputs("import torch\nfrom torch.func import vmap\nx = torch.ones(2, 3)\n"
                "print(vmap(torch.sin, in_dims=0, out_dims=1)(x))\n")


def test_set_grad_enabled_as_a_statement_sets_the_mode_for_what_follows():
    out = outputs("""
import torch
x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
torch.set_grad_enabled(False)
w = x * 2
print(w.requires_grad)
torch.set_grad_enabled(True)
with torch.inference_mode():
    v = x * 3
print(v.requires_grad)
with torch.set_grad_enabled(False):
    a = x * 2
print(a.requires_grad)
b = x * 3
print(b.requires_grad)
d = (x ** 2).sum()
d.backward()
print(x.grad)
""")
    # PyTorch 2.13.0 printed False, False, False, True, tensor([2., 4.])
    assert [out[k] for k in ("w.requires_grad", "v.requires_grad", "a.requires_grad", "b.requires_grad")] \
        == [0.0, 0.0, 0.0, 1.0]
    assert close(out["x.grad"], [2.0, 4.0])


AUTOGRAD_PRODUCTS = """
import autograd.numpy as np
from autograd import hessian_vector_product, hessian_tensor_product, vector_jacobian_product, grad_and_aux
def f(x):
    return np.sum(np.sin(x) * x ** 2)
x = np.array([0.5, 1.0, -2.0])
v = np.array([1.0, 0.0, 2.0])
hvp = hessian_vector_product(f)
print(hvp(x, v))
print(hessian_tensor_product(f)(x, v))
def g(a, x):
    return np.tanh(a * x)
print(vector_jacobian_product(g, 1)(2.0, x, v))
print(vector_jacobian_product(g)(2.0, x, v))
def h(w, x):
    return np.sum(w ** 2 * x), w[0]
print(grad_and_aux(h, argnum=0)(x, v))
"""


def test_autograd_s_vector_products_and_grad_and_aux():
    out = outputs(AUTOGRAD_PRODUCTS)
    # autograd 1.9.1 printed:
    hvp = [2.5941598163381006, 0.0, 10.295539092057005]
    assert close(out["hvp(x, v)"], hvp) and close(out["hessian_tensor_product(f)(x, v)"], hvp)
    assert close(out["vector_jacobian_product(g, 1)(2.0, x, v)"], [0.8399486832280522, 0.0, 0.005363802732103588])
    assert close(out["vector_jacobian_product(g)(2.0, x, v)"], 0.20462336807490944)
    assert close(out["grad_and_aux(h, argnum=0)(x, v)[0]"], [1.0, 0.0, -8.0])
    assert close(out["grad_and_aux(h, argnum=0)(x, v)[1]"], 0.5)


def test_a_hessian_vector_product_of_a_vector_function_is_autograd_s_type_error():
    with pytest.raises(GradcliError, match=r"output must be a scalar, it has shape \(3,\) \(autograd: TypeError\)"):
        outputs("import autograd.numpy as np\nfrom autograd import hessian_vector_product\n"
                "x = np.array([0.5, 1.0, -2.0])\nprint(hessian_vector_product(np.sin)(x, x))\n")


def test_the_inference_mode_decorator_turns_gradients_off_in_the_function():
    out = outputs("""
import torch
@torch.inference_mode()
def f(x):
    return x * 2
x = torch.tensor([1.0, 2.0], requires_grad=True)
print(f(x).requires_grad)
print((x * 2).requires_grad)
""")
    assert (out["f(x).requires_grad"], out["(x * 2).requires_grad"]) == (0.0, 1.0)  # PyTorch 2.13.0: False, True


def test_leaving_a_grad_mode_block_restores_the_mode_before_it_whatever_was_set_inside():
    out = outputs("""
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
with torch.no_grad():
    torch.set_grad_enabled(True)
    a = x * 2
b = x * 3
@torch.no_grad()
def f(x):
    torch.set_grad_enabled(True)
    return x * 2
c = f(x)
d = x * 4
with torch.enable_grad():
    torch.set_grad_enabled(False)
    e = x * 2
g = x * 5
torch.set_grad_enabled(False)
with torch.enable_grad():
    h = x * 2
k = x * 2
print(a.requires_grad, b.requires_grad, c.requires_grad, d.requires_grad)
print(e.requires_grad, g.requires_grad, h.requires_grad, k.requires_grad)
""")
    # PyTorch 2.13.0 printed True True True True, then False True True False
    assert [out[f"{v}.requires_grad"] for v in "abcdeghk"] == [1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0]
