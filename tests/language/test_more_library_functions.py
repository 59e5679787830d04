"""NumPy's ufunc methods (`np.add.reduce`, `np.multiply.accumulate`, ...), `np.count_nonzero`,
`jax.nn.standardize`, and TensorFlow's `boolean_mask`, `gather_nd` and `linalg.band_part`, against
what NumPy 2.4.6, JAX 0.10.2 (x64) and TensorFlow 2.21.0 printed."""
from __future__ import annotations

import re

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

X = "import numpy as np\nx = np.array([[1., 5.], [3., 4.]])\n"


@pytest.mark.parametrize("call, expected", [
    ("np.add.reduce(x)", [4.0, 9.0]),  # axis 0 by default (np.sum's default is every axis)
    ("np.maximum.reduce(x, axis=1)", [5.0, 4.0]),
    ("np.add.reduce(x, None)", 13.0),
    ("np.multiply.reduce(x)", [3.0, 20.0]),
    ("np.minimum.reduce(x)", [1.0, 4.0]),
    ("np.multiply.accumulate(x)", [[1.0, 5.0], [3.0, 20.0]]),
    ("np.add.accumulate(x, 1)", [[1.0, 6.0], [3.0, 7.0]]),
    ("np.logaddexp.reduce(x, keepdims=True)", [[3.1269280110429727, 5.313261687518223]]),
    ("np.maximum.accumulate(x, 1)", [[1.0, 5.0], [3.0, 4.0]]),
    ("np.count_nonzero(x - 3.0)", 3.0),
    ("np.count_nonzero(x - 3.0, axis=0)", [1.0, 2.0]),
    ("np.count_nonzero(x - 3.0, 1, keepdims=True)", [[2.0], [1.0]]),
])
def test_numpy_s_ufunc_methods_and_count_nonzero_give_numpy_s_numbers(call, expected):
    value = api.evaluate(X + f"y = {call}\n", fixes=False).outputs["y"]
    np.testing.assert_allclose(value, expected, rtol=1e-15)
    assert np.shape(value) == np.shape(expected)


def test_a_ufunc_reduce_differentiates_as_the_reduction_it_is():
    result = api.grad(X + "y = np.sum(np.multiply.reduce(x) * np.array([1.0, 10.0]))\n", wrt=["x"], fixes=False)
    np.testing.assert_array_equal(result.gradients["x"], [[3.0, 40.0], [1.0, 50.0]])  # d(x0 x1)/dx along axis 0


def test_a_ufunc_method_given_an_argument_twice_is_refused():
    with pytest.raises(GradcliError, match=re.escape("axis")):
        api.evaluate(X + "y = np.add.reduce(x, 0, axis=1)\n", fixes=False)


STANDARDIZE = """import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
x = jnp.array([[1.0, 2.0, 4.0], [3.0, -1.0, 0.5]])
y = jax.nn.standardize(x)
z = jax.nn.standardize(x, axis=0, epsilon=1e-3)
w = jax.nn.standardize(x, axis=None, algorithm="stable")
g = jax.grad(lambda x: jnp.sum(jax.nn.standardize(x) * jnp.array([1.0, 2.0, 3.0])))(x)
print(y)
print(z)
print(w)
print(g)
"""
JAX_STANDARDIZE = {  # JAX 0.10.2, x64, np.asarray(v).ravel().tolist()
    "y": [-1.0690415314502968, -0.26726038286257403, 1.3363019143128716, 1.3131958959276273, -1.1111657580926075,
          -0.2020301378350195],
    "z": [-0.9995003746877732, 0.9997778518244278, 0.999836774666341, 0.9995003746877732, -0.9997778518244278,
          -0.999836774666341],
    "w": [-0.35491343168580414, 0.2535095940612887, 1.4703556455554745, 0.8619326198083815, -1.5717594831799897,
          -0.6591249445593506],
    "g": [-0.11454458203331708, 0.17180914163860128, -0.05726455960528476, -0.2040931465783984, -0.34015153355332783,
          0.5442446801317264],
}


