"""Diagnostics in half precision (docs/diagnostics.md, "Half precision"): overflow and headroom at
the format's own thresholds, gradients and outputs that underflow to 0 or into the subnormal
range, sums that lose their digits, and fixes proven in the format the program runs in. Every
expected number is worked out by hand from the formats' definitions (IEEE binary16: 5 exponent
bits, 10 fraction bits; bfloat16: float32's 8 exponent bits, 7 fraction bits)."""
import math

import numpy as np
import pytest

from gradcli import api
from gradcli.numerics.diagnostics import HalfPrecisionChecker, NumericsChecker
from gradcli.numerics.exactness import judge
from gradcli.numerics.formats import format_of

FLOAT16_MAX = (2 - 2**-10) * 2**15            # 65504
BFLOAT16_MAX = (2 - 2**-7) * 2**127           # 3.3895e38


def kinds(diags, kind):
    return [d for d in diags if d.kind == kind]


def only(diags, kind):
    found = kinds(diags, kind)
    assert len(found) == 1, [(d.kind, d.message) for d in diags]
    return found[0]


def test_the_formats_facts_are_their_definitions():
    f16 = format_of("float16")
    assert (f16.largest, f16.smallest_normal, f16.smallest_subnormal, f16.eps) == (
        FLOAT16_MAX, 2**-14, 2**-24, 2**-10)
    bf16 = format_of("bfloat16")
    assert (bf16.largest, bf16.smallest_normal, bf16.smallest_subnormal, bf16.eps) == (
        BFLOAT16_MAX, 2**-126, 2**-133, 2**-7)
    assert f16.half and bf16.half and not format_of("float32").half


@pytest.mark.parametrize("dtype,x,limit", [("float16", 12.0, math.log(FLOAT16_MAX)),
                                            ("bfloat16", 89.0, math.log(BFLOAT16_MAX))])
def test_exp_overflows_at_the_format_s_own_threshold(dtype, x, limit):
    assert f"{limit:.2f}" == {"float16": "11.09", "bfloat16": "88.72"}[dtype]
    result = api.evaluate("y = exp(x)", feeds={"x": x}, dtype=dtype)
    assert np.isinf(result.outputs["y"])
    d = only(result.diagnostics, "overflow")
    assert (d.op, d.pos.line, d.pos.column, d.count) == ("exp", 1, 5, 1)
    assert f"its argument reaches {x:g}, and exp overflows {dtype} above {limit:.2f}" in d.message
    assert d.reaches == ["y"]
    # float16's short range is the cause: bfloat16 has float32's (and no such advice is given there)
    assert d.suggestion.endswith("; or run it in bfloat16, whose range is float32's") == (dtype == "float16")


def test_the_gradient_of_an_overflow_in_float16_names_the_threshold_too():
    result = api.grad("y = exp(x)", wrt="x", feeds={"x": 12.0}, dtype="float16")
    d = only(result.diagnostics, "overflow")
    assert "exp overflows float16 above 11.09" in d.message and set(d.reaches) == {"y", "d/dx"}


def test_headroom_in_float16_names_the_largest_number_and_the_op_s_threshold():
    # exp(10.5) = 36315.5, which float16 rounds to 36320 (its spacing there is 32): 65504 / 36320 = 1.80
    d = only(api.evaluate("y = exp(x)", feeds={"x": 10.5}, dtype="float16").diagnostics, "headroom")
    assert d.message == ("exp reaches 3.632e+04, within a factor of 1.8 of the largest float16 (6.55e+04): "
                         "a little more overflows (exp overflows float16 above 11.09)")
    # the note starts at 65504 / 64 = 1023.5: exp(6.9) = 992 gets none, exp(7) = 1097 gets it
    assert not kinds(api.evaluate("y = exp(x)", feeds={"x": 6.9}, dtype="float16").diagnostics, "headroom")
    assert kinds(api.evaluate("y = exp(x)", feeds={"x": 7.0}, dtype="float16").diagnostics, "headroom")


