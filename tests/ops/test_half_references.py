"""The same programs in the same type in PyTorch and JAX: gradcli's value and gradients against
what PyTorch 2.13.0+cpu and JAX 0.10.2 (jaxlib on the CPU, ml_dtypes 0.6.0) printed for them, on
the same inputs (seeded below, rounded to the type). Recorded once by running the libraries
(torch.tensor(...).to(dtype) with backward(); jax.grad on jnp arrays of the dtype); neither is
imported here.

gradcli rounds each op's float32 result once; a library that composes an op out of several
rounded steps (PyTorch's and JAX's logsumexp: max + log(sum(exp(x - max)))) may differ from it
by one unit in the last place, and a gradient built from such a value by a little more: values
are held to one spacing of the type, gradients to 5 eps of their largest element.
"""
import ml_dtypes
import numpy as np
import pytest

from gradcli import api
from gradcli.dtypes import finfo

TYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}

PROGRAMS = {  # (gradcli's program, what the libraries ran, the inputs differentiated)
    "xent": ("y = -sum(t * log_softmax(x, axis=-1)) / 3", "-sum(t * log_softmax(x, -1)) / 3", ["x"]),
    "mlp": ("y = mean((tanh(x @ w1 + b1) @ w2 - t) ** 2)", "mean((tanh(x @ w1 + b1) @ w2 - t) ** 2)",
            ["w1", "b1", "w2"]),
    "lse": ("y = logsumexp(x)", "torch.logsumexp(x, 0), jax.scipy.special.logsumexp(x)", ["x"]),
    "matmul": ("y = sum(a @ b)", "sum(a @ b)", ["a", "b"]),
    "longsum": ("y = sum(x)", "sum(x), 100000 terms in [0, 1)", []),
}


def _inputs(name):
    """The inputs every library was given (before rounding to the type)."""
    rng = np.random.default_rng(2026)
    made = {
        "xent": {"x": rng.standard_normal((3, 5)) * 3, "t": np.eye(5)[[1, 4, 0]]},
        "mlp": {"x": rng.standard_normal((4, 3)), "w1": rng.standard_normal((3, 6)) * 0.5,
                "b1": rng.standard_normal(6) * 0.1, "w2": rng.standard_normal((6, 2)) * 0.5,
                "t": rng.standard_normal((4, 2))},
        "lse": {"x": rng.standard_normal(8) * 4},
        "matmul": {"a": rng.standard_normal((3, 4)), "b": rng.standard_normal((4, 2))},
        "longsum": {"x": rng.uniform(0.0, 1.0, 100000)},
    }
    return made[name]


