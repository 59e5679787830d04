"""Casts written in the program (`x.half()`, `x.astype(np.float16)`, `x.to(torch.bfloat16)`,
`dtype=` in a call): the values after a cast are computed in its type, combined with other types
as the library promotes them, and their gradients are rounded back to the input's type, as
NumPy, PyTorch and JAX compute them. References: NumPy and ml_dtypes computed here; PyTorch
2.13.0+cpu's printed values, recorded below (PyTorch is not imported by the tests)."""
import ml_dtypes
import numpy as np
import pytest

from gradcli import api
from cli_helpers import invoke

REPRO = "import numpy as np\nx = np.array([12.0, 1.0]); h = x.astype(np.float16); y = np.sum(np.exp(h))"


def outputs(program, **feeds):
    return api.evaluate(program, feeds=feeds or None, fixes=False).outputs


def gradient(program, **feeds):
    result = api.grad(program, wrt=["x"], feeds=feeds, fixes=False)
    return result.outputs["y"], result.gradients["x"]


def test_float16_exp_overflows_as_numpy_does():
    x = np.array([12.0, 1.0])
    with np.errstate(over="ignore"):
        expected = np.sum(np.exp(x.astype(np.float16)))
    assert expected == np.inf  # (float16's largest number is 65504; exp(12) is 162755)
    result = api.evaluate(REPRO, fixes=False)
    assert result.outputs["y"] == expected
    overflow = [d for d in result.diagnostics if d.kind == "overflow"]
    assert [(d.op, d.pos.line, d.pos.column) for d in overflow] == [("exp", 2, REPRO.split("\n")[1].index("np.exp") + 1)]
    assert "exp overflows float16 above 11.09" in overflow[0].message


def test_without_the_cast_the_same_program_is_finite():
    value = outputs(REPRO.replace("x.astype(np.float16)", "x"))["y"]
    assert value == pytest.approx(np.exp(12.0) + np.exp(1.0), rel=1e-15)


TORCH_EXP_HALF = """import torch
x = torch.tensor([12.0, 1.0, -20.0, 3.3], requires_grad=True)
y = torch.exp(x.half()).sum()
y.backward()
g = x.grad"""


def test_torch_exp_of_half_backward_matches_pytorch():
    # PyTorch 2.13.0+cpu: tensor(inf, dtype=torch.float16); x.grad [inf, 2.71875, 0.0, 27.140625]
    # (exp(-20) underflows to 0 in float16; 3.3 is 3.30078125 in float16)
    result = outputs(TORCH_EXP_HALF)
    assert result["g"].tolist() == [np.inf, 2.71875, 0.0, 27.140625]


def test_bfloat16_round_trip_rounds_as_ml_dtypes():
    rng = np.random.default_rng(20261128)
    x = np.concatenate([rng.normal(size=200) * 10.0 ** rng.integers(-40, 40, size=200),
                        [1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 3.0e38, 1e-41, 0.0]])
    program = "import jax.numpy as jnp\ny = x.astype(jnp.bfloat16).astype(jnp.float32)"
    with np.errstate(over="ignore"):  # (3e38 is past bfloat16's largest number: inf)
        expected = x.astype(ml_dtypes.bfloat16).astype(np.float32).astype(np.float64)
    assert expected[-6:-3].tolist() == [1.0, 1 + 2**-6, -1.0]  # ties to even
    got = outputs(program, x=x)["y"]
    assert got.tobytes() == expected.tobytes()
    _, grad = gradient("import jax.numpy as jnp\ny = jnp.sum(x.astype(jnp.bfloat16).astype(jnp.float32) * 3.0)",
                       x=x[:10])
    assert grad.tolist() == [3.0] * 10


def test_a_gradient_underflows_inside_the_float16_section():
    # PyTorch 2.13.0+cpu: (x.half() * 1e-8).sum().backward() gives x.grad [0.0, 0.0];
    # with 1e-3: [0.0010004043579101562, 0.0010004043579101562]
    x = np.array([1.0, 2.0])
    value, grad = gradient("import torch\ny = (x.half() * 1e-8).sum()", x=x)
    assert value == 0.0 and grad.tolist() == [0.0, 0.0]
    _, grad = gradient("import torch\ny = (x.half() * 1e-3).sum()", x=x)
    assert grad.tolist() == [0.0010004043579101562] * 2 == [float(np.float16(1e-3))] * 2
    _, grad = gradient("import torch\ny = (x * 1e-8).sum()", x=x)  # without the cast: not lost
    assert grad.tolist() == [1e-8, 1e-8]