def test_a_gradient_of_1e_9_underflows_to_0_in_float16_and_is_counted():
    # d(x * 1e-9)/dx = 1e-9, below float16's smallest subnormal 2**-24 = 5.96e-8 (half of it rounds to 0)
    result = api.grad("y = x * 1e-9", wrt="x", feeds={"x": 1.0}, dtype="float16")
    assert float(result.gradients["x"]) == 0.0
    d = only(result.diagnostics, "gradient_underflow")
    assert d.severity == "warning" and d.count == 1 and (d.pos.line, d.pos.column) == (1, 7)  # the *
    assert d.message == ("d y/d x: 1 of 1 element is below float16's smallest subnormal (5.96e-08) and became 0 "
                         "(float64 gives 1e-09)")
    assert "scale the loss" in d.suggestion
    assert only(result.diagnostics, "value_underflow").message.startswith("y: 1 of 1 element is below")


def test_312_of_1000_gradient_elements_underflow():
    w = np.ones(1000)
    w[::3][:312] = 1e-9       # 312 elements whose gradient is 1e-9; the rest are 1 (a normal float16)
    result = api.grad("y = sum(w * x)", wrt="x", feeds={"x": np.full(1000, 0.5), "w": w}, dtype="float16")
    assert int(np.count_nonzero(result.gradients["x"] == 0)) == 312
    d = only(result.diagnostics, "gradient_underflow")
    assert d.count == 312
    assert d.message.startswith("d y/d x: 312 of 1000 elements are below float16's smallest subnormal (5.96e-08) "
                                "and became 0")
    assert not kinds(result.diagnostics, "value_underflow")  # y = 688 * 0.5 + tiny: a normal float16


def test_subnormal_gradients_are_counted_with_their_lost_digits():
    # 1e-6 is subnormal in float16 (below 2**-14 = 6.1e-5): it is 17 steps of 2**-24 = 1.0133e-6,
    # a relative error of 1.3e-2, where a normal float16 is within 2**-11 = 4.9e-4
    result = api.grad("y = sum(w * x)", wrt="x", feeds={"x": [1.0, 1.0], "w": [1e-6, 1.0]}, dtype="float16")
    d = only(result.diagnostics, "gradient_underflow")
    expected = abs(17 * 2**-24 - 1e-6) / 1e-6
    assert f"{expected:.2g}" == "0.013"
    assert d.severity == "info" and d.count == 1
    assert d.message == ("d y/d x: 1 of 2 elements is subnormal in float16 (below 6.1e-05), with fewer significant "
                         "bits: a relative error of 0.013 against float64")


def test_bfloat16_keeps_float32_s_range_so_1e_9_does_not_underflow():
    result = api.grad("y = x * 1e-9", wrt="x", feeds={"x": 1.0}, dtype="bfloat16")
    assert float(result.gradients["x"]) != 0.0 and not kinds(result.diagnostics, "gradient_underflow")


def test_an_overflow_s_zeros_are_not_called_an_underflow():
    # exp(12) = inf in float16: the softmax's other elements are x / inf = 0, said by the overflow
    result = api.evaluate("y = exp(x) / sum(exp(x))", feeds={"x": [10.0, 11.0, 12.0]}, dtype="float16")
    assert kinds(result.diagnostics, "overflow") and not kinds(result.diagnostics, "value_underflow")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_float64_and_float32_get_none_of_it(dtype):
    graph = api.compile_program("y = x", feeds={"x": 1.0})
    assert type(NumericsChecker(graph, np, dtype)) is NumericsChecker
    assert type(NumericsChecker(graph, np, "float16")) is HalfPrecisionChecker
    diags = api.grad("y = sum(w * x)", wrt="x", feeds={"x": [1.0], "w": [1e-300 if dtype == "float64" else 1e-40]},
                     dtype=dtype).diagnostics
    assert not [d for d in diags if d.kind in ("gradient_underflow", "value_underflow", "precision_loss")]


def test_a_fix_is_proven_in_float16():
    # exp(12) overflows float16; the shifted softmax is finite there, and within float16's rounding
    # of the exact numbers (0.0900, 0.2447, 0.6652)
    d = only(api.evaluate("y = exp(x) / sum(exp(x))", feeds={"x": [10.0, 11.0, 12.0]}, dtype="float16").diagnostics,
             "overflow")
    assert d.fix is not None and d.fix_json["verified"] is True
    fixed = api.evaluate(d.fix.apply("y = exp(x) / sum(exp(x))"), feeds={"x": [10.0, 11.0, 12.0]}, dtype="float16")
    np.testing.assert_allclose(fixed.outputs["y"].astype(np.float64), [0.0900306, 0.2447285, 0.6652410],
                               rtol=2**-10)