# What the libraries printed (float32 of their float16/bfloat16 results; gradients raveled)
PRINTED = {
    "xent float16": {
        "torch": {
            "value": 2.123046875,
            "x": [0.00041222572326660156, -0.323974609375, 1.5139579772949219e-05, 0.29345703125,
                  0.0302276611328125, 0.032623291015625, 0.03076171875, 0.1949462890625, 0.035125732421875,
                  -0.29345703125, -0.1588134765625, 0.09417724609375, 0.0165863037109375, 0.01555633544921875,
                  0.032623291015625],
        },
        "jax": {
            "value": 2.12109375,
            "x": [0.0004127025604248047, -0.323974609375, 1.5079975128173828e-05, 0.29345703125, 0.03021240234375,
                  0.03265380859375, 0.0307159423828125, 0.1949462890625, 0.035064697265625, -0.29345703125,
                  -0.158935546875, 0.0941162109375, 0.0166015625, 0.01556396484375, 0.032562255859375],
        },
    },
    "mlp float16": {
        "torch": {
            "value": 1.09765625,
            "w1": [-0.125244140625, -0.1307373046875, -0.0029392242431640625, 0.037506103515625, 0.053009033203125,
                   0.1632080078125, 0.037384033203125, 0.044708251953125, 0.03082275390625, 0.06951904296875,
                   0.0184478759765625, 0.0792236328125, 0.1270751953125, 0.140869140625, 0.017578125,
                   -0.0650634765625, 0.0034637451171875, -0.1324462890625],
            "b1": [-0.1591796875, -0.17529296875, -0.11798095703125, 0.51123046875, -0.427734375, -0.4208984375],
            "w2": [-0.07843017578125, -0.035308837890625, 0.208740234375, 0.1611328125, -0.1470947265625,
                   -0.051239013671875, 0.040130615234375, 0.2646484375, 0.045745849609375, 0.212158203125,
                   -0.03546142578125, 0.0992431640625],
        },
        "jax": {
            "value": 1.09765625,
            "w1": [-0.125244140625, -0.130859375, -0.0029430389404296875, 0.037506103515625, 0.053009033203125,
                   0.1632080078125, 0.037384033203125, 0.04461669921875, 0.0308380126953125, 0.069580078125,
                   0.01837158203125, 0.0792236328125, 0.1270751953125, 0.140869140625, 0.017608642578125,
                   -0.0650634765625, 0.0034332275390625, -0.1324462890625],
            "b1": [-0.1591796875, -0.17529296875, -0.11798095703125, 0.51123046875, -0.427734375, -0.420654296875],
            "w2": [-0.07843017578125, -0.035308837890625, 0.208740234375, 0.1611328125, -0.1470947265625,
                   -0.051239013671875, 0.040130615234375, 0.2646484375, 0.045745849609375, 0.212158203125,
                   -0.03546142578125, 0.0992431640625],
        },
    },
    "lse float16": {
        "torch": {
            "value": 9.046875,
            "x": [7.212162017822266e-06, 0.96923828125, 1.150369644165039e-05, 0.01039886474609375,
                  0.0007271766662597656, 6.401538848876953e-05, 8.64267349243164e-06, 0.0202789306640625],
        },
        "jax": {
            "value": 9.046875,
            "x": [7.152557373046875e-06, 0.96875, 1.150369644165039e-05, 0.0103912353515625, 0.0007266998291015625,
                  6.395578384399414e-05, 8.64267349243164e-06, 0.020263671875],
        },
    },
    "matmul float16": {
        "torch": {
            "value": -3.65625,
            "a": [-3.76171875, -1.1640625, 1.650390625, -0.8125, -3.76171875, -1.1640625, 1.650390625, -0.8125,
                  -3.76171875, -1.1640625, 1.650390625, -0.8125],
            "b": [0.09228515625, 0.09228515625, 1.046875, 1.046875, -1.275390625, -1.275390625, -0.018829345703125,
                  -0.018829345703125],
        },
        "jax": {
            "value": -3.65625,
            "a": [-3.76171875, -1.1640625, 1.650390625, -0.8125, -3.76171875, -1.1640625, 1.650390625, -0.8125,
                  -3.76171875, -1.1640625, 1.650390625, -0.8125],
            "b": [0.09228515625, 0.09228515625, 1.046875, 1.046875, -1.275390625, -1.275390625, -0.018829345703125,
                  -0.018829345703125],
        },
    },
    "longsum float16": {
        "torch": {
            "value": 49792.0,
        },
        "jax": {
            "value": 49824.0,
        },
    },
    "xent bfloat16": {
        "torch": {
            "value": 2.125,
            "x": [0.000415802001953125, -0.32421875, 1.5139579772949219e-05, 0.294921875, 0.0306396484375,
                  0.032958984375, 0.031005859375, 0.1953125, 0.03515625, -0.294921875, -0.1591796875, 0.0947265625,
                  0.0166015625, 0.015625, 0.032470703125],
        },
        "jax": {
            "value": 2.125,
            "x": [0.000415802001953125, -0.32421875, 1.519918441772461e-05, 0.294921875, 0.0301513671875,
                  0.03271484375, 0.0308837890625, 0.1953125, 0.03515625, -0.29296875, -0.1591796875, 0.0947265625,
                  0.016845703125, 0.0157470703125, 0.03271484375],
        },
    },
    "mlp bfloat16": {
        "torch": {
            "value": 1.09375,
            "w1": [-0.12451171875, -0.130859375, -0.003021240234375, 0.037841796875, 0.052490234375, 0.162109375,
                   0.037841796875, 0.0458984375, 0.03076171875, 0.06982421875, 0.016845703125, 0.078125,
                   0.1259765625, 0.140625, 0.0177001953125, -0.06591796875, 0.00396728515625, -0.130859375],
            "b1": [-0.16015625, -0.17578125, -0.1181640625, 0.51171875, -0.4296875, -0.421875],
            "w2": [-0.07861328125, -0.035400390625, 0.2060546875, 0.1611328125, -0.1455078125, -0.052001953125,
                   0.041015625, 0.263671875, 0.0458984375, 0.2109375, -0.03369140625, 0.0986328125],
        },
        "jax": {
            "value": 1.09375,
            "w1": [-0.12451171875, -0.130859375, -0.0029449462890625, 0.038330078125, 0.052978515625, 0.16015625,
                   0.037353515625, 0.04541015625, 0.0306396484375, 0.0703125, 0.0169677734375, 0.0771484375,
                   0.1259765625, 0.140625, 0.0177001953125, -0.06640625, 0.003997802734375, -0.1298828125],
            "b1": [-0.1591796875, -0.17578125, -0.119140625, 0.515625, -0.4296875, -0.419921875],
            "w2": [-0.07861328125, -0.035400390625, 0.2060546875, 0.1611328125, -0.1455078125, -0.052001953125,
                   0.041015625, 0.263671875, 0.0458984375, 0.2109375, -0.03369140625, 0.0986328125],
        },
    },
    "lse bfloat16": {
        "torch": {
            "value": 9.0,
            "x": [7.420778274536133e-06, 1.0, 1.2218952178955078e-05, 0.0107421875, 0.00075531005859375,
                  6.628036499023438e-05, 8.940696716308594e-06, 0.0213623046875],
        },
        "jax": {
            "value": 9.0,
            "x": [7.18235969543457e-06, 0.96875, 1.1861324310302734e-05, 0.0103759765625, 0.000732421875,
                  6.437301635742188e-05, 8.64267349243164e-06, 0.020751953125],
        },
    },
    "matmul bfloat16": {
        "torch": {
            "value": -3.65625,
            "a": [-3.765625, -1.1640625, 1.6484375, -0.8125, -3.765625, -1.1640625, 1.6484375, -0.8125, -3.765625,
                  -1.1640625, 1.6484375, -0.8125],
            "b": [0.0908203125, 0.0908203125, 1.046875, 1.046875, -1.28125, -1.28125, -0.016845703125,
                  -0.016845703125],
        },
        "jax": {
            "value": -3.65625,
            "a": [-3.765625, -1.1640625, 1.6484375, -0.8125, -3.765625, -1.1640625, 1.6484375, -0.8125, -3.765625,
                  -1.1640625, 1.6484375, -0.8125],
            "b": [0.0908203125, 0.0908203125, 1.046875, 1.046875, -1.28125, -1.28125, -0.016845703125,
                  -0.016845703125],
        },
    },
    "longsum bfloat16": {
        "torch": {
            "value": 49920.0,
        },
        "jax": {
            "value": 49920.0,
        },
    },
}


