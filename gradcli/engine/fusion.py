"""Elementwise fusion: a chain of elementwise equations over large arrays, evaluated chunk by chunk.

Unfused, `(w / s + c) * e` makes a full-size array per op and reads it back at the next. Fused,
each cache-sized chunk of the inputs goes through the whole chain (and a sum at its end) before
the next chunk is read, so the chain's inner values never exist whole: fewer passes over memory,
fewer fresh arrays (and their page faults). The ops are the same NumPy ufuncs on the same
numbers, so every element is bitwise what the unfused evaluation gives; a fused sum adds
pairwise within each chunk, then pairwise over the chunks' partial sums (NumPy's own sum is
pairwise in blocks too): the two agree within float rounding of a sum.

What fuses is read from the op records: an elementwise op with a `ufunc` (and no kink, whose
check needs its arguments), and a reduction over all axes with a `reduce_ufunc` at a chain's
end. A value joins its consumer's chain when that consumer is its only reader, it is not
fetched and its shape is the chain's (inputs are arrays of that shape, or single numbers).
NumPy only (a backend whose `numpy` flag is set): the others (CuPy, Dask) keep the plain path.

With the numerical checks on (gradcli.numerics.diagnostics.NumericsChecker), each value of the chain that
the checker cannot prove finite from its inputs' bounds gets its square sum accumulated chunk by
chunk while the chunk is in cache (the checker's own pass, folded in). Where any of them is not
finite or comes close to overflowing, the chain is evaluated again unfused with the checker
called after each equation, so what is reported, and where, is exactly the plain path's.
"""
from __future__ import annotations

import math

from gradcli.records import NEW, ValueRecord

# Bytes of one chunk of one array: large enough that a chain's per-chunk ufunc calls cost little,
# small enough that the chunks it holds at once stay near the core (value and gradient of
# sum(w * softmax(x)), n = 1e7 float64, on a 2-core AMD EPYC with 1 MiB of L2 a core: 60 ms with
# 256 KiB chunks, 55 with 512 KiB, 51 with 1 MiB and 2 MiB, 53 with 4 MiB; the hand VJP 51 ms)
CHUNK_BYTES = 1 << 20
# Fewer elements than this: a chain's per-chunk calls cost more than the passes they save
MIN_ELEMENTS = 1 << 16


class Chain(ValueRecord):
    _fields = ("root", "members", "leaves", "riders", "rides_on")
    root: int                 # the value the chain computes (held whole), or the sum ending it
    members: list[int]        # the chain's equations in evaluation order, the root last
    leaves: list[int]         # the values it reads (held whole), each once
    # sums over all of the root's elements (held whole, a chain's root), taken chunk by chunk
    # as the root is written: {reduction's id: its value once computed, else None}
    riders: dict
    rides_on: Chain | None = None  # (a rider's own entry: the chain computing it)

    def __init__(self, root, members, leaves, riders=NEW, rides_on=None):
        self.root = root
        self.members = members
        self.leaves = leaves
        self.riders = {} if riders is NEW else riders
        self.rides_on = rides_on


def _elementwise(graph, i, shapes) -> bool:
    op = graph.equations[i].op
    shape = shapes[i]
    return (op.ufunc is not None and op.elementwise and not op.view and op.kink is None
            and math.prod(shape) >= MIN_ELEMENTS
            and all(shapes[j] == shape or shapes[j] == () for j in graph.equations[i].inputs))


def _reduces_all(graph, i, shapes) -> bool:
    eq = graph.equations[i]
    if eq.op.reduce_ufunc is None or len(eq.inputs) != 1:
        return False
    axis = eq.params.get("axis")
    ndim = len(shapes[eq.inputs[0]])
    return axis is None or sorted(a % ndim for a in ((axis,) if isinstance(axis, int) else axis)) == list(range(ndim))


