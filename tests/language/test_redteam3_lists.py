"""Python's list methods as statements in pasted code (`out = []`, `out.append(v)` in a loop, then
`jnp.array(out)`), and lists holding None (`in_axes=[0, None]`): gradcli's numbers against what the
real libraries printed for the same code (JAX 0.10.2 with x64, PyTorch 2.13.0+cpu in float64).

Before, `out.append(v)` was read as NumPy's `np.append(out, v)`, whose result was dropped: the list
stayed empty and a gradient through it was silently zero."""
from __future__ import annotations

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

# JAX 'Automatic vectorization' tutorial's convolve, differentiated per example
CONVOLVE = """
import jax
import jax.numpy as jnp

def convolve(x, w):
  output = []
  for i in range(1, len(x)-1):
    output.append(jnp.dot(x[i-1:i+2], w))
  return jnp.array(output)

xs = jnp.array([[0., 1., 2., 3., 4.], [1., -1., 0.5, 2., 0.]])
w = jnp.array([2., 3., 4.])
loss = lambda x, w: jnp.sum(convolve(x, w) ** 2)
print(convolve(xs[0], w))
print(jax.vmap(jax.grad(loss, argnums=1), in_axes=(0, None))(xs, w))
print(jax.grad(lambda w: jnp.sum(jax.vmap(convolve, in_axes=[0, None])(xs, w) ** 2))(w))
"""


def outputs(program: str) -> dict:
    return api.evaluate(program, fixes=False).outputs


def test_a_list_appended_in_a_function_gives_jaxs_gradient():
    out = outputs(CONVOLVE)
    # JAX 0.10.2 (x64): [11. 20. 29.]; [[156. 276. 396.] [-6. 33.5 31.]]; [150. 309.5 427.]
    np.testing.assert_allclose(out["convolve(xs[0], w)"], [11.0, 20.0, 29.0], rtol=1e-12)
    np.testing.assert_allclose(out["jax.vmap(jax.grad(loss, argnums=1), in_axes=(0, None))(xs, w)"],
                               [[156.0, 276.0, 396.0], [-6.0, 33.5, 31.0]], rtol=1e-12)
    np.testing.assert_allclose(
        out["jax.grad(lambda w: jnp.sum(jax.vmap(convolve, in_axes=[0, None])(xs, w) ** 2))(w)"],
        [150.0, 309.5, 427.0], rtol=1e-12)


def test_a_list_appended_at_the_top_level_and_extended_and_inserted_into():
    out = outputs("""
import torch
x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
terms = []
for k in range(3):
    terms.append(x[k] ** (k + 1))
terms.extend([x.sum()])
terms.insert(0, x.prod())
total = torch.stack(terms).sum()
total.backward()
print(len(terms), total, x.grad)
""")
    # PyTorch 2.13.0: 5 tensor(10., grad_fn=<SumBackward0>) tensor([ 0.0000,  0.0000, 12.5000])
    assert out["len(terms)"] == 5
    assert float(out["total"]) == 10.0
    np.testing.assert_allclose(out["x.grad"], [0.0, 0.0, 12.5], rtol=1e-12)


