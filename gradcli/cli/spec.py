"""The command line, declared once: each command's name, help, examples and parameters, as data.

Two readers, which a test holds in step on every command (tests/cli/test_cli_without_typer.py):
- `typer_app()` builds the Typer app from it, so help, completion and every usage error are
  Typer's own;
- `read_argv()` reads a well-formed command line from it without importing Typer (Typer's import
  is most of a small command's start-up), and leaves anything else to the app.

A command's behaviour is its function in gradcli.cli.commands, `<name>_command`, which takes
exactly the keywords declared here (with the converted values: a choice as its Enum member).
"""
import os
from enum import Enum  # (no `from __future__ import annotations`: Typer reads _version_option's)

from gradcli import __version__


class Format(str, Enum):
    auto = "auto"
    table = "table"
    json = "json"
    plain = "plain"


# graph's --format: every command's, and Graphviz DOT; tree is the table's name before every command had --format
GraphFormat = Enum("GraphFormat", [(f.name, f.value) for f in Format] + [("dot", "dot"), ("tree", "tree")],
                   module=__name__, type=str)


class Dtype(str, Enum):  # (gradcli/dtypes.py holds what each can hold; a test keeps the two in step)
    float64 = "float64"
    float32 = "float32"
    float16 = "float16"
    bfloat16 = "bfloat16"
    float8_e4m3fn = "float8_e4m3fn"
    float8_e5m2 = "float8_e5m2"


class Accumulate(str, Enum):
    float32 = "float32"
    same = "same"


class Device(str, Enum):
    cpu = "cpu"
    cuda = "cuda"
    dask = "dask"


class Unconnected(str, Enum):
    none = "none"
    zero = "zero"


class Param:
    """One parameter of a command: the keyword its function takes; its option names (none: the
    positional FILE); its kind: str, int, float, bool (a flag, which takes no value) or a choice
    Enum; its default (a choice's Enum member); whether it repeats (a list of str) or must be
    given. `help`, `metavar`, `hidden` and `show_default` are for Typer's help only. (A plain
    class: `dataclasses` is not imported at start-up.)"""

    __slots__ = ("keyword", "names", "kind", "default", "help", "metavar", "multiple", "required", "hidden",
                 "show_default")

    def __init__(self, keyword: str, names: tuple[str, ...], kind: type = str, default=None, help: str = "", *,
                 metavar: str | None = None, multiple: bool = False, required: bool = False, hidden: bool = False,
                 show_default: bool = True):
        self.keyword, self.names, self.kind, self.default, self.help = keyword, names, kind, default, help
        self.metavar, self.multiple, self.required, self.hidden = metavar, multiple, required, hidden
        self.show_default = show_default

    def but(self, **changes) -> "Param":
        """This parameter with some of its fields changed (a command's own help for a shared option)."""
        return Param(**{**{name: getattr(self, name) for name in self.__slots__}, **changes})


class Command:
    """A command: its name, its help (the first sentence is its line in `gradcli --help`), the
    example command lines of its help's epilog, and its parameters in the order of its help."""

    __slots__ = ("name", "help", "examples", "params")

    def __init__(self, name: str, help: str, examples: tuple[str, ...], params: tuple[Param, ...]):
        self.name, self.help, self.examples, self.params = name, help, examples, params

    @property
    def function(self) -> str:
        """The name of the command's function in gradcli.cli.commands."""
        return f"{self.name}_command"

    @property
    def epilog(self) -> str:
        """The help's epilog: the examples (click keeps a paragraph after \\b as written)."""
        lines = self.examples
        return "\b\nExample" + ("s" if len(lines) > 1 else "") + ":\n" + "\n".join(f"  {ln}" for ln in lines)


# --------------------------------------------------------------------------- the options shared by commands

FILE = Param("file", (), help="Program file; '-' or nothing (with a pipe) reads standard input.", metavar="[FILE]",
             show_default=False)
