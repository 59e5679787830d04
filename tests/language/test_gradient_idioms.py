"""The libraries' gradient-API idioms around the gradient calls themselves: pytrees of parameters
(JAX), custom rules in their several spellings, gradcheck, what each library says of integer and
NumPy-computed values, and the keys under which printed values come out. Expected numbers were
printed by TensorFlow 2.21.0 (tensorflow-cpu), JAX 0.10.2, PyTorch 2.13.0 (cpu) and autograd
1.9.1, in float32 unless a test says otherwise: compared at float32's tolerance."""
from __future__ import annotations

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError
from snippet_compare import outputs, refusal

F32 = dict(rtol=2e-6, atol=1e-6)


# --------------------------------------------------------------------------- printed keys
def test_a_printed_expression_that_starts_with_a_bracket_is_keyed_as_written():
    out = outputs("import torch\nx = torch.tensor(2.0, requires_grad=True)\n"
                  "print((x ** 2).requires_grad)\nprint((x + 1) * 2, [x, 3.0][0])\n(x - 1) / 2\n")
    # PyTorch 2.13.0 printed True, then tensor(6., grad_fn=...) and tensor(2., ...); 0.5 shown
    assert list(out) == ["(x ** 2).requires_grad", "(x + 1) * 2", "[x, 3.0][0]", "(x - 1) / 2"]
    np.testing.assert_allclose([out[k] for k in out], [1.0, 6.0, 2.0, 0.5])


def test_brackets_inside_strings_do_not_widen_a_printed_key():
    out = outputs("x = 2.0\nprint('(', (x + 1) * 2, ')')\n")
    assert list(out) == ["(x + 1) * 2"]


# --------------------------------------------------------------------------- JAX pytrees
GD_WITH_TREE_MAP = """import jax
import jax.numpy as jnp
from jax.tree_util import tree_map

def loss(params, x):
    return jnp.sum((params['w'] * x + params['b']) ** 2)

params = {'w': jnp.array([1.0, -2.0]), 'b': 0.5}
x = jnp.array([0.3, 0.7])
lr = 0.1
for step in range(3):
    grads = jax.grad(loss)(params, x)
    params = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
print(params)
print(loss(params, x))
print(tree_map(lambda p: p * 2, (params['b'], (params['w'], params['b']))))
for k, v in grads.items():
    print(k, v)
"""


def test_gradient_descent_over_a_dict_of_parameters_with_tree_map():
    out = outputs(GD_WITH_TREE_MAP)
    # JAX 0.10.2 printed {'b': 0.50296485, 'w': [0.85636365, -1.662773]}, 1.0142982, then
    # (1.0059297, ([1.7127273, -3.325546], 1.0059297)), then "b 0.14275122", "w [0.47300354 -1.003749]"
    np.testing.assert_allclose(out["params['b']"], 0.50296485, **F32)
    np.testing.assert_allclose(out["params['w']"], [0.85636365, -1.662773], **F32)
    np.testing.assert_allclose(out["loss(params, x)"], 1.0142982, **F32)
    mapped = "tree_map(lambda p: p * 2, (params['b'], (params['w'], params['b'])))"
    np.testing.assert_allclose(out[f"{mapped}[0]"], 1.0059297, **F32)
    np.testing.assert_allclose(out[f"{mapped}[1][0]"], [1.7127273, -3.325546], **F32)
    np.testing.assert_allclose(out[f"{mapped}[1][1]"], 1.0059297, **F32)
    # JAX's dicts come out of grad with their keys sorted: 'w' is the last one printed as v
    np.testing.assert_allclose(out["v"], [0.47300354, -1.003749], **F32)