def test_casts_to_float32_round_and_to_float64_change_nothing():
    x = np.array([0.1, 1 / 3, 1e-46])
    got = outputs("import numpy as np\ny = x.astype(np.float32)", x=x)["y"]
    assert got.tolist() == x.astype(np.float32).astype(np.float64).tolist() != x.tolist()
    program = api.Program("import numpy as np\ny = x.astype(np.float64) + np.float64(x)", feeds={"x": x})
    assert program.graph.dtypes is None  # (no cast equation: the values are float64 already)
    assert outputs("import numpy as np\ny = x.astype(np.float64) + np.float64(x)", x=x)["y"].tolist() == (2 * x).tolist()
    assert outputs("import numpy as np\ny = np.float32(0.1)")["y"] == float(np.float32(0.1))


_X4 = np.array([40000.0])
_X3 = np.array([300.0, 300.0])


@pytest.mark.parametrize("program, numpy_computes", [
    # a written number is weak: float16 * 2.0 is float16 (NumPy 2)
    ("import numpy as np\nx = np.array([40000.0])\ny = x.astype(np.float16) * 2.0", lambda: _X4.astype(np.float16) * 2.0),
    # a float64 array beside float16: float64
    ("import numpy as np\nx = np.array([40000.0])\ny = x.astype(np.float16) + x", lambda: _X4.astype(np.float16) + _X4),
    # NumPy and JAX: a 0-d float64 value counts (180000 in float64)
    ("import numpy as np\nx = np.array([300.0, 300.0])\ny = x.astype(np.float16) * x.sum()",
     lambda: _X3.astype(np.float16) * _X3.sum()),
    ("import numpy as np\nx = np.array([12.0])\ny = np.exp(np.asarray(x, dtype=np.float16))",
     lambda: np.exp(np.asarray(np.array([12.0]), dtype=np.float16))),
    ("import numpy as np\nx = np.array([12.0, 1.0])\ny = np.sum(np.exp(x), dtype=np.float16)",
     lambda: np.sum(np.exp(np.array([12.0, 1.0])), dtype=np.float16)),
    # a constructor's dtype= rounds what it made (35000 is 35008 in float16; 70000 is inf)
    ("import numpy as np\ny = np.linspace(0.0, 70000.0, 3, dtype=np.float16)",
     lambda: np.linspace(0.0, 70000.0, 3, dtype=np.float16)),
    ("import numpy as np\nx = np.array([1.0001, 3.3])\ny = np.cumsum(x, dtype=np.float16)",
     lambda: np.cumsum(np.array([1.0001, 3.3]), dtype=np.float16)),
    # NumPy sums float16 in float32, but its cumsum adds in float16: 3000 ones stop at 2048
    ("import numpy as np\nx = np.ones(3000)\ny = np.sum(x.astype(np.float16))", lambda: np.sum(np.ones(3000, np.float16))),
    ("import numpy as np\nx = np.ones(3000)\ny = np.cumsum(x.astype(np.float16))[-1]",
     lambda: np.cumsum(np.ones(3000, np.float16))[-1]),
    ("import numpy as np\nx = np.array([1.0001, 3.3])\ny = x.astype(np.float16, copy=False) * 2.0",
     lambda: np.array([1.0001, 3.3]).astype(np.float16, copy=False) * 2.0),
])
def test_types_combine_as_numpy_promotes(program, numpy_computes):
    with np.errstate(over="ignore"):
        expected = np.atleast_1d(numpy_computes()).tolist()
    assert np.atleast_1d(outputs(program)["y"]).tolist() == expected


@pytest.mark.parametrize("program, expected", [
    # PyTorch 2.13.0+cpu: a 0-d tensor does not count beside a tensor of dimensions: float16, [inf, inf]
    ("import torch\nx = torch.tensor([300.0, 300.0])\ny = x.half() * x.sum()", [np.inf] * 2),
    # PyTorch 2.13.0+cpu: torch.ones(2, dtype=torch.float16) * 70000.0 is [inf, inf]
    ("import torch\ny = torch.ones(2, dtype=torch.float16) * 70000.0", [np.inf] * 2),
    ("import torch\nx = torch.tensor([1.0]).half()\ny = torch.ones(1, dtype=x.dtype) * 70000.0", [np.inf]),
    ("import torch\nx = torch.tensor([40000.0])\ny = x.to(torch.float16) * 2.0 + x.to(dtype=torch.float16, device='cpu')",
     [np.inf]),
    ("import tensorflow as tf\nx = tf.constant([40000.0])\ny = tf.cast(x, tf.float16) * 2.0", [np.inf]),
    # PyTorch 2.13.0+cpu: torch.ones(3000, dtype=torch.float16).cumsum(0)[-1] is 3000.0 (it adds in float32)
    ("import torch\nx = torch.ones(3000)\ny = torch.cumsum(x.half(), 0)[-1:]", [3000.0]),
    ("import tensorflow as tf\nx = tf.constant([40000.0])\ny = tf.cast(x, dtype=tf.float16, name='c') * 2.0",
     [np.inf]),
])
def test_types_combine_as_the_library_promotes(program, expected):
    assert outputs(program)["y"].tolist() == expected


