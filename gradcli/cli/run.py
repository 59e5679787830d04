"""Running a command: read the program (whole, or a line at a time with --lines) and the --set
values, call the library, answer in the format asked, and end with the exit code: 0, 1 (a failed
verdict, or not finite under --strict), 2 (a user error: one message), 74 (the output could not
be written), 70 (a bug in gradcli, never the user's fault)."""
from __future__ import annotations

import io
import sys

import gradcli.cli
from gradcli.cli import render, streams
from gradcli.engine.backends import FileRef
from gradcli.errors import GradcliError, OptionError, Pos, Source, format_error
from gradcli.ops import scalar as numbers
from gradcli.limits import TEXT_COPIES, default_memory_limit, out_of_memory, parse_size


def _open_program(file: str | None, expr: str | None):
    """(binary stream, name) of the program: FILE, '-', -e, or piped standard input."""
    if expr is not None:
        if file is not None:
            raise GradcliError("give the program either as FILE or with -e, not both")
        return io.BytesIO(expr.encode("utf-8", "surrogateescape")), "<expr>"
    if file is None and sys.stdin is not None and not sys.stdin.isatty():
        file = "-"
    if file is None:
        raise GradcliError("no program: give FILE, -e PROGRAM, or pipe one into standard input")
    if file == "-":
        if sys.stdin is None:
            raise GradcliError("cannot read the program: standard input is closed")
        stream, name, label = sys.stdin.buffer, "<stdin>", "standard input"
    else:
        try:
            stream, name, label = open(file, "rb"), file, f"'{file}'"
        except IsADirectoryError:
            raise GradcliError(f"'{file}' is a directory, not a program file") from None
        except OSError as exc:
            raise GradcliError(f"cannot read '{file}': {exc.strerror or exc}") from None
    try:
        kind = streams.unreadable_kind(stream.fileno())
    except (OSError, ValueError):  # not a file (a caller's stream): nothing to check
        kind = None
    if kind is not None:
        _close(stream)
        raise GradcliError(f"{label} is {kind}, not a program file")
    return stream, name


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[:exc.start]
        line = before.count(b"\n") + 1
        column = len(before[before.rfind(b"\n") + 1:].decode("utf-8", "replace")) + 1
        raise GradcliError(f"the program is not valid UTF-8 text (byte 0x{data[exc.start]:02x})",
                           Pos(line, column), Source(name, data.decode("utf-8", "replace"))) from None


