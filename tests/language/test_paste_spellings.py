"""Spellings of real pasted code read with their library's meaning: each checked against NumPy
computing the same thing (or numbers PyTorch printed, written here), gradients against float64
central differences; and the spellings whose meaning the code does not decide, refused with one
positioned sentence and exit 2."""
import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError
from gradcheck import central_differences
from cli_helpers import invoke

RNG = np.random.default_rng(20261125)
X = RNG.normal(size=(3, 4))
Y = RNG.normal(size=(3, 4))
V = RNG.normal(size=4)


def value(program, **feeds):
    return next(iter(api.evaluate(program, feeds=feeds).outputs.values()))


def refusal(program, **feeds):
    with pytest.raises(GradcliError) as info:
        api.evaluate(program, feeds=feeds)
    return info.value


def finite_differences(program, name, feeds):
    return central_differences(lambda moved: value(program, **{**feeds, name: moved}), feeds[name])


def cosine_last_axis(a, b):
    return np.sum(a * b, -1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


@pytest.mark.parametrize("program,expected", [
    # open bounds of clip: NumPy's None, JAX's min=/max=, NumPy's a_max= alone
    ("y = np.clip(x, 0.5, None)", np.maximum(X, 0.5)),
    ("y = np.clip(x, None, 0.5)", np.minimum(X, 0.5)),
    ("y = jnp.clip(x, min=-0.3)", np.maximum(X, -0.3)),
    ("y = jnp.clip(x, a_max=0.2) + jnp.clip(x, min=-0.1, max=0.1)", np.minimum(X, 0.2) + np.clip(X, -0.1, 0.1)),
    # NumPy's newaxis, TensorFlow 1's reduction_indices
    ("y = v[:, np.newaxis] * v[np.newaxis, :]", np.outer(V, V)),
    ("y = tf.reduce_sum(x, reduction_indices=[1]) + tf.reduce_mean(x, reduction_indices=0).sum()",
     X.sum(1) + X.mean(0).sum()),
    # nested module prefixes, through an import alias or written out
    ("from tensorflow.keras import backend as K\ny = K.log(K.clip(v * v, K.epsilon(), 1.0))",
     np.log(np.clip(V * V, 1e-7, 1.0))),
    ("import tensorflow as tf\ny = tf.keras.backend.epsilon() + tf.keras.backend.sum(x)", 1e-7 + X.sum()),
    ("import tensorflow as tf\ny = tf.keras.losses.cosine_similarity(x, w, axis=-1)", -cosine_last_axis(X, Y)),
    # one_hot of JAX, TensorFlow (depth) and PyTorch (num_classes)
    ("y = jax.nn.one_hot(c, 4) + tf.one_hot(c, depth=4) + tf.one_hot(c, 4)", 3 * np.eye(4)[[1, 0, 3]]),
    ("import torch\nimport torch.nn.functional as F\ny = F.one_hot(c, num_classes=5)", np.eye(5)[[1, 0, 3]]),
    ("y = jax.nn.one_hot(c * 1.5, 4)", np.array([[0.0, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]])),  # 1.5 is no class
    # TensorFlow's matmul flags, and its shape as numbers
    ("y = tf.matmul(x, w, transpose_b=True)", X @ Y.T),
    ("y = tf.linalg.matmul(x, w, transpose_a=True) + tf.matmul(x, w, adjoint_a=True)", 2 * X.T @ Y),
    ("y = x / tf.math.sqrt(tf.cast(tf.shape(x)[-1], tf.float32)) + np.shape(x)[0]", X / 2 + 3),
    ("y = jax.nn.soft_sign(v)", V / (1 + np.abs(V))),
    # a def followed by an import is still the pasted function
    ("import jax.numpy as jnp\ndef f(v):\n    return jnp.sum(v * v)\nimport jax", np.sum(V * V)),
])
def test_library_spellings_read_with_their_meaning(program, expected):
    got = value(program, x=X, w=Y, v=V, c=np.array([1.0, 0.0, 3.0]))
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("program,expected", [
    # torch.max(input, other) / torch.min of two tensors compare them; along a dim they reduce
    ("import torch\ny = torch.min(x * 2, w) + torch.max(x, w - 1)", np.minimum(2 * X, Y) + np.maximum(X, Y - 1)),
    ("import torch\ny = x.max(w * 1) + torch.min(x, w)", np.maximum(X, Y) + np.minimum(X, Y)),
    ("import torch\ny = torch.max(x, 1)[0] + torch.max(x, dim=1).values + torch.min(x, dim=1).indices",
     2 * X.max(1) + X.argmin(1)),
    ("import torch\ny = x.amax(dim=0) + torch.amin(x, 1).sum() + torch.amax(x, dim=(0, 1))",
     X.max(0) + X.min(1).sum() + X.max()),
    ("import torch\ny = torch.topk(x, 2, dim=-1).values", -np.sort(-X, axis=-1)[:, :2]),
    # constructors, views and shapes of PyTorch
    ("import torch\ny = torch.tensor([1.0, 2.0, 3.0, 4.0]) * x.contiguous().clone()", X * [1, 2, 3, 4]),
    ("import torch\ny = x.view(2, -1) + x.view(-1).view(2, 6)", 2 * X.reshape(2, 6)),
    ("import torch\ny = x.t().mm(w) + torch.bmm(x[None], w.t()[None])[0].sum()", X.T @ Y + (X @ Y.T).sum()),
    ("import torch\ny = x.size(-1) + 10 * x.size(0) + 100 * x.dim() + 1000 * x.numel()", 4 + 30 + 200 + 12000),
    ("import torch\ny = x.reshape(x.size(1), x.size()[0])", X.reshape(4, 3)),
    # a tensor written as one (torch.tensor(0.0)) is the other operand, not a dim
    ("import torch\ny = torch.max(x, torch.tensor(0.0)) + x.min(torch.tensor([0.0, 1.0, -1.0, 0.5]))",
     np.maximum(X, 0) + np.minimum(X, [0, 1, -1, 0.5])),
    # constructors take sizes as separate numbers; triu/tril's diagonal=; expand; rounded division
    ("import torch\ny = torch.ones(3, 4) + torch.zeros(3, 4, dtype=torch.float64) + torch.full((3, 4), 2.0) + x",
     X + 3),
    ("import torch\ny = torch.triu(x, diagonal=1) + torch.tril(x, diagonal=-1)", np.triu(X, 1) + np.tril(X, -1)),
    ("import torch\ny = x[0:1].expand(3, 4) * x", X[0:1] * X),
    ("import torch\ny = torch.div(x * 3, 1.3, rounding_mode='floor') + 10 * torch.div(x * 3, 1.3, rounding_mode='trunc')"
     " + torch.div(x, 2, rounding_mode=None)", np.floor_divide(X * 3, 1.3) + 10 * np.trunc(X * 3 / 1.3) + X / 2),
    # Python's float('-inf') of an attention mask
    ("import torch\ny = torch.softmax(x.masked_fill(x < 0, float('-inf')), dim=-1)",
     np.where(X < 0, 0, np.exp(X)) / np.where(X < 0, 0, np.exp(X)).sum(-1, keepdims=True)),
])
def test_pytorch_spellings_read_as_pytorch(program, expected):
    np.testing.assert_allclose(value(program, x=X, w=Y), expected, rtol=1e-13, atol=1e-15)


def test_torch_min_of_two_tensors_differentiates_as_minimum():
    program = "import torch\ny = torch.min(a * 1.0, b * 1.0)"
    feeds = {"a": np.array([0.5, -1.0, 2.0]), "b": np.array([1.0, -2.0, 0.0])}
    r = api.grad(program, wrt=["a", "b"], feeds=feeds)
    np.testing.assert_array_equal(r.gradients["a"], [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(r.gradients["b"], [0.0, 1.0, 1.0])


def test_detach_passes_no_gradient():
    r = api.grad("import torch\ny = torch.sum(x * x.detach())", wrt=["x"], feeds={"x": V})
    np.testing.assert_allclose(r.gradients["x"], V, rtol=1e-15)


def test_clip_with_an_open_bound_passes_the_gradient_inside():
    feeds = {"x": np.array([0.1, 0.7, 0.3, 2.0])}
    r = api.grad("y = np.clip(x, 0.2, None) ** 2", wrt=["x"], feeds=feeds)
    np.testing.assert_allclose(r.gradients["x"], finite_differences("y = np.clip(x, 0.2, None) ** 2", "x", feeds),
                               rtol=1e-7, atol=1e-9)


def test_tf_matmul_transpose_b_gradients_agree_with_finite_differences():
    program = "y = tf.reduce_sum(tf.nn.softmax(tf.matmul(q, k, transpose_b=True)) * tf.matmul(q, k, transpose_b=True))"
    feeds = {"q": X, "k": Y[:2]}
    r = api.grad(program, wrt=["q", "k"], feeds=feeds)
    for name in ("q", "k"):
        np.testing.assert_allclose(r.gradients[name], finite_differences(program, name, feeds), rtol=1e-6, atol=1e-8)


def test_torch_softplus_beta_and_threshold_as_pytorch():
    # torch.nn.functional.softplus(torch.tensor(x, dtype=float64), beta=2, threshold=10) and its
    # gradient, as PyTorch 2.13 printed them (past beta x > threshold: x itself, slope 1)
    x = np.array([-3.0, 0.2, 5.0, 12.0])
    r = api.grad("import torch.nn.functional as F\ny = F.softplus(x, beta=2, threshold=10)", wrt=["x"], feeds={"x": x})
    np.testing.assert_allclose(r.outputs["y"], [1.2378425688652247e-03, 4.5650762619997631e-01,
                                                5.0000226994496089e+00, 12.0], rtol=1e-13)
    np.testing.assert_allclose(r.gradients["x"], [0.00247262315663477, 0.598687660112452, 0.9999546021312976, 1.0],
                               rtol=1e-13)
    # beta by position, as PyTorch takes it: softplus(x, 0.5)
    r = api.grad("import torch\ny = torch.nn.functional.softplus(x, 0.5)", wrt=["x"], feeds={"x": x})
    np.testing.assert_allclose(r.outputs["y"], [0.4028265559655048, 1.488793320147142, 5.157779468585099,
                                                12.00495137027546], rtol=1e-13)
    np.testing.assert_allclose(r.gradients["x"], [0.18242552380635632, 0.52497918747894, 0.9241418199787564,
                                                  0.9975273768433652], rtol=1e-13)


@pytest.mark.parametrize("program,message,place", [
    ("import torch\ny = torch.min(x, k)",
     "torch.min(x, y) with y an input number: PyTorch compares two tensors elementwise, but reads an int as the "
     "dim; write torch.minimum(x, y), or torch.min(x, dim=...)", (2, 5)),
    ("import torch\ny = F.one_hot(x)",
     "one_hot(): class values must be non-negative integers", (2, 5)),  # PyTorch's: classes from the data
    ("y = jax.nn.one_hot(x, 2.5)", "one_hot: the number of classes must be a non-negative integer, not 2.5", (1, 5)),
    ("y = x.view(np.float32)", "view(): 'shape' must be an integer or a list of integers, not 'float32'", (1, 12)),
    ("y = x.reshape('ab')", "reshape(): 'shape' must be an integer or a list of integers, not 'ab'", (1, 15)),
    ("y = np.sum(x, axis='a')", "sum(): 'axis' must be an integer or a list of integers, not 'a'", (1, 20)),
    ("y = np.exp(None) + x", "None is not a number (an argument left out is used as one)", (1, 5)),
    ("import torch\ny = x.size(2)", "size(2): dim 2 is out of range for an array of rank 2", (2, 5)),
    ("y = tf.nn.softplus(x, 2)", "softplus() takes at most 1 argument (x), got 2", (1, 5)),
    ("y = x + float('abc')", "float('abc'): the string is not a number", (1, 15)),
    ("y = torch.div(x, 2, rounding_mode='round')", "div(): rounding_mode must be None, 'floor' or 'trunc', not 'round'",
     (1, 5)),
    ("y = np.ones(3, 4)", "ones: the shape must be one argument (a tuple): write zeros((2, 3)), not zeros(2, 3)", (1, 5)),
])
def test_spellings_that_do_not_decide_are_refused_at_their_place(program, message, place):
    err = refusal(program, x=X, w=Y, k=1.0)
    assert str(err) == message and (err.pos.line, err.pos.column) == place


def test_refusals_exit_2_with_one_message_on_the_command_line():
    result = invoke("eval", "-e", "import torch\ny = torch.min(x, k)", "--set", "x=[1.0, 2.0]", "--set", "k=1")
    assert result.exit_code == 2
    assert "torch.min(x, y) with y an input number" in result.output
    result = invoke("eval", "-e", "y = x.view(np.float32)", "--set", "x=[1.0, 2.0]")
    assert result.exit_code == 2 and "not 'float32'" in result.output


def test_the_normal_distribution_of_scipy_and_jax_stats():
    from scipy import stats

    x, m, q = np.array([-1.3, 0.2, 2.5]), np.array([0.1, -0.2, 0.3]), np.array([0.1, 0.5, 0.9])
    cases = [
        ("y = scipy.stats.norm.logpdf(x, m, 2.0)", stats.norm.logpdf(x, m, 2.0)),
        ("from scipy.stats import norm\ny = norm.pdf(x, loc=m)", stats.norm.pdf(x, loc=m)),
        ("from jax.scipy.stats import norm\ny = norm.cdf(x, scale=0.5) + norm.logcdf(x) + norm.sf(x, 1.0)",
         stats.norm.cdf(x, scale=0.5) + stats.norm.logcdf(x) + stats.norm.sf(x, 1.0)),
        ("import jax\ny = jax.scipy.stats.norm.ppf(q, 1.0, 2.0)", stats.norm.ppf(q, 1.0, 2.0)),
    ]
    for program, expected in cases:
        np.testing.assert_allclose(value(program, x=x, m=m, q=q), expected, rtol=1e-13, err_msg=program)
    program = "from jax.scipy.stats import norm\ny = norm.logpdf(x, loc=m, scale=s) + norm.cdf(x, m, s)"
    feeds = {"x": x, "m": m, "s": np.array([0.5, 1.5, 2.0])}
    r = api.grad(program, wrt=["m", "s"], feeds=feeds)
    for name in ("m", "s"):
        np.testing.assert_allclose(r.gradients[name], finite_differences(program, name, feeds), rtol=1e-6, atol=1e-9)


def test_one_spelling_read_two_ways_in_one_program_keeps_both_readings():
    # torch.max(x, w) of two tensors compares them; torch.max(x, 0) reduces along dim 0: the same
    # name and argument count, read apart by what the second argument is, however often each occurs
    x, w = np.array([[1.0, 5.0], [3.0, 2.0]]), np.full((2, 2), 2.0)
    program = "import torch\nm = torch.max(x, w)\nv = torch.max(x, 0)[0]\nn = torch.max(x, w)\nu = torch.max(x, 1)[0]"
    r = api.evaluate(program, feeds={"x": x, "w": w}, prints=["m", "v", "n", "u"])
    np.testing.assert_array_equal(r.outputs["m"], np.maximum(x, w))
    np.testing.assert_array_equal(r.outputs["v"], x.max(axis=0))
    np.testing.assert_array_equal(r.outputs["n"], np.maximum(x, w))
    np.testing.assert_array_equal(r.outputs["u"], x.max(axis=1))


# PyTorch selects with a subscript's integers first and indexes what is left with its lists; NumPy
# treats the integers as lists, and moves the indexed axes to the front where a slice parts them.
# The values PyTorch 2.13 and NumPy 2.4 printed for x = arange(24.).reshape(2, 3, 4):
TORCH_SUBSCRIPTS = [
    ("x[0, :, [1, 3]]", [[1, 3], [5, 7], [9, 11]], [[1, 5, 9], [3, 7, 11]]),
    ("x[-1, 1:, [-1, 0]]", [[19, 16], [23, 20]], [[19, 23], [16, 20]]),
    ("x[0, None, :, [1, 3]]", [[[1, 3], [5, 7], [9, 11]]], [[[1, 5, 9]], [[3, 7, 11]]]),
    ("x[1, :, [True, False, True, True]]", [[12, 14, 15], [16, 18, 19], [20, 22, 23]],
     [[12, 16, 20], [14, 18, 22], [15, 19, 23]]),
    # the two readings agree: integers and lists side by side, or the lists' axes first anyway
    ("x[[0, 1], :, 2]", [[2, 6, 10], [14, 18, 22]], [[2, 6, 10], [14, 18, 22]]),
    ("x[0, [1, 2]]", [[4, 5, 6, 7], [8, 9, 10, 11]], [[4, 5, 6, 7], [8, 9, 10, 11]]),
]


@pytest.mark.parametrize("subscript, torch_value, numpy_value", TORCH_SUBSCRIPTS)
def test_pytorch_subscripts_select_with_their_integers_first(subscript, torch_value, numpy_value):
    assert value(f"import torch\nx = torch.arange(24.).reshape(2, 3, 4)\ny = {subscript}\n").tolist() == torch_value
    assert value(f"import numpy as np\nx = np.arange(24.).reshape(2, 3, 4)\ny = {subscript}\n").tolist() == numpy_value
    assert value(f"x = arange(24.).reshape(2, 3, 4)\ny = {subscript}\n").tolist() == numpy_value  # the language's own


def test_a_pytorch_subscript_s_gradient_follows_its_reading():
    # PyTorch: x.grad after (x[0, :, [1, 3]] * torch.tensor([1., 10.])).sum().backward()
    result = api.grad("import torch\ny = x[0, :, [1, 3]] * torch.tensor([1., 10.])", wrt=["x"],
                      feeds={"x": np.arange(24.).reshape(2, 3, 4)})
    assert result.gradients["x"].tolist() == [[[0, 1, 0, 10], [0, 1, 0, 10], [0, 1, 0, 10]], [[0] * 4] * 3]


def test_pytorch_refuses_a_negative_slice_step_and_so_does_gradcli():
    err = refusal("import torch\nx = torch.arange(6.)\ny = x[::-1]")
    assert err.message == ("PyTorch takes no negative slice step (x[::-1] is a ValueError there): flip the axis "
                           "with torch.flip(x, dims)")
    assert (err.pos.line, err.pos.column) == (3, 6)
    assert value("x = arange(6.)\ny = x[::-1]").tolist() == [5, 4, 3, 2, 1, 0]  # NumPy's reading takes it


def test_a_subscript_read_two_ways_in_a_program_of_two_libraries_is_refused():
    # a value of no known library (an input): refused
    err = refusal("import torch\nimport numpy as np\ny = x[0, :, [1, 3]]", x=np.arange(24.).reshape(2, 3, 4))
    assert err.message.startswith("this subscript mixes integers and lists apart from each other, which NumPy and "
                                  "PyTorch read differently")
    assert (err.pos.line, err.pos.column) == (3, 6)
    # a tensor's subscript is PyTorch's (2.13 prints [[1, 3], [5, 7], [9, 11]]), an array's NumPy's
    assert value("import torch\nimport numpy as np\nx = torch.arange(24.).reshape(2, 3, 4)\ny = x[0, :, [1, 3]]"
                 ).tolist() == [[1, 3], [5, 7], [9, 11]]
    assert value("import torch\nimport numpy as np\nx = np.arange(24.).reshape(2, 3, 4)\ny = x[0, :, [1, 3]]"
                 ).tolist() == np.arange(24.).reshape(2, 3, 4)[0, :, [1, 3]].tolist()
    # where the two readings agree (integers and lists side by side), it is answered
    assert value("import torch\nimport numpy as np\nx = torch.arange(24.).reshape(2, 3, 4)\ny = x[0, [1, 2]]"
                 ).tolist() == [[4, 5, 6, 7], [8, 9, 10, 11]]
