"""Fixes are trusted only as far as they are proven: a rewrite is verified where it gives, wherever
the original was not finite (or was finite but wrong), the number the mathematics gives (an
extended-precision evaluation of the original, or differences of it for a gradient), and the
same numbers elsewhere. A cap that changes the value is named as what it is, never verified;
a diagnostic without a fix says why. Proving keeps --max-memory and shows progress on a
terminal; `fix --diff` is a patch of the file as it is; proving is a few runs, not one a place."""
import io
import json
import re
import shutil
import subprocess
import sys
import tracemalloc
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from scipy.special import log_softmax, logsumexp, softmax

from gradcli import api
from gradcli.numerics import exactness


def gradcli(*args, stdin=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "gradcli", *args], input=stdin, capture_output=True, text=True,
                          timeout=120, cwd=cwd)


# ----------------------------------------------------------------------------- a softmax partly overflowing

@pytest.mark.parametrize("x,dtype", [([700.0, 710.0, 720.0], "float64"), ([80.0, 90.0, 100.0], "float32"),
                                     ([715.0, 710.0, 720.0], "float64")])
def test_a_softmax_overflowing_at_some_elements_is_fixed(x, dtype):
    # exp(700) is finite, exp(710) is not: y[0] = exp(700) / inf = 0, finite and wrong (2.06e-9)
    program = "y = exp(x) / sum(exp(x))"
    fixed = api.fix(program, feeds={"x": np.array(x)}, dtype=dtype)
    assert fixed.applied and fixed.nonfinite == [], fixed.not_fixed
    got = api.evaluate(fixed.text, feeds={"x": np.array(x)}, dtype=dtype).outputs["y"]
    np.testing.assert_allclose(got, softmax(np.array(x, dtype=dtype).astype(np.float64)),
                               rtol=1e-12 if dtype == "float64" else 1e-5)


def test_the_numbers_a_fix_corrects_are_named():
    result = api.evaluate("y = exp(x) / sum(exp(x))", feeds={"x": np.array([700.0, 710.0, 720.0])})
    (d,) = [d for d in result.diagnostics if d.kind == "overflow"]
    assert d.fix is not None
    assert "corrects numbers that were finite but wrong: y[0] was 0, exactly 2.06106e-09" in d.suggestion


def test_a_softmax_along_an_axis_fixes_the_overflowing_row_and_keeps_the_other():
    x = np.array([[700.0, 710.0, 720.0], [1.0, 2.0, 3.0]])
    program = "y = exp(x) / sum(exp(x), axis=1, keepdims=True)"
    fixed = api.fix(program, feeds={"x": x})
    got = api.evaluate(fixed.text, feeds={"x": x}).outputs["y"]
    np.testing.assert_allclose(got, softmax(x, axis=1), rtol=1e-12)


def test_the_cli_fix_diff_is_not_empty_for_a_partial_overflow():
    out = gradcli("fix", "-e", "y = exp(x) / sum(exp(x))", "--set", "x=[700.0, 710.0, 720.0]", "--diff")
    assert out.returncode == 0, out.stderr
    assert "+y = exp(x - stop_gradient(max(x))) / sum(exp(x - stop_gradient(max(x))))" in out.stdout


# ----------------------------------------------------------------------------- softmax followed by log

X = np.array([[1.0, 2.0, 3.0], [800.0, 0.0, 1.0]])
EXACT = -log_softmax(X, axis=1)[1, 2]          # 799.0000000000...: probs[1, 2] underflowed to 0

CROSS_ENTROPIES = {
    "torch": "import torch\nprobs = torch.softmax(x, dim=1)\ny = -torch.log(probs[1, 2])",
    "torch method": "import torch\nprobs = x.softmax(dim=1)\ny = -probs[1, 2].log()",
    "numpy": "import numpy as np\ne = np.exp(x)\np = e / np.sum(e, axis=1, keepdims=True)\ny = -np.log(p[1, 2])",
    "numpy shifted": ("import numpy as np\ne = np.exp(x - np.max(x, axis=1, keepdims=True))\n"
                      "p = e / np.sum(e, axis=1, keepdims=True)\ny = -np.log(p[1, 2])"),
    "scipy": "import numpy as np\nimport scipy.special\np = scipy.special.softmax(x, axis=1)\ny = -np.log(p[1, 2])",
    "jax": "import jax\nimport jax.numpy as jnp\np = jax.nn.softmax(x, axis=1)\ny = -jnp.log(p[1, 2])",
    "tensorflow": "import tensorflow as tf\np = tf.nn.softmax(x, axis=1)\ny = -tf.math.log(p[1, 2])",
}