def read_program(file: str | None, expr: str | None, max_memory: int | None = None) -> tuple[str, str]:
    """(text, name) of the program: FILE, '-', -e, or piped standard input, read whole within its cap."""
    stream, name = _open_program(file, expr)
    # the text is read, decoded and compiled: a quarter of --max-memory
    limit = streams.cap(streams.MAX_PROGRAM_BYTES, max_memory and max_memory // TEXT_COPIES)
    try:
        data = streams.read_bounded(stream, limit)
    except OverflowError:
        raise GradcliError(f"the program is longer than the {streams.describe_size(limit)} allowed",
                           source=_unnamed(name)) from None
    except OSError as exc:
        raise GradcliError(f"cannot read the program: {exc.strerror or exc}", source=_unnamed(name)) from None
    finally:
        _close(stream)
    return _decode(data, name), name


def _close(stream) -> None:
    if stream is not getattr(sys.stdin, "buffer", None):
        stream.close()


def _unnamed(name: str):
    """A source that only names where the program came from (for `NAME: error: ...`)."""
    return Source(name, "")


def assignments(items: list[str], option: str, max_memory: int | None, device: str = "cpu") -> dict:
    """NAME=VALUE items as {name: array}; with --device dask a file (`@PATH`) is left for the
    backend to read a chunk at a time."""
    if not items:
        return {}  # the literal reader is not imported for nothing
    from gradcli.language.lower.literal import ShapeOnly, parse_value, split_assignment  # (gradcli.cli.LAZY_IMPORTS)

    out = {}
    for item in items:
        name, value = split_assignment(item, option)
        if name in out:
            raise GradcliError(f"{option} {name} is given twice")
        if value.lstrip().startswith("@") and device == "dask":
            out[name] = FileRef(value.lstrip()[1:], f"{option} {name}")
            continue
        if value.lstrip().startswith("@") and ".zarr" in value.lower():
            raise GradcliError(f"{option} {name}: a Zarr array is read by --device dask (install gradcli[dask])")
        out[name] = parse_value(value, f"{option} {name}", max_memory or default_memory_limit())
        if option != "--set" and isinstance(out[name], ShapeOnly):
            raise GradcliError(f"{option} {name}: {value.strip()} is a shape without values; {option} takes values")
    return out


def chunk_size(text: str | None) -> int | None:
    """--chunks SIZE in bytes (the same units as --max-memory)."""
    if text is None:
        return None
    try:
        return parse_size(text)
    except OptionError as err:
        err.option = "chunks"
        raise


# The library names its arguments in its errors (`wrt`); the command line names its options.
_FLAGS = {"prints": "--print", "feeds": "--set", "path": "--out"}


def in_cli_terms(err):
    """A library error about one of its arguments, reworded to name the option that gave it."""
    option = getattr(err, "option", None)
    if option is not None and hasattr(err, "name_option"):
        err.name_option(_FLAGS.get(option, "--" + option.replace("_", "-")))
    return err


def _end(code: int) -> None:
    """sys.exit(code), as click's Exit(code) does; but the gradcli process itself, its answer
    out, ends without Python's teardown, which frees a big program's millions of objects one by
    one (70 ms of a 100,000-deep chain's 2 s, 170 ms of a 100,000-term program's). What the
    teardown does that matters still happens: the exit handlers run and the standard streams
    are flushed. Not where other threads run, nor after a Dask cluster (its processes end as
    Python ends), nor in a process that imported gradcli (tests, library users)."""
    threading = sys.modules.get("threading")
    if gradcli.cli.command_process and "distributed" not in sys.modules and (
            threading is None or threading.active_count() == 1):
        import atexit
        import os

        atexit._run_exitfuncs()
        try:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:
                    stream.flush()
        except (OSError, ValueError):
            pass  # Python's own ending reports a stream it cannot flush
        else:
            os._exit(code)
    sys.exit(code)


def _computed_once(compute, *args):
    """One program's answer, computed with the cyclic collector paused and frozen after it.
    A big program is millions of objects (tokens, AST nodes, equations, values) with no
    reference cycles among them, living until the command exits: the collector, on again while
    the answer is rendered, would rescan every one of them at its next pass for nothing (a
    tenth of a 100,000-term program's time). --lines does not come here: its programs' garbage
    is collected as the lines go by."""
    import gc

    gc.disable()
    try:
        return compute(*args)
    finally:
        gc.freeze()
        gc.enable()


class Run:
    """What every command does around its library call: read the program (whole, or a line at
    a time with --lines), read the --set values, call the library, and answer in the format
    asked; errors become one message and an exit code. (A plain class: `dataclasses` is not
    imported at start-up.)"""

    def __init__(self, file: str | None, expr: str | None, sets: list[str] | None, format: str,
                 lines: bool = False, strict: bool = False, max_memory: str | None = None, debug: bool = False,
                 device: str = "cpu"):
        self.file, self.expr, self.sets = file, expr, sets
        self.device = device
        self.format = format  # auto, table, json, plain, or one of the view's own (graph's dot)
        self.lines, self.strict, self.max_memory, self.debug = lines, strict, max_memory, debug
        self.out, self.force = None, False
        self.store = None  # --device dask --out DIR.zarr: the arrays are written as they are computed

    def saving(self, out: str | None, force: bool) -> Run:
        """With `out`: the arrays go to that file (gradcli.io.outputs) and the output says what was
        written; `force` replaces an existing file. With --device dask and a .zarr directory
        they are written chunk by chunk as they are computed, never gathered (`self.store`)."""
        self.out, self.force = out, force
        return self

    def answer(self, view, compute, present=None) -> None:
        """`compute(text, name, feeds, max_memory)` is the command's library call; its result is
        shown by `view` (a render.View), or by `present(result, name) -> (units, exit code)`."""
        gradcli.cli.resume_collector()  # start-up is over: the command's own work may make garbage

        limit = None
        try:
            try:
                if self.max_memory is not None:
                    limit = parse_size(self.max_memory)
                if self.out is not None or self.force:
                    present = self._saving(view)
                fmt = self._resolved(view)
                feeds = assignments(self.sets or [], "--set", limit, self.device)
                if self.lines:
                    stream, _ = _open_program(self.file, self.expr)
                    try:
                        code = self._each_line(view, fmt, lambda text, name: compute(text, name, feeds, limit),
                                               stream, limit)
                    finally:
                        _close(stream)
                else:
                    text, name = read_program(self.file, self.expr, limit)
                    result = _computed_once(compute, text, name, feeds, limit)
                    units, code = (present or self._present(view, fmt))(result, name)
                    streams.write_output(units)
            except Exception as exc:  # (gradcli.ops.scalar: the numbers-only attempt gives way to NumPy)
                if numbers.numbers_only() and not isinstance(exc, (streams.ReaderGone, streams.OutputError)):
                    raise numbers.NeedsArrays(f"{type(exc).__name__}: {exc}") from exc
                raise
        except GradcliError as err:
            if self.debug:
                import traceback
                traceback.print_exc()
            streams.say(format_error(in_cli_terms(err)))
            code = err.exit_code
        except MemoryError:  # the machine ran out before the guard refused: not a bug of gradcli
            streams.say(format_error(in_cli_terms(out_of_memory(limit))))
            code = 2
        except streams.ReaderGone:  # `| head -1`: the reader has what it wanted
            streams.silence_stdout()
            code = 0
        except streams.OutputError as err:
            streams.silence_stdout()
            streams.say(f"gradcli: cannot write the output: {err}")
            code = streams.EXIT_OUTPUT
        except Exception as exc:  # a bug in gradcli, never the user's fault
            if self.debug:
                raise
            streams.say(_internal_error(exc))
            code = 70
        finally:
            if self.store is not None:  # an unfinished store is removed (a saved one is in place)
                self.store.discard()
        _end(code)

    def _resolved(self, view) -> str:
        """The format to answer in: auto is a table on a terminal and plain lines otherwise, or
        JSON lines with --lines (which draws no tables)."""
        fmt = self.format
        if self.lines:
            if fmt not in ("auto", "json", "plain"):
                raise GradcliError(f"--lines answers in json or plain lines, not --format {fmt}")
            if fmt == "plain" and view.multiline:
                raise GradcliError(f"{view.command} --lines --format plain: an answer has several lines; "
                                   "use --format json")
            return "json" if fmt == "auto" else fmt
        if fmt == "auto":
            return "table" if sys.stdout is not None and sys.stdout.isatty() else "plain"
        return fmt

    def _saving(self, view):
        """The present() of --out: the arrays are saved, then what was written is rendered. The
        destination is checked before anything is computed."""
        from gradcli.io import outputs  # (listed in gradcli.cli.LAZY_IMPORTS)

        if self.out is None:
            raise GradcliError("--force replaces the file of --out; give --out PATH")
        if self.lines:
            raise GradcliError("--out writes one program's arrays to one file; it cannot be used with --lines "
                               "(run once per program, each with its own --out)")
        if outputs.check_destination(self.out, self.force) == "zarr" and self.device == "dask":
            self.store = outputs.ZarrStore(self.out, self.force)

        def present(result, name):
            fmt = self._resolved(view)
            saved = outputs.save_arrays(self.out, outputs.result_arrays(result), self.force)
            if fmt != "json":
                self._say_diagnostics(view, result)
                for note in render.saved_notes(saved):
                    streams.say(note)
            if fmt == "json":
                output = render.dumps(render.saved_document(view, result, saved)) + "\n"
            elif fmt == "plain":
                output = "".join(line + "\n" for line in render.saved_lines(saved))
            else:
                output = render.on_terminal(render.saved_table(saved))
            return [output], self._code(view, result)
        return present

    def _say_diagnostics(self, view, result) -> None:
        """Notes and diagnostics to stderr, compiler-style (outside JSON)."""
        for note in view.notes(result):
            streams.say(note)
        for diag in result.diagnostics:
            streams.say(render.diagnostic_text(diag, result.graph.source))

    def _code(self, view, result) -> int:
        """0, or 1 for a failed verdict or, with --strict, a value or gradient not finite."""
        code = 0 if view.passed(result) else 1
        if self.strict and result.nonfinite():
            streams.say(f"gradcli: --strict: not finite: {', '.join(result.nonfinite())}")
            code = 1
        return code

    def _present(self, view, fmt: str):
        """Render the whole output (so it is written whole or not at all), and the exit code."""
        def present(result, name):
            if fmt != "json":  # diagnostics to stderr, compiler-style
                self._say_diagnostics(view, result)
            if fmt == "json":
                output = render.dumps(render.document(view, result)) + "\n"
            elif fmt == "plain":
                output = "".join(line + "\n" for line in view.lines(result))
            elif fmt == "table":
                output = render.on_terminal(view.table(result))
            else:
                output = view.formats[fmt](result)
            return [output], self._code(view, result)
        return present

    def _each_line(self, view, fmt: str, compute, stream, limit: int | None) -> int:
        """One program per line, one answer per non-blank line, each carrying its line number
        (blank lines are counted, not answered); each line's error (even a gradcli bug) is
        answered in its place. The input is read in chunks and one line is bounded, so memory
        stays constant over any number of lines."""
        cap = streams.cap(streams.MAX_LINE_BYTES, limit)
        code = 0
        number = 0
        for batch in _arrived_lines(stream, cap):
            answers = []
            for raw in batch:
                number += 1
                if raw is None or raw.strip():
                    answer, line_code = self._answer_line(view, fmt, compute, raw, number, cap)
                    answers.append(answer)
                    code = max(code, line_code)
            streams.write_output(answers)
        return code

    def _answer_line(self, view, fmt: str, compute, raw: bytes | None, number: int, cap: int) -> tuple[str, int]:
        """One line's answer and its exit code (1: not finite under --strict or a failed check,
        2: an error, 70: a bug in gradcli). `raw` is None for a line longer than `cap`. In
        plain lines an error is said on stderr, `<line N>:COL: error: ...`."""
        name = f"<line {number}>"
        try:
            if raw is None:
                raise GradcliError(f"the line is longer than the {streams.describe_size(cap)} allowed "
                                   "for one program", source=_unnamed(name))
            result = compute(_decode(raw, name).rstrip("\r"), name)
            code = 1 if (self.strict and result.nonfinite()) or not view.passed(result) else 0
            if fmt == "plain":
                for diag in result.diagnostics:
                    streams.say(render.diagnostic_text(diag, result.graph.source))
                return "".join(f"{number}\t{line}\n" for line in view.lines(result)), code
            return render.dumps(render.document(view, result, number)) + "\n", code
        except (GradcliError, MemoryError) as err:
            if isinstance(err, MemoryError):  # the machine ran out: said as the guard's refusal is
                err = out_of_memory(self.max_memory and parse_size(self.max_memory))
            text = format_error(in_cli_terms(err))
            if fmt == "plain":  # answered in its place too: a reader of the lines keeps count
                streams.say(text)
                return f"{number}\t#error\t{_one_line(err.message)}\n", 2
            doc = render.error_document(view, err, number)
            doc["error"].update(line=number, text=text)
            return render.dumps(doc) + "\n", 2
        except Exception as exc:  # a bug in gradcli: said on stderr, answered in place, and the stream goes on
            if self.debug:
                import traceback
                traceback.print_exc()
            streams.say(_internal_error(exc, f" on line {number}"))
            if fmt == "plain":
                return f"{number}\t#error\tinternal error: {_one_line(f'{type(exc).__name__}: {exc}')}\n", 70
            doc = {"command": view.command, "line": number,
                   "error": {"message": f"internal error: {type(exc).__name__}: {exc}", "line": number,
                             "internal": True}}
            return render.dumps(doc) + "\n", 70


def _internal_error(exc: Exception, where: str = "") -> str:
    return (f"gradcli: internal error{where}: {type(exc).__name__}: {exc}\n"
            "This is a bug in gradcli; run again with --debug for the traceback.")


def _arrived_lines(stream, limit: int):
    """The input's lines (without their newline), in lists of those that had arrived when
    they were read. The output is written after each list: a pipe fed a line at a time is
    answered a line at a time, and a file is not answered with one write per line. A line
    longer than `limit` is None, given as soon as it is known, and its rest is skipped."""
    read = getattr(stream, "read1", stream.read)
    partial: list[bytes] = []  # of a line not yet ended
    size = 0  # of `partial`; -1 while skipping the rest of an over-long line
    while True:
        try:
            chunk = read(1 << 16)
        except OSError as exc:
            raise GradcliError(f"cannot read the input: {exc.strerror or exc}") from None
        if not chunk:
            break
        lines = chunk.split(b"\n")
        last = lines.pop()  # not yet ended
        if lines:
            if size >= 0:
                lines[0] = b"".join(partial) + lines[0]
            else:
                lines.pop(0)  # the end of a line already answered as too long
            partial, size = [], 0
            lines = [None if len(ln) > limit else ln for ln in lines]
        if size >= 0 and last:
            partial.append(last)
            size += len(last)
            if size > limit:
                lines.append(None)
                partial, size = [], -1
        if lines:
            yield lines
    if partial:
        yield [b"".join(partial)]


def _one_line(message: str) -> str:
    """A message on one line of a tab-separated answer."""
    return " ".join(message.split())

