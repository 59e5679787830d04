"""Python as people paste it: the constructs of real NumPy / TensorFlow / JAX / Keras / PyTorch
code that gradcli reads, each checked against NumPy computing the same thing, and the Python
that stays out, each refused with one sentence saying what to write instead."""
import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError, format_error

RNG = np.random.default_rng(20261122)
X = RNG.normal(size=(3, 4))
W = RNG.normal(size=4)


def value(program, **feeds):
    result = api.evaluate(program, feeds=feeds)
    return next(iter(result.outputs.values()))


def refusal(program, **feeds):
    with pytest.raises(GradcliError) as info:
        api.evaluate(program, feeds=feeds)
    return info.value


@pytest.mark.parametrize("program,expected", [
    # prefixes of every kind, for names as well as calls
    ("y = np.pi + math.e + jnp.exp(0)", np.pi + np.e + 1),
    ("y = jax.nn.relu(x) + jax.lax.exp(x) + lax.exp(x)", np.maximum(X, 0) + 2 * np.exp(X)),
    ("y = torch.sigmoid(x) + F.softplus(x)", 1 / (1 + np.exp(-X)) + np.logaddexp(0, X)),
    ("y = scipy.special.expit(x) + special.expit(x)", 2 / (1 + np.exp(-X))),
    ("y = K.exp(x) + keras.ops.exp(x) + ops.exp(x) + keras.backend.exp(x)", 4 * np.exp(X)),
    ("y = tf.keras.activations.relu(x) + math_ops.exp(x) + nn_ops.relu(x)", 2 * np.maximum(X, 0) + np.exp(X)),
    ("import numpy as onp\ny = onp.exp(x) + onp.pi", np.exp(X) + np.pi),
    ("import jax.numpy as jjj\nfrom jax import numpy as kkk\ny = jjj.exp(x) + kkk.sum(x)", np.exp(X) + X.sum()),
    ("import tensorflow as tf\nfrom jax import nn\nimport math\ny = tf.exp(x) + nn.relu(x)", np.exp(X) + np.maximum(X, 0)),
    ("from scipy.special import expit\ny = expit(x)", 1 / (1 + np.exp(-X))),
    # methods and attributes, read as the functions they are (NumPy's methods)
    ("y = x.sum(axis=0)", X.sum(axis=0)),
    ("y = x.T @ x", X.T @ X),
    ("y = (x * 2).T.sum()", 2 * X.sum()),
    ("y = x.T.sum(axis=1) + x.T.T.max(0)", X.T.sum(axis=1) + X.max(0)),
    ("y = x.mean() + x.max(0)", X.mean() + X.max(0)),
    ("y = x.reshape((4, 3))", X.reshape((4, 3))),
    ("y = x.reshape(x.shape[1], -1)", X.reshape(4, -1)),
    ("y = x.shape[0] * x.ndim + x.size + len(x)", 3 * 2 + 12 + 3),
    ("y = reshape(x, [2 * 2, 3])", X.reshape(4, 3)),
    ("y = reshape(x, (2, 6))", X.reshape(2, 6)),
    # operators and statements
    ("y = x % 0.7 + x // 0.7", np.mod(X, 0.7) + np.floor_divide(X, 0.7)),
    ("y = 1.0 if 2 > 1 else 0.0", 1.0),
    ("y = x if 0.5 > 1 else -x", -X),
    ("y = where((x > 0) and (x < 1), 1.0, 0.0) + (not 0) + (x > 1 or x < -1)",
     ((X > 0) & (X < 1)) + 1.0 + ((X > 1) | (X < -1))),
    ("a, b = 1.5, 2.5\ny = a * b", 3.75),
    ("def f(v):\n    return v, 2 * v\np, q = f(x)\ny = p + q", 3 * X),
    # defaults, annotations, nested defs, docstrings, type-annotated assignments
    ("def f(v: float, k: float = 3.0) -> float:\n    '''Scale.'''\n    return v * k\ny = f(x) + f(x, k=1.0)", 4 * X),
    ("def outer(v):\n    s = 2.0\n    def inner(u):\n        return u * s\n    return inner(v) + 1\ny = outer(x)", 2 * X + 1),
    ('"""A module docstring\nover two lines."""\nz: float = 2.0\ny = x * z', 2 * X),
    ("def f(v):\n    \"\"\"Docstring.\"\"\"\n    pass\n    return v\ny = f(x)", X),
    # casts to float64 do not change the numbers; a cast to float32 rounds, as NumPy's and TensorFlow's do
    ("y = tf.cast(x, tf.float32) + x.astype(np.float64) + np.float32(x)",
     2 * X.astype(np.float32).astype(np.float64) + X),
    ("y = tf.constant([1.0, 2.0], dtype=tf.float32) + np.array([3, 4], dtype='float64')", [4.0, 6.0]),
    ("y = K.epsilon() + tf.keras.backend.epsilon()", 2e-7),
])
def test_pasted_python_reads_as_python(program, expected):
    got = value(program, x=X)
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


