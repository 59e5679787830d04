"""torch.optim's SGD, Adam and AdamW in a training loop (gradcli/language/lower/optimizers.py):
four steps of zero_grad, backward and step give PyTorch's parameters and loss.

References: PyTorch 2.13.0+cpu, float64, printed by the same program with
`print(w.detach().numpy().tolist(), b.item(), loss.item())` at its end."""
from __future__ import annotations

import re

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

HEAD = ("import torch\n"
        "w = torch.tensor([0.5, -0.5], dtype=torch.float64, requires_grad=True)\n"
        "b = torch.tensor(0.2, dtype=torch.float64, requires_grad=True)\n"
        "X = torch.tensor([[1.0, 2.0], [2.0, 1.0], [0.0, 1.0]], dtype=torch.float64)\n"
        "y = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)\n")
LOOP = ("for t in range(4):\n"
        "    opt.zero_grad()\n"
        "    loss = ((X @ w + b - y) ** 2).mean()\n"
        "    loss.backward()\n"
        "    opt.step()\n")

PYTORCH = {  # the optimizer: (w, b, the last loss) as PyTorch printed them
    "opt = torch.optim.SGD([w, b], lr=0.1)":
        ([0.8073501234567901, -0.11562074074074075], 0.4905283950617284, 0.007112243328760856),
    "opt = torch.optim.SGD([w, b], lr=0.1, momentum=0.9)":
        ([0.9076501234567902, 0.029839259259259208], 0.6163683950617284, 1.1459730951806122),
    "opt = torch.optim.SGD([w, b], 0.05, 0.8, nesterov=True, weight_decay=0.01)":
        ([0.8837974351217285, -0.012937116234861257], 0.5662348251090618, 0.14931738520231955),
    "opt = torch.optim.SGD((w, b), lr=0.1, momentum=0.5, dampening=0.3, maximize=False)":
        ([0.8702601145679012, -0.03587666962962965], 0.5508938172839506, 0.2172157739636469),
    "opt = torch.optim.Adam([w, b], lr=0.05)":
        ([0.6960173441966007, -0.3037611989763056], 0.39632146979056593, 0.4165603386526442),
    "opt = torch.optim.Adam([w, b], lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)":
        ([0.6935878364122272, -0.30574964526324466], 0.39410317496303465, 0.42051161254961517),
    "opt = torch.optim.AdamW([w, b], lr=0.05)":
        ([0.6948781730485432, -0.30290955117021934], 0.39577567973073013, 0.4170192456917933),
}


@pytest.mark.parametrize("constructor", list(PYTORCH))
def test_a_training_loop_steps_the_parameters_as_pytorch_does(constructor):
    outputs = api.evaluate(HEAD + constructor + "\n" + LOOP + "print(w)\nprint(b)\nprint(loss)\n", fixes=False).outputs
    w, b, loss = PYTORCH[constructor]
    np.testing.assert_allclose(outputs["w"], w, rtol=1e-13)
    assert float(outputs["b"]) == pytest.approx(b, rel=1e-13)
    assert float(outputs["loss"]) == pytest.approx(loss, rel=1e-12)


def test_without_zero_grad_the_gradients_add_up_and_zero_grad_can_leave_zeros():
    # PyTorch 2.13: with no zero_grad the .grad accumulates over the steps (w ends at
    # [1.345, -0.035] here); zero_grad(set_to_none=False) leaves tensor([0., 0.])
    program = HEAD + ("opt = torch.optim.SGD([w], lr=0.05)\n"
                      "for t in range(3):\n"
                      "    loss = ((X @ w + b - y) ** 2).sum()\n"
                      "    loss.backward()\n"
                      "    opt.step()\n"
                      "g = w.grad\n"
                      "opt.zero_grad(set_to_none=False)\n"
                      "print(w)\nprint(g)\nprint(w.grad)\n")
    outputs = api.evaluate(program, fixes=False).outputs
    # by hand: g_k = 2 X^T (X w_k + b - y), accumulated: G_k = G_{k-1} + g_k, w_{k+1} = w_k - 0.05 G_k
    X, y, w, total = np.array([[1.0, 2.0], [2.0, 1.0], [0.0, 1.0]]), np.array([1.0, 2.0, 0.5]), np.array([0.5, -0.5]), 0
    for _ in range(3):
        total = total + 2 * X.T @ (X @ w + 0.2 - y)
        w = w - 0.05 * total
    np.testing.assert_allclose(outputs["w"], w, rtol=1e-14)
    np.testing.assert_allclose(outputs["g"], total, rtol=1e-14)
    np.testing.assert_array_equal(outputs["w.grad"], [0.0, 0.0])


