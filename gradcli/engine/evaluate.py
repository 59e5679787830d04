"""Evaluation: a loop over the equations that the requested values need.

Values are freed as soon as their last use is past, so peak memory follows the live set, not
the program's length. Works over any backend (gradcli/engine/backends.py: NumPy, CuPy, Dask, a
namespace of the array API standard), reading what each allows from its flags.
"""
from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Callable

from gradcli.dtypes import HALF, check as check_dtype
from gradcli.errors import GradcliError, OptionError
from gradcli.ir import Graph
from gradcli.limits import describe_size
from gradcli.ops import DataError
from gradcli.engine import fusion
from gradcli.engine.backends import backend_for
from gradcli.engine.half import Half, refuse as refuse_in_half
from gradcli.engine import mixed as mixed_types


def needed_equations(graph: Graph, fetch: list[int], given=(), last_use: dict | None = None) -> list[int]:
    """The equations the fetched values depend on, in order (not looking past `given`). A dict
    given as `last_use` is filled in the same pass with each value's last reader in that order
    (given values read none): walking backwards, an equation is the last reader of the inputs
    that no later one read."""
    if not fetch:
        return []
    needed = bytearray(max(fetch) + 1)
    for f in fetch:
        needed[f] = 1
    equations = graph.equations
    note_reader = last_use.setdefault if last_use is not None else None
    for i in range(len(needed) - 1, -1, -1):
        if needed[i] and i not in given:
            for j in equations[i].inputs:
                needed[j] = 1
                if note_reader is not None:
                    note_reader(j, i)
    return list(itertools.compress(range(len(needed)), needed))


# The ufuncs whose result on NumPy scalars is computed by the scalars' own arithmetic: the
# correctly rounded IEEE operations, as the ufuncs compute them (not the transcendental
# functions: NumPy's own implementations of those may round differently from the C library's)
SCALAR_OPERATORS = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
                    "divide": operator.truediv, "negative": operator.neg}


