"""PyTorch's autograd and HIPS autograd inside a program, against the values PyTorch 2.13.0 and
autograd 1.9.1 printed for the same code (tutorial_snippets/torch_autograd/*.json record them, with the
versions; the focused PyTorch cases below were run with torch 2.13.0+cpu and their printed values
copied; the autograd ones are checked against their analytic derivatives), and the refusals
PyTorch gives, positioned.

The snippets of PyTorch's and autograd's official tutorials are in tutorial_snippets/torch_autograd/
(they run and print what the library printed), its refused/ (the library raised; gradcli refuses
at the same line, naming the library's exception) and its pending/ (not yet: each is expected to fail, so that one that starts to pass is
moved). Count them with
`PYTHONPATH=$PWD python -m pytest tests/language/test_torch_autograd.py -q -k snippet`.
"""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError
from snippet_compare import mismatches, outputs, refusal, refusal_mismatches

HERE = pathlib.Path(__file__).parent / "tutorial_snippets" / "torch_autograd"
LIBRARIES = ("pytorch_", "autograd_")
RUNS = sorted(p for p in HERE.glob("*.json") if p.name.startswith(LIBRARIES))
REFUSED = sorted(p for p in (HERE / "refused").glob("*.json") if p.name.startswith(LIBRARIES))
PENDING = sorted(p for p in (HERE / "pending").glob("*.json") if p.name.startswith(LIBRARIES))


def _record(path):
    record = json.loads(path.read_text())
    assert record["versions"]["torch"] == "2.13.0+cpu" and record["versions"]["autograd"] == "1.9.1"
    return record


@pytest.mark.parametrize("path", RUNS, ids=[p.stem for p in RUNS])
def test_a_snippet_prints_what_the_library_printed(path):
    record = _record(path)
    assert record["error"] is None
    assert mismatches(record, outputs(record["code"])) == []


@pytest.mark.parametrize("path", REFUSED, ids=[p.stem for p in REFUSED])
def test_a_snippet_the_library_refuses_is_refused_at_its_line(path):
    record = _record(path)
    assert refusal_mismatches(record, outputs) == []


@pytest.mark.parametrize("path", PENDING, ids=[p.stem for p in PENDING])
def test_a_pending_snippet_does_not_run_yet(path):
    record = _record(path)
    try:
        printed = outputs(record["code"])
    except GradcliError:
        return
    assert record["error"] is not None or mismatches(record, printed), "it passes now: move it up a folder"


def test_the_snippet_counts():
    counts = {lib: sum(p.name.startswith(lib) for p in RUNS + REFUSED) for lib in LIBRARIES}
    assert counts == {"pytorch_": 28, "autograd_": 10}, counts




# ---------------------------------------------------------------- .grad and backward()
def test_grad_is_none_before_backward_then_the_gradient():
    out = outputs("import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\nprint(x.grad)\n"
              "y = (x ** 3).sum()\ny.backward()\ng = x.grad\nprint(g)\n")
    assert out["x.grad"] is None
    np.testing.assert_allclose(out["g"], [3.0, 12.0])  # 3 x^2 (torch 2.13: tensor([ 3., 12.]))


def test_backward_accumulates_and_zero_clears():
    code = ("import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\ny = (x * x).sum()\n"
            "y.backward(retain_graph=True)\ny.backward(retain_graph=True)\nfirst = x.grad.clone()\nprint(first)\n"
            "x.grad.zero_()\ny.backward()\nprint(x.grad)\n")
    out = outputs(code)
    np.testing.assert_allclose(out["first"], [4.0, 8.0])   # torch: tensor([4., 8.])
    np.testing.assert_allclose(out["x.grad"], [2.0, 4.0])  # torch: tensor([2., 4.])


def test_a_name_holding_grad_sees_in_place_accumulation_and_zeroing():
    # torch 2.13: `first = x.grad` aliases it; the second backward adds in place, zero_() zeroes in place
    code = ("import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\ny = (x * x).sum()\n"
            "y.backward(retain_graph=True)\nfirst = x.grad\ny.backward(retain_graph=True)\nsecond = first * 1\n"
            "x.grad.zero_()\nprint(second, first)\n")
    out = outputs(code)
    np.testing.assert_allclose(out["second"], [4.0, 8.0])
    np.testing.assert_allclose(out["first"], [0.0, 0.0])