EXPR = Param("expr", ("-e", "--expr"), help="Program text.", metavar="PROGRAM")
SET = Param("set_", ("--set",), help="Input value (repeatable): a literal such as [1, 2] or @file.npy/.npz:key/.json/.csv.",
            metavar="NAME=VALUE", multiple=True)
SET_SHAPE = SET.but(help="Input value (repeatable): a literal such as [1, 2], @file.npy/.npz:key/.json/.csv, or a "
                         "shape without values such as float64[3] or float32[3, 4] (an input given neither is a number).")
FORMAT = Param("format", ("--format",), Format, Format.auto,
               "Output format: a table, one JSON document, or plain NAME<TAB>numbers lines; auto is a table on a "
               "terminal, plain otherwise (with --lines: json).")
DTYPE = Param("dtype", ("--dtype",), Dtype, Dtype.float64,
              "Floating-point type of every value; the half types (float16, bfloat16, float8) compute each operation "
              "in float32 and round its result (docs/half-precision.md).")
ACCUMULATE = Param("accumulate", ("--accumulate",), Accumulate, Accumulate.float32,
                   "With a half --dtype: sums, means, matrix products, softmax and norms accumulate in float32 and "
                   "round once (as PyTorch's autocast and XLA), or in the type itself (same).")
DEVICE = Param("device", ("--device",), Device, Device.cpu,
               "Evaluate on the CPU (NumPy), a GPU (CuPy), or chunk by chunk with Dask (inputs larger than memory, "
               "several cores, a cluster; needs gradcli[dask]).")
CHUNKS = Param("chunks", ("--chunks",), help="With --device dask: bytes per chunk (e.g. 64M); default: from "
                                              "--max-memory and the number of cores.", metavar="SIZE")
SCHEDULER = Param("scheduler", ("--scheduler",),
                  help="With --device dask: a dask.distributed scheduler (tcp://host:8786), or 'local' for worker "
                       "processes started here; default: threads in this process.", metavar="ADDRESS")
STRICT = Param("strict", ("--strict",), bool, False, "Exit 1 if an output or gradient is not finite.")
LINES = Param("lines", ("--lines",), bool, False,
              "Each line of the input is its own program; one answer per non-blank line, carrying its line number: "
              "a JSON object (NDJSON), or with --format plain NUMBER<TAB>NAME<TAB>numbers lines.")
CALL = Param("call", ("--call",), help="Call a function of the program, e.g. 'loss(w, x)'; by default a program "
                                        "ending in a def calls it on the inputs named as its parameters.", metavar="EXPR")
DEBUG = Param("debug", ("--debug",), bool, False, "Show the Python traceback of an error.", hidden=True)
MAX_MEMORY = Param("max_memory", ("--max-memory",),
                   help="Refuse programs whose arrays need more memory than this (e.g. 8G, 500M); default: half of "
                        "what this process may use (the machine's memory, ulimit -v, the container's limit).", metavar="SIZE")
WRT = Param("wrt", ("--wrt",), help="With respect to this input or named value (repeatable).", metavar="NAME",
            multiple=True)
WRT_ONE = Param("wrt", ("--wrt",), help="With respect to this value.", metavar="NAME")
OF = Param("of", ("--of",), help="Of the sum of these values (repeatable); default: the last statement.",
           metavar="NAME", multiple=True)
OF_ONE = Param("of", ("--of",), help="Of this value (one); default: the last statement.", metavar="NAME")
OUT = Param("out", ("--out",),
            help="Write the arrays to PATH instead of printing their numbers: .npz (every array), .npy (exactly one) "
                 "or a .zarr directory (needs zarr: pip install 'gradcli[dask]'); outputs under their names, gradients "
                 "and Jacobians as d_Y_d_X, Hessian blocks as d2_Y_d_X_d_Z. Standard output says each one's shape, "
                 "dtype, min, max and where it went. Written whole or not at all.", metavar="PATH")
