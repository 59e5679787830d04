"""Python's control flow around the program's values, as the autodiff tutorials write it: `while`
(unrolled while its condition, known before evaluation, holds), comprehensions, loops over zip /
enumerate / a dict's items, `del`, `assert`, item assignment (`x[i] = v`, a functional update),
`a = b = v`, a function ending in if/else returns; each checked against plain Python / NumPy
computing the same thing (gradients against analytic ones or float64 central differences), and
each refusal with its exact sentence and place."""
import math

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

RNG = np.random.default_rng(20261127)
X = RNG.normal(size=3)


def outputs(program, **feeds):
    return api.evaluate(program, feeds=feeds, fixes=False).outputs


def refusal(program, **feeds):
    with pytest.raises(GradcliError) as info:
        api.evaluate(program, feeds=feeds, fixes=False)
    return info.value


def assert_refused(program, message, line, column, **feeds):
    err = refusal(program, **feeds)
    assert str(err) == message
    assert (err.pos.line, err.pos.column) == (line, column)


# --------------------------------------------------------------------------- while
TAYLOR_SINE = """
def taylor_sine(x):
    ans = currterm = x
    i = 0
    while abs(currterm) > 0.001:
        currterm = -currterm * x**2 / ((2 * i + 3) * (2 * i + 2))
        ans = ans + currterm
        i += 1
    return ans
"""


def _taylor_sine(x):  # the same loop in plain Python: the reference
    ans = currterm = x
    i = 0
    while abs(currterm) > 0.001:
        currterm = -currterm * x ** 2 / ((2 * i + 3) * (2 * i + 2))
        ans = ans + currterm
        i += 1
    return ans


def test_a_while_loop_runs_while_its_condition_known_before_evaluation_holds():
    got = outputs("i = 0\ntotal = 0.0\nwhile i < 5:\n    total = total + i * i\n    i += 1\nprint(total)\n")
    assert float(got["total"]) == sum(k * k for k in range(5))


def test_a_while_loop_inside_a_function_is_unrolled_and_differentiated_as_its_passes():
    program = "from autograd import grad\n" + TAYLOR_SINE + "y = taylor_sine(3.0)\ng = grad(taylor_sine)(3.0)\n" \
        "print(y)\nprint(g)\n"
    got = outputs(program)
    assert float(got["y"]) == pytest.approx(_taylor_sine(3.0), rel=1e-14)
    h = 1e-6  # the loop makes the same passes at x +- h: the derivative of this truncation
    assert float(got["g"]) == pytest.approx((_taylor_sine(3.0 + h) - _taylor_sine(3.0 - h)) / (2 * h), rel=1e-8)
    # given from outside, the loop's length would depend on the data
    err = refusal(TAYLOR_SINE + "y = taylor_sine(x)\n", x=np.float64(3.0))
    assert str(err).startswith("this while loop's condition depends on the data")
    assert (err.pos.line, err.pos.column) == (5, 25)


def test_a_while_condition_on_data_given_from_outside_is_refused_with_the_rewrite():
    assert_refused("y = 0.0\nwhile y < sum(x):\n    y = y + 1\n",
                   "this while loop's condition depends on the data, which is not known before evaluation: "
                   "gradcli unrolls a loop whose condition is known then (constants, counters, values written "
                   "in the program); loop a fixed number of times (for i in range(N)) and choose each step's "
                   "value with where(condition, a, b)", 2, 9, x=X)


def test_a_while_loop_that_does_not_end_is_stopped_at_the_pass_limit():
    assert_refused("x = 1.0\nwhile True:\n    x = x + 1\n",
                   "the program expands to more than 10,000 passes of a while loop (the loop is unrolled: does "
                   "its condition become false?)", 2, 1)


# --------------------------------------------------------------------------- loops and comprehensions
def test_comprehensions_unroll_over_rows_with_their_filters_and_nested_clauses():
    got = outputs("import numpy as np\nxs = np.array([1., -2., 3.])\n"
                  "a = np.array([v * 2 for v in xs if v > 0])\n"
                  "b = sum(v * w for v in xs for w in (1.0, 10.0))\n"
                  "c = sum([i * v for i, v in enumerate(xs)])\n"
                  "print(a)\nprint(b)\nprint(c)\n")
    np.testing.assert_array_equal(got["a"], [2.0, 6.0])
    assert float(got["b"]) == 11.0 * (1 - 2 + 3)
    assert float(got["c"]) == 0 * 1 - 1 * 2 + 2 * 3


