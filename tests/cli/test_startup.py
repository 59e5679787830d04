"""Start-up: what a command imports (no timings here: those are in benchmarks/run.py), and
`gradcli --help`, answered without Typer from a text that must be what the Typer app prints."""
import os
import subprocess
import sys
from pathlib import Path

from gradcli.ops import scalar as numbers

ROOT = Path(__file__).resolve().parents[2]
KEPT_HELP = (ROOT / "gradcli" / "cli" / "help.txt").read_text(encoding="utf-8")

# The command's main() in a process that did not start as the command (argv[0] is -c): gradcli
# does not answer --help before Typer is imported, so the Typer app answers it itself.
THROUGH_TYPER = "import sys; from gradcli.cli import main; main()"


def run(args, columns=None, python_args=()):
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS",)}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run([sys.executable, *python_args, *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env=env, timeout=60)


def imported(stderr: str) -> set[str]:
    """The modules a `python -X importtime` run imported."""
    return {line.rpartition("|")[2].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def generated(*args: str) -> str:
    """What the maintainers' generator, tools/gen.py, prints (it reads this checkout's gradcli)."""
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "gen.py"), *args], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_the_kept_help_is_the_text_made_from_the_typer_app():
    """Regenerate it with: python tools/gen.py --help-text > gradcli/cli/help.txt"""
    assert KEPT_HELP == generated("--help-text")


def test_the_kept_help_is_what_typer_prints_on_any_terminal_of_80_columns_or_more():
    """Regenerate it with: python tools/gen.py --help-text > gradcli/cli/help.txt"""
    for columns in (80, 200, None):  # None: not a terminal, no COLUMNS
        p = run(["-c", THROUGH_TYPER, "--help"], columns)
        assert (p.returncode, p.stderr) == (0, "")
        assert p.stdout == KEPT_HELP


def test_help_is_answered_without_importing_typer_or_numpy():
    for option in ("--help", "-h"):
        p = run(["-m", "gradcli", option], python_args=("-X", "importtime"))
        assert (p.returncode, p.stdout) == (0, KEPT_HELP)
        modules = imported(p.stderr)
        assert {"gradcli", "gradcli.cli", "gradcli.cli.streams"} <= modules
        assert not {m for m in modules if m.split(".")[0] in ("typer", "numpy", "rich")}
        assert not {m for m in modules if m.startswith("gradcli.") and m not in ("gradcli.cli", "gradcli.cli.streams")}


def test_a_narrow_terminal_gets_typer_s_own_help():
    p = run(["-m", "gradcli", "--help"], 60, python_args=("-X", "importtime"))
    assert "typer" in imported(p.stderr)
    assert p.stdout == run(["-c", THROUGH_TYPER, "--help"], 60).stdout != KEPT_HELP
    assert max(map(len, p.stdout.splitlines())) <= 58


def test_help_that_cannot_be_written_is_said_once_with_exit_74():
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "gradcli", "--help"], stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=60)
    assert (p.returncode, p.stderr) == (74, "gradcli: cannot write the output: No space left on device\n")


def test_help_to_a_reader_that_is_gone_exits_0_quietly():
    for code in (["-m", "gradcli"], ["-c", THROUGH_TYPER]):
        read, write = os.pipe()
        os.close(read)
        p = subprocess.run([sys.executable, *code, "--help"], stdout=write, stderr=subprocess.PIPE, timeout=60)
        os.close(write)
        assert (p.returncode, p.stderr) == (0, b"")  # not a failure (click exits 1)


