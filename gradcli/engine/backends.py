"""Array backends: everything the engine needs of an array library, one small object each.

The evaluator (gradcli/engine/evaluate.py), the numerical checker (gradcli/numerics/diagnostics.py) and the
library (gradcli/api.py) reach an array library only through a `Backend`: its array namespace
(standard array operations), how a value reaches the host, how a file becomes an array, what
`--max-memory` bounds, and whether results may be written into dead buffers. The backends are
registered in one place, `BACKENDS`, by the `--device` name that selects them.
"""
from __future__ import annotations

import contextlib
import functools
import math
import os
import sys

from gradcli.dtypes import HALF, numpy_dtype
from gradcli.errors import GradcliError, OptionError
from gradcli.io.files import load_file, npy_layout
from gradcli.limits import default_memory_limit, describe_size
from gradcli.ops import scalar as numbers


class Backend:
    """NumPy's: the reference every other backend is compared with."""

    name = "cpu"
    # Results may be written into an input's dead buffer (`out=`) and freed buffers recycled.
    in_place = True
    # What --max-memory bounds: "whole" arrays in host memory, "device" memory, or "chunks".
    memory = "whole"
    # Values are descriptions of work, computed together at the end (`compute`), not arrays.
    lazy = False
    # The namespace is NumPy itself: values are host ndarrays, and NumPy's own functions (ufuncs
    # with `out=`, einsum, stable sorts, SciPy) apply to them directly (the fused chains).
    numpy = True
    # Numbers (0-d values) may be held as NumPy scalars of the dtype, computed by the scalars'
    # own arithmetic where that is the ufunc's (the evaluator's scalar path).
    scalars = True
    # The modules whose namespace this backend evaluates over (`backend_for`), by import name.
    modules = ("numpy",)
    # How many threads may compute the chunks of a fused chain at once (gradcli/engine/fusion.py:
    # NumPy's ufuncs release the GIL): None for the cores this process may run on.
    threads: int | None = None

    def chunk_threads(self) -> int:
        """The threads a fused chain's chunks are computed on (the numbers do not depend on it)."""
        return self.threads or available_cores()

    def namespace(self):
        import numpy
        return numpy

    @property
    def xp(self):
        return self.namespace()

    def dtype(self, name: str):
        if name in HALF:  # (NumPy's and ml_dtypes' types: RunOptions allows them on the CPU only)
            return numpy_dtype(name)
        return self.xp.dtype(name)

    def asarray(self, value, dtype):
        return self.xp.asarray(value, dtype=dtype)

    def to_host(self, value):
        """A NumPy array with the value's numbers."""
        import numpy
        return numpy.asarray(value)

    def host_array(self, value):
        """The value as a host ndarray (a number, on the numbers-only backend)."""
        import numpy
        return numpy.asarray(self.to_host(value))

    def quiet(self):
        """The context in which values are computed: NumPy's warnings off (the checks speak instead)."""
        import numpy
        return numpy.errstate(all="ignore")

    def compute(self, values: dict) -> dict:
        """{key: array} -> {key: host array}: every value at once (one pass for a lazy backend)."""
        return {k: self.to_host(v) for k, v in values.items()}

    def load(self, spec: str, label: str, max_bytes: int | None = None):
        """`PATH` (`.npy`, `.npz:KEY`, `.json`, `.csv`) as an array (a big `.npy` read on the chunks' threads)."""
        return load_file(spec, label, max_bytes, self.chunk_threads())

    def square_sum(self, value) -> float:
        """v.v in one pass over memory: BLAS dot where the value is contiguous (the fastest pass
        there is); a strided view is summed instead (no copy), its square bounding v.v from
        nothing, but non-finite exactly where v holds a NaN or an infinity."""
        if value.ndim == 0:
            v = float(value)
            return v * v
        if not value.flags.c_contiguous:
            total = float(value.sum())
            return total * total
        flat = value.reshape(-1)
        return float(flat.dot(flat))


@functools.cache
def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, as `taskset` or a container sets it)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # (no sched_getaffinity on macOS or Windows)
        return os.cpu_count() or 1


