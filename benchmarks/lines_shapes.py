"""Many small programs of five shapes, 10,000 lines each, through
`gradcli grad --lines --wrt x --format json`, against autograd, PyTorch and a hand-written NumPy
loop that knows each formula (each peer one process looping over the same lines).

    python benchmarks/lines_shapes.py peer SHAPE autograd|torch|numpy < LINES   # one answer per line

Every peer reads each line's numbers with one regular expression (the cheapest reading there
is: it knows where each number goes) and computes the value and the gradient with respect to x
as a person would write it with that library; gradcli parses each line as a program. The peers
run under the Python named by GRADCLI_BENCH_PEER_PYTHON (default: the one running run.py), so
that they can live in another environment than gradcli's.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PEER_PYTHON = os.environ.get("GRADCLI_BENCH_PEER_PYTHON") or sys.executable
# `--set x=...` for the shape whose x is a function's parameter (a pasted def is called with it)
DEF_X = "[0.3, -1.2]"


def _numbers(k: int) -> tuple[str, str, str]:
    """Three numbers of line k, each varying over the lines (never integers)."""
    return f"{(k % 97) / 10 - 4.85:.2f}", f"{(k % 13) / 7 + 0.1:.3f}", f"{(k % 31) / 11 - 1.25:.3f}"


def line(shape: str, k: int) -> str:
    a, b, c = _numbers(k)
    if shape == "scalar":
        return f"x = {k % 7}.{k % 10 + 1}; y = sin(x) * x + {k}"
    if shape == "vector":
        return f"x = [{a}, 1.5, -2]; sum(exp(x - stop_gradient(max(x)))) * {b}"
    if shape == "def":
        return f"def loss(x): W = [[{b}, 0.5], [-0.25, {c}]]; return sum(tanh(W @ x) ** 2) + {a} * sum(x)"
    if shape == "torch":
        return (f"import torch; x = torch.tensor([{a}, 0.5, {c}], requires_grad=True); "
                f"loss = torch.nn.functional.softplus(x * {b}).sum()")
    if shape == "norm":
        return f"x = [{a}, {c}, 2.5]; y = log(sum(x ** 2) + {b}) - mean(tanh(x))"
    raise ValueError(shape)


SHAPES = {
    "scalar": "scalar `x = 1.3; y = sin(x) * x + 7`",
    "vector": "vector literal, reduction, stop_gradient `x = [a, 1.5, -2]; sum(exp(x - stop_gradient(max(x)))) * k`",
    "def": "matrix product in a def `def loss(x): W = [[..]]; return sum(tanh(W @ x) ** 2) + a * sum(x)` "
           f"(--set x={DEF_X})",
    "torch": "pasted PyTorch loss `x = torch.tensor([...], requires_grad=True); "
             "loss = torch.nn.functional.softplus(x * k).sum()`",
    "norm": "log of a squared norm `x = [a, c, 2.5]; y = log(sum(x ** 2) + b) - mean(tanh(x))`",
}


def gradcli_args(shape: str) -> list[str]:
    extra = ["--set", f"x={DEF_X}"] if shape == "def" else []
    return ["grad", "--lines", "--wrt", "x", "--format", "json", *extra]


# --------------------------------------------------------------------------- the peers

_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _torch_job(shape: str):
    import torch
    F = torch.nn.functional
    x_def = torch.tensor([0.3, -1.2], dtype=torch.float64, requires_grad=True)

    def one(n):
        if shape == "def":
            x = x_def
        else:
            given = [n[0]] if shape == "scalar" else [n[0], n[1], n[2]]
            x = torch.tensor(given[0] if shape == "scalar" else given, dtype=torch.float64, requires_grad=True)
        if shape == "scalar":
            y = torch.sin(x) * x + n[1]
        elif shape == "vector":
            y = torch.exp(x - x.max().detach()).sum() * n[3]
        elif shape == "def":
            w = torch.tensor([[n[0], n[1]], [n[2], n[3]]], dtype=torch.float64)
            y = (torch.tanh(w @ x) ** 2).sum() + n[5] * x.sum()
        elif shape == "torch":
            y = F.softplus(x * n[3]).sum()
        else:
            y = torch.log((x ** n[3]).sum() + n[4]) - torch.tanh(x).mean()
        (g,) = torch.autograd.grad(y, [x])
        return y.item(), g.reshape(-1).tolist()
    return one


def _autograd_job(shape: str):
    import autograd.numpy as anp
    from autograd import value_and_grad
    from autograd.tracer import getval

    def formula(n):
        if shape == "scalar":
            return lambda x: anp.sin(x) * x + n[1]
        if shape == "vector":
            return lambda x: anp.sum(anp.exp(x - getval(anp.max(x)))) * n[3]
        if shape == "def":
            w = anp.array([[n[0], n[1]], [n[2], n[3]]])
            return lambda x: anp.sum(anp.tanh(anp.dot(w, x)) ** 2) + n[5] * anp.sum(x)
        if shape == "torch":
            return lambda x: anp.sum(anp.logaddexp(0.0, x * n[3]))
        return lambda x: anp.log(anp.sum(x ** n[3]) + n[4]) - anp.mean(anp.tanh(x))

    def one(n):
        x = n[0] if shape == "scalar" else anp.array([0.3, -1.2]) if shape == "def" else anp.array(n[:3])
        y, g = value_and_grad(formula(n))(x)
        return float(y), anp.ravel(g).tolist()
    return one


def _numpy_job(shape: str):
    import numpy as np
    x_def = np.array([0.3, -1.2])

    def one(n):
        if shape == "scalar":
            x = n[0]
            return float(np.sin(x) * x + n[1]), [float(np.sin(x) + x * np.cos(x))]
        if shape == "vector":
            x = np.array(n[:3])
            e = np.exp(x - x.max())
            return float(e.sum() * n[3]), (e * n[3]).tolist()
        if shape == "def":
            w = np.array([[n[0], n[1]], [n[2], n[3]]])
            t = np.tanh(w @ x_def)
            return float((t ** 2).sum() + n[5] * x_def.sum()), (w.T @ (2 * t * (1 - t * t)) + n[5]).tolist()
        if shape == "torch":
            z = np.array(n[:3]) * n[3]
            return float(np.logaddexp(0.0, z).sum()), (n[3] / (1 + np.exp(-z))).tolist()
        x = np.array(n[:3])
        s, t = (x * x).sum() + n[4], np.tanh(x)
        return float(np.log(s) - t.mean()), (2 * x / s - (1 - t * t) / 3).tolist()
    return one


def peer(shape: str, who: str) -> None:
    one = {"torch": _torch_job, "autograd": _autograd_job, "numpy": _numpy_job}[who](shape)
    write, findall = sys.stdout.write, _NUMBER.findall
    for text in sys.stdin:
        if text.strip():
            y, g = one([float(v) for v in findall(text)])
            write(f"{y!r}\t{' '.join(map(repr, g))}\n")


# --------------------------------------------------------------------------- the workload

def peer_installed(module: str) -> bool:
    return subprocess.run([PEER_PYTHON, "-c", f"import {module}"], capture_output=True).returncode == 0


def _agree(gradcli: list[str], hand: list[str]) -> bool:
    """gradcli's JSON answers against the hand loop's numbers (rounding apart: 1e-12 relative)."""
    import json

    import numpy as np
    for ours, theirs in zip(gradcli, hand):
        doc = json.loads(ours)
        value = next(iter(doc["outputs"].values()))["value"]
        grad = np.ravel(doc["gradients"]["x"]["value"])
        y, g = theirs.split("\t")
        want = np.array([float(y)] + [float(v) for v in g.split()])
        if not np.allclose(np.concatenate([[value], grad]), want, rtol=1e-12, atol=1e-14):
            return False
    return len(gradcli) == len(hand)


def run(table, o, tmp: str, gradcli: str, paired, process, log) -> None:
    """One row per shape and reference: gradcli's whole process over the median paired ratio."""
    count = 500 if o.quick else 10_000
    me = os.path.abspath(__file__)
    peers = [p for p in ("autograd", "torch") if peer_installed(p)]
    missing = [p for p in ("autograd", "torch") if p not in peers]
    for shape, what in SHAPES.items():
        stdin = "".join(line(shape, k) + "\n" for k in range(count)).encode()
        contenders = {"gradcli": process([gradcli, *gradcli_args(shape)], stdin=stdin, timeout=o.timeout),
                      "hand NumPy": process([PEER_PYTHON, me, "peer", shape, "numpy"], stdin=stdin,
                                            timeout=o.timeout)}
        for p in peers:
            contenders[p] = process([PEER_PYTHON, me, "peer", shape, p], stdin=stdin, timeout=o.timeout)
        log(f"  {count:,} lines: {shape}")
        res = paired(contenders, o.rounds or (1 if o.quick else 3), warm=not o.quick, log=log)
        title = f"{count:,} lines, {what}"
        table.record(title, res)
        note = f" ({', '.join(missing)} not installed)" if missing else ""
        for ref, limit, target in (("autograd", 0.5, "≤ 0.5×"), ("torch", 0.5, "≤ 0.5×"),
                                   ("hand NumPy", 3.0, "≤ 3×")):
            table.compare(f"{title} through `gradcli grad --lines`, vs {ref}{note if ref != 'hand NumPy' else ''}",
                          res, "gradcli", [ref], limit, target)
        sample = "".join(line(shape, k) + "\n" for k in range(50))
        ours = subprocess.run([gradcli, *gradcli_args(shape)], input=sample, capture_output=True, text=True)
        hand = subprocess.run([PEER_PYTHON, me, "peer", shape, "numpy"], input=sample, capture_output=True,
                              text=True)
        same = _agree(ours.stdout.splitlines(), hand.stdout.splitlines())
        table.add(f"{shape}: gradcli's answers vs the hand loop's (50 lines)", "agree" if same else "DIFFER",
                  "—", "—", "rtol 1e-12", "yes" if same else "**no**")


if __name__ == "__main__":
    job, *args = sys.argv[1:]
    if job != "peer":
        raise SystemExit(__doc__)
    peer(*args)
    sys.stdout.flush()
