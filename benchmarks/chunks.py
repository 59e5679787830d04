"""Checks that cost nothing, both cores, and the memory-bandwidth floor: value + gradient of
L = sum(w * softmax(x)) (benchmarks/arrays.py's program) over big arrays read from .npy.

Contenders, alternating within each round (harness.paired): gradcli with every numerical check
on (its fused chains on the cores this process may run on), the same without the checks, the
same with the checks on one thread, the hand-written NumPy VJP (one thread of Python; its
float64 dot is BLAS's, on one thread too: run.py keeps this process's BLAS single-threaded), and `np.add(x, w, out=)` of the same size, whose GB/s is the bandwidth
that the floor divides by. The floor of a workload is the least it must move, its inputs read
once and its gradient written once (3 n numbers), at that bandwidth.

    python benchmarks/run.py --only chunks [--quick] [--rounds N]
"""
from __future__ import annotations

import os
import sys

import numpy as np

import arrays
from harness import Rounds, Table, call, paired, seconds


def _gradcli(dtype: str, checked: bool, threads: int | None):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from gradcli import api
    from gradcli.autodiff import gradients
    from gradcli.engine.backends import Backend
    from gradcli.engine.evaluate import run
    from gradcli.numerics.diagnostics import NumericsChecker

    backend = Backend()
    backend.threads = threads

    def ours(xs, ws):
        x, w = backend.load(xs, "x"), backend.load(ws, "w")  # (as the command reads them: on the backend's threads)
        graph = api.compile_program(arrays.PROGRAM, "<bench>", {"x": x, "w": w})
        y = graph.names["L"]
        (gx,) = gradients(graph, [y], [graph.names["x"]])
        checker = NumericsChecker(graph, np, dtype) if checked else None
        with np.errstate(all="ignore"):
            out = run(graph, [y, gx], dtype=dtype, check=checker, backend=backend)
        if checked and checker.finish({"L": y}):
            raise AssertionError("the benchmark's inputs should trip no check")
        return out[y], out[gx]

    return ours


def _add_bandwidth(res: Rounds, n: int, itemsize: int) -> float | None:
    """np.add's GB/s in this run (median time): two arrays read, one written."""
    took = res.median("np.add")
    return 3 * n * itemsize / took / 1e9 if took else None


def workload(table: Table, o, tmp: str, log) -> None:
    from gradcli.engine.backends import available_cores

    n = 1_000_000 if o.quick else 10_000_000
    cores = available_cores()
    rng = np.random.default_rng(0)
    x64, w64 = rng.standard_normal(n), rng.standard_normal(n)
    log(f"  load average {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} CPUs, {cores} in this process's affinity")
    for dtype in ("float64", "float32"):
        xs, ws = os.path.join(tmp, f"chunks_x_{dtype}.npy"), os.path.join(tmp, f"chunks_w_{dtype}.npy")
        np.save(xs, x64.astype(dtype))
        np.save(ws, w64.astype(dtype))
        a, b, c = x64.astype(dtype), w64.astype(dtype), np.empty(n, dtype)
        checked, unchecked, single = (_gradcli(dtype, True, None), _gradcli(dtype, False, None),
                                      _gradcli(dtype, True, 1))
        contenders = {"gradcli": call(lambda: checked(xs, ws)),
                      "gradcli without checks": call(lambda: unchecked(xs, ws)),
                      "gradcli on 1 thread": call(lambda: single(xs, ws)),
                      "hand VJP": call(lambda: arrays.hand_vjp(np.load(xs), np.load(ws))),
                      "np.add": call(lambda: np.add(a, b, out=c))}
        log(f"  chunks, n = {n:.0e}, {dtype}, {cores} threads")
        res = paired(contenders, o.rounds or (3 if o.quick else 9), warm=True, log=log)
        what = f"n = {n:.0e} {dtype}: value + gradient of sum(w * softmax(x)) from .npy"
        table.record(what, res)
        table.compare(f"{what}: checks on vs off", res, "gradcli", ["gradcli without checks"], 1.05, "≤ 1.05×",
                      peers=["gradcli without checks"])
        table.compare(f"{what}, checks on, 1 thread: vs hand-written NumPy VJP", res, "gradcli on 1 thread",
                      ["hand VJP"], 1.0, "≤ 1.0×", peers=["hand VJP"])
        table.compare(f"{what}, checks on, {cores} threads: vs the hand VJP on 1 thread", res, "gradcli",
                      ["hand VJP"], 0.65 if cores >= 2 else float("inf"),
                      "≤ 0.65× on 2 cores" if cores >= 2 else "(1 core: reported)", peers=["hand VJP"])
        _floor_rows(table, res, what, n, np.dtype(dtype).itemsize)


def _floor_rows(table: Table, res: Rounds, what: str, n: int, itemsize: int) -> None:
    """How far each contender is from the memory-bandwidth floor: its median time over the time
    of moving the least it must (x and w read, the gradient written) at np.add's GB/s."""
    gbs = _add_bandwidth(res, n, itemsize)
    if gbs is None:
        table.unavailable(f"{what}: bandwidth floor", res.failed.get("np.add", "failed"), "(reported)")
        return
    floor = 3 * n * itemsize / (gbs * 1e9)
    parts = []
    for name in ("gradcli", "gradcli without checks", "gradcli on 1 thread", "hand VJP"):
        took = res.median(name)
        if took is not None:
            parts.append(f"{name} {took / floor:.1f}×")
    table.add(f"{what}: from the bandwidth floor (x, w read, gradient written: {3 * n * itemsize / 1e6:.0f} MB "
              f"at np.add's {gbs:.1f} GB/s = {seconds(floor)})", "; ".join(parts), "—", "—", "(reported)", "—")
