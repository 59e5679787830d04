"""Evaluation: a loop over the equations that the requested values need.

Values are freed as soon as their last use is past, so peak memory follows the live set, not
the program's length. Works over any NumPy-like namespace `xp` (NumPy, CuPy).
"""
from __future__ import annotations

import itertools
import math
import operator
import os
from typing import Callable

from .errors import GradcliError, OptionError
from .graph import Graph
from .ops import DataError

DTYPES = ("float64", "float32")


def array_namespace(device: str):
    """The array namespace of the backend `device` names (gradcli/backends.py), with a clear
    error when it cannot be used."""
    from .backends import backend
    return backend(device).xp


def backend_of(xp):
    """The backend for an array namespace given to `run` (NumPy, CuPy, or a standard one)."""
    from . import backends
    name = getattr(xp, "__name__", "")
    if name == "numpy":
        return backends.Backend()
    if name in ("cupy", "array_api_compat.cupy"):
        return backends.CupyBackend()
    if name.startswith(("dask", "array_api_compat.dask")):
        return backends.DaskBackend()
    return backends.StandardBackend(xp)


MIN_MEMORY_LIMIT = 1 << 10


def default_memory_limit() -> int:
    """Half of the memory this process may have (`memory_bounds`, the smallest of them): the
    other half is room for the interpreter, the libraries and the allocator beside the arrays
    that --max-memory counts. Measured once per process."""
    if not _DEFAULT_LIMIT:
        _DEFAULT_LIMIT.append(max(MIN_MEMORY_LIMIT, min(memory_bounds().values()) // 2))
    return _DEFAULT_LIMIT[0]


_DEFAULT_LIMIT: list[int] = []
_UNLIMITED = 1 << 60  # a cgroup v1 "no limit" is 2^63 rounded down to a page


def memory_bounds(cgroup_root: str = "/sys/fs/cgroup", proc: str = "/proc/self") -> dict[str, int]:
    """What bounds this process's memory, in bytes, by what sets it: the machine's physical
    memory; the address-space and data limits (`ulimit -v`, `ulimit -d`) less what is already
    mapped; the cgroup's limit (a container's: cgroup v2 `memory.max`, v1
    `memory.limit_in_bytes`, its own and its parents'). Those not set are left out."""
    bounds = {"physical memory": physical_memory()}
    for name, what, used in (("RLIMIT_AS", "ulimit -v", "VmSize"), ("RLIMIT_DATA", "ulimit -d", "VmData")):
        left = rlimit_headroom(name, used, proc)
        if left is not None:
            bounds[what] = left
    group = cgroup_memory_limit(cgroup_root, proc)
    if group is not None:
        bounds["cgroup memory limit"] = group
    return bounds


def physical_memory() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 16 << 30


def rlimit_headroom(name: str, used_field: str, proc: str = "/proc/self") -> int | None:
    """The soft limit `resource.<name>` less this process's `used_field` (/proc/self/status,
    VmSize or VmData); None where no limit is set."""
    try:
        import resource
        soft, _ = resource.getrlimit(getattr(resource, name))
    except (ImportError, AttributeError, ValueError, OSError):
        return None
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    used = 0
    try:
        with open(os.path.join(proc, "status")) as fh:
            for line in fh:
                if line.startswith(used_field + ":"):
                    used = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return max(0, soft - used)


def cgroup_memory_limit(root: str = "/sys/fs/cgroup", proc: str = "/proc/self") -> int | None:
    """The smallest memory limit of this process's cgroup and its parents (v2 `memory.max`, v1
    `memory.limit_in_bytes`), or None where none is set. Inside a container the group's path may
    not exist under `root` (a cgroup namespace): `root` itself is then the group."""
    try:
        with open(os.path.join(proc, "cgroup")) as fh:
            entries = [line.rstrip("\n").split(":", 2) for line in fh]
    except OSError:
        entries = []
    places = []  # (folder, file with the limit)
    for entry in entries:
        if len(entry) != 3:
            continue
        _, controllers, path = entry
        if controllers == "":  # cgroup v2
            places += [(folder, "memory.max") for folder in _cgroup_folders(root, path)]
        elif "memory" in controllers.split(","):
            places += [(folder, "memory.limit_in_bytes")
                       for folder in _cgroup_folders(os.path.join(root, "memory"), path)]
    limits = [limit for limit in map(_read_limit, (os.path.join(f, name) for f, name in places))
              if limit is not None]
    return min(limits) if limits else None


def _cgroup_folders(root: str, path: str) -> list[str]:
    """The folders of the cgroup at `path` and of its parents, under `root` (and `root`)."""
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    return [os.path.join(root, *parts[:n]) for n in range(len(parts), -1, -1)]


def _read_limit(path: str) -> int | None:
    try:
        with open(path) as fh:
            text = fh.read().strip()
    except OSError:
        return None
    if not text.isdigit():
        return None  # "max": no limit
    value = int(text)
    return value if value < _UNLIMITED else None


def out_of_memory(limit: int | None) -> OptionError:
    """What a MemoryError anywhere becomes: the machine (or its ulimit, or its container) ran
    out before the guard could refuse the program; exit 2, as the guard's refusal."""
    limit = limit or default_memory_limit()
    return OptionError(f"out of memory: this command needed more memory than the machine, its ulimit or its "
                       f"container gave it, though {{option}} allowed {_gib(limit)}; give a lower {{option}} to "
                       "have such programs refused before they start, or use smaller inputs", "max_memory")


def parse_size(text: str) -> int:
    """'8G', '500M', '2GiB', '1e9' -> bytes: a finite number of at least 1 KiB (anything less
    cannot hold a program; a fraction of a byte is not a size)."""
    units = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().replace("IB", "").rstrip("B") or "0"
    unit = t[-1] if t[-1] in units else ""
    try:
        number = float(t[:-1] if unit else t)
    except ValueError:
        raise OptionError(f"{{option}}: '{text}' is not a size such as 8G or 500M", "max_memory") from None
    if not math.isfinite(number):
        raise OptionError(f"{{option}}: '{text}' is not a finite size; give one such as 8G or 500M", "max_memory")
    if number <= 0:
        raise OptionError(f"{{option}}: '{text}' must be positive", "max_memory")
    size = number * units[unit]
    if size < MIN_MEMORY_LIMIT:
        raise OptionError(f"{{option}}: '{text}' is {size:g} bytes; the smallest limit is 1K (1024 bytes)", "max_memory")
    return int(size)


def _gib(n: int) -> str:
    """A size for a person: 1.5 GiB, 234.4 KiB, 900 bytes."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


# Text of one number in an output (`-0.30592180165271284, ` in JSON, plain or a table)
TEXT_BYTES_PER_NUMBER = 24


def output_text_bytes(elements: int) -> int:
    return elements * TEXT_BYTES_PER_NUMBER


# Memory that rendering the output takes at its peak, per byte of text: the pieces (chunks of
# numbers, lines) and the text they are joined into (render.CHUNK, streams.WRITE_CHUNK)
RENDER_COPIES = 2


def output_render_bytes(elements: int) -> int:
    return RENDER_COPIES * output_text_bytes(elements)


def check_memory(graph: Graph, fetch: list[int], dtype: str, limit: int | None = None, text: bool = True,
                 backend=None, gathered: bool = True) -> None:
    """Refuse, before anything runs, a program whose arrays would not fit: shapes are known,
    so the evaluation's peak is simulated (values freed after their last use, views free),
    and the text the fetched values make (an output is rendered whole before it is written).
    On a chunked backend (Dask) a value is held a chunk per worker at a time, not whole,
    except the fetched values, which are gathered whole unless they are written to a file
    as they are computed (`gathered=False`)."""
    import numpy as np

    limit = limit or default_memory_limit()
    # chunked: the most of one value held at once, and the task graph's own memory
    per_value, graph_bytes = chunked_memory(graph, fetch, dtype, limit, backend)
    itemsize = np.dtype(dtype).itemsize
    fetched = sum(math.prod(graph.shapes[f]) for f in set(fetch))
    text = output_text_bytes(fetched) if text else 0  # the fetched values printed (not for check, derive)
    rendering = RENDER_COPIES * text
    if rendering > limit:
        f = max(set(fetch), key=lambda j: math.prod(graph.shapes[j]))
        raise OptionError(f"the output would be {fetched:,} numbers, about {_gib(text)} of text ({_gib(rendering)} "
                          f"while it is rendered), more than the {_gib(limit)} allowed; raise the limit with "
                          "{option} if the machine has it", "max_memory", graph.equations[f].pos, graph.source)
    if sum(map(math.prod, graph.shapes)) * itemsize + rendering + graph_bytes <= limit:
        return  # even holding every value at once fits: no need to simulate
    if per_value is not None and gathered:
        held = fetched * itemsize
        if held + rendering > limit:
            f = max(set(fetch), key=lambda j: math.prod(graph.shapes[j]))
            raise OptionError(f"the outputs are {_gib(held)} of values, gathered whole, more than the "
                              f"{_gib(limit)} allowed; raise the limit with {{option}} if the machine has it",
                              "max_memory", graph.equations[f].pos, graph.source)
    last_use: dict[int, int] = {}
    order = needed_equations(graph, fetch, last_use=last_use)
    keep = set(fetch) if gathered or per_value is None else set()
    live = graph_bytes
    sizes: dict[int, int] = {}
    strided: set[int] = set()  # values that may be non-contiguous views: a reshape of one copies
    for i in order:
        eq = graph.equations[i]
        full = math.prod(graph.shapes[i]) * itemsize
        if per_value is not None and i not in keep:
            full = min(full, per_value)  # a chunk per worker at a time
        memory = eq.op.memory
        if memory == "reshape":
            memory = "view" if not strided.intersection(eq.inputs) else "new"
        if memory == "view" or (memory == "same" and strided.intersection(eq.inputs)):
            strided.add(i)
        size = 0 if memory in ("view", "same") else full  # a view shares memory, its consumers do not
        if full > limit or live + size > limit:
            size = max(size, full)
            what = "this operation" if eq.inputs else "this value"
            held = f" on top of the {_gib(live)} already held," if size <= limit else ""
            raise OptionError(
                f"{what} would need a {graph.shapes[i]} array of {dtype} ({_gib(size)}),{held} more than "
                f"the {_gib(limit)} allowed; raise the limit with {{option}} if the machine has it",
                "max_memory", eq.pos, graph.source)
        sizes[i] = size
        live += size
        for j in set(eq.inputs):
            # inputs and constants are held by the caller and the graph: they are never freed
            if last_use.get(j) == i and j not in keep and graph.equations[j].inputs:
                if size == 0:  # a view keeps what it views alive: its memory passes on to it
                    sizes[i] += sizes.pop(j, 0)
                else:
                    live -= sizes.pop(j, 0)
    if live + rendering > limit:  # the values still held while their text is rendered
        f = max(set(fetch), key=lambda j: math.prod(graph.shapes[j]))
        raise GradcliError(f"the output would be {fetched:,} numbers, about {_gib(text)} of text, which with the "
                           f"{_gib(live)} of values held is more than the {_gib(limit)} allowed; raise the limit "
                           "with --max-memory if the machine has it", graph.equations[f].pos, graph.source)


# What Dask's task graph takes per block of each value computed (its tasks in every form Dask
# builds: the collections, the optimised graph, the scheduler's state): about 2.5 KiB a task
# measured (4 MiB cut into 1 KiB blocks: 52 MiB more than into 16 KiB ones), a block making 1
# to 3 tasks (the op, the checks' statistics, a reduction's partials)
GRAPH_BYTES_PER_BLOCK = 8 << 10


def chunked_memory(graph: Graph, fetch: list[int], dtype: str, limit: int, backend) -> tuple[int | None, int]:
    """On a chunked backend (Dask): (the most of one value held at once, a chunk per core; the
    task graph's memory, GRAPH_BYTES_PER_BLOCK per block of every value computed), refusing a
    graph that alone would not fit; (None, 0) elsewhere."""
    import numpy as np

    if backend is None or backend.memory != "chunks":
        return None, 0
    itemsize, chunk = np.dtype(dtype).itemsize, backend.chunk_bytes
    blocks = sum(max(1, -(-math.prod(graph.shapes[i]) * itemsize // chunk)) for i in needed_equations(graph, fetch))
    graph_bytes = blocks * GRAPH_BYTES_PER_BLOCK
    if graph_bytes > limit:
        raise OptionError(f"on --device dask, {{option}} of {_gib(chunk)} cuts the values into {blocks:,} blocks: "
                          f"the task graph alone would take about {_gib(graph_bytes)}, more than the {_gib(limit)} "
                          "allowed by --max-memory; give larger {option}", "chunks")
    return chunk * (os.cpu_count() or 1), graph_bytes


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
        check: Callable | None = None, backend=None) -> dict[int, object]:
    """Evaluate the values `fetch`; returns {id: array} in the namespace `xp`.

    `overrides` gives the values of equations by id (inputs, or any value to hold fixed); `check(i, eq, value,
    args)` is called after each equation (the numerical diagnostics); args is None where the
    result was written into an input's buffer.

    Ownership: values are written once. Every returned array belongs to the caller: none is
    (or views) an override or a constant of the graph, and none is a buffer this run recycles,
    so a caller may reuse its override buffers between runs (Jacobian rows, checks, --lines)."""
    if dtype not in DTYPES:
        raise GradcliError(f"unknown dtype '{dtype}': use float64 or float32")
    if backend is None:
        if xp is None:
            from .backends import Backend
            backend = Backend()
        else:
            backend = backend_of(xp)
    xp = backend.xp
    in_place = backend.in_place
    lazy = backend.lazy
    overrides = overrides or {}
    dtype = backend.dtype(dtype)  # compared with each result's: a dtype object, not its name
    last_use: dict[int, int] = {}
    order = needed_equations(graph, fetch, overrides, last_use)
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
    # dtype), without a ufunc call's cost (tests/test_scalar_path.py compares them bit for bit).
    scalar = dtype.type if not lazy and getattr(xp, "__name__", None) == "numpy" else None
    scalar_operators = SCALAR_OPERATORS if scalar is not None else {}
    chains, inlined = {}, ()
    # a chain writes its chunks into buffers it owns, and needs arrays (a program of numbers has none)
    if len(order) > 1 and in_place and any(map(shapes.__getitem__, order)):
        from . import fusion  # chains of elementwise ops over large arrays, evaluated chunk by chunk
        chains, inlined = fusion.plan(graph, order, last_use, keep, overrides, xp)
    for f in keep:  # (after the plan, which reads them) a fetched value is never freed nor written over
        last_use.pop(f, None)
    asarray = backend.asarray
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
            if scalar is not None and value.ndim == 0 and i not in keep:
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
                    value = fusion.evaluate(chain, graph, env, dtype, out, check, overrides)
                elif ufunc in scalar_operators and type(args[0]) is scalar and type(args[-1]) is scalar:
                    value = scalar_operators[ufunc](*args)  # (two numbers: never written into a buffer)
                elif out is not None:
                    value = getattr(xp, ufunc)(*args, out=out)
                elif lazy:
                    value = _lazy_forward(backend, graph, i, args, dtype)
                else:
                    value = op.forward(xp, *args, **eq.params)
                    # (a scalar of the dtype's type is of the dtype: no dtype to compare)
                    if type(value) is not scalar and value.dtype is not dtype and value.dtype != dtype:
                        value = value.astype(dtype)
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
        if check is not None and chain is None:  # (a chain checks its values itself)
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
                          f"whole arrays, {_gib(whole_bytes)} here, more than the {_gib(backend.max_memory)} "
                          "allowed; raise the limit with {option} if the machine has it, or write the program "
                          "with operations that work chunk by chunk", "max_memory", eq.pos, graph.source)
    task = dask.delayed(whole, pure=True)(*args)
    return da.from_delayed(task, shape, dtype=dtype).rechunk(backend.chunks_for(shape, np.dtype(dtype).itemsize) or ())


def _has_unknown_chunks(value) -> bool:
    import math as _math
    return any(_math.isnan(c) for cs in getattr(value, "chunks", ()) for c in cs)