def test_backward_twice_without_retain_graph_is_refused_where_values_were_saved():
    err = refusal("import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\ny = (x * x).sum()\n"
                  "y.backward()\ny.backward()\n")
    assert err.pos.line == 5 and "RuntimeError" in str(err) and "retain_graph=True" in str(err)


def test_backward_twice_through_additions_only_succeeds_and_accumulates():
    # PyTorch 2.13: AddBackward0 and SumBackward0 save no tensors, so this prints tensor([2., 2.])
    out = outputs("import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\ny = (x + 2).sum()\n"
              "y.backward()\ny.backward()\nprint(x.grad)\n")
    np.testing.assert_allclose(out["x.grad"], [2.0, 2.0])


def test_backward_of_a_non_scalar_needs_gradient():
    err = refusal("import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\ny = x * 2\ny.backward()\n")
    assert err.pos.line == 4 and "only for scalar outputs" in str(err)
    out = outputs("import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\ny = x * x\n"
              "y.backward(gradient=torch.tensor([1.0, 0.5]))\nprint(x.grad)\n")
    np.testing.assert_allclose(out["x.grad"], [2.0, 2.0])  # torch: tensor([2., 2.])


def test_backward_of_what_needs_no_gradient_is_refused():
    err = refusal("import torch\nx = torch.tensor([1.0, 2.0])\ny = (x * x).sum()\ny.backward()\n")
    assert err.pos.line == 4 and "does not require grad" in str(err)


def test_grad_of_a_non_leaf_is_none_with_a_warning():
    result = api.evaluate("import torch\nx = torch.tensor(2.0, requires_grad=True)\nz = x * 3\ny = z * z\n"
                          "y.backward()\nprint(z.grad)\nprint(x.grad)\n", fixes=False)
    assert result.outputs["z.grad"] is None
    np.testing.assert_allclose(result.outputs["x.grad"], 36.0)  # 18 x: torch tensor(36.)
    assert any("not a leaf" in str(w) for w in result.graph.warnings)


def test_requires_grad_follows_no_grad_enable_grad_and_detach():
    out = outputs("import torch\nx = torch.ones(2, requires_grad=True)\nprint(x.requires_grad)\n"
              "with torch.no_grad():\n    a = x * 2\n    with torch.enable_grad():\n        b = x * 2\n"
              "c = (x * 2).detach()\nd = x * 2\nprint(a.requires_grad, b.requires_grad, c.requires_grad, "
              "d.requires_grad)\n")
    assert [bool(out[k]) for k in ("x.requires_grad", "a.requires_grad", "b.requires_grad",
                                   "c.requires_grad", "d.requires_grad")] == [True, False, True, False, True]


def test_requires_grad_underscore_makes_a_leaf():
    out = outputs("import torch\na = torch.tensor([1.0, -2.0])\na.requires_grad_()\nb = (a * a).sum()\n"
              "b.backward()\nprint(a.grad)\n")
    np.testing.assert_allclose(out["a.grad"], [2.0, -4.0])


def test_a_gradient_used_after_no_grad_is_a_constant_to_later_backward():
    # SGD step: w is updated under no_grad, then a new loss at the new w
    out = outputs("import torch\nw = torch.tensor([1.0, 2.0], requires_grad=True)\nloss = (w * w).sum()\n"
              "loss.backward()\nwith torch.no_grad():\n    w -= 0.1 * w.grad\nprint(w)\n")
    np.testing.assert_allclose(out["w"], [0.8, 1.6])


# ---------------------------------------------------------------- torch.autograd.grad
def test_autograd_grad_unused_input_is_refused_unless_allow_unused():
    code = ("import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\n"
            "y = torch.tensor([3.0, 4.0], requires_grad=True)\nout = (x * x).sum()\n")
    err = refusal(code + "g = torch.autograd.grad(out, [x, y])\n")
    assert err.pos.line == 5 and "index 1" in str(err) and "allow_unused=True" in str(err)
    out = outputs(code + "gx, gy = torch.autograd.grad(out, [x, y], allow_unused=True)\nprint(gx, gy)\n")
    np.testing.assert_allclose(out["gx"], [2.0, 4.0])
    assert out["gy"] is None


