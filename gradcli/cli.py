"""The `gradcli` command: reads options, calls the library, renders. Nothing else."""
from __future__ import annotations

import sys

from . import streams

streams.take_signals("starting")  # before the heavy imports: Ctrl-C during start-up is quiet too

from enum import Enum  # noqa: E402
from typing import Annotated, Optional  # noqa: E402

import typer  # noqa: E402

app = typer.Typer(
    add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
    help="A command-line gradient calculator: values, gradients and numerical diagnostics of small "
         "Python-flavoured programs (TensorFlow semantics).",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from . import __version__
        typer.echo(f"gradcli {__version__}")
        raise typer.Exit()


@app.callback()
def _options(version: Annotated[Optional[bool], typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version and exit.")] = None) -> None:
    """A command-line gradient calculator: values, gradients and numerical diagnostics of
    small Python-flavoured programs (TensorFlow semantics)."""


class Format(str, Enum):
    auto = "auto"
    table = "table"
    json = "json"
    plain = "plain"


class Dtype(str, Enum):
    float64 = "float64"
    float32 = "float32"


class Device(str, Enum):
    cpu = "cpu"
    cuda = "cuda"


class Unconnected(str, Enum):
    none = "none"
    zero = "zero"


# Options shared by every command, defined once.
FileArg = Annotated[Optional[str], typer.Argument(
    metavar="[FILE]", help="Program file; '-' or nothing (with a pipe) reads standard input.", show_default=False)]
ExprOpt = Annotated[Optional[str], typer.Option("-e", "--expr", metavar="PROGRAM", help="Program text.")]
SetOpt = Annotated[Optional[list[str]], typer.Option(
    "--set", metavar="NAME=VALUE", help="Input value: a literal such as [1, 2] or @file.npy/.npz:key/.json/.csv.")]
FormatOpt = Annotated[Format, typer.Option(help="Output format; auto is a table on a terminal, plain otherwise.")]
DtypeOpt = Annotated[Dtype, typer.Option(help="Floating-point type of every value.")]
DeviceOpt = Annotated[Device, typer.Option(help="Evaluate on the CPU (NumPy) or a GPU (CuPy).")]
StrictOpt = Annotated[bool, typer.Option("--strict", help="Exit 1 if an output or gradient is not finite.")]
LinesOpt = Annotated[bool, typer.Option("--lines", help="Each non-empty line of the input is its own program; "
                                                        "one JSON object per line out.")]
CallOpt = Annotated[Optional[str], typer.Option(
    "--call", metavar="EXPR", help="Call a function of the program, e.g. 'loss(w, x)'; by default a program "
                                   "ending in a def calls it on the inputs named as its parameters.")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show the Python traceback of an error.", hidden=True)]
MaxMemoryOpt = Annotated[Optional[str], typer.Option(
    "--max-memory", metavar="SIZE", help="Refuse programs whose arrays need more memory than this "
                                         "(e.g. 8G, 500M); default: half of this machine's memory.")]


@app.command("eval")
def eval_command(
    file: FileArg = None, expr: ExprOpt = None, set_: SetOpt = None, call: CallOpt = None,
    print_: Annotated[Optional[list[str]], typer.Option(
        "--print", metavar="NAME", help="Report this name's value (repeatable); default: the last statement.")] = None,
    format: FormatOpt = Format.auto, dtype: DtypeOpt = Dtype.float64, device: DeviceOpt = Device.cpu,
    strict: StrictOpt = False, lines: LinesOpt = False, max_memory: MaxMemoryOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Evaluate a program and print the last statement's value (or each --print NAME)."""
    _run("eval", dict(file=file, expr=expr, call=call, sets=set_ or [], prints=print_ or [],
                                      format=format.value, dtype=dtype.value, device=device.value,
                                      strict=strict, lines=lines, max_memory=max_memory, debug=debug))


@app.command("grad")
def grad_command(
    file: FileArg = None, expr: ExprOpt = None,
    wrt: Annotated[Optional[list[str]], typer.Option(
        "--wrt", metavar="NAME", help="Differentiate with respect to this input or named value (repeatable).")] = None,
    of: Annotated[Optional[list[str]], typer.Option(
        "--of", metavar="NAME", help="Differentiate the sum of these values (repeatable); default: the last statement.")] = None,
    grad_ys: Annotated[Optional[list[str]], typer.Option(
        "--grad-ys", metavar="NAME=VALUE", help="Upstream gradient of an --of value, of exactly its shape; default ones.")] = None,
    unconnected: Annotated[Unconnected, typer.Option(
        help="Gradient of a --wrt value that the outputs do not depend on: null or zeros.")] = Unconnected.none,
    set_: SetOpt = None, call: CallOpt = None, format: FormatOpt = Format.auto, dtype: DtypeOpt = Dtype.float64,
    device: DeviceOpt = Device.cpu, strict: StrictOpt = False, lines: LinesOpt = False,
    max_memory: MaxMemoryOpt = None, debug: DebugOpt = False,
) -> None:
    """Gradients of the --of values (summed) with respect to each --wrt value, as tf.gradients."""
    _run("grad", dict(file=file, expr=expr, call=call, sets=set_ or [], wrt=wrt or [], of=of or [],
                                      grad_ys=grad_ys or [], unconnected=unconnected.value,
                                      format=format.value, dtype=dtype.value, device=device.value,
                                      strict=strict, lines=lines, max_memory=max_memory, debug=debug))


WrtOpt = Annotated[Optional[list[str]], typer.Option(
    "--wrt", metavar="NAME", help="With respect to this input or named value (repeatable).")]
OfOpt = Annotated[Optional[list[str]], typer.Option(
    "--of", metavar="NAME", help="Of these values (repeatable); default: the last statement.")]
UnconnectedOpt = Annotated[Unconnected, typer.Option(
    help="Result for a --wrt value that the output does not depend on: null or zeros.")]


@app.command("check")
def check_command(
    file: FileArg = None, expr: ExprOpt = None, wrt: WrtOpt = None, of: OfOpt = None, set_: SetOpt = None, call: CallOpt = None,
    eps: Annotated[float, typer.Option(help="Finite-difference step, relative to the input's scale.")] = 1e-6,
    rtol: Annotated[float, typer.Option(help="Relative tolerance.")] = 1e-5,
    atol: Annotated[float, typer.Option(help="Absolute tolerance.")] = 1e-8,
    format: FormatOpt = Format.auto, max_memory: MaxMemoryOpt = None, debug: DebugOpt = False,
) -> None:
    """Compare reverse-mode gradients with float64 central finite differences; exit 1 if any
    disagrees, naming the operation whose gradient rule is wrong."""
    _run("check", dict(file=file, expr=expr, call=call, sets=set_ or [], wrt=wrt or [], of=of or [], eps=eps, rtol=rtol,
                       atol=atol, format=format.value, debug=debug, lines=False, max_memory=max_memory))


@app.command("jacobian")
def jacobian_command(
    file: FileArg = None, expr: ExprOpt = None, of: OfOpt = None, wrt: WrtOpt = None, set_: SetOpt = None, call: CallOpt = None,
    unconnected: UnconnectedOpt = Unconnected.none, format: FormatOpt = Format.auto,
    max_memory: MaxMemoryOpt = None, debug: DebugOpt = False,
) -> None:
    """The full Jacobian dY/dX of one --of Y for each --wrt X, shaped Y.shape + X.shape."""
    _run("jacobian", dict(file=file, expr=expr, call=call, sets=set_ or [], wrt=wrt or [], of=of or [],
                          unconnected=unconnected.value, format=format.value, debug=debug, lines=False,
                          max_memory=max_memory))


@app.command("hessian")
def hessian_command(
    file: FileArg = None, expr: ExprOpt = None, of: OfOpt = None, wrt: WrtOpt = None, set_: SetOpt = None, call: CallOpt = None,
    unconnected: UnconnectedOpt = Unconnected.none, format: FormatOpt = Format.auto,
    max_memory: MaxMemoryOpt = None, debug: DebugOpt = False,
) -> None:
    """The Hessian block d²Y/dX² of a scalar Y for each --wrt X, shaped X.shape + X.shape."""
    _run("hessian", dict(file=file, expr=expr, call=call, sets=set_ or [], wrt=wrt or [], of=of or [],
                         unconnected=unconnected.value, format=format.value, debug=debug, lines=False,
                         max_memory=max_memory))


@app.command("derive")
def derive_command(
    file: FileArg = None, expr: ExprOpt = None,
    wrt: Annotated[Optional[str], typer.Option("--wrt", metavar="NAME", help="With respect to this value.")] = None,
    of: OfOpt = None, set_: SetOpt = None, call: CallOpt = None, max_memory: MaxMemoryOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Print the gradient as a program in gradcli's own language, simplified."""
    _run("derive", dict(file=file, expr=expr, call=call, sets=set_ or [], wrt=[wrt] if wrt else [], of=of or [],
                        format="plain", debug=debug, lines=False, max_memory=max_memory))


@app.command("fix")
def fix_command(
    file: FileArg = None, expr: ExprOpt = None, set_: SetOpt = None, call: CallOpt = None,
    wrt: Annotated[Optional[list[str]], typer.Option(
        "--wrt", metavar="NAME", help="Also prove the fixes on the gradients with respect to this value (repeatable).")] = None,
    of: OfOpt = None,
    diff: Annotated[bool, typer.Option("--diff", help="Print a unified diff instead of the whole program.")] = False,
    dtype: DtypeOpt = Dtype.float64, max_memory: MaxMemoryOpt = None, debug: DebugOpt = False,
) -> None:
    """Print the program with every fix gradcli has proven on these inputs applied (finite where
    it was not, the same numbers elsewhere); the file itself is never written. Exit 1 if a
    value or gradient is still not finite."""
    _run("fix", dict(file=file, expr=expr, call=call, sets=set_ or [], wrt=wrt or [], of=of or [], diff=diff,
                     dtype=dtype.value, format="plain", debug=debug, lines=False, max_memory=max_memory))


class GraphFormat(str, Enum):
    tree = "tree"
    dot = "dot"


@app.command("graph")
def graph_command(
    file: FileArg = None, expr: ExprOpt = None, wrt: WrtOpt = None,
    of: Annotated[Optional[str], typer.Option("--of", metavar="NAME", help="Show this value; default: the last.")] = None,
    set_: SetOpt = None, call: CallOpt = None,
    format: Annotated[GraphFormat, typer.Option(help="A tree on the terminal, or Graphviz DOT (dot -Tsvg).")] = GraphFormat.tree,
    max_memory: MaxMemoryOpt = None, debug: DebugOpt = False,
) -> None:
    """Show the program as a graph: each operation, where it stands, its shape and values,
    and with --wrt its gradient."""
    _run("graph", dict(file=file, expr=expr, call=call, sets=set_ or [], wrt=wrt or [], of=[of] if of else [],
                       format=format.value, debug=debug, lines=False, max_memory=max_memory))


# --------------------------------------------------------------------------- running a command

def _open_program(file: str | None, expr: str | None):
    """(binary stream, name) of the program: FILE, '-', -e, or piped standard input."""
    import io
    from .errors import GradcliError

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
    from .errors import GradcliError, Pos, Source

    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[:exc.start]
        line = before.count(b"\n") + 1
        column = len(before[before.rfind(b"\n") + 1:].decode("utf-8", "replace")) + 1
        raise GradcliError(f"the program is not valid UTF-8 text (byte 0x{data[exc.start]:02x})",
                           Pos(line, column), Source(name, data.decode("utf-8", "replace"))) from None


def _read_program(file: str | None, expr: str | None, max_memory: int | None = None) -> tuple[str, str]:
    from .errors import GradcliError

    stream, name = _open_program(file, expr)
    from .parser import TEXT_COPIES  # the text is read, decoded and compiled: a quarter of --max-memory
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
    from .errors import Source
    return Source(name, "")


def _assignments(items: list[str], option: str, max_memory: int | None) -> dict:
    from .errors import GradcliError
    from .evaluate import default_memory_limit
    from .values import parse_value, split_assignment

    out = {}
    for item in items:
        name, value = split_assignment(item, option)
        if name in out:
            raise GradcliError(f"{option} {name} is given twice")
        out[name] = parse_value(value, f"{option} {name}", max_memory or default_memory_limit())
    return out


def _compute(command: str, opts: dict, text: str, name: str):
    from . import api
    from .errors import GradcliError

    feeds = _assignments(opts["sets"], "--set", opts["max_memory"])
    call = opts.get("call")
    if command == "graph":
        return api.graph_view(text, of=opts["of"][0] if opts["of"] else None, wrt=opts["wrt"], name=name,
                              feeds=feeds, call=call, max_memory=opts["max_memory"])
    if command == "derive":
        if len(opts["wrt"]) != 1:
            raise GradcliError("derive takes one --wrt NAME")
        return api.derive(text, wrt=opts["wrt"][0], of=opts["of"] or None, name=name, feeds=feeds, call=call,
                          max_memory=opts["max_memory"])
    if command == "fix":
        return api.fix(text, wrt=opts["wrt"], of=opts["of"] or None, name=name, feeds=feeds, call=call,
                       dtype=opts["dtype"], max_memory=opts["max_memory"])
    if command == "check":
        return api.check(text, wrt=opts["wrt"], of=opts["of"] or None, name=name, feeds=feeds, call=call,
                         eps=opts["eps"], rtol=opts["rtol"], atol=opts["atol"], max_memory=opts["max_memory"])
    if command in ("jacobian", "hessian"):
        if len(opts["of"]) > 1:
            raise GradcliError(f"{command} takes one --of NAME")
        of = opts["of"][0] if opts["of"] else None
        if command == "jacobian":
            return api.jacobian(text, of=of, wrt=opts["wrt"], name=name, feeds=feeds, call=call,
                                unconnected=opts["unconnected"], max_memory=opts["max_memory"])
        return api.hessian(text, of=of, wrt=opts["wrt"], name=name, feeds=feeds, call=call,
                           unconnected=opts["unconnected"], max_memory=opts["max_memory"])
    common = dict(name=name, feeds=feeds, dtype=opts["dtype"], device=opts["device"],
                  max_memory=opts["max_memory"], call=call)
    if command == "eval":
        return api.evaluate(text, prints=opts["prints"], **common)
    return api.grad(text, wrt=opts["wrt"], of=opts["of"] or None,
                    grad_ys=_assignments(opts["grad_ys"], "--grad-ys", opts["max_memory"]), unconnected=opts["unconnected"], **common)


def _run(command: str, opts: dict) -> None:
    from .errors import GradcliError

    try:
        if opts["max_memory"] is not None:
            from .evaluate import parse_size
            opts["max_memory"] = parse_size(opts["max_memory"])
        if opts["lines"]:
            stream, _ = _open_program(opts["file"], opts["expr"])
            try:
                code = _run_lines(command, opts, stream)
            finally:
                _close(stream)
        else:
            text, name = _read_program(opts["file"], opts["expr"], opts["max_memory"])
            code = _run_one(command, opts, text, name)
    except GradcliError as err:
        if opts["debug"]:
            import traceback
            traceback.print_exc()
        from .errors import format_error  # no NumPy needed to say what is wrong
        streams.say(format_error(err))
        code = err.exit_code
    except streams.ReaderGone:  # `| head -1`: the reader has what it wanted
        streams.silence_stdout()
        code = 0
    except streams.OutputError as err:
        streams.silence_stdout()
        streams.say(f"gradcli: cannot write the output: {err}")
        code = streams.EXIT_OUTPUT
    except Exception as exc:  # a bug in gradcli, never the user's fault
        if opts["debug"]:
            raise
        streams.say(_internal_error(exc))
        code = 70
    raise typer.Exit(code)


def _internal_error(exc: Exception, where: str = "") -> str:
    return (f"gradcli: internal error{where}: {type(exc).__name__}: {exc}\n"
            "This is a bug in gradcli; run again with --debug for the traceback.")


def _format(opts: dict) -> str:
    if opts["format"] == "auto":
        return "table" if sys.stdout is not None and sys.stdout.isatty() else "plain"
    return opts["format"]


def _print_diagnostics(result) -> None:
    """Diagnostics to stderr, compiler-style (table, plain, tree and dot formats)."""
    from . import render

    for diag in result.diagnostics:
        streams.say(render.diagnostic_text(diag, result.graph.source))


def _run_one(command: str, opts: dict, text: str, name: str) -> int:
    """Compute, render the whole output, then write it (so it arrives whole or not at all)."""
    from . import render

    result = _compute(command, opts, text, name)
    if command == "derive":
        streams.write_output([result])
        return 0
    if command == "fix":
        for d in result.applied:
            streams.say(render.applied_fix_text(d, result.graph.source))
        for d in result.remaining:
            streams.say(render.diagnostic_text(d, result.graph.source))
        streams.write_output([render.fixed_program(result, name, opts["diff"])])
        return 1 if result.nonfinite else 0
    fmt = opts["format"] if command == "graph" else _format(opts)
    if fmt != "json":
        _print_diagnostics(result)
    code = 0
    if command == "graph":
        output = render.graph_dot(result) if fmt == "dot" else render.on_terminal(render.graph_tree(result))
    elif command in ("check", "jacobian", "hessian"):
        if fmt == "json":
            output = render.dumps(render.insight_json(command, result)) + "\n"
        elif fmt == "plain":
            output = "\n".join(render.insight_lines(command, result) + [""])  # (one copy of the text)
        else:
            output = render.on_terminal(render.insight_table(command, result))
        if command == "check" and not result.passed:
            code = 1
    else:
        with_gradients = command == "grad"
        if fmt == "json":
            output = render.dumps(render.result_json(result, with_gradients=with_gradients)) + "\n"
        elif fmt == "plain":
            output = "\n".join(render.plain_lines(result, with_gradients=with_gradients) + [""])
        else:
            output = render.on_terminal(render.table(result, with_gradients=with_gradients))
        if opts["strict"] and result.nonfinite():
            streams.say(f"gradcli: --strict: not finite: {', '.join(result.nonfinite())}")
            code = 1
    streams.write_output([output])
    return code


def _run_lines(command: str, opts: dict, stream) -> int:
    """NDJSON: one program per non-empty line, one JSON object per line, each line's error
    (even a gradcli bug) answered in its place; the input is read in chunks and one line is
    bounded, so memory stays constant over any number of lines."""
    limit = streams.cap(streams.MAX_LINE_BYTES, opts["max_memory"])
    code = 0
    number = 0
    for batch in _arrived_lines(stream, limit):
        answers = []
        for raw in batch:
            number += 1
            if raw is None or raw.strip():
                answer, line_code = _answer_line(command, opts, raw, number, limit)
                answers.append(answer)
                code = max(code, line_code)
        streams.write_output(answers)
    return code


def _answer_line(command: str, opts: dict, raw: bytes | None, number: int, limit: int) -> tuple[str, int]:
    """One `--lines` program's JSON line, and its exit code (1: not finite under --strict,
    2: an error, 70: a bug in gradcli). `raw` is None for a line longer than `limit`."""
    from . import render
    from .errors import GradcliError, format_error

    name = f"<line {number}>"
    try:
        if raw is None:
            raise GradcliError(f"the line is longer than the {streams.describe_size(limit)} allowed "
                               "for one program", source=_unnamed(name))
        line = _decode(raw, name).rstrip("\r")
        result = _compute(command, opts, line, name)
        doc = render.result_json(result, with_gradients=command == "grad")
        code = 1 if opts["strict"] and result.nonfinite() else 0
    except GradcliError as err:
        doc = render.error_json(err)
        doc["error"].update(line=number, text=format_error(err))
        code = 2
    except Exception as exc:  # a bug in gradcli: said on stderr, answered in place, and the stream goes on
        if opts["debug"]:
            import traceback
            traceback.print_exc()
        streams.say(_internal_error(exc, f" on line {number}"))
        doc = {"error": {"message": f"internal error: {type(exc).__name__}: {exc}", "line": number,
                         "internal": True}}
        code = 70
    return render.dumps(doc) + "\n", code


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
            from .errors import GradcliError
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


def main() -> None:
    """The console script and `python -m gradcli`."""
    streams.reserve_standard_fds()
    streams.take_signals("command")
    try:
        app()
    except OSError as exc:  # click could not write its own output (help, version)
        streams.silence_stdout()
        streams.say(f"gradcli: cannot write the output: {exc.strerror or exc}")
        sys.exit(streams.EXIT_OUTPUT)


streams.started()