def test_the_gradient_of_a_nested_dict_of_parameters_has_its_structure():
    out = outputs("import jax\nimport jax.numpy as jnp\n"
                  "def g(p):\n    return p['layer']['w'] * p['layer']['b'] + jnp.exp(p['scale'][0]) * p['scale'][1]\n"
                  "p = {'scale': (0.5, 2.0), 'layer': {'w': 3.0, 'b': -1.0}}\nprint(jax.grad(g)(p))\n")
    # JAX 0.10.2: {'layer': {'b': 3.0, 'w': -1.0}, 'scale': (3.2974424, 1.6487212)}
    assert list(out) == ["jax.grad(g)(p)['layer']['b']", "jax.grad(g)(p)['layer']['w']", "jax.grad(g)(p)['scale']"]
    np.testing.assert_allclose(out["jax.grad(g)(p)['layer']['b']"], 3.0, **F32)
    np.testing.assert_allclose(out["jax.grad(g)(p)['layer']['w']"], -1.0, **F32)
    np.testing.assert_allclose(out["jax.grad(g)(p)['scale']"], [3.2974424, 1.6487212], **F32)


def test_hessian_with_two_argnums_is_a_tuple_of_tuples_and_grad_a_tuple_of_several_shapes():
    out = outputs("import jax\nimport jax.numpy as jnp\n"
                  "def f(x, y):\n    return jnp.sum(x ** 2 * y[0]) + jnp.sin(y[1]) * x[0]\n"
                  "x = jnp.array([1.0, 2.0])\ny = jnp.array([3.0, 0.5])\n"
                  "print(jax.hessian(f, argnums=(0, 1))(x, y)[0][1])\n"
                  "print(jax.hessian(f, argnums=(0, 1))(x, y)[1][1])\n"
                  "def h(w, b):\n    return jnp.sum(jnp.tanh(w) * b) + b ** 2\n"
                  "print(jax.grad(h, argnums=(0, 1))(x, 0.5))\n")
    # JAX 0.10.2: [[2, 0.87758255], [4, 0]]; [[0, 0], [0, -0.47942555]]; ([0.20998716, 0.03532541], 2.7256217)
    np.testing.assert_allclose(out["jax.hessian(f, argnums=(0, 1))(x, y)[0][1]"], [[2, 0.87758255], [4, 0]], **F32)
    np.testing.assert_allclose(out["jax.hessian(f, argnums=(0, 1))(x, y)[1][1]"], [[0, 0], [0, -0.47942555]], **F32)
    np.testing.assert_allclose(out["jax.grad(h, argnums=(0, 1))(x, 0.5)[0]"], [0.20998716, 0.03532541], **F32)
    np.testing.assert_allclose(out["jax.grad(h, argnums=(0, 1))(x, 0.5)[1]"], 2.7256217, **F32)


def test_tree_map_over_trees_of_different_structures_is_refused():
    err = refusal("import jax\nd = {'a': 1.0, 'b': 2.0}\ne = {'a': 1.0}\n"
                  "print(jax.tree_util.tree_map(lambda p, q: p + q, d, e))\n")
    assert "different structures" in str(err) and err.pos.line == 4


# --------------------------------------------------------------------------- custom rules
NONDIFF_AND_DEFJVPS = """from functools import partial
import jax
import jax.numpy as jnp

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def app(f, x, y):
    return f(x) * y

def app_fwd(f, x, y):
    return app(f, x, y), (x, y)

def app_bwd(f, res, g):
    x, y = res
    return (2.0 * g * y, g * f(x))   # deliberately 2x for x: a custom rule, not the true one

app.defvjp(app_fwd, app_bwd)
print(jax.grad(app, argnums=(1, 2))(jnp.sin, 0.5, 3.0))

@partial(jax.custom_jvp, nondiff_argnums=(0,))
def scale(k, x):
    return k * jnp.tanh(x)

@scale.defjvp
def scale_jvp(k, primals, tangents):
    x, = primals
    t, = tangents
    return scale(k, x), 10.0 * k * t

print(jax.grad(scale, argnums=1)(2.0, 0.3))

@jax.custom_jvp
def h(x, y):
    return x * y
h.defjvps(None, lambda y_dot, out, x, y: 5.0 * y_dot)
print(jax.grad(h, argnums=(0, 1))(2.0, 3.0))
"""


