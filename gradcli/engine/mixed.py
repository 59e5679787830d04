"""A program that casts (`x.half()`, `x.astype(np.float16)`): each value computed in its own type,
as its library computes it (the types: gradcli/ops/casts.py, `graph.dtypes`).

Each operation reads its arguments in the type it computes in, computes and rounds its result
to its type once: a half type's (float16, bfloat16, float8_*) as gradcli/engine/half.py
computes a whole run of that type (in float32, rounded), float32 and float64 in themselves.
A cast rounds its argument to its type directly, as `astype` does. Values are held in their
types; what a run returns is in the run's type (which holds every value's numbers: a type wider
than the run's is the run's, casts.capped).

Only on NumPy: the in-place buffers, the fused chains, Dask's chunks and CuPy know one type per
run, so a program whose casts take effect is refused on another device (`refusal`).
"""
from __future__ import annotations

import numpy as np

from gradcli.dtypes import HALF, numpy_dtype
from gradcli.engine.backends import ScalarBackend
from gradcli.engine.half import Half
from gradcli.errors import GradcliError, OptionError
from gradcli.ops import scalar as numbers
from gradcli.ops.casts import capped


def effective(graph, order, run: str) -> dict[int, str] | None:
    """{equation id: its type} for the equations of `order` whose type is not the run's, or None
    where there is none (the program's casts are all to the run's type or wider: one type)."""
    dtypes = graph.dtypes
    if not dtypes:
        return None
    found = {}
    for i in order:
        name = dtypes.get(i)
        if name is None:
            continue
        kind = capped(name, run)
        if kind is None:
            eq = graph.equations[i]
            raise GradcliError(f"{eq.label}: a value of type {name} in a --dtype {run} run: neither type holds "
                               f"the other's numbers; run with --dtype float64 (the default) to compute the "
                               f"program's own types", eq.pos, graph.source)
        if kind != run:
            found[i] = kind
    return found or None


def refusal(graph, types: dict, backend) -> None:
    """OptionError where `backend` cannot compute values of several types (all but NumPy)."""
    if backend.numpy and not backend.lazy:
        return
    if isinstance(backend, ScalarBackend):  # (the numbers-only attempt: the command starts over on NumPy)
        raise numbers.NeedsArrays("a program's casts")
    first = min(types)
    cast = next((i for i in sorted(types) if graph.equations[i].op.name == "cast"), first)
    eq = graph.equations[cast]
    raise OptionError(f"{eq.label}: the program computes in {types[cast]} from here, which {{option}} "
                      f"{backend.name} does not (one type per run there): run on --device cpu, or give the "
                      f"whole run one type with --dtype {types[cast]}", "device", eq.pos, graph.source)


class Mixed:
    """How one run computes a program whose values have several types: `forward(i, op, args,
    params)` -> value i in its type; `finish(value)` -> a returned value in the run's type."""

    def __init__(self, types: dict, run: str, accumulate: str = "float32", in_type=frozenset()):
        self.types = types
        self.in_type = in_type  # the equations whose sums add in their own type (NumPy's cumsum)
        self.run = numpy_dtype(run)
        self.run_name = run
        self.accumulate = accumulate
        self.halves: dict[tuple, Half] = {}  # (type, accumulate) -> its Half

    def forward(self, i: int, op, args, params):
        name = self.types.get(i, self.run_name)
        if op.name == "cast":  # rounded once, from the argument's own type
            return np.asarray(args[0]).astype(numpy_dtype(name))
        if name in HALF:
            accumulate = "same" if i in self.in_type else self.accumulate
            half = self.halves.get((name, accumulate))
            if half is None:
                half = self.halves[name, accumulate] = Half(name, accumulate)
            return half.forward(op, args, params)
        dtype = numpy_dtype(name)
        args = [a.astype(dtype) if getattr(a, "dtype", dtype) != dtype else a for a in args]
        return np.asarray(op.forward(np, *args, **params)).astype(dtype, copy=False)

    def finish(self, value):
        return value if getattr(value, "dtype", None) == self.run else np.asarray(value).astype(self.run)
