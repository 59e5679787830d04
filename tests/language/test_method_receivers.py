"""A method means what the library that made its receiver means by it: PyTorch's for a value a
program built with `torch.` (or computed from one), whatever else the program imports, NumPy's
for an array of NumPy (or JAX, TensorFlow); a value of no known library in a program that spells
both is refused where the two readings differ. And a method whose receiver is not the first
argument of the function of its name (PyTorch's `x.where(condition, y)`) passes it where it goes.
The expected numbers are what PyTorch 2.13.0+cpu (NumPy 2.4.6) printed for the same programs,
float64 throughout."""
import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

X = np.arange(6.0).reshape(2, 3) ** 1.5
K = np.arange(12.0).reshape(2, 2, 3)
U = np.array([0.5, -1.0, 2.0])
TORCH_AND_NUMPY = "import torch\nimport numpy as np\n"


def value(program, **feeds):
    return next(iter(api.evaluate(program, feeds=feeds).outputs.values()))


@pytest.mark.parametrize("program,expected", [
    # torch.tensor(x).std() / np.sqrt(2.0): n - 1, not NumPy's n
    ("y = torch.tensor(x).std() / np.sqrt(2.0)", 3.039963047110606),
    # torch.exp(x).max(1)[0] + np.sqrt(2.0): the values of (values, indices), not the first row's maximum
    ("t = torch.exp(x)\ny = t.max(1)[0] + np.sqrt(2.0)", [18.333042240930997, 71708.14435674183]),
    # a tensor times a NumPy number is a tensor
    ("t = torch.exp(x) * np.sqrt(2.0)\ny = t.std()", 41066.04227083958),
    # its transpose and its rows are tensors
    ("t = torch.exp(x)\ny = t.T.std() + t[0].std()", 29046.814024536074),
    # a tensor written as a constant
    ("t = torch.tensor([[1.0, 2.0], [3.0, 5.0]])\ny = t.std()", 1.707825127659933),
    # an array of NumPy keeps NumPy's methods in the same program
    ("t = np.exp(x)\ny = t.max(1)[0] + np.sqrt(2.0)", np.exp(X).max(1)[0] + np.sqrt(2.0)),
    ("y = np.asarray(x).std() + torch.as_tensor(x).std()", X.std() + 3.039963047110606 * np.sqrt(2.0)),
])
def test_a_tensor_s_methods_are_pytorch_s_beside_numpy(program, expected):
    np.testing.assert_allclose(value(TORCH_AND_NUMPY + program, x=X), expected, rtol=1e-13)


def test_a_tensor_s_transpose_swaps_the_two_dims_beside_numpy():
    got = value(TORCH_AND_NUMPY + "t = torch.as_tensor(k)\ny = t.transpose(-2, -1) / np.sqrt(2.0)", k=K)
    # PyTorch: [[[0.0, 2.1213...], [0.7071..., 2.8284...], [1.4142..., 3.5355...]], [[4.2426..., ...
    np.testing.assert_allclose(got, np.swapaxes(K, -2, -1) / np.sqrt(2.0), rtol=1e-15)
    assert got.shape == (2, 3, 2)


@pytest.mark.parametrize("program,readings", [
    ("y = x.std()", "PyTorch reads it as std(ddof=1), NumPy as std()"),
    ("y = x.max(1)[0]", "reads two ways here"),
])
def test_a_method_of_a_value_of_no_known_library_is_refused_where_the_readings_differ(program, readings):
    with pytest.raises(GradcliError) as info:
        value(TORCH_AND_NUMPY + program, x=X)
    assert readings in str(info.value)
    assert "torch.as_tensor(...) or np.asarray(...)" in str(info.value)


def test_a_method_both_libraries_read_alike_is_kept_for_a_value_of_no_known_library():
    np.testing.assert_allclose(value(TORCH_AND_NUMPY + "y = x.sum() + np.sqrt(2.0)", x=X), X.sum() + np.sqrt(2.0))


@pytest.mark.parametrize("prefix", ["import torch\n", TORCH_AND_NUMPY, ""])
def test_torch_where_method_takes_its_receiver_as_the_value_not_the_condition(prefix):
    # PyTorch 2.13: u.where(u > 0, 0.0) -> [0.5, 0.0, 2.0], d sum / du -> [1.0, 0.0, 1.0]
    program = prefix + "y = torch.as_tensor(u).where(u > 0, 0.0)" if prefix != "import torch\n" \
        else prefix + "y = u.where(u > 0, 0.0)"
    result = api.grad(program, wrt=["u"], feeds={"u": U})
    np.testing.assert_array_equal(result.outputs["y"], [0.5, 0.0, 2.0])
    np.testing.assert_array_equal(result.gradients["u"], [1.0, 0.0, 1.0])


@pytest.mark.parametrize("program", [
    "import numpy as np\ny = u.where(u > 0, 0.0)",
    "import numpy as np\nimport torch\ny = np.exp(u).where(u > 0, 0.0)",
    "import jax.numpy as jnp\ny = jnp.exp(u).where(u > 0, 0.0)",
])
def test_an_array_without_a_where_method_refuses_it(program):
    with pytest.raises(GradcliError, match=r"NumPy arrays have no \.where method"):
        value(program, u=U)