def test_nondiff_argnums_and_defjvps_are_read_as_jax_reads_them():
    out = outputs(NONDIFF_AND_DEFJVPS)
    # JAX 0.10.2: (6.0, 0.47942555) from the rule (2 g y for x, g f(x) for y, f = sin passed as a
    # nondiff argument first); 20.0 from the jvp rule 10 k t; (0.0, 5.0): no rule for x, 5 y_dot for y
    np.testing.assert_allclose(out["jax.grad(app, argnums=(1, 2))(jnp.sin, 0.5, 3.0)"], [6.0, 0.47942555], **F32)
    np.testing.assert_allclose(out["jax.grad(scale, argnums=1)(2.0, 0.3)"], 20.0, **F32)
    np.testing.assert_allclose(out["jax.grad(h, argnums=(0, 1))(2.0, 3.0)"], [0.0, 5.0], **F32)


def test_defjvps_with_a_rule_count_that_is_not_the_argument_count_is_refused():
    err = refusal("import jax\n@jax.custom_jvp\ndef h(x, y):\n    return x * y\n"
                  "h.defjvps(lambda t, out, x, y: t * y)\nprint(jax.grad(h)(2.0, 3.0))\n")
    assert "defjvps" in str(err) and "TypeError" in str(err) and err.pos.line == 5


SETUP_CONTEXT = """import torch
class MulConstant(torch.autograd.Function):
    @staticmethod
    def forward(tensor, constant):
        return tensor * constant

    @staticmethod
    def setup_context(ctx, inputs, output):
        tensor, constant = inputs
        ctx.constant = constant
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, grad_output):
        out, = ctx.saved_tensors
        return grad_output * ctx.constant + 0 * out, None

x = torch.tensor([1., 2., 3.], requires_grad=True)
y = MulConstant.apply(x, 2.5)
(y * y).sum().backward()
print(x.grad)
"""


def test_a_function_with_setup_context_runs_forward_without_ctx():
    out = outputs(SETUP_CONTEXT)
    # PyTorch 2.13.0: tensor([12.5000, 25.0000, 37.5000]) (2 y * 2.5)
    np.testing.assert_allclose(out["x.grad"], [12.5, 25.0, 37.5], **F32)


# --------------------------------------------------------------------------- gradcheck
WRONG_RULE = """import torch

class BadExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = torch.exp(x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_out):
        result, = ctx.saved_tensors
        return 2 * result * grad_out

x = torch.tensor([0.5, 1.0], requires_grad=True, dtype=torch.double)
print(torch.autograd.gradcheck(BadExp.apply, (x,), raise_exception=False))
print(torch.autograd.gradcheck(BadExp.apply, (x,)))
"""

DETACHED_RULE = """import torch

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 2 * x.detach()

x = torch.tensor([0.5, -1.5], requires_grad=True, dtype=torch.double)
print(torch.autograd.gradcheck(Square.apply, (x,)))
print(torch.autograd.gradgradcheck(Square.apply, (x,), raise_exception=False))
y = x.expand_as(torch.ones(3, 2)).sum()
print(y)
print(x.view_as(torch.ones(2, 1)))
"""


def test_gradcheck_of_a_wrong_rule_is_false_or_pytorchs_gradcheck_error_at_the_call():
    err = refusal(WRONG_RULE)
    # PyTorch 2.13.0 printed False, then raised GradcheckError: Jacobian mismatch for output 0 with
    # respect to input 0, numerical: [[1.6487, 0], [0, 2.7183]], analytical: [[3.2974, 0], [0, 5.4366]]
    assert "GradcheckError" in str(err) and "Jacobian mismatch for output 0 with respect to input 0" in str(err)
    assert "3.297443" in str(err) and "1.648721" in str(err)
    assert (err.pos.line, err.pos.column) == (17, 7)
    without = outputs(WRONG_RULE.replace("print(torch.autograd.gradcheck(BadExp.apply, (x,)))\n", ""))
    assert list(without.values()) == [0.0]


