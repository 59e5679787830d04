"""gradcli: a command-line gradient calculator.

The library API (parse -> graph -> evaluate -> differentiate) is importable without the CLI:
`gradcli.evaluate`, `gradcli.grad`, `gradcli.compile_program`; lower layers live in
`gradcli.language.lower`, `gradcli.autodiff`, `gradcli.engine.evaluate`, `gradcli.ops`.
Importing gradcli does nothing else: the command's start-up lives in gradcli.cli.
"""
__version__ = "0.1.0"

_API = ("evaluate", "grad", "compile_program", "Result", "compile", "Program", "RunOptions")


def __getattr__(name):  # the API needs NumPy: load it only when used
    if name in _API:
        from gradcli import api
        return getattr(api, name)
    raise AttributeError(f"module 'gradcli' has no attribute {name!r}")
