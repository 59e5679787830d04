"""`with torch.autocast(...)` regions: the ops of PyTorch's autocast tables compute in the
region's type (matrix products) or in float32 (on CUDA: exp, softmax, sums, losses ...), the
others in their arguments' types. The CPU region is checked against what PyTorch 2.13.0+cpu
printed for the same program (float32 leaves, recorded below; PyTorch is not imported by the
tests); the CUDA region, which a CPU build cannot run, against its tables computed with NumPy."""
import ml_dtypes
import numpy as np
import pytest

from gradcli import api
from cli_helpers import invoke

CPU_REGION = """import torch
import torch.nn.functional as F
x = torch.tensor([[1.5, 2.0], [3.0, 4.0]], requires_grad=True)
w = torch.tensor([[0.5, -1.0], [0.25, 3.3]], requires_grad=True)
with torch.autocast("cpu", dtype=torch.bfloat16):
    h = x @ w
    e = torch.exp(h)
    z = h + x
    l = F.mse_loss(h, x)
y = e.sum() + z.sum() + l
y.backward()
"""


def test_a_cpu_region_computes_as_pytorch_does():
    # PyTorch 2.13.0+cpu: h bfloat16 [[1.25, 5.09375], [2.5, 10.1875]]; e (exp of a bfloat16
    # value, not in the CPU tables: bfloat16) [[3.484375, 163.0], [12.1875, 26624.0]]; z (bfloat16
    # + float32: float32) [[2.75, 7.09375], [5.5, 14.1875]]; l (mse_loss: float32) 12.042236328125;
    # x.grad [[-162.875, 547.453125], [-26622.75, 87549.90625]], w.grad [[45.5, 79872.0], [60.5, 107008.0]]
    result = api.evaluate(CPU_REGION + "gx = x.grad\ngw = w.grad", prints=["h", "e", "z", "l", "gx", "gw"], fixes=False).outputs
    assert result["h"].tolist() == [[1.25, 5.09375], [2.5, 10.1875]]
    assert result["e"].tolist() == [[3.484375, 163.0], [12.1875, 26624.0]]
    assert result["z"].tolist() == [[2.75, 7.09375], [5.5, 14.1875]]
    assert result["l"] == 12.042236328125
    assert result["gx"].tolist() == [[-162.875, 547.453125], [-26622.75, 87549.90625]]
    assert result["gw"].tolist() == [[45.5, 79872.0], [60.5, 107008.0]]


def test_a_cuda_region_computes_exp_and_sums_in_float32():
    program = ("import torch\nwith torch.autocast(device_type='cuda', dtype=torch.float16):\n"
               "    h = x @ w\n    e = torch.exp(h)\n    s = e.sum()")
    x = np.array([[1.5, 2.0], [3.0, 4.1]])
    w = np.array([[0.5, -1.0], [0.25, 3.3]])
    h = (x.astype(np.float16).astype(np.float32) @ w.astype(np.float16).astype(np.float32)).astype(np.float16)
    e = np.exp(h.astype(np.float32))  # exp is in CUDA's float32 table: float32, no overflow at 13.6
    result = api.evaluate(program, feeds={"x": x, "w": w}, prints=["h", "e", "s"], fixes=False).outputs
    assert result["h"].tolist() == h.astype(np.float64).tolist()
    assert result["e"].tolist() == e.astype(np.float64).tolist()
    assert np.float32(result["s"]) == result["s"] and result["s"] == pytest.approx(float(e.astype(np.float64).sum()),
                                                                                   rel=1e-7)


def test_a_disabled_region_and_the_code_after_a_region_are_not_cast():
    x = np.array([[1.001, 2.0], [3.0, 4.0]])
    off = "import torch\nwith torch.autocast('cpu', enabled=False):\n    h = x @ x"
    assert api.evaluate(off, feeds={"x": x}, fixes=False).outputs["h"].tolist() == (x @ x).tolist()
    after = "import torch\nwith torch.autocast('cpu'):\n    h = x @ x\ny = x @ x"
    assert api.evaluate(after, feeds={"x": x}, fixes=False).outputs["y"].tolist() == (x @ x).tolist()


def test_an_autocast_of_another_device_is_refused():
    result = invoke("eval", "-e", "import torch\nwith torch.autocast('mps'):\n    y = x @ x", "--set", "x=[[1.0]]")
    assert result.exit_code == 2, result.output
    assert "give device_type 'cuda' or 'cpu' (gradcli knows PyTorch's autocast tables of those two)" in \
        " ".join(result.output.split())


@pytest.mark.parametrize("call, region_type", [
    # PyTorch 2.13.0+cpu under torch.autocast('cpu') (bfloat16): einsum, tensordot, multi_dot, a @ v, mm,
    # F.linear give bfloat16; torch.mv, torch.dot, torch.inner, torch.outer, softmax, prod give float32
    ("torch.einsum('ij,jk->ik', a, a)", True), ("torch.tensordot(a, a, dims=1)", True),
    ("torch.linalg.multi_dot([a, a])", True), ("a @ v", True), ("torch.mm(a, a)", True), ("F.linear(a, a)", True),
    ("torch.mv(a, v)", False), ("torch.dot(v, v)", False), ("torch.outer(v, v)", False), ("F.softmax(a, 0)", False),
    ("a.prod()", False),
])
def test_which_cpu_ops_compute_in_the_region_s_type(call, region_type):
    a = np.array([[1.001, 2.0, -0.3], [3.0, 4.0, 0.7], [0.1, 0.2, 0.3]])
    v = np.array([1.003, -2.0, 0.5])
    program = f"import torch\nimport torch.nn.functional as F\nwith torch.autocast('cpu'):\n    y = {call}"
    got = api.evaluate(program, feeds={"a": a, "v": v}, prints=["y"], fixes=False).outputs["y"]
    in_bfloat16 = np.array_equal(np.asarray(got).astype(ml_dtypes.bfloat16).astype(np.float64), got)
    assert in_bfloat16 == region_type
