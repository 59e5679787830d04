"""Readings that depend on what an argument is written as, not only on the spelling.

Integer tensors of pasted code: gradcli computes in floating point, so where a library answers
otherwise on integers (TensorFlow's integer mean) or refuses them (PyTorch's mean, every
library's integer to a negative integer power), the call is refused saying what the library does;
where the library's answer is the floating-point one, it is given. Each library's own answer,
as it printed it, is in the comments (TensorFlow 2.21.0, PyTorch 2.13.0+cpu, NumPy 2.4.6,
JAX 0.10.2). Also a bool where PyTorch reads one (`torch.std(x, False)`), and `tf.norm`'s `ord`
without an axis."""
import subprocess
import sys

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

TF, TORCH, NP = "import tensorflow as tf\n", "import torch\n", "import numpy as np\n"


def value(program):
    return next(iter(api.evaluate(program).outputs.values()))


def refusal(program) -> str:
    with pytest.raises(GradcliError) as info:
        api.evaluate(program)
    return str(info.value)


@pytest.mark.parametrize("program,words", [
    # tf.reduce_mean(tf.constant([1, 2])) -> tf.Tensor(1, shape=(), dtype=int32)
    (TF + "y = tf.reduce_mean(tf.constant([1, 2]))", "tf.reduce_mean of an integer tensor is an integer division in "
                                                      "TensorFlow (tf.reduce_mean([1, 2]) is 1, not 1.5)"),
    # tf.reduce_mean([1, 2]) -> 1; tf.reduce_mean(tf.range(4)) -> 1
    (TF + "y = tf.reduce_mean([1, 2])", "integer division in TensorFlow"),
    (TF + "y = tf.math.reduce_mean(tf.range(4))", "tf.math.reduce_mean of an integer tensor"),
    (TF + "y = tf.reduce_mean(input_tensor=[1, 2])", "integer division in TensorFlow"),
    # tf.reduce_mean(tf.constant([[1, 2], [3, 6]]), 0) -> [2 4]
    (TF + "x = tf.constant([[1, 2], [3, 6]])\ny = tf.reduce_mean(x, 0)", "integer division in TensorFlow"),
    # tf.math.reduce_std(tf.constant([1, 2])) -> TypeError: Input must be either real or complex.
    (TF + "y = tf.math.reduce_std(tf.constant([1, 2]))", "is an error in TensorFlow (TypeError: Input must be"),
    # torch.mean(torch.tensor([1, 2, 3])) -> RuntimeError: mean(): could not infer output dtype. ...
    (TORCH + "y = torch.tensor([1, 2, 3]).mean()", ".mean() of an integer tensor is an error in PyTorch (RuntimeError: "
                                                   "mean(): could not infer output dtype"),
    (TORCH + "y = torch.mean(torch.arange(4))", "torch.mean of an integer tensor is an error in PyTorch"),
    # torch.tensor([1, 2, 3]).var() -> RuntimeError: std and var only support floating point and complex dtypes
    (TORCH + "y = torch.var(torch.tensor([1, 2, 3]))", "(RuntimeError: std and var only support floating point"),
    (TORCH + "x = torch.tensor([1, 2, 3])\ny = x.std()", ".std() of an integer tensor"),
    # np.array([1, 2, 3]) ** -1 -> ValueError: Integers to negative integer powers are not allowed.
    # (torch and tf: the same words; jnp: TypeError: Integers cannot be raised to negative powers)
    (NP + "y = np.array([1, 2, 3]) ** -1", "**: integers to a negative integer power are an error"),
    (NP + "y = np.power(np.arange(1, 4), -2)", "np.power: integers to a negative integer power"),
    (TORCH + "y = torch.tensor([1, 2]) ** -1", "Integers to negative integer powers are not allowed"),
])
def test_what_a_library_does_otherwise_on_integers_is_refused_naming_it(program, words):
    message = refusal(program)
    assert words in message and "gradcli computes in floating point" in message, message


@pytest.mark.parametrize("program,expected", [
    # tf.reduce_mean(tf.constant([1., 2])) -> 1.5; tf.reduce_mean(tf.constant([1, 2], tf.float32)) -> 1.5
    (TF + "y = tf.reduce_mean(tf.constant([1., 2]))", 1.5),
    (TF + "y = tf.reduce_mean(tf.constant([1, 2], tf.float32))", 1.5),
    (TF + "y = tf.reduce_mean(tf.constant([1, 2], dtype=tf.float64))", 1.5),
    (TF + "y = tf.reduce_mean(tf.cast(tf.constant([1, 2]), tf.float32))", 1.5),
    # keras.ops.mean promotes: tf.keras.ops.mean(tf.constant([1, 2])) -> 1.5 (float32)
    (TF + "y = tf.keras.ops.mean(tf.constant([1, 2]))", 1.5),
    # NumPy's and JAX's mean of integers is a float: np.mean(np.array([1, 2])) -> 1.5
    (NP + "y = np.mean(np.array([1, 2]))", 1.5),
    (TORCH + "y = torch.tensor([1, 2, 4]).float().mean()", np.float32(7 / 3)),  # (float32: tensor(2.3333))
    (TORCH + "y = torch.as_tensor([1, 2], torch.float64).mean()", 1.5),
    # np.array([1, 2, 3], float) ** -1 -> [1. 0.5 0.33333333]; Python's 2 ** -1 -> 0.5
    (NP + "y = np.array([1, 2, 4], float) ** -1", [1, 0.5, 0.25]),
    (NP + "y = np.array([1, 2, 4]) ** -1.0", [1, 0.5, 0.25]),
    (NP + "y = 2 ** -1", 0.5),
])
def test_where_the_library_answers_in_floating_point_the_answer_is_given(program, expected):
    np.testing.assert_array_equal(value(program), expected)