FORCE = Param("force", ("--force",), bool, False, "With --out: replace PATH if it exists.")
LOSS_SCALE = Param("loss_scale", ("--loss-scale",),
                   help="Multiply the output's seed by N (GradScaler's loss scale), run the backward pass in --dtype and "
                        "divide the gradients by N in float32; auto: the power of two that keeps every scaled "
                        "gradient in the dtype's normal range, from a float32 pass, explained on stderr.",
                   metavar="N|auto")
UNCONNECTED = Param("unconnected", ("--unconnected",), Unconnected, Unconnected.none,
                    "Result for a --wrt value that the output does not depend on: null or zeros.")

# --------------------------------------------------------------------------- the commands, in the order of --help

APP_HELP = ("A command-line gradient calculator: values, gradients and numerical diagnostics of small "
            "Python-flavoured programs (TensorFlow semantics).")
APP_EPILOG = "Example: gradcli grad -e 'y = sum(x * x)' --wrt x --set x='[1, 2]'"

COMMANDS = (
    Command("eval", "Evaluate a program and print the last statement's value (or each --print NAME).", (
        "gradcli eval -e 'x = [1.0, 2.0]; y = sum(x * x)' --format json",
        "printf 'exp(1)\\n\\n2 ** 10\\n' | gradcli eval --lines --format plain",
    ), (FILE, EXPR, SET, CALL,
        Param("print_", ("--print",), help="Report this name's value (repeatable); default: the last statement.",
              metavar="NAME", multiple=True),
        FORMAT, DTYPE, ACCUMULATE, DEVICE, STRICT, LINES, MAX_MEMORY, OUT, FORCE, CHUNKS, SCHEDULER, DEBUG)),
    Command("grad", "Gradients of the --of values (summed) with respect to each --wrt value, as tf.gradients.", (
        "gradcli grad -e 'y = sum(x * x)' --wrt x --set x='[1, 2]'",
    ), (FILE, EXPR,
        WRT.but(help="Differentiate with respect to this input or named value (repeatable)."),
        OF.but(help="Differentiate the sum of these values (repeatable); default: the last statement."),
        Param("grad_ys", ("--grad-ys",), help="Upstream gradient of an --of value, of exactly its shape (repeatable); "
                                              "default ones.", metavar="NAME=VALUE", multiple=True),
        UNCONNECTED.but(help="Gradient of a --wrt value that the outputs do not depend on: null or zeros."),
        SET, CALL, FORMAT, DTYPE, ACCUMULATE, LOSS_SCALE, DEVICE, STRICT, LINES, MAX_MEMORY, OUT, FORCE, CHUNKS,
        SCHEDULER, DEBUG)),
    Command("check", "Compare reverse-mode gradients with float64 central finite differences; exit 1 if any "
                     "disagrees, naming the operation whose gradient rule is wrong.", (
        "gradcli check -e 'y = sum(tanh(x) * x)' --wrt x --set x='[0.3, 1.2]'",
    ), (FILE, EXPR, WRT, OF, SET, CALL,
        Param("eps", ("--eps",), float, 1e-6, "Finite-difference step, relative to the input's scale."),
        Param("rtol", ("--rtol",), float, 1e-5, "Relative tolerance."),
        Param("atol", ("--atol",), float, 1e-8, "Absolute tolerance."),
        DTYPE.but(help="float64 or float32: the finite-difference check, in float64. A half type (float16, bfloat16, "
                       "float8): the precision report instead: per operation, the relative error of its value and of "
                       "its gradient in that type against float64, worst first, with a remedy; exit 1 where the type "
                       "makes a value or gradient not finite that float64 computes."),
        ACCUMULATE, LOSS_SCALE.but(help="With a half --dtype: compute the report's gradients with this loss scale (N, "
                                        "or auto)."),
        FORMAT, LINES, MAX_MEMORY, DEBUG)),
    Command("jacobian", "The full Jacobian dY/dX of one --of Y for each --wrt X, shaped Y.shape + X.shape. "
                        "Forward mode (one pass per element of the --wrt inputs) where they have fewer elements "
                        "than Y, as JAX's jacfwd; else reverse mode (one pass per element of Y). The mode chosen "
                        "is said under the table and in JSON's mode.", (
        "gradcli jacobian -e 'y = x * x' --of y --wrt x --set x='[1, 2]'",
    ), (FILE, EXPR, OF_ONE, WRT, SET, CALL, UNCONNECTED, FORMAT, DTYPE, ACCUMULATE, LINES, MAX_MEMORY, OUT, FORCE,
        DEBUG)),
    Command("hessian", "The Hessian block d²Y/dX² of a scalar Y for each --wrt X, shaped X.shape + X.shape (and "
                       "the mixed blocks d²Y/dX dZ with several --wrt). The Jacobian of the gradient, by the same "
                       "rule: forward over reverse where the inputs are fewer than the gradient's elements, which "
                       "never happens (they are as many), so reverse over reverse, one gradient pass per input "
                       "element; said under the table and in JSON's mode.", (
        "gradcli hessian -e 'y = sum(x ** 3)' --wrt x --set x='[1, 2]'",
    ), (FILE, EXPR, OF_ONE, WRT, SET, CALL, UNCONNECTED, FORMAT, DTYPE, ACCUMULATE, LINES, MAX_MEMORY, OUT, FORCE,
        DEBUG)),
    Command("derive", "Print the gradient as a program in gradcli's own language, simplified.", (
        "gradcli derive -e 'y = sin(x) * x' --wrt x",
        "gradcli derive -e 'y = sum(tanh(x @ W))' --wrt W --set 'x=float64[3]' --set 'W=float64[3, 4]'",
    ), (FILE, EXPR, WRT_ONE, OF, SET_SHAPE, CALL, FORMAT, LINES, MAX_MEMORY, DEBUG)),
    Command("fix", "Print the program with every fix gradcli has proven on these inputs applied (finite where it "
                   "was not, the same numbers elsewhere); the file itself is never written. Exit 1 if a value or "
                   "gradient is still not finite.", (
        "gradcli fix -e 'y = log(1 + exp(x))' --set x=1000 --diff",
    ), (FILE, EXPR, SET, CALL,
        WRT.but(help="Also prove the fixes on the gradients with respect to this value (repeatable)."),
        OF,
        Param("diff", ("--diff",), bool, False, "Print a unified diff instead of the whole program."),
        DTYPE, ACCUMULATE, FORMAT, MAX_MEMORY, DEBUG)),
    Command("graph", "Show the program as a graph: each operation, where it stands, its shape and values, and "
                     "with --wrt its gradient.", (
        "gradcli graph -e 'x = [1.0, 2.0]; y = sum(x * x)' --wrt x --format table",
        "gradcli graph samples/stable_softmax.expr --format dot | dot -Tsvg > graph.svg",
    ), (FILE, EXPR, WRT, OF_ONE.but(help="Show this value; default: the last."), SET_SHAPE, CALL,
        FORMAT.but(kind=GraphFormat, default=GraphFormat.auto,
                   help="As every command's --format (the table is a tree; tree is its old name), or Graphviz DOT "
                        "(dot -Tsvg)."),
        MAX_MEMORY, DEBUG)),
    Command("plot", "Draw a scalar value and its derivative (and second derivative with --order 2) as one input "
                    "varies over a range: in the terminal, or to a PNG or SVG file. Points where a value or "
                    "derivative is not finite, and ties and kinks, are marked, and the diagnostics that explain "
                    "them go to standard error.", (
        "gradcli plot -e 'y = sin(x) * x' --wrt x --range -5:5 --order 2",
        "gradcli plot model.expr --wrt 'w[2]' --set 'w=[1, 2, 3]' --range 0:1 --png w2.png",
    ), (FILE, EXPR,
        WRT_ONE.but(help="The input to vary: a scalar, or one element of an array such as 'x[2]' (the others held "
                         "at their --set values).", required=True, show_default=False),
        Param("range_", ("--range",), help="From LOW to HIGH, e.g. -5:5.", metavar="LOW:HIGH", required=True,
              show_default=False),
        OF_ONE, SET, CALL,
        Param("order", ("--order",), int, 1, "Draw the derivatives up to this order: 1 or 2."),
        Param("points", ("--points",), int, 200, "How many points, evenly spaced."),
        Param("png", ("--png",), help="Write a PNG (needs Matplotlib: pip install 'gradcli[plot]').", metavar="PATH"),
        Param("svg", ("--svg",), help="Write an SVG (needs Matplotlib).", metavar="PATH"),
        Param("force", ("--force",), bool, False, "Replace the --png or --svg file if it exists."),
        DTYPE, ACCUMULATE, MAX_MEMORY, DEBUG)),
)