def test_a_small_eval_imports_only_what_it_needs():
    p = run(["-m", "gradcli", "eval", "-e", "exp(1)", "--format", "plain"], python_args=("-X", "importtime"))
    assert (p.returncode, p.stdout) == (0, "_\t2.718281828459045\n")
    modules = imported(p.stderr)
    assert {"gradcli.api", "gradcli.cli.render"} <= modules  # (the check sees them)
    # a program of numbers is computed on Python's floats (gradcli.ops.scalar): NumPy is not imported
    unneeded = {m for m in modules if m.split(".")[0] in ("scipy", "rich", "lark", "matplotlib", "plotext", "typer",
                                                       "ml_dtypes")
                or m.split(".")[0] == "numpy" and numbers.numpy_calls_the_c_library()}
    unneeded |= modules & {"gradcli.numerics.fixes", "gradcli.insight.jacobians", "gradcli.insight.printer",
                           "gradcli.cli.lines", "gradcli.io.outputs", "gradcli.language.lower.literal",
                           "gradcli.ops._names", "gradcli.ops.elementwise",
                           "gradcli.ops.reduce", "gradcli.ops.array", "gradcli.ops.linalg", "gradcli.ops.nn"}
    assert not unneeded


def test_numpy_is_imported_only_for_a_program_that_needs_arrays():
    """eval and grad of numbers never import NumPy (not even for --set, --format json); an array, an op
    without a scalar implementation, a number Python's float refuses (NumPy's inf), float32 or a
    file import it, and answer as NumPy always did."""
    def numpy_imported(*args):
        p = run(["-m", "gradcli", *args], python_args=("-X", "importtime"))
        assert p.returncode == 0, p.stderr
        return p.stdout, any(m.split(".")[0] == "numpy" for m in imported(p.stderr))

    assert numpy_imported("eval", "-e", "x = 2.5\ny = x * x - 1 / x") == ("y\t5.85\n", False)
    out, loaded = numpy_imported("grad", "-e", "y = x * x / 3 - 1 / x", "--wrt", "x", "--set", "x=2", "--format",
                                 "json")
    assert not loaded and out.startswith('{"command": "grad"')
    assert numpy_imported("eval", "-e", "sum([1.0, 2.0])") == ("_\t3.0\n", True)
    assert numpy_imported("eval", "-e", "tanh(1)") == ("_\t0.7615941559557649\n", True)  # (NumPy's own tanh)
    assert numpy_imported("eval", "-e", "2 * 3", "--dtype", "float32")[1]
    assert numpy_imported("eval", "-e", "1e300 * 1e300") == ("_\tinf\n", True)
    if numbers.numpy_calls_the_c_library():  # (else exp and sin are NumPy's own loops: left to NumPy)
        assert numpy_imported("eval", "-e", "exp(1)") == ("_\t2.718281828459045\n", False)
        assert numpy_imported("grad", "-e", "y = sin(x) * x", "--wrt", "x", "--set", "x=2") == (
            "x\t0.0770037537313969\n", False)


_COLLECTOR_SEEN = """
import sys; sys.argv = ['gradcli', 'eval', *sys.argv[1:]]
import gc, gradcli.cli
paused = not gc.isenabled()
from gradcli import api, cli
from gradcli.cli import streams
seen, evaluate, write = [], api.evaluate, streams.write_output
api.evaluate = lambda *a, **k: seen.append(('work', gc.isenabled(), gc.get_freeze_count() > 0)) or evaluate(*a, **k)
streams.write_output = lambda units: seen.append(('answer', gc.isenabled(), gc.get_freeze_count() > 0)) or write(units)
import atexit  # (the command's end runs the exit handlers, and skips Python's teardown)
atexit.register(lambda: print(paused, seen, file=sys.stderr))
cli.main()
"""


def test_the_command_pauses_the_cyclic_collector_for_one_program_and_freezes_what_it_made():
    """Start-up pauses it (imports make no garbage). One program's work runs paused too (millions of
    objects, no cycles), and what it made is frozen before the collector comes back on for the answer."""
    p = run(["-c", _COLLECTOR_SEEN, "-e", "exp(1)", "--format", "plain"])
    assert (p.returncode, p.stdout, p.stderr) == (0, "_\t2.718281828459045\n",
                                                  "True [('work', False, True), ('answer', True, True)]\n")