def test_augmented_assignment_rebinds_step_by_step():
    y = X.copy()
    y = ((y + 1) * 2) ** 2 - X
    y = np.mod(np.floor_divide(y / 3, 1), 5)
    np.testing.assert_allclose(value("y = x\ny += 1\ny *= 2\ny **= 2\ny -= x\ny /= 3\ny //= 1\ny %= 5", x=X), y)


def test_tuple_unpacking_of_an_array_takes_its_rows():
    r = api.evaluate("a, b, c = x\ny = a + 2 * c", feeds={"x": X})
    np.testing.assert_allclose(r.outputs["y"], X[0] + 2 * X[2])
    with pytest.raises(GradcliError, match="cannot unpack 3 values into 2 names"):
        api.evaluate("a, b = x\ny = a", feeds={"x": X})


def test_gradients_flow_through_the_pasted_forms():
    # d/dw of mean((x @ w - t)**2) written the way a tutorial writes it
    program = ("import numpy as onp\n"
               "def loss(w, x, t, scale: float = 1.0):\n"
               "    '''Mean squared error.'''\n"
               "    err = x @ w - t\n"
               "    err **= 2\n"
               "    return scale * err.mean()\n")
    t = RNG.normal(size=3)
    r = api.grad(program, wrt=["w"], feeds={"w": W, "x": X, "t": t})
    assert r.outputs["loss"] == pytest.approx(np.mean((X @ W - t) ** 2), rel=1e-13)
    np.testing.assert_allclose(r.gradients["w"], 2 * X.T @ (X @ W - t) / 3, rtol=1e-12)


def test_a_last_def_is_called_on_the_inputs_named_as_its_parameters():
    r = api.evaluate("def softplus_sum(v, k=2.0):\n    return sum(log(1 + exp(k * v)))\n", feeds={"v": W})
    assert r.outputs["softplus_sum"] == pytest.approx(np.sum(np.log1p(np.exp(2 * W))), rel=1e-13)
    err = refusal("def f(v, u):\n    return v * u\n", v=W)
    assert "missing input 'u'" in str(err)


def test_the_conditional_expression_is_a_where_with_its_gradient():
    r = api.grad("y = sum(x * x if 1 > 0 else x)", wrt=["x"], feeds={"x": W})
    np.testing.assert_allclose(r.gradients["x"], 2 * W)