def test_a_comprehension_over_inputs_has_the_gradient_of_what_it_unrolls_to():
    program = ("def first_differences(f, x, eps=1e-3):\n"
               "    return jnp.array([(f(x + eps * v) - f(x - eps * v)) / (2 * eps) for v in jnp.eye(len(x))])\n"
               "y = first_differences(lambda z: jnp.sum(z ** 3), x)\n")
    got = outputs(program, x=X)
    np.testing.assert_allclose(got["y"], 3 * X ** 2 + 1e-6, rtol=1e-9)  # central difference of a cube


def test_loops_run_over_zip_enumerate_and_a_dicts_items():
    got = outputs("d = {'a': 2.0, 'b': 3.0}\nt = 0.0\n"
                  "for k, v in d.items():\n    t = t + v\n"
                  "for p, q in zip((1.0, 2.0), (3.0, 4.0)):\n    t = t + p * q\n"
                  "for i, p in enumerate((5.0, 6.0), start=1):\n    t = t + i * p\n"
                  "e = {k: v * 10 for k, v in d.items()}\n"
                  "print(t)\nprint(e['b'])\n")
    assert float(got["t"]) == 2 + 3 + 1 * 3 + 2 * 4 + 1 * 5 + 2 * 6
    assert float(got["e['b']"]) == 30.0


def test_a_comprehension_filter_on_data_is_refused_with_the_rewrite():
    assert_refused("y = [v for v in x if v > 0]\n",
                   "this comprehension's if depends on the data, which is not known before evaluation: keep "
                   "every item and choose with where(condition, a, b)", 1, 24, x=X)


def test_a_loop_over_a_single_number_is_refused():
    assert_refused("t = 0.0\nfor v in 3.0:\n    t = t + v\n",
                   "a loop runs over range(N), a tuple or a list, a dict, zip(...) or enumerate(...) of them, "
                   "or an array's rows: not over a single number", 2, 10)


# --------------------------------------------------------------------------- del
def test_del_unbinds_a_name_and_a_later_use_names_the_del():
    assert_refused("x = 2.0\ny = x * 3\ndel x\nz = x + 1\n", "'x' is used after `del x` (line 3)", 4, 5)
    got = outputs("x = 2.0\ny = x * 3\ndel x\nx = 5.0\nz = x + y\n")
    assert float(got["z"]) == 11.0


def test_del_inside_a_function_hides_the_local_not_a_global_of_the_same_name():
    assert_refused("x = 1.0\ndef f(a):\n    x = a * 2\n    del x\n    return x\ny = f(3.0)\n",
                   "'x' is used after `del x` (line 4)", 5, 12)


def test_del_of_a_name_not_bound_is_refused():
    assert_refused("del nothing\n", "name 'nothing' is not defined, so it cannot be deleted", 1, 5)


# --------------------------------------------------------------------------- assert
def test_an_assert_known_before_evaluation_passes_or_fails_with_its_message_at_its_place():
    got = outputs("x = 2.0\nassert x > 0, 'positive'\ny = x * 3\n")
    assert float(got["y"]) == 6.0
    assert_refused("x = 2.0\nassert x < 0, 'x must be negative'\n", "assertion failed: x must be negative", 2, 1)
    assert_refused("def f(x, z):\n    assert z != 0\n    return x / z\ny = f(1.0, 0.0)\n",
                   "assertion failed: z != 0", 2, 5)


def test_an_assert_on_data_given_from_outside_is_checked_after_each_evaluation_never_skipped():
    program = "assert sum(x) > 0, 'x must have a positive sum'\ny = x * 2\n"
    np.testing.assert_array_equal(outputs(program, x=np.abs(X))["y"], 2 * np.abs(X))
    r = api.grad(program, wrt=["x"], feeds={"x": np.abs(X)}, fixes=False)
    np.testing.assert_array_equal(r.gradients["x"], [2.0, 2.0, 2.0])
    assert_refused(program, "assertion failed: x must have a positive sum", 1, 1, x=-np.abs(X))
    with pytest.raises(GradcliError) as info:
        api.grad(program, wrt=["x"], feeds={"x": -np.abs(X)}, fixes=False)
    assert str(info.value) == "assertion failed: x must have a positive sum"
    with pytest.raises(GradcliError) as info:
        api.jacobian(program, wrt=["x"], feeds={"x": -np.abs(X)})
    assert str(info.value) == "assertion failed: x must have a positive sum"


