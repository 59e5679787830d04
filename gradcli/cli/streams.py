"""The command's standard streams and signals (the library never uses this module).

- Output is rendered whole first, then written with `os.write` until every byte is taken: a
  failure is `OutputError` (exit 74), a reader that went away is `ReaderGone` (exit 0). A unit
  (a JSON document, an NDJSON line) reaches a regular file whole or not at all: on failure the
  file is cut back to the end of the last whole unit.
- Ctrl-C and SIGTERM end the command with one line on stderr and 128 + the signal's number; one
  that arrives while a unit is being written waits until it is whole (a second one does not wait).
  A `--out` file or store being written under its temporary name is removed first.
- Reading is bounded: a program text, or one `--lines` program, longer than its cap is refused.

Imported before anything heavy, so that even a Ctrl-C during start-up ends quietly.
"""
from __future__ import annotations

import os
import signal
import stat
import sys

MAX_PROGRAM_BYTES = 256 << 20  # a program's text; --max-memory lowers it
MAX_LINE_BYTES = 16 << 20  # one --lines program; --max-memory lowers it
EXIT_OUTPUT = 74  # sysexits' EX_IOERR


class OutputError(Exception):
    """Standard output did not take the whole output (disk full, file too large, closed)."""


class ReaderGone(Exception):
    """The reader of standard output went away (a closed pipe): not a failure of gradcli."""


# --------------------------------------------------------------------------- signals

_state = {"phase": "library", "writing": False, "pending": 0, "rollback": None}
_TAKEN = (signal.SIGINT, signal.SIGTERM)


def take_signals(phase: str) -> None:
    """Handle SIGINT (and, once the command runs, SIGTERM) as the gradcli command does.

    `phase` is "starting" while gradcli.cli is imported and "command" from main() on. A signal
    the caller ignores (a background job) stays ignored."""
    _state["phase"] = phase
    for signum in _TAKEN if phase == "command" else (signal.SIGINT,):
        try:
            if signal.getsignal(signum) not in (signal.SIG_IGN, _on_signal):
                signal.signal(signum, _on_signal)
        except ValueError:  # not the main thread: leave the host's handling alone
            return
    if phase == "command" and hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a file-size limit is EFBIG, not death


def started() -> None:
    """gradcli.cli has been imported: from here on only main() makes this process the command."""
    if _state["phase"] == "starting":
        _state["phase"] = "library"


def _is_the_command() -> bool:
    if _state["phase"] != "library":
        return True
    # between the console script's `from gradcli.cli import main` and its call of main()
    entry = getattr(sys.modules.get("__main__"), "main", None)
    return getattr(entry, "__module__", None) == "gradcli.cli"


def _on_signal(signum, frame):
    if not _is_the_command():  # a program that imported gradcli.cli: Python's KeyboardInterrupt
        signal.default_int_handler(signum, frame)  # (SIGTERM is taken only by main())
    if _state["writing"] and not _state["pending"]:
        _state["pending"] = signum  # finish the unit being written; write_output ends after it
        return
    _end(signum)


def _end(signum: int) -> None:
    rollback = _state["rollback"]
    if rollback is not None:  # a second signal in mid-write: leave no partial unit in a file
        _cut_back(*rollback)
    backends = sys.modules.get("gradcli.engine.backends")
    if backends is not None:  # a local cluster's workers first: none may write into what is removed next
        try:
            backends.stop_local_workers()
        except Exception:
            pass
    outputs = sys.modules.get("gradcli.io.outputs")  # (loaded only where --out writes)
    if outputs is not None:
        try:
            outputs.remove_unfinished()  # no `--out` temporary left behind
        except Exception:
            pass
    try:
        os.write(2, b"gradcli: interrupted\n")
    except OSError:
        pass
    os._exit(128 + signum)


# --------------------------------------------------------------------------- standard streams

def reserve_standard_fds() -> None:
    """Open /dev/null on a closed fd 0, 1 or 2, so that no file gradcli opens takes its number
    (Python has already set sys.stdin/stdout/stderr to None: that is how a closed one is told)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


def say(text: str) -> None:
    """A line on standard error; if it cannot be shown there is nowhere else to say it."""
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):
        pass


def silence_stdout() -> None:
    """After a failed write: point fd 1 at /dev/null so no later flush (at exit) can fail."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    except OSError:
        pass


def write_output(units: list[str]) -> None:
    """Write `units` to standard output, each whole, in order; OutputError or ReaderGone if
    the output cannot take them. A signal that arrives meanwhile takes effect after them."""
    _deliver(sys.stdout, units)


def _deliver(out, units: list[str]) -> None:
    if isinstance(out, WholeWrites):
        out = out.stream
    if out is None:
        raise OutputError("standard output is closed")
    try:
        fd = out.fileno()
        out.flush()
    except (OSError, ValueError, AttributeError):  # not a file (a caller's stream, as in tests)
        fd = None
    if fd is None:
        out.write("".join(units))
        out.flush()
        return
    _write_all(fd, units)


