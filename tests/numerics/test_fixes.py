"""Fixes proven before they are shown: each rewrite gradcli offers is run on the user's own
inputs and kept only if it is finite where the original was not and gives the same numbers
wherever the original was finite. Each case is checked against an independent reference
(NumPy, SciPy, the analytic value), and cases where the obvious rewrite would change the
answer must get no code at all."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy.special import log_softmax, logsumexp, softmax

from gradcli import api

HUGE = np.array([[1000.0, 1001.0], [1.0, 2.0]])


def fixes_of(result):
    """(kind, replacement) of every proven rewrite, alternatives of the same span included."""
    return [(d.kind, r) for d in result.diagnostics if d.fix for f in [d.fix, *d.more_fixes]
            for r in (f.replacement, *f.alternatives)]


def applied(program, **kw):
    return api.fix(program, **kw).text


# (program, feeds, the proven replacement, the reference for the fixed program's y)
CASES = [
    # softmax overflowing, with and without an axis (the axis and keepdims are kept)
    ("y = exp(x) / sum(exp(x), axis=-1, keepdims=True)", {"x": HUGE}, "softmax(x, axis=-1)",
     lambda x: softmax(x, axis=-1)),
    ("y = exp(x) / sum(exp(x), axis=0, keepdims=True)", {"x": HUGE.T}, "softmax(x, axis=0)",
     lambda x: softmax(x, axis=0)),
    ("y = exp(x) / sum(exp(x))", {"x": np.array([1000.0, 1001.0])}, "softmax(x)", softmax),
    # softmax underflowing: 0 / 0, and the guard of the denominator would give 0 0
    ("y = exp(x) / sum(exp(x))", {"x": np.array([-1000.0, -1001.0])}, "softmax(x)", softmax),
    ("y = log(sum(exp(x)))", {"x": np.array([1000.0, 1001.0])}, "logsumexp(x)", logsumexp),
    ("y = log(sum(exp(x), axis=1))", {"x": HUGE}, "logsumexp(x, axis=1)", lambda x: logsumexp(x, axis=1)),
    ("y = log(1 + exp(x))", {"x": np.array([1000.0, 1.0])}, "softplus(x)", lambda x: np.logaddexp(0, x)),
    ("y = log(sigmoid(x))", {"x": np.array([-1000.0, 1.0])}, "log_sigmoid(x)", lambda x: -np.logaddexp(0, -x)),
    ("y = log(softmax(x))", {"x": np.array([-1000.0, 1.0])}, "log_softmax(x)", log_softmax),
]


@pytest.mark.parametrize("program,feeds,replacement,reference", CASES)
def test_the_rewrite_is_proven_and_gives_the_reference(program, feeds, replacement, reference):
    result = api.evaluate(program, feeds=feeds)
    assert replacement in [r for _, r in fixes_of(result)]
    fixed = api.evaluate(program.replace(program[4:], replacement), feeds=feeds)
    np.testing.assert_allclose(fixed.outputs["y"], reference(*feeds.values()), rtol=1e-12, atol=1e-300)
    got = api.evaluate(applied(program, feeds=feeds), feeds=feeds).outputs["y"]   # the first proven one
    np.testing.assert_allclose(got, reference(*feeds.values()), rtol=1e-12, atol=1e-300)


def test_an_underflowing_softmax_is_not_told_to_guard_its_denominator():
    result = api.evaluate("y = exp(x) / sum(exp(x))", feeds={"x": [-1000.0, -1001.0]})
    replacements = [r for _, r in fixes_of(result)]
    assert replacements == ["exp(x - stop_gradient(max(x))) / sum(exp(x - stop_gradient(max(x))))", "softmax(x)"]
    assert all("where" not in r for r in replacements)


def test_a_softmax_inside_a_def_is_fixed_in_the_defs_own_names():
    program = ("def stable(z):\n    e = exp(z)\n    return e / sum(e, axis=-1, keepdims=True)\n\n"
               "y = stable(x)\n")
    result = api.fix(program, feeds={"x": HUGE})
    shifted = "exp(z - stop_gradient(max(z, axis=-1, keepdims=True)))"
    assert f"    return {shifted} / sum({shifted}, axis=-1, keepdims=True)\n" in result.text
    assert "(x" not in result.text.replace("stable(x)", "")
    np.testing.assert_allclose(api.evaluate(result.text, feeds={"x": HUGE}).outputs["y"], softmax(HUGE, axis=-1),
                               rtol=1e-12)


@pytest.mark.parametrize("program,safe", [
    ("y = sum(where(x > 0, log(x), 0.0))", "log(where(x > 0, x, 1.0))"),
    ("y = sum(where(x > 0, sqrt(x), 0.0))", "sqrt(where(x > 0, x, 1.0))"),
    ("y = sum(where(x != 0, 1 / x, 0.0))", "1 / where(x != 0, x, 1.0)"),
    ("y = sum(where(x > 0, x ** 0.5, 0.0))", "where(x > 0, x, 1.0) ** 0.5"),
    ("y = sum(where(x <= 0, 0.0, log(x)))", "log(where(x <= 0, 1.0, x))"),
])
def test_the_where_trap_is_fixed_by_computing_the_branch_on_safe_inputs(program, safe):
    x = np.array([0.0, 2.0, 3.0])
    before = api.grad(program, wrt=["x"], feeds={"x": x})
    assert not np.isfinite(before.gradients["x"][0])
    fixed = api.fix(program, wrt=["x"], feeds={"x": x})
    assert safe in fixed.text, fixed.text
    after = api.grad(fixed.text, wrt=["x"], feeds={"x": x})
    assert after.gradients["x"][0] == 0.0                      # the discarded branch passes nothing
    np.testing.assert_array_equal(after.gradients["x"][1:], before.gradients["x"][1:])
    np.testing.assert_array_equal(after.outputs["y"], before.outputs["y"])
    assert fixed.nonfinite == []


def test_sqrt_at_zero_in_a_norm_is_offered_a_guard_never_applied_as_a_fix():
    # the norm has no derivative at 0: the guard's 0 there is a choice (it matches the central
    # difference, the mean of the kink's two sides, which proves nothing), listed, never applied
    program = "y = sqrt(sum(x ** 2))"
    zero = {"x": np.zeros(3)}
    result = api.grad(program, wrt=["x"], feeds=zero)
    assert np.isnan(result.gradients["x"]).all()
    assert api.fix(program, wrt=["x"], feeds=zero).text == program + "\n"
    (d,) = result.diagnostics
    assert d.fix is None
    fixed = "y = where(sum(x ** 2) > 0, sqrt(where(sum(x ** 2) > 0, sum(x ** 2), 1.0)), 0.0)\n"
    at_zero = api.grad(fixed, wrt=["x"], feeds=zero)
    assert float(at_zero.outputs["y"]) == 0.0 and (at_zero.gradients["x"] == 0).all()
    v = np.array([3.0, -4.0, 12.0])   # elsewhere the norm and its gradient x / |x|
    away = api.grad(fixed, wrt=["x"], feeds={"x": v})
    np.testing.assert_allclose(away.outputs["y"], 13.0, rtol=1e-15)
    np.testing.assert_allclose(away.gradients["x"], v / 13.0, rtol=1e-15)


def test_no_code_where_no_rewrite_can_be_proven():
    # exp(1000) is infinity: nothing finite equals it; log of a negative is no rounding slip
    for program, x in (("y = exp(x)", [1000.0, 1.0]), ("y = log(x)", [-1.0, 1.0]), ("y = sqrt(x)", [-4.0])):
        result = api.evaluate(program, feeds={"x": x})
        assert result.diagnostics and all(d.fix is None for d in result.diagnostics)
        assert all("(" not in (d.suggestion or "") for d in result.diagnostics)
        assert api.fix(program, feeds={"x": x}).text == program + "\n"


def test_a_rewrite_that_changes_a_finite_number_is_not_offered():
    # log(maximum(x, 1e-12)) would change log(1e-13): not the same numbers where finite
    result = api.evaluate("y = log(x)", feeds={"x": [0.0, 1e-13]})
    assert all(d.fix is None for d in result.diagnostics)


def gradcli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "gradcli", *args], input=stdin, capture_output=True, text=True,
                          timeout=60)


def test_json_carries_the_fix_with_its_place(tmp_path):
    program = tmp_path / "p.expr"
    program.write_text("x = [1000.0, 1.0]\ny = log(1 + exp(x))\n")
    out = gradcli("eval", str(program), "--format", "json")
    assert out.returncode == 0, out.stderr
    (diag,) = json.loads(out.stdout)["diagnostics"]
    assert diag["fix"] == {"start": [2, 5], "end": [2, 20], "replacement": "softplus(x)", "verified": True}
    lines = program.read_text().splitlines(keepends=True)
    line = lines[1]
    assert line[4:19] == "log(1 + exp(x))"   # 1-based columns, end exclusive, in the original text


def test_fix_prints_the_program_and_never_writes_the_file(tmp_path):
    program = tmp_path / "p.expr"
    text = "x = [1000.0, 1.0]\ny = log(1 + exp(x))\n"
    program.write_text(text)
    before = os.stat(program).st_mtime_ns
    out = gradcli("fix", str(program))
    assert out.returncode == 0, out.stderr
    assert out.stdout == "x = [1000.0, 1.0]\ny = softplus(x)\n"
    assert f"{program}:2:5: fixed [overflow]: replaced 'log(1 + exp(x))' with 'softplus(x)'" in out.stderr
    assert program.read_text() == text and os.stat(program).st_mtime_ns == before
    diff = gradcli("fix", str(program), "--diff")
    assert diff.returncode == 0
    assert "-y = log(1 + exp(x))\n+y = softplus(x)\n" in diff.stdout and diff.stdout.startswith("--- ")


def test_fix_exits_1_when_something_stays_not_finite():
    out = gradcli("fix", "-e", "y = exp(x)", "--set", "x=1000")
    assert out.returncode == 1
    assert out.stdout == "y = exp(x)\n"
    assert "exp gives infinity" in out.stderr


def test_fix_with_wrt_proves_the_gradient_too():
    out = gradcli("fix", "-e", "y = sum(where(x > 0, log(x), 0.0))", "--wrt", "x", "--set", "x=[0, 2]")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "y = sum(where(x > 0, log(where(x > 0, x, 1.0)), 0.0))\n"