BY_NAME = {command.name: command for command in COMMANDS}


# --------------------------------------------------------------------------- reader 1: the Typer app

def typer_app(functions: dict | None = None):
    """The Typer app built from COMMANDS. Each command calls `functions[name]` (default: its
    function in gradcli.cli.commands, imported when the command runs: help and usage errors do
    not import the library) with the keywords of its parameters."""
    import typer

    app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None, help=APP_HELP,
                      epilog=APP_EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
    app.callback()(_version_option(typer))
    for command in COMMANDS:
        function = functions[command.name] if functions is not None else _when_run(command.function)
        app.command(command.name, help=command.help, epilog=command.epilog)(_signed(function, command, typer))
    return app


def _version_option(typer):
    """The app's own option, --version (eager: it answers before any command is read)."""
    from typing import Annotated, Optional

    def print_version(value: bool) -> None:
        if value:
            typer.echo(f"gradcli {__version__}")
            raise typer.Exit()

    def options(version: Annotated[Optional[bool], typer.Option(
            "--version", callback=print_version, is_eager=True, help="Print the version and exit.")] = None) -> None:
        pass

    return options


def _when_run(name: str):
    """The function `name` of gradcli.cli.commands, looked up when the command runs."""
    def command(**kwargs):
        from gradcli.cli import commands  # (listed in gradcli.cli.LAZY_IMPORTS)
        return getattr(commands, name)(**kwargs)
    return command


