"""Arrays read from files: `@PATH` to a `.npy`, `.npz` (`@f.npz:key`), `.json` or `.csv` file,
as `--set NAME=@PATH` names them.

Whatever a file says about itself is checked before it is believed: a `.npy` header's shape
against the bytes really there, an `.npz` member's size against the memory limit before it is
decompressed, and the array a text file makes against the limit as it grows. Nothing is
unpickled, nothing is read by recursion, and every refusal names the file (with the line and
column for text files)."""
from __future__ import annotations

import math
import os
import re  # (gradcli.errors has imported it: it costs the start-up nothing here)
import stat

import numpy as np

from gradcli.errors import GradcliError, OptionError, Pos, Source
from gradcli.limits import default_memory_limit, describe_size

# Beyond this many lines, an error in a text file is reported without quoting its line
# (quoting needs the lines before it as a Source).
_QUOTE_LINES_UP_TO = 100_000
# A .npy array at least this large is read by several threads at once where the caller allows it:
# copying out of the page cache (and the first touch of the new array's pages) is bound by one
# core, not by the memory's bandwidth (an 80 MB float64 file: 16 ms on one thread, 12 on two).
PARALLEL_READ_BYTES = 16 << 20


def max_dims() -> int:
    return 64  # NumPy's limit on an array's dimensions (since NumPy 2; gradcli needs numpy>=2.1)


def too_large(label: str, what: str, nbytes: int, max_bytes: int) -> GradcliError:
    return OptionError(f"{label}: {what} needs {describe_size(nbytes)}, more than the {describe_size(max_bytes)} allowed; "
                       "raise the limit with {option} if the machine has it", "max_memory")


# --------------------------------------------------------------------------- files

