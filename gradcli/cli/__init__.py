"""The `gradcli` command: main(), and what the command does at start-up before it reads a command.

The command line is thin over the library (gradcli.api):
- spec.py declares every command's options once, as data: the Typer app is built from it, and
  a well-formed command line is read from it without importing Typer;
- commands.py holds the command functions, run.py what every command does around its library
  call (read the program and the --set values, answer, exit codes), render.py the answers'
  formats, streams.py the standard streams and signals, lines.py the sharing of one program
  among --lines that differ only in numbers.

Start-up, in the gradcli process only (the console script, or `python -m gradcli`; a program that
imports gradcli.cli keeps its collector, its KeyboardInterrupt and Python's help):
- Python's cyclic collector is paused: start-up makes tens of thousands of objects (modules,
  functions) and no garbage, which the collector would rescan again and again for nothing (a
  twentieth of the start). The command turns it back on before it reads its input.
- Ctrl-C is quiet from the first line on: one line on stderr and exit 130, no traceback.
- `gradcli --help` is answered from the kept text help.txt, without importing Typer.
"""
import gc
import os
import sys

# The imports of gradcli modules made inside functions in gradcli/cli/, each to keep a start-up
# (or `--help`) from paying for what it does not use: (module, why it is imported late).
LAZY_IMPORTS = (
    ("gradcli.cli.spec", "the declaration of the commands: `gradcli --help` is answered without it"),
    ("gradcli.cli.commands", "the command functions import the library (NumPy): imported when a command runs, "
                             "never for help or a usage error"),
    ("gradcli.cli.lines", "the sharing of one program among lines: only with --lines"),
    ("gradcli.language.lower.literal", "the reader of NAME=VALUE literals: only with --set or --grad-ys"),
    ("gradcli.io.outputs", "the writers of array files: only with --out"),
    ("gradcli.numerics.fixes", "the fixes applied to the text as given: only `gradcli fix`"),
    ("gradcli.numerics.loss_scale", "the loss scale and its measure: only with --loss-scale"),
    ("gradcli.numerics.precision", "the precision report: only check --dtype of a half type"),
    ("gradcli.cli.plotting", "the drawing and the image files of `gradcli plot`: only plot"),
    ("gradcli.ops.scalar", "the numbers-only attempt of eval and grad (NumPy deferred): only when a command runs"),
)


def _started_as_command() -> bool:
    """This process is the gradcli command: the console script (its argv[0] names it), or
    `python -m gradcli` (gradcli/__main__.py runs as __main__)."""
    if (sys.argv[:1] or [""])[0].rpartition("/")[2] == "gradcli":
        return True
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return getattr(spec, "name", None) == "gradcli.__main__"


command_process = _started_as_command()
collector_paused = False

_held_mask = None
if command_process:
    import _signal  # (built in: nothing to import before Ctrl-C is held)

    gc.disable()
    collector_paused = True
    # A Ctrl-C while streams is imported (its `signal` imports enum) is held, then delivered to
    # the quiet handler streams installs just below: one way to end on Ctrl-C (streams._end)
    if hasattr(_signal, "pthread_sigmask"):
        _held_mask = _signal.pthread_sigmask(_signal.SIG_BLOCK, (_signal.SIGINT,))

try:
    from gradcli.cli import streams  # noqa: E402

    streams.take_signals("starting")  # before the heavy imports: Ctrl-C during start-up is quiet too
finally:
    if _held_mask is not None:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, _held_mask)


def resume_collector() -> None:
    """The cyclic collector back on, if the command's start-up paused it. What start-up made
    (modules, functions, tables: no garbage) is frozen first, out of the collector's sight:
    its first pass would otherwise scan all of it (more time than the rest of a small command)."""
    global collector_paused
    if collector_paused:
        collector_paused = False
        gc.freeze()
        gc.enable()


def __getattr__(name):
    if name == "app":  # the Typer app, built on first use
        from gradcli.cli import spec
        return spec.app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _typer_settings_in_environment() -> bool:
    """Completion, or a setting of Typer's, in the environment: the answer is Typer's."""
    return any(k.endswith("_COMPLETE") or "TYPER" in k for k in os.environ)


def _answer_help() -> None:
    """`gradcli --help` without importing Typer (most of the command's start-up): the text the
    Typer app prints, kept in gradcli/cli/help.txt (made from the app by tools/gen.py; a test
    fails when it is out of date), written and exited as click does. Returns, leaving the answer
    to Typer, wherever Typer's could differ: a terminal narrower than the kept text, completion
    or Typer settings in the environment, standard output closed or unable to take the text's
    characters."""
    out = sys.stdout
    if out is None or _typer_settings_in_environment():
        return
    try:  # the width click wraps at, as shutil.get_terminal_size() finds it
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    if columns < 80:
        return
    try:
        with open(os.path.join(os.path.dirname(__file__), "help.txt"), encoding="utf-8") as kept:
            text = kept.read()
    except OSError:  # (installed without its data files: Typer answers)
        return
    if not text.isascii() and (out.encoding or "").lower().replace("_", "-") not in ("utf-8", "utf8"):
        return
    # whole, or exit 74 (a short write is finished or is an error); a reader gone is exit 0 (main says so)
    streams.write_output([text])
    sys.exit(0)


