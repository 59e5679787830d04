"""The `gradcli` command: reads options, calls the library, renders. Nothing else."""
from __future__ import annotations

import sys

from . import streams

streams.take_signals("starting")  # before the heavy imports: Ctrl-C during start-up is quiet too

from enum import Enum  # noqa: E402

# The command functions below are importable without Typer (its import is most of a command's
# start-up): their annotations stay text until the Typer app is built (`app`, made on first use
# by _typer_app(), which defines the names they use), and a well-formed command line is answered
# without it at all (main(), from gradcli/_cli_table.py, made from the app).
_COMMANDS: list = []  # (name, function, epilog), in the order of `gradcli --help`


def _command(name: str, epilog: str):
    """Register a command function for the Typer app (without importing Typer)."""
    def register(function):
        _COMMANDS.append((name, function, epilog))
        return function
    return register


def _app():
    """The Typer app, built on first use."""
    global app
    if "app" not in globals():
        app = _typer_app()
    return app


def __getattr__(name):
    if name == "app":
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _version(value: bool) -> None:
    if value:
        import typer

        from . import __version__
        typer.echo(f"gradcli {__version__}")
        raise typer.Exit()


def _options(version: Annotated[Optional[bool], typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version and exit.")] = None) -> None:
    """A command-line gradient calculator: values, gradients and numerical diagnostics of
    small Python-flavoured programs (TensorFlow semantics)."""


class Format(str, Enum):
    auto = "auto"
    table = "table"
    json = "json"
    plain = "plain"


class GraphFormat(str, Enum):
    auto = "auto"
    table = "table"
    json = "json"
    plain = "plain"
    dot = "dot"
    tree = "tree"  # the table's name before every command had --format


class Dtype(str, Enum):
    float64 = "float64"
    float32 = "float32"


class Device(str, Enum):
    cpu = "cpu"
    cuda = "cuda"
    dask = "dask"


class Unconnected(str, Enum):
    none = "none"
    zero = "zero"


def _example(*lines: str) -> str:
    """A help's epilog: example command lines (click keeps a paragraph after \b as written)."""
    return "\b\nExample" + ("s" if len(lines) > 1 else "") + ":\n" + "\n".join(f"  {ln}" for ln in lines)


def _typer_app(commands=None):
    """The Typer app: the single definition of the command line (its help, its errors, and
    gradcli/_cli_table.py). Defines the names the command functions' annotations use, then
    registers `commands` (default: every command)."""
    import typer

    from typing import Annotated, Optional

    # Options shared by the commands, defined once.
    FileArg = Annotated[Optional[str], typer.Argument(
        metavar="[FILE]", help="Program file; '-' or nothing (with a pipe) reads standard input.", show_default=False)]
    ExprOpt = Annotated[Optional[str], typer.Option("-e", "--expr", metavar="PROGRAM", help="Program text.")]
    SetOpt = Annotated[Optional[list[str]], typer.Option(
        "--set", metavar="NAME=VALUE", help="Input value (repeatable): a literal such as [1, 2] or "
                                            "@file.npy/.npz:key/.json/.csv.")]
    FormatOpt = Annotated[Format, typer.Option(
        help="Output format: a table, one JSON document, or plain NAME<TAB>numbers lines; auto is a table on a "
             "terminal, plain otherwise (with --lines: json).")]
    DtypeOpt = Annotated[Dtype, typer.Option(help="Floating-point type of every value.")]
    DeviceOpt = Annotated[Device, typer.Option(
        help="Evaluate on the CPU (NumPy), a GPU (CuPy), or chunk by chunk with Dask (inputs larger than memory, "
             "several cores, a cluster; needs gradcli[dask]).")]
    ChunksOpt = Annotated[Optional[str], typer.Option(
        "--chunks", metavar="SIZE", help="With --device dask: bytes per chunk (e.g. 64M); default: from --max-memory "
                                         "and the number of cores.")]
    SchedulerOpt = Annotated[Optional[str], typer.Option(
        "--scheduler", metavar="ADDRESS", help="With --device dask: a dask.distributed scheduler (tcp://host:8786), or "
                                               "'local' for worker processes started here; default: threads in this "
                                               "process.")]
    StrictOpt = Annotated[bool, typer.Option("--strict", help="Exit 1 if an output or gradient is not finite.")]
    LinesOpt = Annotated[bool, typer.Option(
        "--lines", help="Each line of the input is its own program; one answer per non-blank line, carrying its "
                        "line number: a JSON object (NDJSON), or with --format plain NUMBER<TAB>NAME<TAB>numbers lines.")]
    CallOpt = Annotated[Optional[str], typer.Option(
        "--call", metavar="EXPR", help="Call a function of the program, e.g. 'loss(w, x)'; by default a program "
                                       "ending in a def calls it on the inputs named as its parameters.")]
    DebugOpt = Annotated[bool, typer.Option("--debug", help="Show the Python traceback of an error.", hidden=True)]
    MaxMemoryOpt = Annotated[Optional[str], typer.Option(
        "--max-memory", metavar="SIZE", help="Refuse programs whose arrays need more memory than this "
                                             "(e.g. 8G, 500M); default: half of what this process may use (the "
                                             "machine's memory, ulimit -v, the container's limit).")]
    WrtOpt = Annotated[Optional[list[str]], typer.Option(
        "--wrt", metavar="NAME", help="With respect to this input or named value (repeatable).")]
    WrtOneOpt = Annotated[Optional[str], typer.Option("--wrt", metavar="NAME", help="With respect to this value.")]
    OfOpt = Annotated[Optional[list[str]], typer.Option(
        "--of", metavar="NAME", help="Of the sum of these values (repeatable); default: the last statement.")]
    OfOneOpt = Annotated[Optional[str], typer.Option(
        "--of", metavar="NAME", help="Of this value (one); default: the last statement.")]
    OutOpt = Annotated[Optional[str], typer.Option(
        "--out", metavar="PATH", help="Write the arrays to PATH instead of printing their numbers: .npz (every array), "
                                      ".npy (exactly one) or a .zarr directory (needs zarr: pip install 'gradcli[dask]'); "
                                      "outputs under their names, gradients and Jacobians as d_Y_d_X, Hessian blocks as "
                                      "d2_Y_d_X_d_Z. Standard output says each one's shape, dtype, min, max and where "
                                      "it went. Written whole or not at all.")]
    ForceOpt = Annotated[bool, typer.Option("--force", help="With --out: replace PATH if it exists.")]
    UnconnectedOpt = Annotated[Unconnected, typer.Option(
        help="Result for a --wrt value that the output does not depend on: null or zeros.")]

    shared = dict(locals())
    globals().update({name: value for name, value in shared.items() if name.endswith(("Arg", "Opt"))},
                     typer=typer, Annotated=Annotated, Optional=Optional)
    app = typer.Typer(
        no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
        help="A command-line gradient calculator: values, gradients and numerical diagnostics of small "
             "Python-flavoured programs (TensorFlow semantics).",
        epilog="Example: gradcli grad -e 'y = sum(x * x)' --wrt x --set x='[1, 2]'",
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_options)
    for name, function, epilog in _COMMANDS if commands is None else commands:
        app.command(name, epilog=epilog)(function)
    return app


def _shared_by_lines(lines: bool, library_call, prepare, options):
    """The command's `compute(text, name, feeds, limit)`: `library_call(text, **options(name, feeds,
    limit))`; with --lines, lines that differ only in numbers share one program compiled by
    `prepare` with the same options (gradcli.lines)."""
    def compute(text, name, feeds, limit):
        return library_call(text, **options(name, feeds, limit))

    if not lines:
        return compute
    from .lines import cached
    return cached(compute, lambda text, name, feeds, limit: prepare(text, **options(name, feeds, limit)))


@_command("eval", _example("gradcli eval -e 'x = [1.0, 2.0]; y = sum(x * x)' --format json",
                                     "printf 'exp(1)\\n\\n2 ** 10\\n' | gradcli eval --lines --format plain"))
def eval_command(
    file: FileArg = None, expr: ExprOpt = None, set_: SetOpt = None, call: CallOpt = None,
    print_: Annotated[Optional[list[str]], typer.Option(
        "--print", metavar="NAME", help="Report this name's value (repeatable); default: the last statement.")] = None,
    format: FormatOpt = Format.auto, dtype: DtypeOpt = Dtype.float64, device: DeviceOpt = Device.cpu,
    strict: StrictOpt = False, lines: LinesOpt = False, max_memory: MaxMemoryOpt = None,
    out: OutOpt = None, force: ForceOpt = False, chunks: ChunksOpt = None, scheduler: SchedulerOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Evaluate a program and print the last statement's value (or each --print NAME)."""
    from . import api, render

    def options(name, feeds, limit):
        return dict(name=name, feeds=feeds, call=call, prints=print_ or [], dtype=dtype.value,
                    device=device.value, max_memory=limit, printed=out is None, chunks=_chunk_size(chunks),
                    scheduler=scheduler, store=run.store)

    run = Run(file, expr, set_, format.value, lines, strict, max_memory, debug, device.value).saving(out, force)
    run.answer(render.EVAL, _shared_by_lines(lines, api.evaluate, api.prepare_evaluate, options))


@_command("grad", _example("gradcli grad -e 'y = sum(x * x)' --wrt x --set x='[1, 2]'"))
def grad_command(
    file: FileArg = None, expr: ExprOpt = None,
    wrt: Annotated[Optional[list[str]], typer.Option(
        "--wrt", metavar="NAME", help="Differentiate with respect to this input or named value (repeatable).")] = None,
    of: Annotated[Optional[list[str]], typer.Option(
        "--of", metavar="NAME", help="Differentiate the sum of these values (repeatable); default: the last statement.")] = None,
    grad_ys: Annotated[Optional[list[str]], typer.Option(
        "--grad-ys", metavar="NAME=VALUE", help="Upstream gradient of an --of value, of exactly its shape (repeatable); "
                                                "default ones.")] = None,
    unconnected: Annotated[Unconnected, typer.Option(
        help="Gradient of a --wrt value that the outputs do not depend on: null or zeros.")] = Unconnected.none,
    set_: SetOpt = None, call: CallOpt = None, format: FormatOpt = Format.auto, dtype: DtypeOpt = Dtype.float64,
    device: DeviceOpt = Device.cpu, strict: StrictOpt = False, lines: LinesOpt = False,
    max_memory: MaxMemoryOpt = None, out: OutOpt = None, force: ForceOpt = False, chunks: ChunksOpt = None,
    scheduler: SchedulerOpt = None, debug: DebugOpt = False,
) -> None:
    """Gradients of the --of values (summed) with respect to each --wrt value, as tf.gradients."""
    from . import api, render

    def options(name, feeds, limit):
        return dict(name=name, feeds=feeds, call=call, wrt=wrt or [], of=of or None,
                    grad_ys=_assignments(grad_ys or [], "--grad-ys", limit), unconnected=unconnected.value,
                    dtype=dtype.value, device=device.value, max_memory=limit, printed=out is None,
                    chunks=_chunk_size(chunks), scheduler=scheduler, store=run.store)

    run = Run(file, expr, set_, format.value, lines, strict, max_memory, debug, device.value).saving(out, force)
    run.answer(render.GRAD, _shared_by_lines(lines, api.grad, api.prepare_grad, options))


@_command("check", _example("gradcli check -e 'y = sum(tanh(x) * x)' --wrt x --set x='[0.3, 1.2]'"))
def check_command(
    file: FileArg = None, expr: ExprOpt = None, wrt: WrtOpt = None, of: OfOpt = None, set_: SetOpt = None, call: CallOpt = None,
    eps: Annotated[float, typer.Option(help="Finite-difference step, relative to the input's scale.")] = 1e-6,
    rtol: Annotated[float, typer.Option(help="Relative tolerance.")] = 1e-5,
    atol: Annotated[float, typer.Option(help="Absolute tolerance.")] = 1e-8,
    format: FormatOpt = Format.auto, lines: LinesOpt = False, max_memory: MaxMemoryOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Compare reverse-mode gradients with float64 central finite differences; exit 1 if any
    disagrees, naming the operation whose gradient rule is wrong."""
    from . import api, render

    Run(file, expr, set_, format.value, lines, False, max_memory, debug).answer(
        render.CHECK, lambda text, name, feeds, limit: api.check(
            text, name=name, feeds=feeds, call=call, wrt=wrt or [], of=of or None, eps=eps, rtol=rtol, atol=atol,
            max_memory=limit))


@_command("jacobian", _example("gradcli jacobian -e 'y = x * x' --of y --wrt x --set x='[1, 2]'"))
def jacobian_command(
    file: FileArg = None, expr: ExprOpt = None, of: OfOneOpt = None, wrt: WrtOpt = None, set_: SetOpt = None,
    call: CallOpt = None, unconnected: UnconnectedOpt = Unconnected.none, format: FormatOpt = Format.auto,
    lines: LinesOpt = False, max_memory: MaxMemoryOpt = None, out: OutOpt = None, force: ForceOpt = False,
    debug: DebugOpt = False,
) -> None:
    """The full Jacobian dY/dX of one --of Y for each --wrt X, shaped Y.shape + X.shape."""
    from . import api, render

    Run(file, expr, set_, format.value, lines, False, max_memory, debug).saving(out, force).answer(
        render.JACOBIAN, lambda text, name, feeds, limit: api.jacobian(
            text, name=name, feeds=feeds, call=call, of=of, wrt=wrt or [], unconnected=unconnected.value,
            max_memory=limit, printed=out is None))


@_command("hessian", _example("gradcli hessian -e 'y = sum(x ** 3)' --wrt x --set x='[1, 2]'"))
def hessian_command(
    file: FileArg = None, expr: ExprOpt = None, of: OfOneOpt = None, wrt: WrtOpt = None, set_: SetOpt = None,
    call: CallOpt = None, unconnected: UnconnectedOpt = Unconnected.none, format: FormatOpt = Format.auto,
    lines: LinesOpt = False, max_memory: MaxMemoryOpt = None, out: OutOpt = None, force: ForceOpt = False,
    debug: DebugOpt = False,
) -> None:
    """The Hessian block d²Y/dX² of a scalar Y for each --wrt X, shaped X.shape + X.shape (and
    the mixed blocks d²Y/dX dZ with several --wrt)."""
    from . import api, render

    Run(file, expr, set_, format.value, lines, False, max_memory, debug).saving(out, force).answer(
        render.HESSIAN, lambda text, name, feeds, limit: api.hessian(
            text, name=name, feeds=feeds, call=call, of=of, wrt=wrt or [], unconnected=unconnected.value,
            max_memory=limit, printed=out is None))


@_command("derive", _example("gradcli derive -e 'y = sin(x) * x' --wrt x"))
def derive_command(
    file: FileArg = None, expr: ExprOpt = None, wrt: WrtOneOpt = None, of: OfOpt = None, set_: SetOpt = None,
    call: CallOpt = None, format: FormatOpt = Format.auto, lines: LinesOpt = False,
    max_memory: MaxMemoryOpt = None, debug: DebugOpt = False,
) -> None:
    """Print the gradient as a program in gradcli's own language, simplified."""
    from . import api, render

    def derive(text, name, feeds, limit):
        if wrt is None:  # the library's wrt is not optional
            from .errors import GradcliError
            raise GradcliError("derive takes one --wrt NAME")
        return api.derivation(text, name=name, feeds=feeds, call=call, wrt=wrt, of=of or None, max_memory=limit)

    Run(file, expr, set_, format.value, lines, False, max_memory, debug).answer(render.DERIVE, derive)


@_command("fix", _example("gradcli fix -e 'y = log(1 + exp(x))' --set x=1000 --diff"))
def fix_command(
    file: FileArg = None, expr: ExprOpt = None, set_: SetOpt = None, call: CallOpt = None,
    wrt: Annotated[Optional[list[str]], typer.Option(
        "--wrt", metavar="NAME", help="Also prove the fixes on the gradients with respect to this value (repeatable).")] = None,
    of: OfOpt = None,
    diff: Annotated[bool, typer.Option("--diff", help="Print a unified diff instead of the whole program.")] = False,
    dtype: DtypeOpt = Dtype.float64, format: FormatOpt = Format.auto, max_memory: MaxMemoryOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Print the program with every fix gradcli has proven on these inputs applied (finite where
    it was not, the same numbers elsewhere); the file itself is never written. Exit 1 if a
    value or gradient is still not finite."""
    from . import api, render

    Run(file, expr, set_, format.value, False, False, max_memory, debug).answer(
        render.fix_view(diff), lambda text, name, feeds, limit: api.fix(
            text, name=name, feeds=feeds, call=call, wrt=wrt or [], of=of or None, dtype=dtype.value,
            max_memory=limit))


@_command("graph", _example("gradcli graph -e 'x = [1.0, 2.0]; y = sum(x * x)' --wrt x --format table",
                                      "gradcli graph samples/stable_softmax.expr --format dot | dot -Tsvg > graph.svg"))
def graph_command(
    file: FileArg = None, expr: ExprOpt = None, wrt: WrtOpt = None,
    of: Annotated[Optional[str], typer.Option("--of", metavar="NAME", help="Show this value; default: the last.")] = None,
    set_: SetOpt = None, call: CallOpt = None,
    format: Annotated[GraphFormat, typer.Option(
        help="As every command's --format (the table is a tree; tree is its old name), or Graphviz DOT "
             "(dot -Tsvg).")] = GraphFormat.auto,
    max_memory: MaxMemoryOpt = None, debug: DebugOpt = False,
) -> None:
    """Show the program as a graph: each operation, where it stands, its shape and values,
    and with --wrt its gradient."""
    from . import api, render

    fmt = "table" if format is GraphFormat.tree else format.value
    Run(file, expr, set_, fmt, False, False, max_memory, debug).answer(
        render.GRAPH, lambda text, name, feeds, limit: api.graph_view(
            text, name=name, feeds=feeds, call=call, of=of, wrt=wrt or [], max_memory=limit))


@_command("plot", _example("gradcli plot -e 'y = sin(x) * x' --wrt x --range -5:5 --order 2",
                                     "gradcli plot model.expr --wrt 'w[2]' --set 'w=[1, 2, 3]' --range 0:1 --png w2.png"))
def plot_command(
    file: FileArg = None, expr: ExprOpt = None,
    wrt: Annotated[str, typer.Option(
        "--wrt", metavar="NAME", help="The input to vary: a scalar, or one element of an array such as 'x[2]' "
                                      "(the others held at their --set values).", show_default=False)] = ...,
    range_: Annotated[str, typer.Option(
        "--range", metavar="LOW:HIGH", help="From LOW to HIGH, e.g. -5:5.", show_default=False)] = ...,
    of: OfOneOpt = None, set_: SetOpt = None, call: CallOpt = None,
    order: Annotated[int, typer.Option(help="Draw the derivatives up to this order: 1 or 2.")] = 1,
    points: Annotated[int, typer.Option(help="How many points, evenly spaced.")] = 200,
    png: Annotated[Optional[str], typer.Option("--png", metavar="PATH", help="Write a PNG (needs Matplotlib: "
                                                                          "pip install 'gradcli[plot]').")] = None,
    svg: Annotated[Optional[str], typer.Option("--svg", metavar="PATH", help="Write an SVG (needs Matplotlib).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace the --png or --svg file if it exists.")] = False,
    max_memory: MaxMemoryOpt = None, debug: DebugOpt = False,
) -> None:
    """Draw a scalar value and its derivative (and second derivative with --order 2) as one
    input varies over a range: in the terminal, or to a PNG or SVG file. Points where a value
    or derivative is not finite, and ties and kinks, are marked, and the diagnostics that
    explain them go to standard error."""
    from . import api, plotting, render

    def compute(text, name, feeds, limit):
        files[:] = plotting.check_files(png, svg, force)  # before anything is computed
        low, high = plotting.parse_range(range_)
        return api.curve(text, name=name, feeds=feeds, call=call, wrt=wrt, low=low, high=high, points=points,
                         of=of, order=order, max_memory=limit)

    def present(curve, name):
        for diag in curve.diagnostics:
            streams.say(render.diagnostic_text(diag, curve.graph.source))
        if files:
            plotting.write_files(curve, files, force)
            return [], 0
        terminal = sys.stdout is not None and sys.stdout.isatty()
        height = max(12 * (1 + len(curve.derivatives)), 24)
        return [plotting.draw_terminal(curve, render.terminal_width(), height, terminal)], 0

    files: list = []
    Run(file, expr, set_, "plain", False, False, max_memory, debug).answer(None, compute, present)


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


def _assignments(items: list[str], option: str, max_memory: int | None, device: str = "cpu") -> dict:
    """NAME=VALUE items as {name: array}; with --device dask a file (`@PATH`) is left for the
    backend to read a chunk at a time."""
    if not items:
        return {}  # gradcli.values is not imported for nothing
    from .errors import GradcliError
    from .evaluate import default_memory_limit
    from .values import parse_value, split_assignment

    out = {}
    for item in items:
        name, value = split_assignment(item, option)
        if name in out:
            raise GradcliError(f"{option} {name} is given twice")
        if value.lstrip().startswith("@") and device == "dask":
            from .backends import FileRef
            out[name] = FileRef(value.lstrip()[1:], f"{option} {name}")
            continue
        if value.lstrip().startswith("@") and ".zarr" in value.lower():
            raise GradcliError(f"{option} {name}: a Zarr array is read by --device dask (install gradcli[dask])")
        out[name] = parse_value(value, f"{option} {name}", max_memory or default_memory_limit())
    return out


def _chunk_size(text: str | None) -> int | None:
    """--chunks SIZE in bytes (the same units as --max-memory)."""
    if text is None:
        return None
    from .errors import OptionError
    from .evaluate import parse_size
    try:
        return parse_size(text)
    except OptionError as err:
        err.option = "chunks"
        raise


# The library names its arguments in its errors (`wrt`); the command line names its options.
_FLAGS = {"prints": "--print", "feeds": "--set", "path": "--out"}


def _in_cli_terms(err):
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
    import gradcli

    threading = sys.modules.get("threading")
    if gradcli._command_process and "distributed" not in sys.modules and (
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
        """With `out`: the arrays go to that file (gradcli.outputs) and the output says what was
        written; `force` replaces an existing file. With --device dask and a .zarr directory
        they are written chunk by chunk as they are computed, never gathered (`self.store`)."""
        self.out, self.force = out, force
        return self

    def answer(self, view, compute, present=None) -> None:
        """`compute(text, name, feeds, max_memory)` is the command's library call; its result is
        shown by `view` (a render.View), or by `present(result, name) -> (units, exit code)`."""
        from . import _resume_collector
        from .errors import GradcliError

        _resume_collector()  # start-up is over: the command's own work may make garbage

        limit = None
        try:
            if self.max_memory is not None:
                from .evaluate import parse_size
                limit = parse_size(self.max_memory)
            if self.out is not None or self.force:
                present = self._saving(view)
            fmt = self._resolved(view)
            feeds = _assignments(self.sets or [], "--set", limit, self.device)
            if self.lines:
                stream, _ = _open_program(self.file, self.expr)
                try:
                    code = self._each_line(view, fmt, lambda text, name: compute(text, name, feeds, limit),
                                           stream, limit)
                finally:
                    _close(stream)
            else:
                text, name = _read_program(self.file, self.expr, limit)
                result = _computed_once(compute, text, name, feeds, limit)
                units, code = (present or self._present(view, fmt))(result, name)
                streams.write_output(units)
        except GradcliError as err:
            if self.debug:
                import traceback
                traceback.print_exc()
            from .errors import format_error  # no NumPy needed to say what is wrong
            streams.say(format_error(_in_cli_terms(err)))
            code = err.exit_code
        except MemoryError:  # the machine ran out before the guard refused: not a bug of gradcli
            from .errors import format_error
            from .evaluate import out_of_memory
            streams.say(format_error(_in_cli_terms(out_of_memory(limit))))
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
        from .errors import GradcliError

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
        from . import outputs, render
        from .errors import GradcliError

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
        from . import render

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
        from . import render

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
        from . import render
        from .errors import GradcliError, format_error

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
                from .evaluate import out_of_memory, parse_size
                err = out_of_memory(self.max_memory and parse_size(self.max_memory))
            text = format_error(_in_cli_terms(err))
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


def _named_command(argv: list[str]):
    """The app with only the command that `argv` names, when it names one: Typer turns every
    command's options into click's at start-up (about 1 ms a command), and a run needs only its
    own. Help, completion and a mistyped command get the whole app."""
    import os

    app = _app()
    words = [a for a in argv if not a.startswith("-")][:1]
    if not words or any(k.endswith("_COMPLETE") for k in os.environ):
        return app
    chosen = [c for c in app.registered_commands if c.name == words[0]]
    if not chosen or argv.index(words[0]) != 0:
        return app
    import typer

    only = typer.Typer()
    only.__dict__.update(app.__dict__)  # the same settings and callback
    only.registered_commands = chosen
    only._add_completion = False  # the group's own options: never read after a command's name
    return only


def _one_line(message: str) -> str:
    """A message on one line of a tab-separated answer."""
    return " ".join(message.split())


def _refuse_repeated_options(chosen, argv: list[str]) -> None:
    """An option that takes one value, given twice under any of its names, is an error (click
    would keep the last silently: `hessian --of a --of b` is not the Hessian of a + b, and
    `-e A -eB` is not the program A)."""
    from ._cli_table import COMMANDS
    from .option_words import repeated_single_options

    command = COMMANDS.get(argv[0]) if argv else None
    if command is None:
        return
    for name, times in repeated_single_options(argv[1:], command[1]):
        streams.say(f"gradcli: error: {name} was given {times} times; {argv[0]} takes one")
        sys.exit(2)


def _without_typer(argv: list[str]):
    """(command function, its keyword arguments) for a well-formed command line, read as click
    reads it from the table made from the Typer app (gradcli/_cli_table.py); None wherever
    Typer could answer otherwise (help, completion, an unknown or repeated option, a missing or
    bad value, --debug, anything unusual), so that every error and help stays Typer's own."""
    import os

    if not argv or any(k.endswith("_COMPLETE") or "TYPER" in k for k in os.environ):
        return None
    from ._cli_table import COMMANDS

    command = COMMANDS.get(argv[0])
    if command is None:
        return None
    function, params = command
    args = argv[1:]
    options = {}  # option name -> its param
    for param in params:
        for name in param[1]:
            options[name] = param
    from .option_words import repeated_single_options
    if repeated_single_options(args, params):
        return None  # _refuse_repeated_options() refuses it
    given: dict = {}
    positional = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            positional += args[i:]
            break
        if arg[:1] != "-" or len(arg) == 1:
            positional.append(arg)
            continue
        name, equals, value = arg.partition("=")
        param = options.get(name) if name[:2] == "--" else None
        if param is None:
            if arg[:2] == "--" or arg[:2] not in options:
                return None  # unknown, or a short option that is not one taking a value (-h)
            param, value, equals = options[arg[:2]], arg[2:], bool(arg[2:])
            if param[2] == "flag":
                return None
        if param[2] == "flag":
            if equals:
                return None
            given[param[0]] = True
            continue
        if not equals:
            if i == len(args):
                return None
            value = args[i]
            i += 1
        if param[4]:
            given.setdefault(param[0], []).append(value)
        else:
            given[param[0]] = value
    arguments = [param for param in params if not param[1]]
    if len(positional) > len(arguments):
        return None
    for param, value in zip(arguments, positional):
        given[param[0]] = value
    if given.get("debug"):
        return None  # its traceback is Typer's to show
    kwargs = {}
    for keyword, names, kind, default, multiple, required in params:
        if keyword not in given:
            if required:
                return None
            kwargs[keyword] = _typed(kind, default) if kind[:1].isupper() else default
            continue
        value = given[keyword]
        try:
            kwargs[keyword] = value if kind in ("str", "flag") or multiple else _typed(kind, value)
        except ValueError:
            return None
    return globals()[function], kwargs


def _typed(kind: str, text: str):
    """A value as click and Typer convert it: int(), float(), or a choice as its Enum member."""
    if kind == "int":
        return int(text)
    if kind == "float":
        return float(text)
    enum = globals()[kind]
    if text not in enum._value2member_map_:
        raise ValueError(text)
    return enum(text)


def main() -> None:
    """The console script and `python -m gradcli`."""
    streams.reserve_standard_fds()
    streams.take_signals("command")
    try:
        fast = _without_typer(sys.argv[1:])
        if fast is not None:
            function, kwargs = fast
            function(**kwargs)
            sys.exit(0)  # click's ending of a command that returns
        chosen = _named_command(sys.argv[1:])
        if chosen is not _app():
            _refuse_repeated_options(chosen, sys.argv[1:])
        # prog_name: also under `python -m gradcli`, completion is for the command
        with streams.whole_writes():  # click's own output (help, version) delivered whole or exit 74
            chosen(prog_name="gradcli")
    except (OSError, streams.OutputError) as exc:  # click could not write its own output (help, version)
        streams.silence_stdout()
        streams.say(f"gradcli: cannot write the output: {getattr(exc, 'strerror', None) or exc}")
        sys.exit(streams.EXIT_OUTPUT)
    except streams.ReaderGone:  # `gradcli --help | head -1`: not a failure
        streams.silence_stdout()
        sys.exit(0)


streams.started()
