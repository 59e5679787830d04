"""The gradients through tanh and sigmoid in a half type are computed as PyTorch's and JAX's
kernels compute them, from the forward value as the type holds it (grad * (1 - y²), grad * y *
(1 - y)), not from x: the values below are what PyTorch 2.13.0+cpu printed for the same program
and inputs in the same type (`torch.tensor(v, dtype=torch.bfloat16, requires_grad=True)`,
`y.backward()`, `.grad.float().tolist()`), and gradcli gives them bit for bit."""
import numpy as np
import pytest

from gradcli import api

W = [[0.1, -0.2, 0.3, 0.4], [0.5, 0.6, -0.7, 0.8], [-0.9, 1.0, 1.1, -1.2]]
X = [1.0, 2.0, -1.5, 0.25]
MLP = "y = sum(tanh(W @ x) ** 2)"
TORCH_MLP = {
    "bfloat16": {"W": [[-0.76953125, -1.5390625, 1.15625, -0.1923828125],
                       [0.01556396484375, 0.0311279296875, -0.0233154296875, 0.0038909912109375],
                       [-0.72265625, -1.4453125, 1.0859375, -0.1806640625]],
                 "x": [0.578125, -0.55859375, -1.0390625, 0.57421875]},
    "float16": {"W": [[-0.76953125, -1.5390625, 1.154296875, -0.1923828125],
                      [0.0213165283203125, 0.042633056640625, -0.031982421875, 0.005329132080078125],
                      [-0.72216796875, -1.4443359375, 1.0830078125, -0.1805419921875]],
                "x": [0.58349609375, -0.5556640625, -1.0400390625, 0.576171875]},
}


def _gradients(program, dtype, **feeds):
    with np.errstate(all="ignore"):
        result = api.grad(program, wrt=list(feeds), feeds={k: np.array(v) for k, v in feeds.items()}, dtype=dtype,
                          fixes=False)
    return {k: v.astype(np.float64).tolist() for k, v in result.gradients.items()}


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_tanh_gradients_are_pytorchs_in_the_type(dtype):
    """In bfloat16 tanh(2.95) is held as 0.99609375, so 1 - y² is 0.0078 where sech²(2.95) is
    0.0108: the middle row of W's gradient is PyTorch's 0.0156, not float64's rule's 0.0216."""
    assert _gradients(MLP, dtype, W=W, x=X) == TORCH_MLP[dtype]


def test_sigmoid_gradients_are_pytorchs_in_the_type():
    """-log(sigmoid(x)) at -20 in float16: sigmoid(-20) = 2e-9 is held as 0, so log's gradient is
    -inf and sigmoid's -inf * 0 * 1 = nan, as PyTorch gives; at 20, y is held as 1 and the
    gradient is -0.0 (PyTorch: [nan, -0.5, -0.0]; bfloat16: [-1.0, -0.5, -0.0])."""
    got = _gradients("y = sum(-log(sigmoid(x)))", "float16", x=[-20.0, 0.0, 20.0])["x"]
    assert np.isnan(got[0]) and got[1:] == [-0.5, 0.0] and np.signbit(got[2])
    assert _gradients("y = sum(-log(sigmoid(x)))", "bfloat16", x=[-20.0, 0.0, 20.0]) == {"x": [-1.0, -0.5, -0.0]}
