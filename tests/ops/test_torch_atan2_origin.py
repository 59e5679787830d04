"""torch.atan2's gradient at the origin is PyTorch's 0 (it masks 1 / (x^2 + y^2) where that is
infinite); NumPy-spelled arctan2 keeps NaN there (JAX, TensorFlow and autograd give NaN), with its
warning. Expected values printed by PyTorch 2.13.0+cpu in float64:
x.atan2(y).sum().backward() for x = [0, 1, 0], y = [0, 2, -1] gives x.grad [0.0, 0.4, -1.0],
y.grad [-0.0, -0.2, -0.0]."""
import json
import math
import subprocess
import sys

import pytest


def _run(program: str, *options: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "gradcli", *options, "--format", "json"], input=program,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_torch_atan2_has_pytorch_s_zero_slopes_at_the_origin_and_its_own_elsewhere():
    out = _run("import torch\nx = torch.tensor([0.0, 1.0, 0.0]); y = torch.tensor([0.0, 2.0, -1.0])\n"
               "x.atan2(y).sum()\n", "grad", "--wrt", "x", "--wrt", "y")
    assert out["diagnostics"] == []
    assert out["gradients"]["x"]["value"] == pytest.approx([0.0, 0.4, -1.0], rel=1e-15)
    y = out["gradients"]["y"]["value"]
    assert y == pytest.approx([0.0, -0.2, 0.0], rel=1e-15) and math.copysign(1, y[0]) == -1.0


def test_numpy_arctan2_at_the_origin_is_nan_with_its_warning():
    out = _run("import numpy as np\nx = np.array(0.0); y = np.array(0.0)\nnp.arctan2(x, y)\n",
               "grad", "--wrt", "x", "--wrt", "y")
    assert out["gradients"]["x"]["value"] == "NaN"
    # one warning, reaching both gradients (numerics/diagnostics.py: one cause, one note)
    assert [d["kind"] for d in out["diagnostics"]] == ["nonfinite_gradient"]


def test_derive_spells_pytorch_s_atan2_back():
    done = subprocess.run([sys.executable, "-m", "gradcli", "derive", "--wrt", "x"], capture_output=True, text=True,
                          input="import torch\nx = torch.tensor(1.0); y = torch.tensor(2.0)\ntorch.atan2(x, y) * x\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == ["t1 = where((x == 0.0) * (y == 0.0), 1.0, hypot(x, y))",
                                             "d__dx = torch.atan2(x, y) + x * (y / t1) / t1"]
