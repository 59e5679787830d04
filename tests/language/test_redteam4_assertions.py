"""The libraries' assertions and switches that pasted autodiff code writes around its gradients
(`np.testing.assert_allclose`, `torch.testing.assert_close`, `tf.debugging.assert_near`,
`torch.autograd.set_detect_anomaly(True)`), and `tf.truncatemod`, against what NumPy 2.4.6,
PyTorch 2.13.0+cpu and TensorFlow 2.21.0 did with the same code (passed, or raised
AssertionError). Before, each was an unknown function."""
from __future__ import annotations

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError


def outputs(program: str, **feeds) -> dict:
    return api.evaluate(program, feeds=feeds, fixes=False).outputs if feeds else \
        api.evaluate(program, fixes=False).outputs


def refusal(program: str) -> GradcliError:
    with pytest.raises(GradcliError) as caught:
        api.evaluate(program, fixes=False)
    return caught.value


def test_a_gradient_checked_with_torch_testing_assert_close():
    out = outputs("""
import torch
torch.autograd.set_detect_anomaly(True)
x = torch.tensor([0.3, 0.6], dtype=torch.float64, requires_grad=True)
y = torch.sigmoid(x).sum()
g, = torch.autograd.grad(y, x)
expected = torch.sigmoid(x) * (1 - torch.sigmoid(x))
torch.testing.assert_close(g, expected.detach())
print(torch.allclose(g, expected))
print(g)
""")
    # PyTorch 2.13.0 printed True and tensor([0.2445, 0.2288], dtype=torch.float64)
    assert out["torch.allclose(g, expected)"] == 1.0
    np.testing.assert_allclose(out["g"], [0.2444583116907459, 0.22878424045665727], rtol=1e-15)


@pytest.mark.parametrize("check, passes", [  # what NumPy 2.4.6 and PyTorch 2.13.0 did
    ("np.testing.assert_allclose(x * 2, np.array([2.0, 4.001]))", False),
    ("np.testing.assert_allclose(x * 2, np.array([2.0, 4.0000001]))", True),
    ("np.testing.assert_array_almost_equal(x / 3, np.array([0.333333, 0.666667]))", True),
    ("np.testing.assert_array_almost_equal(x / 3, np.array([0.33333, 0.666667]))", False),
    ("np.testing.assert_array_almost_equal(x / 3, np.array([0.33333, 0.666667]), decimal=4)", True),
    ("torch.testing.assert_close(torch.tensor([1.0, 2.0]) * 2, torch.tensor([2.0, 4.001]))", False),
    ("torch.testing.assert_close(torch.tensor([1.0, 2.0]) * 2, torch.tensor([2.0, 4.00001]))", True),
    ("tf.debugging.assert_near(tf.constant([1.0, 2.0]) * 2, tf.constant([2.0, 4.0000001]))", True),
])
def test_an_assertion_passes_or_fails_as_the_library_s(check, passes):
    program = f"import numpy as np\nimport torch\nimport tensorflow as tf\nx = np.array([1.0, 2.0])\n{check}\nprint(x)\n"
    if passes:
        assert list(outputs(program)) == ["x"]
    else:
        error = refusal(program)
        library = "NumPy" if check.startswith("np.") else "PyTorch"
        assert f"the arrays are not close" in str(error) and f"({library}: AssertionError)" in str(error)
        assert error.pos.line == 5


def test_an_assertion_on_an_input_is_checked_at_each_evaluation():
    program = "import numpy as np\nx = np.array([1.0, 2.0])\nnp.testing.assert_allclose(x * 2, np.array([2.0, 4.0]))\nprint(x)\n"
    assert list(outputs(program, x=np.array([1.0, 2.0]))) == ["x"]
    with pytest.raises(GradcliError, match=r"not close \(rtol=1e-07, atol=0\) \(NumPy: AssertionError\)"):
        outputs(program, x=np.array([1.0, 3.0]))


def test_arrays_of_different_shapes_fail_the_assertion():
    error = refusal("import numpy as np\nx = np.array([1.0, 2.0])\nnp.testing.assert_allclose(x, np.array([1.0, 2.0, 3.0]))\n"
                    "print(x)\n")
    assert "the shapes (2,) and (3,) differ (NumPy: AssertionError)" in str(error) and error.pos.line == 3


def test_truncatemod_takes_the_dividend_s_sign():
    out = outputs("import tensorflow as tf\na = tf.constant([-7.0, 7.0, -7.5, 2.5], dtype=tf.float64)\n"
                  "b = tf.constant([2.0, -2.0, 2.0, 1.0], dtype=tf.float64)\nprint(tf.truncatemod(a, b))\n")
    np.testing.assert_array_equal(out["tf.truncatemod(a, b)"], [-1.0, 1.0, -1.5, 0.5])  # TensorFlow 2.21.0 printed
