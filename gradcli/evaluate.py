"""Evaluation: a loop over the equations that the requested values need.

Values are freed as soon as their last use is past, so peak memory follows the live set, not
the program's length. Works over any NumPy-like namespace `xp` (NumPy, CuPy).
"""
from __future__ import annotations

from typing import Callable

from .errors import GradcliError
from .graph import Graph

DTYPES = ("float64", "float32")


def array_namespace(device: str):
    """NumPy for `cpu`; CuPy for `cuda`, with a clear error when it cannot be used."""
    if device == "cpu":
        import numpy
        return numpy
    if device == "cuda":
        try:
            import cupy
        except Exception as exc:  # ImportError, or a CuPy built for another CUDA
            raise GradcliError(f"--device cuda needs CuPy and an NVIDIA GPU, but CuPy cannot be imported "
                               f"({type(exc).__name__}: {exc}); install cupy-cuda12x, or use --device cpu") from None
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:
            raise GradcliError(f"--device cuda: no usable CUDA GPU ({exc}); use --device cpu") from None
        if count < 1:
            raise GradcliError("--device cuda: no CUDA GPU is present; use --device cpu")
        return cupy
    raise GradcliError(f"unknown device '{device}': use cpu or cuda")


def needed_equations(graph: Graph, fetch: list[int]) -> list[int]:
    """The equations the fetched values depend on, in order."""
    if not fetch:
        return []
    needed = bytearray(max(fetch) + 1)
    for f in fetch:
        needed[f] = 1
    equations = graph.equations
    for i in range(len(needed) - 1, -1, -1):
        if needed[i]:
            for j in equations[i].inputs:
                needed[j] = 1
    return [i for i in range(len(needed)) if needed[i]]


def run(graph: Graph, fetch: list[int], *, dtype: str = "float64", xp=None,
        overrides: dict[int, object] | None = None,
        check: Callable | None = None) -> dict[int, object]:
    """Evaluate the values `fetch`; returns {id: array} in the namespace `xp`.

    `overrides` replaces the values of source equations (inputs) by id; `check(i, eq, value,
    args)` is called after each equation (the numerical diagnostics); args is None where the
    result was written into an input's buffer."""
    if dtype not in DTYPES:
        raise GradcliError(f"unknown dtype '{dtype}': use float64 or float32")
    if xp is None:
        import numpy as xp
    order = needed_equations(graph, fetch)
    last_use: dict[int, int] = {}
    equations = graph.equations
    for i in order:
        for j in equations[i].inputs:
            last_use[j] = i
    keep = set(fetch)
    env: dict[int, object] = {}
    overrides = overrides or {}
    # Buffers this run allocated and that no view shares: an elementwise op may write its
    # result into one whose last use it is (no new allocation, a smaller peak).
    owned: set[int] = set()
    shapes = graph.shapes
    for i in order:
        eq = equations[i]
        op = eq.op
        if not eq.inputs:  # a source: constant or input
            value = overrides.get(i)
            if value is None:
                value = eq.params["value"]
            value = xp.asarray(value, dtype=dtype)
            args = ()
            out = None
        else:
            args = [env[j] for j in eq.inputs]
            out = None
            if op.ufunc is not None:
                for j in eq.inputs:
                    if j in owned and last_use[j] == i and j not in keep:
                        candidate = env[j]
                        if candidate.shape == shapes[i] and candidate.ndim and candidate.dtype == dtype:
                            out = candidate
                            break
            if out is not None:
                value = getattr(xp, op.ufunc)(*args, out=out)
            else:
                value = op.forward(xp, *args, **eq.params)
                if value.dtype != dtype:
                    value = value.astype(dtype)
            if op.view:
                owned.difference_update(eq.inputs)  # the result may share an input's memory
            elif op.ufunc is not None and getattr(value, "ndim", 0):
                owned.add(i)
        env[i] = value
        if check is not None:
            # an input overwritten in place is no longer there to inspect: say so
            check(i, eq, value, args if out is None else None)
        for j in eq.inputs:
            if last_use.get(j) == i and j not in keep:
                env.pop(j, None)
    return {f: env[f] for f in fetch}
