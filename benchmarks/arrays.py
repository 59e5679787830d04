"""Value and gradient of L = sum(w * softmax(x)) over big arrays, by each contender.

`contender(name, dtype)` gives a function of the loaded inputs (x, w) -> (L, dL/dx) as NumPy
values: gradcli with its numerical checks on (as `gradcli grad` runs them), the hand-written
NumPy VJP, `jax.jit(jax.value_and_grad(...))` (compiled on first call; x64 on for float64) and
PyTorch's autograd. Imports are lazy: only the contender asked for is loaded.
"""
from __future__ import annotations

import os
import sys

import numpy as np

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


def _gradcli(dtype):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from gradcli import api
    from gradcli.autodiff import gradients
    from gradcli.numerics.diagnostics import NumericsChecker
    from gradcli.engine.evaluate import run

    def ours(x, w):
        graph = api.compile_program(PROGRAM, "<bench>", {"x": x, "w": w})
        y = graph.names["L"]
        (gx,) = gradients(graph, [y], [graph.names["x"]])
        checker = NumericsChecker(graph, np, dtype)
        with np.errstate(all="ignore"):
            out = run(graph, [y, gx], dtype=dtype, check=checker)
        return out[y], out[gx]

    return ours


def _jax(dtype):
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def loss(x, w):
        z = x - jax.lax.stop_gradient(jnp.max(x))
        e = jnp.exp(z)
        return jnp.sum(w * (e / jnp.sum(e)))

    compiled = jax.jit(jax.value_and_grad(loss))

    def peer(x, w):
        value, grad = compiled(x, w)
        return np.asarray(value), np.asarray(grad)

    return peer


def _torch(dtype):
    import torch

    def peer(x, w):
        xt = torch.from_numpy(x).requires_grad_()
        loss = (torch.from_numpy(w) * torch.softmax(xt, 0)).sum()
        loss.backward()
        return loss.detach().numpy(), xt.grad.numpy()

    return peer


def contender(name: str, dtype: str):
    if name == "hand":
        return hand_vjp
    return {"gradcli": _gradcli, "jax": _jax, "torch": _torch}[name](dtype)
