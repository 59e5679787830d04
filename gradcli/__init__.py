"""gradcli: a command-line gradient calculator.

The library API (parse -> graph -> evaluate -> differentiate) is importable without the CLI:
`gradcli.evaluate`, `gradcli.grad`, `gradcli.compile_program`; lower layers live in
`gradcli.graph`, `gradcli.autodiff`, `gradcli.evaluate`, `gradcli.ops`.
"""
import sys as _sys

_collector_paused = False

if _sys.argv[:1] == ["-m"] or _sys.argv[0].rpartition("/")[2] == "gradcli":
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
    """The cyclic collector back on, if the command's start-up paused it."""
    global _collector_paused
    if _collector_paused:
        _collector_paused = False
        import gc
        gc.enable()


_API = ("evaluate", "grad", "compile_program", "Result")


def __getattr__(name):  # the API needs NumPy: load it only when used, so `--help` starts fast
    if name in _API:
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'gradcli' has no attribute {name!r}")
