"""A non-finite number born inside a gradient the program takes itself (tf.gradients, a tape,
jax.grad, backward()) is traced to the forward operation whose rule made it and to the call that
took the gradient, in text and in JSON; a fix is still proven through it (`gradcli fix`)."""
import json
import subprocess
import sys

import numpy as np

from gradcli import api

LOG_AT_ZERO = ("import tensorflow as tf\nx = tf.constant([0.0, 1.0])\ny = tf.math.log(x)\n"
               "s = tf.reduce_sum(y * 2.0)\ng = tf.gradients(s, x)[0]\nz = g * 3.0\n")
# log(1 + exp(x)) at 1000: exp overflows, and its gradient rule turns the infinity into NaN
TAPE_SOFTPLUS = ("import tensorflow as tf\nx = tf.constant(1000.0)\nwith tf.GradientTape() as tape:\n"
                 "    tape.watch(x)\n    y = tf.math.log(1 + tf.exp(x))\ng = tape.gradient(y, x)\nprint(g * 2.0)\n")


def gradcli(*args):
    done = subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def test_a_gradient_call_s_infinity_names_the_op_and_the_call_in_text():
    done = gradcli("eval", "-e", LOG_AT_ZERO, "--print", "z", "--format", "plain")
    assert (done.returncode, done.stdout) == (0, "z\tinf 6.0\n")  # d/dx 2 log x = 2/x, times 3
    assert done.stderr.splitlines()[:3] == [
        "<expr>:3:5: warning: the gradient of log at 3:5, taken by tf.gradients at 5:5, is infinity at 1 of 2 "
        "elements [nonfinite_gradient]",
        "    y = tf.math.log(x)",
        "        ^~~~~~~~~~~~~~"]
    assert "    reaches: z" in done.stderr.splitlines()


def test_and_in_json_with_the_call_as_a_field():
    done = gradcli("eval", "-e", LOG_AT_ZERO, "--print", "z", "--format", "json")
    (diag,) = json.loads(done.stdout)["diagnostics"]
    assert (diag["kind"], diag["op"], diag["line"], diag["column"]) == ("nonfinite_gradient", "log", 3, 5)
    assert diag["taken_by"] == {"call": "tf.gradients", "line": 5, "column": 5}
    assert diag["reaches"] == ["z"]


def test_each_library_s_call_is_named():
    jax_program = ("import jax\nimport jax.numpy as jnp\ndef f(v):\n    return jnp.sqrt(v) * 2.0\n"
                   "g = jax.grad(f)(0.0)\nh = g + 1.0\n")
    (diag,) = api.evaluate(jax_program, fixes=False).diagnostics
    assert diag.message == "the gradient of sqrt at 4:12, taken by jax.grad at 5:5, is infinity at 1 of 1 element"
    assert [(p.line, p.column) for p in diag.stack] == [(5, 5)]  # the body of f, called by the transform
    torch_program = ("import torch\nx = torch.tensor([0.0, 4.0], requires_grad=True)\ny = torch.sqrt(x).sum()\n"
                     "y.backward()\nz = x.grad * 2\n")
    r = api.evaluate(torch_program, fixes=False)
    np.testing.assert_array_equal(r.outputs["z"], [np.inf, 0.5])
    (diag,) = r.diagnostics
    assert diag.taken_by == {"call": "y.backward", "line": 4, "column": 1}
    assert diag.message.startswith("the gradient of sqrt at 3:5, taken by y.backward at 4:1, is infinity")


def test_a_gradient_asked_for_by_the_command_keeps_its_words():
    r = api.grad("y = log(x)", wrt=["x"], feeds={"x": 0.0}, fixes=False)
    (diag,) = [d for d in r.diagnostics if d.kind == "nonfinite_gradient"]
    assert diag.message == "the gradient through log is infinity at 1 of 1 element" and diag.taken_by is None
    assert "taken_by" not in diag.to_json()


def test_the_nan_a_gradient_rule_makes_from_an_overflow_names_the_call():
    r = api.evaluate(TAPE_SOFTPLUS, fixes=False)
    assert np.isnan(r.outputs["g * 2.0"])
    (diag,) = r.diagnostics
    assert (diag.kind, diag.op, diag.pos.line, diag.pos.column) == ("overflow", "exp", 5, 25)
    assert diag.message.endswith("; then the gradient of exp at 5:25, taken by tape.gradient at 6:5, turns the "
                                 "infinities into NaN")


def test_fix_is_proven_through_a_tape():
    done = gradcli("fix", "-e", TAPE_SOFTPLUS, "--format", "json")
    assert done.returncode == 0, done.stderr
    fixed = json.loads(done.stdout)["fixed"]
    assert [(a["replacement"], a["start"], a["verified"]) for a in fixed["applied"]] == [
        ("tf.nn.softplus(x)", [5, 9], True)]
    assert fixed["not_finite"] == []
    # d softplus(x)/dx = sigmoid(x), 1 at x = 1000 in float64
    assert api.evaluate(fixed["program"]).outputs["g * 2.0"] == 2.0


def test_fix_is_proven_through_jax_grad():
    program = ("import jax\nimport jax.numpy as jnp\ndef f(x):\n    return jnp.log(1 + jnp.exp(x))\n"
               "g = jax.grad(f)(1000.0)\n")
    fixed = api.fix(program)
    assert "return jax.nn.softplus(x)\n" in fixed.text and fixed.nonfinite == []
    assert api.evaluate(fixed.text).outputs["g"] == 1.0