class WholeWrites:
    """Standard output for what click writes itself (`--help`, `--version`): each write goes out
    whole through write_output, so an output that cannot take it is OutputError (exit 74) and a
    reader that went away ReaderGone (exit 0), where click would cut it short, or say nothing for
    a closed one, and exit 0 (or 1 for a closed pipe). Installed by `whole_writes`."""

    def __init__(self, stream):
        self.stream = stream  # the real standard output (None where it is closed)
        self.encoding = getattr(stream, "encoding", None) or "utf-8"
        self.errors = getattr(stream, "errors", None) or "strict"

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # (how click tells a text stream from a binary one)
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        _deliver(self.stream, [text])
        return len(text)

    def flush(self) -> None:
        pass  # nothing is held

    def fileno(self) -> int:
        if self.stream is None:
            raise ValueError("standard output is closed")
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream is not None and self.stream.isatty()

    def writable(self) -> bool:
        return True


class whole_writes:
    """`with whole_writes():` standard output is a `WholeWrites` for the block."""

    def __enter__(self):
        self.saved = sys.stdout
        sys.stdout = WholeWrites(self.saved)
        return sys.stdout

    def __exit__(self, *exc) -> None:
        sys.stdout = self.saved


WRITE_CHUNK = 1 << 20  # bytes encoded and written at a time: the text is never copied whole


def _write_all(fd: int, units: list[str]) -> None:
    start = _file_offset(fd)
    buffer = bytearray()
    ends: list[int] = []  # where each unit ends, in bytes from `start`, once it is encoded
    written_total = [0]
    _state["writing"] = True
    try:
        for unit in units:
            for i in range(0, len(unit), WRITE_CHUNK):
                buffer += unit[i:i + WRITE_CHUNK].encode("utf-8", "backslashreplace")
                if len(buffer) >= WRITE_CHUNK:
                    _write_buffer(fd, buffer, start, ends, written_total)
            ends.append(written_total[0] + len(buffer))
        _write_buffer(fd, buffer, start, ends, written_total)
    finally:
        _state["writing"] = False
        _state["rollback"] = None
    if _state["pending"]:
        _end(_state["pending"])


def _write_buffer(fd: int, buffer: bytearray, start: int | None, ends: list[int], total: list[int]) -> None:
    """Write all of `buffer` (then empty it); `total` counts the bytes written so far."""
    view = memoryview(buffer)
    done = 0
    try:
        while done < len(buffer):
            if start is not None:
                _state["rollback"] = (fd, start, ends, total[0])
            try:
                written = os.write(fd, view[done:])
            except BrokenPipeError:
                raise ReaderGone() from None
            except OSError as exc:
                if start is not None:
                    _cut_back(fd, start, ends, total[0])
                raise OutputError(exc.strerror or str(exc)) from None
            if written <= 0:
                raise OutputError("standard output takes no more bytes")
            done += written
            total[0] += written
    finally:
        view.release()
    del buffer[:]


def _file_offset(fd: int) -> int | None:
    """Where the next write lands, if the output is a regular file (so it can be cut back).
    In append mode (`>> log`) that is the file's end, whatever the offset says (often 0)."""
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            import fcntl
            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND:
                return st.st_size
            return os.lseek(fd, 0, os.SEEK_CUR)
    except OSError:
        pass
    return None


def _cut_back(fd: int, start: int, ends: list[int], done: int) -> None:
    whole = max((end for end in ends if end <= done), default=0)
    try:
        os.ftruncate(fd, start + whole)
    except OSError:
        pass


# --------------------------------------------------------------------------- reading

def cap(limit: int, max_memory: int | None) -> int:
    """A reading cap: `limit`, or --max-memory if that is smaller."""
    return min(limit, max_memory) if max_memory else limit


def describe_size(n: int) -> str:
    return f"{n / 2**20:g} MiB" if n >= 1 << 20 else f"{n:,} bytes"


def unreadable_kind(fd: int) -> str | None:
    """What the open file `fd` is, if no program can be read from it, else None. Regular files,
    pipes, sockets, terminals and /dev/null can be read; directories and other devices
    (/dev/zero) cannot."""
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode):
        return "a directory"
    if stat.S_ISBLK(st.st_mode):
        return "a device"
    if stat.S_ISCHR(st.st_mode):
        if os.isatty(fd):
            return None
        try:
            if st.st_rdev == os.stat(os.devnull).st_rdev:
                return None
        except OSError:
            pass
        return "a device"
    return None


def read_bounded(stream, limit: int) -> bytearray:
    """All of `stream`, or OverflowError if it holds more than `limit` bytes (read no further).
    Read into one buffer: the text is never held twice (chunks, then their join)."""
    data = bytearray()
    while True:
        chunk = stream.read(min(1 << 24, limit + 1 - len(data)))
        if not chunk:
            return data
        data += chunk
        del chunk
        if len(data) > limit:
            raise OverflowError(limit)