def test_jax_standardize_gives_jax_s_numbers_and_gradient():
    outputs = api.evaluate(STANDARDIZE, fixes=False).outputs
    for name, expected in JAX_STANDARDIZE.items():
        np.testing.assert_allclose(np.ravel(outputs[name]), expected, rtol=1e-13, atol=1e-15, err_msg=name)


def test_jax_standardize_with_where_is_refused():
    with pytest.raises(GradcliError, match=re.escape("standardize(where=...) is not supported")):
        api.evaluate(STANDARDIZE + "v = jax.nn.standardize(x, where=x > 0)\n", fixes=False)


TF = """import tensorflow as tf
x = tf.Variable([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], dtype=tf.float64)
with tf.GradientTape(persistent=True) as tape:
    a = tf.boolean_mask(x, [True, False, True])
    b = tf.boolean_mask(x, [[True, False, True], [False, True, False], [True, True, False]])
    c = tf.boolean_mask(x, [False, True, True], axis=1)
    d = tf.gather_nd(x, [[0, 1], [2, 2], [1, 0]])
    e = tf.gather_nd(x, [[2], [0]])
    f = tf.linalg.band_part(x, 0, -1)
    h = tf.linalg.band_part(x, 1, 0)
    L = (tf.reduce_sum(a * 2.0) + tf.reduce_sum(b) + tf.reduce_sum(c ** 2) + tf.reduce_sum(d * d)
         + tf.reduce_sum(e) + tf.reduce_sum(f * h))
g = tape.gradient(L, x)
print(a)
print(b)
print(c)
print(d)
print(e)
print(f)
print(h)
print(g)
"""
TENSORFLOW = {  # TensorFlow 2.21.0: tf.reshape(v, [-1]).numpy().tolist()
    "a": [1.0, 2.0, 3.0, 7.0, 8.0, 9.0],
    "b": [1.0, 3.0, 5.0, 7.0, 8.0],
    "c": [2.0, 3.0, 5.0, 6.0, 8.0, 9.0],
    "d": [2.0, 9.0, 4.0],
    "e": [7.0, 8.0, 9.0, 1.0, 2.0, 3.0],
    "f": [1.0, 2.0, 3.0, 0.0, 5.0, 6.0, 0.0, 0.0, 9.0],
    "h": [1.0, 0.0, 0.0, 4.0, 5.0, 0.0, 0.0, 8.0, 9.0],
    "g": [6.0, 11.0, 10.0, 8.0, 21.0, 12.0, 4.0, 20.0, 57.0],
}


def test_boolean_mask_gather_nd_and_band_part_give_tensorflow_s_values_and_gradient():
    outputs = api.evaluate(TF, fixes=False).outputs
    for name, expected in TENSORFLOW.items():
        np.testing.assert_array_equal(np.ravel(outputs[name]), expected, err_msg=name)


@pytest.mark.parametrize("line, message", [
    ("y = tf.gather_nd(x, [[5, 0]])", "[]: index 5 is out of bounds for axis 0 with size 2"),
    ("y = tf.gather_nd(x, [[0, 1, 0]])", "tf.gather_nd: indices of length 3 index a tensor of 2 axes"),
    ("y = tf.gather_nd(x, [[0]], batch_dims=1)", "tf.gather_nd(batch_dims=...) is not supported"),
    ("y = tf.boolean_mask(x, [True, False, True])", "boolean index did not match indexed array along axis 0"),
    ("y = tf.boolean_mask(x, [1.0, 0.0])", "the mask must be booleans written in the program"),
    ("y = tf.linalg.band_part(x[0], 0, 0)", "tf.linalg.band_part: input must be at least a matrix, not of shape (2,)"),
])
def test_tensorflow_s_indexing_functions_refuse_what_tensorflow_refuses(line, message):
    with pytest.raises(GradcliError, match=re.escape(message)):
        api.evaluate("import tensorflow as tf\nx = tf.constant([[1.0, 2.0], [3.0, 4.0]])\n" + line + "\n", fixes=False)