def run(graph: Graph, fetch: list[int], *, dtype: str = "float64", xp=None,
        overrides: dict[int, object] | None = None,
        check: Callable | None = None, backend=None, accumulate: str = "float32") -> dict[int, object]:
    """Evaluate the values `fetch`; returns {id: array} in the namespace `xp`.

    `overrides` gives the values of equations by id (inputs, or any value to hold fixed); `check(i, eq, value,
    args)` is called after each equation (the numerical diagnostics); args is None where the
    result was written into an input's buffer.

    Ownership: values are written once. Every returned array belongs to the caller: none is
    (or views) an override or a constant of the graph, and none is a buffer this run recycles,
    so a caller may reuse its override buffers between runs (Jacobian rows, checks, --lines).

    `backend` (gradcli/engine/backends.py) is asked what it allows (`in_place`, `lazy`,
    `scalars`, `numpy`); `xp`, a namespace, stands for its backend (`backend_for`).

    In a half type (float16, bfloat16, float8_*) every op computes in float32 and rounds its
    result (gradcli/engine/half.py); `accumulate` "same" makes its sums accumulate in the type.

    One function, longer than the size rule's 80 lines, on purpose: it is the loop every
    equation goes through, kept whole (no call per equation, locals not attributes) for
    `benchmarks/run.py --only deep` (100,000 equations of numbers, where the loop's own cost
    per equation is what is measured; `--only terms` likewise), and `--only arrays`."""
    check_dtype(dtype)
    if backend is None:
        backend = backend_for(xp)
    xp = backend.xp
    in_place = backend.in_place
    lazy = backend.lazy
    overrides = overrides or {}
    last_use: dict[int, int] = {}
    order = needed_equations(graph, fetch, overrides, last_use)
    half = None
    if dtype in HALF:  # computed op by op in float32, rounded: no buffer written in place, no scalar path
        refuse_in_half(graph, order, dtype)
        half, in_place = Half(dtype, accumulate), False
    mixed = None
    types = graph.dtypes is not None and mixed_types.effective(graph, order, dtype)
    if types:  # the program's casts: each value in its own type, op by op (gradcli/engine/mixed.py)
        mixed_types.refusal(graph, types, backend)
        mixed, in_place = mixed_types.Mixed(types, dtype, accumulate, graph.accumulates_in_type), False
    dtype = backend.dtype(dtype)  # compared with each result's: a dtype object, not its name
    equations = graph.equations
    keep = set(fetch)
    env: dict[int, object] = {}
    # Buffers this run allocated and that no view shares: an elementwise op may write its
    # result into one whose last use it is (no new allocation, a smaller peak).
    owned: set[int] = set()
    # Dead owned buffers, by (shape, dtype): reused as outputs (a fresh array costs page faults).
    pool: dict[tuple, list] = {}
    # Values that may share memory with arrays this run does not own (an override the caller
    # may reuse for its next run, a constant of the graph): copied before they are returned.
    borrowed: set[int] = set()
    shapes = graph.shapes
    # Numbers (0-d values) on NumPy are held as NumPy scalars: +, -, *, / and negation of two
    # scalars of the dtype are the same IEEE operations as the ufuncs' (rounded in the same
    # dtype), without a ufunc call's cost (tests/engine/test_scalar_path.py compares them bit for bit).
    scalar = dtype.type if backend.scalars and half is None and mixed is None else None
    scalar_operators = getattr(backend, "operators", SCALAR_OPERATORS) if scalar is not None else {}
    chains, inlined = {}, ()
    # a chain writes its chunks into buffers it owns, and needs arrays (a program of numbers has none)
    if len(order) > 1 and in_place and any(map(shapes.__getitem__, order)):
        chains, inlined = fusion.plan(graph, order, last_use, keep, overrides, backend)
    # large inputs whose check a chain takes from the facts of its chunks (no pass of their own)
    deferred = {j for c in chains.values() for j in c.deferred} if check is not None and chains else ()
    for f in keep:  # (after the plan, which reads them) a fetched value is never freed nor written over
        last_use.pop(f, None)
    asarray = backend.asarray
    plain = not lazy and mixed is None and half is None  # (each op's forward, in the dtype: the common run)
    for i in order:
        if i in inlined:
            continue  # evaluated inside its chain, at the chain's root
        eq = equations[i]
        op = eq.op
        inputs = eq.inputs
        chain = out = None
        if not inputs or i in overrides:  # a source (constant, input), or a value given
            value = overrides.get(i)
            if value is None:
                value = eq.params["value"]
            value = asarray(value, dtype)
            if scalar is not None and type(value) is not scalar and value.ndim == 0 and i not in keep:
                value = value[()]  # (a copy: no buffer of the caller's or the graph's is held)
            borrowed.add(i)
            args = inputs = ()
        else:
            ufunc = op.ufunc
            if chains:
                chain = chains.get(i)
                if chain is not None:
                    inputs = chain.leaves
            arity = len(inputs)
            if chain is not None:
                args = ()  # (the chain reads its leaves itself)
            elif arity == 1:  # (the usual one or two read by hand: a map and its list cost twice as much)
                args = [env[inputs[0]]]
            elif arity == 2:
                args = [env[inputs[0]], env[inputs[1]]]
            else:
                args = list(map(env.__getitem__, inputs))
            if shapes[i] and in_place and ufunc is not None:  # (a number is not worth a buffer)
                out = _buffer_to_write(i, inputs, shapes[i], dtype, env, owned, last_use, pool)
            try:
                if chain is not None:
                    value = fusion.evaluate(chain, graph, env, dtype, out, check, overrides, run,
                                            backend.chunk_threads())
                elif ufunc in scalar_operators and type(args[0]) is scalar and type(args[-1]) is scalar:
                    value = scalar_operators[ufunc](*args)  # (two numbers: never written into a buffer)
                elif out is not None:
                    value = getattr(xp, ufunc)(*args, out=out)
                elif plain:
                    value = op.forward(xp, *args, **eq.params)
                    # (a scalar of the dtype's type is of the dtype: no dtype to compare)
                    if type(value) is not scalar and value.dtype is not dtype and value.dtype != dtype:
                        value = value.astype(dtype)
                elif lazy:
                    value = _lazy_forward(backend, graph, i, args, dtype)
                elif mixed is not None:
                    value = mixed.forward(i, op, args, eq.params)
                else:
                    value = half.forward(op, args, eq.params)
            except DataError as exc:  # the op cannot compute on these values: the user's data
                raise GradcliError(f"{eq.label or op.name}: {exc}", eq.pos, graph.source) from None
            except MemoryError:
                raise OptionError(f"out of memory computing a {graph.shapes[i]} array of {dtype} here; "
                                  "lower {option} to be stopped before starting, or use smaller inputs",
                                  "max_memory", eq.pos, graph.source) from None
            if op.view:
                owned.difference_update(eq.inputs)  # the result may share an input's memory
                if not borrowed.isdisjoint(eq.inputs):
                    borrowed.add(i)
            elif type(value) is not scalar and in_place and ufunc is not None and getattr(value, "ndim", 0):
                owned.add(i)
        env[i] = value
        if check is not None and chain is None and i not in deferred:  # (a chain checks its values itself)
            # an input overwritten in place is no longer there to inspect: say so
            clobbered = out is not None and any(out is a for a in args)
            check(i, eq, value, None if clobbered else args)
        for j in inputs:
            if last_use.get(j) == i:
                dead = env.pop(j, None)
                if j in owned and dead is not None and dead is not value and getattr(dead, "ndim", 0):
                    owned.discard(j)
                    pool.setdefault((dead.shape, dead.dtype), []).append(dead)
        dead = args = None  # not held into the next operation's allocation (a 64 MiB copy too many)
    # Values are written once: what is returned is the caller's own, never a buffer that is
    # reused (the Jacobian's seed is rewritten for every row) or part of the graph.
    if mixed is not None:
        return {f: mixed.finish(env[f]) for f in fetch}
    if not in_place:  # nothing is written twice: no copy needed
        return {f: env[f] for f in fetch}
    return {f: env[f].copy() if f in borrowed and hasattr(env[f], "copy") else env[f] for f in fetch}


