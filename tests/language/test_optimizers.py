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
    ("opt = torch.optim.SGD([w * 2], lr=0.1)", "write the parameters as a list of the tensors ([w, b])"),
    ("params = (w, b)\nopt = torch.optim.SGD(params, lr=0.1)", "a model's .parameters() has no model here"),
    ("v = w * 2\nopt = torch.optim.SGD([v], lr=0.1)", "v is not a leaf tensor with requires_grad=True"),
    ("opt = torch.optim.SGD([w], lr=0.1, momentun=0.9)", "got 'momentun'"),
    ("opt = torch.optim.Adam([w], amsgrad=True)", "amsgrad=True) is not supported"),
    ("opt = torch.optim.SGD([w], lr=0.1, nesterov=True)", "Nesterov momentum requires a momentum and zero dampening"),
    ("opt = torch.optim.SGD([w], lr=0.1)\nopt.state_dict()", "gradcli reads zero_grad() and step()"),
])
def test_an_optimizer_gradcli_does_not_read_is_refused_with_its_reason(line, message):
    with pytest.raises(GradcliError, match=re.escape(message)):
        api.evaluate(HEAD + line + "\nz = w\n", fixes=False)
