"""gradcli: a command-line gradient calculator.

The library API (parse -> graph -> evaluate -> differentiate) is importable without the CLI:
`gradcli.evaluate`, `gradcli.grad`, `gradcli.compile_program`; lower layers live in
`gradcli.graph`, `gradcli.autodiff`, `gradcli.evaluate`, `gradcli.ops`.
"""
import sys as _sys

if _sys.argv[:1] == ["-m"] or _sys.argv[0].rpartition("/")[2] == "gradcli":
    # The command is starting (python -m gradcli, or the console script): Ctrl-C is quiet from
    # this first line on, with nothing to import first (gradcli.streams takes over from here).
    # A program that imports gradcli as a library keeps its KeyboardInterrupt.
    import _signal
    import os as _os

    def _interrupted(signum, frame):
        try:
            _os.write(2, b"gradcli: interrupted\n")
        finally:
            _os._exit(128 + signum)

    if _signal.getsignal(_signal.SIGINT) is not _signal.SIG_IGN:
        _signal.signal(_signal.SIGINT, _interrupted)

__version__ = "0.1.0"

_API = ("evaluate", "grad", "compile_program", "Result")


def __getattr__(name):  # the API needs NumPy: load it only when used, so `--help` starts fast
    if name in _API:
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'gradcli' has no attribute {name!r}")