@pytest.mark.parametrize("program,message,line,column", [
    ("y = 0.0\nwhile sum(x) > y:\n    y = y + 1\n", "this while loop's condition depends on the data", 2, 14),
    ("with x:\n    y = 1\n", "'with' blocks are supported for tf.GradientTape()", 1, 6),
    ("if x > 0:\n    y = 1\n", "this if depends on the data", 1, 6),
    ("class A:\n    y = x + z\nq = A()\nr = q.w\n", "A has no attribute 'w'", 4, 5),
    ("y = print(x)\n", "print() is not needed", 1, 5),
    ("y = tf.cast(x, tf.int32)\n", "a cast to int32 would change the numbers", 1, 16),
    ("y = x and 1\n", "'and' of a value that is not a comparison", 1, 5),
    ("y = x[i]\n", "an index must be a constant integer", 1, 7),
    ("y = x.foo\n", "unknown attribute '.foo'", 1, 5),
    ("y = x.frobnicate()\n", "unknown method '.frobnicate'", 1, 5),
    ("y = 'abc\n", "a string is not closed on its line", 1, 5),
    ("y = 'abc' * 2\n", "the string 'abc' is not a number", 1, 5),
    ("y = x + xx1\nz = sum(xx2)\n", "missing inputs 'xx1', 'xx2'", 1, 9),
    ("xx = 1.0\ny = sum(xxz)\n", "missing input 'xxz' (did you mean xx?)", 2, 9),
])
def test_python_out_of_scope_says_what_to_write_instead(program, message, line, column):
    err = refusal(program, x=W)
    assert message in str(err)
    assert (err.pos.line, err.pos.column) == (line, column), format_error(err)


# --------------------------------------------------------------------------- derive without values
@pytest.mark.parametrize("program,derivative", [
    ("y = x**3 * sin(x)", lambda x: 3 * x**2 * np.sin(x) + x**3 * np.cos(x)),
    ("y = exp(-x**2 / 2)", lambda x: -x * np.exp(-x**2 / 2)),
    ("y = log(1 + exp(x))", lambda x: 1 / (1 + np.exp(-x))),
])
def test_derive_without_values_treats_inputs_as_scalar_symbols(program, derivative):
    printed = api.derive(program, wrt="x")
    assert "\nx = " not in printed  # a symbol: no value is bound
    for x in (-1.3, 0.2, 2.5):
        got = api.evaluate(printed, feeds={"x": x})
        assert next(iter(got.outputs.values())) == pytest.approx(derivative(x), rel=1e-12)


@pytest.mark.parametrize("program,printed", [
    ("y = x ** 2", "dy_dx = 2.0 * x\n"),
    ("y = -(-x) * 3", "dy_dx = 3.0\n"),
    ("y = x ** 3 + x", "dy_dx = 1.0 + 3.0 * x ** 2.0\n"),
])
def test_derive_simplifies_identities_and_double_negations(program, printed):
    assert api.derive(program, wrt="x").endswith(printed)


def test_call_picks_the_function_and_its_arguments():
    program = "def loss(w, x, b=0.5):\n    return sum(w * x) + b\n"
    feeds = {"w": [1.0, 2.0], "v": [3.0, 4.0]}
    r = api.grad(program, wrt=["w"], feeds=feeds, call="loss(w, v, b=1)")
    assert float(r.outputs["loss"]) == 12.0
    np.testing.assert_array_equal(r.gradients["w"], [3.0, 4.0])
    r = api.evaluate(program, feeds=feeds, call="2 * loss(v, w)")
    assert float(r.outputs["_"]) == 2 * (3 + 8 + 0.5)


def test_call_from_the_command_line(tmp_path):
    import subprocess
    import sys
    path = tmp_path / "loss.py"
    path.write_text("def loss(w, x, b=0.5):\n    return sum(w * x) + b\n")
    run = subprocess.run([sys.executable, "-m", "gradcli", "grad", str(path), "--wrt", "w", "--set", "w=[1, 2]",
                          "--set", "v=[3, 4]", "--call", "loss(w, v, b=1)", "--format", "plain"],
                         capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout, run.stderr) == (0, "w\t3.0 4.0\n", "")


# autograd's examples/logistic_regression.py as pasted without its training loop: the defs,
# then only data (a literal dataset and the starting weights)
AUTOGRAD_LOGISTIC_REGRESSION = '''import autograd.numpy as np
from autograd import grad

def sigmoid(x):
    return 0.5*(np.tanh(x) + 1)

def logistic_predictions(weights, inputs):
    # Outputs probability of a label being true according to logistic model.
    return sigmoid(np.dot(inputs, weights))

def training_loss(weights):
    # Training loss is the negative log-likelihood of the training labels.
    preds = logistic_predictions(weights, inputs)
    label_probabilities = preds * targets + (1 - preds) * (1 - targets)
    return -np.sum(np.log(label_probabilities))

# Build a toy dataset.
inputs = np.array([[0.52, 1.12,  0.77],
                   [0.88, -1.08, 0.15],
                   [0.52, 0.06, -1.30],
                   [0.74, -2.49, 1.39]])
targets = np.array([True, True, False, True])

weights = np.array([0.0, 0.0, 0.0])
'''