def load_file(spec: str, label: str, max_bytes: int | None = None, threads: int = 1) -> np.ndarray:
    """`PATH` or `PATH.npz:KEY` as an array, allocating at most `max_bytes` for it; a large `.npy`
    is read by up to `threads` threads (the same bytes, only sooner)."""
    import warnings

    max_bytes = default_memory_limit() if max_bytes is None else max_bytes
    path, key = spec, None
    lower = spec.lower()
    if ".npz:" in lower:
        cut = lower.rindex(".npz:") + 4
        path, key = spec[:cut], spec[cut + 1:]
    fh, size = _open_regular(path, label)
    with fh:
        ext = os.path.splitext(path)[1].lower()
        if ext not in (".npy", ".npz", ".json", ".csv"):
            raise GradcliError(f"{label}: cannot read '{path}': use a .npy, .npz, .json or .csv file")
        try:
            if ext in (".npy", ".npz"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # NumPy warns, and goes on, for headers written by Python 2
                    if ext == ".npy":
                        return _npy_file(fh, size, label, path, max_bytes, threads)
                    return _npz(fh, key, label, path, max_bytes)
            text = _read_text(fh, size, label, path, max_bytes)
            if ext == ".json":
                return _JsonReader(text, label, path, max_bytes).read()
            return _csv(text, label, path, max_bytes)
        except (OSError, EOFError) as exc:
            raise GradcliError(f"{label}: cannot read '{path}' as {ext}: {exc}") from None


def _open_regular(path: str, label: str):
    """The file, opened once and checked through its descriptor (no race between the check and
    the read; a FIFO is not waited on)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if isinstance(exc, IsADirectoryError):
            raise GradcliError(f"{label}: '{path}' is a directory, not a value file") from None
        raise GradcliError(f"{label}: cannot read '{path}': {exc.strerror or exc}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise GradcliError(f"{label}: '{path}' is a directory, not a value file")
        raise GradcliError(f"{label}: '{path}' is not a regular file")
    fh = os.fdopen(fd, "rb")
    return fh, os.fstat(fd).st_size


# ----------------------------------------------------------------- .npy and .npz

def npy_layout(path: str, label: str) -> tuple[tuple, np.dtype, int, bool]:
    """(shape, dtype, data offset, Fortran order) of a `.npy` file that a reader will read a
    block at a time (Dask), checked as `load_file` checks it (a regular file, never a FIFO
    waited on; the header's array exactly the bytes that follow it), but not read."""
    fh, size = _open_regular(path, label)
    with fh:
        try:
            return _npy_header(fh, label, path, size, max_bytes=None)
        except (OSError, EOFError) as exc:
            raise GradcliError(f"{label}: cannot read '{path}' as .npy: {exc}") from None


def _npy_header(fp, label: str, where: str, available: int, max_bytes: int | None):
    """Read and check a .npy header: dtype real numbers, shape sane, and the data it announces
    exactly the `available` bytes after it and within the memory limit (None: not read whole,
    no limit). Returns (shape, dtype, data offset, Fortran order)."""
    import tokenize

    fmt = np.lib.format
    try:
        version = fmt.read_magic(fp)
        read_header = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}.get(version)
        if read_header:
            shape, fortran, dtype = read_header(fp)
        else:
            raise GradcliError(f"{label}: '{where}' is .npy format version {version[0]}.{version[1]}; "
                               "gradcli reads versions 1.0 and 2.0 (numpy.save writes these for numbers)")
    except (ValueError, SyntaxError, RecursionError, tokenize.TokenError) as exc:  # NumPy parses it as Python
        raise GradcliError(f"{label}: '{where}' is not a valid .npy file ({exc})") from None
    if dtype.hasobject:
        raise GradcliError(f"{label}: '{where}' holds Python objects; gradcli never unpickles data")
    if dtype.kind not in "biuf" or dtype.names or dtype.subdtype:
        raise GradcliError(f"{label}: '{where}' holds {dtype} data; gradcli needs real numbers")
    if any(n < 0 for n in shape) or len(shape) > max_dims():
        raise GradcliError(f"{label}: '{where}' is not a valid .npy file (its header's shape is {shape})")
    count = math.prod(shape)
    nbytes = count * dtype.itemsize
    data = available - fp.tell()
    if data != nbytes:
        raise GradcliError(f"{label}: '{where}' is not a valid .npy file: its header announces a {shape} "
                           f"array of {dtype} ({nbytes:,} bytes) but {max(data, 0):,} bytes follow it")
    converted = _read_as(dtype)
    needed = nbytes + (count * converted.itemsize if converted != dtype else 0)
    if max_bytes is not None and needed > max_bytes:
        raise too_large(label, f"'{where}' holds a {shape} array of {dtype} that", needed, max_bytes)
    return tuple(shape), dtype, fp.tell(), bool(fortran)


def _read_as(dtype) -> np.dtype:
    """Integers, booleans and half floats are read as float64; other floats keep their
    precision (the run's --dtype decides), so a float32 file is not widened on the way in,
    but are put in this machine's byte order."""
    if dtype.kind == "f" and dtype.itemsize >= 4:
        return dtype.newbyteorder("=")
    return np.dtype(np.float64)


def _read_npy(fp, label: str, where: str) -> np.ndarray:
    """The array of a .npy stream whose header `_npy_header` has accepted."""
    try:
        arr = np.lib.format.read_array(fp, allow_pickle=False)
    except ValueError as exc:
        raise GradcliError(f"{label}: '{where}' is not a valid .npy file ({exc})") from None
    converted = _read_as(arr.dtype)
    return arr.astype(converted) if converted != arr.dtype else arr


def _npy_file(fh, size: int, label: str, path: str, max_bytes: int, threads: int = 1) -> np.ndarray:
    shape, dtype, offset, fortran = _npy_header(fh, label, path, size, max_bytes)
    nbytes = math.prod(shape) * dtype.itemsize
    if threads > 1 and nbytes >= PARALLEL_READ_BYTES and _read_as(dtype) == dtype and hasattr(os, "preadv"):
        return _read_in_parts(fh.fileno(), shape, dtype, fortran, offset, nbytes, threads)
    fh.seek(0)
    return _read_npy(fh, label, path)


def _read_in_parts(fd: int, shape: tuple, dtype, fortran: bool, offset: int, nbytes: int, threads: int) -> np.ndarray:
    """A .npy file's data, whose header `_npy_header` has accepted and which needs no conversion,
    read straight into the new array in `threads` parts at once (os.preadv releases the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    array = np.empty(shape, dtype, order="F" if fortran else "C")
    memory = memoryview(array.reshape(-1, order="A")).cast("B")  # (its bytes in the file's order)
    page = 4096
    cuts = [nbytes * k // threads // page * page for k in range(threads)] + [nbytes]

    def read(k: int) -> None:
        start, stop = cuts[k], cuts[k + 1]
        while start < stop:
            got = os.preadv(fd, [memory[start:stop]], offset + start)
            if got == 0:
                raise EOFError("the file is shorter than its header says (was it changed while being read?)")
            start += got

    with ThreadPoolExecutor(max_workers=threads - 1, thread_name_prefix="gradcli-read") as pool:
        others = [pool.submit(read, k) for k in range(1, threads)]
        read(0)
        for other in others:
            other.result()
    return array


def _npz(fh, key: str | None, label: str, path: str, max_bytes: int) -> np.ndarray:
    """One member of a zip of .npy files. Its declared size is checked against the limit before
    anything is decompressed; zipfile stops at that size and checks the CRC, so a member that
    lies about its size is refused too."""
    import struct
    import zipfile
    import zlib

    bad = (zipfile.BadZipFile, zlib.error, struct.error, UnicodeDecodeError, EOFError, ValueError, OSError)
    if fh.read(4) not in (b"PK\x03\x04", b"PK\x05\x06"):  # as NumPy: no data before the archive
        raise GradcliError(f"{label}: '{path}' is not a valid .npz file (it does not start as a zip archive)")
    try:
        archive = zipfile.ZipFile(fh)
    except (*bad, NotImplementedError) as exc:
        raise GradcliError(f"{label}: '{path}' is not a valid .npz file ({exc})") from None
    with archive:
        members = {(info.filename[:-4] if info.filename.endswith(".npy") else info.filename): info
                   for info in archive.infolist()}
        keys = list(members)
        if key is None:
            if len(keys) != 1:
                raise GradcliError(f"{label}: '{path}' holds {len(keys)} arrays ({', '.join(keys)}); "
                                   f"pick one with @{path}:KEY")
            key = keys[0]
        if key not in members:
            raise GradcliError(f"{label}: '{path}' has no array '{key}'; it has {', '.join(keys) or 'none'}")
        info, where = members[key], f"{path}:{key}"
        if info.flag_bits & 0x41:  # traditional or strong encryption
            raise GradcliError(f"{label}: '{where}' is encrypted; gradcli reads plain .npz files")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise GradcliError(f"{label}: '{where}' uses zip compression method {info.compress_type}; gradcli "
                               "reads stored or deflated members (as numpy.savez and savez_compressed write them)")
        if info.file_size > max_bytes:
            raise too_large(label, f"'{where}' (decompressed)", info.file_size, max_bytes)
        try:
            with archive.open(info) as member:
                _npy_header(member, label, where, info.file_size, max_bytes)
            with archive.open(info) as member:
                arr = _read_npy(member, label, where)
                if member.read(1):  # also makes zipfile check the CRC at the end
                    raise GradcliError(f"{label}: '{where}' holds more data than its header announces")
        except bad as exc:
            raise GradcliError(f"{label}: '{where}' is not a valid .npz member ({exc})") from None
        except NotImplementedError as exc:  # zipfile's word for a feature it lacks (patched data, ...)
            raise GradcliError(f"{label}: '{where}' uses a zip feature gradcli does not read ({exc})") from None
        return arr


# ----------------------------------------------------------------- text files

def _read_text(fh, size: int, label: str, path: str, max_bytes: int) -> str:
    """A text file's contents (UTF-8, a BOM dropped), refused unread if larger than the limit."""
    if size > max_bytes:
        raise too_large(label, f"reading '{path}'", size, max_bytes)
    data = fh.read(size + 1)
    if len(data) > size:  # the size was wrong (/proc files say 0): read on, as far as the limit
        data = bytearray(data)
        while len(data) <= max_bytes and (more := fh.read(min(1 << 20, max_bytes + 1 - len(data)))):
            data += more
    if len(data) > max_bytes:
        raise too_large(label, f"reading '{path}'", len(data), max_bytes)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", "replace")
        offset = len(data[:exc.start].decode("utf-8", "replace"))
        raise _error_at(label, path, text, offset,
                        f"the file is not valid UTF-8 text (byte 0x{data[exc.start]:02x})") from None


def _line_breaks():
    return re.compile(r"\r\n?|\n")  # as in programs: \n, \r\n or \r ends a line


def _lines(text: str):
    """(line number, line) for each line of `text`, without its line break."""
    start = number = 0
    for number, brk in enumerate(_line_breaks().finditer(text), 1):
        yield number, text[start:brk.start()]
        start = brk.end()
    if start < len(text):
        yield number + 1, text[start:]


def _error_at(label: str, path: str, text: str, offset: int, message: str) -> GradcliError:
    """A positioned error at character `offset` of a text file."""
    line = text.count("\n", 0, offset) + text.count("\r", 0, offset) - text.count("\r\n", 0, offset) + 1
    line_start = max(text.rfind("\n", 0, offset), text.rfind("\r", 0, offset)) + 1
    end = _line_breaks().search(text, offset)
    return _error_on_line(label, path, line, offset - line_start + 1,
                          text[line_start:end.start() if end else len(text)], message)


def _error_on_line(label: str, path: str, line: int, column: int, line_text: str, message: str) -> GradcliError:
    """`PATH:LINE:COL: error: LABEL: message`, quoting the line where that is cheap and unambiguous."""
    quoted = (line <= _QUOTE_LINES_UP_TO and len(line_text) <= 500
              and len(line_text.splitlines()) <= 1)  # Source splits lines on more characters
    shown = "\n" * (line - 1) + line_text if quoted else ""
    return GradcliError(f"{label}: {message}", Pos(line, column), Source(path, shown))


def _number_overflows(piece: str) -> bool:
    """A number written in the file that float64 cannot hold (not one spelled as infinity)."""
    return math.isinf(float(piece.replace('"', ""))) and "inf" not in piece.lower()


# JSON: a number, a list of numbers, or nested lists of equal lengths. NaN and infinities are
# read as gradcli writes them ("NaN", "Infinity", "-Infinity") and as Python writes them (bare).
_WS = r"[ \t\n\r]*"
_JSON_SCALAR = r'-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|"(?:NaN|-?Infinity)"|NaN|-?Infinity'
_JSON_TOKEN = (  # a list without lists (the common innermost list) is one token, checked apart
    rf"{_WS}(?:(?P<leaf>\[[^\[\]]*\])|(?P<open>\[)|(?P<close>\])|(?P<comma>,)|(?P<scalar>{_JSON_SCALAR})"
    r'|(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<string>"(?:[^"\\\n]|\\.){0,40}"?)|(?P<other>.)|(?P<end>\Z))')


class _JsonReader:
    """One pass over the tokens with an explicit stack (no recursion): the shape is checked as
    lists close, and the numbers go into one flat buffer (no Python object per number)."""

    def __init__(self, text: str, label: str, path: str, max_bytes: int):
        import array

        self.text, self.label, self.path, self.max_bytes = text, label, path, max_bytes
        self.token = re.compile(_JSON_TOKEN, re.S | re.A).match
        self.is_scalar = re.compile(rf"{_WS}(?:{_JSON_SCALAR}){_WS}", re.A).fullmatch
        self.blank = re.compile(_WS).fullmatch
        self.values = array.array("d")
        self.max_dims = max_dims()
        self.counts: list[int] = []          # items so far in each open list
        self.lengths: list[int | None] = []  # the length every list at that depth must have
        self.leaf_depth = None               # the depth at which numbers stand: the number of dimensions
        self.deepest_list = -1               # the deepest depth at which a list has stood

    def read(self) -> np.ndarray:
        text, counts = self.text, self.counts
        expect = "value"  # or "value or ]", ", or ]", "end"
        pos = 0
        while True:
            m = self.token(text, pos)
            kind = m.lastgroup
            start, pos = m.start(kind), m.end()
            depth = len(counts)
            if kind in ("scalar", "open", "leaf"):
                if expect not in ("value", "value or ]"):
                    raise self.fail(start, "expected ',' or ']'" if counts else "expected the end of the file")
                self.stand(start, depth, kind != "scalar")
                if counts:
                    if depth - 1 < len(self.lengths) and counts[-1] == self.lengths[depth - 1]:
                        raise self.fail(start, "ragged lists: this list has more items than the first list at "
                                               f"its depth ({counts[-1]})")
                    counts[-1] += 1
                if kind == "scalar":
                    self.values.append(self.number(m.group(kind), start))
                    self.check_size(0)
                elif kind == "open" or (n := self.numbers(start + 1, pos - 1)) is None:
                    # a list of lists, or one to read token by token to say where and what is wrong
                    counts.append(0)
                    expect, pos = "value or ]", start + 1
                    continue
                else:
                    if n:
                        self.stand(start + 1, depth + 1, False)
                    self.close(start, depth, n)
            elif kind == "comma":
                if expect != ", or ]":
                    raise self.fail(start, "expected a number or '['" if counts else "expected the end of the file")
                expect = "value"
                continue
            elif kind == "close":
                if not counts:
                    raise self.fail(start, "unmatched ']'")
                if expect == "value":
                    raise self.fail(start, "expected a number or '[' after ','")
                self.close(start, depth - 1, counts.pop())
            elif kind == "end":
                if expect == "end":
                    break
                if expect == "value" and not counts:
                    raise self.fail(start, "the file holds no value")
                raise self.fail(start, f"the file ends inside {_plural(depth, 'unclosed list')}")
            else:
                raise self.fail(start, self.not_a_number(kind, m.group(kind)))
            expect = ", or ]" if counts else "end"
        shape = self.lengths[:self.leaf_depth] if self.leaf_depth is not None else self.lengths
        return np.frombuffer(self.values, dtype=np.float64).reshape(tuple(shape))

    @staticmethod
    def not_a_number(kind: str, found: str) -> str:
        if kind == "word":
            return f"{found} is not a number" + ('; write "NaN" for a missing value' if found == "null" else "")
        if kind == "string":
            shown = found if len(found) > 1 and found.endswith('"') else found + "…"
            return f'the string {shown} is not a number (only "NaN", "Infinity" and "-Infinity" are)'
        return "a JSON object is not a number or a list of numbers" if found == "{" else f"unexpected {found!r}"

    def fail(self, offset: int, message: str) -> GradcliError:
        return _error_at(self.label, self.path, self.text, offset, message)

    def check_size(self, more: int) -> None:
        if (len(self.values) + more) * 8 > self.max_bytes:
            raise too_large(self.label, f"the array in '{self.path}'", (len(self.values) + more) * 8,
                             self.max_bytes)

    def number(self, piece: str, offset: int) -> float:
        value = float(piece.replace('"', ""))
        if math.isinf(value) and _number_overflows(piece):
            raise self.fail(offset + len(piece) - len(piece.lstrip()), "number too large for float64")
        return value

    def numbers(self, lo: int, hi: int) -> int | None:
        """Append the numbers of the list text[lo:hi] and say how many, or None (and append
        nothing) if an item is not a number. In slices cut at commas, so that temporaries stay
        small and the regular expressions keep no state per item."""
        text, values = self.text, self.values
        if self.blank(text, lo, hi):
            return 0
        mark = len(values)
        while True:
            cut = text.find(",", min(lo + 16384, hi), hi)
            cut = hi if cut < 0 else cut
            chunk = text[lo:cut]
            pieces = chunk.split(",")
            if not all(map(self.is_scalar, pieces)):
                del values[mark:]
                return None
            row = list(map(float, chunk.replace('"', "").split(",")))
            if math.inf in row or -math.inf in row:
                for piece in pieces:
                    self.number(piece, lo)
                    lo += len(piece) + 1
            self.check_size(len(row))
            values.extend(row)
            if cut >= hi:
                return len(values) - mark
            lo = cut + 1

    def stand(self, start: int, depth: int, is_list: bool) -> None:
        """An item starting at `start` stands at `depth` (0: the whole file)."""
        if is_list:
            if self.leaf_depth is not None and depth >= self.leaf_depth:
                raise self.fail(start, "ragged lists: a list where a number is expected")
            if depth + 1 > self.max_dims:
                raise self.fail(start, f"lists nested deeper than {self.max_dims} levels (NumPy's limit on "
                                       "dimensions)")
            self.deepest_list = max(self.deepest_list, depth)
        elif self.leaf_depth is None and depth > self.deepest_list:
            self.leaf_depth = depth
        elif depth != self.leaf_depth:
            raise self.fail(start, "ragged lists: a number where a list is expected")

    def close(self, start: int, depth: int, n: int) -> None:
        """A list at `depth` closes with `n` items: every list at a depth has the same length."""
        lengths = self.lengths
        lengths.extend([None] * (depth + 1 - len(lengths)))
        if lengths[depth] is None:
            lengths[depth] = n
        elif lengths[depth] != n:
            raise self.fail(start, f"ragged lists: this list has {_plural(n, 'item')}, the first list at its "
                                   f"depth has {lengths[depth]}")


# CSV: numbers as Python and NumPy write them, NaN and infinities in any case, spaces around.
_CSV_NUMBER = r"[ \t]*[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|nan|inf|infinity)[ \t]*"


def _csv(text: str, label: str, path: str, max_bytes: int) -> np.ndarray:
    """Rows of numbers. One delimiter per file, from its first line: a tab, else ';', else ',',
    else whitespace (a ';' or a tab is never part of a number, a ',' may be a decimal comma). The
    first row is a header, and skipped, when none of its fields is a number and it has a letter.
    The shape is `np.loadtxt`'s: a matrix with its length-1 axes dropped, so one column gives
    (rows,), one row (columns,), and a single number a 0-d array."""
    import array
    import csv

    is_number = re.compile(_CSV_NUMBER, re.I | re.A).fullmatch
    values = array.array("d")
    cap = max_bytes // 8
    delimiter = width = None
    rows = line = 0
    line_text = ""

    def fail(column: int, message: str) -> GradcliError:
        return _error_on_line(label, path, line, column, line_text, message)

    for line, line_text in _lines(text):
        if not line_text.strip():
            continue
        if delimiter is None:
            delimiter = next((d for d in "\t;," if d in line_text), " ")
        if delimiter == " ":
            fields = line_text.split()
        else:
            try:
                fields = next(csv.reader((line_text,), delimiter=delimiter, strict=True))
            except csv.Error as exc:
                raise fail(1, f"not a row of CSV ({exc})") from None
        if width is None:
            width = len(fields)
            if not any(map(is_number, fields)) and any(c.isalpha() for c in line_text):
                continue  # a header
        if len(fields) != width:
            starts = _field_starts(line_text, delimiter)
            column = starts[width] if len(fields) > width else len(line_text) + 1
            raise fail(column, f"ragged rows: this row has {_plural(len(fields), 'field')}, the first has {width}")
        if not all(map(is_number, fields)):
            k = next(i for i, f in enumerate(fields) if not is_number(f))
            column = _field_starts(line_text, delimiter)[k]
            field = fields[k].strip()
            what = f"'{field}'" if field else "an empty field"
            hint = "; gradcli reads '.' as the decimal point" if re.fullmatch(r"[+-]?[0-9]+,[0-9]+", field) else ""
            raise fail(column, f"{what} is not a number (field {k + 1}){hint}")
        row = list(map(float, fields))
        if math.inf in row or -math.inf in row:
            k = next((i for i, f in enumerate(fields) if _number_overflows(f)), None)
            if k is not None:
                raise fail(_field_starts(line_text, delimiter)[k], f"number too large for float64 (field {k + 1})")
        values.extend(row)
        rows += 1
        if len(values) > cap:
            raise too_large(label, f"the array in '{path}'", len(values) * 8, max_bytes)
    if not rows:
        raise GradcliError(f"{label}: '{path}' holds no rows of numbers")
    arr = np.frombuffer(values, dtype=np.float64)
    return arr.reshape(rows, width).squeeze()


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + "s" * (n != 1)


def _field_starts(line: str, delimiter: str) -> list[int]:
    """The 1-based column where each field of a CSV line starts (for error messages)."""
    if delimiter == " ":
        return [m.start() + 1 for m in re.finditer(r"\S+", line)]
    starts, quoted = [1], False
    for i, char in enumerate(line):
        if char == '"':
            quoted = not quoted
        elif char == delimiter and not quoted:
            starts.append(i + 2)
    return starts
