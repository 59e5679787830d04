"""Saving a command's arrays to a file: `.npz` (every array), `.npy` (exactly one) or a `.zarr`
directory (needs zarr), each array under its name, its dtype and values exactly as computed.

    >>> from gradcli.io.outputs import result_arrays, save_arrays
    >>> r = gradcli.grad("y = sum(x * x)", wrt=["x"], feeds={"x": [1.0, 2.0]})
    >>> save_arrays("r.npz", result_arrays(r)).arrays["d_y_d_x"].max
    4.0

A file is written whole or not at all: into a temporary name beside it (`.NAME.*.part`),
synced, then renamed over the name in one step; any failure removes the temporary file and
raises, and an existing file is replaced only when asked (`force`). Nothing is pickled.

An array is anything with `__array__` (NumPy's, or CuPy's, copied to the host first). A Dask
array is written to Zarr chunk by chunk, never gathered in memory, its min and max computed in
the same pass (to a single .npz/.npy file it is gathered: the file needs it whole). A
`ZarrStore` goes further: given to a Dask evaluation (gradcli.api's `store`), it writes each
value as the one pass that computes everything computes it, and the result holds `Stored`
stand-ins, which `save_arrays` puts in place.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np

from gradcli.errors import OptionError

FORMATS = {".npz": "npz", ".npy": "npy", ".zarr": "zarr"}

# Where a write fails once it has started (disk full, a file-size limit, an I/O error): the
# output could not be delivered whole (docs/contract.md, exit codes).
EXIT_NOT_WRITTEN = 74

_STATS_BLOCK = 1 << 20  # numbers looked at at once for min and max: no copy of a large array


class ExistsError(OptionError):
    """The path exists and replacing it was not asked for (`force`; the command line's --force)."""

    def __init__(self, path: str):
        super().__init__(f"{{option}} '{path}' already exists; pass {{force}} to replace it", "path")
        self.name_option("path")

    def name_option(self, spelled: str) -> None:
        force = "--force" if spelled.startswith("--") else "force=True"
        self.message = self.template.replace("{option}", spelled).replace("{force}", force)
        self.args = (self.message,)


class WriteError(OptionError):
    """Writing the file failed part way; nothing was left under its name."""

    exit_code = EXIT_NOT_WRITTEN


@dataclass(frozen=True)
class SavedArray:
    """One array as written: its name in the file, shape, dtype, the smallest and largest
    number (NaN ignored; None where there is none) and whether every number is finite; `where`
    says how to find it (`r.npz:y`, the form `--set x=@r.npz:y` reads back, `r.npy`, `r.zarr/y`)."""
    name: str
    shape: tuple[int, ...]
    dtype: str
    min: float | None
    max: float | None
    finite: bool
    where: str


@dataclass(frozen=True)
class Saved:
    """What `save_arrays` wrote: the path, its format (npz, npy or zarr), its size in bytes,
    each array written, and the names given no array (None: an unconnected gradient)."""
    path: str
    format: str
    bytes: int
    arrays: dict[str, SavedArray]
    not_written: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- names

def array_names(outputs: Iterable[str], gradients: Iterable[str] = (), jacobians: Iterable[str] = (),
                hessians: Iterable[str] = (), mixed: Iterable[tuple[str, str]] = ()) -> dict[tuple, str]:
    """The name each array of a result is saved under, by what it is: `("output", Y)` under its
    own name (`_` for a final bare expression); `("gradient", X)` and `("jacobian", X)` dY/dX
    under `d_Y_d_X`, with several outputs (a gradient of their sum) `d_Y+Z_d_X`; `("hessian", X)`
    d²Y/dX² under `d2_Y_d_X_d_X`; `("mixed", X, Z)` d²Y/dX dZ under `d2_Y_d_X_d_Z`. Two arrays
    that would share a name are an error, never one overwriting the other. (The one place the
    names are made: for a finished result, `result_arrays`, and for arrays written as they are
    computed, gradcli.api's `store`.)"""
    outputs = list(outputs)
    of = "+".join(outputs) or "y"
    names: dict[tuple, str] = {}
    taken: set[str] = set()

    def add(key: tuple, name: str, what: str) -> None:
        if name in taken:
            raise OptionError(f"two arrays would be saved under the name '{name}' in {{option}} (the second: {what}); "
                              "rename a value of the program", "path")
        taken.add(name)
        names[key] = name

    for y in outputs:
        add(("output", y), y, f"the value {y}")
    for x in gradients:
        add(("gradient", x), f"d_{of}_d_{x}", f"the gradient d({of})/d{x}")
    for x in jacobians:
        add(("jacobian", x), f"d_{of}_d_{x}", f"the Jacobian d{of}/d{x}")
    for x in hessians:
        add(("hessian", x), f"d2_{of}_d_{x}_d_{x}", f"the Hessian block d²{of}/d{x}²")
    for x, z in mixed:
        add(("mixed", x, z), f"d2_{of}_d_{x}_d_{z}", f"the Hessian block d²{of}/d{x}d{z}")
    return names


def result_arrays(result) -> dict[str, Any]:
    """A command's result (gradcli.api.Result) as the arrays to save, under their names
    (`array_names`); None: unconnected, not written."""
    values: dict[tuple, Any] = {}
    for kind, field_name in (("output", "outputs"), ("gradient", "gradients"), ("jacobian", "jacobians"),
                             ("hessian", "hessians")):
        values.update({(kind, k): v for k, v in getattr(result, field_name, {}).items()})
    mixed = getattr(result, "mixed_hessians", {})
    values.update({("mixed", x, z): v for x, row in mixed.items() for z, v in row.items()})
    names = array_names(getattr(result, "outputs", {}), getattr(result, "gradients", {}),
                        getattr(result, "jacobians", {}), getattr(result, "hessians", {}),
                        [(x, z) for x, row in mixed.items() for z in row])
    return {names[key]: values[key] for key in names}


# --------------------------------------------------------------------------- checks before anything runs

def output_format(path: str) -> str:
    """npz, npy or zarr, by the path's suffix (any case); else an error naming the option."""
    suffix = os.path.splitext(os.path.normpath(path) if path else "")[1].lower()
    if suffix not in FORMATS:
        said = f"'{suffix}'" if suffix else "no suffix"
        raise OptionError(f"{{option}} '{path}': {said} is not a format gradcli writes; end the path in .npz "
                          "(every array), .npy (exactly one array) or .zarr (a directory; needs zarr)", "path")
    return FORMATS[suffix]


def check_destination(path: str, force: bool = False) -> str:
    """Refuse, before anything is computed, a path that could not be written: an unknown
    suffix, a folder that does not exist or cannot be written in, an existing path (unless
    `force`), Zarr not installed. Returns the format."""
    fmt = output_format(path)
    if fmt == "zarr":
        _zarr()
    _check_writable(path, fmt, force)
    return fmt


def check_file_destination(path: str, force: bool = False) -> None:
    """`check_destination` for a file of any other format (plot's images): refused before
    anything is computed where it exists (unless `force`), or its folder is missing or cannot
    be written in. The file is then written by `write_file`."""
    _check_writable(path, "file", force)


def _check_writable(path: str, fmt: str, force: bool) -> None:
    _check_replaceable(path, fmt, force)
    folder = _folder(path)
    if not os.path.exists(folder):
        raise OptionError(f"{{option}} '{path}': the folder '{folder}' does not exist", "path")
    if not os.path.isdir(folder):
        raise OptionError(f"{{option}} '{path}': '{folder}' is not a folder", "path")
    try:  # the only sure test (permissions, a read-only file system, root): make a file there
        probe = _temporary(path, fmt)
    except OSError as exc:
        raise OptionError(f"{{option}} '{path}': cannot write in the folder '{folder}': {exc.strerror or exc}",
                          "path") from None
    _remove(probe)


def _folder(path: str) -> str:
    return os.path.dirname(os.path.normpath(path)) or "."


def _check_replaceable(path: str, fmt: str, force: bool) -> None:
    if not os.path.lexists(path):
        return
    if not force:
        raise ExistsError(path)
    if os.path.isdir(path) and not os.path.islink(path):
        if fmt != "zarr":
            raise OptionError(f"{{option}} '{path}' is a directory; it is not replaced by a file, even when asked to",
                              "path")
        if os.listdir(path) and not _is_zarr_store(path):
            raise OptionError(f"{{option}} '{path}' is a directory that is not a Zarr store; it is not replaced, "
                              "even when asked to", "path")


def _is_zarr_store(path: str) -> bool:
    return any(os.path.exists(os.path.join(path, f)) for f in ("zarr.json", ".zgroup", ".zarray"))


def _zarr():
    try:
        import zarr
    except ImportError:
        raise OptionError("{option}: writing a .zarr directory needs zarr: pip install 'gradcli[dask]' "
                          "(or use .npz)", "path") from None
    return zarr


# --------------------------------------------------------------------------- writing

def save_arrays(path: str, arrays: Mapping[str, Any], force: bool = False) -> Saved:
    """Write `arrays` ({name: array, or None for none}) to `path`: `.npz` (all), `.npy`
    (exactly one) or a `.zarr` directory; each array's dtype and numbers exactly as given.
    Written whole under a temporary name and renamed into place; an existing path is
    replaced only with `force`. Returns what was written. Arrays already written by a
    `ZarrStore` for `path` (`Stored`) are not written again: the store is finished with the
    others and put in place."""
    stored = {k: v for k, v in arrays.items() if isinstance(v, Stored)}
    if stored:
        stores = {id(v.store): v.store for v in stored.values()}
        store = next(iter(stores.values()))
        if len(stores) > 1 or os.path.normpath(store.path) != os.path.normpath(path):
            raise ValueError(f"arrays written to another store cannot be saved to '{path}'")
        return store.save(arrays)
    fmt = check_destination(path, force)
    # on the host (a CuPy array copied from the GPU); a Dask array stays lazy, stored chunk by chunk
    given = {k: v if _is_dask(v) else _on_host(v) for k, v in arrays.items() if v is not None}
    if fmt == "npy" and len(given) != 1:
        listed = f": {', '.join(given)}" if given else ""
        raise OptionError(f"{{option}} '{path}': a .npy file holds exactly one array, but there are "
                          f"{len(given)}{listed}; use a .npz file (or a .zarr directory) for several", "path")
    temporary = _temporary(path, fmt)
    target = os.path.normpath(path)  # `r.zarr/` is the directory r.zarr
    try:
        if fmt == "zarr":
            stats = _write_zarr(temporary, given)
        else:
            host = {k: np.asarray(v) for k, v in given.items()}  # a Dask array is gathered for a single file
            with open(temporary, "wb") as stream:
                if fmt == "npy":
                    np.lib.format.write_array(stream, next(iter(host.values())), allow_pickle=False)
                else:
                    _write_npz(stream, host)
                stream.flush()
                os.fsync(stream.fileno())
            stats = {k: _stats(v) for k, v in host.items()}
        size = _size(temporary)
        _put_in_place(temporary, target, force)
    except BaseException as exc:
        _close_gate(temporary)
        _remove(temporary)
        _raise_not_written(exc, path)
        raise
    _forget_gate(temporary)
    return _saved(path, fmt, size, {k: (v.shape, v.dtype, *stats[k]) for k, v in given.items()},
                  [k for k, v in arrays.items() if v is None])


def write_file(path: str, write, force: bool = False) -> int:
    """`write(stream)` (a binary file) into a temporary file beside `path`, synced, then renamed
    over the name in one step, as `save_arrays` writes: the name holds the whole new file or what
    it held before (a symbolic link there is replaced, never written through). A failure while
    writing (disk full, a file-size limit) is WriteError, exit 74. Returns the size written."""
    temporary = _temporary(path, "file")
    try:
        with open(temporary, "wb") as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        size = _size(temporary)
        _put_in_place(temporary, os.path.normpath(path), force)
    except BaseException as exc:
        _remove(temporary)
        _raise_not_written(exc, path)
        raise
    return size


class _BlockNotWritten(Exception):
    """A block's write failed (an OSError in a task, told apart from one reading an input)."""


def _raise_not_written(exc: BaseException, path: str) -> None:
    """An OSError while writing is the user's (disk full, a file-size limit): exit 74."""
    if isinstance(exc, (OSError, _BlockNotWritten)):
        said = exc.strerror or exc if isinstance(exc, OSError) else exc
        raise WriteError(f"cannot write {{option}} '{path}': {said}; nothing was left under that name",
                         "path") from None


def _saved(path: str, fmt: str, size: int, arrays: dict[str, tuple], skipped: list[str]) -> Saved:
    """`arrays`: {name: (shape, dtype, min, max, finite)}."""
    written = {}
    for name, (shape, dtype, low, high, finite) in arrays.items():
        where = path if fmt == "npy" else f"{path}:{name}" if fmt == "npz" else os.path.join(path, name)
        written[name] = SavedArray(name, tuple(int(n) for n in shape), str(np.dtype(dtype)), low, high, finite, where)
    return Saved(path, fmt, size, written, skipped)


def _on_host(arr) -> np.ndarray:
    """A NumPy array of the same dtype and numbers (a CuPy array is copied from the GPU)."""
    if not isinstance(arr, np.ndarray) and hasattr(arr, "__cuda_array_interface__") and hasattr(arr, "get"):
        arr = arr.get()
    return np.asarray(arr)


def _write_npz(stream, arrays: dict[str, np.ndarray]) -> None:
    """What np.savez writes (a zip of .npy members, nothing pickled), without passing the names
    as keyword arguments: a value may be called `file` or `allow_pickle`."""
    import zipfile

    with zipfile.ZipFile(stream, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, arr in arrays.items():
            with archive.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, arr, allow_pickle=False)


def _write_zarr(directory: str, arrays: dict[str, Any]) -> dict[str, tuple]:
    """Each array into the Zarr group at `directory` (made empty by `_temporary`); a Dask array
    chunk by chunk (`_write_lazily`), its statistics computed in the same pass."""
    group = _zarr().open_group(directory, mode="w")
    stats: dict[str, tuple] = {}
    lazy = {}
    for name, arr in arrays.items():
        if _is_dask(arr):
            lazy[name] = _write_lazily(group, name, arr, directory)
            continue
        _zarr_array(group, name, arr.shape, arr.dtype)[...] = arr
        stats[name] = _stats(arr)
    if lazy:
        import dask
        computed = dask.compute(*lazy.values())
        stats.update({k: _joined_stats(c) for k, c in zip(lazy, computed)})
    return stats


ZARR_MAX_DIMENSIONS = 32  # zarr compares a chunk with its fill value through np.broadcast, which takes 32


def _zarr_array(group, name: str, shape, dtype, chunks=None):
    if len(shape) > ZARR_MAX_DIMENSIONS:
        raise OptionError(f"{{option}}: Zarr writes arrays of at most {ZARR_MAX_DIMENSIONS} dimensions, and "
                          f"'{name}' has {len(shape)}; write it to .npz or .npy", "path")
    make = getattr(group, "create_array", None) or group.create_dataset  # zarr 3, zarr 2
    return make(name, shape=shape, dtype=dtype, **({"chunks": chunks} if chunks is not None else {}))


def _is_dask(arr) -> bool:
    return hasattr(arr, "dask") and hasattr(arr, "to_zarr") and hasattr(arr, "chunks")


def _write_lazily(group, name: str, value, path: str):
    """Make the Zarr array `name` in `group` for the Dask array `value`, and return the lazy
    write: a Dask array of each block's (min, max, all finite), shaped (blocks..., 3), whose
    every task writes its block into the Zarr array when the block is made and keeps nothing
    but those three numbers. The Zarr chunks are Dask's (made regular first where they are
    not), so no two tasks write to one Zarr chunk: no lock, no read-modify-write."""
    import uuid

    import dask.array as da

    if not _is_dask(value):
        value = da.asarray(value)
    regular = tuple(max(1, max(c, default=1)) for c in value.chunks)
    if any(len(set(c[:-1])) > 1 or (c and c[-1] > c[0]) for c in value.chunks):
        value = value.rechunk(regular)
    target = _zarr_array(group, name, value.shape, value.dtype, regular)
    _WRITING.setdefault(path, _Gate())
    return value.map_blocks(_write_block, target=target, gate=path, new_axis=value.ndim,
                            chunks=tuple((1,) * len(c) for c in value.chunks) + ((3,),),
                            dtype=np.float64, meta=np.empty((0,) * (value.ndim + 1), np.float64),
                            name=f"gradcli-write-{uuid.uuid4().hex}")


def _write_block(block, target=None, gate: str = "", block_info=None):
    """One block into its place in the Zarr array `target`; its (min, max, all finite)."""
    block = np.asarray(block)
    place = tuple(slice(a, b) for a, b in block_info[0]["array-location"])
    writing = _WRITING.get(gate)  # (none in a worker process of a cluster)
    if writing is not None and not writing.enter():
        raise _BlockNotWritten("the pass failed")  # another block's failure already ended it
    try:
        target[place] = block
    except OSError as exc:
        raise _BlockNotWritten(exc.strerror or str(exc)) from None
    finally:
        if writing is not None:
            writing.leave()
    low, high, finite = _stats(block)
    stats = np.array([np.nan if low is None else low, np.nan if high is None else high, float(finite)])
    return stats.reshape((1,) * block.ndim + (3,))


def _joined_stats(blocks) -> tuple[float | None, float | None, bool]:
    """The (min, max, all finite) of an array from its blocks' (`_write_block`'s)."""
    parts = np.asarray(blocks, dtype=np.float64).reshape(-1, 3)
    if not len(parts):
        return None, None, True
    with np.errstate(all="ignore"):
        return _number(np.fmin.reduce(parts[:, 0])), _number(np.fmax.reduce(parts[:, 1])), bool(parts[:, 2].all())


class _Gate:
    """The blocks being written into one temporary store: when a pass fails, the scheduler
    raises at once while other threads may still be writing; the store is removed once none
    is, and no block starts writing after that."""

    def __init__(self):
        import threading
        self.changed = threading.Condition()
        self.active, self.closed = 0, False

    def enter(self) -> bool:
        with self.changed:
            if self.closed:
                return False
            self.active += 1
            return True

    def leave(self) -> None:
        with self.changed:
            self.active -= 1
            self.changed.notify_all()

    def close(self, timeout: float = 60.0) -> None:
        with self.changed:
            self.closed = True
            self.changed.wait_for(lambda: self.active == 0, timeout)


_WRITING: dict[str, _Gate] = {}  # temporary store -> its writes in flight


def _close_gate(directory: str, timeout: float = 60.0) -> None:
    """Wait for the blocks being written into `directory`, and let no other start. The closed
    gate stays registered: a block that starts later must find it closed (without it, the block
    would write freely and create the removed store again)."""
    gate = _WRITING.get(directory)
    if gate is not None:
        gate.close(timeout)


def _forget_gate(directory: str) -> None:
    """The store is in its place and every block was written: its gate is no longer needed."""
    _close_gate(directory)
    _WRITING.pop(directory, None)


@dataclass(frozen=True, eq=False)
class Stored:
    """An array written into a `ZarrStore` as it was computed, never held: what a result holds
    in its place. Its shape, dtype, smallest and largest number (NaN ignored; None where there
    is none) and whether every number is finite."""
    name: str
    shape: tuple[int, ...]
    dtype: Any
    min: float | None
    max: float | None
    finite: bool
    store: "ZarrStore"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        import math
        return math.prod(self.shape)


class ZarrStore:
    """A `.zarr` directory that a lazy (Dask) evaluation writes into as it computes, the `store`
    of gradcli.api's evaluate and grad: `write(name, value)` gives the lazy write of one array
    (computed in the same pass as everything else), `written(name, computed)` what the result
    holds in its place (a `Stored`). Everything goes into a temporary directory beside `path`;
    `save_arrays` (with the result's arrays) writes what is left and renames it into place, and
    `discard` removes an unfinished one (safe to call at any time, also after a save).

        >>> store = ZarrStore("g.zarr")
        >>> r = gradcli.grad(text, wrt=["x"], feeds=feeds, device="dask", store=store)
        >>> saved = save_arrays("g.zarr", result_arrays(r))   # or, on failure, store.discard()
    """

    def __init__(self, path: str, force: bool = False):
        if check_destination(path, force) != "zarr":
            raise OptionError(f"{{option}} '{path}': arrays are written as they are computed only into a .zarr "
                              "directory", "path")
        self.path, self.force = path, force
        self.temporary: str | None = None
        self._group = None
        self._arrays: dict[str, tuple] = {}  # name -> (shape, dtype)

    def write(self, name: str, value):
        """The lazy write of `value` (a Dask array) under `name`: a Dask array to compute."""
        try:
            if self._group is None:
                self.temporary = _temporary(self.path, "zarr")
                self._group = _zarr().open_group(self.temporary, mode="w")
            lazy = _write_lazily(self._group, name, value, self.temporary)
        except BaseException as exc:
            self.discard()
            _raise_not_written(exc, self.path)
            raise
        self._arrays[name] = (tuple(int(n) for n in value.shape), np.dtype(value.dtype))
        return lazy

    def written(self, name: str, computed) -> Stored:
        """What stands for the array `name` once its write is computed (`computed`)."""
        shape, dtype = self._arrays[name]
        return Stored(name, shape, dtype, *_joined_stats(computed), self)

    def failed(self, exc: BaseException) -> None:
        """The computation that wrote failed with `exc`: nothing is left, and a write's own
        failure (disk full) is said as one (exit 74)."""
        self.discard()
        if isinstance(exc, _BlockNotWritten):
            _raise_not_written(exc, self.path)

    def save(self, arrays: Mapping[str, Any]) -> Saved:
        """Finish: the arrays not yet written (those not `Stored`: an unconnected gradient's
        zeros) into the store, then the store renamed into place (see `save_arrays`)."""
        if self.temporary is None:
            raise ValueError(f"the store for '{self.path}' was already saved or discarded")
        given = {k: v for k, v in arrays.items() if v is not None}
        stats: dict[str, tuple] = {}
        try:
            for name, arr in given.items():
                if isinstance(arr, Stored):
                    if arr.store is not self or name != arr.name:
                        raise ValueError(f"'{name}' was not written under that name by this store")
                    stats[name] = (arr.shape, arr.dtype, arr.min, arr.max, arr.finite)
                    continue
                arr = _on_host(arr)
                _zarr_array(self._group, name, arr.shape, arr.dtype)[...] = arr
                stats[name] = (arr.shape, arr.dtype, *_stats(arr))
            size = _size(self.temporary)
            _put_in_place(self.temporary, os.path.normpath(self.path), self.force)
        except BaseException as exc:
            self.discard()
            _raise_not_written(exc, self.path)
            raise
        _forget_gate(self.temporary)
        self.temporary, self._group = None, None
        return _saved(self.path, "zarr", size, stats, [k for k, v in arrays.items() if v is None])

    def discard(self) -> None:
        if self.temporary is not None:
            _close_gate(self.temporary)
            _remove(self.temporary)
        self.temporary, self._group = None, None


def _stats(arr: np.ndarray) -> tuple[float | None, float | None, bool]:
    """(min, max, all finite) with NaN ignored, a block of rows at a time (an array that is a
    broadcast view is never made whole)."""
    if arr.size == 0:
        return None, None, True
    if arr.ndim == 0:
        arr = arr.reshape(1)
    row = max(1, arr.size // arr.shape[0])
    step = max(1, _STATS_BLOCK // row)
    low, high, finite = np.nan, np.nan, True
    with np.errstate(all="ignore"):
        for start in range(0, arr.shape[0], step):
            block = arr[start:start + step]
            low = np.fmin(low, np.fmin.reduce(block, axis=None))
            high = np.fmax(high, np.fmax.reduce(block, axis=None))
            finite = finite and bool(np.isfinite(block).all())
    return _number(low), _number(high), finite


def _number(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if value != value else value


def _temporary(path: str, fmt: str) -> str:
    """A new file (a directory for Zarr) beside `path`, with the permissions a new file gets."""
    import tempfile

    folder, base = _folder(path), os.path.basename(os.path.normpath(path))
    mask = os.umask(0)
    os.umask(mask)
    if fmt == "zarr":
        made = tempfile.mkdtemp(prefix=f".{base}.", suffix=".part", dir=folder)
        _UNFINISHED[made] = None
        os.chmod(made, 0o777 & ~mask)
        return made
    handle, made = tempfile.mkstemp(prefix=f".{base}.", suffix=".part", dir=folder)
    _UNFINISHED[made] = None
    try:
        os.fchmod(handle, 0o666 & ~mask)
    finally:
        os.close(handle)
    return made


# Temporaries being written (-> (old store moved aside, its name) while a store is swapped in):
# what a signal that ends the command removes, so that no `.NAME.*.part` is left behind
_UNFINISHED: dict[str, tuple[str, str] | None] = {}


def remove_unfinished() -> None:
    """Remove every temporary this process is still writing, its blocks in flight waited for
    (briefly): the command is ending on a signal. An old store moved aside is put back, or
    removed where the new one is already in its place."""
    for temporary, swap in list(_UNFINISHED.items()):
        _close_gate(temporary, timeout=5.0)
        if swap is not None:
            aside, path = swap
            if os.path.lexists(temporary):  # the new store is not in yet: the old one back
                try:
                    os.rename(aside, path)
                except OSError:
                    pass
            else:
                _remove(aside)
        _remove(temporary)


def _put_in_place(temporary: str, path: str, force: bool) -> None:
    """Rename the finished file over `path` in one step. Without `force`, a path that appeared
    meanwhile is not replaced (a hard link fails where the name exists)."""
    if os.path.isdir(temporary):
        _put_directory_in_place(temporary, path, force)
    elif force:
        os.replace(temporary, path)
    else:
        try:
            os.link(temporary, path)
        except FileExistsError:
            raise ExistsError(path) from None
        except OSError:  # a file system without hard links
            if os.path.lexists(path):
                raise ExistsError(path) from None
            os.replace(temporary, path)
        else:
            _remove(temporary)
    _UNFINISHED.pop(temporary, None)
    _sync_folder(path)


def _put_directory_in_place(temporary: str, path: str, force: bool) -> None:
    """A directory cannot be renamed over one that has files: the old store is moved aside, the
    new one renamed in, then the old one removed (the name never holds a partial store)."""
    import shutil

    aside = None
    if os.path.lexists(path):
        if not force:
            raise ExistsError(path)
        aside = temporary + ".old"
        _UNFINISHED[temporary] = (aside, path)
        os.rename(path, aside)
    try:
        os.rename(temporary, path)
    except BaseException:
        if aside is not None:
            os.rename(aside, path)
        raise
    if aside is not None:
        if os.path.isdir(aside) and not os.path.islink(aside):
            shutil.rmtree(aside, ignore_errors=True)
        else:
            _remove(aside)
    _UNFINISHED.pop(temporary, None)


def _sync_folder(path: str) -> None:
    try:
        fd = os.open(_folder(path), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # not every file system syncs a directory; the rename itself is done
    finally:
        os.close(fd)


def _size(path: str) -> int:
    if not os.path.isdir(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(folder, f)) for folder, _, files in os.walk(path) for f in files)


def _remove(path: str) -> None:
    import shutil

    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.remove(path)
    except OSError:
        pass
    _UNFINISHED.pop(path, None)
