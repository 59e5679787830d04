"""gradcli: a command-line gradient calculator.

The library API (parse -> graph -> evaluate -> differentiate) is importable without the CLI:
`gradcli.evaluate`, `gradcli.grad`, `gradcli.compile_program`; lower layers live in
`gradcli.graph`, `gradcli.autodiff`, `gradcli.evaluate`, `gradcli.ops`.
"""
import sys as _sys

_collector_paused = False
_command_process = False  # this process is the gradcli command (not a program that imports gradcli)

if _sys.argv[:1] == ["-m"] or _sys.argv[0].rpartition("/")[2] == "gradcli":
    _command_process = True
    # The command is starting (python -m gradcli, or the console script): Ctrl-C is quiet from
    # this first line on, with nothing to import first (gradcli.streams takes over from here).
    # A program that imports gradcli as a library keeps its KeyboardInterrupt.
    import _signal
    import gc as _gc
    import os as _os

    # Start-up makes tens of thousands of objects (modules, functions) and no garbage: the
    # cyclic collector would rescan them again and again for nothing (a twentieth of the start).
    # The command turns it back on before it reads its input (_resume_collector).
    _gc.disable()
    _collector_paused = True

    def _interrupted(signum, frame):
        try:
            _os.write(2, b"gradcli: interrupted\n")
        finally:
            _os._exit(128 + signum)

    if _signal.getsignal(_signal.SIGINT) is not _signal.SIG_IGN:
        _signal.signal(_signal.SIGINT, _interrupted)

__version__ = "0.1.0"


def _resume_collector() -> None:
    """The cyclic collector back on, if the command's start-up paused it. What start-up made
    (modules, functions, tables: no garbage) is frozen first, out of the collector's sight:
    its first pass would otherwise scan all of it (more time than the rest of a small command)."""
    global _collector_paused
    if _collector_paused:
        _collector_paused = False
        import gc
        gc.freeze()
        gc.enable()


_API = ("evaluate", "grad", "compile_program", "Result")


def __getattr__(name):  # the API needs NumPy: load it only when used, so `--help` starts fast
    if name in _API:
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'gradcli' has no attribute {name!r}")


def _answer_help() -> None:
    """`gradcli --help` without importing Typer (most of the command's start-up): the text the
    Typer app prints, kept in gradcli/_help.py (made from the app; a test fails when it is out
    of date), written and exited as click does. Returns, leaving the answer to Typer, wherever
    Typer's could differ: a terminal narrower than the kept text, completion or Typer settings
    in the environment, standard output closed or unable to take the text's characters."""
    import os

    out = _sys.stdout
    if out is None or any(k.endswith("_COMPLETE") or "TYPER" in k for k in os.environ):
        return
    try:  # the width click wraps at, as shutil.get_terminal_size() finds it
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(_sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    if columns < 80:
        return
    from ._help import TEXT

    if not TEXT.isascii() and (out.encoding or "").lower().replace("_", "-") not in ("utf-8", "utf8"):
        return
    from . import streams

    streams.reserve_standard_fds()
    streams.take_signals("command")
    try:  # whole, or exit 74 (a short write is finished or is an error); a reader gone is exit 0
        streams.write_output([TEXT])
    except streams.ReaderGone:
        streams.silence_stdout()
    except streams.OutputError as exc:
        streams.silence_stdout()
        streams.say(f"gradcli: cannot write the output: {exc}")
        _sys.exit(streams.EXIT_OUTPUT)
    _sys.exit(0)


if _collector_paused and _sys.argv[1:] in (["--help"], ["-h"]):
    _answer_help()
