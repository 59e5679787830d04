"""np.nanvar / np.nanstd (and jnp's): values as NumPy 2.4.6 prints them, gradients as JAX 0.10.2
(x64) gives them with jax.grad, for the same programs."""
import json
import math
import subprocess
import sys

import pytest

CASES = [  # (program after the import, NumPy's value, JAX's gradient)
    ("x = np.array([1.0, np.nan, 3.0, 4.0]); np.nanvar(x)", 1.5555555555555554,
     [-1.1111111111111112, 0.0, 0.2222222222222222, 0.8888888888888888]),
    ("x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 7.0]]); np.nanstd(x, axis=1, ddof=1).sum()", 2.9417387940250417,
     [-0.7071067811865475, 0.0, 0.7071067811865475, -0.4364357804719847, -0.1091089451179962, 0.5455447255899809]),
    ("x = np.array([np.nan, 2.0]); np.nanvar(x, ddof=1)", math.nan, [0.0, 0.0]),
]


def _grad(program: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "gradcli", "grad", "--wrt", "x", "--format", "json"], input=program,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _number(v):
    return float(v) if isinstance(v, str) else v


@pytest.mark.parametrize("library", ["numpy", "jax.numpy"])
@pytest.mark.parametrize("program, value, gradient", CASES)
def test_nan_moments_give_numpy_s_values_and_jax_s_gradients(library, program, value, gradient):
    out = _grad(f"import {library} as np\n{program}\n")
    got = _number(out["outputs"]["_"]["value"])
    assert (math.isnan(got) and math.isnan(value)) or got == pytest.approx(value, rel=1e-15)
    flat = out["gradients"]["x"]["value"]
    flat = [_number(v) for row in flat for v in (row if isinstance(row, list) else [row])]
    assert flat == pytest.approx(gradient, rel=1e-12, abs=1e-15)


def test_nanstd_where_all_values_are_equal_is_0_for_numpy_and_nan_for_jax():
    # JAX 0.10.2: jax.grad(lambda x: jnp.nanstd(x, axis=0, keepdims=True).sum())([[1, nan], [2, 2]]) -> [-0.5 0. 0.5 nan]
    program = "x = np.array([[1.0, np.nan], [2.0, 2.0]]); np.nanstd(x, axis=0, keepdims=True).sum()"
    numpy_out, jax_out = _grad(f"import numpy as np\n{program}\n"), _grad(f"import jax.numpy as np\n{program}\n")
    assert numpy_out["outputs"]["_"]["value"] == jax_out["outputs"]["_"]["value"] == 0.5
    assert numpy_out["gradients"]["x"]["value"] == [[-0.5, 0.0], [0.5, 0.0]]
    assert jax_out["gradients"]["x"]["value"] == [[-0.5, 0.0], [0.5, "NaN"]]
    assert [d["kind"] for d in jax_out["diagnostics"] if d["severity"] == "warning"] == ["nonfinite_gradient"]