def test_defs_followed_only_by_data_call_the_last_def(tmp_path):
    """Not `weights` itself (whose gradient is all ones): the loss of the last def. autograd
    1.9.1 prints training_loss(weights) = 2.772588722239781 and grad(training_loss)(weights) =
    [-1.62, 2.51, -3.61] for this program."""
    import subprocess
    import sys
    path = tmp_path / "logistic_regression.py"
    path.write_text(AUTOGRAD_LOGISTIC_REGRESSION)
    run = subprocess.run([sys.executable, "-m", "gradcli", "grad", str(path), "--wrt", "weights", "--format", "plain"],
                         capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stderr) == (0, "")
    name, numbers = run.stdout.rstrip("\n").split("\t")
    assert name == "weights"
    np.testing.assert_allclose(np.array(numbers.split(), dtype=float), [-1.62, 2.51, -3.61], rtol=1e-12)
    r = api.evaluate(AUTOGRAD_LOGISTIC_REGRESSION)
    assert list(r.outputs) == ["training_loss"]
    assert float(r.outputs["training_loss"]) == pytest.approx(2.772588722239781, rel=1e-14)


@pytest.mark.parametrize("tail,name,expected", [
    ("x = 3.0\n", "f", 9.0),                                   # data only: the def is the program
    ('x = 3.0\n"""a docstring"""\nimport math\n', "f", 9.0),  # nor do a docstring and an import compute
    ("y = f(2.0)\n", "y", 4.0),                                # a call of the def: that is the program
    ("x = 3.0\ny = x * 2\n", "y", 6.0),                        # a computation after the data
    ("x = 3.0\ng = f\nz = 1.0\n", "z", 1.0),                   # names the def: not only data
])
def test_what_follows_the_last_def_decides_whether_it_is_called(tail, name, expected):
    r = api.evaluate("def f(x):\n    return x ** 2\n" + tail)
    assert list(r.outputs) == [name]
    assert float(r.outputs[name]) == expected


def test_a_def_called_after_data_needs_its_parameters():
    err = refusal("def f(a):\n    return a ** 2\nx = 3.0\n")
    assert format_error(err).splitlines()[0] == "<expr>:1:7: error: missing input 'a': give it with feeds a=VALUE"


def test_devices_and_dtypes_bound_to_names_change_no_number():
    """PyTorch's tutorials start `dtype = torch.float; device = torch.device("cuda" if
    torch.cuda.is_available() else "cpu")` and pass `device=device` to every constructor: a
    device changes no number (gradcli's PyTorch has no CUDA of its own), the dtype is float32.
    PyTorch 2.13.0: the gradient of sum((a * x)^2) in a, x = linspace(-1, 1, 5), a = 0.1, is 0.5."""
    program = ("import torch\ndtype = torch.float\n"
               "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
               "x = torch.linspace(-1., 1., 5, device=device, dtype=dtype)\n"
               "a = torch.tensor(0.1, device=device, dtype=dtype, requires_grad=True)\n"
               "loss = (a * x).pow(2).sum()\nloss.backward()\ng = a.grad\n")
    result = api.evaluate(program, prints=["loss", "g"])
    # (float32 numbers: PyTorch printed loss 0.02500000037252903, the gradient 0.5)
    np.testing.assert_allclose([result.outputs["loss"], result.outputs["g"]], [0.02500000037252903, 0.5], rtol=2e-7)


