"""--loss-scale: the scale window computed by hand on programs whose gradients are known, the
case where no single scale can work, a scaled gradient divided back, and the errors."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from gradcli import api
from gradcli.numerics import loss_scale


def gradcli(*args):
    proc = subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


def float32_program(text, feeds):
    return api.compile(text, feeds=feeds, options=api.RunOptions("float32"))


def test_window_known_by_hand_float16():
    # gradients 1e-6 and 3, the seed 1: the smallest needs 1e-6 * 2^k >= 2^-14, so k >= 6
    # (2^-14 / 1e-6 = 61.0); the largest allows 3 * 2^k <= 65504 / 2, so k <= 13 (10917.3);
    # the middle of 6..13 is 9
    program = float32_program("y = 1e-6 * x1 + 3 * x2", {"x1": 1.0, "x2": 2.0})
    found = loss_scale.measured(program, ["x1", "x2"], [], None, "float16")
    assert (found.low, found.high, found.power, found.scale, found.fits) == (6, 13, 9, 512.0, True)
    assert found.smallest.what == "dy/dx1" and found.smallest.magnitude == pytest.approx(1e-6)
    assert found.largest.what == "dy/dx2" and found.largest.magnitude == 3.0
    assert (found.largest.pos.line, found.largest.pos.column) == (1, 19)
    said = "\n".join(found.lines())
    assert "needs a scale >= 2^6 = 64" in said and "allows a scale <= 2^13 = 8192" in said
    assert "every scale from 2^6 = 64 to 2^13 = 8192 works" in said


def test_window_bfloat16_is_float32s_exponent_range():
    program = float32_program("y = 1e-6 * x1 + 3 * x2", {"x1": 1.0, "x2": 2.0})
    found = loss_scale.measured(program, ["x1", "x2"], [], None, "bfloat16")
    # 1e-6 * 2^k >= 2^-126: k >= -106 (2^-106 = 1.23e-32); 3 * 2^k <= 3.39e38 / 2: k <= 125
    assert (found.low, found.high, found.fits) == (-106, 125, True)


def test_no_single_scale_in_float16_names_the_two_values():
    # 1e-9 and 1e4 are 2^43.2 apart; float16's normal range below the margin is 2^-14 .. 2^14.999
    program = float32_program("y = 1e-9 * x1 + 1e4 * x2", {"x1": 1.0, "x2": 2.0})
    found = loss_scale.measured(program, ["x1", "x2"], [], None, "float16")
    # low: 1e-9 * 2^k >= 2^-14 -> k >= 16; high: 1e4 * 2^k <= 32752 -> k <= 1
    assert (found.low, found.high, found.fits) == (16, 1, False)
    assert found.scale == 2.0  # the largest that does not overflow
    assert (found.smallest.what, found.largest.what) == ("dy/dx1", "dy/dx2")
    said = "\n".join(found.lines())
    assert "no single scale can: these two values are 2^43.2 apart" in said
    assert "1e-09 (dy/dx1 at 1:10)" in said and "1e+04 (dy/dx2 at 1:21)" in said
    doc = found.to_json()
    assert doc["fits"] is False and doc["range"] is None and doc["needed"]["low_power"] == 16
    # at 2^1, 1e-9 * 2 = 2e-9 is below float16's smallest subnormal / 2 (2.98e-8): flushed to zero
    assert doc["flushed_to_zero"] == 1


def test_forward_factors_of_a_rule_are_not_scaled():
    program = float32_program("y = sin(x)", {"x": 0.5})
    prepared = program.prepare_grad(["x"], None, {"y": np.float64(1.0)})
    graph, first = prepared.graph, len(program.graph.equations)
    seeds = [i for i in range(first, len(graph.equations)) if graph.equations[i].op.name == "input"]
    scaled = loss_scale.scaled_values(graph, first, seeds)
    unscaled = [graph.equations[i].op.name for i in range(first, len(graph.equations)) if i not in scaled]
    assert unscaled == ["cos"]  # sin's rule: g * cos(x), where cos(x) does not scale with the seed


def test_scaled_gradient_is_divided_back_in_float32():
    text, feeds = "y = sum(x * x) * 1e-3", {"x": [1.0, 2.0]}
    program = api.compile(text, feeds=feeds, options=api.RunOptions("float32"))
    result = loss_scale.scaled_grad(program, program, ["x"], [], None, 1024.0)
    assert result.gradients["x"].dtype == np.float32
    np.testing.assert_allclose(result.gradients["x"], [2e-3, 4e-3], rtol=1e-6)
    assert (result.loss_scale.scale, result.loss_scale.power, result.loss_scale.measured) == (1024.0, 10, False)


def test_overflowing_scale_is_reported_with_the_largest_that_is_not():
    # float32: 1e30 * 2^100 overflows; the largest safe is 2^27 (1e30 * 2^27 = 1.3e38 <= 3.4e38 / 2)
    text, feeds = "y = 1e-30 * x1 + 1e30 * x2", {"x1": 1.0, "x2": 2.0}
    program = api.compile(text, feeds=feeds, options=api.RunOptions("float32"))
    result = loss_scale.scaled_grad(program, program, ["x1", "x2"], [], None, 2.0 ** 100)
    assert np.isinf(result.gradients["x2"]) and result.gradients["x1"] == np.float32(1e-30)
    (diag,) = [d for d in result.diagnostics if d.kind == "loss_scale_overflow"]
    assert "d/dx2 is not finite with the loss scale 1.26765e+30" in diag.message
    assert "use --loss-scale 1.34218e+08 or smaller" in diag.suggestion
    assert result.loss_scale.overflowed == ["d/dx2"]


def test_cli_auto_json_and_explanation():
    p = gradcli("grad", "-e", "y = 1e-6 * x1 + 3 * x2", "--wrt", "x1", "--wrt", "x2", "--set", "x1=1",
                "--set", "x2=2", "--loss-scale", "auto", "--dtype", "float32", "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    scale = doc["loss_scale"]
    assert (scale["given"], scale["chosen"], scale["power"], scale["fits"]) == ("auto", 512.0, 9, True)
    assert (scale["range"]["low_power"], scale["range"]["high_power"]) == (-106, 125)
    assert doc["gradients"]["x1"]["dtype"] == "float32"
    p = gradcli("grad", "-e", "y = 1e-6 * x1 + 3 * x2", "--wrt", "x1", "--wrt", "x2", "--set", "x1=1", "--set", "x2=2",
                "--loss-scale", "auto", "--dtype", "float32")
    assert p.returncode == 0 and p.stdout.startswith("x1\t")
    assert "gradcli: loss scale 2^9 = 512 (--loss-scale auto)" in p.stderr
    assert "divided by it in float32" in p.stderr


@pytest.mark.parametrize("given, message", [
    ("abc", "--loss-scale takes a positive number (such as 1024) or auto, not 'abc'"),
    ("0", "--loss-scale must be a positive finite number, not 0"),
    ("-4", "--loss-scale must be a positive finite number, not -4"),
    ("inf", "--loss-scale must be a positive finite number, not inf"),
    ("1e39", "--loss-scale 1e+39: the seed of y scaled by it, 1e+39, is beyond float32's largest number"),
])
def test_cli_refuses_a_bad_scale(given, message):
    p = gradcli("grad", "-e", "y = 3 * x", "--wrt", "x", "--set", "x=1", "--dtype", "float32", "--loss-scale", given)
    assert p.returncode == 2 and message in p.stderr, p.stderr


def test_cli_json_when_no_single_scale_fits_follows_the_schema():
    from test_cli_schema import valid  # (tests/cli, on the path by conftest)

    # float32: 1e-38 needs 2^1 (2^-126 = 1.18e-38), 1e38 allows 2^0 (3.4e38 / 2 = 1.7e38)
    p = gradcli("grad", "-e", "y = 1e-38 * x1 + 1e38 * x2", "--wrt", "x1", "--wrt", "x2", "--set", "x1=1",
                "--set", "x2=2", "--loss-scale", "auto", "--dtype", "float32", "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = valid(json.loads(p.stdout))
    scale = doc["loss_scale"]
    assert (scale["fits"], scale["range"], scale["chosen"]) == (False, None, 1.0)
    assert (scale["needed"]["low_power"], scale["needed"]["high_power"]) == (1, 0)
    assert (scale["smallest"]["what"], scale["largest"]["what"]) == ("dy/dx1", "dy/dx2")


# --------------------------------------------------------------------------- float16 end to end

UNDERFLOWING = "y = x * 1e-2 * 1e-2 * 1e-2 * 1e-2"  # dy/dx = 1e-8: below half float16's smallest subnormal 2^-24


def grad16(*args):
    p = gradcli("grad", "-e", *args, "--dtype", "float16", "--format", "json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout), p.stderr


def test_a_scale_of_1024_brings_back_a_gradient_that_float16_flushed_to_zero():
    reference = api.grad(UNDERFLOWING, wrt=["x"], feeds={"x": 1.0}).gradients["x"]  # float64
    assert reference == pytest.approx(1e-8, rel=1e-12)
    plain, _ = grad16(UNDERFLOWING, "--wrt", "x", "--set", "x=1")
    assert plain["gradients"]["x"]["value"] == 0.0
    scaled, _ = grad16(UNDERFLOWING, "--wrt", "x", "--set", "x=1", "--loss-scale", "1024")
    assert scaled["gradients"]["x"]["dtype"] == "float32"
    # scaled, the gradient is 1.024e-5: a float16 subnormal, within half its spacing 2^-25 (2.9e-3
    # of it); each of the four float16 roundings of 0.01 adds at most 2^-11
    tolerance = 2.0 ** -25 / 1.024e-5 + 4 * 2.0 ** -11
    assert scaled["gradients"]["x"]["value"] == pytest.approx(reference, rel=tolerance)
    assert scaled["loss_scale"]["chosen"] == 1024.0 and scaled["loss_scale"]["power"] == 10


def test_auto_in_float16_uses_the_window_known_by_hand():
    doc, said = grad16("y = 1e-6 * x1 + 3 * x2", "--wrt", "x1", "--wrt", "x2", "--set", "x1=1", "--set", "x2=2",
                       "--loss-scale", "auto")
    scale = doc["loss_scale"]
    assert (scale["chosen"], scale["range"]["low_power"], scale["range"]["high_power"]) == (512.0, 6, 13)
    # 1e-6 in float16 is the subnormal 17 * 2^-24; the gradient scaled by 512 is that times 512, exact
    assert doc["gradients"]["x1"]["value"] == pytest.approx(17 * 2.0 ** -24, rel=1e-6)
    assert doc["gradients"]["x2"]["value"] == 3.0


def test_auto_in_float16_when_no_scale_fits_runs_the_largest_that_does_not_overflow():
    doc, _ = grad16("y = 1e-9 * x1 + 1e4 * x2", "--wrt", "x1", "--wrt", "x2", "--set", "x1=1", "--set", "x2=2",
                    "--loss-scale", "auto")
    scale = doc["loss_scale"]
    assert (scale["fits"], scale["chosen"], scale["flushed_to_zero"]) == (False, 2.0, 1)
    assert doc["gradients"]["x1"]["value"] == 0.0  # 1e-9 * 2 is below 2^-25: as said, flushed
    assert doc["gradients"]["x2"]["value"] == 10000.0  # (1e4 is 10000 exactly in float16)
    (diag,) = [d for d in doc["diagnostics"] if d["kind"] == "loss_scale_underflow"]
    assert (diag["line"], diag["column"]) == (1, 10)
    assert diag["message"].startswith("no single loss scale keeps every gradient in float16: with 2^1 = 2, 1 element(s)")
    p = gradcli("grad", "-e", "y = 1e-9 * x1 + 1e4 * x2", "--wrt", "x1", "--wrt", "x2", "--set", "x1=1",
                "--set", "x2=2", "--loss-scale", "auto", "--dtype", "float16")
    assert "no single scale can: these two values are 2^43.2 apart, more than float16's normal range of 2^29.0" \
        in p.stderr


def test_an_overflowing_float16_scale_names_the_gradient_and_the_largest_safe_scale():
    doc, _ = grad16("y = 1000 * x", "--wrt", "x", "--set", "x=1", "--loss-scale", "128")
    assert doc["gradients"]["x"]["value"] == "Infinity"
    (diag,) = [d for d in doc["diagnostics"] if d["kind"] == "loss_scale_overflow"]
    assert diag["message"].startswith("d/dx is not finite with the loss scale 128: the scaled backward pass overflowed "
                                      "float16")
    assert diag["suggestion"].startswith("use --loss-scale 32 or smaller")  # 1000 * 32 <= 65504 / 2 < 1000 * 64
    assert doc["loss_scale"]["overflowed"] == ["d/dx"]


def test_a_scale_whose_seed_float16_cannot_hold_is_refused():
    p = gradcli("grad", "-e", "y = 3 * x", "--wrt", "x", "--set", "x=1", "--dtype", "float16", "--loss-scale", "65536")
    assert p.returncode == 2
    assert "--loss-scale 65536: the seed of y scaled by it, 65536, is beyond float16's largest number 65504" in p.stderr


def test_an_intermediate_cotangent_bounds_the_window():
    # the gradient is 1e-2, but on its way the backward pass holds 1e-6 (d y/d(1e4 * x)): that
    # value, at the outer product, needs 2^6; the seed 1 allows up to 2^14 (65504 / 2 / 1)
    program = float32_program("y = 1e-6 * (1e4 * x)", {"x": 1.0})
    found = loss_scale.measured(program, ["x"], [], None, "float16")
    assert (found.low, found.high, found.power) == (6, 14, 10)
    assert found.smallest.what == "the gradient through '*'" and found.smallest.magnitude == pytest.approx(1e-6)
    assert (found.smallest.pos.line, found.smallest.pos.column) == (1, 10)
    assert found.largest.what == "the seed of y" and found.largest.magnitude == 1.0
    assert (found.largest.pos.line, found.largest.pos.column) == (1, 10)  # a seed stands where its output is


def test_a_scale_cannot_write_a_zarr_store_chunk_by_chunk(tmp_path):
    pytest.importorskip("zarr")
    p = gradcli("grad", "-e", "y = x * x", "--wrt", "x", "--set", "x=[1, 2]", "--loss-scale", "8", "--device", "dask",
                "--out", str(tmp_path / "g.zarr"))
    assert p.returncode == 2 and "--loss-scale divides the gradients once they are computed" in p.stderr


def test_elements_left_subnormal_by_the_chosen_scale_are_counted_apart_from_those_flushed():
    # float16: 1e-6 needs 2^6, 1e4 allows 2^1: at 2^1, 2e-6 is a subnormal (above 2^-25), not 0
    program = float32_program("y = 1e-6 * x1 + 1e4 * x2", {"x1": 1.0, "x2": 2.0})
    found = loss_scale.measured(program, ["x1", "x2"], [], None, "float16")
    assert (found.fits, found.power, found.flushed, found.subnormal) == (False, 1, 0, 1)


def test_a_float64_window_spanning_its_whole_range_is_worked_out_without_overflow():
    # 1e-300 * 2^k >= 2^-1022 from k = -25; 1 * 2^k <= 1.8e308 / 2 up to k = 1022 (the most float64 holds)
    p = gradcli("grad", "-e", "y = 1e-300 * x", "--wrt", "x", "--set", "x=1", "--loss-scale", "auto", "--format", "json")
    assert p.returncode == 0, p.stderr
    scale = json.loads(p.stdout)["loss_scale"]
    assert (scale["range"]["low_power"], scale["range"]["high_power"], scale["power"], scale["master"]) == (
        -25, 1022, 498, "float64")
    assert (scale["flushed_to_zero"], scale["subnormal"]) == (0, 0)