def test_bfloat16_with_float16_is_float32():
    x = np.array([1 + 2**-10])
    expected = x.astype(ml_dtypes.bfloat16) + x.astype(np.float16)
    assert expected.dtype == np.float32 and expected.tolist() == [2 + 2**-10]
    got = outputs("import jax.numpy as jnp\ny = x.astype(jnp.bfloat16) + x.astype(jnp.float16)", x=x)["y"]
    assert got.tolist() == expected.tolist()


def test_softmax_in_float32_of_a_float16_tensor_matches_pytorch():
    # PyTorch 2.13.0+cpu: x = [12, 1, -3] (float32), s = F.softmax(x.half(), dim=0, dtype=torch.float32),
    # (s * tensor([1, 2, 3])).sum().backward(): s [0.9999829530715942, 1.670141500653699e-05,
    # 3.058971174141334e-07], x.grad [-1.728534698486328e-05, 1.6689300537109375e-05, 5.960464477539062e-07]
    program = ("import torch\nimport torch.nn.functional as F\ns = F.softmax(x.half(), dim=0, dtype=torch.float32)\n"
               "y = (s * torch.tensor([1.0, 2.0, 3.0])).sum()")
    result = api.grad(program, wrt=["x"], feeds={"x": np.array([12.0, 1.0, -3.0])}, fixes=False)
    assert result.gradients["x"].tolist() == [-1.728534698486328e-05, 1.6689300537109375e-05, 5.960464477539062e-07]
    s = outputs(program.rpartition("\n")[0], x=np.array([12.0, 1.0, -3.0]))["s"]
    # float32 numbers, within two of float32's roundings of PyTorch's (its exp is not NumPy's)
    assert s.astype(np.float32).astype(np.float64).tolist() == s.tolist()
    assert s.tolist() == pytest.approx([0.9999829530715942, 1.670141500653699e-05, 3.058971174141334e-07], rel=2.4e-7)


def test_derive_writes_the_casts_and_its_program_gives_the_same_numbers():
    program = "import torch\ny = torch.exp(x.half() * 2.0).sum()"
    text = api.derive(program, wrt="x", feeds={"x": np.array([1.0, 6.0])})
    assert ".astype('float16')" in text and ".astype('float64')" in text
    again = outputs(text)
    assert again["dy_dx"].tolist() == gradient(program, x=np.array([1.0, 6.0]))[1].tolist() == [14.78125, np.inf]


def test_check_compares_the_float64_math_across_a_cast():
    # finite differences across a rounding to float32 would measure the rounding (a step)
    result = api.check("y = sum(exp(tf.cast(x, tf.float32)) * w)", wrt=["x"],
                       feeds={"x": np.array([0.3, 1.7]), "w": np.array([1.0, 2.0])})
    assert all(report.passed for report in result.reports.values())


def test_a_float16_section_in_a_float32_run_is_float16():
    result = invoke("eval", "-e", "y = sum(exp(x.astype(np.float16)))", "--set", "x=[1.0, 12.0]",
                    "--dtype", "float32", "--format", "json")
    assert result.exit_code == 0, result.output
    assert '"value": "Infinity"' in result.output


@pytest.mark.parametrize("options, message", [
    (("--device", "dask"), "astype: the program computes in float16 from here, which --device dask does not (one "
                           "type per run there): run on --device cpu, or give the whole run one type with --dtype float16"),
    (("--dtype", "bfloat16"), "astype: a value of type float16 in a --dtype bfloat16 run: neither type holds the "
                              "other's numbers; run with --dtype float64 (the default) to compute the program's own types"),
])
def test_where_the_types_cannot_be_kept_the_run_is_refused(options, message):
    result = invoke("eval", "-e", "y = sum(exp(x.astype(np.float16)))", "--set", "x=[1.0, 12.0]", *options)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())


def test_lines_sharing_one_program_keep_its_casts():
    # the second line shares the first's program with other numbers, and no check would speak:
    # it must still be computed in float16 (exp(10) is 22032 there, exp(1) 2.71875)
    lines = "y = exp(np.array([12.0, 1.0]).astype(np.float16))\ny = exp(np.array([10.0, 1.0]).astype(np.float16))\n"
    result = invoke("eval", "--lines", "--format", "plain", stdin=lines)
    assert result.exit_code == 0, result.output
    assert "2\ty\t22032.0 2.71875" in result.output
