"""check --dtype of a half type: the precision report, on programs whose worst operation is
known by hand."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from gradcli import api
from gradcli.numerics import precision

BF16_U = 2.0 ** -8   # bfloat16's unit roundoff (eps / 2)
F16_U = 2.0 ** -11   # float16's


def gradcli(*args):
    proc = subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


def report(text, feeds, dtype, wrt=("x",), **options):
    program = api.compile(text, feeds=feeds, options=api.RunOptions(dtype))
    return precision.measure(program.graph.fork(), list(wrt), [], dtype, **options)


def test_relative_error_is_against_the_largest_magnitude():
    assert precision.relative_error([1.0, 0.0], [1.0, 1e-9]) == pytest.approx(1e-9)  # (the flush is counted apart)
    assert precision.relative_error([1.01, 2.0], [1.0, 2.0]) == pytest.approx(0.005)
    assert precision.relative_error([0.5, 3.0], [0.0, 2.0]) == pytest.approx(0.5)
    assert precision.relative_error([np.inf], [1.0]) == np.inf
    assert precision.relative_error([np.inf, 1.0], [np.inf, 1.0]) == 0.0  # not finite in float64 either: left out
    assert precision.relative_error([0.0], [0.0]) == 0.0
    assert precision.relative_error([1e-3], [0.0]) == 1.0


# a running sum of 1000 ones: accumulated in bfloat16, 256 + 1 = 257 rounds back to 256 (8
# significant bits, a tie to even) and the sum stays at 256: the last element is 256 against
# 1000, a relative error of 0.744; accumulated in float32 every prefix sum is exact and rounded
# once (at most bfloat16's unit roundoff). The ops after it (* 0.5, a sum) are each exact or
# rounded once on inputs rounded once.
RUNNING = "c = cumsum(x)\nh = c * 0.5\ny = sum(h)"


def test_the_running_sum_accumulated_in_bfloat16_is_the_worst_op():
    found = report(RUNNING, {"x": np.ones(1000)}, "bfloat16", accumulate="same")
    assert [op.label for op in found.ops][0] == "cumsum"
    worst = found.ops[0]
    assert worst.value_own == pytest.approx(0.744, abs=1e-12)
    assert (worst.pos.line, worst.pos.column) == (1, 5)
    assert worst.remedy.startswith("accumulate in float32")
    assert all(op.value_own <= 2 * BF16_U for op in found.ops[1:])  # one rounding, on inputs rounded once
    assert {op.label: op.value_error for op in found.ops}["sum"] > 0.5  # carried from the running sum


def test_the_running_sum_accumulated_in_float32_is_within_one_rounding():
    found = report(RUNNING, {"x": np.ones(1000)}, "bfloat16")
    cumsum = next(op for op in found.ops if op.label == "cumsum")
    assert cumsum.value_own <= BF16_U and cumsum.remedy is None


UNDERFLOWING = "y = x * 1e-2 * 1e-2 * 1e-2 * 1e-2"  # dy/dx = 1e-8, which float16 flushes to zero


def test_a_gradient_float16_flushes_to_zero_is_named_with_a_loss_scale_as_remedy():
    found = report(UNDERFLOWING, {"x": 1.0}, "float16")
    first = next(op for op in found.ops if (op.pos.line, op.pos.column) == (1, 7))  # x * 1e-2: its rule gives dy/dx
    assert first.flushed == 1 and first.gradient_own == 1.0
    assert "--loss-scale auto" in first.remedy
    scaled = report(UNDERFLOWING, {"x": 1.0}, "float16", scale=1024.0)
    first = next(op for op in scaled.ops if (op.pos.line, op.pos.column) == (1, 7))
    # scaled, dy/dx is 1.024e-5, a subnormal: half its spacing 2^-25 is 2.9e-3 of it
    assert first.flushed == 0 and first.gradient_own <= 2.0 ** -25 / 1.024e-5 + 2 * F16_U
    # the last product's value, 1e-8, underflows in the forward pass whatever the scale
    last = next(op for op in scaled.ops if (op.pos.line, op.pos.column) == (1, 28))
    assert last.underflow == 1 and "its value underflows float16" in last.remedy


def test_cli_report_of_an_overflow_follows_the_schema_and_exits_1():
    from test_cli_schema import valid  # (tests/cli, on the path by conftest)

    p = gradcli("check", "-e", "y = exp(x) * 2", "--wrt", "x", "--set", "x=12", "--dtype", "float16", "--format", "json")
    assert p.returncode == 1, p.stderr  # float16 makes exp(12) = 162755 infinite; float64 does not
    doc = valid(json.loads(p.stdout))
    ops = doc["precision"]["ops"]
    assert [op["op"] for op in ops] == ["exp", "*"]
    assert ops[0]["overflow"] is True and ops[0]["value_own_error"] == "Infinity"
    assert ops[0]["remedy"].startswith("overflows float16 (largest 65504): a stable form")
    assert ops[1]["value_own_error"] == 0.0  # the product is not to blame: exp's overflow reaches it
    assert doc["precision"]["unit_roundoff"] == F16_U


def test_cli_table_has_a_row_per_operation_and_the_remedies_under_it():
    p = gradcli("check", "-e", "y = exp(x) * 2", "--wrt", "x", "--set", "x=12", "--dtype", "float16", "--format", "table")
    assert p.returncode == 1, p.stderr
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in p.stdout.splitlines() if line.startswith("│")]
    assert rows == [["exp", "1:5", "inf", "inf", "0", "0"], ["*", "1:12", "0", "inf", "0", "0"]]
    caption = " ".join(p.stdout.split("┘", 1)[1].split())  # wrapped to the table's width
    assert "float16's unit roundoff is 0.000488" in caption
    assert "exp at 1:5: overflows float16 (largest 65504): a stable form" in caption
    assert "* at 1:12: overflows float16 (largest 65504): compute it in float32" in caption


def test_cli_plain_lines_and_loss_scale():
    p = gradcli("check", "-e", UNDERFLOWING, "--wrt", "x", "--set", "x=1", "--dtype", "float16", "--format", "plain")
    assert p.returncode == 0, p.stderr
    lines = [line.split("\t") for line in p.stdout.splitlines()]
    assert [(w[0], w[1]) for w in lines][:2] == [("1:28", "*"), ("1:7", "*")]
    assert "--loss-scale auto" in lines[1][6]
    p = gradcli("check", "-e", UNDERFLOWING, "--wrt", "x", "--set", "x=1", "--dtype", "float16", "--loss-scale", "auto",
                "--format", "json")
    doc = json.loads(p.stdout)
    assert doc["loss_scale"]["chosen"] == doc["precision"]["loss_scale"] == 8192.0  # 1e-8 * 2^13 >= 2^-14
    assert doc["gradients"]["x"]["dtype"] == "float32"
    assert doc["gradients"]["x"]["value"] == pytest.approx(1e-8, rel=4 * F16_U)


def test_check_in_float64_and_float32_is_the_finite_difference_check():
    for dtype in ("float64", "float32"):
        p = gradcli("check", "-e", "y = sum(tanh(x) * x)", "--wrt", "x", "--set", "x=[0.3, 1.2]", "--dtype", dtype,
                    "--format", "plain")
        assert p.returncode == 0 and p.stdout.startswith("x\tpassed\t"), p.stdout
    p = gradcli("check", "-e", "y = 2 * x", "--wrt", "x", "--set", "x=1", "--loss-scale", "1024")
    assert p.returncode == 2
    assert "--loss-scale applies to check with a half-precision --dtype" in p.stderr
