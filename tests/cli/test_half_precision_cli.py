"""--dtype float16, bfloat16 and float8 on the command line: accepted by every command that
computes numbers, answered in the type (JSON numbers are the type's numbers, written exactly),
refused with one message where the type cannot compute (exit 2), and ml_dtypes loaded only
for its own types."""
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from cli_helpers import invoke, strict
from test_cli_schema import VALIDATOR

SOFTMAX = "y = sum(w * softmax(x))"
FEEDS = ("--set", "x=[1, 2, 3]", "--set", "w=[0.1, 0.2, 0.3]")


def _softmax_in(dtype):
    """The program's value and softmax in `dtype` by hand: each op (softmax is one) in float32,
    its result rounded to the type."""
    t = np.dtype(dtype)
    x, w = np.array([1, 2, 3], np.float32).astype(t), np.array([0.1, 0.2, 0.3], np.float32).astype(t)
    e = np.exp(x.astype(np.float32) - np.float32(3))
    s = (e / e.sum()).astype(t)
    product = (w.astype(np.float32) * s.astype(np.float32)).astype(t)
    return float(product.astype(np.float32).sum().astype(t)), s.astype(np.float32)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_grad_answers_in_the_type(dtype):
    result = invoke("grad", "-e", SOFTMAX, "--wrt", "w", *FEEDS, "--dtype", dtype, "--format", "json")
    assert result.exit_code == 0, result.output
    doc = strict(result.output)
    VALIDATOR.validate(doc)
    assert doc["outputs"]["y"]["dtype"] == doc["gradients"]["w"]["dtype"] == dtype
    value, softmax = _softmax_in(getattr(ml_dtypes, dtype) if dtype == "bfloat16" else dtype)
    # softmax is one op: its float32 result rounded once; d y/d w is that rounded softmax
    assert doc["gradients"]["w"]["value"] == softmax.tolist()
    assert doc["outputs"]["y"]["value"] == value
    # every number printed is one of the type's own
    t = np.dtype(np.float16) if dtype == "float16" else np.dtype(ml_dtypes.bfloat16)
    for v in doc["gradients"]["w"]["value"] + [doc["outputs"]["y"]["value"]]:
        assert float(np.asarray(v).astype(t)) == v


@pytest.mark.parametrize("dtype,expected", [("float8_e4m3fn", [2.75, 7.5, 20.0]), ("float8_e5m2", [2.5, 7.0, 20.0]),
                                            ("float16", [2.71875, 7.390625, 20.078125]),
                                            ("bfloat16", [2.71875, 7.375, 20.125])])
def test_eval_in_each_small_type(dtype, expected):
    # exp(1), exp(2), exp(3) rounded to the nearest number of the type
    result = invoke("eval", "-e", "y = exp(x)", "--set", "x=[1, 2, 3]", "--dtype", dtype, "--format", "json")
    assert result.exit_code == 0, result.output
    assert strict(result.output)["outputs"]["y"]["value"] == expected


def test_a_factorization_is_refused_in_a_half_type_with_its_reason():
    result = invoke("grad", "-e", "y = sum(inv(a))", "--wrt", "a", "--set", "a=[[2, 1], [1, 3]]",
                    "--dtype", "bfloat16")
    assert result.exit_code == 2
    assert result.output == (
        "<expr>:1:9: error: inv: not computed in bfloat16: it needs a LAPACK factorization, which exists in "
        "float32 and float64 only (PyTorch 2.13 and JAX 0.10.2 refuse it in bfloat16 too); run the program with "
        "--dtype float32\n    y = sum(inv(a))\n            ^~~~~~\n")


def test_a_half_type_is_refused_off_the_cpu():
    result = invoke("eval", "-e", "y = 1", "--dtype", "float16", "--device", "dask")
    assert result.exit_code == 2
    assert "--dtype float16 runs on --device cpu only (this is --device dask)" in result.output


def _imports(*args):
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "gradcli", "eval", "-e", "y = 2 * x", "--set",
                        "x=1", "--format", "plain", *args], capture_output=True, text=True, timeout=60)
    modules = {line.rpartition("|")[2].strip() for line in p.stderr.splitlines() if line.startswith("import time:")}
    return p.stdout, modules


def test_ml_dtypes_is_imported_only_for_its_own_types():
    for args, out, loaded in (((), "y\t2.0\n", False), (("--dtype", "float16"), "y\t2.0\n", False),
                              (("--dtype", "bfloat16"), "y\t2.0\n", True)):
        stdout, modules = _imports(*args)
        assert stdout == out
        assert ("ml_dtypes" in modules) is loaded, args


@pytest.mark.parametrize("dtype,float32,same", [("float16", 5000.0, 2048.0), ("bfloat16", 4992.0, 256.0)])
def test_accumulate_same_accumulates_in_the_type(dtype, float32, same):
    """0, 1/9999, ..., 1 sums to 5000. Accumulated in float32 and rounded once: 5000 in float16,
    4992 (the nearest bfloat16) in bfloat16. A running sum in the type stops growing once the
    terms are below half its spacing: at 2048 in float16 (spacing 2 there), 256 in bfloat16."""
    program = "x = linspace(0.0, 1.0, 10000); s = cumsum(x)[9999]; y = sum(x)"
    for accumulate, want in (("float32", float32), ("same", same)):
        result = invoke("eval", "-e", program, "--print", "s", "--dtype", dtype, "--accumulate", accumulate,
                        "--format", "json")
        assert result.exit_code == 0, result.output
        assert strict(result.output)["outputs"]["s"]["value"] == want