def test_gradgradcheck_sees_a_backward_that_is_not_differentiable_and_expand_as_view_as():
    out = outputs(DETACHED_RULE)
    # PyTorch 2.13.0: True, False, tensor(-3.), tensor([[0.5], [-1.5]])
    assert list(out.values())[:2] == [1.0, 0.0]
    np.testing.assert_allclose(out["y"], -3.0)
    np.testing.assert_allclose(out["x.view_as(torch.ones(2, 1))"], [[0.5], [-1.5]])


def test_gradcheck_needs_an_input_that_requires_grad():
    err = refusal("import torch\nx = torch.tensor([1.0, 2.0])\nprint(torch.autograd.gradcheck(torch.exp, (x,)))\n")
    # PyTorch 2.13.0: ValueError: gradcheck expects at least one input tensor to require gradient
    assert "ValueError" in str(err) and err.pos.line == 3


# --------------------------------------------------------------------------- random draws
# (a seeded NumPy or JAX draw is reproduced: tests/language/test_random_draws.py; an unseeded one says to seed it)
@pytest.mark.parametrize("call", ["torch.rand(5, 5)", "torch.randn(2, 2)", "np.random.randn(3)",
                                  "jax.random.gamma(key, 1.0)", "tf.random.normal([3])"])
def test_a_random_draw_is_refused_with_what_to_write(call):
    err = refusal(f"import torch\nimport numpy as np\nimport jax\nimport tensorflow as tf\nkey = 0\nx = {call}\n"
                  "print(x)\n")
    assert ("draws random numbers" in str(err) or "never seeded" in str(err)) and "--set" in str(err) \
        and err.pos.line == 6


# --------------------------------------------------------------------------- integers, NumPy in a tape
def test_an_integer_tensor_watched_by_a_tape_has_no_gradient_with_tensorflows_warning():
    result = api.evaluate("import tensorflow as tf\nx = tf.constant([1, 2])\nw = tf.constant(3.0)\n"
                          "with tf.GradientTape(persistent=True) as g:\n    g.watch(x)\n    g.watch(w)\n"
                          "    y = tf.reduce_sum(x * x)\n    v = w * w\nprint(g.gradient(y, x))\nprint(g.gradient(v, w))\n",
                          fixes=False)
    # TensorFlow 2.21.0: None (and "WARNING: The dtype of the watched tensor must be floating
    # (e.g. tf.float32), got tf.int32"), then tf.Tensor(6.0, shape=(), dtype=float32)
    assert result.outputs["g.gradient(y, x)"] is None
    np.testing.assert_allclose(result.outputs["g.gradient(v, w)"], 6.0)
    (lost,) = [d for d in result.diagnostics if d.kind == "gradient_lost"]
    assert "must be floating" in lost.message and lost.pos.line == 5


@pytest.mark.parametrize("program, words, line", [
    # JAX 0.10.2: TypeError: grad requires real- or complex-valued inputs (input dtype that is a
    # sub-dtype of np.inexact), but got int32.
    ("import jax\nimport jax.numpy as jnp\nx = jnp.arange(3)\nprint(jax.grad(lambda v: jnp.sum(v * v))(x))\n",
     "JAX: TypeError", 4),
    # autograd 1.9.1: TypeError: Can't differentiate w.r.t. type <class 'int'>
    ("import autograd.numpy as np\nfrom autograd import grad\nprint(grad(np.tanh)(2))\n",
     "autograd: TypeError", 3),
    # PyTorch 2.13.0: RuntimeError: Only Tensors of floating point and complex dtype can require gradients
    ("import torch\nx = torch.tensor([1, 2], requires_grad=True)\nprint(x)\n", "PyTorch: RuntimeError", 2),
])
def test_differentiating_an_integer_value_is_refused_as_each_library_refuses_it(program, words, line):
    err = refusal(program)
    assert words in str(err) and err.pos.line == line


