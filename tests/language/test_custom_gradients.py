"""Gradients a program defines itself (@tf.custom_gradient, jax.custom_vjp / defvjp,
jax.custom_jvp / defjvp): the user's rule is the gradient of that call, first and second order,
against the values TensorFlow 2.21.0 and JAX 0.10.2 printed for the official guides' snippets
(tutorial_snippets/custom_gradients/*.json, with their versions; its pending/ holds those that
do not run yet) and analytic derivatives; `check` names a wrong rule by its call."""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError
from snippet_compare import mismatches, outputs, refusal

HERE = pathlib.Path(__file__).parent / "tutorial_snippets" / "custom_gradients"
RUNS = sorted(HERE.glob("*.json"))
PENDING = sorted((HERE / "pending").glob("*.json"))


def _record(path):
    record = json.loads(path.read_text())
    assert record["versions"]["tensorflow-cpu"] == "2.21.0" and record["versions"]["jax"] == "0.10.2"
    return record


@pytest.mark.parametrize("path", RUNS, ids=[p.stem for p in RUNS])
def test_a_custom_gradient_snippet_prints_what_the_library_printed(path):
    record = _record(path)
    assert mismatches(record, outputs(record["code"])) == []


@pytest.mark.parametrize("path", PENDING, ids=[p.stem for p in PENDING])
def test_a_pending_custom_gradient_snippet_does_not_run_yet(path):
    record = _record(path)
    try:
        printed = outputs(record["code"])
    except GradcliError:
        return
    assert mismatches(record, printed), "it passes now: move it up a folder"


def test_the_custom_gradient_snippet_counts():
    names = [p.stem.split("_")[0] for p in RUNS]
    assert (names.count("tensorflow"), names.count("jax")) == (2, 9)


LOG1PEXP = """import tensorflow as tf
@tf.custom_gradient
def log1pexp(x):
  e = tf.exp(x)
  def grad(upstream):
    return upstream * (1 - 1 / (1 + e)){wrong}
  return tf.math.log(1 + e), grad
x = {x}
y = log1pexp(x)
"""


def test_the_stable_log1pexp_rule_gives_one_at_100():
    # the TensorFlow guide's example: its own gradient is NaN at 100 in float32, the rule gives 1.0
    # (TensorFlow 2.21.0 printed 1.0 for dy_dx, tensorflow_40 in pending/ for its float32 y = inf)
    code = LOG1PEXP.format(wrong="", x="tf.constant(100.)") + \
        "with tf.GradientTape() as tape:\n  tape.watch(x)\n  y = log1pexp(x)\ndy_dx = tape.gradient(y, x)\nprint(dy_dx)\n"
    assert outputs(code)["dy_dx"] == pytest.approx(1.0)


def test_the_rule_is_the_gradient_for_grad_and_check_accepts_a_right_one():
    code = LOG1PEXP.format(wrong="", x="1.5")
    result = api.grad(code, wrt=["x"])
    assert float(result.gradients["x"]) == pytest.approx(1 / (1 + np.exp(-1.5)))
    assert all(report.passed for report in api.check(code, wrt=["x"]).reports.values())


def test_check_names_a_wrong_rule_by_its_call():
    result = api.check(LOG1PEXP.format(wrong=" * 2", x="1.5"), wrt=["x"])
    assert not result.reports["x"].passed
    blamed = [d for d in result.diagnostics if d.kind == "gradient_mismatch"]
    assert blamed and blamed[0].op == "log1pexp" and blamed[0].pos.line == 9


def test_a_custom_vjp_rule_with_residuals_and_none_cotangents():
    code = ("import jax\nimport jax.numpy as jnp\n@jax.custom_vjp\ndef f(a, x):\n  return jnp.sin(x) * a\n"
            "def f_fwd(a, x):\n  return f(a, x), (a, jnp.cos(x))\n"
            "def f_bwd(res, g):\n  a, c = res\n  return (None, 3.0 * g * c * a)\n"
            "f.defvjp(f_fwd, f_bwd)\nprint(jax.grad(f, 1)(2.0, 0.5))\n")
    out = outputs(code)
    assert out["jax.grad(f, 1)(2.0, 0.5)"] == pytest.approx(3.0 * np.cos(0.5) * 2.0)  # the rule, not cos*a


