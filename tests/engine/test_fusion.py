"""Elementwise fusion (gradcli/engine/fusion.py): a fused evaluation gives NumPy's numbers (bitwise for
elementwise values, within float rounding for a fused sum) and the same diagnostics, at the same
equations, as the plain evaluation."""
from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from gradcli import api
from gradcli.engine import fusion
from gradcli.engine.backends import Backend
from gradcli.autodiff import gradients
from gradcli.numerics.diagnostics import NumericsChecker
from gradcli.engine.evaluate import needed_equations, run

N = 5003  # ten chunks of 512 float64 (the last one short)


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    # chains over small arrays, cut into many chunks: the same code paths as 1e7 elements
    monkeypatch.setattr(fusion, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(fusion, "MIN_ELEMENTS", 1024)


def evaluate(program, feeds, dtype, fused, wrt=("a",)):
    """Outputs (and gradients) and the diagnostics as JSON, fused or not; the chains planned."""
    graph = api.compile_program(program, "<test>", feeds)
    y = graph.names["y"]
    grads = gradients(graph, [y], [graph.names[w] for w in wrt]) if wrt else []
    fetch = [y, *grads]
    checker = NumericsChecker(graph, np, dtype)
    saved = fusion.MIN_ELEMENTS
    if not fused:
        fusion.MIN_ELEMENTS = math.inf
    try:
        with np.errstate(all="ignore"):
            out = run(graph, fetch, dtype=dtype, check=checker)
    finally:
        fusion.MIN_ELEMENTS = saved
    diags = [d.to_json() for d in checker.finish({"y": y})]
    return [out[f] for f in fetch], diags, graph, fetch


def chains_of(graph, fetch):
    last_use: dict = {}
    order = needed_equations(graph, fetch, last_use=last_use)
    chains, _ = fusion.plan(graph, order, last_use, set(fetch), {}, Backend())
    return chains


UNARY = ["exp({})", "log({})", "sqrt({})", "sin({})", "cos({})", "tanh({})", "-{}", "square({})",
         "expm1({})", "log1p({})", "abs({})", "reciprocal({})"]
BINARY = ["({} + {})", "({} - {})", "({} * {})", "({} / {})", "maximum({}, {})"]


def random_chain(rng, steps):
    """An expression in a, b (arrays) and c (a number), each new value used once or twice."""
    values = ["b", "c", "a"]
    for _ in range(steps):
        if rng.random() < 0.45:
            values.append(UNARY[rng.integers(len(UNARY))].format(values[-1]))
        else:
            other = values[rng.integers(len(values))]
            form = BINARY[rng.integers(len(BINARY))]
            values.append(form.format(values[-1], other) if rng.random() < 0.5 else form.format(other, values[-1]))
    return values[-1]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_random_chains_fused_equal_unfused_with_the_same_diagnostics(dtype):
    rng = np.random.default_rng(20251125)
    fused_somewhere = ridden = 0
    for case in range(40):
        expression = random_chain(rng, int(rng.integers(2, 9)))
        scale = [0.5, 3.0, 300.0][case % 3]  # 300: exp overflows, log and sqrt meet negatives
        feeds = {"a": (scale * rng.standard_normal(N)).astype(dtype),
                 "b": rng.uniform(0.5, 2.0, N).astype(dtype), "c": float(rng.uniform(-2, 2))}
        for reduce in (False, True, "twice"):
            # "twice": t held whole (read twice), its sum taken in the pass that writes it
            program = (f"t = {expression}\ny = sum(t) + sum(t * b)\n" if reduce == "twice" else
                       f"y = {'sum(' if reduce else ''}{expression}{')' if reduce else ''}\n")
            fused, fused_diags, graph, fetch = evaluate(program, feeds, dtype, True)
            plain, plain_diags, _, _ = evaluate(program, feeds, dtype, False)
            chains = chains_of(graph, fetch)
            fused_somewhere += bool(chains)
            ridden += any(c.rides_on is not None for c in chains.values())
            assert fused_diags == plain_diags, program
            if reduce:
                # a sum adds its chunks' partial sums: within rounding of the sum of |terms|
                terms, _, _, _ = evaluate(f"y = {expression}\n", feeds, dtype, False, wrt=())
                t = np.abs(terms[0].astype(np.float64))
                scale_of_sum = float(np.sum(t) + (np.sum(t * feeds["b"]) if reduce == "twice" else 0.0))
                if math.isfinite(scale_of_sum):
                    tolerance = 8 * math.log2(N) * np.finfo(dtype).eps * scale_of_sum
                    assert abs(float(fused[0]) - float(plain[0])) <= tolerance, program
                else:
                    np.testing.assert_array_equal(np.isfinite(fused[0]), np.isfinite(plain[0]), program)
                rest_fused, rest_plain = fused[1:], plain[1:]
            else:
                rest_fused, rest_plain = fused, plain
            for f, p in zip(rest_fused, rest_plain):  # elementwise values: the same ufuncs, bitwise
                assert f.dtype == p.dtype == np.dtype(dtype)
                np.testing.assert_array_equal(f, p, program)
    assert fused_somewhere >= 60 and ridden >= 10  # most programs formed chains: the test exercises fusion


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_softmax_loss_and_gradient_fused_against_numpy(dtype):
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal(N).astype(dtype), rng.standard_normal(N).astype(dtype)
    program = "z = x - stop_gradient(max(x))\ne = exp(z)\ny = sum(w * (e / sum(e)))\n"
    (loss, grad), diags, graph, fetch = evaluate(program, {"x": x, "w": w}, dtype, True, wrt=("x",))
    chains = chains_of(graph, fetch)
    # max(x) on its own, taking x's check; exp(x - m) with sum(e) taken in its pass; sum(w * (e / s)),
    # taking w's check; the gradient's (w / s + c) * e
    assert diags == [] and len(chains) == 5 and sum(c.rides_on is not None for c in chains.values()) == 1
    assert sorted(j for c in chains.values() for j in c.deferred) == [graph.names["x"], graph.names["w"]]
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    p = np.exp(x64 - x64.max())
    p /= p.sum()
    expected = float(np.dot(w64, p))
    assert abs(float(loss) - expected) <= 8 * np.finfo(dtype).eps * float(np.sum(np.abs(w64 * p)))
    np.testing.assert_allclose(grad, (w64 - expected) * p, rtol=0, atol=64 * np.finfo(dtype).eps * np.abs(w64 * p).max())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("program,kind,op", [
    ("y = sum(w * exp(3.0 * x) / 2.0)", "overflow", "exp"),          # inf inside a chain ending in a sum
    ("y = sum(1.0 / (exp(3.0 * x) + 1.0))", "overflow", "exp"),      # inf that a later op turns finite
    ("y = w * sqrt(x - 100.0) + 1.0", "invalid", "sqrt"),           # NaN in the chain's middle
    ("y = sum(w * log(x - 60.0))", "invalid", "log"),
    ("y = (x / (w - w)) * 2.0 + x", "divide_by_zero", "/"),  # 0/0 and x/0 in one chain
])
def test_seeded_overflows_and_nans_inside_a_chain_are_reported_where_they_arise(dtype, program, kind, op):
    rng = np.random.default_rng(3)
    x = rng.uniform(-1.0, 1.0, N).astype(dtype)
    x[[17, 2000, 4999]] = [400.0, 150.0, 90.0]  # in the first, a middle and the last chunk
    w = rng.uniform(0.5, 1.5, N).astype(dtype)
    fused, fused_diags, graph, fetch = evaluate(program + "\n", {"x": x, "w": w}, dtype, True, wrt=("x",))
    plain, plain_diags, _, _ = evaluate(program + "\n", {"x": x, "w": w}, dtype, False, wrt=("x",))
    assert chains_of(graph, fetch)
    assert fused_diags == plain_diags
    first = [d for d in fused_diags if d["severity"] == "warning"][0]
    assert first["kind"] in (kind, "invalid") and first["op"].startswith(op.split(" ")[0]), fused_diags
    for f, p in zip(fused, plain):
        np.testing.assert_array_equal(np.isfinite(f), np.isfinite(p))


def test_a_value_close_to_overflowing_inside_a_chain_gets_its_headroom_note():
    x = np.full(N, 1.0)
    x[1234] = 707.0  # exp(707) ~ 1e307: within 1e3 of the largest float64
    program = "y = sum(exp(x) * 0.5)\n"
    _, fused_diags, graph, fetch = evaluate(program, {"x": x}, "float64", True, wrt=("x",))
    _, plain_diags, _, _ = evaluate(program, {"x": x}, "float64", False, wrt=("x",))
    assert chains_of(graph, fetch)
    assert fused_diags == plain_diags and any(d["kind"] == "headroom" for d in fused_diags)


def test_non_finite_inputs_take_the_plain_path_with_the_same_diagnostics():
    x = np.linspace(0.5, 2.0, N)
    x[10] = np.nan
    x[4000] = np.inf
    program = "y = sum(exp(x) * 2.0 - x)\n"
    fused, fused_diags, _, _ = evaluate(program, {"x": x}, "float64", True, wrt=("x",))
    plain, plain_diags, _, _ = evaluate(program, {"x": x}, "float64", False, wrt=("x",))
    assert fused_diags == plain_diags and fused_diags[0]["kind"] == "nonfinite_input"
    np.testing.assert_array_equal(fused[1], plain[1])


def test_a_check_that_is_not_the_numerics_checker_sees_every_equation():
    x = np.linspace(0.5, 2.0, N)
    graph = api.compile_program("y = sum(exp(x) * 2.0 - x)\n", "<test>", {"x": x})
    y = graph.names["y"]
    seen = []
    out = run(graph, [y], check=lambda i, eq, value, args: seen.append(i))
    assert sorted(seen) == needed_equations(graph, [y])  # each once (a chain's, at the chain's end)
    assert float(out[y]) == pytest.approx(float(np.sum(np.exp(x) * 2.0 - x)), rel=1e-14)


def test_fusion_holds_fewer_arrays_than_the_plain_path():
    x = np.linspace(0.5, 2.0, 200_000)
    program = "y = sum(exp(sin(x) * 2.0 - x) / (x + 1.0))\n"
    peaks = {}
    for fused in (True, False):
        tracemalloc.start()
        (value, grad), diags, _, _ = evaluate(program, {"x": x}, "float64", fused, wrt=("x",))
        peaks[fused] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peaks[True] < peaks[False] - 0.9 * x.nbytes, peaks  # an array fewer (less the chunk buffers)


def test_the_memory_guard_still_refuses_what_does_not_fit():
    from gradcli.errors import OptionError
    with pytest.raises(OptionError, match="more than the"):
        api.grad("y = sum(exp(sin(x) * 2.0 - x) / (x + 1.0))", wrt=["x"],
                 feeds={"x": np.linspace(0.5, 2.0, 200_000)}, max_memory=2_000_000)


def test_the_library_path_fuses_with_the_same_numbers():
    x = np.linspace(-3.0, 3.0, N)
    w = np.cos(np.arange(N) * 0.1)
    program = "z = x - stop_gradient(max(x))\ne = exp(z)\nL = sum(w * (e / sum(e)))\n"
    result = api.grad(program, wrt=["x"], feeds={"x": x, "w": w})
    p = np.exp(x - x.max())
    p /= p.sum()
    loss = float(np.dot(w, p))
    assert float(result.outputs["L"]) == pytest.approx(loss, rel=1e-12, abs=1e-15)
    np.testing.assert_allclose(result.gradients["x"], (w - loss) * p, rtol=1e-12, atol=1e-17)


def test_what_the_records_say_fuses_computes_what_their_forward_does():
    # fusion calls a record's `ufunc` (chunk by chunk) and `reduce_ufunc` (chunk sums) in place
    # of its forward: they must be the same function
    from gradcli.ops import OPS
    rng = np.random.default_rng(11)
    x, y = rng.uniform(0.1, 0.9, (3, 4)), rng.uniform(0.1, 0.9, (3, 4))
    fused = [op for op in OPS.values() if op.ufunc is not None and op.elementwise and not op.view and op.kink is None]
    assert len(fused) > 20
    with np.errstate(all="ignore"):  # (arccosh below 1: NaN from both)
        for op in fused:
            args = (x, y)[:op.arity]
            np.testing.assert_array_equal(getattr(np, op.ufunc)(*args), op.forward(np, *args), op.name)
    reducing = [op for op in OPS.values() if op.reduce_ufunc is not None]
    assert reducing
    for op in reducing:
        assert float(op.forward(np, x)) == pytest.approx(float(getattr(np, op.reduce_ufunc).reduce(x.ravel())), rel=1e-15)


@pytest.mark.parametrize("dtype, spoiled, kinds", [
    ("float64", np.nan, ["nonfinite_input"]), ("float64", -np.inf, ["nonfinite_input"]),
    ("float32", np.nan, ["nonfinite_input"]), ("float32", np.inf, ["nonfinite_input"]),
    ("float32", 1e20, []),  # finite, its square past float32's range
    # close to overflowing: one headroom note, where the product first reaches it (the sum that
    # carries it on is the same cause: numerics/diagnostics.py notes it once)
    ("float32", 3e38, ["headroom"]),
    ("float64", 1e160, ["float32_overflow"]),  # its square past float64's range
])
def test_a_large_input_checked_in_its_chain_reports_what_the_plain_path_does(dtype, spoiled, kinds):
    # (the product reaching near overflow got its note only on the fused path before: the plain
    # path skipped it where the product was written over its input's buffer)
    w = np.linspace(-2.0, 3.0, N).astype(dtype)
    w[4321] = spoiled
    x = np.linspace(-1.0, 1.0, N).astype(dtype)
    program = "y = sum(w * sin(x))\n"
    fused, fused_diags, graph, fetch = evaluate(program, {"x": x, "w": w}, dtype, True, wrt=("x",))
    plain, plain_diags, _, _ = evaluate(program, {"x": x, "w": w}, dtype, False, wrt=("x",))
    assert chains_of(graph, fetch)
    assert fused_diags == plain_diags
    assert [d["kind"] for d in fused_diags] == kinds
    np.testing.assert_array_equal(fused[1], plain[1])
    np.testing.assert_allclose(fused[0], plain[0], rtol=1e-5)
