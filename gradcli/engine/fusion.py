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

A maximum or minimum over all of a large array (exact: chunk by chunk is the same number) is a
chain of its own, with no elementwise step.

With the numerical checks on (gradcli.numerics.diagnostics.NumericsChecker), the facts the
checker reads are taken inside the chunks that compute the values, never in passes of their own:
each value of the chain that the checker cannot prove finite from its inputs' bounds, and each
large input whose first reader is the chain (its check deferred to it: `Chain.deferred`), gets
its largest and smallest element per chunk while the chunk is in cache (NaN where the chunk
holds one). Where any of them is not finite or comes close to overflowing, the chain is
evaluated again unfused with the checker called after each equation, so what is reported, and
where, is exactly the plain path's.

Chunks are computed on the backend's threads (`Backend.chunk_threads`; NumPy's ufuncs release
the GIL), each thread with its own chunk buffers. The chunking does not depend on the thread
count, and every chunk's partial sums and facts are kept by chunk and combined in chunk order,
so the numbers are the same bit for bit on one thread or several.
"""
from __future__ import annotations

import itertools
import math
import os

from gradcli.records import NEW, ValueRecord

# Bytes of one chunk of one array: large enough that a chain's per-chunk ufunc calls cost little,
# small enough that the chunks it holds at once stay near the core (value and gradient of
# sum(w * softmax(x)), n = 1e7 float64, on a 2-core AMD EPYC with 1 MiB of L2 a core: 60 ms with
# 256 KiB chunks, 55 with 512 KiB, 51 with 1 MiB and 2 MiB, 53 with 4 MiB; the hand VJP 51 ms)
CHUNK_BYTES = 1 << 20
# Fewer elements than this: a chain's per-chunk calls cost more than the passes they save
MIN_ELEMENTS = 1 << 16
# Chunk buffers one thread may hold (the memory guard counts this many per thread); a chain
# needing more runs on fewer threads
SCRATCH_CHUNKS = 4
# Reductions whose result is the same number whether taken whole or chunk by chunk (no rounding)
EXACT_REDUCTIONS = ("maximum", "minimum")


class Chain(ValueRecord):
    _fields = ("root", "members", "leaves", "riders", "rides_on", "deferred")
    root: int                 # the value the chain computes (held whole), or the sum ending it
    members: list[int]        # the chain's equations in evaluation order, the root last
    leaves: list[int]         # the values it reads (held whole), each once
    # sums over all of the root's elements (held whole, a chain's root), taken chunk by chunk
    # as the root is written: {reduction's id: its value once computed, else None}
    riders: dict
    rides_on: Chain | None = None  # (a rider's own entry: the chain computing it)
    # large inputs (sources) whose numerical check this chain takes, from the facts of their
    # chunks: the chain is their first reader and nothing is checked between them and it
    deferred: list[int]

    def __init__(self, root, members, leaves, riders=NEW, rides_on=None, deferred=NEW):
        self.root = root
        self.members = members
        self.leaves = leaves
        self.riders = {} if riders is NEW else riders
        self.rides_on = rides_on
        self.deferred = [] if deferred is NEW else deferred


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
    for i in order:  # a large elementwise op on its own: a chain of one (its chunks on the threads)
        eq = equations[i]
        if (i not in chains and i not in inlined and i not in overrides and eq.inputs
                and _elementwise(graph, i, shapes)):
            chains[i] = Chain(i, [i], list(dict.fromkeys(eq.inputs)))
    for q in order:  # a sum of a chain's root: taken in the chain's pass, not one of its own
        eq = equations[q]
        if (q not in overrides and len(eq.inputs) == 1 and eq.inputs[0] in chains
                and equations[eq.inputs[0]].op.ufunc is not None and _reduces_all(graph, q, shapes)):
            on = chains[eq.inputs[0]]
            on.riders[q] = None
            chains[q] = Chain(q, [q], [on.root], rides_on=on)
    _exact_reductions(graph, order, chains, inlined, overrides)
    _defer_checks(graph, order, chains, inlined, overrides)
    return chains, inlined


def _exact_reductions(graph, order, chains, inlined, overrides) -> None:
    """A maximum or minimum over all of a large value that is no chain's: a chain of its own
    (the same number chunk by chunk, computed on the threads, and its input's facts taken in it)."""
    equations, shapes = graph.equations, graph.shapes
    for q in order:
        eq = equations[q]
        if (q in chains or q in inlined or q in overrides or eq.op.reduce_ufunc not in EXACT_REDUCTIONS
                or len(eq.inputs) != 1 or not _reduces_all(graph, q, shapes)):
            continue
        j = eq.inputs[0]
        if j not in inlined and len(shapes[j]) and math.prod(shapes[j]) >= MIN_ELEMENTS:
            chains[q] = Chain(q, [q], [j])


def _defer_checks(graph, order, chains, inlined, overrides) -> None:
    """Each large source (an input, a constant, a value given) whose first reader is a chain: its
    check is the chain's (`Chain.deferred`), from the facts of its chunks, so no pass of its own
    is made over it. Nothing checked before the chain reads it; a diagnostic found there comes
    after those of equations checked between, and the checker's `finish` puts them back in the
    evaluation's order (as for a chain evaluated unfused)."""
    equations, shapes = graph.equations, graph.shapes
    root_of = {k: r for r, chain in chains.items() if chain.rides_on is None for k in chain.members}
    first: dict[int, int] = {}  # source -> when it is first read (a chain's members at its root)
    for i in order:
        if i not in overrides:
            at = root_of.get(i, i) if i in inlined else i
            for j in equations[i].inputs:
                if at < first.get(j, at + 1):
                    first[j] = at
    for j in order:
        chain = chains.get(first.get(j))
        if (chain is not None and chain.rides_on is None and (not equations[j].inputs or j in overrides)
                and len(shapes[j]) and math.prod(shapes[j]) >= MIN_ELEMENTS):
            chain.deferred.append(j)


def evaluate(chain: Chain, graph, env: dict, dtype, out, check, overrides, rerun, threads: int = 1):
    """The chain's root value, from the leaves' values in `env`. `out`: a buffer of the root's
    shape that may be written (it may be a leaf's, dead after this), or None. `check`: the
    numerical checker, or None; any other callable gets the unfused evaluation. `overrides`:
    the run's, to compute a leaf again where its buffer was written over and the chain must
    then be evaluated unfused (a rare path, as the checker's own for an input written over);
    `rerun(graph, ids, dtype=, xp=, overrides=)` is the evaluator that computes them (handed in:
    the engine's loop calls fusion, never the other way). `threads`: how many threads may
    compute chunks at once (the backend's `chunk_threads()`).

    The chunk loop it runs is `_chunk_work`'s, kept whole for `benchmarks/run.py --only arrays`."""
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
    root_op = equations[root].op
    reducing = root_op.ufunc is None
    leaves = [env[j] for j in chain.leaves]
    full = [a.ndim > 0 for a in leaves]
    if check is not None and (not hasattr(check, "clean_by_magnitude")
                              or root_op.kink is not None and root in check.differentiated):
        return _unfused(chain, graph, env, dtype, check)  # (a kink's check counts ties on the whole input)
    if any(f and not a.flags.c_contiguous for f, a in zip(full, leaves)):
        return _unfused(chain, graph, env, dtype, check)
    watched, speculative = [], set()
    if check is not None:
        if not check.origins.keys().isdisjoint(chain.leaves):
            return _unfused(chain, graph, env, dtype, check)  # non-finite numbers come in: the careful path
        watched, speculative = _watch(chain, graph, check, leaves, reducing)
    n = _elements(chain, shapes, reducing)
    if not reducing and out is None:
        out = np.empty(shapes[root], dtype=dtype)
    steps, slots, last = _schedule(chain, equations, reducing, watched)
    size = max(1, CHUNK_BYTES // np.dtype(dtype).itemsize)
    count = -(-n // size)
    facts = {k: (np.empty(count, dtype=dtype), np.empty(count, dtype=dtype)) for k in (*watched, *chain.deferred)}
    partials = np.empty(count, dtype=dtype) if reducing else None
    riders = [(q, getattr(np, equations[q].op.reduce_ufunc).reduce, np.empty(count, dtype=dtype))
              for q in chain.riders]
    leaf_facts = []
    for p, j in enumerate(chain.leaves):
        if check is not None and j in chain.deferred:
            high, low = facts[j]
            if reducing and last == ~p and root_op.reduce_ufunc in EXACT_REDUCTIONS:  # a fact already
                if root_op.reduce_ufunc == "maximum":
                    facts[j], high = (partials, low), None
                else:
                    facts[j], low = (high, partials), None
            leaf_facts.append((p, high, low))
    work = _chunk_work(steps, [a.reshape(-1) if f else a for f, a in zip(full, leaves)], full,
                       None if reducing else out.reshape(-1), n, size, [facts[k] if k in facts else None for k in watched],
                       leaf_facts, (getattr(np, root_op.reduce_ufunc).reduce, last, partials) if reducing else None,
                       [(ride, parts) for _, ride, parts in riders])
    workers = _workers(threads, count, slots)
    _run_chunks(work, count, workers, lambda: [np.empty(size, dtype=dtype) for _ in range(slots)])
    if reducing:
        value = np.asarray(partials[0] if count == 1 else getattr(np, root_op.reduce_ufunc).reduce(partials),
                           dtype=dtype).reshape(shapes[root])
    else:
        value = out
    if check is not None and not _clean(chain, graph, env, check, leaves, value, reducing, speculative, facts):
        for m in chain.members:
            check.bound.pop(m, None)
        clobbered = [j for j, a in zip(chain.leaves, leaves) if a is out]
        if clobbered:
            env = {**env, **rerun(graph, clobbered, dtype=str(dtype), xp=np, overrides=overrides)}
        return _unfused(chain, graph, env, dtype, check, leaves_checked=True)
    for q, _, parts in riders:
        chain.riders[q] = np.asarray(parts[0] if count == 1 else getattr(np, equations[q].op.reduce_ufunc).reduce(parts),
                                     dtype=dtype).reshape(shapes[q])
    return value


def _watch(chain: Chain, graph, check, leaves, reducing) -> tuple[list[int], set[int]]:
    """Which of the chain's values need their facts taken in the chunks (those the checker cannot
    prove finite from its inputs' bounds), and which are proven only once the deferred inputs'
    bounds are known (after the pass: a placeholder bound of 1 stands for them until then)."""
    equations, shapes = graph.equations, graph.shapes
    pending = set(chain.deferred)
    for j in chain.deferred:
        check.bound[j] = 1.0
    known = dict(zip(chain.leaves, leaves))
    watched: list[int] = []
    speculative: set[int] = set()
    try:
        for k in chain.members[:-1] if reducing else chain.members:
            eq = equations[k]
            args = [known[j] for j in eq.inputs] if all(j in known for j in eq.inputs) else None
            if not check.proven(k, eq, shapes[k], args):
                watched.append(k)
            elif not pending.isdisjoint(eq.inputs):
                speculative.add(k)
                pending.add(k)
    finally:
        for k in pending:
            check.bound.pop(k, None)
    return watched, speculative


def _clean(chain: Chain, graph, env, check, leaves, value, reducing, speculative, facts) -> bool:
    """The checks of the deferred inputs and the chain's values from the facts of the pass, in
    evaluation order: True where the plain path would report nothing (bounds recorded); False
    where the chain must be evaluated again unfused (a deferred input found not finite has had
    its plain check, and its diagnostics, here)."""
    import numpy as np

    equations, shapes = graph.equations, graph.shapes

    def top(k):  # max|v|, NaN where a chunk held a NaN
        high, low = facts[k]
        return float(np.maximum(np.max(high), -np.min(low)))

    for j in chain.deferred:
        if not check.clean_by_magnitude(j, top(j)):
            check(j, equations[j], env[j], ())  # the plain check: what it finds, it reports
    if not check.origins.keys().isdisjoint(chain.deferred):
        return False
    known = dict(zip(chain.leaves, leaves))
    for k in chain.members[:-1] if reducing else chain.members:
        if k in facts:
            if not check.clean_by_magnitude(k, top(k)):
                return False
        elif k in speculative:
            eq = equations[k]
            args = [known[j] for j in eq.inputs] if all(j in known for j in eq.inputs) else None
            if not check.proven(k, eq, shapes[k], args):
                return False
    if reducing:
        root = chain.root
        if not check.proven(root, equations[root], shapes[root], None):
            number = float(value)
            return check.clean_by_square_sum(root, number * number)  # (inf past the range, not an OverflowError)
    return True


def _schedule(chain: Chain, equations, reducing, watched) -> tuple[list, int, int]:
    """A static schedule: each step's ufunc, its arguments (a leaf, or a chunk buffer), its
    buffer (-1: the root's output) and its place among the watched values (or None); a step
    writes into the buffer of an argument it consumes where it has one. With the number of
    buffers, and where the value a reducing chain reduces is (a buffer, or ~leaf position)."""
    import numpy as np

    slot_of: dict[int, int] = {}
    free: list[int] = []
    slots = 0
    leaf_index = {j: p for p, j in enumerate(chain.leaves)}
    root = chain.root
    steps = []
    for k in chain.members[:-1] if reducing else chain.members:
        args = []
        target = None
        for j in equations[k].inputs:
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
        steps.append((getattr(np, equations[k].op.ufunc), args, -1 if k == root else target,
                      watched.index(k) if k in watched else None))
    if not reducing:
        return steps, slots, 0
    if len(chain.members) == 1:  # a reduction of a leaf, no step before it
        return steps, slots, ~leaf_index[equations[root].inputs[0]]
    return steps, slots, slot_of[chain.members[-2]]


def _chunk_work(steps, flat, full, out_flat, n, size, watched_facts, leaf_facts, reduction, riders):
    """The work of one chunk (by its number), given its thread's buffers: the schedule's steps,
    the facts (largest, smallest element) of the watched values and deferred inputs, the
    partial reduction and the riders' partial sums, each kept at the chunk's place.

    The hot loop of `benchmarks/run.py --only arrays` and `--only chunks` (value and gradient of
    sum(w * softmax(x)) at n = 1e7, float64 and float32, against the hand-written NumPy VJP): its
    locals bound once, no call per step beyond the ufunc's."""
    import numpy as np

    largest, smallest = np.maximum.reduce, np.minimum.reduce
    reduce, last, partials = reduction if reduction is not None else (None, 0, None)

    def work(c, buffers):
        a = c * size
        b = min(n, a + size)
        chunk = [v[a:b] if f else v for f, v in zip(full, flat)]
        bufs = buffers if b - a == size else [buf[:b - a] for buf in buffers]
        for ufunc, args, target, watch in steps:
            result = out_flat[a:b] if target < 0 else bufs[target]
            ufunc(*[bufs[p] if kind else chunk[p] for kind, p in args], out=result)
            if watch is not None:
                high, low = watched_facts[watch]
                high[c] = largest(result)
                low[c] = smallest(result)
        for p, high, low in leaf_facts:
            if high is not None:
                high[c] = largest(chunk[p])
            if low is not None:
                low[c] = smallest(chunk[p])
        if reduce is not None:
            partials[c] = reduce(bufs[last] if last >= 0 else chunk[~last])
        for ride, parts in riders:
            parts[c] = ride(out_flat[a:b])
    return work


_POOL: list = []  # [(the process id, its size, a thread pool)]: made once, again after a fork or to grow


def _run_chunks(work, count: int, workers: int, buffers) -> None:
    """work(c, bufs) for every chunk c, on `workers` threads (this one among them), each with its
    own buffers (`buffers()`); the chunks are taken in turn from one counter, and each writes only
    its own places, so which thread computes which chunk changes no number. Each thread computes
    under this thread's NumPy error state (NumPy's is per thread)."""
    if workers <= 1:
        bufs = buffers()
        for c in range(count):
            work(c, bufs)
        return
    import numpy as np
    from concurrent.futures import ThreadPoolExecutor

    if not _POOL or _POOL[0][0] != os.getpid() or _POOL[0][1] < workers - 1:
        _POOL[:] = [(os.getpid(), workers - 1,
                     ThreadPoolExecutor(max_workers=workers - 1, thread_name_prefix="gradcli-chunks"))]
    counter = itertools.count()
    errors = np.geterr()
    stopped: list[bool] = []  # a thread failed (an interrupt, no memory): the others stop too

    def take():
        try:
            bufs = buffers()
            with np.errstate(**errors):
                while not stopped and (c := next(counter)) < count:
                    work(c, bufs)
        except BaseException:
            stopped.append(True)
            raise

    helpers = [_POOL[0][2].submit(take) for _ in range(workers - 1)]
    try:
        take()
    finally:
        for h in helpers:
            h.result()  # (a helper's error raised here, once every helper is done)


def _elements(chain: Chain, shapes, reducing) -> int:
    """How many elements the chain's chunks cut (its reduced leaf's, for a reduction alone)."""
    return math.prod(shapes[chain.leaves[0]] if len(chain.members) == 1 and reducing else shapes[chain.members[0]])


def _workers(threads: int, count: int, slots: int) -> int:
    """The threads computing a chain's `count` chunks: no more than there are chunks, nor than
    hold SCRATCH_CHUNKS buffers each."""
    return max(1, min(threads, count, SCRATCH_CHUNKS // slots if slots else threads))


def scratch_bytes(chains: dict, graph, dtype, threads: int) -> int:
    """The most that one chain's chunk buffers take at once, a set per thread computing its chunks
    (what the memory guard, gradcli/engine/memory.py, counts beside the values)."""
    import numpy as np

    itemsize = np.dtype(dtype).itemsize
    size = max(1, CHUNK_BYTES // itemsize)
    most = 0
    for chain in chains.values():
        if chain.rides_on is None:
            reducing = graph.equations[chain.root].op.ufunc is None
            slots = _schedule(chain, graph.equations, reducing, [])[1]
            n = _elements(chain, graph.shapes, reducing)
            most = max(most, _workers(threads, -(-n // size), slots) * slots * min(size, n) * itemsize)
    return most


def _unfused(chain: Chain, graph, env: dict, dtype, check, leaves_checked: bool = False):
    """The chain evaluated equation by equation, as the plain evaluation does, the checker
    called after each (and first on the inputs whose check was deferred to the chain, unless
    `leaves_checked`)."""
    import numpy as np

    equations = graph.equations
    if check is not None and not leaves_checked:
        for j in chain.deferred:
            check(j, equations[j], env[j], ())
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
