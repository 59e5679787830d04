"""`--set NAME=VALUE` and `--grad-ys NAME=VALUE`: a literal of the language, or `@PATH` to a
`.npy`, `.npz` (`@f.npz:key`), `.json` or `.csv` file. Nothing is ever unpickled."""
from __future__ import annotations

import json
import os

import numpy as np

from .errors import GradcliError, Source

# Regular files larger than this are refused (a value file, not a data lake).
MAX_VALUE_FILE_BYTES = 4 << 30


def split_assignment(text: str, option: str) -> tuple[str, str]:
    name, eq, value = text.partition("=")
    name = name.strip()
    if not eq or not name:
        raise GradcliError(f"{option} expects NAME=VALUE, got '{text}'")
    if not name.replace("_", "a").isalnum() or name[0].isdigit():
        raise GradcliError(f"{option} {text}: '{name}' is not a valid name")
    return name, value.strip()


def parse_value(text: str, label: str) -> np.ndarray:
    """A VALUE as a float64 array; `label` (e.g. `--set x`) names it in errors."""
    if text.startswith("@"):
        return load_file(text[1:], label)
    fast = _plain_numbers(text)
    if fast is not None:
        return fast
    from .graph import Literal, _Lowering, _Scope
    from .parser import normalise, parse_value as parse
    from .syntax import Module

    source = Source(label, normalise(text) if text.strip() else text)
    if not text.strip():
        raise GradcliError(f"{label}: the value is empty")
    node = parse(source)
    lowering = _Lowering(Module([]), source, {})
    value = lowering.lower(node, _Scope(None))
    if not isinstance(value, Literal):
        raise GradcliError(f"{label}: the value must be a literal, such as 3, [1, 2] or [[1, 0], [0, 1]] "
                           "(or @file.npy)")
    return value.value


def _plain_numbers(text: str) -> np.ndarray | None:
    """Fast path for large values written as plain JSON numbers: no grammar needed."""
    if len(text) < 2048 or not text.lstrip().startswith("["):
        return None
    try:
        data = json.loads(text)
        arr = np.array(data, dtype=np.float64)
    except (ValueError, TypeError):
        return None
    return arr


def _regular_file(path: str, label: str) -> None:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise GradcliError(f"{label}: cannot read '{path}': {exc.strerror or exc}") from None
    import stat
    if stat.S_ISDIR(st.st_mode):
        raise GradcliError(f"{label}: '{path}' is a directory, not a value file")
    if not stat.S_ISREG(st.st_mode):
        raise GradcliError(f"{label}: '{path}' is not a regular file")
    if st.st_size > MAX_VALUE_FILE_BYTES:
        raise GradcliError(f"{label}: '{path}' is {st.st_size / 2**30:.1f} GiB, larger than the "
                           f"{MAX_VALUE_FILE_BYTES >> 30} GiB a value file may have")


def _numeric(arr, label: str, path: str) -> np.ndarray:
    """Real numbers; floating-point data keeps its precision (the run's --dtype decides),
    so a float32 file is not widened to float64 on the way in."""
    arr = np.asarray(arr)
    if arr.dtype.kind not in "biuf":
        raise GradcliError(f"{label}: '{path}' holds {arr.dtype} data; gradcli needs real numbers")
    return arr if arr.dtype.kind == "f" and arr.dtype.itemsize >= 4 else arr.astype(np.float64)


def load_file(spec: str, label: str) -> np.ndarray:
    path, key = spec, None
    lower = spec.lower()
    if ".npz:" in lower:
        cut = lower.rindex(".npz:") + 4
        path, key = spec[:cut], spec[cut + 1:]
    _regular_file(path, label)
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".npy", ".npz", ".json", ".csv"):
        raise GradcliError(f"{label}: cannot read '{path}': use a .npy, .npz, .json or .csv file")
    try:
        if ext == ".npy":
            return _numeric(np.load(path, allow_pickle=False), label, path)
        if ext == ".npz":
            with np.load(path, allow_pickle=False) as archive:
                keys = list(archive.files)
                if key is None:
                    if len(keys) != 1:
                        raise GradcliError(f"{label}: '{path}' holds {len(keys)} arrays ({', '.join(keys)}); "
                                           f"pick one with @{path}:KEY")
                    key = keys[0]
                if key not in keys:
                    raise GradcliError(f"{label}: '{path}' has no array '{key}'; it has {', '.join(keys) or 'none'}")
                return _numeric(archive[key], label, f"{path}:{key}")
        if ext == ".json":
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
            data = _json_numbers(data)
            try:
                return np.array(data, dtype=np.float64)
            except (ValueError, TypeError):
                raise GradcliError(f"{label}: '{path}' is not a number or a rectangular nested list of numbers") from None
        return _load_csv(path, label)
    except GradcliError:
        raise
    except ValueError as exc:
        if "pickle" in str(exc).lower() or "object" in str(exc).lower():
            raise GradcliError(f"{label}: '{path}' holds Python objects; gradcli never unpickles data") from None
        raise GradcliError(f"{label}: '{path}' is not a valid {ext} file ({exc})") from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise GradcliError(f"{label}: cannot read '{path}' as {ext}: {exc}") from None


def _json_numbers(data):
    """JSON's "NaN" / "Infinity" / "-Infinity" strings (as gradcli writes them) as floats."""
    specials = {"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}
    if isinstance(data, str):
        if data in specials:
            return float(specials[data])
        raise GradcliError(f"the string {data!r} is not a number")
    if isinstance(data, list) and any(isinstance(v, (str, list)) for v in data):
        return [_json_numbers(v) for v in data]
    return data


def _load_csv(path: str, label: str) -> np.ndarray:
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    rows = [ln for ln in text.splitlines() if ln.strip()]
    if not rows:
        raise GradcliError(f"{label}: '{path}' is empty")
    widths = {ln.count(",") for ln in rows}
    if len(widths) > 1:
        counts = [ln.count(",") + 1 for ln in rows]
        bad = next(i for i, c in enumerate(counts) if c != counts[0])
        raise GradcliError(f"{label}: '{path}' has ragged rows: row 1 has {counts[0]} fields, "
                           f"row {bad + 1} has {counts[bad]}")
    try:
        arr = np.loadtxt(rows, delimiter=",", dtype=np.float64, ndmin=2)
    except ValueError:
        try:  # a header row
            arr = np.loadtxt(rows[1:], delimiter=",", dtype=np.float64, ndmin=2)
        except ValueError as exc:
            raise GradcliError(f"{label}: '{path}' is not a CSV of numbers ({exc})") from None
    if arr.shape[0] == 1 and len(rows) == 1:
        return arr[0]
    return arr
