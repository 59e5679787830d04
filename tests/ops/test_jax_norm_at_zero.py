"""jnp.linalg.norm's gradient where the norm has none (a zero vector, a zero element), as JAX
computes it: NaN where JAX gives NaN, so that gradcli finds the NaN a JAX program makes instead of
hiding it behind a subgradient. Expected values printed by JAX 0.10.2 (x64) with
jax.grad(lambda v: jnp.linalg.norm(v, ord=o))(v)."""
import json
import math
import subprocess
import sys

import pytest

NAN, INF = math.nan, math.inf
ZERO_VECTOR, ONE_ZERO = "jnp.zeros(3)", "jnp.array([0.0, 1.0, -2.0])"
CASES = [  # (ord, v, JAX's gradient)
    ("None", ZERO_VECTOR, [NAN, NAN, NAN]),
    ("2", ZERO_VECTOR, [NAN, NAN, NAN]),
    ("2", ONE_ZERO, [0.0, 0.4472135954999579, -0.8944271909999159]),
    ("3", ZERO_VECTOR, [NAN, NAN, NAN]),
    ("3", ONE_ZERO, [0.0, 0.23112042478354486, -0.9244816991341794]),
    ("0.5", ZERO_VECTOR, [NAN, NAN, NAN]),
    ("0.5", ONE_ZERO, [INF, 2.414213562373095, -1.7071067811865475]),
    ("-1", ZERO_VECTOR, [NAN, NAN, NAN]),
    ("-1", ONE_ZERO, [NAN, 0.0, 0.0]),
    ("0", ONE_ZERO, [0.0, 0.0, 0.0]),
    ("1", ZERO_VECTOR, [1.0, 1.0, 1.0]),
    ("jnp.inf", ZERO_VECTOR, [1 / 6, 1 / 6, 1 / 6]),
    ("jnp.inf", "jnp.array([2.0, -2.0, 1.0])", [0.5, -0.5, 0.0]),
    ("-jnp.inf", ZERO_VECTOR, [1 / 3, 1 / 3, 1 / 3]),
    ("-jnp.inf", "jnp.array([0.0, 0.0, 1.0])", [0.5, 0.5, 0.0]),
    # a zero matrix: fro is sqrt(sum(x^2)); 1, inf and 2 take max(0, m), -1, -inf, -2 a min
    ("None", "jnp.zeros((2, 3))", [NAN] * 6),
    ("'fro'", "jnp.zeros((2, 3))", [NAN] * 6),
    ("1", "jnp.zeros((2, 3))", [1 / 6] * 6),
    ("-1", "jnp.zeros((2, 3))", [1 / 3] * 6),
    ("jnp.inf", "jnp.zeros((2, 3))", [0.25] * 6),
    ("-jnp.inf", "jnp.zeros((2, 3))", [0.5] * 6),
    ("2", "jnp.zeros((2, 3))", [0.25, 0.0, 0.0, 0.0, 0.25, 0.0]),
    ("-2", "jnp.zeros((2, 3))", [0.5, 0.0, 0.0, 0.0, 0.5, 0.0]),
    ("'nuc'", "jnp.zeros((2, 3))", [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]),
    ("1", "jnp.array([[0.0, 1.0, -2.0], [3.0, 0.0, 1.0]])", [0.5, 0.0, -0.5, 0.5, 0.0, 0.5]),
]


def _gradient(program: str) -> list[float]:
    done = subprocess.run([sys.executable, "-m", "gradcli", "grad", "--wrt", "v", "--format", "json"],
                          input=program, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["gradients"]["v"]["value"]


def _flat(value) -> list:
    return [x for row in value for x in _flat(row)] if isinstance(value, list) else [value]


@pytest.mark.parametrize("ord_, v, expected", CASES)
def test_jax_norm_gradient_is_jax_s_where_the_norm_has_none(ord_, v, expected):
    got = [float(x) for x in _flat(_gradient(
        f"import jax.numpy as jnp\nv = {v}\njnp.linalg.norm(v, ord={ord_})\n"))]
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-12, abs=1e-15), (got, expected)


def test_a_row_of_zeros_halves_only_its_own_rows_gradient():
    # JAX 0.10.2: jax.grad(lambda v: jnp.linalg.norm(v, ord=jnp.inf, axis=1).sum())(...) -> [[0.25 0.25] [1. 0.]]
    got = _flat(_gradient("import jax.numpy as jnp\nv = jnp.array([[0.0, 0.0], [1.0, 0.0]])\n"
                          "jnp.linalg.norm(v, ord=jnp.inf, axis=1).sum()\n"))
    assert got == [0.25, 0.25, 1.0, 0.0]


def test_numpy_s_norm_keeps_its_subgradient_at_zero():
    # np.linalg.norm has no gradient of its own: gradcli's norm gives 0 where the norm has none
    assert _flat(_gradient("import numpy as np\nv = np.zeros(3)\nnp.linalg.norm(v)\n")) == [0.0, 0.0, 0.0]