def _signed(function, command: Command, typer):
    """`function` behind the signature Typer reads a command's parameters from: each parameter
    annotated as typer.Option (or typer.Argument) with its declared names and help."""
    import inspect
    from typing import Annotated, Optional

    parameters = []
    for param in command.params:
        if param.kind is str and not param.required:
            kind = Optional[list[str]] if param.multiple else Optional[str]
        else:
            kind = param.kind  # a flag, a number, a choice, a str that must be given
        shown = dict(help=param.help, metavar=param.metavar, hidden=param.hidden, show_default=param.show_default)
        info = typer.Option(*param.names, **shown) if param.names else typer.Argument(**shown)
        parameters.append(inspect.Parameter(param.keyword, inspect.Parameter.KEYWORD_ONLY,
                                            default=... if param.required else param.default,
                                            annotation=Annotated[kind, info]))

    def call(**kwargs):
        return function(**kwargs)

    call.__name__ = call.__qualname__ = command.function
    call.__signature__ = inspect.Signature(parameters)
    return call


_app = None


def app():
    """The Typer app of every command, built on first use."""
    global _app
    if _app is None:
        _app = typer_app()
    return _app


def named_command(argv: list[str]):
    """The app with only the command that `argv` names, when it names one: Typer turns every
    command's options into click's at start-up (about 1 ms a command), and a run needs only its
    own. Help, completion and a mistyped command get the whole app."""
    whole = app()
    words = [a for a in argv if not a.startswith("-")][:1]
    if not words or any(k.endswith("_COMPLETE") for k in os.environ):
        return whole
    chosen = [c for c in whole.registered_commands if c.name == words[0]]
    if not chosen or argv.index(words[0]) != 0:
        return whole
    import typer

    only = typer.Typer()
    only.__dict__.update(whole.__dict__)  # the same settings and callback
    only.registered_commands = chosen
    only._add_completion = False  # the group's own options: never read after a command's name
    return only