# --------------------------------------------------------------------------- assignment targets
def test_item_assignment_is_a_new_value_with_the_gradient_of_the_update():
    program = "y = x * 1.0\ny[1] = 3 * x[0]\ny[2] += x[0]\nloss = sum(y ** 2)\n"
    r = api.grad(program, wrt=["x"], feeds={"x": X}, fixes=False)
    x0, _, x2 = X
    assert float(r.outputs["loss"]) == pytest.approx(x0 ** 2 + 9 * x0 ** 2 + (x2 + x0) ** 2, rel=1e-14)
    # loss = 10 x0^2 + (x2 + x0)^2: x[1] was overwritten, so it has no gradient
    np.testing.assert_allclose(r.gradients["x"], [20 * x0 + 2 * (x2 + x0), 0.0, 2 * (x2 + x0)], rtol=1e-14)


def test_a_masked_item_assignment_with_a_mask_known_before_evaluation():
    # PyTorch's own example (torch 2.13 printed x.grad = [0., 1.])
    got = outputs("import torch\nx = torch.tensor([1., 1.], requires_grad=True)\ndiv = torch.tensor([0., 1.])\n"
                  "mask = div != 0\nsafe = torch.zeros_like(x)\nsafe[mask] = x[mask] / div[mask]\n"
                  "safe.sum().backward()\nprint(x.grad)\n")
    np.testing.assert_array_equal(got["x.grad"], [0.0, 1.0])


def test_item_assignment_in_a_pytorch_leaf_is_refused_as_pytorch_refuses_it():
    # torch 2.13: "a view of a leaf Variable that requires grad is being used in an in-place operation."
    assert_refused("import torch\nx = torch.tensor([1., 2.], requires_grad=True)\nx[0] = 5.0\n",
                   "a view of a leaf Variable that requires grad is being used in an in-place operation "
                   "(PyTorch: RuntimeError): update it inside `with torch.no_grad():`, or assign into a copy "
                   "(y = x.clone(); y[i] = v)", 3, 2)
    # under no_grad it is updated and stays the leaf (torch 2.13 printed tensor([10., 4.]))
    got = outputs("import torch\nx = torch.tensor([1., 2.], requires_grad=True)\nwith torch.no_grad():\n"
                  "    x[0] = 5.0\n(x * x).sum().backward()\nprint(x.grad)\n")
    np.testing.assert_array_equal(got["x.grad"], [10.0, 4.0])
    # into a clone (torch 2.13 printed tensor([5., 4.]))
    got = outputs("import torch\nx = torch.tensor([1., 2.], requires_grad=True)\ny = x.clone()\ny[0] = 5.0\n"
                  "(y * x).sum().backward()\nprint(x.grad)\n")
    np.testing.assert_array_equal(got["x.grad"], [5.0, 4.0])


def test_setting_a_grad_to_none_forgets_what_backward_accumulated():
    # torch 2.13 printed tensor([3., 3.]) (without the reset: [5., 7.])
    got = outputs("import torch\nx = torch.tensor([1., 2.], requires_grad=True)\n(x * x).sum().backward()\n"
                  "x.grad = None\n(3 * x).sum().backward()\nprint(x.grad)\n")
    np.testing.assert_array_equal(got["x.grad"], [3.0, 3.0])


def test_a_chained_assignment_binds_every_name():
    got = outputs("a = b = 2.0\nc = a * b\n")
    assert float(got["c"]) == 4.0


def test_an_attribute_of_an_expression_cannot_be_assigned():
    err = refusal("(x + 1)[0] = 2.0\n", x=X)
    assert str(err) == "an item can be assigned in an array named by a plain name (x[i] = v)"


# --------------------------------------------------------------------------- a function's if/else returns
def test_a_function_ending_in_if_else_returns_gives_the_branch_chosen_before_evaluation():
    program = ("def f(x, square):\n    if square:\n        return x * x\n    elif square is None:\n"
               "        return x\n    else:\n        return -x\n"
               "a = f(3.0, True)\nb = f(3.0, False)\nprint(a)\nprint(b)\n")
    got = outputs(program)
    assert (float(got["a"]), float(got["b"])) == (9.0, -3.0)


def test_a_function_returns_none_where_its_body_falls_through_as_in_python():
    program = ("def f(x, k):\n    if k > 0:\n        return x * k\nprint(f(2.0, 3.0), f(2.0, -1.0))\n"
               "def g(x, k):\n    if k > 0:\n        y = x\n    elif k < -5:\n        return -x\n    else:\n"
               "        return x * 2\nprint(g(1.0, 1.0), g(1.0, -9.0), g(1.0, -1.0))\n")
    got = outputs(program)  # Python 3.11: 6.0 None None -1.0 2.0
    assert [None if got[k] is None else float(got[k]) for k in got] == [6.0, None, None, -1.0, 2.0]