def test_autograd_grad_create_graph_gives_second_derivatives():
    out = outputs("import torch\nx = torch.tensor(3.0, requires_grad=True)\ny = x ** 4\n"
              "g, = torch.autograd.grad(y, x, create_graph=True)\nh, = torch.autograd.grad(g, x)\nprint(g, h)\n")
    np.testing.assert_allclose([out["g"], out["h"]], [108.0, 108.0])  # 4 x^3, 12 x^2


def test_autograd_grad_without_create_graph_is_detached():
    err = refusal("import torch\nx = torch.tensor(3.0, requires_grad=True)\ny = x ** 4\n"
                  "g, = torch.autograd.grad(y, x)\nh, = torch.autograd.grad(g, x)\n")
    assert err.pos.line == 5 and "does not require grad" in str(err)


def test_backward_create_graph_then_double_backward():
    out = outputs("import torch\nx = torch.tensor(2.0, requires_grad=True)\ny = x ** 3\n"
              "g, = torch.autograd.grad(y, x, create_graph=True)\ng.backward()\nprint(x.grad)\n")
    np.testing.assert_allclose(out["x.grad"], 12.0)  # 6 x


# ---------------------------------------------------------------- torch.autograd.functional
def test_functional_vjp_and_hvp_against_torch():
    out = outputs("import torch\nfrom torch.autograd.functional import vjp, hvp\n"
              "def f(x):\n    return (x ** 3).sum()\nx = torch.tensor([1.0, 2.0])\n"
              "value, g = vjp(f, x)\nprint(value, g)\nv2, hv = hvp(f, x, torch.tensor([1.0, 1.0]))\nprint(hv)\n")
    np.testing.assert_allclose(out["value"], 9.0)
    np.testing.assert_allclose(out["g"], [3.0, 12.0])
    np.testing.assert_allclose(out["hv"], [6.0, 12.0])


# ---------------------------------------------------------------- HIPS autograd
def test_autograd_grad_value_and_grad_hessian():
    out = outputs("import autograd.numpy as np\nfrom autograd import grad, value_and_grad, hessian\n"
              "def f(x):\n    return np.sum(np.sin(x) * x)\nx = np.array([0.5, 1.0])\n"
              "print(grad(f)(x))\nv, g = value_and_grad(f)(x)\nprint(v)\nprint(hessian(f)(x))\n")
    x = np.array([0.5, 1.0])
    np.testing.assert_allclose(out["grad(f)(x)"], np.cos(x) * x + np.sin(x))
    np.testing.assert_allclose(out["v"], np.sum(np.sin(x) * x))
    np.testing.assert_allclose(out["hessian(f)(x)"], np.diag(2 * np.cos(x) - x * np.sin(x)))


def test_autograd_argnum_by_keyword_and_by_position():
    code = ("import autograd.numpy as np\nfrom autograd import grad\ndef f(a, b):\n    return a * b ** 2\n"
            "print(grad(f, argnum=1)(2.0, 3.0))\nprint(grad(f, 0)(2.0, 3.0))\n")
    out = outputs(code)
    assert float(out["grad(f, argnum=1)(2.0, 3.0)"]) == 12.0 and float(out["grad(f, 0)(2.0, 3.0)"]) == 9.0
    err = refusal("from autograd import grad\ndef f(a):\n    return a * a\nprint(grad(f, argnums=0)(2.0))\n")
    assert err.pos.line == 4 and "argnum" in str(err)


def test_holomorphic_is_refused_with_a_reason():
    err = refusal("import autograd.numpy as np\nfrom autograd import holomorphic_grad\n"
                  "def f(z):\n    return z * z\nprint(holomorphic_grad(f)(1.0))\n")
    assert err.pos.line == 5 and "complex" in str(err)
    err = refusal("import jax\ndef f(z):\n    return z * z\nprint(jax.grad(f, holomorphic=True)(1.0))\n")
    assert err.pos.line == 4 and "complex" in str(err)