LAX = """import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
from jax import lax

def f(x):
    def body(i, val):
        return val * x + i
    return lax.fori_loop(0, 4, body, 1.0)

def g(w):
    xs = jnp.array([[1.0, 2.0], [0.5, -1.0], [2.0, 0.0]])
    def step(carry, x):
        h = jnp.tanh(carry * w + x)
        return h, jnp.sum(h)
    final, ys = lax.scan(step, jnp.zeros(2), xs)
    return jnp.sum(final) + jnp.sum(ys ** 2)

def h(w):
    def step(c, x):
        return c * w + x, c
    last, cs = lax.scan(step, 1.0, jnp.array([1.0, 2.0, 3.0]), reverse=True)
    n, _ = lax.scan(lambda c, _: (c * w, None), 2.0, None, length=3)
    return last + jnp.sum(cs * jnp.array([1.0, 10.0, 100.0])) + n

def k(x):
    v = jnp.array([1.0, 2.0, 3.0])
    return lax.fori_loop(0, 3, lambda i, acc: acc + v[i] * x ** i, 0.0)

print(f(1.5))
print(jax.grad(f)(1.5))
print(g(0.7))
print(jax.grad(g)(0.7))
print(h(0.5))
print(jax.grad(h)(0.5))
print(k(2.0))
print(jax.grad(k)(2.0))
"""
JAX_LAX = {  # JAX 0.10.2, x64, as printed
    "f(1.5)": 13.3125, "jax.grad(f)(1.5)": 18.5,
    "g(0.7)": 4.556343828699518, "jax.grad(g)(0.7)": 1.8552333684712101,
    "h(0.5)": 141.875, "jax.grad(h)(0.5)": 21.25,
    "k(2.0)": 17.0, "jax.grad(k)(2.0)": 14.0,
}


def test_lax_fori_loop_and_scan_unroll_to_jax_s_values_and_gradients():
    outputs = api.evaluate(LAX, fixes=False).outputs
    for name, expected in JAX_LAX.items():
        assert float(outputs[name]) == pytest.approx(expected, rel=1e-14), name


@pytest.mark.parametrize("line, message", [
    ("y = lax.fori_loop(0, 3, 2.0, 1.0)", "body_fun must be a function"),
    ("y = lax.scan(lambda c, x: (c, x), 0.0)", "without xs, give length="),
    ("y = lax.scan(lambda c, x: c + x, 0.0, jnp.array([1.0, 2.0]))", "f must return a pair (carry, y)"),
    ("y = lax.scan(lambda c, x: (c, x), 0.0, 3.0)", "xs must have a leading axis to scan over"),
    ("y = lax.scan(lambda c, x: (c, (x, x)), 0.0, jnp.array([1.0, 2.0]))", "each y that f returns must be one array"),
])
def test_lax_loops_written_wrong_are_refused_with_their_reason(line, message):
    with pytest.raises(GradcliError, match=re.escape(message)):
        api.evaluate("import jax.numpy as jnp\nfrom jax import lax\n" + line + "\n", fixes=False)


LAX_BRANCHES = """import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
from jax import lax

steps = 3
start = 1

def f(x):
    return lax.cond(x > 0, lambda v: jnp.sin(v) * v, lambda v: v ** 3, x)

def s(x, w):
    branches = [lambda a, b: a * b, lambda a, b: a + b, lambda a, b: jnp.exp(a - b)]
    return lax.switch(2, branches, x, w) + lax.switch(-1, branches, x, w) + lax.switch(9, branches, x, w)

def halve(x):
    def cond(c):
        return c[0] < 5
    def body(c):
        i, v = c
        return i + 1, jnp.sqrt(v + x)
    return lax.while_loop(cond, body, (0, 1.0))[1]

def r(x):
    return lax.fori_loop(start, start + steps, lambda i, v: v * x + i, 1.0)

A = jnp.array([[2.0, 1.0], [1.0, 3.0]])
print(f(1.3))
print(jax.grad(f)(1.3))
print(f(-1.3))
print(jax.grad(f)(-1.3))
print(s(0.5, 2.0))
print(jax.grad(s, argnums=(0, 1))(0.5, 2.0))
print(halve(2.0))
print(jax.jvp(halve, (2.0,), (1.0,))[1])
print(jax.grad(halve)(2.0))
print(r(1.5))
print(jax.grad(r)(1.5))
print(jnp.linalg.cond(A))
"""
JAX_BRANCHES = {  # JAX 0.10.2, x64, as printed
    "f(1.3)": 1.2526256410423509, "jax.grad(f)(1.3)": 1.3113066626291565,
    "f(-1.3)": -2.1970000000000005, "jax.grad(f)(-1.3)": 5.07,
    "s(0.5, 2.0)": 1.4462603202968598,  # the index clamped into range, as JAX does
    "jax.grad(s, argnums=(0, 1))(0.5, 2.0)": [2.44626032, 0.05373968],  # (JAX prints 8 digits)
    "halve(2.0)": 1.9989291749527314, "jax.jvp(halve, (2.0,), (1.0,))[1]": 0.3338742194224564,
    # JAX refuses reverse mode through while_loop ("Reverse-mode differentiation does not work for
    # lax.while_loop"); the unrolled loop's gradient is the forward-mode derivative above
    "jax.grad(halve)(2.0)": 0.3338742194224564,
    "r(1.5)": 11.625, "jax.grad(r)(1.5)": 11.75,  # bounds from top-level names the program writes
    "jnp.linalg.cond(A)": 2.6180339887498953,  # linalg's cond is still the condition number
}