def test_the_value_of_a_function_without_a_return_is_the_error_of_a_return_left_out():
    # called on its own line it runs for what it does; its value used is the missing return
    err = refusal("def h(x):\n    y = x * 2\nprint(h(1.0))\n")
    assert str(err).startswith("the body of 'h' must end with 'return EXPR': its value is used at line 3")
    assert (err.pos.line, err.pos.column) == (2, 5)


# --------------------------------------------------------------------------- printing
def test_a_printed_tuple_of_different_shapes_is_output_item_by_item():
    got = outputs("from autograd import value_and_grad\nimport autograd.numpy as np\n"
                  "f = value_and_grad(lambda x: np.sum(x ** 2))\nprint(f(np.array([1.0, 2.0])))\n")
    assert float(got["f(np.array([1.0, 2.0]))[0]"]) == 5.0
    np.testing.assert_array_equal(got["f(np.array([1.0, 2.0]))[1]"], [2.0, 4.0])


def test_a_printed_expression_keeps_its_opening_bracket_in_its_key():
    got = outputs("x = 3.0\nprint((x + 1) * 2)\nprint((math.tanh(1.0001) - math.tanh(0.9999)) / 0.0002)\n")
    assert float(got["(x + 1) * 2"]) == 8.0
    assert float(got["(math.tanh(1.0001) - math.tanh(0.9999)) / 0.0002"]) == pytest.approx(
        (math.tanh(1.0001) - math.tanh(0.9999)) / 0.0002, rel=1e-14)


def test_full_of_a_computed_value_is_that_value_broadcast_with_its_gradient():
    # autograd's vjp rules write np.full(x.shape, g) with g computed
    r = api.grad("y = sum(np.full((2, 3), x) * w)", wrt=["x"], feeds={"x": np.float64(2.0),
                                                                      "w": np.arange(6.0).reshape(2, 3)})
    assert float(r.outputs["y"]) == 2.0 * 15.0
    assert float(r.gradients["x"]) == 15.0


def test_type_name_is_a_label_naming_the_librarys_type():
    # TensorFlow's guide prints type(x).__name__ beside each gradient: a label, not an output
    program = ("import tensorflow as tf\nx = tf.Variable(2.0)\nfor epoch in range(2):\n"
               "    with tf.GradientTape() as tape:\n        y = x + 1\n"
               "    print(type(x).__name__, ':', tape.gradient(y, x))\n    x = x + 1\n")
    got = outputs(program)
    # each pass's print is an output (TensorFlow 2.21 prints 1.0, then None: x is no Variable then)
    assert list(got) == ["tape.gradient(y, x) #1", "tape.gradient(y, x)"]
    assert float(got["tape.gradient(y, x) #1"]) == 1.0 and got["tape.gradient(y, x)"] is None
    assert api.evaluate("import torch\nx = torch.ones(2)\nprint(type(x).__name__)\ny = x\n").outputs.keys() == {"y"}


def test_an_assert_message_written_as_an_f_string_shows_the_values_known_then():
    assert_refused("for i in range(3):\n    assert i < 2, f'i is {i}, {i * 2.5=}'\n",
                   "assertion failed: i is 2, i * 2.5=5", 2, 5)


TRAINING_LOOP = """import torch
w = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
y = torch.tensor([1.0, 0.0], dtype=torch.float64)
for epoch in range(3):
    loss = ((x @ w - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.01 * w.grad
        w.grad.zero_()
    print(epoch, loss.item())
print(w)
"""


def test_a_print_in_a_loop_outputs_every_pass_numbered_but_the_last():
    # PyTorch 2.13.0 (float64) printed 0 20.5, 1 10.7593, 2 5.966266279999999, then
    # tensor([ 1.41278399999999982, -1.38313200000000003]); `w.grad.zero_()` in the loop shows nothing
    got = outputs(TRAINING_LOOP)
    assert list(got) == ["epoch #1", "loss.item() #1", "epoch #2", "loss.item() #2", "epoch", "loss.item()", "w"]
    assert [float(got[k]) for k in ("loss.item() #1", "loss.item() #2", "loss.item()")] == \
        pytest.approx([20.5, 10.7593, 5.966266279999999], rel=1e-15)
    assert [float(got[k]) for k in ("epoch #1", "epoch #2", "epoch")] == [0.0, 1.0, 2.0]
    np.testing.assert_allclose(got["w"], [1.41278399999999982, -1.38313200000000003], rtol=1e-15)