def test_a_list_of_layers_appended_in_a_function_trains_as_jaxs():
    out = outputs("""
import jax
import jax.numpy as jnp

layer_values = [(jnp.array([[0.1, -0.2, 0.3], [0.5, 0.1, -0.4]]), jnp.array([0.0, 0.1])),
                (jnp.array([[0.2, -0.5]]), jnp.array([0.05]))]

def init_network_params():
  params = []
  for w, b in layer_values:
    params.append((w, b))
  return params

def predict(params, x):
  activations = x
  for w, b in params[:-1]:
    activations = jnp.tanh(jnp.dot(w, activations) + b)
  final_w, final_b = params[-1]
  return jnp.dot(final_w, activations) + final_b

params = init_network_params()
x = jnp.array([1.0, -2.0, 0.5])
loss = lambda params: jnp.sum(predict(params, x) ** 2)
grads = jax.grad(loss)(params)
print(grads[0][0])
losses = []
for step in range(3):
  grads = jax.grad(loss)(params)
  params = [(p[0] - 0.1 * g[0], p[1] - 0.1 * g[1]) for p, g in zip(params, grads)]
  losses.append(loss(params))
print(jnp.array(losses))
""")
    # JAX 0.10.2 (x64)
    np.testing.assert_allclose(out["grads[0][0]"], [[0.017677072581756548, -0.035354145163513095, 0.008838536290878274],
                                                    [-0.06308894778760472, 0.12617789557520945, -0.03154447389380236]],
                               rtol=1e-10)
    np.testing.assert_allclose(out["jnp.array(losses)"],
                               [0.0007499642575936869, 0.0001339339199008428, 2.4177824964128144e-05], rtol=1e-10)


def test_numpys_append_function_is_unchanged():
    out = outputs("import numpy as np\na = np.array([1.0, 2.0])\nb = np.append(a, 3.0)\nprint(b)")
    np.testing.assert_array_equal(out["b"], [1.0, 2.0, 3.0])


@pytest.mark.parametrize("program, words", [
    ("import numpy as np\nx = 2.0\nx.append(1.0)\nprint(x)", "x is not a list"),
    ("import numpy as np\nclass M:\n    def __init__(self):\n        self.items = []\nm = M()\nm.items.append(1.0)\n",
     "gradcli follows a list bound to a name"),
])
def test_what_is_no_list_a_name_holds_is_refused_at_its_place(program, words):
    with pytest.raises(GradcliError) as caught:
        outputs(program)
    assert words in str(caught.value) and caught.value.pos is not None


def test_a_list_holding_none_is_no_array_and_used_as_one_is_refused_at_its_place():
    with pytest.raises(GradcliError) as caught:
        outputs("import numpy as np\nx = np.array([1.0, None])\nprint(x)")
    assert "None is not a number" in str(caught.value) and caught.value.pos is not None


def test_a_list_of_losses_each_given_to_autograd_grad_is_a_list_of_graphs():
    # each loss has its own graph: a list of them is no stacked array whose one graph the first
    # backward would free (which refused the second grad before)
    out = outputs("""
import torch
import torch.nn.functional as F
x = torch.tensor([0.5, -1.2, 2.0, 0.1], requires_grad=True)
y = torch.tensor([0.0, 1.0, 1.5, 0.1])
losses = [F.huber_loss(x, y, delta=0.8), F.smooth_l1_loss(x, y, beta=0.5),
          F.poisson_nll_loss(x, y), F.soft_margin_loss(x, torch.tensor([1.0, -1.0, 1.0, -1.0])),
          F.binary_cross_entropy_with_logits(x, torch.tensor([1.0, 0.0, 1.0, 0.0]), pos_weight=torch.tensor(2.0))]
grads = []
for k, loss in enumerate(losses):
    g, = torch.autograd.grad(loss, x)
    grads.append(g)
print(torch.stack(losses))
print(torch.stack(grads))
""")
    # PyTorch 2.13.0 (float64)
    np.testing.assert_allclose(out["torch.stack(losses)"], [0.42250000000000010, 0.61250000000000004, 2.15853562490465700,
                                                          0.40217103065867033, 0.55242227946444011], rtol=1e-12)
    np.testing.assert_allclose(out["torch.stack(grads)"], [
        [0.125, -0.2, 0.125, 0.0], [0.25, -0.25, 0.25, 0.0],
        [0.41218031767503205, -0.17470144702194945, 1.47226402473266260, 0.25129272951891191],
        [-0.09438516719953637, 0.05786880412524559, -0.02980073050552939, 0.13124479686973500],
        [-0.18877033439907270, 0.05786880412524559, -0.05960146101105884, 0.13124479686973500]], rtol=1e-12, atol=1e-15)