class ScalarBackend(Backend):
    """Numbers without NumPy (gradcli.ops.scalar): the values are Python floats computed as
    NumPy's float64 computes them, for a program of numbers in the command's numbers-only
    attempt; anything else it is asked for raises NeedsArrays (the command runs again on NumPy)."""

    in_place = numpy = False
    scalars = True  # (the evaluator's two-number operators: gradcli.ops.scalar.OPERATORS)
    operators = numbers.OPERATORS
    modules = ()

    def namespace(self):
        return numbers.NAMESPACE

    def dtype(self, name: str):
        if name != "float64":
            raise numbers.NeedsArrays(f"dtype {name}")
        return numbers.FLOAT64

    def asarray(self, value, dtype):
        if type(value) is not float or dtype is not numbers.FLOAT64:
            raise numbers.NeedsArrays(f"a value of type {type(value).__name__}")
        return value

    def to_host(self, value):
        if type(value) is not float:
            raise numbers.NeedsArrays(f"a value of type {type(value).__name__}")
        return value

    def load(self, spec, label, max_bytes=None):
        raise numbers.NeedsArrays("a file")

    def square_sum(self, value) -> float:
        return value * value

    host_array = to_host

    def quiet(self):
        return contextlib.nullcontext()  # (Python's floats warn of nothing: they raise, see gradcli.ops.scalar)


class CupyBackend(Backend):
    """CuPy on an NVIDIA GPU: NumPy's interface in device memory, with the array API standard's
    names CuPy lacks (`astype`, `permute_dims`, `concat`) from array_api_compat's namespace."""

    name = "cuda"
    memory = "device"
    numpy = scalars = False
    modules = ("cupy", "array_api_compat.cupy")

    def namespace(self):
        try:
            import cupy
        except Exception as exc:  # ImportError, or a CuPy built for another CUDA
            raise OptionError(f"{{option}} cuda needs CuPy and an NVIDIA GPU, but CuPy cannot be imported "
                              f"({type(exc).__name__}: {exc}); install cupy-cuda12x, or use {{option}} cpu",
                              "device") from None
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:
            raise OptionError(f"{{option}} cuda: no usable CUDA GPU ({exc}); use {{option}} cpu", "device") from None
        if count < 1:
            raise OptionError("{option} cuda: no CUDA GPU is present; use {option} cpu", "device")
        try:
            import array_api_compat.cupy
        except Exception as exc:
            raise OptionError(f"{{option}} cuda needs array-api-compat ({type(exc).__name__}: {exc}); install "
                              "gradcli[cuda], or use {option} cpu", "device") from None
        return array_api_compat.cupy

    def to_host(self, value):
        import numpy
        return numpy.asarray(value.get() if hasattr(value, "get") else value)

    def load(self, spec, label, max_bytes=None):
        return self.xp.asarray(super().load(spec, label, max_bytes))


class StandardBackend(Backend):
    """Any namespace of the array API standard (array-api-strict in the tests): only standard
    operations, no in-place writes, no NumPy attributes. What keeps the engine honest."""

    in_place = numpy = scalars = False
    modules = ()

    def __init__(self, module, name: str = "standard"):
        self.module = module
        self.name = name

    def namespace(self):
        return self.module

    def dtype(self, name: str):
        return getattr(self.module, name)

    def to_host(self, value):
        import numpy
        return numpy.asarray(value) if not hasattr(value, "__dlpack__") else numpy.from_dlpack(value)

    def square_sum(self, value) -> float:
        xp = self.module
        flat = xp.reshape(value, (-1,))
        return float(xp.vecdot(flat, flat)) if flat.shape[0] else 0.0


# Chunks a worker holds at once while it computes one (its inputs, temporaries and result): the
# default chunk size leaves room for this many per core within --max-memory
CHUNKS_IN_FLIGHT = 8
MIN_CHUNK_BYTES = 1 << 16
MAX_CHUNK_BYTES = 8 << 20


def default_chunk_bytes(max_memory: int, cores: int | None = None) -> int:
    """A chunk size from the memory limit and the cores: every core computes a chunk, each with
    room for CHUNKS_IN_FLIGHT chunk-sized arrays, within the limit (never above 8 MiB, where a
    chunk's temporaries stop fitting the caches and each costs page faults: 16 MiB measured
    1.05-1.2x the CPU time of 8 MiB out of core, 3 paired runs on a busy machine; nor below 64 KiB, where Dask's per-task cost
    dominates)."""
    cores = cores or os.cpu_count() or 1
    size = max_memory // (cores * CHUNKS_IN_FLIGHT)
    return int(min(MAX_CHUNK_BYTES, max(MIN_CHUNK_BYTES, size)))