def test_torch_polygamma_method_is_the_order_first():
    # PyTorch 2.13: x.polygamma(1) -> [4.934802202..., 0.934802200..., 0.394934066...] (SciPy's trigamma,
    # pi^2 / 2 at 0.5, agrees to 1e-9), d sum / dx -> [-16.828796644234316, -0.8287966442343201, -0.15411380631918856]
    result = api.grad("import torch\ny = x.polygamma(1)", wrt=["x"], feeds={"x": [0.5, 1.5, 3.0]})
    np.testing.assert_allclose(result.outputs["y"], [np.pi ** 2 / 2, np.pi ** 2 / 2 - 4, np.pi ** 2 / 6 - 1.25],
                               rtol=1e-13)
    np.testing.assert_allclose(result.gradients["x"], [-16.828796644234316, -0.8287966442343201,
                                                       -0.15411380631918856], rtol=1e-12)
    with pytest.raises(GradcliError, match=r"NumPy arrays have no \.polygamma method"):
        value("import numpy as np\ny = x.polygamma(1)", x=U)


@pytest.mark.parametrize("program,refused", [
    ("y = torch.exp(x).sum(dim=()) + np.sqrt(2.0)", True),   # a tensor's: PyTorch reads dim=() as every dim
    ("y = x.sum(axis=())", True),                             # no known library: the readings differ
    ("y = np.exp(x).sum(axis=())", False),                    # an array's: NumPy reduces no axis
])
def test_an_empty_dim_of_a_method_is_read_by_its_value_s_library(program, refused):
    if refused:
        with pytest.raises(GradcliError, match="with an empty dim"):
            value(TORCH_AND_NUMPY + program, x=U)
    else:
        np.testing.assert_allclose(value(TORCH_AND_NUMPY + program, x=U), np.exp(U), rtol=1e-15)


@pytest.mark.parametrize("call,expected", [
    # PyTorch 2.13.0: x = torch.tensor([1., 2.]); x.repeat(2) -> [1., 2., 1., 2.] (np.tile), x.repeat(2, 1) ->
    # [[1., 2.], [1., 2.]]; x.repeat_interleave(2) -> [1., 1., 2., 2.] (np.repeat); x2 = [[1., 2.], [3., 4.]]:
    # x2.repeat(1, 2) -> [[1., 2., 1., 2.], [3., 4., 3., 4.]], x2.repeat_interleave(2, dim=0) ->
    # [[1., 2.], [1., 2.], [3., 4.], [3., 4.]], x2.repeat_interleave(2) -> [1., 1., 2., 2., 3., 3., 4., 4.]
    ("x.repeat(2)", [1, 2, 1, 2]), ("x.repeat(2, 1)", [[1, 2], [1, 2]]), ("x.repeat_interleave(2)", [1, 1, 2, 2]),
    ("torch.repeat_interleave(x, 2)", [1, 1, 2, 2]), ("x2.repeat(1, 2)", [[1, 2, 1, 2], [3, 4, 3, 4]]),
    ("x2.repeat_interleave(2, dim=0)", [[1, 2], [1, 2], [3, 4], [3, 4]]),
    ("x2.repeat_interleave(2)", [1, 1, 2, 2, 3, 3, 4, 4]),
])
def test_a_tensor_s_repeat_tiles_and_its_repeat_interleave_repeats(call, expected):
    """PyTorch's x.repeat is np.tile (was refused as reading two ways although the receiver was a
    tensor), its repeat_interleave np.repeat (was refused with repeat's words)."""
    program = f"import torch\nx = torch.tensor([1., 2.])\nx2 = torch.tensor([[1., 2.], [3., 4.]])\ny = {call}"
    np.testing.assert_array_equal(value(program), expected)


def test_repeat_of_an_array_of_no_known_library_still_reads_two_ways():
    with pytest.raises(GradcliError, match="reads two ways: NumPy's repeats each element"):
        api.evaluate("y = x.repeat(2)", feeds={"x": U})


TIES = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [0.0, 5.0, 1.0, 5.0]])


@pytest.mark.parametrize("program,expected", [
    # PyTorch 2.13.0 (float64), x = TIES: v, i = torch.max(x, 1) -> i = [1, 0, 1]; the gradient of
    # sum(v * [1, 2, 3]) goes to those indices, the first of each tie
    ("v, i = torch.max(x, 1)\ny = (v * torch.tensor([1., 2., 3.])).sum()",
     [[0, 1, 0, 0], [2, 0, 0, 0], [0, 3, 0, 0]]),
    ("y = x.max(dim=1).values.sum()", [[0, 1, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0]]),
    # x.min(dim=0, keepdim=True)[0].sum() -> [[0, 0, 0, 1], [0, 1, 0, 0], [1, 0, 1, 0]]
    ("y = x.min(dim=0, keepdim=True)[0].sum()", [[0, 0, 0, 1], [0, 1, 0, 0], [1, 0, 1, 0]]),
    # x.amax(1).sum() splits ties evenly -> [[0, .5, .5, 0], [.25, .25, .25, .25], [0, .5, 0, .5]]
    ("y = x.amax(1).sum()", [[0, 0.5, 0.5, 0], [0.25] * 4, [0, 0.5, 0, 0.5]]),
])
def test_torch_max_along_a_dim_gives_a_tie_s_gradient_to_the_index_it_returns(program, expected):
    """PyTorch's max/min along a dim route the gradient through the indices they return (the first
    of a tie): was split evenly among the tied elements, as amax does."""
    result = api.grad("import torch\nx = torch.as_tensor(t)\n" + program, wrt=["t"], feeds={"t": TIES})
    np.testing.assert_array_equal(result.gradients["t"], expected)