def plan(graph, order, last_use, keep, overrides, backend) -> tuple[dict[int, Chain], set[int]]:
    """The chains of the evaluation `order`: {root: Chain}, and the equations evaluated inside
    a chain rather than on their own (none unless `backend.numpy`: a chain runs NumPy's ufuncs
    on host arrays). `last_use` is updated in place: a value read inside a chain is read when
    the chain's root is evaluated, so it lives at least until then."""
    if not backend.numpy:
        return {}, set()
    shapes = graph.shapes
    if not any(len(shapes[i]) and math.prod(shapes[i]) >= MIN_ELEMENTS for i in order):
        return {}, set()
    equations = graph.equations
    reads: dict[int, int] = {}
    for i in order:
        if i not in overrides:
            for j in equations[i].inputs:
                reads[j] = reads.get(j, 0) + 1
    inlined: set[int] = set()
    for i in order:
        eq = equations[i]
        if (i in keep or i in overrides or not eq.inputs or reads.get(i) != 1
                or not _elementwise(graph, i, shapes)):
            continue
        c = last_use.get(i)
        if c is None or c in overrides:
            continue
        if _elementwise(graph, c, shapes) and shapes[c] == shapes[i] or _reduces_all(graph, c, shapes):
            inlined.add(i)
    if not inlined:
        return {}, set()
    root_of: dict[int, int] = {}
    for i in reversed(order):  # consumers come later: their root is known first
        if i in inlined:
            c = last_use[i]
            root_of[i] = root_of.get(c, c)
    chains: dict[int, Chain] = {}
    for i in order:
        if i in inlined:
            r = root_of[i]
            chains.setdefault(r, Chain(r, [], [])).members.append(i)
    for r, chain in chains.items():
        chain.members.append(r)
        inside = set(chain.members)
        seen: set[int] = set()
        for k in chain.members:
            for j in equations[k].inputs:
                if j not in inside and j not in seen:
                    seen.add(j)
                    chain.leaves.append(j)
                    if last_use[j] < r:  # (ids are in evaluation order)
                        last_use[j] = r
    for q in order:  # a sum of a chain's root: taken in the chain's pass, not one of its own
        eq = equations[q]
        if (q not in overrides and len(eq.inputs) == 1 and eq.inputs[0] in chains
                and equations[eq.inputs[0]].op.ufunc is not None and _reduces_all(graph, q, shapes)):
            on = chains[eq.inputs[0]]
            on.riders[q] = None
            chains[q] = Chain(q, [q], [on.root], rides_on=on)
    return chains, inlined


