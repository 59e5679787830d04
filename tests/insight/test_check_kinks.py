"""`check` at a kink or a tie: there the function has no derivative, the central difference
averages the two one-sided slopes, and the gradient takes one value between them by
convention (relu'(0) = 0, a tie of max split evenly, sort's order of equal elements). Such
an element is compared with the one-sided differences, reported with both slopes, and never
counted as a failed rule; a rule that leaves the slopes' range still fails and is blamed."""
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from gradcli import api, ops
from gradcli.ops import G


def kinks_of(result, name="x"):
    return [(k.get("element"), round(k["left_slope"], 6), round(k["right_slope"], 6), k["gradient"])
            for k in result.reports[name].kinks]


def test_abs_and_relu_at_zero_pass_with_both_slopes_reported():
    result = api.check("y = sum(abs(x) + relu(x))", wrt=["x"], feeds={"x": np.array([0.0, 1.0, -2.0])})
    assert result.passed
    # d/dx (|x| + relu x) at 0: -1 from the left, 1 + 1 = 2 from the right; gradcli takes 0 + 0
    assert kinks_of(result) == [([0], -1.0, 2.0, 0.0)]
    assert result.reports["x"].max_abs_error < 1e-6   # the summary leaves the kink out: no error there
    assert all(d.kind != "gradient_mismatch" for d in result.diagnostics)
    (note,) = [d for d in result.diagnostics if d.kind == "kink"]
    assert "abs at 1:9" in note.message and "relu at 1:18" in note.message
    assert "the slope is -1 from the left and 2 from the right, the gradient 0" in note.message


# the siblings: each op whose derivative is a convention at some points (x, and the slopes
# there from the analytic one-sided derivatives)
SIBLINGS = [
    ("y = sum(relu(x))", [0.0, 1.0], [([0], 0.0, 1.0)]),
    ("y = sum(clip(x, -1.0, 1.0) * x)", [1.0, -1.0, 0.5], [([0], 2.0, 1.0), ([1], -1.0, -2.0)]),
    ("y = sum(sort(x) * w)", [2.0, 2.0, 1.0], [([0], 2.0, 0.5), ([1], 2.0, 0.5)]),
    ("y = sum(relu6(x))", [0.0, 6.0, 3.0], [([0], 0.0, 1.0), ([1], 1.0, 0.0)]),
    ("y = sum(hardtanh(x))", [1.0, -1.0, 0.0], [([0], 1.0, 0.0), ([1], 0.0, 1.0)]),
    # a tie split evenly is the central difference itself: compared as any element
    ("y = sum(maximum(x, w) * w)", [2.0, 0.0, 0.5], []),
    ("y = max(x) + min(x)", [3.0, 3.0, 1.0], []),
    ("y = sum(leaky_relu(x, 0.1))", [0.0, 2.0], [([0], 0.1, 1.0)]),
]


@pytest.mark.parametrize("program,x,expected", SIBLINGS)
def test_every_kind_of_kink_is_compared_one_sided(program, x, expected):
    feeds = {"x": np.array(x), "w": np.array([2.0, 2.0, 0.5])[:len(x)]}
    result = api.check(program, wrt=["x"], feeds=feeds)
    assert result.passed, result.reports
    got = [(at, left, right) for at, left, right, _ in kinks_of(result)]
    assert got == [(at, pytest.approx(left, abs=1e-5), pytest.approx(right, abs=1e-5)) for at, left, right in expected]
    for _, left, right, ours in kinks_of(result):
        assert min(left, right) - 1e-5 <= ours <= max(left, right) + 1e-5


def test_kinks_along_random_directions_of_a_large_input():
    x = np.random.default_rng(1).standard_normal(200)
    x[::7] = 0.0                       # 29 elements at relu's kink: every random direction crosses some
    result = api.check("y = sum(relu(x))", wrt=["x"], feeds={"x": x})
    assert result.passed and result.reports["x"].method == "16 random directions"
    assert len(result.reports["x"].kinks) == 16 and all("direction" in k for k in result.reports["x"].kinks)


def test_a_smooth_point_is_no_kink_even_with_a_large_curvature():
    # exp(exp(exp(u))) curves hard: its one-sided slopes differ, yet they close in as the step halves
    result = api.check("z = exp(exp(exp(u)))\ny = sum(z)", wrt=["u"], feeds={"u": [1.2, -0.7, 0.1]})
    assert result.passed and result.reports["u"].kinks == []


@pytest.fixture
def relu_rule_of(request):
    good = ops.OPS["relu"]
    ops.register(good.replace(vjp=(request.param,)), replace=True)
    yield
    ops.register(good, replace=True)


@pytest.mark.parametrize("relu_rule_of", [
    lambda g, ans, x: g * (G.greater(x, 0.0) + 5.0 * G.equal(x, 0.0)),   # 5 at the kink: outside [0, 1]
    lambda g, ans, x: g * G.greater(x, 0.0) * 1.01,                       # wrong away from the kink
], indirect=True)
def test_a_rule_outside_the_slopes_still_fails_and_is_blamed(relu_rule_of):
    result = api.check("y = sum(relu(x))", wrt=["x"], feeds={"x": np.array([0.0, 1.0])})
    assert not result.passed
    (blamed,) = [d for d in result.diagnostics if d.kind == "gradient_mismatch"]
    assert blamed.op == "relu"


def test_the_cli_says_passed_and_lists_the_kink_in_json():
    out = subprocess.run([sys.executable, "-m", "gradcli", "check", "-e", "y = sum(abs(x) + relu(x))", "--wrt", "x",
                          "--set", "x=[0.0, 1.0, -2.0]", "--format", "json"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    schema = json.loads((Path(__file__).resolve().parents[2] / "docs" / "gradcli.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    report = doc["check"]["x"]
    assert report["passed"] is True
    (kink,) = report["kinks"]
    assert kink["element"] == [0] and kink["gradient"] == 0.0
    assert kink["left_slope"] == pytest.approx(-1.0, abs=1e-6) and kink["right_slope"] == pytest.approx(2.0, abs=1e-6)
    assert [d["kind"] for d in doc["diagnostics"]] == ["kink"]
    plain = subprocess.run([sys.executable, "-m", "gradcli", "check", "-e", "y = sum(abs(x) + relu(x))", "--wrt", "x",
                            "--set", "x=[0.0, 1.0, -2.0]"], capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0 and plain.stdout.startswith("x\tpassed\t")
    assert "the slope is -1 from the left and 2 from the right" in plain.stderr
