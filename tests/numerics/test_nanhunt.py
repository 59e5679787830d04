"""NaN and infinity cases users meet (the where trap, softmax and exp overflow, norms, atan2,
acos, powers of negatives, float32 limits), each run through gradcli as a user would paste it:
the values must be the library's (printed by torch 2.13.0+cpu, jax 0.10.2, tensorflow 2.21.0,
numpy 2.4.6, recorded here as literals), the first non-finite place and its cause named, and a
fix offered only where it is proven to give the exact value."""
import json
import subprocess
import sys

import pytest


def gradcli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd)


def run_file(tmp_path, name, text, *args):
    path = tmp_path / name
    path.write_text(text)
    return gradcli(*args[:1], str(path), *args[1:], cwd=tmp_path)


def json_of(result):
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# ----------------------------------------------------------------------------- the where trap, forward NaN

JAX_WHERE_SQRT = """import jax
import jax.numpy as jnp
def f(x):
    return jnp.sum(jnp.where(x > 0, jnp.sqrt(x), 0.0))
g = jax.grad(f)(jnp.array([-1.0, 4.0]))
"""


def test_jnp_where_over_sqrt_of_a_negative_gets_the_double_where_fix(tmp_path):
    # JAX's FAQ case: sqrt(-1) is NaN in the branch the where discards, and so is its gradient;
    # jax 0.10.2 prints [ nan 0.25], and with the inner where [0.   0.25]
    out = json_of(run_file(tmp_path, "f.py", JAX_WHERE_SQRT, "eval", "--format", "json"))
    assert out["outputs"]["g"]["value"] == ["NaN", 0.25]
    [d] = out["diagnostics"]
    assert (d["kind"], d["op"], d["line"], d["column"]) == ("invalid", "sqrt", 4, 37)
    assert "its argument reaches -1, below its domain's start 0" in d["message"]
    assert d["fix"]["replacement"] == "jnp.where(x > 0, x, 1.0)"
    assert "verified on these inputs" in d["suggestion"]
    fixed = gradcli("fix", str(tmp_path / "f.py"), cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    assert "jnp.sqrt(jnp.where(x > 0, x, 1.0))" in fixed.stdout
    (tmp_path / "g.py").write_text(fixed.stdout)
    again = json_of(gradcli("eval", str(tmp_path / "g.py"), "--format", "json", cwd=tmp_path))
    assert again["outputs"]["g"]["value"] == [0.0, 0.25] and again["diagnostics"] == []


def test_where_over_sqrt_of_a_negative_in_gradclis_language(tmp_path):
    r = gradcli("grad", "-e", "y = sum(where(x > 0, sqrt(x), 0.0))", "--wrt", "x", "--set", "x=[-1.0, 4.0]",
                cwd=tmp_path)
    assert r.returncode == 0
    assert r.stdout.split() == ["x", "nan", "0.25"]
    assert "replace 'x' at 1:27 with 'where(x > 0, x, 1.0)' (verified on these inputs" in r.stderr


TORCH_WHERE_EXP = """import torch
a = torch.tensor(100., requires_grad=True)
b = torch.where(a <= 0, torch.exp(a), 1 + a)
b.backward()
print(a.grad)
"""


def test_torch_where_over_an_overflowing_exp_in_float32_gets_the_double_where_fix(tmp_path):
    # torch 2.13.0 prints tensor(nan) (exp(100) overflows float32; 0 * inf in the backward);
    # with torch.exp(torch.where(a <= 0, a, torch.ones_like(a))) it prints tensor(1.)
    out = json_of(run_file(tmp_path, "f.py", TORCH_WHERE_EXP, "eval", "--dtype", "float32", "--format", "json"))
    assert out["outputs"]["a.grad"]["value"] == "NaN"
    [d] = out["diagnostics"]
    assert (d["kind"], d["op"], d["line"], d["column"]) == ("overflow", "exp", 3, 25)
    assert "exp overflows float32 above 88.72; then the gradient of exp at 3:25" in d["message"]
    assert d["fix"]["replacement"] == "torch.where(a <= 0, a, torch.ones_like(a))"
    fixed = gradcli("fix", str(tmp_path / "f.py"), "--dtype", "float32", cwd=tmp_path)
    (tmp_path / "g.py").write_text(fixed.stdout)
    again = json_of(gradcli("eval", str(tmp_path / "g.py"), "--dtype", "float32", "--format", "json",
                            cwd=tmp_path))
    assert again["outputs"]["a.grad"]["value"] == 1.0


# ----------------------------------------------------------------------------- limits in the value's own type

def test_a_float32_array_overflowing_in_a_float64_run_is_told_float32s_limit(tmp_path):
    # numpy 2.4.6: np.exp(np.array([100.0], dtype=np.float32)) prints [inf]
    program = "import numpy as np\nx = np.array([100.0], dtype=np.float32)\ny = np.exp(x)\n"
    r = run_file(tmp_path, "f.py", program, "eval")
    assert r.returncode == 0 and r.stdout.split() == ["y", "inf"]
    assert "exp overflows float32 above 88.72 [overflow]" in r.stderr
    assert "stays below 88, or compute in log space" in r.stderr and "709" not in r.stderr


# ----------------------------------------------------------------------------- one cause, one diagnostic

def test_atan2_at_the_origin_is_one_diagnostic_for_both_slopes(tmp_path):
    # jax 0.10.2: jax.grad(jnp.arctan2, argnums=(0, 1))(0.0, 0.0) prints (nan, nan)
    r = gradcli("grad", "-e", "y = atan2(a, b)", "--wrt", "a", "--wrt", "b", "--set", "a=0.0", "--set", "b=0.0",
                "--format", "json", cwd=tmp_path)
    out = json_of(r)
    assert out["gradients"]["a"]["value"] == "NaN" and out["gradients"]["b"]["value"] == "NaN"
    [d] = out["diagnostics"]
    assert (d["kind"], d["line"], d["column"], d["reaches"]) == ("nonfinite_gradient", 1, 5, ["d/da", "d/db"])
    assert d["suggestion"].startswith("atan2(y, x) has no derivative at (0, 0)")


def test_jax_grad_of_arctan2_with_two_argnums_is_said_once(tmp_path):
    program = ("import jax\nimport jax.numpy as jnp\nf = lambda y, x: jnp.arctan2(y, x)\n"
               "g = jax.grad(f, argnums=(0, 1))(0.0, 0.0)\n")
    out = json_of(run_file(tmp_path, "f.py", program, "eval", "--format", "json"))
    assert out["outputs"]["g"]["value"] == ["NaN", "NaN"]
    assert len(out["diagnostics"]) == 1


# ----------------------------------------------------------------------------- why, in words

def test_a_negative_base_to_a_fractional_power_says_why(tmp_path):
    # torch 2.13.0: torch.pow(torch.tensor([-4.0, 4.0]), 0.5) prints tensor([nan, 2.]), grad [nan, 0.2500]
    program = ("import torch\nx = torch.tensor([-4.0, 4.0], requires_grad=True)\ny = torch.pow(x, 0.5)\n"
               "y.sum().backward()\nprint(y, x.grad)\n")
    out = json_of(run_file(tmp_path, "f.py", program, "eval", "--format", "json"))
    assert out["outputs"]["y"]["value"] == ["NaN", 2.0] and out["outputs"]["x.grad"]["value"] == ["NaN", 0.25]
    first = out["diagnostics"][0]
    assert (first["kind"], first["line"], first["column"]) == ("invalid", 3, 5)
    assert first["message"].endswith("a negative base raised to a power that is not an integer (no real number)")
    assert "sign(x) * abs(x) ** p" in first["suggestion"]


def test_acos_at_one_says_its_slope_is_infinite(tmp_path):
    # torch 2.13.0: the gradient of torch.acos at [1.0, 0.5] prints tensor([   -inf, -1.1547])
    program = ("import torch\nx = torch.tensor([1.0, 0.5], requires_grad=True)\ny = torch.acos(x).sum()\n"
               "y.backward()\nprint(x.grad)\n")
    out = json_of(run_file(tmp_path, "f.py", program, "eval", "--format", "json"))
    assert out["outputs"]["x.grad"]["value"] == ["-Infinity", pytest.approx(-1.1547005383792517)]
    [d] = out["diagnostics"]
    assert (d["kind"], d["line"], d["column"]) == ("nonfinite_gradient", 3, 5)
    assert d["suggestion"].startswith("d acos(u)/du = -1 / sqrt(1 - u^2) is infinite at u = -1 and 1")
    assert "fix" not in d