def repeated_option(argv: list[str]) -> str | None:
    """What is wrong when an option that takes one value is given twice in `argv` (a command's
    line), under any of its names (click would keep the last silently: `hessian --of a --of b`
    is not the Hessian of a + b, and `-e A -eB` is not the program A), as click names the
    option; None if nothing is."""
    command = BY_NAME[argv[0]]
    for name, times in repeated_single_options(argv[1:], command.params):
        return f"{name} was given {times} times; {command.name} takes one"
    return None


def repeated_single_options(words: list[str], params: tuple[Param, ...]) -> list[tuple[str, int]]:
    """(the option's last name, how many times it was given) for each option of `params` that
    takes one value and was given more than once in `words` (a command's words after its name),
    read as click reads them: `--name VALUE`, `--name=VALUE`, `-e VALUE` and `-eVALUE`, a value
    never read as an option (`-e '-exp(x)'`, `--range -5:5`), nothing after `--`."""
    param_of = {name: param for param in params for name in param.names}
    counts: dict[str, int] = {}
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--":
            break
        if word.startswith("--"):
            name, equals, _ = word.partition("=")
            attached = bool(equals)
        elif word.startswith("-") and len(word) > 1:
            name, attached = word[:2], len(word) > 2
        else:
            continue  # an argument
        param = param_of.get(name)
        if param is None:
            continue  # not an option of this command (click reports it)
        counts[param.keyword] = counts.get(param.keyword, 0) + 1
        if param.kind is not bool and not attached:
            i += 1  # its value, whatever it looks like
    return [(param.names[-1], counts[param.keyword]) for param in params
            if counts.get(param.keyword, 0) > 1 and param.kind is not bool and not param.multiple]


# --------------------------------------------------------------------------- reader 2: without Typer

def read_argv(argv: list[str]):
    """(the command, its keyword arguments) for a well-formed command line, read as click reads
    it from the app built from the same declaration; None wherever Typer could answer otherwise
    (help, an unknown or repeated option, a missing or bad value, --debug, anything unusual),
    so that every error and help stays Typer's own."""
    command = BY_NAME.get(argv[0]) if argv else None
    if command is None:
        return None
    given = _given(command.params, argv[1:])
    if given is None or given.get("debug"):  # (--debug: its traceback is Typer's to show)
        return None
    kwargs = {}
    for param in command.params:
        if param.keyword not in given:
            if param.required:
                return None
            kwargs[param.keyword] = param.default
            continue
        value = given[param.keyword]
        try:  # as click and Typer convert it: int(), float(), or a choice's Enum member by its value
            kwargs[param.keyword] = value if param.kind in (str, bool) or param.multiple else param.kind(value)
        except ValueError:
            return None
    return command, kwargs


def _given(params: tuple[Param, ...], args: list[str]) -> dict | None:
    """{keyword: the text given (a list for a repeated option; True for a flag)}, or None for
    anything the reader leaves to Typer."""
    options = {name: param for param in params for name in param.names}  # option name -> its param
    if repeated_single_options(args, params):
        return None  # repeated_option() refuses it
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
            if param.kind is bool:
                return None
        if param.kind is bool:
            if equals:
                return None
            given[param.keyword] = True
            continue
        if not equals:
            if i == len(args):
                return None
            value = args[i]
            i += 1
        if param.multiple:
            given.setdefault(param.keyword, []).append(value)
        else:
            given[param.keyword] = value
    arguments = [param for param in params if not param.names]
    if len(positional) > len(arguments):
        return None
    for param, value in zip(arguments, positional):
        given[param.keyword] = value
    return given