@pytest.mark.parametrize("spelling", sorted(CROSS_ENTROPIES))
def test_the_naive_cross_entropy_gets_log_softmax_with_the_exact_value_and_gradient(spelling):
    program = CROSS_ENTROPIES[spelling]
    before = api.evaluate(program, feeds={"x": X})
    assert np.isinf(before.outputs["y"])
    fixed = api.fix(program, feeds={"x": X}, wrt=["x"])
    assert fixed.nonfinite == [] and "log(" not in fixed.text.split("\n")[-2].replace("np.log(np.sum", ""), \
        (fixed.text, fixed.not_fixed)
    assert not GRADCLI_ONLY.search(fixed.text), fixed.text   # written in the program's own library
    after = api.grad(fixed.text, wrt=["x"], feeds={"x": X})
    np.testing.assert_allclose(after.outputs["y"], EXACT, rtol=1e-14)
    expected = np.zeros_like(X)
    expected[1] = softmax(X[1])          # d(-log softmax(x)[1, 2])/dx = softmax(x[1]) - onehot(2)
    expected[1, 2] -= 1.0
    np.testing.assert_allclose(after.gradients["x"], expected, rtol=1e-12, atol=1e-300)


def test_the_cross_entropy_over_a_batch_keeps_the_users_subscript():
    program = "import torch\nprobs = torch.softmax(x, dim=1)\ny = -torch.log(probs[[0, 1], [2, 2]]).mean()"
    fixed = api.fix(program, feeds={"x": X})
    assert "torch.log_softmax(x, dim=1)[[0, 1], [2, 2]]" in fixed.text
    got = api.evaluate(fixed.text, feeds={"x": X}).outputs["y"]
    np.testing.assert_allclose(got, -log_softmax(X, axis=1)[[0, 1], [2, 2]].mean(), rtol=1e-14)


# names only gradcli reads: a fix of a library's program must not be written in them
GRADCLI_ONLY = re.compile(r"(?<![\w.])(log_softmax|logsumexp|softplus|log_sigmoid|stop_gradient|where|softmax|"
                          r"maximum|max|sum|exp|log)\(")

SOFTPLUS, LSE, SOFTMAX = (lambda x: np.sum(np.logaddexp(0, x))), logsumexp, softmax
LOG_SIGMOID = lambda x: np.sum(-np.logaddexp(0, x))  # noqa: E731  (of -x)

# (the library's program, the fixed text it must contain, the reference); x = [1000, 1]
IN_THE_LIBRARY = [
    ("import torch\ny = torch.sum(torch.log(1 + torch.exp(x)))", "torch.nn.functional.softplus(x)", SOFTPLUS),
    ("import torch\ny = torch.log(torch.sum(torch.exp(x)))", "torch.logsumexp(x, dim=-1)", LSE),
    ("import torch\ny = torch.exp(x) / torch.sum(torch.exp(x))", "torch.softmax(x, dim=-1)", SOFTMAX),
    ("import torch\ny = torch.sum(torch.log(torch.sigmoid(-x)))", "torch.nn.functional.logsigmoid(-x)", LOG_SIGMOID),
    ("import tensorflow as tf\ny = tf.reduce_sum(tf.math.log(1 + tf.exp(x)))", "tf.nn.softplus(x)", SOFTPLUS),
    ("import tensorflow as tf\ny = tf.math.log(tf.reduce_sum(tf.exp(x)))", "tf.math.reduce_logsumexp(x, axis=-1)", LSE),
    ("import tensorflow as tf\ny = tf.exp(x) / tf.reduce_sum(tf.exp(x))", "tf.nn.softmax(x, axis=-1)", SOFTMAX),
    ("import jax\nimport jax.numpy as jnp\ny = jnp.log(jnp.sum(jnp.exp(x)))", "jax.nn.logsumexp(x, axis=-1)", LSE),
    ("import jax\nimport jax.numpy as jnp\ny = jnp.sum(jnp.log(jax.nn.sigmoid(-x)))", "jax.nn.log_sigmoid(-x)",
     LOG_SIGMOID),
    ("import jax.numpy as jnp\ny = jnp.sum(jnp.log(1 + jnp.exp(x)))", "jnp.logaddexp(0, x)", SOFTPLUS),
    ("import numpy as np\ny = np.sum(np.log(1 + np.exp(x)))", "np.logaddexp(0, x)", SOFTPLUS),
    ("import numpy as np\ny = np.exp(x) / np.sum(np.exp(x))",
     "np.exp(x - np.max(x, axis=-1, keepdims=True)) / np.sum(np.exp(x - np.max(x, axis=-1, keepdims=True)), "
     "axis=-1, keepdims=True)", SOFTMAX),
    ("import numpy as np\ny = np.log(np.sum(np.exp(x)))",
     "(np.log(np.sum(np.exp(x - np.max(x, axis=-1, keepdims=True)), axis=-1)) + np.max(x, axis=-1))", LSE),
]