@pytest.mark.parametrize("line, message", [
    ("opt = torch.optim.SGD([w * 2], lr=0.1)", "parameter 0 is not a leaf tensor with requires_grad=True"),
    ("opt = torch.optim.SGD(w, lr=0.1)", "write the parameters as a list of the tensors ([w, b]), or "
                                         "model.parameters() of a module the program defines"),
    ("v = w * 2\nopt = torch.optim.SGD([v], lr=0.1)", "v is not a leaf tensor with requires_grad=True"),
    ("opt = torch.optim.SGD([w], lr=0.1, momentun=0.9)", "got 'momentun'"),
    # PyTorch 2.13 warns and steps w twice (tensor([0.6000]) from 1.0 after one backward of w * w at lr 0.1)
    ("opt = torch.optim.SGD([w, w], lr=0.1)", "a parameter is given twice; give each once"),
    ("opt = torch.optim.Adam([w], amsgrad=True)", "amsgrad=True) is not supported"),
    ("opt = torch.optim.SGD([w], lr=0.1, differentiable=True)", "differentiable=True) is not supported"),
    ("opt = torch.optim.SGD([w], lr=0.1, nesterov=True)", "Nesterov momentum requires a momentum and zero dampening"),
    ("opt = torch.optim.SGD([w], lr=0.1)\nopt.state_dict()", "gradcli reads zero_grad() and step()"),
])
def test_an_optimizer_gradcli_does_not_read_is_refused_with_its_reason(line, message):
    with pytest.raises(GradcliError, match=re.escape(message)):
        api.evaluate(HEAD + line + "\nz = w\n", fixes=False)


MODULE = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.tensor([0.5, -0.5], dtype=torch.float64))
        self.b = nn.Parameter(torch.tensor(0.1, dtype=torch.float64))

    def forward(self, x):
        return x @ self.w + self.b

model = Model()
X = torch.tensor([[1.0, 2.0], [2.0, 1.0]], dtype=torch.float64)
y = torch.tensor([1.0, 2.0], dtype=torch.float64)
opt = torch.optim.Adam(model.parameters(), lr=0.1)
loss_fn = nn.MSELoss()
for epoch in range(5):
    model.zero_grad()
    loss = loss_fn(model(X), y)
    loss.backward()
    opt.step()
print(model.w)
print(model.b)
print(loss)
"""

NESTED = """import torch
import torch.nn as nn