def evaluate(chain: Chain, graph, env: dict, dtype, out, check, overrides, rerun):
    """The chain's root value, from the leaves' values in `env`. `out`: a buffer of the root's
    shape that may be written (it may be a leaf's, dead after this), or None. `check`: the
    numerical checker, or None; any other callable gets the unfused evaluation. `overrides`:
    the run's, to compute a leaf again where its buffer was written over and the chain must
    then be evaluated unfused (a rare path, as the checker's own for an input written over);
    `rerun(graph, ids, dtype=, xp=, overrides=)` is the evaluator that computes them (handed in:
    the engine's loop calls fusion, never the other way).

    One function, longer than the size rule's 80 lines, on purpose: the chunk loop and the
    schedule it runs are built together, kept whole for `benchmarks/run.py --only arrays`
    (value and gradient of sum(w * softmax(x)) at n = 1e7, float64 and float32, against the
    hand-written NumPy VJP)."""
    import numpy as np

    equations = graph.equations
    shapes = graph.shapes
    root = chain.root
    if chain.rides_on is not None:  # a sum taken in its chain's pass (unless that went unfused)
        value = chain.rides_on.riders.get(root)
        if value is None:
            return _unfused(chain, graph, env, dtype, check)
        if check is not None:
            check(root, equations[root], value, [env[chain.leaves[0]]])
        return value
    reducing = equations[root].op.ufunc is None
    leaves = [env[j] for j in chain.leaves]
    if check is not None and not hasattr(check, "clean_by_square_sum"):
        return _unfused(chain, graph, env, dtype, check)
    full = [a.ndim > 0 for a in leaves]
    if any(f and not a.flags.c_contiguous for f, a in zip(full, leaves)):
        return _unfused(chain, graph, env, dtype, check)
    # which values need their square sum (the check the checker cannot skip)
    watched: list[int] = []
    if check is not None:
        if not check.origins.keys().isdisjoint(chain.leaves):
            return _unfused(chain, graph, env, dtype, check)  # non-finite numbers come in: the careful path
        known = dict(zip(chain.leaves, leaves))
        for k in chain.members[:-1] if reducing else chain.members:
            eq = equations[k]
            args = [known[j] for j in eq.inputs] if all(j in known for j in eq.inputs) else None
            if not check.proven(k, eq, shapes[k], args):
                watched.append(k)
    n = math.prod(shapes[chain.members[0]])
    flat = [a.reshape(-1) if f else a for f, a in zip(full, leaves)]
    if not reducing and out is None:
        out = np.empty(shapes[root], dtype=dtype)
    out_flat = None if reducing else out.reshape(-1)

    # a static schedule: each step's ufunc, its arguments (a leaf, or a chunk buffer) and its
    # buffer; a step writes into the buffer of an argument it consumes where it has one
    slot_of: dict[int, int] = {}
    free: list[int] = []
    slots = 0
    leaf_index = {j: p for p, j in enumerate(chain.leaves)}
    steps = []
    members = chain.members[:-1] if reducing else chain.members
    for k in members:
        eq = equations[k]
        args = []
        target = None
        for j in eq.inputs:
            if j in slot_of:
                s = slot_of.pop(j)
                args.append((1, s))
                if target is None:
                    target = s
                else:
                    free.append(s)
            else:
                args.append((0, leaf_index[j]))
        if k != root:
            if target is None:
                if free:
                    target = free.pop()
                else:
                    target = slots
                    slots += 1
            slot_of[k] = target
        elif target is not None:
            free.append(target)
        steps.append((getattr(np, eq.op.ufunc), args, -1 if k == root else target,
                      k if k in watched and k != root else None))
    size = max(1, CHUNK_BYTES // np.dtype(dtype).itemsize)
    buffers = [np.empty(size, dtype=dtype) for _ in range(slots)]
    square_sums = dict.fromkeys(watched, 0.0)
    partials = []
    last = slot_of[chain.members[-2]] if reducing else None
    reduce = getattr(np, equations[root].op.reduce_ufunc).reduce if reducing else None
    riders = [(q, getattr(np, equations[q].op.reduce_ufunc).reduce, []) for q in chain.riders]
    for a in range(0, n, size):
        b = min(n, a + size)
        chunk = [v[a:b] if f else v for f, v in zip(full, flat)]
        bufs = buffers if b - a == size else [buf[:b - a] for buf in buffers]
        for ufunc, args, target, watch in steps:
            result = out_flat[a:b] if target < 0 else bufs[target]
            ufunc(*[bufs[p] if kind else chunk[p] for kind, p in args], out=result)
            if watch is not None:  # (einsum's own loop: a BLAS call per chunk may wake its threads)
                square_sums[watch] += float(np.einsum("i,i->", result, result))
        if reducing:
            partials.append(reduce(bufs[last]))
        for q, ride, parts in riders:
            parts.append(ride(out_flat[a:b]))
    if reducing:
        eq = equations[root]
        value = np.asarray(reduce(np.asarray(partials, dtype=dtype)), dtype=dtype).reshape(shapes[root])
        if check is not None and not check.proven(root, eq, shapes[root], None):
            number = float(value)
            square_sums[root] = number * number  # (inf past the range, not an OverflowError)
            watched.append(root)
    else:
        value = out
        if root in watched:  # held whole: one pass over it, as the checker's own
            square_sums[root] = check._square_sum(root, value)
    for k in watched:
        if not check.clean_by_square_sum(k, square_sums[k]):
            for m in chain.members:
                check.bound.pop(m, None)
            clobbered = [j for j, a in zip(chain.leaves, leaves) if a is out]
            if clobbered:
                env = {**env, **rerun(graph, clobbered, dtype=str(dtype), xp=np, overrides=overrides)}
            return _unfused(chain, graph, env, dtype, check)
    for q, ride, parts in riders:
        chain.riders[q] = np.asarray(ride(np.asarray(parts, dtype=dtype)), dtype=dtype).reshape(shapes[q])
    return value


def _unfused(chain: Chain, graph, env: dict, dtype, check):
    """The chain evaluated equation by equation, as the plain evaluation does, the checker
    called after each."""
    import numpy as np

    equations = graph.equations
    values = {j: env[j] for j in chain.leaves}
    for k in chain.members:
        eq = equations[k]
        args = [values[j] for j in eq.inputs]
        value = eq.op.forward(np, *args, **eq.params)
        if value.dtype != dtype:
            value = value.astype(dtype)
        values[k] = value
        if check is not None:
            check(k, eq, value, args)
        for j in eq.inputs:
            if j != chain.root and j in values and j not in env:  # a chain value, read once
                del values[j]
        args = value = None
    return values[chain.root]