@pytest.mark.parametrize("program,written,reference", IN_THE_LIBRARY)
def test_a_fix_is_written_in_the_library_the_program_spells(program, written, reference):
    # pasted back into the real script, a fix in gradcli's own names (softplus, stop_gradient,
    # bare where) would break it; the fixed text is read back under the program's own reading
    x = np.array([1000.0, 1.0])
    fixed = api.fix(program, feeds={"x": x})
    assert written in fixed.text and fixed.nonfinite == [], (fixed.text, fixed.not_fixed)
    assert not GRADCLI_ONLY.search(fixed.text), fixed.text
    np.testing.assert_allclose(api.evaluate(fixed.text, feeds={"x": x}).outputs["y"], reference(x), rtol=1e-13)


def test_the_where_trap_is_fixed_in_the_programs_library():
    x = np.array([0.0, 2.0])
    for program, written in [
            ("import torch\ny = torch.sum(torch.where(x > 0, torch.log(x), 0.0))",
             "torch.log(torch.where(x > 0, x, torch.ones_like(x)))"),
            ("import numpy as np\ny = np.sum(np.where(x > 0, np.log(x), 0.0))", "np.log(np.where(x > 0, x, 1.0))"),
            ("import tensorflow as tf\ny = tf.reduce_sum(tf.where(x > 0, tf.math.log(x), 0.0))",
             "tf.math.log(tf.where(x > 0, x, tf.ones_like(x)))")]:
        fixed = api.fix(program, feeds={"x": x}, wrt=["x"])
        assert written in fixed.text and fixed.nonfinite == [], (fixed.text, fixed.not_fixed)
        np.testing.assert_array_equal(api.grad(fixed.text, wrt=["x"], feeds={"x": x}).gradients["x"], [0.0, 0.5])


LOGS_OF_AN_UNDERFLOWED_PROBABILITY = [
    "p = exp(-800.0 * x)\ny = -log(p)",
    "import numpy as np\np = np.exp(-800.0 * x)\ny = -np.log(p)",
    "import torch\np = torch.exp(-800.0 * x)\ny = -torch.log(p)",
    "import torch\np = torch.exp(-800.0 * x)\ny = -p.log()",
    "import jax.numpy as jnp\np = jnp.exp(-800.0 * x)\ny = -jnp.log(p)",
    "import tensorflow as tf\np = tf.exp(-800.0 * x)\ny = -tf.math.log(p)",
]


@pytest.mark.parametrize("program", LOGS_OF_AN_UNDERFLOWED_PROBABILITY)
def test_a_cap_that_changes_the_value_is_never_called_verified(program):
    # -log(exp(-800)) = 800; log(maximum(p, 1e-12)) would give 27.63: a cap, shown as what it is
    result = api.evaluate(program, feeds={"x": 1.0})
    (d,) = [d for d in result.diagnostics if d.kind == "divide_by_zero"]
    assert d.fix is None and d.fix_json is None
    (guard,) = d.guards_json
    assert guard["verified"] is False and "maximum(" in guard["replacement"]
    assert guard["guard"].startswith("a cap that keeps log off its pole") and "stops the gradient" in guard["guard"]
    assert guard["reason"] == "it gives 27.631 at y where an extended-precision evaluation gives 800"
    assert "verified" not in d.suggestion
    fixed = api.fix(program, feeds={"x": 1.0})
    assert fixed.applied == [] and fixed.nonfinite == ["y"] and fixed.text.strip() == program