class _Exact:
    def __init__(self, numbers):
        self.numbers = numbers

    def of(self, key):
        return self.numbers.get(key)


def test_a_rewrite_finite_in_float64_but_not_in_float16_is_not_proven():
    # the rewrite leaves inf where the exact value is 30000, a float16 number: refused, and why
    original = {"value y": np.array([np.nan, 1.0], dtype=np.float16)}
    rewritten = {"value y": np.array([np.inf, 1.0], dtype=np.float16)}
    exact = _Exact({"value y": np.array([30000.0, 1.0])})
    verdict = judge(original, rewritten, exact, "float16", identities=True)
    assert not verdict.ok
    assert verdict.why == ("it gives inf at y[0] in float16, where the exact value is 30000, within float16's range: "
                           "it would be finite in float64, not in float16, the format the program runs in")
    # past float16's largest (65504), no form can hold it: not held against the rewrite
    assert judge(original, rewritten, _Exact({"value y": np.array([80000.0, 1.0])}), "float16", identities=True).ok
    # float64's judgement is as it was: an element left not finite is not judged there
    assert judge({"value y": np.array([np.nan, 1.0])}, {"value y": np.array([np.inf, 1.0])}, exact, "float64").ok


def test_a_bfloat16_running_sum_where_every_addition_after_the_first_rounds_away():
    # 1, then 999 terms of 2**-9: in bfloat16 (7 fraction bits) 1 + 2**-9 is below half the spacing
    # 2**-7 above 1, so a running sum accumulated in bfloat16 stays 1 at every element; float64
    # gives c_k = 1 + k 2**-9. Normwise: sqrt(sum (k 2**-9)**2) / sqrt(sum (1 + k 2**-9)**2), k < 1000
    x = [1.0] + [2.0**-9] * 999
    n = 1000
    squares = n * (n - 1) * (2 * n - 1) / 6          # sum of k**2
    error = math.sqrt(squares * 2.0**-18) / math.sqrt(n + 2 * 2.0**-9 * n * (n - 1) / 2 + squares * 2.0**-18)
    assert f"{error:.2g}" == "0.55"
    result = api.evaluate("y = cumsum(x)", feeds={"x": x}, dtype="bfloat16", accumulate="same")
    assert np.all(result.outputs["y"].astype(np.float64) == 1.0)
    d = only(result.diagnostics, "precision_loss")
    assert (d.op, d.pos.column, d.count, d.severity) == ("cumsum", 5, 1000, "warning")
    assert d.message == ("this cumsum of 1000 bfloat16 terms has a relative error of 0.55 against float64; 0.55 of "
                         "it is its own rounding (each addition rounded to bfloat16, whose epsilon is 7.8e-03)")
    assert "--accumulate float32" in d.suggestion
    # accumulated in float32 (the default), each prefix sum is exact there and rounded once: within
    # half an epsilon, nothing to say
    quiet = api.evaluate("y = cumsum(x)", feeds={"x": x}, dtype="bfloat16")
    assert not kinds(quiet.diagnostics, "precision_loss")


def test_a_bfloat16_sum_that_cancels_loses_every_digit_when_it_accumulates_in_bfloat16():
    # pairwise, as NumPy sums: (1 + 2**-9) + (-1 + 0); the first partial sum rounds to 1 in bfloat16,
    # so the sum is 0 where float64 gives 2**-9: a relative error of 1
    x = [1.0, -1.0, 2.0**-9, 0.0]
    same = api.evaluate("y = sum(x)", feeds={"x": x}, dtype="bfloat16", accumulate="same")
    assert float(same.outputs["y"]) == 0.0
    d = only(same.diagnostics, "precision_loss")
    assert d.message.startswith("this sum of 4 bfloat16 terms has a relative error of 1 against float64; 1 of it")
    assert not kinds(api.evaluate("y = sum(x)", feeds={"x": x}, dtype="bfloat16").diagnostics, "precision_loss")