def test_a_command_of_many_lines_collects_as_the_lines_go_by():
    p = subprocess.run([sys.executable, "-c", _COLLECTOR_SEEN, "--lines", "--format", "plain"], input="exp(1)\n2\n",
                       capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout) == (0, "1\t_\t2.718281828459045\n2\t_\t2.0\n")
    assert p.stderr.startswith("True [('work', True, True)")


def test_a_library_user_keeps_the_collector_and_python_s_help():
    code = "import gc, gradcli.cli; print(gc.isenabled(), gradcli.cli.collector_paused)"
    assert run(["-c", code, "--help"]).stdout == "True False\n"


def test_the_ops_index_is_the_one_made_from_the_families():
    """Regenerate it with: python tools/gen.py --ops-index > gradcli/ops/_names.json"""
    assert (ROOT / "gradcli" / "ops" / "_names.json").read_text() == generated("--ops-index")


# The tables in a process that imports every family first, and in one whose first lookups
# import the families they need, out of order, before the whole table is read.
_TABLE_ORDER = """
import json, sys
from gradcli import ops
for name in sys.argv[1:]:
    assert ops.CALLABLE.get(name) is not None
print(json.dumps([list(ops.OPS), list(ops.CALLABLE), [op.name for op in ops.OPS.values()],
                  sorted(m for m in sys.modules if m.startswith("gradcli.ops.") and m.rpartition(".")[2] in ops.FAMILIES)]))
"""


def test_a_family_is_imported_with_its_first_name_and_the_table_keeps_its_order():
    import json

    eager = "import gradcli.ops.elementwise, gradcli.ops.reduce, gradcli.ops.array, gradcli.ops.linalg, " \
            "gradcli.ops.index, gradcli.ops.nn\n"
    whole = json.loads(run(["-c", eager + _TABLE_ORDER]).stdout)
    lazy = json.loads(run(["-c", _TABLE_ORDER, "mse_loss", "cumsum", "erf", "det", "concatenate"]).stdout)
    assert lazy == whole and len(whole[0]) > 400
    from gradcli.ops import FAMILIES
    assert whole[3] == sorted(f"gradcli.ops.{family}" for family in FAMILIES) and len(FAMILIES) >= 6
    # a family comes after those before it in the table (so the table has one order)
    code = ("import sys\nfrom gradcli import ops\nassert ops.G.erf and 'nope' not in ops.CALLABLE\n"
            "assert ops.OPS.get('nope') is None and ops.OPS['exp']\n"
            "print(sorted(m for m in sys.modules if m.rpartition('.')[0] == 'gradcli.ops' and m.rpartition('.')[2] not in ('_names', 'table', 'trace', 'shapes', 'core')))\n"
            "assert 'cumsum' in ops.CALLABLE\n"
            "print(sorted(m for m in sys.modules if m.rpartition('.')[0] == 'gradcli.ops' and m.rpartition('.')[2] not in ('_names', 'table', 'trace', 'shapes', 'core')))")
    assert run(["-c", code]).stdout == "['gradcli.ops.elementwise']\n['gradcli.ops.elementwise', 'gradcli.ops.reduce']\n"
    direct = json.loads(run(["-c", "import gradcli.ops.nn\n" + _TABLE_ORDER]).stdout)
    assert direct == whole


def test_the_command_s_quick_end_delivers_the_whole_answer_and_its_exit_code():
    """The command ends without Python's teardown once its answer is out (gradcli.cli._end):
    a large answer arrives whole through a pipe, and an error keeps its exit code."""
    p = run(["-m", "gradcli", "eval", "-e", "x = arange(300000) * 0.5", "--format", "plain"])
    assert p.returncode == 0 and p.stderr == ""
    name, numbers = p.stdout.split("\t")
    assert name == "x" and numbers.endswith("\n")
    assert [float(v) for v in numbers.split()] == [k * 0.5 for k in range(300000)]
    p = run(["-m", "gradcli", "eval", "-e", "y = exp(", "--format", "plain"])
    assert p.returncode == 2 and p.stdout == "" and p.stderr.startswith("<expr>:1:")

