"""torch.optim.RMSprop as PyTorch's tutorials use it ('Learning PyTorch with Examples', PyTorch:
optim), and an optimizer's options given by a name the program binds (`learning_rate = 1e-3`,
then `lr=learning_rate`): gradcli's numbers against what PyTorch 2.13.0+cpu printed in float64.
Before, RMSprop was an unknown function and `lr=learning_rate` was refused as no constant."""
from __future__ import annotations

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError


def outputs(program: str, **options) -> dict:
    return api.evaluate(program, fixes=False, **options).outputs


def test_the_tutorials_custom_module_trained_by_rmsprop_with_a_named_learning_rate():
    out = outputs("""
import torch
import math


class Polynomial3(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.tensor(0.1))
        self.b = torch.nn.Parameter(torch.tensor(-0.2))
        self.c = torch.nn.Parameter(torch.tensor(0.3))
        self.d = torch.nn.Parameter(torch.tensor(0.05))

    def forward(self, x):
        return self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3


x = torch.linspace(-math.pi, math.pi, 12)
y = torch.sin(x)
model = Polynomial3()
loss_fn = torch.nn.MSELoss(reduction='sum')
learning_rate = 1e-3
optimizer = torch.optim.RMSprop(model.parameters(), lr=learning_rate)
for t in range(10):
    y_pred = model(x)
    loss = loss_fn(y_pred, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(loss.item())
print(model.a, model.d)
""")
    # PyTorch 2.13.0 (float64): 29.030739043310206; a 0.05134988994162381, d 0.03316022343364475
    np.testing.assert_allclose(out["loss.item()"], 29.030739043310206, rtol=1e-12)
    np.testing.assert_allclose(out["model.a"], 0.05134988994162381, rtol=1e-12)
    np.testing.assert_allclose(out["model.d"], 0.03316022343364475, rtol=1e-12)


def test_rmsprop_momentum_centered_and_weight_decay():
    out = outputs("""
import torch
x = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [0.0, 1.0, -1.0]])
y = torch.tensor([1.0, -2.0, 0.5])
w1 = torch.tensor([0.5, -0.5, 1.0], requires_grad=True)
w2 = torch.tensor([0.5, -0.5, 1.0], requires_grad=True)
w3 = torch.tensor([0.5, -0.5, 1.0], requires_grad=True)
opts = [torch.optim.RMSprop([w1], lr=0.01, momentum=0.9), torch.optim.RMSprop([w2], lr=0.02, centered=True, alpha=0.9),
        torch.optim.RMSprop([w3], lr=0.01, weight_decay=0.1, momentum=0.5, centered=True)]
for step in range(5):
    for w, opt in zip([w1, w2, w3], opts):
        opt.zero_grad()
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        opt.step()
print(w1, w2, w3)
""")
    # PyTorch 2.13.0 (float64)
    np.testing.assert_allclose(out["w1"], [-0.3625075788660849, 0.41601382292927824, 0.13452982475464548], rtol=1e-12)
    np.testing.assert_allclose(out["w2"], [0.2653864759558311, -0.2590809426947271, 0.7650490986369868], rtol=1e-12)
    np.testing.assert_allclose(out["w3"], [-0.007152825083832517, 0.034564639772911514, 0.49021401201233394],
                               rtol=1e-12)


LR_BY_NAME = """
import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
lr = 0.1
opt = torch.optim.SGD([w], lr=lr)
(w ** 2).sum().backward()
opt.step()
print(w)
"""


def test_a_learning_rate_the_program_writes_is_read_and_one_given_from_outside_is_refused():
    np.testing.assert_allclose(outputs(LR_BY_NAME)["w"], [0.8, 1.6])  # PyTorch: tensor([0.8000, 1.6000])
    with pytest.raises(GradcliError) as caught:
        outputs(LR_BY_NAME, feeds={"lr": np.float64(0.2)})
    assert "'lr' must be a constant" in str(caught.value) and caught.value.pos is not None


def test_optax_rmsprop_with_its_defaults():
    out = outputs("""
import jax
import jax.numpy as jnp
import optax
params = jnp.array([0.5, -0.5, 1.0])
xs = jnp.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
ys = jnp.array([1.0, -2.0])
loss = lambda w: jnp.mean((xs @ w - ys) ** 2)
opt = optax.rmsprop(0.01)
state = opt.init(params)
for _ in range(3):
    g = jax.grad(loss)(params)
    updates, state = opt.update(g, state)
    params = optax.apply_updates(params, updates)
print(params)
""")
    # optax 0.2.8, JAX 0.10.2 (x64)
    np.testing.assert_allclose(out["params"], [0.42702368389867645, -0.42601460163068194, 0.9269908375497558],
                               rtol=1e-12)


def test_optax_rmsprop_momentum_eps_outside_the_root_and_an_initial_scale_over_a_dict():
    out = outputs("""
import jax
import jax.numpy as jnp
import optax
params = {'w': jnp.array([0.5, -0.5, 1.0]), 'b': jnp.array(0.2)}
xs = jnp.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
ys = jnp.array([1.0, -2.0])
loss = lambda p: jnp.mean((xs @ p['w'] + p['b'] - ys) ** 2)
opt = optax.rmsprop(0.01, decay=0.8, eps_in_sqrt=False, momentum=0.9, initial_scale=0.1)
state = opt.init(params)
for _ in range(4):
    g = jax.grad(loss)(params)
    updates, state = opt.update(g, state)
    params = optax.apply_updates(params, updates)
print(params)
""")
    # optax 0.2.8, JAX 0.10.2 (x64): {'b': 0.04039642773573159, 'w': [0.34141415697174976, -0.3437576185078037, 0.8401687051581244]}
    np.testing.assert_allclose(out["params['b']"], 0.04039642773573159, rtol=1e-12)
    np.testing.assert_allclose(out["params['w']"], [0.34141415697174976, -0.3437576185078037, 0.8401687051581244],
                               rtol=1e-12)


def test_optax_rmsprop_centered_is_refused_by_name():
    with pytest.raises(GradcliError) as caught:
        outputs("import optax\nimport jax.numpy as jnp\nopt = optax.rmsprop(0.1, centered=True)\n"
                "s = opt.init(jnp.array([1.0]))\n")
    assert "rmsprop(centered=True) is not supported" in str(caught.value)