def _buffer_to_write(i, inputs, shape, dtype, env, owned, last_use, pool):
    """A buffer that value i may be written into: an input's that this run owns and that dies
    here, or a dead one of the same shape and dtype from the pool; None where there is none."""
    for j in inputs:
        if j in owned and last_use.get(j) == i:
            candidate = env[j]
            if candidate.shape == shape and candidate.ndim and candidate.dtype == dtype:
                return candidate
    if pool.get((shape, dtype)):
        return pool[(shape, dtype)].pop()
    return None


def _lazy_forward(backend, graph: Graph, i: int, args, dtype):
    """An op on a lazy backend: its forward on the backend's namespace (chunk by chunk), or, for
    an op the namespace lacks, NumPy's forward on the whole arrays as one task: refused here,
    before anything is computed, where those whole arrays would not fit in the memory limit."""
    eq = graph.equations[i]
    op = eq.op
    try:
        value = op.forward(backend.xp, *args, **eq.params)
        if tuple(value.shape) == tuple(graph.shapes[i]) and not _has_unknown_chunks(value):
            value = value if value.dtype == dtype else value.astype(dtype)
            # an op may make one chunk of it all (broadcast_to of a number): cut it to the chunk size
            if value.ndim and math.prod(map(max, value.chunks)) * value.dtype.itemsize > 2 * backend.chunk_bytes:
                value = value.rechunk(backend.chunks_for(value.shape, value.dtype.itemsize))
            return value
    except DataError:
        raise
    except Exception:  # the namespace lacks what this op needs: computed whole instead
        pass
    import dask
    import dask.array as da
    import numpy as np

    def whole(*arrays):
        try:
            out = op.forward(np, *arrays, **eq.params)
        except DataError as exc:
            raise GradcliError(f"{eq.label or op.name}: {exc}", eq.pos, graph.source) from None
        return np.asarray(out, dtype=dtype)

    shape = tuple(graph.shapes[i])
    whole_bytes = (sum(math.prod(a.shape) for a in args) + math.prod(shape)) * np.dtype(dtype).itemsize
    if whole_bytes > backend.max_memory:
        raise OptionError(f"{eq.label or op.name} has no chunked form on --device dask: it would be computed on "
                          f"whole arrays, {describe_size(whole_bytes)} here, more than the {describe_size(backend.max_memory)} "
                          "allowed; raise the limit with {option} if the machine has it, or write the program "
                          "with operations that work chunk by chunk", "max_memory", eq.pos, graph.source)
    task = dask.delayed(whole, pure=True)(*args)
    return da.from_delayed(task, shape, dtype=dtype).rechunk(backend.chunks_for(shape, np.dtype(dtype).itemsize) or ())


def _has_unknown_chunks(value) -> bool:
    return any(math.isnan(c) for cs in getattr(value, "chunks", ()) for c in cs)