def test_a_training_loop_updates_the_leaf_in_place_under_no_grad():
    # torch 2.13.0 printed tensor(2.1071, requires_grad=True) and tensor(0.0298, grad_fn=<MeanBackward0>)
    code = ("import torch\nx = torch.tensor([1.0, 2.0, 3.0])\ny = torch.tensor([2.0, 4.0, 6.5])\n"
            "w = torch.tensor(0.5, requires_grad=True)\nfor step in range(20):\n"
            "    loss = ((x * w - y) ** 2).mean()\n    loss.backward()\n    with torch.no_grad():\n"
            "        w -= 0.05 * w.grad\n        w.grad.zero_()\nprint(w)\nprint(loss)\n")
    out = outputs(code)
    assert float(out["w"]) == pytest.approx(2.1071, abs=5e-5)
    assert float(out["loss"]) == pytest.approx(0.0298, abs=5e-5)


def test_an_in_place_update_of_a_leaf_while_recording_is_refused():
    err = refusal("import torch\nw = torch.tensor(0.5, requires_grad=True)\nw += 1\n")
    assert err.pos.line == 3 and "in-place operation" in str(err) and "RuntimeError" in str(err)


def test_retain_grad_and_parameter():
    # torch 2.13.0 printed tensor([ 6., 12.]), tensor([18., 36.]), True, tensor([2., 4.])
    out = outputs("import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\nz = x * 3\nz.retain_grad()\n"
              "y = (z * z).sum()\ny.backward()\nprint(z.grad)\nprint(x.grad)\nwith torch.no_grad():\n"
              "    p = torch.nn.Parameter(torch.tensor([1.0, 2.0]))\nprint(p.requires_grad)\nq = (p * p).sum()\n"
              "q.backward()\nprint(p.grad)\n")
    np.testing.assert_allclose(out["z.grad"], [6.0, 12.0])
    np.testing.assert_allclose(out["x.grad"], [18.0, 36.0])
    assert bool(out["p.requires_grad"])
    np.testing.assert_allclose(out["p.grad"], [2.0, 4.0])


@pytest.mark.parametrize("update", ["w.data -= 0.1 * w.grad.data", "w.data.sub_(0.1 * w.grad.data)",
                                    "with torch.no_grad():\n    w.sub_(0.1 * w.grad)"])
def test_an_update_through_data_or_an_in_place_method_keeps_the_leaf_and_its_grad(update):
    # PyTorch 2.13.0: tensor([0.8000, 1.6000], requires_grad=True) tensor([2., 4.]), then zeros
    program = ("import torch\nw = torch.tensor([1.0, 2.0], requires_grad=True)\nloss = (w ** 2).sum()\n"
               f"loss.backward()\n{update}\nprint(w, w.grad)\nw.grad.data.zero_()\nprint(w.grad)\n")
    got = api.evaluate(program, fixes=False).outputs
    np.testing.assert_allclose(got["w"], [0.8, 1.6], rtol=1e-15)
    np.testing.assert_array_equal(got["w.grad #1"], [2.0, 4.0])
    np.testing.assert_array_equal(got["w.grad"], [0.0, 0.0])


def test_in_place_methods_of_a_tensor_and_their_refusals_are_pytorch_s():
    got = api.evaluate("import torch\nx = torch.tensor([1.0, 2.0])\nx.add_(1.0)\nx.mul_(2.0)\nx.div_(4.0)\nprint(x)\n",
                       fixes=False).outputs
    np.testing.assert_array_equal(got["x"], [1.0, 1.5])  # PyTorch 2.13.0: tensor([1.0000, 1.5000])
    # PyTorch: RuntimeError: a leaf Variable that requires grad is being used in an in-place operation
    with pytest.raises(GradcliError, match="a leaf Variable that requires grad is being used in an in-place") as caught:
        api.evaluate("import torch\nw = torch.tensor([1.0], requires_grad=True)\nw.add_(-0.5)\n", fixes=False)
    assert (caught.value.pos.line, caught.value.pos.column) == (3, 3)
    # PyTorch: AttributeError: 'NoneType' object has no attribute 'data' (no backward yet)
    with pytest.raises(GradcliError, match="None has no attribute 'data'") as caught:
        api.evaluate("import torch\nw = torch.tensor([1.0], requires_grad=True)\nprint(w.grad.data)\n", fixes=False)
    assert caught.value.pos.line == 3
