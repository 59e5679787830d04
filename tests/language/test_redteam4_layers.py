"""PyTorch's functional batch norm as a training step writes it (`F.batch_norm(x, None, None, w, b,
training=True)`) and as evaluation does (running statistics), against what PyTorch 2.13.0+cpu
printed for the same float64 code. Before, F.batch_norm was an unknown function."""
from __future__ import annotations

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

SETUP = """
import torch
import torch.nn.functional as F
x = torch.tensor([[[1.0, 2.0], [0.5, 4.0]], [[-1.0, 0.0], [2.0, 3.0]], [[0.3, 0.1], [1.0, 1.5]]], dtype=torch.float64, requires_grad=True)
w = torch.tensor([2.0, 0.5], dtype=torch.float64)
b = torch.tensor([0.1, -0.1], dtype=torch.float64)
"""


def outputs(program: str) -> dict:
    return api.evaluate(program, fixes=False).outputs


def test_batch_norm_in_training_uses_the_batch_statistics_and_differentiates():
    out = outputs(SETUP + """
y = F.batch_norm(x, None, None, w, b, True, 0.1, 1e-3)
(y * torch.arange(12.0, dtype=torch.float64).reshape(3, 2, 2)).sum().backward()
print(y)
print(x.grad)
""")
    # PyTorch 2.13.0 printed (float64):
    np.testing.assert_allclose(np.ravel(out["y"]), [
        1.395752275845024, 3.5553394022533973, -0.7299037580580914, 0.7398716774107885, -2.9234219769717225,
        -0.7638348505633492, -0.09999999999999998, 0.31993583870539427, -0.11595871264083726, -0.5478761379225119,
        -0.5199358387053943, -0.3099679193526971], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(np.ravel(out["x.grad"]), [
        -7.326061497417601, -1.1796734186424291, -2.297008554837277, -0.9267123945848761, -6.661314896517704,
        -0.5149268177425325, -0.20996791935269712, 0.481499439794699, 7.159874847192627, 8.52210178312764,
        1.198243915026878, 1.7539455139532731], rtol=1e-12, atol=1e-14)


def test_batch_norm_in_evaluation_uses_the_running_statistics():
    out = outputs(SETUP + """
rm = torch.tensor([0.5, 1.0], dtype=torch.float64)
rv = torch.tensor([2.0, 0.5], dtype=torch.float64)
z = F.batch_norm(x, rm, rv, weight=w, eps=1e-5)
print(z)
""")
    np.testing.assert_allclose(np.ravel(out["z"]), [  # PyTorch 2.13.0 printed
        0.7071050134262237, 2.121315040278671, -0.3535498551124, 2.1212991306744, -2.121315040278671,
        -0.7071050134262237, 0.7070997102248, 1.4141994204496, -0.2828420053704895, -0.565684010740979, 0.0,
        0.3535498551124], rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("call, words", [
    ("F.batch_norm(x, torch.zeros(2), torch.ones(2), training=True)", "updates running_mean and running_var in place"),
    ("F.batch_norm(x, None, None)", "normalizes by running_mean and running_var: give them"),
    ("F.batch_norm(x[:1, :, :1], None, None, training=True)", "more than 1 value per channel (PyTorch: ValueError)"),
])
def test_what_batch_norm_cannot_give_is_refused(call, words):
    with pytest.raises(GradcliError, match=words.replace("(", r"\(").replace(")", r"\)")):
        outputs(SETUP + f"print({call})\n")
