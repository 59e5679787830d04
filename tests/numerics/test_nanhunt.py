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


# ----------------------------------------------------------------------------- a fix inside print(...)

def test_a_fix_of_a_printed_expression_is_proven_although_the_print_names_it_anew(tmp_path):
    # numpy 2.4.6 prints [  0. -inf]; the log-softmax is [0, -800] (log(1 + e^-800) is 0 in float64)
    program = ("import numpy as np\nz = np.array([0.0, -800.0])\np = np.exp(z) / np.sum(np.exp(z))\n"
               "print(np.log(p))\n")
    out = json_of(run_file(tmp_path, "f.py", program, "eval", "--format", "json"))
    assert out["outputs"]["np.log(p)"]["value"] == [0.0, "-Infinity"]
    d = next(d for d in out["diagnostics"] if d["kind"] == "divide_by_zero")
    assert (d["op"], d["line"], d["column"]) == ("log", 4, 7)
    assert "leaves no value" not in d["suggestion"] and "verified on these inputs" in d["suggestion"]
    fixed = gradcli("fix", str(tmp_path / "f.py"), cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    (tmp_path / "g.py").write_text(fixed.stdout)
    again = json_of(gradcli("eval", str(tmp_path / "g.py"), "--format", "json", cwd=tmp_path))
    [value] = again["outputs"].values()
    assert value["value"] == [0.0, -800.0]


# ----------------------------------------------------------------------------- norms at the zero vector

@pytest.mark.parametrize("program,name,printed", [
    # tensorflow 2.21.0: tape.gradient(tf.norm(x), x) at x = 0 prints [nan nan nan]
    ("import tensorflow as tf\nx = tf.zeros([3], dtype=tf.float64)\nwith tf.GradientTape() as tape:\n"
     "    tape.watch(x)\n    y = tf.norm(x)\ng = tape.gradient(y, x)\n", "g", ["NaN", "NaN", "NaN"]),
    # jax 0.10.2: jax.grad(lambda x: jnp.linalg.norm(x) ** 2)(jnp.zeros(2)) prints [nan nan]
    ("import jax\nimport jax.numpy as jnp\ndef f(x):\n    return jnp.linalg.norm(x) ** 2\n"
     "g = jax.grad(f)(jnp.zeros(2))\n", "g", ["NaN", "NaN"]),
])
def test_a_norm_at_zero_is_explained_as_a_norm_and_offers_no_elementwise_sqrt(tmp_path, program, name, printed):
    out = json_of(run_file(tmp_path, "f.py", program, "eval", "--format", "json"))
    assert out["outputs"][name]["value"] == printed
    [d] = out["diagnostics"]
    assert d["kind"] == "nonfinite_gradient" and d["op"] == "norm"
    assert d["suggestion"].startswith("a norm has no derivative at the zero vector: its gradient x / norm(x) is 0 / 0")
    assert "sqrt(where(x > 0" not in d["suggestion"] and "guards" not in d
    assert d["not_fixed"] == "no rewrite is known for it"


# ----------------------------------------------------------------------------- one note for one cause

def test_a_softmax_past_float32_in_a_float64_run_is_noted_once(tmp_path):
    # tensorflow 2.21.0 (float32): tf.exp(x) / tf.reduce_sum(tf.exp(x)) at [90, 91] prints [nan nan]
    program = "import tensorflow as tf\nx = tf.constant([90.0, 91.0])\ny = tf.exp(x) / tf.reduce_sum(tf.exp(x))\n"
    out = json_of(run_file(tmp_path, "f.py", program, "eval", "--format", "json"))
    assert out["outputs"]["y"]["value"] == [pytest.approx(0.2689414213699951), pytest.approx(0.7310585786300049)]
    [d] = out["diagnostics"]
    assert (d["kind"], d["op"], d["line"], d["column"]) == ("float32_overflow", "exp", 3, 5)
    assert d["also_at"] == [{"line": 3, "column": 31}]
    f32 = json_of(run_file(tmp_path, "f.py", program, "eval", "--format", "json", "--dtype", "float32"))
    assert f32["outputs"]["y"]["value"] == ["NaN", "NaN"]
    assert f32["diagnostics"][0]["fix"]["replacement"] == "tf.nn.softmax(x, axis=-1)"


# ----------------------------------------------------------------------------- masked attention rows

@pytest.mark.parametrize("program", [
    # torch 2.13.0 prints p = [[0.2689, 0.7311], [nan, nan]] and s.grad = [[0., 0.], [0., 0.]]
    "import torch\ns = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)\n"
    "m = torch.tensor([[True, True], [False, False]])\ns2 = s.masked_fill(~m, float('-inf'))\n"
    "p = torch.softmax(s2, dim=-1)\np.sum().backward()\nprint(p, s.grad)\n",
])
def test_a_softmax_over_a_row_masked_whole_says_so(tmp_path, program):
    out = json_of(run_file(tmp_path, "f.py", program, "eval", "--format", "json"))
    assert out["outputs"]["p"]["value"] == [[pytest.approx(0.2689414213699951), pytest.approx(0.7310585786300049)],
                                           ["NaN", "NaN"]]
    assert out["outputs"]["s.grad"]["value"] == [[0.0, 0.0], [0.0, 0.0]]
    d = next(d for d in out["diagnostics"] if d["kind"] == "invalid")
    assert (d["op"], d["line"], d["column"]) == ("softmax", 5, 5)
    assert d["message"] == ("softmax gives NaN at 2 of 4 elements: every element of 1 slice along axis -1 is -inf "
                            "(a row masked whole): exp gives 0 at each, and softmax divides 0 by their sum, 0")
    assert d["suggestion"].startswith("a softmax over nothing has no value")


# ----------------------------------------------------------------------------- the words of a gradient's NaN

def test_a_gradient_that_turns_an_overflow_into_nan_is_named_as_the_gradient(tmp_path):
    # jax 0.10.2: jax.grad(lambda x: jnp.sum(jnp.log1p(jnp.exp(x))))(jnp.array([800.0, 1.0])) prints [nan 0.7310586]
    r = gradcli("grad", "-e", "y = sum(log1p(exp(x)))", "--wrt", "x", "--set", "x=[800.0, 1.0]", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.split() == ["x", "nan", "0.7310585786300048"]
    assert ("exp overflows float64 above 709.78; then the gradient through exp at 1:15 turns the infinities into "
            "NaN [overflow]") in r.stderr
    assert "replace 'log1p(exp(x))' at 1:9 with 'softplus(x)' (verified on these inputs" in r.stderr


def test_log_of_a_sigmoid_that_underflowed_is_not_said_to_divide(tmp_path):
    # tensorflow 2.21.0 (float64): log(sigmoid([-800, 0])) sums to -inf, its gradient prints [nan 0.5]
    program = ("import tensorflow as tf\nx = tf.constant([-800.0, 0.0], dtype=tf.float64)\n"
               "with tf.GradientTape() as tape:\n    tape.watch(x)\n"
               "    y = tf.reduce_sum(tf.math.log(tf.sigmoid(x)))\ng = tape.gradient(y, x)\nprint(y, g)\n")
    out = json_of(run_file(tmp_path, "f.py", program, "eval", "--format", "json"))
    assert out["outputs"]["y"]["value"] == "-Infinity" and out["outputs"]["g"]["value"] == ["NaN", 0.5]
    note = next(d for d in out["diagnostics"] if d["kind"] == "underflow")
    assert note["message"] == "sigmoid underflows to 0 at 1 element, and log at 5:23 then meets it at its pole, 0"
    assert [d["fix"]["replacement"] for d in out["diagnostics"] if "fix" in d] == ["tf.math.log_sigmoid(x)"] * 2


# ----------------------------------------------------------------------------- the sigmoid spelled out

TORCH_SIGMOID = """import torch
x = torch.tensor([-1000.0, 0.0, 1000.0], dtype=torch.float64, requires_grad=True)
s = 1 / (1 + torch.exp(-x))
s.sum().backward()
print(s, x.grad)
"""


def test_a_sigmoid_spelled_out_gets_the_librarys_sigmoid_proven(tmp_path):
    # torch 2.13.0 prints s = [0.0000, 0.5000, 1.0000] and x.grad = [   nan, 0.2500, 0.0000];
    # with torch.sigmoid(x) x.grad = [0.0000, 0.2500, 0.0000] (sigmoid'(-1000) = e^-1000, 0 in float64)
    out = json_of(run_file(tmp_path, "f.py", TORCH_SIGMOID, "eval", "--format", "json"))
    assert out["outputs"]["s"]["value"] == [0.0, 0.5, 1.0]
    assert out["outputs"]["x.grad"]["value"] == ["NaN", 0.25, 0.0]
    [d] = out["diagnostics"]
    assert (d["kind"], d["op"], d["line"], d["column"]) == ("overflow", "exp", 3, 14)
    assert d["fix"] == {"start": [3, 5], "end": [3, 28], "replacement": "torch.sigmoid(x)", "verified": True,
                        "alternatives": ["sigmoid(x)"]}
    fixed = gradcli("fix", str(tmp_path / "f.py"), cwd=tmp_path)
    (tmp_path / "g.py").write_text(fixed.stdout)
    again = json_of(gradcli("eval", str(tmp_path / "g.py"), "--format", "json", cwd=tmp_path))
    assert again["outputs"]["x.grad"]["value"] == [0.0, 0.25, 0.0] and again["diagnostics"] == []


def test_a_sigmoid_spelled_out_whose_value_is_right_offers_nothing_as_a_fix(tmp_path):
    # numpy 2.4.6: 1 / (1 + np.exp(-x)) at [-1000, 0, 1000] prints [0.  0.5 1. ], the right numbers
    program = "import numpy as np\nx = np.array([-1000.0, 0.0, 1000.0])\ns = 1 / (1 + np.exp(-x))\n"
    out = json_of(run_file(tmp_path, "f.py", program, "eval", "--format", "json"))
    assert out["outputs"]["s"]["value"] == [0.0, 0.5, 1.0]
    [d] = out["diagnostics"]
    assert "fix" not in d and d["not_fixed"] == ("'np.exp(-np.logaddexp(0, -x))' is known for it, but it makes "
                                                 "nothing finite or exact on these inputs")


# ----------------------------------------------------------------------------- logsumexp of nothing

def test_the_gradient_of_logsumexp_over_all_minus_infinity_is_said_as_its_gradient(tmp_path):
    # torch 2.13.0: torch.logsumexp of [-inf, -inf] prints tensor(-inf), its gradient tensor([nan, nan]);
    # jax 0.10.2: jax.grad(jax.nn.logsumexp) there prints [nan nan]
    out = json_of(gradcli("grad", "-e", "y = logsumexp(x)", "--wrt", "x", "--set", "x=[-inf, -inf]", "--format",
                          "json", cwd=tmp_path))
    assert out["outputs"]["y"]["value"] == "-Infinity" and out["gradients"]["x"]["value"] == ["NaN", "NaN"]
    d = next(d for d in out["diagnostics"] if d["kind"] == "invalid")
    assert d["message"] == ("the gradient of logsumexp, the softmax of its argument, is NaN at 2 of 2 elements: every "
                            "element of its argument is -inf (a row masked whole): exp gives 0 at each, and softmax "
                            "divides 0 by their sum, 0")


# ----------------------------------------------------------------------------- what "exact" is called

def test_a_guard_is_measured_against_an_extended_precision_evaluation_not_called_exact(tmp_path):
    # 1 - sigmoid(40) keeps a few digits in long double: the evaluation gives 40.0024 where the
    # mathematics gives 40 + log1p(e^-40) / 2 = 40.0000...; it must not be called the exact value
    r = gradcli("grad", "-e", "p = sigmoid(z)\nloss = -mean(t * log(p) + (1 - t) * log(1 - p))", "--wrt", "z",
                "--set", "z=[40.0, -40.0]", "--set", "t=[0.0, 1.0]", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.split() == ["z", "inf", "-0.5"]
    assert "it gives 33.8155 at loss where an extended-precision evaluation gives 40.0024" in r.stderr
    assert "exact value is 40.0024" not in r.stderr


def test_a_lambdas_log1p_of_exp_gets_softplus(tmp_path):
    # jax 0.10.2 prints inf [      nan 0.7310586]; with jax.nn.softplus: 801.3132617 [1.        0.7310586]
    program = ("import jax\nimport jax.numpy as jnp\nf = lambda x: jnp.sum(jnp.log1p(jnp.exp(x)))\n"
               "print(f(jnp.array([800.0, 1.0])), jax.grad(f)(jnp.array([800.0, 1.0])))\n")
    out = json_of(run_file(tmp_path, "f.py", program, "eval", "--format", "json"))
    values = [v["value"] for v in out["outputs"].values()]
    assert values == ["Infinity", ["NaN", pytest.approx(0.7310585786300049)]]
    assert [d["fix"]["replacement"] for d in out["diagnostics"]] == ["jax.nn.softplus(x)"] * 2
    fixed = gradcli("fix", str(tmp_path / "f.py"), cwd=tmp_path)
    assert "f = lambda x: jnp.sum(jax.nn.softplus(x))" in fixed.stdout


# ----------------------------------------------------------------------------- a guard is never verified

def test_a_guard_whose_numbers_pass_at_a_kink_is_not_called_verified(tmp_path):
    # |x| written sqrt(x * x): at 0 its gradient is 0 * inf (torch 2.13.0 prints tensor([nan, -1.],
    # dtype=torch.float64)); the guard's 0 there equals the central difference, the mean of the two
    # sides of the kink -1 and 1, and proves nothing: the mathematics has no derivative there
    out = json_of(gradcli("grad", "-e", "y = sum(sqrt(x * x))", "--wrt", "x", "--set", "x=[0.0, -3.0]",
                          "--format", "json", cwd=tmp_path))
    assert out["gradients"]["x"]["value"] == ["NaN", -1.0]
    [d] = out["diagnostics"]
    assert "fix" not in d and d["not_fixed"] == "no rewrite that keeps the mathematics is known for it, only a guard"
    [guard] = d["guards"]
    assert guard["verified"] is False
    assert guard["reason"].startswith("its numbers pass on these inputs, but only against differences taken across")
    fixed = gradcli("fix", "-e", "y = sum(sqrt(x * x))", "--wrt", "x", "--set", "x=[0.0, -3.0]", cwd=tmp_path)
    assert fixed.returncode == 1 and fixed.stdout == "y = sum(sqrt(x * x))\n"
