"""Fused chains computed on several threads (gradcli/engine/fusion.py): the same numbers bit for
bit as on one thread, and the same diagnostics as the plain evaluation, with the numerical
checks' facts taken inside the chunks (no pass of their own over an input or a value)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from gradcli import api
from gradcli.autodiff import gradients
from gradcli.engine import fusion
from gradcli.engine.backends import Backend
from gradcli.engine.evaluate import run
from gradcli.engine.memory import chunk_buffers
from gradcli.numerics.diagnostics import NumericsChecker

N = 5003  # ten chunks of 512 float64, five of 1024 float32 (the last one short)

PROGRAMS = {
    "chain": "y = (exp(sin(x) * 0.5) - w / 3.0) * cos(w) + x\n",
    "sum": "y = sum(x * w + 1.5)\n",
    "softmax": "z = x - stop_gradient(max(x))\ne = exp(z)\ny = sum(w * (e / sum(e)))\n",
    "mlp": "h = tanh(x * 1.5 + 0.25)\ny = sum(sigmoid(h * w - 0.2) * h + square(w) * 0.01)\n",
    "extremes": "y = max(x) - min(w) + sum(exp(x - max(x)))\n",
}


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(fusion, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(fusion, "MIN_ELEMENTS", 1024)


def backend(threads):
    chosen = Backend()
    chosen.threads = threads
    return chosen


def evaluate(program, feeds, dtype, threads, check=True, fused=True):
    """(the output and its gradient, the diagnostics as JSON) on `threads` threads."""
    graph = api.compile_program(program, "<test>", feeds)
    y = graph.names["y"]
    fetch = [y, *gradients(graph, [y], [graph.names["x"]])]
    checker = NumericsChecker(graph, np, dtype) if check else None
    saved = fusion.MIN_ELEMENTS
    if not fused:
        fusion.MIN_ELEMENTS = math.inf
    try:
        with np.errstate(all="ignore"):
            out = run(graph, fetch, dtype=dtype, check=checker, backend=backend(threads))
    finally:
        fusion.MIN_ELEMENTS = saved
    diags = [d.to_json() for d in checker.finish({"y": y})] if check else None
    return [out[f] for f in fetch], diags


def feeds_for(dtype, size=N, seed=5, scale=1.0):
    rng = np.random.default_rng(seed)
    return {"x": (scale * rng.standard_normal(size)).astype(dtype), "w": rng.uniform(0.5, 1.5, size).astype(dtype)}


def assert_same(a, b):
    for u, v in zip(a, b):
        assert u.dtype == v.dtype and u.shape == v.shape
        np.testing.assert_array_equal(u, v)
        assert u.tobytes() == v.tobytes()  # bit for bit: the signs of zeros and the NaNs too


@pytest.fixture
def workers_seen(monkeypatch):
    seen = []
    original = fusion._run_chunks

    def spy(work, count, workers, buffers):
        seen.append(workers)
        return original(work, count, workers, buffers)

    monkeypatch.setattr(fusion, "_run_chunks", spy)
    return seen


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("size", [N, 4096, 1537])  # odd, a whole number of chunks, two chunks and a bit
def test_several_threads_give_one_threads_numbers_bit_for_bit(name, dtype, size, workers_seen):
    feeds = feeds_for(dtype, size)
    one, one_diags = evaluate(PROGRAMS[name], feeds, dtype, 1)
    assert workers_seen and max(workers_seen) == 1
    for threads in (2, 3):
        workers_seen.clear()
        many, many_diags = evaluate(PROGRAMS[name], feeds, dtype, threads)
        assert max(workers_seen) >= 2  # the chunks were computed on several threads
        assert_same(many, one)
        assert many_diags == one_diags == []


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_checks_on_or_off_give_the_same_numbers(name, dtype):
    feeds = feeds_for(dtype, scale=40.0)  # exp(x) overflows somewhere in some programs
    for threads in (1, 2):
        checked, _ = evaluate(PROGRAMS[name], feeds, dtype, threads, check=True)
        unchecked, _ = evaluate(PROGRAMS[name], feeds, dtype, threads, check=False)
        assert_same(checked, unchecked)


TRIPPING = [
    ("y = sum(w * exp(3.0 * x) / 2.0)\n", "overflow"),
    ("y = w * sqrt(x - 100.0) + 1.0\n", "invalid"),
    ("y = (x / (w - w)) * 2.0 + x\n", "divide_by_zero"),
    ("z = x - stop_gradient(max(x))\ne = exp(z)\ny = sum(w * (e / sum(e)))\n", None),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("program,kind", TRIPPING)
@pytest.mark.parametrize("poison", ["none", "nan", "inf", "-inf"])
def test_diagnostics_are_the_plain_paths_at_the_same_places(program, kind, poison, dtype):
    feeds = feeds_for(dtype)
    feeds["x"][[17, 2000, 4999]] = [400.0, 150.0, 90.0]  # in the first, a middle and the last chunk
    if poison != "none":
        feeds["w"][[3, 3001]] = float(poison)  # non-finite inputs: their check was the chain's
        feeds["x"][4100] = float(poison)
    plain, plain_diags = evaluate(program, feeds, dtype, 1, fused=False)
    assert bool(plain_diags) == (kind is not None or poison != "none")  # (the softmax is stable)
    for threads in (1, 2):
        fused, fused_diags = evaluate(program, feeds, dtype, threads)
        assert fused_diags == plain_diags
        for f, p in zip(fused, plain):
            np.testing.assert_array_equal(np.isfinite(f), np.isfinite(p))
    if poison != "none":
        assert plain_diags[0]["kind"] == "nonfinite_input"
    elif kind is not None:
        assert any(d["kind"] == kind for d in plain_diags)


@pytest.mark.parametrize("dtype,top", [("float64", 1e300), ("float32", 1e36)])
def test_a_large_input_gets_the_plain_paths_headroom_notes(dtype, top):
    feeds = feeds_for(dtype)
    feeds["w"][2500] = top  # close to the largest number: the products below have little room
    program = "y = sum(x * w)\n"  # (no value written over its input: the plain check sees the inputs)
    plain, plain_diags = evaluate(program, feeds, dtype, 1, fused=False)
    assert any(d["kind"] in ("headroom", "float32_overflow", "overflow") for d in plain_diags)
    for threads in (1, 2):
        fused, fused_diags = evaluate(program, feeds, dtype, threads)
        assert fused_diags == plain_diags
        assert_same(fused[1:], plain[1:])


def test_checked_inputs_and_values_take_no_pass_of_their_own(monkeypatch):
    # the checker's own pass (v.v) is not made: the facts of x, w and exp(z) come from the chunks
    passes = []
    monkeypatch.setattr(Backend, "square_sum", lambda self, value: passes.append(value.shape) or 0.0)
    out, diags = evaluate(PROGRAMS["softmax"], feeds_for("float64"), "float64", 2)
    assert diags == [] and [s for s in passes if s] == []


def test_worker_threads_keep_the_callers_floating_point_error_state():
    feeds = feeds_for("float64", scale=400.0)  # exp overflows in every chunk
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning from any thread fails the evaluation
        checked, diags = evaluate("y = sum(exp(x) * w)\n", feeds, "float64", 2)
    assert any(d["kind"] == "overflow" for d in diags)


def test_the_memory_guard_counts_each_threads_chunk_buffers():
    program = "y = sum(exp(x) * sin(x))\n"  # two chunk buffers (exp's, sin's) before the product
    graph = api.compile_program(program, "<test>", {"x": np.ones(N)})
    fetch = [graph.names["y"]]
    assert chunk_buffers(graph, fetch, "float64", backend(1)) == 2 * fusion.CHUNK_BYTES
    assert chunk_buffers(graph, fetch, "float64", backend(2)) == 2 * 2 * fusion.CHUNK_BYTES
    small = api.compile_program(program, "<test>", {"x": np.ones(10)})
    assert chunk_buffers(small, [small.names["y"]], "float64", backend(2)) == 0  # nothing fused
    alone = api.compile_program("y = x * 2.0\n", "<test>", {"x": np.ones(N)})
    assert chunk_buffers(alone, [alone.names["y"]], "float64", backend(2)) == 0  # written into its output


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_the_bound_of_exp_holds_for_numpys_exp(dtype):
    # what lets exp(x - max(x)) be proven finite without a look at it: |exp(x)| <= rule(max|x|)
    from gradcli.ops import OPS
    rule = OPS["exp"].bound
    top = {"float64": 699.0, "float32": 88.0, "float16": 11.0}[dtype]
    for bound in (0.0, 1e-3, 0.5, 1.0, 10.0, top):
        x = np.linspace(-bound, bound, 20001).astype(dtype)
        assert float(np.max(np.exp(x))) <= rule([float(np.max(np.abs(x)))], [x.shape], x.shape, None)
    assert rule([701.0], [()], (), None) is None  # near the end of float64's range: no bound claimed


@pytest.mark.parametrize("failing", [0, 7])  # one in this thread, then one anywhere
def test_a_failure_in_any_chunk_ends_the_pass_with_its_error(failing):
    done = []

    def work(c, buffers):
        if c == failing:
            raise MemoryError
        done.append(c)

    with pytest.raises(MemoryError):
        fusion._run_chunks(work, 10_000, 2, list)
    assert len(done) < 9_999  # the other thread stopped too


# One element in the last (short) chunk that only a chunk's smallest element shows: the softmax's
# max(x) is the chain's own reduction, so x's other fact, and w's two, are what see these
LATE = N - 2
ALONE_IN_A_LATE_CHUNK = [  # (program, input, its value there in float64 / float32, what is reported)
    pytest.param(PROGRAMS["softmax"], "x", (-math.inf, -math.inf), {"nonfinite_input"}, id="softmax x -inf"),
    pytest.param(PROGRAMS["softmax"], "x", (math.nan, math.nan), {"nonfinite_input"}, id="softmax x nan"),
    pytest.param(PROGRAMS["softmax"], "w", (-math.inf, -math.inf), {"nonfinite_input"}, id="softmax w -inf"),
    pytest.param("y = sum(x * w)\n", "w", (-1e300, -1e36), {"headroom", "float32_overflow"},
                 id="headroom below 0"),
    pytest.param("y = sum(w / exp(x))\n", "x", (-800.0, -120.0), {"divide_by_zero"}, id="exp underflows"),
    pytest.param("y = sum(exp(x) * w)\n", "x", (800.0, 120.0), {"overflow"}, id="exp overflows"),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("program,name,values,kinds", ALONE_IN_A_LATE_CHUNK)
def test_one_element_in_the_last_chunk_gets_the_plain_paths_diagnostics(program, name, values, kinds, dtype):
    feeds = feeds_for(dtype)
    feeds[name][LATE] = values[dtype == "float32"]
    plain, plain_diags = evaluate(program, feeds, dtype, 1, fused=False)
    assert kinds & {d["kind"] for d in plain_diags}
    for threads in (1, 2):
        fused, fused_diags = evaluate(program, feeds, dtype, threads)
        assert fused_diags == plain_diags
        for f, p in zip(fused, plain):
            np.testing.assert_array_equal(np.isfinite(f), np.isfinite(p))