def test_an_op_that_factorizes_for_some_parameters_is_refused_at_its_place():
    # a negative power inverts (LAPACK), a positive one multiplies (computed)
    result = invoke("eval", "-e", "y = matrix_power(a, -2)", "--set", "a=[[2, 1], [1, 3]]", "--dtype", "float16")
    assert result.exit_code == 2
    assert result.output.startswith("<expr>:1:5: error: matrix_power: not computed in float16: it needs a LAPACK "
                                    "factorization")
    result = invoke("eval", "-e", "y = matrix_power(a, 2)", "--set", "a=[[2, 1], [1, 3]]", "--dtype", "float16",
                    "--format", "json")
    assert result.exit_code == 0 and strict(result.output)["outputs"]["y"]["value"] == [[5.0, 5.0], [5.0, 10.0]]


def test_the_command_line_s_types_are_the_library_s():
    from gradcli import dtypes
    from gradcli.cli import spec
    assert [d.value for d in spec.Dtype] == list(dtypes.NAMES)
    assert [a.value for a in spec.Accumulate] == list(dtypes.ACCUMULATE)
    facts = dtypes.finfo("float16")
    assert (facts.max, facts.tiny, facts.smallest_subnormal, facts.eps, facts.bits) == (65504.0, 2.0 ** -14, 2.0 ** -24,
                                                                                         2.0 ** -10, 16)
    facts = dtypes.finfo("bfloat16")
    assert (facts.tiny, facts.smallest_subnormal, facts.eps, facts.bits) == (2.0 ** -126, 2.0 ** -133, 2.0 ** -7, 16)
    assert facts.max == float(np.float32(3.3895314e38)) and facts.accumulates_in_float32
    assert not dtypes.finfo("float32").accumulates_in_float32
    assert dtypes.finfo("float8_e4m3fn").max == 448.0 and dtypes.finfo("float8_e5m2").max == 57344.0


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_jacobian_and_hessian_answer_in_the_type(dtype):
    """d exp(x)/dx is exp(x) rounded to the type (one op: float32, rounded once); d²(x³)/dx² =
    6x, where x is first rounded to the type and the product 6x rounded again."""
    t = np.dtype(getattr(ml_dtypes, dtype) if dtype == "bfloat16" else dtype)
    result = invoke("jacobian", "-e", "y = exp(x)", "--of", "y", "--wrt", "x", "--set", "x=[1, 0.5]", "--dtype", dtype,
                    "--format", "json")
    assert result.exit_code == 0, result.output
    doc = strict(result.output)
    VALIDATOR.validate(doc)
    block = doc["jacobians"]["x"]
    x = np.array([1, 0.5], np.float32).astype(t).astype(np.float32)
    assert block["dtype"] == dtype
    assert block["value"] == np.diag(np.exp(x).astype(t).astype(np.float32)).tolist()
    result = invoke("hessian", "-e", "y = sum(x ** 3)", "--wrt", "x", "--set", "x=[1.1, 2]", "--dtype", dtype,
                    "--format", "json")
    assert result.exit_code == 0, result.output
    doc = strict(result.output)
    VALIDATOR.validate(doc)
    x = np.array([1.1, 2], np.float32).astype(t).astype(np.float32)
    six_x = np.diag((6 * x).astype(t).astype(np.float32))
    assert doc["hessians"]["x"] == {"shape": [2, 2], "dtype": dtype, "value": six_x.tolist()}
    assert six_x[0, 0] != 6.6  # (the type's 1.1 and its product: not float64's 6.6)


def test_a_jacobian_that_overflows_float16_is_diagnosed_at_its_place():
    result = invoke("jacobian", "-e", "y = exp(x)", "--of", "y", "--wrt", "x", "--set", "x=[12, 1]", "--dtype",
                    "float16", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = strict(result.output)
    assert doc["jacobians"]["x"]["value"][0][0] == "Infinity"
    (overflow,) = [d for d in doc["diagnostics"] if d["kind"] == "overflow"]
    assert (overflow["line"], overflow["column"]) == (1, 5)
    assert "exp overflows float16 above 11.09" in overflow["message"]


@pytest.mark.parametrize("program,wrt,feeds", [("y = exp(x)", "x", None),                       # all points at once
                                               ("y = exp(x[1]) + x[0]", "x[1]", {"x": np.zeros(2)})])  # point by point
def test_a_curve_in_float16_is_float16s_and_marks_where_it_overflows(program, wrt, feeds):
    """exp and its derivative at 9, 10, 11, 12 in float16: float32's exp rounded to the type, and
    infinity past 11.09, where the overflow diagnostic marks the point."""
    from gradcli import api
    c = api.curve(program, wrt=wrt, low=9.0, high=12.0, points=4, dtype="float16", feeds=feeds)
    with np.errstate(over="ignore"):
        expected = np.exp(np.array([9, 10, 11, 12], np.float32)).astype(np.float16).astype(np.float64)
    assert c.values.tolist() == expected.tolist() == c.derivatives[0].tolist()
    assert expected[-1] == np.inf and np.isfinite(expected[:3]).all()
    (overflow,) = [d for d in c.diagnostics if d.kind == "overflow"]
    assert "exp overflows float16 above 11.09" in overflow.message
