"""This code against another version of gradcli, on the workloads that a restructuring must not
slow: start-up, big arrays, a long sum (terms), a deep chain and many small programs (lines).

    git worktree add ../gradcli-old REV        # the version to compare with, as source
    python benchmarks/run.py --only regression --baseline ../gradcli-old [--rounds N]

Both versions run the same way, `python -m gradcli` with PYTHONPATH naming their source tree,
their bytecode compiled first, alternating within each round (harness.paired). Each row gives
the median paired ratio of wall time (this / baseline) with the spread of the rounds' ratios,
the same of the CPU time the process used (less sensitive to a busy machine, but it counts
every thread), and whether both printed the same output.
"""
from __future__ import annotations

import compileall
import os
import resource
import statistics
import subprocess
import time

import numpy as np

from harness import Failed, paired

SIZE = {"terms": 100_000, "deep": 100_000, "lines": 10_000, "arrays": 10_000_000}
QUICK = {"terms": 5_000, "deep": 5_000, "lines": 500, "arrays": 1_000_000}


def _workloads(tmp: str, quick: bool) -> dict[str, tuple[list[str], bytes | None]]:
    size = QUICK if quick else SIZE
    n = size["terms"]
    terms = os.path.join(tmp, "regression_terms.gc")
    with open(terms, "w") as f:
        f.write("".join(f"x{i} = {0.5 + 1e-4 * i}\n" for i in range(n + 1)))
        f.write("y = " + " + ".join(f"sin(x{i}) * x{i + 1}" for i in range(n)) + "\n")
    deep = os.path.join(tmp, "regression_deep.gc")
    with open(deep, "w") as f:
        f.write("y = " + "tanh(" * size["deep"] + "x" + ")" * size["deep"] + "\n")
    rng = np.random.default_rng(0)
    xs, ws = os.path.join(tmp, "regression_x.npy"), os.path.join(tmp, "regression_w.npy")
    np.save(xs, rng.standard_normal(size["arrays"]))
    np.save(ws, rng.standard_normal(size["arrays"]))
    lines = "".join(f"x = {k % 7}.{k % 10}; y = sin(x) * x + {k}\n" for k in range(size["lines"])).encode()
    return {
        "start-up": (["eval", "-e", "exp(1)", "--format", "plain"], None),
        "arrays": (["grad", "-e", "L = sum(w * softmax(x))", "--wrt", "x", "--set", f"x=@{xs}", "--set", f"w=@{ws}",
                    "--out", os.path.join(tmp, "regression_g.npz"), "--force"], None),
        "terms": (["grad", terms, "--wrt", "x0", "--wrt", f"x{n}", "--format", "json"], None),
        "deep": (["grad", deep, "--wrt", "x", "--set", "x=0.5", "--format", "json"], None),
        "lines": (["grad", "--lines", "--wrt", "x"], lines),
    }


class _Version:
    """One version's process for one workload: its wall time (what harness.paired records), its
    CPU time and its output kept beside."""

    def __init__(self, python: str, tree: str, argv: list[str], stdin: bytes | None, timeout: float | None, cwd: str):
        self.command, self.env = [python, "-m", "gradcli", *argv], _environment(tree)
        self.stdin, self.timeout = stdin, timeout
        self.cwd = cwd  # (not a checkout: `python -m` puts the working directory before PYTHONPATH)
        self.cpu: list[float] = []
        self.output: bytes | None = None

    def __call__(self) -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        try:
            done = subprocess.run(self.command, input=self.stdin, capture_output=True, env=self.env,
                                  timeout=self.timeout, check=False, cwd=self.cwd)
        except subprocess.TimeoutExpired:
            raise Failed(f"timed out (> {self.timeout:.0f} s)") from None
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            last = (done.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
            raise Failed(f"exit {done.returncode}: {last[:120]}")
        self.cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        self.output = done.stdout
        return wall


def _environment(tree: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return dict(env, PYTHONPATH=tree)


def _check_imported_from(python: str, tree: str, cwd: str) -> None:
    """Each version's processes import gradcli from its own tree (a stray checkout on the path
    would have both sides run the same code)."""
    done = subprocess.run([python, "-c", "import gradcli, os; print(os.path.realpath(gradcli.__file__))"],
                          capture_output=True, text=True, env=_environment(tree), cwd=cwd, check=False)
    where = done.stdout.strip()
    if not where.startswith(os.path.realpath(tree) + os.sep):
        raise Failed(f"python -m gradcli with PYTHONPATH={tree} imports {where or done.stderr.strip()[-200:]}")


def _spread(ratios: list[float]) -> str:
    return f"{statistics.median(ratios):.3f}× ({min(ratios):.2f}–{max(ratios):.2f})"


def run(table, o, tmp: str, python: str, here: str, log) -> None:
    """The rows `baseline` adds to the table (target: no slower than the baseline by more than 5 %)."""
    if not o.baseline:
        table.unavailable("regression against another version", "not run: name its source tree with --baseline DIR",
                          "≤ 1.05×")
        return
    baseline = os.path.abspath(o.baseline)
    if not os.path.isfile(os.path.join(baseline, "gradcli", "__main__.py")):
        raise Failed(f"--baseline {o.baseline}: no gradcli/__main__.py there (give a source tree of gradcli)")
    for tree in (here, baseline):
        compileall.compile_dir(os.path.join(tree, "gradcli"), quiet=1)
        _check_imported_from(python, tree, tmp)
    rounds = o.rounds or (3 if o.quick else 7)
    for name, (argv, stdin) in _workloads(tmp, o.quick).items():
        ours = _Version(python, here, argv, stdin, o.timeout, tmp)
        theirs = _Version(python, baseline, argv, stdin, o.timeout, tmp)
        log(f"  regression: {name}")
        res = paired({"this code": ours, "baseline": theirs}, rounds, warm=True, log=log)
        table.record(f"regression: {name} (whole process, python -m gradcli)", res)
        what = f"regression: {name}, this code vs the baseline ({os.path.basename(baseline)})"
        if res.median("this code") is None or res.median("baseline") is None:
            table.unavailable(what, "; ".join(f"{k}: {v}" for k, v in res.failed.items()), "≤ 1.05×")
            continue
        walls = [a / b for a, b in zip(res.times["this code"], res.times["baseline"])]
        cpus = [a / b for a, b in zip(ours.cpu[1:], theirs.cpu[1:])]  # (the warm-up run left out, as for wall)
        ratio = statistics.median(walls)
        table.add(what, f"wall {_spread(walls)}; CPU {_spread(cpus)}",
                  "same output" if ours.output == theirs.output else "**output differs**",
                  f"{ratio:.2f}× baseline", "≤ 1.05×", "yes" if ratio <= 1.05 else "**no**")