@pytest.mark.parametrize("accumulate", ["float32", "same"])
def test_a_sum_is_not_blamed_for_the_rounding_of_its_terms(accumulate):
    # 1 + 2**-9 is 1 in bfloat16: the sum of 1000 of them is 1000 (exact, pairwise: every partial sum
    # is an integer below 1024 with at most 8 significant bits), 1.95e-3 from float64's 1001.95, all of
    # it the terms' rounding, none the sum's
    result = api.evaluate("y = sum(x)", feeds={"x": [1.0 + 2.0**-9] * 1000}, dtype="bfloat16", accumulate=accumulate)
    assert float(result.outputs["y"]) == 1000.0
    assert not kinds(result.diagnostics, "precision_loss")


def test_the_diagnostics_in_json_keep_the_contract_s_fields():
    result = api.grad("y = sum(w * x)", wrt="x", feeds={"x": [0.5, 0.5], "w": [1e-9, 1.0]}, dtype="float16")
    d = only(result.diagnostics, "gradient_underflow").to_json()
    assert d == {"severity": "warning", "kind": "gradient_underflow", "op": "d y/d x", "line": 1, "column": 9,
                 "message": "d y/d x: 1 of 2 elements is below float16's smallest subnormal (5.96e-08) and became 0 "
                            "(float64 gives 1e-09)", "suggestion": d["suggestion"], "count": 1}


def test_when_the_float64_run_does_not_fit_it_says_so(monkeypatch):
    from gradcli.errors import OptionError
    from gradcli.numerics import rounding

    def too_big(*args, **kwargs):
        raise OptionError("the program needs 9 GiB, more than the {option} allowed", "max_memory")
    monkeypatch.setattr(rounding, "check_memory", too_big)
    result = api.grad("y = x * 1e-9", wrt="x", feeds={"x": 1.0}, dtype="float16")
    d = only(result.diagnostics, "precision_unmeasured")
    assert d.severity == "info" and d.message == ("what float16 loses was not measured: the float64 run of the "
                                                  "program that measures it failed (it needs more memory than is "
                                                  "allowed)")
    assert not kinds(result.diagnostics, "gradient_underflow")


def test_the_float64_run_computes_only_what_can_have_underflowed(monkeypatch):
    from gradcli.numerics import rounding
    asked = []

    def counting(graph, ids, **kwargs):
        asked.append([graph.equations[i].label for i in ids])
        return rounding_run(graph, ids, **kwargs)
    rounding_run = rounding.run
    monkeypatch.setattr(rounding, "run", counting)
    api.grad("y = sum(exp(x))", wrt="x", feeds={"x": [1.0, 2.0]}, dtype="float16")
    assert asked == []  # no 0, no subnormal, no sum that lost digits: no float64 run at all
    api.grad("y = sum(w * x)", wrt="x", feeds={"x": [1.0, 2.0], "w": [1e-9, 1.0]}, dtype="float16")
    assert len(asked) == 1 and len(asked[0]) == 1  # the gradient alone (y = 2 is a normal float16)


@pytest.mark.parametrize("dtype,x", [("float16", [10.0, 11.0, 12.0]), ("bfloat16", [87.0, 88.0, 89.0])])
def test_gradcli_fix_proves_the_shifted_softmax_in_the_format_with_its_gradient(dtype, x):
    # exp overflows past 11.09 (float16) and 88.72 (bfloat16); the shift keeps every exp at most 1
    fixed = api.fix("y = sum(exp(x) / sum(exp(x)) * w)", feeds={"x": x, "w": [1.0, 2.0, 3.0]}, wrt=["x"], dtype=dtype)
    assert fixed.text == "y = sum(exp(x - stop_gradient(max(x))) / sum(exp(x - stop_gradient(max(x)))) * w)\n"
    assert fixed.nonfinite == [] and fixed.not_fixed == [] and fixed.remaining == []
    # and the fixed program's gradient, in the format, is the softmax's within its rounding:
    # d/dx_k sum(p * w) = p_k (w_k - sum(p * w)), p = softmax(x) = softmax([0, 1, 2])
    p = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    expected = p * (np.array([1.0, 2.0, 3.0]) - (p * [1.0, 2.0, 3.0]).sum())
    got = api.grad(fixed.text, wrt="x", feeds={"x": x, "w": [1.0, 2.0, 3.0]}, dtype=dtype).gradients["x"]
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=8 * format_of(dtype).eps,
                               atol=8 * format_of(dtype).eps)