@pytest.mark.parametrize("program,expected", [
    # a tree bound last, and nothing else shown: shown as print shows it (was "computes nothing")
    ("t = (np.ones(2), np.zeros(3))", {"t[0]": [1, 1], "t[1]": [0, 0, 0]}),
    ("t = {'a': np.ones(2), 'b': 3.0}", {"t['a']": [1, 1], "t['b']": 3}),
    # a tree shown by a bare expression (was an internal error, exit 70)
    ("t = (np.ones(2), np.zeros(3))\nt", {"t[0]": [1, 1], "t[1]": [0, 0, 0]}),
    ("t = {'a': np.ones(2)}\nt", {"t['a']": [1, 1]}),
    # JAX 0.10.2: jax.grad(loss)((ones((2, 2)), zeros(2)), [[1., 2.]]) -> ([[6., 6.], [12., 12.]], [6., 6.])
    ("import jax\nimport jax.numpy as jnp\ndef loss(params, x):\n    w, b = params\n    return jnp.sum((x @ w + b) ** 2)\n"
     "params = (jnp.ones((2, 2)), jnp.zeros(2))\ng = jax.grad(loss)(params, jnp.array([[1., 2.]]))",
     {"g[0]": [[6, 6], [12, 12]], "g[1]": [6, 6]}),
])
def test_a_tuple_or_dict_of_arrays_is_shown_leaf_by_leaf(program, expected):
    outputs = api.evaluate("import numpy as np\n" + program).outputs
    assert list(outputs) == list(expected)
    for key, value in expected.items():
        np.testing.assert_array_equal(outputs[key], value)


def test_nested_unpacking_binds_as_python_does():
    """JAX's `(value, aux), grads = jax.value_and_grad(f, has_aux=True)(x)` (was refused: 'only a
    name, names separated by commas ... can be assigned to'). JAX 0.10.2 printed
    ((5., [2., 4.]), [2., 4.]) for f(x) = (sum(x ** 2), 2 x) at x = [1., 2.]."""
    program = ("import jax\nimport jax.numpy as jnp\ndef f(x):\n    return jnp.sum(x ** 2), x * 2\n"
               "(v, aux), g = jax.value_and_grad(f, has_aux=True)(jnp.array([1., 2.]))\n")
    result = api.evaluate(program, prints=["v", "aux", "g"])
    assert result.outputs["v"] == 5.0
    np.testing.assert_array_equal(result.outputs["aux"], [2, 4])
    np.testing.assert_array_equal(result.outputs["g"], [2, 4])
    assert list(api.evaluate(program).outputs) == ["g"]  # the last name written, as for `v, g = ...`
    assert value("(a, (b, c)), d = ((1., (2., 3.)), 4.)\ny = a + 10 * b + 100 * c + 1000 * d") == 4321.0
    assert value("def h(t):\n    (p, q), r = t\n    return p * q + r\ny = h(((2., 3.), 4.))") == 10.0
    assert str(refusal("(), c = (1., 2.)")).startswith("an empty tuple cannot be unpacked into")
    assert str(refusal("(a.b, c), d = ((1., 2.), 3.)")).startswith("only names can be unpacked into")


def test_a_program_showing_only_a_tree_is_differentiated_through_its_leaves():
    """A program whose value is a tuple of arrays: `grad` without --of differentiates its last leaf,
    as after print (was an internal error, exit 70); --of names another by its text."""
    m = np.array([[1.0, 2.0], [3.0, 4.0]])
    result = api.grad("import numpy as np\nz = (np.linalg.svd(m, compute_uv=False), 2 * m)", wrt=["m"],
                      feeds={"m": m})
    np.testing.assert_array_equal(result.gradients["m"], np.full((2, 2), 2.0))  # d sum(2 m)/dm
    u, s, vt = np.linalg.svd(m)
    first = api.grad("import numpy as np\nz = (np.linalg.svd(m, compute_uv=False), 2 * m)", wrt=["m"], of=["z[0]"],
                     feeds={"m": m})
    np.testing.assert_allclose(first.gradients["m"], u @ vt, rtol=1e-12)  # d(s1 + s2)/dm = U V^T