def test_a_bare_expression_inside_a_loop_is_shown_only_where_nothing_else_is():
    assert list(outputs("x = [1.0, 2.0]\nfor i in range(2):\n    x * i\nprint(x)\n")) == ["x"]
    shown = outputs("import numpy as np\nfor i in range(3):\n    np.float64(i) * 2.0\n")
    assert list(shown) == ["_"] and float(shown["_"]) == 4.0  # the last pass, as the program's value


def test_a_print_inside_a_function_prints_at_each_call():
    got = outputs("def f(x):\n    y = x * 2\n    print(y)\n    return y + 1\nz = 0.0\nfor i in range(2):\n"
                  "    z = f(z)\nprint(z)\n")
    assert list(got) == ["y #1", "y", "z"] and [float(v) for v in got.values()] == [0.0, 2.0, 3.0]
    # under jax.grad the value printed is the primal (JAX prints its tracer there)
    got = outputs("import jax\ndef f(x):\n    y = x * 2\n    print(y)\n    return y * y\nprint(jax.grad(f)(3.0))\n")
    assert float(got["y"]) == 6.0 and float(got["jax.grad(f)(3.0)"]) == 24.0


@pytest.mark.parametrize("program, expected", [
    ("x = [1.0, 2.0, 3.0]\ny = list(x)\nz = y[1] * 2\n", 4.0),  # a list's items
    ("import numpy as np\nx = np.ones((2, 3))\nt = tuple(x.shape)\nz = t[1] * 1.0\n", 3.0),
    ("a = list((1.0, 2.0))\nz = a[0] + a[1]\n", 3.0),
    ("import numpy as np\nx = np.array([[1.0, 2.0], [3.0, 4.0]])\nrows = list(x)\nz = rows[1][0]\n", 3.0),  # an array's rows
])
def test_list_and_tuple_of_a_sequence_are_its_items(program, expected):
    assert float(outputs(program)["z"]) == expected


def test_a_for_loop_unpacks_nested_targets():
    program = ("ps = [(1.0, 2.0), (3.0, 4.0)]\ny = 0.0\nfor i, (w, b) in enumerate(ps):\n    y = y + w * b * (i + 1)\n"
               "print(y)\nfor (a, b), c in zip(ps, [10.0, 20.0]):\n    y = y + a * c\nprint(y)\n")
    got = outputs(program)  # Python: 26.0, then 96.0
    assert (float(got["y #1"]), float(got["y"])) == (26.0, 96.0)


def test_a_training_function_without_a_return_runs_for_what_it_does():
    # TensorFlow 2.21.0 printed Epoch 0: w=1.9967 ... and the Variable's 1.9939407407407408
    program = """import tensorflow as tf
w = tf.Variable(2.0, dtype=tf.float64)
xs = tf.constant([1.0, 2.0, 3.0], dtype=tf.float64)
ys = tf.constant([2.0, 4.1, 5.9], dtype=tf.float64)
def train(epochs, learning_rate):
    for epoch in range(epochs):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * xs - ys) ** 2)
        dw = tape.gradient(loss, w)
        w.assign_sub(learning_rate * dw)
        print(f"Epoch {epoch}: w={w.numpy():.4f}, loss={loss.numpy():.6f}")
train(3, 0.05)
print(w)
"""
    got = outputs(program)
    assert float(got["w"]) == pytest.approx(1.9939407407407408, rel=1e-15)
    assert [round(float(got[k]), 4) for k in ("w.numpy() #1", "w.numpy() #2", "w.numpy()")] == [1.9967, 1.9949, 1.9939]


def test_f_string_fields_split_their_format_spec_at_no_bracket_s_depth():
    program = ("import numpy as np\nw = np.array([[1.0, 2.0], [3.0, 4.0]])\nd = {'a:b': 2.0}\n"
               "print(f\"first column {w[:, 0]} and {w[0, 1]:.2f} {w[1][0:1]} {d['a:b']!r} {(lambda v: v * 2)(3.0)}\")\n")
    got = outputs(program)  # Python 3.11: first column [1. 3.] and 2.00 [3.] 2.0 6.0
    assert list(got) == ["w[:, 0]", "w[0, 1]", "w[1][0:1]", "d['a:b']", "(lambda v: v * 2)(3.0)"]
    assert [np.ravel(v).tolist() for v in got.values()] == [[1.0, 3.0], [2.0], [3.0], [2.0], [6.0]]