def test_an_overflow_is_said_in_the_type_its_value_is_held_in():
    # a value held in float16 in a run of another dtype (as a cast inside a program makes it) is
    # said in float16's terms; the run's dtype is what every other value is held in
    from gradcli.numerics.explain import classify
    graph = api.compile_program("y = exp(x)", feeds={"x": 12.0})
    eq = graph.equations[graph.names["y"]]
    value = np.array(np.inf, dtype=np.float16)
    checker = NumericsChecker(graph, np, "float64")
    checker._origin(graph.names["y"], eq, value, [np.array(12.0, dtype=np.float16)], np.array(True))
    assert "exp overflows float16 above 11.09" in checker.diagnostics[0].message
    assert "overflows float64 above 709.78" in classify(eq, np.array(np.inf), [np.array(800.0)], np.array(True),
                                                        True, np, "float64")[1]


def test_an_underflow_that_is_divided_by_names_the_format_s_bottom():
    # exp(-20) = 2.1e-9 is under half of float16's smallest subnormal (2**-25): it rounds to 0, below
    # log(2**-25) = -25 log 2 = -17.33
    assert f"{-25 * math.log(2):.1f}" == "-17.3"
    diags = api.evaluate("y = 1.0 / exp(x)", feeds={"x": -20.0}, dtype="float16").diagnostics
    d = only(diags, "underflow")
    assert d.message == ("exp underflows to 0 at 1 element (its argument reaches -20; exp underflows below about "
                         "-17.3 in float16), and / at 1:9 then divides by it")


def test_float64_s_rounding_noise_is_not_a_gradient_that_underflowed():
    # sum(softmax(x)) is 1 whatever x: its gradient is 0 in exact arithmetic, which float64 misses
    # by its rounding (1e-17); float16 gives 0, and that is no underflow
    x = np.random.default_rng(2).standard_normal((4, 3))
    noise = api.grad("y = softmax(x, axis=0)", wrt="x", feeds={"x": x}).gradients["x"]
    assert np.any(noise != 0) and np.max(np.abs(noise)) < 1e-15  # (what the test stands on)
    for dtype in ("float16", "bfloat16"):
        result = api.grad("y = softmax(x, axis=0)", wrt="x", feeds={"x": x}, dtype=dtype)
        assert not kinds(result.diagnostics, "gradient_underflow"), dtype


def test_a_subnormal_where_float64_gives_0_is_the_format_s_noise_not_a_lost_number():
    # sum(softmax(x)) is 1: its gradient is 0, which float64 (and long double) give exactly here;
    # float16 accumulating in float16 gives a subnormal at 3 elements: its own rounding noise, not a
    # number that lost digits (whose relative error against 0 would be infinite)
    x = np.random.default_rng(5).standard_normal((4, 3))
    exact = api.grad("y = softmax(x, axis=0)", wrt="x", feeds={"x": x}).gradients["x"]
    result = api.grad("y = softmax(x, axis=0)", wrt="x", feeds={"x": x}, dtype="float16", accumulate="same")
    got = result.gradients["x"].astype(np.float64)
    assert np.count_nonzero((exact == 0) & (got != 0) & (np.abs(got) < 2.0**-14)) == 3  # (what it stands on)
    assert not kinds(result.diagnostics, "gradient_underflow")


def test_the_wider_float_is_asked_only_of_elements_that_may_be_float64_s_noise(monkeypatch):
    from gradcli.numerics import rounding
    asked = []

    def counting(graph, ids, *args, **kwargs):
        asked.append(ids)
        return wide_run(graph, ids, *args, **kwargs)
    wide_run = rounding._exact_run
    monkeypatch.setattr(rounding, "_exact_run", counting)
    api.grad("y = x * 1e-9", wrt="x", feeds={"x": 1.0}, dtype="float16")
    assert asked == []  # 1e-9 is far above float64's noise (2**-40 of 1)
    api.grad("y = softmax(x, axis=0)", wrt="x", feeds={"x": np.random.default_rng(2).standard_normal((4, 3))},
             dtype="float16")
    assert len(asked) == 1  # the gradient of 1e-17s: asked