def test_lax_cond_switch_and_while_loop_give_jax_s_values_and_gradients():
    outputs = api.evaluate(LAX_BRANCHES, fixes=False).outputs
    for name, expected in JAX_BRANCHES.items():
        np.testing.assert_allclose(outputs[name], expected, rtol=1e-8 if isinstance(expected, list) else 1e-14,
                                   err_msg=name)


@pytest.mark.parametrize("feeds, line, message", [
    ({"x": 2.0}, "y = lax.cond(x > 0, lambda v: v, lambda v: -v, x)",
     "this lax.cond's predicate depends on the data, which is not known before evaluation: compute both "
     "branches and choose with jnp.where(pred, true_fun(x), false_fun(x))"),
    ({"x": 2.0}, "y = lax.while_loop(lambda v: v < x, lambda v: v * 2, 1.0)",
     "this lax.while_loop's condition depends on the data"),
    ({}, "y = lax.while_loop(lambda v: v > 0, lambda v: v + 1, 1.0)",
     "lax.while_loop: the program expands to more than 10,000 passes of a while loop"),
    ({"n": 3.0}, "y = lax.fori_loop(0, n, lambda i, v: v * 2, 1.0)",
     "upper must be known before evaluation: this one depends on a value given from outside (--set, a file)"),
    ({}, "y = lax.cond(1 > 0, 1.0, 2.0)", "lax.cond(pred, true_fun, false_fun, *operands): the branches must be functions"),
    ({}, "y = lax.switch(0, [1.0, 2.0], 3.0)", "lax.switch(index, branches, *operands): the branches must be functions"),
    ({}, "y = lax.switch(0, lambda v: v, 3.0)", "lax.switch(index, branches, *operands): the branches must be functions"),
    ({}, "y = lax.while_loop(lambda v: v < 3, lambda v: (v, v), 0.0)", "body_fun must return a carry of init_val's structure"),
    ({}, "y = lax.scan(lambda c, r: (c + r, r), 0.0, jnp.ones((0, 2)))", "a scan of zero steps is not supported"),
])
def test_lax_branches_known_only_from_the_data_are_refused_with_what_to_write(feeds, line, message):
    with pytest.raises(GradcliError, match=re.escape(message)) as caught:
        api.evaluate("import jax.numpy as jnp\nfrom jax import lax\n" + line + "\n", feeds=feeds, fixes=False)
    assert caught.value.pos is not None and caught.value.pos.line == 3


def test_a_range_bound_the_program_writes_is_known_and_one_given_from_outside_is_refused():
    program = "n = 3\nx = 2.0\ny = x\nfor i in range(n):\n    y = y * x\n"
    result = api.grad(program, wrt=["x"], fixes=False)
    assert (float(result.outputs["y"]), float(result.gradients["x"])) == (16.0, 32.0)  # x**4, 4 x**3
    with pytest.raises(GradcliError, match=re.escape("a range() bound must be known before evaluation")):
        api.grad(program, wrt=["x"], feeds={"n": 4.0}, fixes=False)