def _spacing(value: float, dtype: str) -> float:
    """The gap between numbers of the type at a normal `value`: eps times its power of two."""
    return 2.0 ** np.floor(np.log2(abs(value))) * finfo(dtype).eps


@pytest.mark.parametrize("dtype", list(TYPES))
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_same_program_same_type_as_pytorch_and_jax(name, dtype):
    program, _, wrt = PROGRAMS[name]
    t = TYPES[dtype]
    feeds = {k: np.asarray(v).astype(t).astype(np.float64) for k, v in _inputs(name).items()}
    result = api.grad(program, wrt=wrt, feeds=feeds, dtype=dtype, fixes=False) if wrt else \
        api.evaluate(program, feeds=feeds, dtype=dtype, fixes=False)
    value = float(result.outputs["y"])
    eps = finfo(dtype).eps
    for library, printed in PRINTED[f"{name} {dtype}"].items():
        assert abs(value - printed["value"]) <= _spacing(printed["value"], dtype), (library, value, printed["value"])
        for x in wrt:
            want = np.asarray(printed[x])
            got = result.gradients[x].astype(np.float64).ravel()
            np.testing.assert_allclose(got, want, rtol=0, atol=5 * eps * np.max(np.abs(want)),
                                       err_msg=f"d/d{x} against {library}")


def test_where_they_agree_exactly():
    """The numbers that are the same bit for bit: a matrix product's sum and its gradients in
    both types, and the sums of 100000 terms that PyTorch and JAX round as gradcli does (the
    float64 sum 49822.3 is 49824 in float16: JAX and gradcli; PyTorch's float16 sum gives 49792)."""
    for dtype in TYPES:
        feeds = {k: np.asarray(v).astype(TYPES[dtype]).astype(np.float64) for k, v in _inputs("matmul").items()}
        result = api.grad("y = sum(a @ b)", wrt=["a", "b"], feeds=feeds, dtype=dtype, fixes=False)
        for library in ("torch", "jax"):
            printed = PRINTED[f"matmul {dtype}"][library]
            assert float(result.outputs["y"]) == printed["value"]
            assert result.gradients["a"].astype(np.float64).ravel().tolist() == printed["a"]
            assert result.gradients["b"].astype(np.float64).ravel().tolist() == printed["b"]
    feeds = {"x": _inputs("longsum")["x"].astype(np.float16).astype(np.float64)}
    assert float(api.evaluate("y = sum(x)", feeds=feeds, dtype="float16", fixes=False).outputs["y"]) == \
        PRINTED["longsum float16"]["jax"]["value"] == 49824.0
    assert PRINTED["longsum float16"]["torch"]["value"] == 49792.0