class DaskBackend(Backend):
    """dask.array: values are task graphs over chunks, computed in one pass at the end, on
    Dask's threads (in this process) or a dask.distributed cluster (`scheduler`). Inputs read
    from `.npy` files are read a chunk at a time; Zarr arrays are read lazily."""

    name = "dask"
    in_place = numpy = scalars = False
    memory = "chunks"
    lazy = True
    modules = ("dask.array", "array_api_compat.dask.array")

    def __init__(self, chunk_bytes: int | None = None, scheduler: str | None = None,
                 max_memory: int | None = None, progress: bool = False):
        if scheduler is not None and not scheduler.strip():  # not "no scheduler": a mistake
            raise OptionError("{option} '': an empty address; give tcp://HOST:PORT, or 'local' for worker "
                              "processes started here (without {option}: threads in this process)", "scheduler")
        self.max_memory = max_memory or default_memory_limit()
        self.chunk_bytes = chunk_bytes or default_chunk_bytes(self.max_memory)
        self.scheduler = scheduler
        self.progress = progress

    def namespace(self):
        try:
            import dask.array  # noqa: F401
            import array_api_compat.dask.array as compat
        except Exception as exc:
            raise OptionError(f"{{option}} dask needs Dask and array-api-compat ({type(exc).__name__}: {exc}); "
                              "install gradcli[dask], or use {option} cpu", "device") from None
        return _dask_namespace(compat)

    def dtype(self, name: str):
        import numpy
        return numpy.dtype(name)

    def chunks_for(self, shape, itemsize: int = 8):
        """Chunks of about `chunk_bytes` for an array of `shape`: whole trailing axes while they
        fit, the leading axis cut (a matrix's rows stay whole where a chunk holds a row)."""
        per = max(1, self.chunk_bytes // itemsize)
        chunks = []
        for n in reversed(shape):
            take = max(1, min(n, per)) if n else 1
            chunks.insert(0, take)
            per = max(1, per // max(n, 1))
        return tuple(chunks)

    def asarray(self, value, dtype):
        xp = self.xp
        if isinstance(value, xp.Array):
            return value if value.dtype == dtype else value.astype(dtype)
        import numpy
        value = numpy.asarray(value, dtype=dtype)
        return xp.from_array(value, chunks=self.chunks_for(value.shape, value.dtype.itemsize) or (), asarray=True)

    def to_host(self, value):
        import numpy
        if hasattr(value, "compute"):
            value = value.compute(**self._compute_options())
        return numpy.asarray(value)

    def _compute_options(self) -> dict:
        import dask
        if self.scheduler or dask.config.get("scheduler", None):  # a cluster's client, or one configured
            return {}
        # the threaded scheduler's function, not its name: a name makes Dask import
        # dask.distributed to look for a client (about a second of start-up, for nothing)
        import dask.threaded
        return {"scheduler": dask.threaded.get}

    def compute(self, values: dict) -> dict:
        """Every value in ONE dask.compute: work shared by outputs, gradients and checks is done once."""
        import numpy

        keys = list(values)
        try:
            with self._scheduling(), self._progress():
                results = _compute_reading_again([values[k] for k in keys], self._compute_options())
        except Exception as exc:
            failure = cluster_failure(exc, self.scheduler, self.max_memory)
            if failure is None:
                raise
            raise failure from None
        return {k: numpy.asarray(r) for k, r in zip(keys, results)}

    def _progress(self):
        import contextlib
        import sys
        if not self.progress or not sys.stderr.isatty() or self.scheduler:  # a cluster's progress is on its dashboard
            return contextlib.nullcontext()
        from dask.diagnostics import ProgressBar
        return ProgressBar(minimum=1.0, out=sys.stderr)

    def _scheduling(self):
        import contextlib
        if not self.scheduler:
            return contextlib.nullcontext()
        return _cluster(self.scheduler, self.max_memory, self.chunk_bytes)

    def load(self, spec: str, label: str, max_bytes: int | None = None):
        """`.npy` read a chunk at a time, `DIR.zarr` or `DIR.zarr:NAME` read lazily;
        other formats are read whole (they are text, or compressed) and then chunked."""
        path, key = _split_zarr(spec)
        if path is not None:
            return self._zarr(path, key, label)
        if spec.lower().endswith(".npy"):
            return self._npy(spec, label)
        import numpy
        value = super().load(spec, label, max_bytes)
        return self.asarray(value, value.dtype if value.dtype.kind == "f" else numpy.float64)

    def _npy(self, path: str, label: str):
        import numpy

        xp = self.xp
        # checked as on the CPU: a regular file (a FIFO is not waited on), the header's array
        # exactly the bytes that follow it (trailing bytes are not ignored)
        shape, dtype, offset, fortran = npy_layout(path, label)
        reader = _NpyChunks(path, shape, dtype, offset, fortran and len(shape) > 1, label)
        return xp.from_array(reader, chunks=self.chunks_for(reader.shape, reader.dtype.itemsize) or (),
                             asarray=True, fancy=False, lock=False, meta=numpy.empty((0,) * len(reader.shape),
                                                                                     reader.dtype))

    def _zarr(self, path: str, key: str | None, label: str):
        try:
            import zarr
        except Exception as exc:
            raise GradcliError(f"{label}: reading '{path}' needs zarr ({type(exc).__name__}: {exc}); "
                               "install gradcli[dask]") from None
        if not os.path.isdir(path):
            raise GradcliError(f"{label}: cannot read '{path}': no such Zarr directory")
        try:
            node = zarr.open(path, mode="r")
        except Exception as exc:
            raise GradcliError(f"{label}: cannot read '{path}' as Zarr: {exc}") from None
        if hasattr(node, "array_keys"):  # a group: name the member
            members = sorted(node.array_keys())
            if key is None:
                raise GradcliError(f"{label}: '{path}' is a Zarr group; name one of its arrays as "
                                   f"@{path}:NAME ({', '.join(members) or 'it has none'})")
            if key not in members:
                raise GradcliError(f"{label}: '{path}' has no array '{key}' (it has {', '.join(members) or 'none'})")
            node = node[key]
        elif key is not None:
            raise GradcliError(f"{label}: '{path}' is one Zarr array, not a group: drop ':{key}'")
        if node.dtype.kind not in "fiub":
            raise GradcliError(f"{label}: '{path}' holds {node.dtype} numbers; gradcli reads real numbers")
        import dask.array as da
        import numpy
        stored = getattr(node, "chunks", None)
        stored_bytes = math.prod(stored) * node.dtype.itemsize if stored else 0
        if stored_bytes > self.chunk_bytes:
            self._adopt_stored_chunks(path, label, stored_bytes)
        chunks = stored if stored and stored_bytes >= self.chunk_bytes // 4 \
            else self.chunks_for(node.shape, node.dtype.itemsize)
        return da.from_array(_ZarrChunks(node, path, label), chunks=chunks or (), asarray=True, fancy=False,
                             lock=False, meta=numpy.empty((0,) * node.ndim, node.dtype))

    def _adopt_stored_chunks(self, path: str, label: str, stored_bytes: int) -> None:
        """A Zarr chunk is read whole (decompressed), so a store whose chunks are larger than the
        chunk size is read a stored chunk at a time, and the memory reasoning (gradcli.engine.memory)
        counts chunks of that size; refused where that many cores each computing on one with
        CHUNKS_IN_FLIGHT chunk-sized arrays would not fit in --max-memory (a 64 MiB chunk under
        16M peaked at 394 MiB)."""
        cores = os.cpu_count() or 1
        needed = stored_bytes * cores * CHUNKS_IN_FLIGHT
        if needed > self.max_memory:
            raise OptionError(f"{label}: '{path}' is stored in chunks of {describe_size(stored_bytes)}, each read whole: "
                              f"computing on one per core ({cores}) takes about {describe_size(needed)}, more than the "
                              f"{describe_size(self.max_memory)} allowed by {{option}}; store it in smaller chunks, or raise "
                              "{option}", "max_memory")
        self.chunk_bytes = stored_bytes

    def square_sum(self, value):
        """Lazy: a reduction computed in the same pass as the values."""
        return (value * value).sum() if value.ndim else value * value

    def block_stats(self, value):
        """Lazy (v.v, every element finite, max|v|): one small task per chunk, run as soon as
        the chunk is made, and small reductions joining them, so no chunk is held for a check.
        An array made from the value's own blocks (not from `to_delayed`, whose separately
        optimised graph would read each input chunk a second time), as every value computed
        beside it is: dask.compute groups its results by the kind of collection."""
        import numpy
        per_block = value.map_blocks(_chunk_stats_block, new_axis=value.ndim,
                                     chunks=tuple((1,) * len(c) for c in value.chunks) + ((3,),),
                                     dtype=numpy.float64, meta=numpy.empty((0,) * (value.ndim + 1), numpy.float64))
        # the blocks' statistics (3 numbers each) joined in one task: a tree of reductions per
        # statistic would add several tasks per chunk, each costing more than the numbers it joins
        whole = per_block.rechunk(per_block.shape)
        return whole.map_blocks(_join_chunk_stats, drop_axis=tuple(range(value.ndim)), chunks=((3,),),
                                dtype=numpy.float64, meta=numpy.empty((0,), numpy.float64))


def _compute_reading_again(collections: list, options: dict) -> tuple:
    """dask.compute(*collections), each array graph optimised by Dask and then `reading_again`."""
    import dask
    with dask.config.set(array_optimize=_optimize_reading_again):
        return dask.compute(*collections, **options)


def _optimize_reading_again(graph, keys, **options):
    from dask.array.optimization import optimize
    from dask.core import flatten
    return reading_again(dict(optimize(graph, keys, **options)), set(flatten(keys)))


# A result read by more tasks than this is held until the last of them runs whatever is done
# (a reduction's result, a small constant broadcast against every block): a task that reads it
# may be run again later without holding more
WIDELY_READ = 4
# The most tasks one task may carry inside it to be run again (the work repeated is bounded)
MAX_CARRIED = 64


def reading_again(graph: dict, outputs: set) -> dict:
    """The graph with every block that is cheap to make again made again where it is read,
    instead of held until its last reader runs. Where one reader of a value's blocks is a
    reduction over the whole value and another needs that reduction's result (logsumexp,
    x - mean(x), softmax, most gradients), that last reader runs after every block is made:
    held, the blocks are the whole value (a 256 MiB input held under --max-memory 64M). Cheap to
    make again: a task that reads only constants of the graph (a file's reader, an in-memory
    array), results read widely (held anyway) and other such tasks, one block of each value (two
    blocks of one value are a reduction or a join: not made again), at most MAX_CARRIED tasks in
    all; it is copied into each of its readers and run there (a block read from a constant by any
    number of readers; another task only where it has at most WIDELY_READ readers)."""
    from dask._task_spec import DataNode, Task

    readers: dict = {}
    for node in graph.values():
        for dependency in node.dependencies:
            readers[dependency] = readers.get(dependency, 0) + 1
    again: dict = {}  # key -> (the task with what it reads made again inside it, tasks carried)
    for key in _in_order(graph):
        node = graph[key]
        if key in outputs or not isinstance(node, Task):
            continue
        constants_only = all(isinstance(graph.get(d), DataNode) for d in node.dependencies)
        if readers.get(key, 0) > WIDELY_READ and not constants_only:  # (a block read: read again by each)
            continue
        carried, layers = 1, set()
        for dependency in node.dependencies:
            if dependency in again:
                carried += again[dependency][1]
                layer = dependency[0] if isinstance(dependency, tuple) else dependency
                if layer in layers:
                    break  # two blocks of one value: a reduction or a join, not a block's own work
                layers.add(layer)
            elif not (isinstance(graph.get(dependency), DataNode) or readers.get(dependency, 0) > WIDELY_READ):
                break
        else:
            if carried <= MAX_CARRIED:
                inner = {d: again[d][0] for d in node.dependencies if d in again}
                again[key] = (node.substitute(inner) if inner else node, carried)
    if not again:
        return graph
    return {key: node.substitute({d: again[d][0] for d in node.dependencies & again.keys()})
            if node.dependencies & again.keys() else node
            for key, node in graph.items() if key not in again}


def _in_order(graph: dict) -> list:
    """The graph's keys, each after those it reads (no recursion: graphs are deep)."""
    done: set = set()
    order = []
    for root in graph:
        if root in done:
            continue
        stack = [(root, False)]
        while stack:
            key, expanded = stack.pop()
            if key in done:
                continue
            if expanded:
                done.add(key)
                order.append(key)
                continue
            stack.append((key, True))
            stack.extend((d, False) for d in graph[key].dependencies if d in graph and d not in done)
    return order


_DASK_NAMESPACE = []


def _dask_namespace(compat):
    """dask.array with the array API standard's names it lacks (`astype`, `permute_dims`,
    `concat`, `pow`) from array_api_compat, so an op is written once for every backend; less
    compat's sort and argsort, which gather a whole axis into one chunk unseen by the memory
    guard (without them, the evaluator computes a sort whole, where the guard sees it)."""
    if not _DASK_NAMESPACE:
        import types
        module = types.ModuleType(compat.__name__, compat.__doc__)
        module.__dict__.update({k: v for k, v in vars(compat).items() if k not in ("sort", "argsort")})
        _DASK_NAMESPACE.append(module)
    return _DASK_NAMESPACE[0]


# v.v of a chunk past which its finiteness and max|v| are looked at too: below the smallest
# v.v at which the checker looks at headroom (float32's, formats.HEADROOM_FACTOR below its
# largest, squared), v.v alone is read, so a chunk costs one pass
_LARGE_SQUARE_SUM = (3.4028234663852886e38 / 1e3) ** 2


def _chunk_stats(block):
    import numpy
    block = numpy.asarray(block)
    if block.size == 0:
        return 0.0, True, 0.0
    flat = block.reshape(-1)
    with numpy.errstate(all="ignore"):
        # einsum's own loop, not BLAS dot: this runs on Dask's threads, where a threaded BLAS
        # starts threads of its own per call and, on busy cores, waits for them (measured 5-100x
        # slower than this single pass on 2 cores under load)
        square_sum = float(numpy.einsum("i,i->", flat, flat))
        if square_sum <= _LARGE_SQUARE_SUM:  # finite, and its square root bounds max|v|
            return square_sum, True, square_sum ** 0.5
        return square_sum, bool(numpy.isfinite(flat).all()), float(numpy.max(numpy.abs(flat)))


def _chunk_stats_block(block):
    """`_chunk_stats` as a block of the per-block statistics array (shaped 1, ..., 1, 3)."""
    import numpy
    square_sum, finite, top = _chunk_stats(block)
    return numpy.array([square_sum, float(finite), top]).reshape((1,) * numpy.ndim(block) + (3,))


def _join_chunk_stats(per_block):
    """The per-block statistics (..., 3) as those of the whole value: (sum of v.v, all finite, max)."""
    import numpy
    flat = numpy.asarray(per_block).reshape(-1, 3)
    if not len(flat):
        return numpy.array([0.0, 1.0, 0.0])
    return numpy.array([flat[:, 0].sum(), flat[:, 1].min(), flat[:, 2].max()])


def _split_zarr(spec: str) -> tuple[str | None, str | None]:
    lower = spec.lower()
    at = lower.rfind(".zarr")
    if at < 0:
        return None, None
    cut = at + len(".zarr")
    rest = spec[cut:].rstrip("/")
    if rest == "":
        return spec[:cut], None
    if rest[:1] in (":", "/"):  # DIR.zarr:NAME, and DIR.zarr/NAME reads as a group member too
        return spec[:cut], rest[1:]
    return None, None


class _ZarrChunks:
    """A Zarr array read a block at a time, a block that cannot be read (a corrupt or missing
    chunk, a codec error) being the user's error that names the store (exit 2), not a crash."""

    def __init__(self, node, path: str, label: str):
        self.node, self.path, self.label = node, path, label
        self.shape, self.dtype, self.ndim = tuple(node.shape), node.dtype, node.ndim

    def __getitem__(self, index):
        try:
            return self.node[index]
        except MemoryError:
            raise
        except Exception as exc:
            raise GradcliError(f"{self.label}: cannot read a chunk of '{self.path}' "
                               f"({type(exc).__name__}: {exc})") from None


class _NpyChunks:
    """A `.npy` file read a block at a time into a fresh buffer (`os.preadv`, one read per run
    of the block that is contiguous in the file), so pages read are not held by the process:
    memory follows the chunks, not the file. Never a memory map: a file cut short while it is
    read would end the process with SIGBUS; a read gives an error instead."""

    def __init__(self, path, shape, dtype, offset, fortran, label="input"):
        self.path, self.shape, self.dtype, self.offset, self.fortran = path, tuple(shape), dtype, offset, fortran
        self.label, self.ndim = label, len(self.shape)

    def __getitem__(self, index):
        import numpy
        ranges = self._ranges(index)
        if ranges is None:  # not a block of slices (Dask asks for none such): a copy through a map
            mm = numpy.memmap(self.path, dtype=self.dtype, mode="r", offset=self.offset, shape=self.shape,
                              order="F" if self.fortran else "C")
            try:
                return numpy.array(mm[index])
            finally:
                mm._mmap.close() if getattr(mm, "_mmap", None) is not None else None
                del mm
        try:
            if self.fortran:  # the file holds the transpose in C order
                return self._read(self.shape[::-1], ranges[::-1]).T
            return self._read(self.shape, ranges)
        except OSError as exc:  # the user's file, changed or failing while it is read: exit 2
            raise GradcliError(f"{self.label}: cannot read '{self.path}': {exc.strerror or exc}") from None

    def _ranges(self, index):
        """[(start, count)] per axis where `index` is slices of step 1, else None."""
        index = index if isinstance(index, tuple) else (index,)
        if len(index) > self.ndim or not all(isinstance(k, slice) for k in index):
            return None
        index = index + (slice(None),) * (self.ndim - len(index))
        ranges = []
        for k, n in zip(index, self.shape):
            start, stop, step = k.indices(n)
            if step != 1:
                return None
            ranges.append((start, max(0, stop - start)))
        return ranges

    def _read(self, shape, ranges):
        """The block `ranges` of a C-ordered array of `shape` stored at self.offset."""
        import numpy
        block = numpy.empty(tuple(c for _, c in ranges), dtype=self.dtype)
        if block.size == 0:
            return block
        if not shape:
            shape, ranges = (1,), [(0, 1)]
        # the last axis not taken whole: each run along it (with the whole axes after it) is
        # contiguous in the file; one read per index of the axes before it
        last = len(shape) - 1
        while last > 0 and ranges[last] == (0, shape[last]):
            last -= 1
        strides = [math.prod(shape[a + 1:]) for a in range(len(shape))]
        run = ranges[last][1] * strides[last] * block.itemsize
        out = memoryview(block.reshape(-1).view(numpy.uint8))
        with open(self.path, "rb", buffering=0) as fh:
            fd = fh.fileno()
            for n, lead in enumerate(numpy.ndindex(*[c for _, c in ranges[:last]])):
                item = sum((ranges[a][0] + lead[a]) * strides[a] for a in range(last)) + ranges[last][0] * strides[last]
                at, view, done = self.offset + item * block.itemsize, out[n * run:(n + 1) * run], 0
                while done < run:
                    got = os.preadv(fd, [view[done:]], at + done)
                    if not got:
                        raise OSError(0, "it ended early (was it changed while it was read?)")
                    done += got
        return block


# A worker process's own memory beside its share of --max-memory: the interpreter with NumPy,
# Dask and distributed (about 100 MiB measured); the nanny ends a worker that goes over the sum
WORKER_BASELINE = 192 << 20
# How long a scheduler has to answer the connection's handshake before it is given up
HANDSHAKE_SECONDS = 10.0


def local_workers(max_memory: int, chunk_bytes: int, cores: int | None = None) -> int:
    """Worker processes for `--scheduler local`: one per core, at most 4, and no more than the
    memory limit gives each room for CHUNKS_IN_FLIGHT chunks."""
    cores = cores or os.cpu_count() or 1
    return max(1, min(cores, 4, max_memory // (chunk_bytes * CHUNKS_IN_FLIGHT)))


def _cluster(address: str, max_memory: int, chunk_bytes: int = MAX_CHUNK_BYTES):
    """A dask.distributed client for `address` (`local`: a LocalCluster of worker processes on
    the loopback interface, started here and stopped when the computation ends; each worker's
    share of --max-memory is its memory limit, beside its own WORKER_BASELINE). Their logs are
    silenced: what fails reaches the command as an exception, said once."""
    import contextlib

    try:
        from distributed import Client, LocalCluster
    except Exception as exc:
        raise OptionError(f"{{option}} needs dask.distributed ({type(exc).__name__}: {exc}); "
                          "install gradcli[dask]", "scheduler") from None

    @contextlib.contextmanager
    def client():
        import logging
        logging.getLogger("distributed").setLevel(logging.CRITICAL)
        if address == "local":
            workers = local_workers(max_memory, chunk_bytes)
            try:
                cluster = LocalCluster(n_workers=workers, threads_per_worker=1, host="127.0.0.1",
                                       dashboard_address="127.0.0.1:0", processes=True, silence_logs=logging.CRITICAL,
                                       memory_limit=max_memory // workers + WORKER_BASELINE)
            except Exception as exc:
                raise OptionError(f"{{option}} local: the worker processes could not be started "
                                  f"({type(exc).__name__}: {exc})", "scheduler") from None
            _RUNNING.append(cluster)
            try:
                with Client(cluster) as c:
                    # the workers are this command's: their numerical warnings (exp overflowing)
                    # are the diagnostics' to report, as numpy.errstate keeps them quiet in here
                    c.run(_quiet_numerics)
                    yield c
            finally:
                _RUNNING.remove(cluster)
                cluster.close()
        else:
            _check_answers(address)
            try:
                c = Client(address, timeout=f"{HANDSHAKE_SECONDS:g}s")
            except Exception as exc:
                raise OptionError(f"{{option}} {address}: cannot reach a Dask scheduler there "
                                  f"({type(exc).__name__}: {exc})", "scheduler") from None
            with c:
                yield c
    return client()


_RUNNING: list = []  # the local clusters of this process (stopped first when a signal ends it)


def stop_local_workers() -> None:
    """Kill the worker processes of this command's local clusters at once: the command is ending
    on a signal, and a worker left running could write into a temporary already removed (and
    recreate it). Called by gradcli.cli.streams before the temporaries are removed."""
    import signal

    for cluster in list(_RUNNING):
        for worker in list(getattr(cluster, "workers", {}).values()):
            process = getattr(getattr(worker, "process", None), "process", None)  # the nanny's worker
            pid = getattr(process, "pid", None)
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
    if _RUNNING:
        _release_semaphores()


def _release_semaphores() -> None:
    """Unlink the semaphores the cluster's locks made here, as Python's own ending would (the
    command ends with os._exit): else multiprocessing's resource tracker unlinks them after it
    and warns of "leaked semaphore objects" on stderr."""
    import sys

    util, synchronize = sys.modules.get("multiprocessing.util"), sys.modules.get("multiprocessing.synchronize")
    if util is None or synchronize is None:
        return
    for finalizer in list(getattr(util, "_finalizer_registry", {}).values()):
        if getattr(finalizer, "_callback", None) is synchronize.SemLock._cleanup:
            try:
                finalizer()
            except Exception:
                pass


def _check_answers(address: str) -> None:
    """A TCP scheduler must send its handshake on connection within HANDSHAKE_SECONDS (a Dask
    scheduler writes first): a server that accepts and never answers would hang the client
    (dask.distributed's own timeout does not bound its handshake)."""
    import socket

    scheme, _, rest = address.rpartition("://")
    if scheme not in ("", "tcp"):
        return  # (tls, ucx, ...: left to dask.distributed)
    host, _, port = rest.rpartition(":")
    try:
        port_number = int(port)
    except ValueError:
        raise OptionError(f"{{option}} {address}: expected tcp://HOST:PORT", "scheduler") from None
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", port_number), HANDSHAKE_SECONDS) as sock:
            sock.settimeout(HANDSHAKE_SECONDS)
            answered = sock.recv(1)
    except socket.timeout:
        raise OptionError(f"{{option}} {address}: the server there accepted the connection but did not answer as "
                          f"a Dask scheduler within {HANDSHAKE_SECONDS:g} s", "scheduler") from None
    except OSError as exc:
        raise OptionError(f"{{option}} {address}: cannot reach a Dask scheduler there ({exc.strerror or exc})",
                          "scheduler") from None
    if not answered:
        raise OptionError(f"{{option}} {address}: the server there closed the connection without answering as a "
                          "Dask scheduler", "scheduler")


def cluster_failure(exc: BaseException, address: str | None, max_memory: int) -> OptionError | None:
    """What a failure of dask.distributed itself (not of a task) means for the user: a worker
    killed (over its memory, or from outside), a connection lost or timed out; None for any
    other exception (a task's own error passes through as it is)."""
    import asyncio

    module = type(exc).__module__ or ""
    if not address or not (module.startswith("distributed") or isinstance(exc, (TimeoutError, asyncio.TimeoutError))):
        return None
    said = f"{type(exc).__name__}: {exc}".strip()
    if type(exc).__name__ == "KilledWorker":
        if address == "local":
            return OptionError(f"{{option}} local: a worker process was killed while computing: it went over its "
                               f"memory (its share of the {describe_size(max_memory)} of --max-memory, plus "
                               f"{describe_size(WORKER_BASELINE)} of its own), or was ended from outside; raise --max-memory "
                               "or give smaller --chunks", "scheduler")
        return OptionError(f"{{option}} {address}: a worker was lost while computing ({said})", "scheduler")
    return OptionError(f"{{option}} {address}: the cluster failed while computing ({said})", "scheduler")


def _quiet_numerics():
    """NumPy's floating-point warnings ignored in this (worker's) process."""
    import warnings
    warnings.filterwarnings("ignore", r"(overflow|underflow|invalid value|divide by zero) encountered", RuntimeWarning)


BACKENDS = {"cpu": Backend, "cuda": CupyBackend, "dask": DaskBackend}


def backend(device: str = "cpu", **options) -> Backend:
    """The backend `--device` names, its library checked now (a clear error, exit 2, if absent)."""
    if device == "cpu" and numbers.numbers_only():
        return ScalarBackend()
    cls = BACKENDS.get(device)
    if cls is None:
        raise GradcliError(f"unknown device '{device}': use {', '.join(BACKENDS)}")
    chosen = cls(**options) if options and cls is DaskBackend else cls()
    chosen.namespace()
    return chosen


def backend_for(xp=None) -> Backend:
    """The backend that evaluates over the array namespace `xp` (`run(graph, fetch, xp=np)`):
    the one place a namespace is mapped to its backend, so everything else asks the backend's
    flags. A backend is itself; None is NumPy's; a namespace is the backend's whose `modules`
    it is, as already imported (nothing is imported here), or Dask's with the standard's names
    (`_dask_namespace`); any other is taken as the array API standard's."""
    if xp is None:
        return Backend()
    # NumPy's first, in loops, not any(): this runs for every `run(..., xp=np)`
    for cls in (Backend, CupyBackend, DaskBackend):
        for name in cls.modules:
            if sys.modules.get(name) is xp:
                return cls()
    if isinstance(xp, Backend):
        return xp
    if xp in _DASK_NAMESPACE:
        return DaskBackend()
    return StandardBackend(xp)


class FileRef:
    """An input file named on the command line (`--set X=@PATH`), read by the backend that
    evaluates: a lazy backend reads it a chunk at a time, the others whole."""

    __slots__ = ("spec", "label")

    def __init__(self, spec: str, label: str):
        self.spec, self.label = spec, label

    def __repr__(self):
        return f"FileRef({self.spec!r})"