JAX_CHECK = """import jax
from jax.test_util import check_grads
import jax.numpy as jnp
check_grads(jnp.sin, (1.0,), order=2)
check_grads(lambda a, b: jnp.sum(a * jnp.tanh(b)), (jnp.array([1.0, 2.0]), jnp.array([0.3, -0.2])), 2, atol=1e-6)
@jax.custom_jvp
def f(x):
    return jnp.sin(x)
@f.defjvp
def f_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return f(x), {slope} * t
check_grads(f, (1.0,), order=1)
y = f(1.0)
"""


def test_jax_s_check_grads_passes_a_right_rule_and_raises_on_a_wrong_one():
    # JAX 0.10.2 (x64): the first three checks pass (None); with the slope 2.0 the custom rule is
    # wrong, and check_grads raises AssertionError at line 14
    right = api.evaluate(JAX_CHECK.format(slope="jnp.cos(x)"), fixes=False).outputs
    assert float(right["y"]) == pytest.approx(np.sin(1.0), rel=1e-15)
    with pytest.raises(GradcliError, match=re.escape("Derivative check of f failed (order 1)")) as caught:
        api.evaluate(JAX_CHECK.format(slope="2.0"), fixes=False)
    assert "(JAX: AssertionError)" in str(caught.value) and caught.value.pos.line == 14


@pytest.mark.parametrize("program, expected", [
    # NumPy 2.4.6, PyTorch 2.13.0, TensorFlow 2.21.0 printed True/False (gradcli: 1.0/0.0)
    ("import numpy as np\nx = np.array([[1.0, -2.0], [3.0, 0.0]])\n"
     "print(np.all(x > -5), np.any(x < -1), np.all(x, axis=0), (x > 0).any(axis=1), x.all())\n",
     {"np.all(x > -5)": 1.0, "np.any(x < -1)": 1.0, "np.all(x, axis=0)": [1.0, 0.0],
      "(x > 0).any(axis=1)": [1.0, 1.0], "x.all()": 0.0}),
    ("import torch\nx = torch.tensor([[1.0, -2.0], [3.0, 0.0]])\n"
     "print(torch.all(x > -5), torch.any(x < -1, dim=1), (x != 0).all(dim=0))\n",
     {"torch.all(x > -5)": 1.0, "torch.any(x < -1, dim=1)": [1.0, 0.0], "(x != 0).all(dim=0)": [1.0, 0.0]}),
    ("import tensorflow as tf\nx = tf.constant([[1.0, -2.0], [3.0, 0.0]])\n"
     "print(tf.reduce_all(x > -5), tf.reduce_any(x < -1, axis=1), tf.math.reduce_all(x != 0, axis=0))\n",
     {"tf.reduce_all(x > -5)": 1.0, "tf.reduce_any(x < -1, axis=1)": [1.0, 0.0],
      "tf.math.reduce_all(x != 0, axis=0)": [1.0, 0.0]}),
    ("import numpy as np\nx = np.array([1.0, -2.0])\nprint(all(x > 0), any(x > 0))\n",
     {"all(x > 0)": 0.0, "any(x > 0)": 1.0}),
])
def test_all_and_any_give_each_library_s_truths(program, expected):
    outputs = api.evaluate(program, fixes=False).outputs
    assert list(outputs) == list(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(outputs[name], value)


def test_all_passes_no_gradient_and_python_s_all_of_a_matrix_is_refused():
    result = api.grad("import numpy as np\nx = np.array([1.0, 2.0])\ny = np.sum(x * np.all(x > 0))\n", wrt=["x"],
                      fixes=False)
    np.testing.assert_array_equal(result.gradients["x"], [1.0, 1.0])
    # NumPy: ValueError (the truth value of an array with more than one element is ambiguous)
    with pytest.raises(GradcliError, match=re.escape("all() of an array of 2 axes: Python's built-in all iterates")):
        api.evaluate("import numpy as np\nx = np.ones((2, 2))\nprint(all(x))\n", fixes=False)
    # the while loop the ambiguity message points to: `.all()` of a condition known before evaluation
    program = "x = [1.0, 2.0]\ny = 0.0\nwhile (x > 0).all():\n    x = x - 0.7\n    y = y + 1\n"
    assert float(api.evaluate(program, fixes=False).outputs["y"]) == 2.0