def _without_typer(argv: list[str]):
    """(command function, its keyword arguments) for a well-formed command line, read from the
    declaration (gradcli/cli/spec.py) as the Typer app built from it reads it; None wherever
    Typer could answer otherwise (help, completion, Typer's settings, an unknown or repeated
    option, a missing or bad value, --debug, anything unusual), so that every error and help
    stays Typer's own."""
    if _typer_settings_in_environment():
        return None
    from gradcli.cli import spec

    reading = spec.read_argv(argv)
    if reading is None:
        return None
    command, kwargs = reading
    if _numbers_first(command.function, kwargs):
        _defer("numpy")
    from gradcli.cli import commands

    return getattr(commands, command.function), kwargs


def _numbers_first(function: str, kwargs: dict) -> bool:
    """Whether the command may first try its program on numbers alone, without NumPy
    (gradcli.ops.scalar): eval and grad of a program given with --expr, on the CPU in float64,
    answered on the standard output (no --lines, --out, --debug, Dask's options). Any other
    command, and any of these whose program needs arrays, runs on NumPy as it always has."""
    if not command_process or "numpy" in sys.modules or function not in ("eval_command", "grad_command"):
        return False
    return (kwargs.get("file") is None and kwargs.get("expr") is not None and not kwargs.get("lines")
            and kwargs.get("out") is None and not kwargs.get("force") and not kwargs.get("debug")
            and kwargs.get("chunks") is None and kwargs.get("scheduler") is None
            and getattr(kwargs.get("dtype"), "value", None) == "float64"
            and getattr(kwargs.get("device"), "value", None) == "cpu")


class _DeferredModule(type(sys)):
    """A module imported when one of its attributes is first read, not when it is imported:
    NumPy, for the command's numbers-only attempt. Read during the attempt it is not imported:
    the attempt gives way (NeedsArrays) and the command starts over on NumPy."""

    def __getattr__(self, name):
        from gradcli.ops import scalar  # (gradcli.cli.LAZY_IMPORTS)

        if scalar.numbers_only():  # (`__path__` too: no submodule of it is imported before it)
            raise scalar.NeedsArrays(f"numpy.{name}")
        self.__class__ = type(sys)
        if self.__spec__.submodule_search_locations is not None:
            self.__path__ = self.__spec__.submodule_search_locations
        self.__spec__.loader.exec_module(self)  # (what importing it does, into this module)
        return getattr(self, name)


def _defer(module_name: str) -> None:
    import importlib.util

    spec = importlib.util.find_spec(module_name)
    if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
        return
    module = importlib.util.module_from_spec(spec)
    vars(module).pop("__path__", None)  # (read as a submodule is imported: the module is then imported first)
    module.__class__ = _DeferredModule
    sys.modules[module_name] = module


def _answer(function, kwargs: dict) -> None:
    """The command function called; with a program that may be numbers alone, first without
    NumPy, then (where it needs arrays) again on NumPy, from the start: nothing was written."""
    if isinstance(sys.modules.get("numpy"), _DeferredModule):
        from gradcli.ops import scalar  # (gradcli.cli.LAZY_IMPORTS)

        try:
            with scalar.attempt():
                function(**kwargs)
        except scalar.NeedsArrays:
            pass
    function(**kwargs)


def _with_typer(argv: list[str]) -> None:
    """The Typer app answers: with only the command `argv` names (when it names one), after
    refusing an option that takes one value given twice (click would keep the last silently)."""
    from gradcli.cli import spec

    chosen = spec.named_command(argv)
    if chosen is not spec.app():
        repeated = spec.repeated_option(argv)
        if repeated is not None:
            streams.say(f"gradcli: error: {repeated}")
            sys.exit(2)
    with streams.whole_writes():  # click's own output (help, version) delivered whole or exit 74
        chosen(prog_name="gradcli")  # also under `python -m gradcli`: completion is for the command


def main() -> None:
    """The console script and `python -m gradcli`."""
    streams.reserve_standard_fds()
    streams.take_signals("command")
    argv = sys.argv[1:]
    try:
        if command_process and argv in (["--help"], ["-h"]):
            _answer_help()
        fast = _without_typer(argv)
        if fast is not None:
            function, kwargs = fast
            _answer(function, kwargs)
            sys.exit(0)  # click's ending of a command that returns
        _with_typer(argv)
    except (OSError, streams.OutputError) as exc:  # click could not write its own output (help, version)
        streams.silence_stdout()
        streams.say(f"gradcli: cannot write the output: {getattr(exc, 'strerror', None) or exc}")
        sys.exit(streams.EXIT_OUTPUT)
    except streams.ReaderGone:  # `gradcli --help | head -1`: not a failure
        streams.silence_stdout()
        sys.exit(0)


streams.started()