def test_values_written_as_floats_or_with_a_float_dtype_are_differentiated():
    out = outputs("import jax\nimport jax.numpy as jnp\nimport torch\n"
                  "x = jnp.array([1, 2], dtype=jnp.float32)\nprint(jax.grad(lambda v: jnp.sum(v * v))(x))\n"
                  "t = torch.tensor([1, 2], dtype=torch.float64, requires_grad=True)\nprint(t)\n")
    np.testing.assert_allclose(out["jax.grad(lambda v: jnp.sum(v * v))(x)"], [2.0, 4.0])
    np.testing.assert_allclose(out["t"], [1.0, 2.0])


def test_numpy_inside_a_tape_is_a_constant_to_it_and_a_warning_names_the_call():
    result = api.evaluate("import numpy as np\nimport tensorflow as tf\nx = tf.Variable([1.0, 2.0])\n"
                          "with tf.GradientTape(persistent=True) as tape:\n    y = tf.reduce_sum(np.square(x))\n"
                          "    z = tf.reduce_sum(x * x) + y\nprint(tape.gradient(y, x))\nprint(tape.gradient(z, x))\n",
                          fixes=False)
    # TensorFlow 2.21.0: None, then tf.Tensor([2. 4.], shape=(2,), dtype=float32): the NumPy part
    # passes no gradient
    assert result.outputs["tape.gradient(y, x)"] is None
    np.testing.assert_allclose(result.outputs["tape.gradient(z, x)"], [2.0, 4.0])
    (lost,) = [d for d in result.diagnostics if d.kind == "gradient_lost"]
    assert "np.square" in lost.message and (lost.pos.line, lost.pos.column) == (5, 23)


def test_tf_gradients_of_a_constant_bound_inside_a_function_is_tensorflows():
    # TensorFlow 2.21.0 prints [3.0, 1.0] (graph tensors): `a` and `b` are values of the graph,
    # not numbers folded away (which would make the gradient None)
    out = outputs("import tensorflow as tf\n@tf.function\ndef example():\n  a = tf.constant(0.)\n  b = 2 * a\n"
                  "  return tf.gradients(a + b, [a, b])\nprint(example())\n")
    assert np.asarray(out["example()"]).tolist() == [3.0, 1.0]


CHECK_GRADS = """import autograd.numpy as np
from autograd import grad
from autograd.extend import primitive, defvjp
from autograd.test_util import check_grads

@primitive
def logsumexp(x):
    return np.log(np.sum(np.exp(x)))

defvjp(logsumexp, lambda ans, x: lambda g: g * np.exp(x - ans) * 2.0)

def f(x):
    return np.sum(np.tanh(x) ** 2)

x = np.array([0.5, -1.0, 2.0])
check_grads(f, modes=['rev'])(x)
print(grad(f)(x))
check_grads(logsumexp, modes=['rev'], order=1)(x)
"""


def test_autograds_check_grads_passes_a_right_gradient_and_refuses_a_wrong_rule():
    # autograd 1.9.1 printed [ 0.72686198 -0.63970001  0.13621869], then raised AssertionError:
    # Derivative (VJP) check of logsumexp failed (the rule is twice the gradient)
    err = refusal(CHECK_GRADS)
    assert "logsumexp" in str(err) and "autograd: AssertionError" in str(err) and err.pos.line == 18
    out = outputs(CHECK_GRADS.rsplit("check_grads(logsumexp", 1)[0])
    np.testing.assert_allclose(out["grad(f)(x)"], [0.72686198, -0.63970001, 0.13621869], rtol=1e-7)