def test_second_order_through_a_custom_jvp_rule():
    code = ("import jax\nimport jax.numpy as jnp\n@jax.custom_jvp\ndef f(x):\n  return x ** 3\n"
            "@f.defjvp\ndef f_jvp(primals, tangents):\n  x, = primals\n  t, = tangents\n"
            "  return f(x), 5.0 * x ** 2 * t\n"
            "print(jax.grad(f)(2.0))\nprint(jax.grad(jax.grad(f))(2.0))\n")
    out = outputs(code)
    assert out["jax.grad(f)(2.0)"] == pytest.approx(20.0)   # the rule 5 x^2, not 3 x^2
    assert out["jax.grad(jax.grad(f))(2.0)"] == pytest.approx(20.0)  # 10 x


def test_a_gradient_function_with_the_wrong_count_is_refused():
    code = ("import tensorflow as tf\n@tf.custom_gradient\ndef f(x, y):\n  def grad(u):\n    return u\n"
            "  return x * y, grad\nz = f(1.0, 2.0)\n")
    err = refusal(code)
    assert err.pos.line == 7 and "returned 1 gradient for 2 inputs" in str(err)


CUBE = """import torch
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return CubeBackward.apply(grad_out, x)

class CubeBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, grad_out, x):
        ctx.save_for_backward(x, grad_out)
        return grad_out * 3 * x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, sav_grad_out = ctx.saved_tensors
        return grad_out * 3 * x ** 2, grad_out * sav_grad_out * 6 * x{wrong}

x = torch.tensor(2., requires_grad=True, dtype=torch.double)
out = Cube.apply(x)
grad_x, = torch.autograd.grad(out, x, create_graph=True)
print(grad_x)
g2, = torch.autograd.grad(grad_x, x)
print(g2)
"""


def test_a_torch_function_whose_backward_is_a_torch_function_gives_both_orders():
    # the PyTorch tutorial's Cube / CubeBackward (pytorch_25 in torch_autograd/pending/ for its
    # gradcheck lines): torch 2.13.0 printed 12.0 and 12.0
    out = outputs(CUBE.format(wrong=""))
    assert float(out["grad_x"]) == 12.0 and float(out["g2"]) == 12.0


def test_check_names_a_wrong_torch_function_rule():
    code = CUBE.format(wrong="").replace("return CubeBackward.apply(grad_out, x)", "return grad_out * 2 * x ** 2")
    result = api.check(code.split("grad_x, =")[0], wrt=["x"], of=["out"])
    assert not result.reports["x"].passed
    blamed = [d for d in result.diagnostics if d.kind == "gradient_mismatch"]
    assert blamed and blamed[0].op == "Cube.apply" and blamed[0].pos.line == 25


LOGSUMEXP = """import autograd.numpy as np
from autograd.extend import primitive, defvjp

@primitive
def logsumexp(x):
    max_x = np.max(x)
    return max_x + np.log(np.sum(np.exp(x - max_x)))

def logsumexp_vjp(ans, x):
    x_shape = x.shape
    return lambda g: {upstream} * np.exp(x - np.full(x_shape, ans)){wrong}

defvjp(logsumexp, logsumexp_vjp)

from autograd import grad

def example_func(y):
    z = y**2
    lse = logsumexp(z)
    return np.sum(lse)

grad_of_example = grad(example_func)
print("Gradient: ", grad_of_example(np.array([1.5, 6.7, 1e-10])))
"""
EXPR = "grad_of_example(np.array([1.5, 6.7, 1e-10]))"


def test_an_autograd_primitive_with_defvjp_uses_the_rule():
    # autograd's tutorial (autograd_06): autograd 1.9.1 printed
    # [9.09503859548648e-19, 13.4, 6.390733435496685e-30]; here `g *` stands for `np.full(x_shape, g) *`
    out = outputs(LOGSUMEXP.format(upstream="g", wrong=""))
    np.testing.assert_allclose(out[EXPR], [9.09503859548648e-19, 13.4, 6.390733435496685e-30], rtol=1e-12)
    doubled = outputs(LOGSUMEXP.format(upstream="g", wrong=" * 2"))
    np.testing.assert_allclose(doubled[EXPR], 2 * out[EXPR], rtol=1e-12)  # the rule, even a wrong one


def test_a_rule_that_fills_an_array_with_the_upstream_gradient_uses_its_value():
    # the tutorial as written (autograd_06): np.full(x_shape, g) of the computed g is g broadcast;
    # autograd 1.9.1 printed [9.09503859548648e-19, 13.4, 6.390733435496685e-30]
    out = outputs(LOGSUMEXP.format(upstream="np.full(x_shape, g)", wrong=""))
    np.testing.assert_allclose(out[EXPR], [9.09503859548648e-19, 13.4, 6.390733435496685e-30], rtol=1e-12)