def test_gradcli_s_own_language_reads_integers_as_numbers():
    """Not pasted code (no library imported): every number is a float64, as the language says."""
    assert value("y = mean([1, 2])") == 1.5
    np.testing.assert_array_equal(value("y = [1, 2, 4] ** -1"), [1, 0.5, 0.25])


def test_an_integer_call_written_again_after_a_float_one_is_still_refused():
    """The reading of a spelling is remembered for the next call written the same way: never
    where the argument's being integers decides."""
    message = refusal(TF + "a = tf.reduce_mean(tf.constant([1., 2.]))\nb = tf.reduce_mean(tf.constant([1, 2]))")
    assert message.startswith("tf.reduce_mean of an integer tensor")


def test_the_refusal_is_a_positioned_exit_2():
    done = subprocess.run([sys.executable, "-m", "gradcli", "eval", "-e", TF + "y = tf.reduce_mean([1, 2])"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("<expr>:2:5: error: tf.reduce_mean of an integer tensor"), done.stderr


def test_a_tape_watches_a_constant_given_a_float_dtype_as_its_second_argument():
    """tf.constant([1, 2], tf.float32) is float32 (TensorFlow 2.21.0: the tape's gradient of
    sum(x * x) is [2. 4.]); its dtype was refused as a second argument before."""
    program = (TF + "x = tf.constant([1, 2], tf.float32)\nwith tf.GradientTape() as t:\n    t.watch(x)\n"
               "    y = tf.reduce_sum(x * x)\ng = t.gradient(y, x)")
    np.testing.assert_array_equal(api.evaluate(program).outputs["g"], [2.0, 4.0])


# --------------------------------------------------------------------------- booleans and positions

X2 = "x = torch.tensor([[3., 1., 5.], [2., -4., 0.5]])\n"


def test_a_bool_second_to_torch_std_is_unbiased_not_a_dimension_and_is_refused():
    """PyTorch 2.13.0: torch.std(x, False) -> tensor(2.7651) (unbiased=False over every element);
    read as dim=0 it gave the three columns' deviations, a silently different number."""
    for call in ("torch.std(x, False)", "x.std(True)", "torch.var(x, True)"):
        message = refusal(TORCH + X2 + f"y = {call}")
        assert "PyTorch reads it as unbiased" in message and "write unbiased= or correction= by name" in message


@pytest.mark.parametrize("call,expected", [
    # x.std(0, True, True) -> tensor([[0.7071, 3.5355, 3.1820]]); torch.var(x, 1, False, True) -> [[2.6667], [6.5000]]
    ("x.std(0, True, True)", [[0.5 ** 0.5, 12.5 ** 0.5, 10.125 ** 0.5]]),
    ("torch.var(x, 1, False, True)", [[8 / 3], [6.5]]),
    ("torch.var(x, 1, False)", [8 / 3, 6.5]),
    ("torch.std(x, dim=1, unbiased=False)", [(8 / 3) ** 0.5, 6.5 ** 0.5]),
])
def test_torch_moments_read_dim_unbiased_keepdim_positionally(call, expected):
    np.testing.assert_allclose(value(TORCH + X2 + f"y = {call}"), expected, rtol=1e-15)


@pytest.mark.parametrize("call,expected", [
    # TensorFlow 2.21.0, A = [[3., 1.], [2., -4.]]: tf.norm(A, 1) -> 10.0, tf.norm(A, np.inf) -> 4.0,
    # tf.norm(A, ord=1) -> 10.0, tf.norm(A) -> 5.477226, tf.norm(A, axis=1) -> [3.1622777 4.472136]
    ("tf.norm(A, 1)", 10.0), ("tf.norm(A, ord=1)", 10.0), ("tf.norm(A, np.inf)", 4.0),
    ("tf.norm(A)", 30 ** 0.5), ("tf.norm(A, axis=1)", [10 ** 0.5, 20 ** 0.5]),
])
def test_tf_norm_without_axis_is_the_norm_of_the_whole_tensor_as_one_vector(call, expected):
    np.testing.assert_allclose(value(TF + NP + f"A = tf.constant([[3., 1.], [2., -4.]])\ny = {call}"), expected,
                               rtol=1e-15)


def test_tf_norm_with_ord_and_axis_is_refused():
    """A pair of axes makes TensorFlow's ord a matrix norm's, one axis a vector norm's: the values decide."""
    message = refusal(TF + "A = tf.constant([[3., 1.], [2., -4.]])\ny = tf.norm(A, ord=2, axis=[0, 1])")
    assert "norm with ord and axis" in message and "matrix_norm(x, ord=..., axis=...)" in message


@pytest.mark.parametrize("program,expected", [
    # TensorFlow 2.21.0's tape gives reduce_sum(tf.maximum(0., x)) at x = [0., 1., -1.] the gradient
    # [0. 1. 0.] (a tie's to the first argument); gradcli splits a tie evenly for every library's
    # maximum, as NumPy's autograd, JAX and PyTorch do (torch.maximum's backward: 0.5 each), and
    # says so in a tie note
    ("y = tf.reduce_sum(tf.maximum(0., x))", [0.5, 1, 0]),
    ("y = tf.reduce_sum(tf.minimum(x, 0.) * tf.constant([1., 2., 3.]))", [0.5, 0, 3]),
    ("y = np.sum(np.maximum(x, 0.))", [0.5, 1, 0]),
])
def test_maximum_and_minimum_split_a_tie_evenly_and_say_so(program, expected):
    result = api.grad(TF + NP + program, wrt=["x"], feeds={"x": np.array([0.0, 1.0, -1.0])})
    np.testing.assert_array_equal(result.gradients["x"], expected)
    ties = [d for d in result.diagnostics if d.kind == "tie"]
    assert len(ties) == 1 and ties[0].message.endswith("the gradient is split evenly between the two arguments there")


JAX = "import jax\nimport jax.numpy as jnp\n"


@pytest.mark.parametrize("program,expected,said", [
    # JAX 0.10.2 (x64), x = [0., 1., -1., 0.5]: jax.grad(lambda x: jnp.sum(jnp.abs(x)))(x) -> [1. 1. -1. 1.]
    ("y = jnp.sum(jnp.abs(x))", [1, 1, -1, 1], "JAX's rule takes the right derivative, 1, there"),
    ("y = jnp.sum(jax.lax.abs(x))", [1, 1, -1, 1], "JAX's rule takes the right derivative, 1, there"),
    # jnp.clip(x, 0., 1.) -> [0.5 0.5 0. 1.]; jnp.clip(x, min=0.) -> [0.5 1. 0. 1.];
    # jnp.clip(x, max=0.5) -> [1. 0. 1. 0.5]
    ("y = jnp.sum(jnp.clip(x, 0., 1.))", [0.5, 0.5, 0, 1], "split evenly"),
    ("y = jnp.sum(jnp.clip(x, min=0.))", [0.5, 1, 0, 1], "split evenly"),
    ("y = jnp.sum(jnp.clip(x, max=0.5))", [1, 0, 1, 0.5], "split evenly"),
    # NumPy's (autograd's), TensorFlow's and PyTorch's: abs' (0) is 0, clip passes the gradient at its bounds
    ("y = np.sum(np.abs(x))", [0, 1, -1, 1], "gradcli uses 0 there"),
    ("y = np.sum(np.clip(x, 0., 1.))", [1, 1, 0, 1], None),
])
def test_jax_s_abs_and_clip_keep_jax_s_derivatives_at_their_kinks(program, expected, said):
    result = api.grad(JAX + NP + program, wrt=["x"], feeds={"x": np.array([0.0, 1.0, -1.0, 0.5])})
    np.testing.assert_array_equal(result.gradients["x"], expected)
    notes = [d.message for d in result.diagnostics if d.kind in ("tie", "kink")]
    assert (notes == []) if said is None else (len(notes) >= 1 and all(said in n for n in notes)), notes


M = "x = np.array([[1., 2.], [3., 4.]])\n"


@pytest.mark.parametrize("program,expected", [
    # Python 3.11 with NumPy 2.4.6: sum(x) of a matrix iterates over its rows -> [4. 6.] (was 10.0, gradcli's
    # own sum of every element); sum(np.ones((2, 2, 3))) -> twos of shape (2, 3); sum(x[0]) -> 3.0
    ("y = sum(x)", [4, 6]), ("y = sum(x * 2) / 2", [4, 6]), ("y = sum(np.ones((2, 2, 3)))", np.full((2, 3), 2.0)),
    ("y = sum(x[0])", 3), ("y = sum([x[0], x[1]])", [4, 6]), ("y = max(x[1])", 4),
])
def test_python_s_sum_of_a_matrix_in_pasted_code_adds_its_rows(program, expected):
    np.testing.assert_array_equal(value(NP + M + program), expected)


def test_python_s_max_of_a_matrix_is_refused_as_python_refuses_it():
    """max(x) compares whole rows: ValueError: The truth value of an array with more than one element is ambiguous."""
    message = refusal(NP + M + "y = max(x)")
    assert message.startswith("max() of an array of 2 axes: Python's built-in max iterates over the first axis")


def test_gradcli_s_own_sum_of_a_matrix_adds_every_element():
    assert value("x = [[1., 2.], [3., 4.]]\ny = sum(x)") == 10.0