class Layer(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = nn.Parameter(torch.tensor(w, dtype=torch.float64))

    def forward(self, x):
        return torch.tanh(x * self.w)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = Layer([0.5, -0.3])
        self.scale = nn.Parameter(torch.tensor(1.5, dtype=torch.float64))
        self.second = Layer([0.2, 0.8])

    def forward(self, x):
        return (self.second(self.first(x)) * self.scale).sum()

net = Net()
x = torch.tensor([1.0, 2.0], dtype=torch.float64)
opt = torch.optim.SGD(net.parameters(), lr=0.5, momentum=0.9)
for step in range(3):
    opt.zero_grad()
    out = net(x)
    out.backward()
    opt.step()
print(net.first.w)
print(net.second.w)
print(net.scale)
"""


def test_a_module_s_parameters_are_optimized_and_model_zero_grad_clears_them():
    # PyTorch 2.13: [0.9401938623336364, -0.05980613766636342] 0.5401938616484496 0.008532018367342045
    outputs = api.evaluate(MODULE, fixes=False).outputs
    np.testing.assert_allclose(outputs["model.w"], [0.9401938623336364, -0.05980613766636342], rtol=1e-13)
    assert float(outputs["model.b"]) == pytest.approx(0.5401938616484496, rel=1e-13)
    assert float(outputs["loss"]) == pytest.approx(0.008532018367342045, rel=1e-12)


def test_a_module_made_of_modules_gives_its_parameters_in_pytorch_s_order():
    # two classes' __init__ (Net's makes Layers) are no recursion. PyTorch 2.13:
    # [1.0545358565462506, -2.322828269945047] [-1.6794785835969035, 2.392748724842212] 3.336421075401108
    outputs = api.evaluate(NESTED, fixes=False).outputs
    np.testing.assert_allclose(outputs["net.first.w"], [1.0545358565462506, -2.322828269945047], rtol=1e-13)
    np.testing.assert_allclose(outputs["net.second.w"], [-1.6794785835969035, 2.392748724842212], rtol=1e-13)
    assert float(outputs["net.scale"]) == pytest.approx(3.336421075401108, rel=1e-13)


def test_a_method_that_calls_itself_is_still_recursion():
    program = ("class A:\n    def f(self, x):\n        return self.f(x)\n\n"
               "class B:\n    def f(self, x):\n        return x\n\n"
               "y = B().f(2.0) + A().f(1.0)\n")
    with pytest.raises(GradcliError, match=re.escape("recursion is not supported: 'f' calls itself (f at 2:9 -> f at 2:9)")):
        api.evaluate(program, fixes=False)


OPTAX_HEAD = '''import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import optax

params = {"w": jnp.array([0.5, -0.5]), "b": jnp.array(0.1)}
X = jnp.array([[1.0, 2.0], [2.0, 1.0], [0.0, 1.0]])
y = jnp.array([1.0, 2.0, 0.5])

def loss_fn(p):
    return jnp.mean((X @ p["w"] + p["b"] - y) ** 2)

'''
OPTAX_LOOP = '''state = opt.init(params)
for i in range(4):
    grads = jax.grad(loss_fn)(params)
    updates, state = opt.update(grads, state, params)
    params = optax.apply_updates(params, updates)
print(params["w"])
print(params["b"])
print(loss_fn(params))
'''
OPTAX = {  # the optimizer: (w, b, the loss after four steps) as optax 0.2.8 (JAX 0.10.2, x64) printed them
    "opt = optax.sgd(0.1)":
        ([0.827284938271605, -0.08183506172839504], 0.4189333333333333, 0.011140196544022764),
    "opt = optax.sgd(learning_rate=0.1, momentum=0.9)":
        ([0.9288849382716049, 0.07794493827160498], 0.5605533333333332, 0.2273040882987551),
    "opt = optax.sgd(0.05, 0.8, nesterov=True)":
        ([0.9112227946666667, 0.028156984888888945], 0.5040777066666666, 0.11641912878417207),
    "opt = optax.adam(0.1)":
        ([0.8730269292834085, -0.12466265777016475], 0.4761788583572484, 0.013847821279458376),
    "opt = optax.adam(0.05, b1=0.8, b2=0.99, eps=1e-6, eps_root=1e-10)":
        ([0.6945544778167752, -0.30512427025422895], 0.29499462598749215, 0.34372224679834806),
    "opt = optax.adamw(0.05, weight_decay=0.1)":
        ([0.6851478377151048, -0.29483567894033214], 0.2933516091221805, 0.3411387221132737),
}


@pytest.mark.parametrize("constructor", list(OPTAX))
def test_an_optax_training_loop_gives_optax_s_parameters(constructor):
    outputs = api.evaluate(OPTAX_HEAD + constructor + "\n" + OPTAX_LOOP, fixes=False).outputs
    w, b, loss = OPTAX[constructor]
    np.testing.assert_allclose(outputs['params["w"]'], w, rtol=1e-13)
    assert float(outputs['params["b"]']) == pytest.approx(b, rel=1e-13)
    assert float(outputs["loss_fn(params)"]) == pytest.approx(loss, rel=1e-12)


@pytest.mark.parametrize("lines, message", [
    ("opt = optax.adam(lambda step: 0.1)", "optax.adam(learning_rate=...): a schedule is not supported"),
    ("opt = optax.adam(0.1, nesterov=True)", "optax.adam(nesterov=True) is not supported"),
    ("opt = optax.sgd()", "optax.sgd() needs learning_rate"),
    ("opt = optax.sgd(0.1, momentun=0.9)", "got 'momentun'"),
    ("opt = optax.adamw(0.1)\nstate = opt.init(params)\nu, state = opt.update(params, state)",
     "the decayed weights need the params"),
    ("opt = optax.sgd(0.1)\nother = optax.adam(0.1)\nu, s = opt.update(params, other.init(params))",
     "state must be what this optimizer's init or update gave"),
    ("opt = optax.sgd(0.1)\nz = opt.step(params)", "gradcli reads init(params) and update(grads, state, params)"),
    ("opt = sgd(0.1)", "unknown function 'sgd'"),
])
def test_an_optax_use_gradcli_does_not_read_is_refused_with_its_reason(lines, message):
    with pytest.raises(GradcliError, match=re.escape(message)):
        api.evaluate(OPTAX_HEAD + lines + "\nz = loss_fn(params)\n", fixes=False)


KERAS_HEAD = """import tensorflow as tf
w = tf.Variable([0.5, -0.5], dtype=tf.float64)
b = tf.Variable(0.2, dtype=tf.float64)
X = tf.constant([[1.0, 2.0], [2.0, 1.0], [0.0, 1.0]], dtype=tf.float64)
y = tf.constant([1.0, 2.0, 0.5], dtype=tf.float64)
"""
KERAS_LOOP = """for step in range(4):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((tf.linalg.matvec(X, w) + b - y) ** 2)
    grads = tape.gradient(loss, [w, b])
    optimizer.apply_gradients(zip(grads, [w, b]))
print(w)
print(b)
"""
KERAS = {  # the optimizer: (w, b) after four steps as Keras 3.15.1 (TensorFlow 2.21.0) printed them; Keras
    # holds the learning rate in float32 and casts 0.9 through float32, and so does gradcli here
    "optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)":
        ([0.8073501233350495, -0.11562074062453376], 0.4905283954119976),
    "optimizer = tf.keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)":
        ([0.9076501038650273, 0.02983923551549586], 0.616368377864457),
    "optimizer = tf.keras.optimizers.SGD(0.05, 0.8, True)":
        ([0.8865940875751729, -0.014663451084465137], 0.5678538861558438),
    "optimizer = tf.keras.optimizers.Adam(learning_rate=0.1)":
        ([0.8682687328901971, -0.12945498599474603], 0.5713905226787094),
    "optimizer = tf.keras.optimizers.Adam(0.05, beta_1=0.8, beta_2=0.99, epsilon=1e-6)":
        ([0.6939000156466804, -0.3057984998634391], 0.39431445576656166),
}


@pytest.mark.parametrize("constructor", list(KERAS))
def test_a_keras_custom_training_loop_applies_keras_s_updates(constructor):
    outputs = api.evaluate(KERAS_HEAD + constructor + "\n" + KERAS_LOOP, fixes=False).outputs
    w, b = KERAS[constructor]
    np.testing.assert_allclose(outputs["w"], w, rtol=1e-14)
    assert float(outputs["b"]) == pytest.approx(b, rel=1e-14)


@pytest.mark.parametrize("lines, message", [
    ("optimizer = tf.keras.optimizers.Adam(0.1, weight_decay=0.01)", "Adam(weight_decay=...) is not supported"),
    ("optimizer = tf.keras.optimizers.SGD(0.1, use_ema=True)", "SGD(use_ema=...) is not supported"),
    ("optimizer = tf.keras.optimizers.SGD(0.1)\noptimizer.minimize(w)", "gradcli reads apply_gradients(zip(grads, variables))"),
    ("optimizer = tf.keras.optimizers.SGD(0.1)\noptimizer.apply_gradients(zip([w], [X]))",
     "each variable must be a tf.Variable of the program"),
    ("optimizer = tf.keras.optimizers.SGD(0.1)\noptimizer.apply_gradients(zip([tf.constant(1.0, tf.float64)], [w]))",
     "apply_gradients: a gradient of shape () for a variable of shape (2,)"),
])
def test_a_keras_optimizer_use_gradcli_does_not_read_is_refused(lines, message):
    with pytest.raises(GradcliError, match=re.escape(message)):
        api.evaluate(KERAS_HEAD + lines + "\nz = w\n", fixes=False)


def test_zip_of_lists_holding_values_of_two_shapes_pairs_them():
    # a list iterated is its items (before, `zip([w, b], ...)` stacked w and b into one array and failed)
    program = KERAS_HEAD + ("for v, k in zip([w, b], [3.0, 4.0]):\n    last = v * k\n"
                            "pairs = zip([w, b], [1.0, 2.0])\nz = pairs[1][0] + pairs[1][1]\n")
    outputs = api.evaluate(program, fixes=False).outputs
    assert float(outputs["z"]) == 2.2


NAMED = """import torch
import torch.nn as nn

class Affine(nn.Module):
    def __init__(self, w, b):
        super().__init__()
        self.w = nn.Parameter(torch.tensor(w, dtype=torch.float64))
        self.b = nn.Parameter(torch.tensor(b, dtype=torch.float64))

    def forward(self, x):
        return x * self.w + self.b

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = Affine([1.0, 2.0], 0.5)
        self.scale = nn.Parameter(torch.tensor(3.0, dtype=torch.float64))
        self.second = Affine([0.5, -1.0], -0.25)

    def forward(self, x):
        return self.scale * self.second(torch.tanh(self.first(x)))

net = Net()
net.train()
x = torch.tensor([0.3, -0.7], dtype=torch.float64)
loss = net(x).pow(2).sum()
loss.backward()
for name, p in net.named_parameters():
    print(name, p.grad)
print(list(net.parameters())[0])
net.eval()
print(net(x))
"""


def test_named_parameters_list_train_and_eval_of_a_module_are_pytorch_s():
    # PyTorch 2.13.0 printed (float64): a module's own parameters first, then each sub-module's:
    # scale 1.34496431551273776, first.w [0.12380256555706966, 2.86081145867665132], first.b
    # -3.67419829387165109, second.w [0.98033802420448424, -6.01214708343424142], second.b
    # 9.86969259599307946; list(net.parameters())[0] is scale (3.); net(x) [0.24605515540177353, 1.39889361059707307]
    outputs = api.evaluate(NAMED, fixes=False).outputs
    grads = [outputs[k] for k in ("p.grad #1", "p.grad #2", "p.grad #3", "p.grad #4", "p.grad")]
    expected = [1.34496431551273776, [0.12380256555706966, 2.86081145867665132], -3.67419829387165109,
                [0.98033802420448424, -6.01214708343424142], 9.86969259599307946]
    for got, want in zip(grads, expected):
        np.testing.assert_allclose(got, want, rtol=1e-13)
    assert float(outputs["list(net.parameters())[0]"]) == 3.0
    np.testing.assert_allclose(outputs["net(x)"], [0.24605515540177353, 1.39889361059707307], rtol=1e-14)
