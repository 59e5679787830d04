"""PyTorch's `torch.median(x)` / `x.median()` of every element, against what PyTorch 2.13.0+cpu
printed (float64): the lower of the two middle values, its gradient split evenly among the elements
equal to it. Before, every torch.median was refused."""
from __future__ import annotations

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError


def test_torch_median_is_the_lower_middle_and_splits_its_gradient_among_ties():
    out = api.evaluate("""
import torch
x = torch.tensor([3.0, 1.0, 3.0, 3.0, 0.0], dtype=torch.float64, requires_grad=True)
m = x.median()
(m * 3).backward()
print(m, x.grad)
y = torch.tensor([2.0, 2.0, 5.0, 1.0], dtype=torch.float64, requires_grad=True)
n = torch.median(y)
(n * 3).backward()
print(n, y.grad)
z = torch.tensor([[1.0, 5.0], [3.0, 2.0]], dtype=torch.float64, requires_grad=True)
k = torch.median(z)
k.backward()
print(k, z.grad)
""", fixes=False).outputs
    # PyTorch 2.13.0 printed:
    assert (out["m"], out["n"], out["k"]) == (3.0, 2.0, 2.0)
    np.testing.assert_array_equal(out["x.grad"], [1.0, 0.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(out["y.grad"], [1.5, 1.5, 0.0, 0.0])
    np.testing.assert_array_equal(out["z.grad"], [[0.0, 0.0], [0.0, 1.0]])


def test_torch_median_along_a_dim_is_still_refused():
    with pytest.raises(GradcliError, match=r"torch.median with dim gives a tuple \(values, indices\)"):
        api.evaluate("import torch\nx = torch.tensor([[1.0, 2.0], [3.0, 4.0]])\nprint(torch.median(x, 1))\n",
                     fixes=False)
