"""Half precision: value and gradient of L = sum(w * softmax(x)) over big arrays (arrays.py's
program) in float16 and bfloat16, by gradcli (`--dtype`, checks on, sums in float32) and by
PyTorch in the same type (autograd on CPU tensors of that dtype). Reported, no target: gradcli
computes each op in float32 and rounds (no fused chains in a half type), and the rows say what
that costs. Also reported: each type's gradient against float64 (relative, 2-norm), gradcli's and
PyTorch's, so the speed is read beside the digits each keeps.
"""
from __future__ import annotations

import numpy as np

from arrays import _gradcli as arrays_gradcli
from harness import Rounds, call, installed, paired, seconds


def _gradcli(dtype: str):
    """gradcli's value and gradient in `dtype` (the arrays workload's, run in the half type)."""
    from gradcli.dtypes import numpy_dtype

    return arrays_gradcli(dtype), numpy_dtype(dtype)


def _torch(dtype: str):
    import torch

    kind = {"float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]

    def peer(xt, wt):
        x = xt.detach().requires_grad_()
        z = x - x.max().detach()
        e = torch.exp(z)
        loss = (wt * (e / e.sum())).sum()
        loss.backward()
        return loss.detach(), x.grad

    return peer, kind


def _relative(g, reference) -> float:
    g = np.asarray(g, dtype=np.float64)
    return float(np.linalg.norm(g - reference) / np.linalg.norm(reference))


def half_arrays(table, o, log) -> None:
    """The workload `half` of benchmarks/run.py."""
    n = 1_000_000 if o.quick else 10_000_000
    rng = np.random.default_rng(0)
    x64, w64 = rng.standard_normal(n), rng.standard_normal(n)
    exact = _float64_gradient(x64, w64)
    for dtype in ("float16", "bfloat16"):
        ours, t = _gradcli(dtype)
        x, w = x64.astype(t), w64.astype(t)
        contenders = {"gradcli": call(lambda: ours(x, w))}
        if installed("torch"):
            import torch
            peer, kind = _torch(dtype)
            xt, wt = torch.from_numpy(x64).to(kind), torch.from_numpy(w64).to(kind)
            contenders["torch"] = call(lambda: peer(xt, wt))
        log(f"  half arrays, n = {n:.0e}, {dtype}")
        res: Rounds = paired(contenders, o.rounds or (3 if o.quick else 5), warm=True, log=log)
        what = f"n = {n:.0e} {dtype}: value + gradient of sum(w * softmax(x)), checks on"
        table.record(what, res)
        mine, theirs = res.median("gradcli"), res.median("torch")
        table.add(f"{what}, vs PyTorch autograd in {dtype}", seconds(mine) if mine is not None else "failed",
                  f"torch {seconds(theirs)}" if theirs is not None else res.failed.get("torch", "torch: not installed"),
                  f"{res.ratio('gradcli', 'torch'):.2f}× torch" if mine is not None and theirs is not None else "—",
                  "(reported)", "—")
        table.add(f"{dtype} gradient vs float64 (relative, 2-norm): gradcli", f"{_relative(ours(x, w)[1], exact):.2e}",
                  "—", "—", "(reported)", "—")
        if installed("torch"):
            table.add(f"{dtype} gradient vs float64 (relative, 2-norm): torch",
                      f"{_relative(peer(xt, wt)[1].float().numpy(), exact):.2e}", "—", "—", "(reported)", "—")


def _float64_gradient(x, w):
    s = np.exp(x - x.max())
    s /= s.sum()
    return (w - np.dot(w, s)) * s
