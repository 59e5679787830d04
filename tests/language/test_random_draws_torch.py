"""Seeded PyTorch draws (the CPU generator, mt19937): the numbers PyTorch 2.13.0+cpu prints for the
same programs, bit for bit (recorded below); a gradient through drawn data and a drawn leaf; the
refusals of what gradcli cannot reproduce."""
from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from gradcli import api


def outputs(program: str, names: list[str]) -> dict:
    return api.evaluate(program + "".join(f"print({name})\n" for name in names), fixes=False).outputs


def gradcli(*args: str, program: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gradcli", *args], input=program, capture_output=True, text=True)


def test_torch_draws_after_manual_seed_are_pytorchs_in_program_order():
    program = ("import torch\ntorch.manual_seed(0)\na = torch.randn(3)\nb = torch.rand(2, 2)\n"
               "c = torch.randint(0, 10, (4,), device='cpu')\nd = torch.normal(2.5, 0.3, size=(3,))\n"
               "w = torch.randn(2, requires_grad=True)\ne = torch.randn_like(a)\np = torch.randperm(5)\n"
               "f = torch.rand(2, dtype=torch.float64)\n")
    out = outputs(program, ["a", "b", "c", "d", "w", "e", "p", "f"])
    # PyTorch 2.13.0+cpu, each printed as .double().flatten().tolist()
    assert out["a"].tolist() == [1.5409960746765137, -0.293428897857666, -2.1787893772125244]
    assert out["b"].ravel().tolist() == [0.455627977848053, 0.6323062777519226, 0.3488934636116028,
                                         0.40171730518341064]
    assert out["c"].tolist() == [6.0, 9.0, 8.0, 6.0]
    assert out["d"].tolist() == [2.670529365539551, 2.2842228412628174, 2.3789968490600586]
    assert out["w"].tolist() == [-0.5966353416442871, 0.18203648924827576]
    assert out["e"].tolist() == [-0.8566746115684509, 1.1006041765213013, -1.0711873769760132]
    assert out["p"].tolist() == [3.0, 1.0, 0.0, 4.0, 2.0]
    assert out["f"].tolist() == [0.6650381757501495, 0.7848739004551177]


def test_a_drawn_leaf_takes_its_gradient_and_a_loop_draws_anew():
    program = ("import torch\ntorch.manual_seed(0)\na = torch.randn(3)\nb = torch.rand(2, 2)\n"
               "c = torch.randint(0, 10, (4,))\nd = torch.normal(2.5, 0.3, size=(3,))\n"
               "w = torch.randn(2, requires_grad=True)\nloss = (w ** 2).sum()\nloss.backward()\ng = w.grad\n")
    assert outputs(program, ["g"])["g"].tolist() == [-1.1932706832885742, 0.3640729784965515]  # PyTorch 2.13.0
    looped = "import torch\ntorch.manual_seed(1)\nfor i in range(3):\n    last = torch.randn(2)\nlast = last\n"
    # PyTorch 2.13.0: the third torch.randn(2) after torch.manual_seed(1)
    assert outputs(looped, ["last"])["last"].tolist() == [-0.4519059658050537, -0.16613022983074188]


def test_the_gradient_of_a_least_squares_loss_over_drawn_data_is_the_analytic_one():
    program = ("import torch\ntorch.manual_seed(42)\nX = torch.randn(3, 2)\ny = torch.rand(3)\n"
               "n = torch.normal(-1.0, 4.0, (5,), dtype=torch.float64)\nr = torch.randint(5, (6,))\n"
               "q = torch.randint(-3, 1000, (2, 2))\nw = torch.tensor([0.5, -1.0], requires_grad=True)\n"
               "loss = ((X @ w - y) ** 2).mean()\nloss.backward()\ng = w.grad\n")
    out = outputs(program, ["X", "y", "n", "r", "q", "g"])
    # PyTorch 2.13.0+cpu
    X = np.array([0.33669036626815796, 0.12880940735340118, 0.23446236550807953, 0.23033303022384644,
                  -1.1228563785552979, -0.18632829189300537]).reshape(3, 2)
    y = np.array([0.8694044351577759, 0.5677152872085571, 0.7410940527915955])
    assert out["X"].ravel().tolist() == X.ravel().tolist() and out["y"].tolist() == y.tolist()
    assert out["n"].tolist() == [-5.91358672110942, 1.1176443071200568, 3.884405519573974, -0.39563428581800497,
                                 -2.3275592643598]
    assert out["r"].tolist() == [4.0, 2.0, 4.0, 2.0, 0.0, 0.0] and out["q"].ravel().tolist() == [810.0, 520.0, 787.0,
                                                                                                816.0]
    w = np.array([0.5, -1.0])
    np.testing.assert_allclose(out["g"], 2 * X.T @ (X @ w - y) / 3, rtol=1e-13)
    # (PyTorch computes in float32 and prints [0.5428605675697327, -0.03715401887893677]; gradcli in float64)
    np.testing.assert_allclose(out["g"], [0.5428605675697327, -0.03715401887893677], rtol=1e-6)


def test_the_pytorch_polynomial_tutorial_draws_its_weights_as_pytorch_does():
    # "Learning PyTorch with Examples" (Tensors and autograd), with torch.manual_seed(0) before its draws
    program = ("import torch\nimport math\ntorch.manual_seed(0)\ndtype = torch.float\ndevice = torch.device('cpu')\n"
               + "".join(f"{n} = torch.randn((), device=device, dtype=dtype, requires_grad=True)\n" for n in "abcd")
               + "x = torch.linspace(-math.pi, math.pi, 200, device=device, dtype=dtype)\ny = torch.sin(x)\n"
               "y_pred = a + b * x + c * x ** 2 + d * x ** 3\nloss = (y_pred - y).pow(2).sum()\nloss.backward()\n"
               "print(a.item(), b.item(), c.item(), d.item())\nprint(a.grad)\n")
    out = api.evaluate(program, fixes=False).outputs
    # PyTorch 2.13.0+cpu: a.item(), b.item(), c.item(), d.item()
    assert [float(out[f"{n}.item()"]) for n in "abcd"] == [1.5409960746765137, -0.293428897857666,
                                                           -2.1787893772125244, 0.5684312582015991]
    x = np.linspace(-math.pi, math.pi, 200)
    a, b, c, d = 1.5409960746765137, -0.293428897857666, -2.1787893772125244, 0.5684312582015991
    np.testing.assert_allclose(float(out["a.grad"]), np.sum(2 * (a + b * x + c * x ** 2 + d * x ** 3 - np.sin(x))),
                               rtol=1e-5)  # (d loss / d a, analytic; PyTorch's x is float32)


def test_sixteen_normals_or_more_are_pytorchs_vectorized_and_blocked_draws():
    program = ("import torch\ntorch.manual_seed(3)\na = torch.randn(17)\nb = torch.normal(1.0, 0.5, (40, 25))\n"
               "c = torch.randn(20, dtype=torch.float64)\nd = torch.randn(2)\n")
    out = outputs(program, ["a", "b", "c", "d"])
    # PyTorch 2.13.0+cpu on an AVX2 processor (float32: its AVX2 code; float64: blocks of 16)
    assert out["a"].tolist() == [-0.07664429396390915, 0.9311244487762451, -0.5144619941711426, -1.651665449142456,
                                 1.0460227727890015, 0.5221869945526123, -0.16680915653705597, 0.05303340032696724,
                                 0.4046071469783783, 2.2565572261810303, 1.8692600727081299, -1.1952342987060547,
                                 0.997922420501709, 0.45918044447898865, 2.436397075653076, -0.1468081772327423,
                                 0.4851140081882477]
    b = out["b"].ravel().tolist()
    assert b[:3] == [0.853543758392334, 0.825955331325531, 1.1743731498718262]
    assert b[-3:] == [0.6100234985351562, 0.8043451905250549, 1.3745944499969482]
    assert math.fsum(b) == 1000.6343849897385  # (math.fsum of PyTorch's 1000 values)
    assert out["c"].tolist() == [1.1933595010573979, -1.6601231290693934, -0.8243207799485482, 1.07302823059355,
                                 0.4628124849221319, -0.6784432193178486, -0.06855371199579909, -0.9695510548647954,
                                 1.6236137783810365, -0.3072480044327871, -0.7827259387885354, -0.9381061614046373,
                                 -0.4271945613141318, 0.9883791818029475, -0.6139214704734564, 1.1490151781953022,
                                 -0.3292055059593173, 0.21844589809631595, 0.3088326932706458, -0.9775792069614351]
    assert out["d"].tolist() == [-0.5375573039054871, -0.5158706903457642]


@pytest.mark.parametrize("line, message", [
    ("x = torch.randn(2)",
     "torch.randn draws from a generator the program never seeded, whose numbers gradcli cannot reproduce: seed it "
     "first (torch.manual_seed(0); the library then draws the numbers gradcli reproduces), or write the values in the "
     "program, or make the value an input and give it with --set"),
    ("torch.manual_seed(1); x = torch.normal(torch.zeros(3), 1.0)",
     "torch.normal(mean, std) of tensors is not reproduced by gradcli: give numbers and size=, as in "
     "torch.normal(0.0, 1.0, size=(3,))"),
    ("torch.manual_seed(1); x = torch.rand(2, generator=None)",
     "torch.rand() takes no 'generator' here (gradcli reproduces the default generator's draws on the CPU)"),
    ("torch.manual_seed(1); x = torch.rand(2, device='cuda')",
     "torch.rand(device=...): gradcli reproduces the CPU generator's draws (a GPU's generator is another, Philox); "
     "draw on the CPU (device='cpu')"),
    ("torch.manual_seed(1); x = torch.bernoulli(torch.ones(2) * 0.5)",
     "torch.bernoulli draws random numbers, which gradcli does not reproduce (it reproduces NumPy's, JAX's and PyTorch's "
     "seeded draws listed in docs/language.md): write the values in the program (x = torch.tensor([...])), or make x an "
     "input and give it with --set x='[...]'"),
])
def test_torch_draws_gradcli_cannot_match_are_refused(line, message):
    done = gradcli("eval", program="import torch\n" + line + "\nprint(1.0)\n")
    assert done.returncode == 2, done.stdout
    first = done.stderr.splitlines()[0]
    assert first.startswith("<stdin>:2:") and first.endswith(f"error: {message}"), done.stderr
