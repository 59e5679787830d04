"""Timing and reporting for benchmarks/run.py.

Every contender of a workload runs once per round, in an order that alternates from round to
round (A B C, then C B A, ...), so that a slow spell of a shared machine falls on all of them
alike. A comparison is the median over rounds of the paired ratio ours / theirs, each pair
taken in the same round; the figures shown beside it are each contender's median.
"""
from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from importlib.util import find_spec

PEERS = ("jax", "torch", "autograd")


class Failed(Exception):
    """A contender that did not give an answer (a non-zero exit, a timeout)."""


def installed(module: str) -> bool:
    return find_spec(module) is not None


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def environment(gradcli_path: str) -> list[str]:
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor() or cpu
    versions = ", ".join(f"{d} {version(d)}" for d in ("gradcli", "numpy", "jax", "jaxlib", "torch", "autograd"))
    return [f"machine: {os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), {cpu}, {platform.system()} "
            f"{platform.release()}",
            f"python: {sys.version.split()[0]} ({sys.executable})",
            f"versions: {versions}",
            f"gradcli: {gradcli_path}",
            f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"]


# --------------------------------------------------------------------------- contenders

def process(argv: list[str], stdin: bytes | None = None, timeout: float | None = None):
    """A whole process as a contender: its wall time from start to exit, output read through a pipe."""
    def once() -> float:
        t = time.perf_counter()
        try:
            done = subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise Failed(f"timed out (> {timeout:.0f} s)") from None
        took = time.perf_counter() - t
        if done.returncode != 0:
            last = (done.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
            raise Failed(f"exit {done.returncode}: {last[:120]}")
        return took
    return once


def call(fn):
    """A function call as a contender: its wall time."""
    def once() -> float:
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t
    return once


@dataclass
class Rounds:
    times: dict[str, list[float | None]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    def median(self, name: str) -> float | None:
        got = [t for t in self.times.get(name, []) if t is not None]
        return statistics.median(got) if got else None

    def ratio(self, a: str, b: str) -> float | None:
        """Median over rounds of a's time / b's time in the same round."""
        pairs = [x / y for x, y in zip(self.times.get(a, []), self.times.get(b, []))
                 if x is not None and y is not None and y > 0]
        return statistics.median(pairs) if pairs else None


def paired(contenders: dict[str, object], rounds: int, warm: bool = False, log=None) -> Rounds:
    """Run each contender once per round, alternating the order; a contender that fails is
    dropped from later rounds."""
    out = Rounds({name: [] for name in contenders})
    names = list(contenders)
    if warm:  # one untimed run each: the file cache, the bytecode
        for name in names:
            try:
                contenders[name]()
            except Failed as e:
                out.failed[name] = str(e)
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            if name in out.failed:
                out.times[name].append(None)
                continue
            try:
                took = contenders[name]()
            except Failed as e:
                out.failed[name] = str(e)
                took = None
            out.times[name].append(took)
            if log:
                log(f"    round {r + 1}/{rounds} {name}: " + (f"{took:.3f} s" if took is not None else out.failed[name]))
    return out


# --------------------------------------------------------------------------- the table

def seconds(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v * 1e3:.1f} ms" if v < 1 else f"{v:.2f} s"


def mib(v: float | None) -> str:
    return "—" if v is None else f"{v / 2**20:.0f} MiB"


@dataclass
class Table:
    rows: list[tuple] = field(default_factory=list)
    details: list[tuple] = field(default_factory=list)

    def add(self, what, ours, best, ratio, target, met):
        self.rows.append((what, ours, best, ratio, target, met))
        print(f"  {what}: {ours} | {best} | {ratio} | {target} | {met}", file=sys.stderr, flush=True)

    def unavailable(self, what, why, target):
        self.add(what, why, "—", "—", target, "—")

    def compare(self, what: str, res: Rounds, ours: str, refs: list[str], limit: float, target: str,
                fmt=seconds, peers: list[str] | None = None):
        """One row: ours against the fastest present of `refs` (the target's peers), met when the
        median paired ratio is <= limit. `peers` (default: every other contender) picks the best
        peer shown."""
        mine = res.median(ours)
        if mine is None:
            self.add(what, res.failed.get(ours, "failed"), "—", "—", target, "**no**")
            return
        peers = [p for p in (peers or res.times) if p != ours]
        present = [p for p in peers if res.median(p) is not None]
        best = min(present, key=res.median) if present else None
        best_text = f"{best} {fmt(res.median(best))}" if best else "—"
        live = [p for p in refs if res.median(p) is not None]
        if not live:
            why = "; ".join(f"{p}: {res.failed.get(p, 'not installed')}" for p in refs)
            self.add(what, fmt(mine), best_text, "—", target, why)
            return
        ref = min(live, key=res.median)
        ratio = res.ratio(ours, ref)
        self.add(what, fmt(mine), best_text, f"{ratio:.2f}× {ref}", target, "yes" if ratio <= limit else "**no**")

    def record(self, workload: str, res: Rounds, fmt=seconds):
        """Every contender's median, for the second table."""
        for name in res.times:
            m = res.median(name)
            text = fmt(m) if m is not None else res.failed.get(name, "—")
            if m is not None and name in res.failed:
                text += f" (then {res.failed[name]})"
            self.details.append((workload, name, text))

    def markdown(self) -> str:
        lines = ["| what | gradcli | best peer | ratio | target | met |", "|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join(map(str, r)) + " |" for r in self.rows]
        lines += ["", "Every contender (median over rounds):", "", "| workload | contender | median |",
                  "|---|---|---|"]
        lines += ["| " + " | ".join(map(str, r)) + " |" for r in self.details]
        return "\n".join(lines)
