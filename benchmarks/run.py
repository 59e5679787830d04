"""gradcli's speed goals, each measured against its baseline in the same run.

    python benchmarks/run.py            # everything (a few minutes)
    python benchmarks/run.py --quick    # smaller sizes, for a smoke test

Prints a Markdown table: what, gradcli's figure, the baseline's, the ratio, the target and
whether it is met. Times are medians of repeated runs; processes are timed through the
console script installed beside this Python (never a version-manager shim).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from gradcli import api  # noqa: E402
from gradcli.autodiff import gradients  # noqa: E402
from gradcli.diagnostics import NumericsChecker  # noqa: E402
from gradcli.evaluate import run  # noqa: E402
from gradcli.values import load_file  # noqa: E402

GRADCLI = os.path.join(os.path.dirname(sys.executable), "gradcli")
ROWS: list[tuple] = []


def row(what, ours, base, target, met, unit="s"):
    fmt = (lambda v: f"{v * 1e3:.1f} ms") if unit == "s" else (lambda v: f"{v:.0f} {unit}")
    ratio = ours / base if base else float("nan")
    ROWS.append((what, fmt(ours), fmt(base) if base else "—", f"{ratio:.2f}×" if base else "—", target,
                 "yes" if met else "**no**"))
    print(f"  {what}: {fmt(ours)} (baseline {fmt(base) if base else '-'}) -> {'met' if met else 'NOT met'}",
          file=sys.stderr)


def median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def process_time(argv, repeat, stdin=None):
    def once():
        subprocess.run(argv, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    once()  # warm the file cache
    return median_time(once, repeat)


# --------------------------------------------------------------------------- start-up

def startup(repeat):
    # pip compiles an installed wheel's bytecode; an editable install where
    # PYTHONDONTWRITEBYTECODE is set would recompile gradcli's modules at every start instead
    import compileall
    import gradcli
    compileall.compile_dir(os.path.dirname(gradcli.__file__), quiet=1)
    numpy_import = [sys.executable, "-c", "import numpy"]
    base = process_time(numpy_import, repeat)
    ours = process_time([GRADCLI, "eval", "-e", "exp(1)", "--format", "plain"], repeat)
    row("`gradcli eval -e 'exp(1)'` vs `python -c 'import numpy'`", ours, base, "≤ 1.25×", ours <= 1.25 * base)
    base = process_time(numpy_import, repeat)
    ours = process_time([GRADCLI, "--help"], repeat)
    row("`gradcli --help` vs `python -c 'import numpy'`", ours, base, "≤ 1.0×", ours <= base)


# --------------------------------------------------------------------------- big arrays

PROGRAM = ("z = x - stop_gradient(max(x))\n"
           "e = exp(z)\n"
           "y = e / sum(e)\n"
           "L = sum(w * y)\n")


def hand_vjp(x, w):
    """L = sum(w * softmax(x)) and dL/dx, written by hand with reused buffers."""
    s = x - x.max()
    np.exp(s, out=s)
    s /= s.sum()
    loss = np.dot(w, s) if x.dtype == np.float64 else np.sum(w * s)
    g = w - loss
    g *= s
    return loss, g


def big_arrays(n, repeat):
    rng = np.random.default_rng(0)
    tmp = tempfile.mkdtemp()
    results = {}
    x64, w64 = rng.standard_normal(n), rng.standard_normal(n)
    for dtype in ("float64", "float32"):
        xs, ws = os.path.join(tmp, f"x_{dtype}.npy"), os.path.join(tmp, f"w_{dtype}.npy")
        np.save(xs, x64.astype(dtype))
        np.save(ws, w64.astype(dtype))

        def hand():
            return hand_vjp(np.load(xs), np.load(ws))

        def ours(check=False):
            x, w = load_file(xs, "x"), load_file(ws, "w")
            graph = api.compile_program(PROGRAM, "<bench>", {"x": x, "w": w})
            y = graph.names["L"]
            (gx,) = gradients(graph, [y], [graph.names["x"]])
            checker = NumericsChecker(graph, np, dtype) if check else None
            with np.errstate(all="ignore"):
                out = run(graph, [y, gx], dtype=dtype, check=checker)
            return out[y], out[gx]

        base = median_time(hand, repeat)
        plain = median_time(lambda: ours(False), repeat)
        checked = median_time(lambda: ours(True), repeat)
        row(f"value + gradient, n = {n:.0e}, {dtype}, .npy inputs (no checks) vs hand-written NumPy VJP",
            plain, base, "≤ 1.2×", plain <= 1.2 * base)
        tracemalloc.start()
        hand()
        base_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        tracemalloc.start()
        results[dtype] = ours(True)
        our_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        row(f"peak memory of the same, {dtype}", our_peak / 2**20, base_peak / 2**20, "≤ 1.3×",
            our_peak <= 1.3 * base_peak, unit="MiB")
        row(f"numerical checks on the same, {dtype} (with vs without)", checked, plain, "≤ 1.1×",
            checked <= 1.1 * plain)
    g64, g32 = results["float64"][1], results["float32"][1].astype(np.float64)
    rel = float(np.linalg.norm(g32 - g64) / np.linalg.norm(g64))
    ROWS.append(("float32 gradient vs float64 (relative, 2-norm)", f"{rel:.2e}", "—", "—", "≤ 1e-6",
                 "yes" if rel <= 1e-6 else "**no**"))


# --------------------------------------------------------------------------- big programs

def term_program(n):
    inputs = "".join(f"x{i} = {0.5 + 1e-4 * i}\n" for i in range(n + 1))
    return inputs + "y = " + " + ".join(f"sin(x{i}) * x{i + 1}" for i in range(n)) + "\n"


def big_programs(sizes, repeat):
    timings = {}
    for n in sizes:
        text = term_program(n)
        wrt = [f"x{i}" for i in range(n + 1)]
        timings[n] = median_time(lambda: api.grad(text, wrt=wrt), repeat)
    small, large = sizes
    row(f"{large:,}-term program, text to value + gradient", timings[large], None, "≤ 3 s", timings[large] <= 3.0)
    growth = timings[large] / timings[small]
    ROWS.append((f"growth from {small:,} to {large:,} terms", f"{growth:.1f}×", "—", "—", "≤ 12×",
                 "yes" if growth <= 12 else "**no**"))


def deep_chains(depths):
    for depth, limit in depths:
        text = "y = " + "tanh(" * depth + "x" + ")" * depth + "\n"
        t = time.perf_counter()
        r = api.grad(text, wrt=["x"], feeds={"x": 0.5})
        took = time.perf_counter() - t
        ok = np.isfinite(r.gradients["x"]) and (limit is None or took <= limit)
        row(f"{depth:,}-deep nested chain, value + gradient", took, None,
            f"≤ {limit} s" if limit else "works", ok)


def lines(count, repeat):
    stdin = "".join(f"x = {k % 7}.5; y = sin(x) * x + {k}\n" for k in range(count)).encode()
    took = process_time([GRADCLI, "eval", "--lines"], repeat, stdin=stdin)
    row(f"`--lines` with {count:,} small programs (whole process)", took, None, "≤ 1 s", took <= 1.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke test, not the goals)")
    args = ap.parse_args()
    quick = args.quick
    startup(5 if quick else 15)
    big_arrays(1_000_000 if quick else 10_000_000, 3 if quick else 7)
    big_programs((1_000, 10_000) if quick else (10_000, 100_000), 1)
    deep_chains([(10_000, None)] if quick else [(100_000, 1.0), (1_000_000, None)])
    lines(1_000 if quick else 10_000, 1 if quick else 3)
    print("| what | gradcli | baseline | ratio | target | met |")
    print("|---|---|---|---|---|---|")
    for r in ROWS:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
