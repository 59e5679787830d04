"""Saving a command's arrays to a file: `.npz` (every array), `.npy` (exactly one) or a `.zarr`
directory (needs zarr), each array under its name, its dtype and values exactly as computed.

    >>> from gradcli.outputs import result_arrays, save_arrays
    >>> r = gradcli.grad("y = sum(x * x)", wrt=["x"], feeds={"x": [1.0, 2.0]})
    >>> save_arrays("r.npz", result_arrays(r)).arrays["d_y_d_x"].max
    4.0

A file is written whole or not at all: into a temporary name beside it (`.NAME.*.part`),
synced, then renamed over the name in one step; any failure removes the temporary file and
raises, and an existing file is replaced only when asked (`force`). Nothing is pickled.

An array is anything with `__array__` (NumPy's, or CuPy's, copied to the host first). An array
that can store itself chunk by chunk (a Dask array) is written to Zarr with `dask.array.store`,
never gathered in memory; its min and max are computed in the same pass.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from .errors import GradcliError, OptionError

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

    def name_option(self, spelled: str, force: str | None = None) -> None:
        if force is None:
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

def result_arrays(result) -> dict[str, Any]:
    """A command's result (gradcli.api.Result) as the arrays to save, under their names: each
    output under its own name (`y`; `_` for a final bare expression); a gradient or Jacobian
    dY/dX under `d_Y_d_X`, with several outputs (a gradient of their sum) `d_Y+Z_d_X`; a Hessian
    block d²Y/dX dZ under `d2_Y_d_X_d_Z` (X's own block `d2_Y_d_X_d_X`). None: unconnected, not
    written. Two arrays that would share a name are an error, never one overwriting the other."""
    outputs = dict(getattr(result, "outputs", {}))
    of = "+".join(outputs) or "y"
    named: dict[str, Any] = {}

    def add(name: str, arr, what: str) -> None:
        if name in named:
            raise OptionError(f"two arrays would be saved under the name '{name}' in {{option}} (the second: {what}); "
                              "rename a value of the program", "path")
        named[name] = arr

    for name, arr in outputs.items():
        add(name, arr, f"the value {name}")
    for x, arr in getattr(result, "gradients", {}).items():
        add(f"d_{of}_d_{x}", arr, f"the gradient d({of})/d{x}")
    for x, arr in getattr(result, "jacobians", {}).items():
        add(f"d_{of}_d_{x}", arr, f"the Jacobian d{of}/d{x}")
    for x, arr in getattr(result, "hessians", {}).items():
        add(f"d2_{of}_d_{x}_d_{x}", arr, f"the Hessian block d²{of}/d{x}²")
    for x, row in getattr(result, "mixed_hessians", {}).items():
        for z, arr in row.items():
            add(f"d2_{of}_d_{x}_d_{z}", arr, f"the Hessian block d²{of}/d{x}d{z}")
    return named


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
    return fmt


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
    replaced only with `force`. Returns what was written."""
    fmt = check_destination(path, force)
    # on the host (a CuPy array copied from the GPU); a Dask array stays lazy, stored chunk by chunk
    given = {k: v if _is_dask(v) else _on_host(v) for k, v in arrays.items() if v is not None}
    skipped = [k for k, v in arrays.items() if v is None]
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
        _remove(temporary)
        if isinstance(exc, OSError):
            raise WriteError(f"cannot write {{option}} '{path}': {exc.strerror or exc}; nothing was left under "
                             "that name", "path") from None
        raise
    arrays_written = {}
    for name, arr in given.items():
        where = path if fmt == "npy" else f"{path}:{name}" if fmt == "npz" else os.path.join(path, name)
        low, high, finite = stats[name]
        arrays_written[name] = SavedArray(name, tuple(int(n) for n in arr.shape), str(np.dtype(arr.dtype)),
                                          low, high, finite, where)
    return Saved(path, fmt, size, arrays_written, skipped)


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
    with dask.array.store, chunk by chunk, its statistics computed in the same pass."""
    zarr = _zarr()
    group = zarr.open_group(directory, mode="w")
    make = getattr(group, "create_array", None) or group.create_dataset  # zarr 3, zarr 2
    stats: dict[str, tuple] = {}
    lazy = {}
    for name, arr in arrays.items():
        if _is_dask(arr):
            chunks = tuple(max(1, c[0]) if c else 1 for c in arr.chunks) or None
            lazy[name] = (arr, make(name, shape=arr.shape, dtype=arr.dtype, chunks=chunks))
            continue
        target = make(name, shape=arr.shape, dtype=arr.dtype)
        target[...] = arr
        stats[name] = _stats(arr)
    if lazy:
        stats.update(_store_dask(lazy))
    return stats


def _is_dask(arr) -> bool:
    return hasattr(arr, "dask") and hasattr(arr, "to_zarr") and hasattr(arr, "chunks")


def _store_dask(lazy: dict) -> dict[str, tuple]:
    import warnings

    import dask
    import dask.array as da

    names = list(lazy)
    sources = [lazy[k][0] for k in names]
    stored = da.store(sources, [lazy[k][1] for k in names], compute=False, lock=True)
    summaries = [(da.nanmin(a) if a.size else None, da.nanmax(a) if a.size else None, da.isfinite(a).all())
                 for a in sources]
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # an all-NaN array has no min: None
        warnings.simplefilter("ignore", RuntimeWarning)
        _, computed = dask.compute(stored, summaries)
    return {k: (_number(low), _number(high), bool(finite)) for k, (low, high, finite) in zip(names, computed)}


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
        os.chmod(made, 0o777 & ~mask)
        return made
    handle, made = tempfile.mkstemp(prefix=f".{base}.", suffix=".part", dir=folder)
    try:
        os.fchmod(handle, 0o666 & ~mask)
    finally:
        os.close(handle)
    return made


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