def test_fix_says_per_diagnostic_why_there_is_no_fix():
    program = "a = exp(2.0 * x)\np = exp(-0.8 * x)\ny = a + log(1 + exp(x)) - log(p)"
    out = gradcli("fix", "-e", program, "--set", "x=1000", "--format", "json")
    assert out.returncode == 1
    doc = json.loads(out.stdout)
    schema = json.loads((Path(__file__).resolve().parents[2] / "docs" / "gradcli.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    assert doc["fixed"]["applied"] == []
    reasons = {(n["line"], n["column"]): n["reason"] for n in doc["fixed"]["not_fixed"]}
    assert reasons[(1, 5)] == "no rewrite is known for it"                           # exp(2000) is inf
    assert reasons[(3, 17)] == ("'softplus(x)' is known for it, but it makes nothing finite or exact on "
                                "these inputs")                                      # y stays inf through a
    assert reasons[(3, 27)].startswith("no rewrite that keeps the mathematics is known")
    (cap,) = [n for n in doc["fixed"]["not_fixed"] if n["column"] == 27][0]["guards"]
    assert cap["reason"] == "it makes nothing finite or exact on these inputs"    # y stays inf through a
    plain = gradcli("fix", "-e", program, "--set", "x=1000")
    assert plain.returncode == 1
    assert "<expr>:1:5: not fixed [overflow]: no rewrite is known for it" in plain.stderr
    assert "<expr>:3:27: not fixed [divide_by_zero]: " in plain.stderr and "would be a cap" in plain.stderr


def test_a_where_trap_fix_stays_verified_by_differences_of_the_exact_evaluation():
    # the gradient is NaN even in the wide float (0 * inf); differences with the comparison held give 0
    program = "y = sum(where(x > 0, log(x), 0.0))"
    result = api.grad(program, wrt=["x"], feeds={"x": np.array([0.0, 2.0])})
    (d,) = [d for d in result.diagnostics if d.kind == "nonfinite_gradient"]
    assert d.fix is not None and d.fix.replacement == "where(x > 0, x, 1.0)"


# ----------------------------------------------------------------------------- memory and progress

def test_proving_keeps_max_memory():
    x = np.random.default_rng(0).normal(size=2_000_000)   # 16 MB
    x[0] = 1000.0
    limit = 64 << 20
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = api.evaluate("z = exp(x)\nw = log(1 + z)\ny = sum(w)", feeds={"x": x}, max_memory=limit,
                              printed=False)
        peak = tracemalloc.get_traced_memory()[1] - base + x.nbytes
    finally:
        tracemalloc.stop()
    # before: 174 MB, proving with every named value copied twice; now the proof gives up instead
    assert peak < 1.4 * limit, peak / 2**20
    (d,) = [d for d in result.diagnostics if d.kind == "overflow"]
    assert d.fix is None and "--max-memory" in d.not_fixed


def test_fix_proves_a_large_output_it_never_prints():
    # fix prints a program, not the values: their text (92 MB while rendered) is no reason to refuse
    x = np.random.default_rng(0).normal(size=2_000_000)
    x[0] = 1000.0
    tight = api.fix("y = log(1 + exp(x))", feeds={"x": x}, max_memory=96 << 20)
    ((_, why),) = tight.not_fixed   # the proof, not the command, is what does not fit
    assert tight.text == "y = log(1 + exp(x))\n" and "--max-memory" in why
    assert api.fix("y = log(1 + exp(x))", feeds={"x": x}, max_memory=400 << 20).text == "y = softplus(x)\n"


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_is_shown_on_a_terminal_and_cleared(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(exactness.Progress, "AFTER", 0.0)   # the work here takes less than the second it waits
    api.evaluate("y = log(1 + exp(x))", feeds={"x": np.array([1000.0, 1.0])})
    said = terminal.getvalue()
    assert "gradcli: proving fixes: run 1, 1 rewrite together" in said
    assert said.endswith("\r\033[K")


def test_no_progress_when_stderr_is_not_a_terminal(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(exactness.Progress, "AFTER", 0.0)
    api.evaluate("y = log(1 + exp(x))", feeds={"x": np.array([1000.0, 1.0])})
    assert stream.getvalue() == ""


# ----------------------------------------------------------------------------- patches and many places

FILES = {
    "crlf.expr": b"x = [1000.0, 1.0]\r\ny = log(1 + exp(x))\r\n",
    "no_newline.expr": b"x = [1000.0, 1.0]\ny = log(1 + exp(x))",
    "bom_blank.expr": b"\xef\xbb\xbfz = 2.0\r\nx = [1000.0, 1.0]\r\ny = log(1 + exp(x)) * z\r\n\r\n",
}
PATCHED = {
    "crlf.expr": b"x = [1000.0, 1.0]\r\ny = softplus(x)\r\n",
    "no_newline.expr": b"x = [1000.0, 1.0]\ny = softplus(x)",
    "bom_blank.expr": b"\xef\xbb\xbfz = 2.0\r\nx = [1000.0, 1.0]\r\ny = softplus(x) * z\r\n\r\n",
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_fix_diff_is_a_patch_of_the_file_as_it_is(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(FILES[name])
    out = subprocess.run([sys.executable, "-m", "gradcli", "fix", name, "--diff"], capture_output=True, cwd=tmp_path,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    diff = out.stdout
    if name == "crlf.expr":
        assert b"-y = log(1 + exp(x))\r\n+y = softplus(x)\r\n" in diff
    if name == "no_newline.expr":
        assert diff.endswith(b"+y = softplus(x)\n\\ No newline at end of file\n")
    if shutil.which("patch") is None:
        pytest.skip("no patch program here")
    applied = subprocess.run(["patch", name], input=diff, capture_output=True, cwd=tmp_path, timeout=60)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert path.read_bytes() == PATCHED[name]


def test_fix_prints_a_crlf_program_with_its_line_ends(tmp_path):
    (tmp_path / "p.expr").write_bytes(FILES["crlf.expr"])
    out = subprocess.run([sys.executable, "-m", "gradcli", "fix", "p.expr"], capture_output=True, cwd=tmp_path,
                         timeout=120)
    assert out.returncode == 0 and out.stdout == PATCHED["crlf.expr"]


def test_fix_proves_many_places_in_a_few_runs(monkeypatch):
    # 40 places, each proven alone before: 80 compilations (the command and its named values
    # per place), quadratic in the program's size; together, a handful
    lines = ["x = [1000.0, 1001.0, -3.0]", "w = [0.5, 2.0, 1.0]"]
    for i in range(20):
        lines += [f"a{i} = log(1 + exp(x * {1 + i % 7}.0)) * w", f"b{i} = log(sum(exp(x - {i}.0 * w)))"]
    lines.append("y = " + " + ".join(f"sum(a{i}) + b{i}" for i in range(20)))
    program = "\n".join(lines) + "\n"
    compiled = []
    real = api.compile_program
    monkeypatch.setattr(api, "compile_program", lambda *a, **k: compiled.append(1) or real(*a, **k))
    fixed = api.fix(program)
    assert len(fixed.applied) == 40 and fixed.nonfinite == []
    assert len(compiled) <= 12, len(compiled)
    feeds_free = api.evaluate(fixed.text).outputs["y"]
    x, w = np.array([1000.0, 1001.0, -3.0]), np.array([0.5, 2.0, 1.0])
    expected = sum(np.sum(np.logaddexp(0, x * (1 + i % 7)) * w) + logsumexp(x - i * w) for i in range(20))
    np.testing.assert_allclose(feeds_free, expected, rtol=1e-13)


def test_a_fix_that_would_break_a_finite_number_is_found_among_many():
    # one place among many cannot be fixed without changing a finite number (a named cap):
    # the halving finds it, the others are proven
    lines = ["x = [1000.0, 1.0]", "q = 1 / (x - 1.0)"]
    lines += [f"a{i} = log(1 + exp(x * {i + 1}.0))" for i in range(6)]
    lines.append("y = " + " + ".join(f"sum(a{i})" for i in range(6)) + " + sum(q)")
    fixed = api.fix("\n".join(lines) + "\n")
    assert len(fixed.applied) == 6 and all(f.replacement.startswith("softplus(") for _, f in fixed.applied)
    ((d, why),) = fixed.not_fixed
    assert d.kind == "divide_by_zero" and why.startswith("no rewrite that keeps the mathematics")
