"""A well-formed command line is read without Typer (gradcli.cli._without_typer, from the table
gradcli/_cli_table.py made from the Typer app): it must call the command function with exactly
the keyword arguments that the Typer app would pass, and leave everything else (help, errors,
completion, anything unusual) to the Typer app, so that every message stays Typer's own."""
import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradcli import cli, docs
from gradcli._cli_table import COMMANDS

ROOT = Path(__file__).resolve().parent.parent


def test_the_table_is_the_one_made_from_the_typer_app():
    """Regenerate it with: python -m gradcli.docs --cli-table > gradcli/_cli_table.py"""
    assert (ROOT / "gradcli" / "_cli_table.py").read_text() == docs.cli_table()
    assert list(COMMANDS) == [name for name, _, _ in cli._COMMANDS]


@pytest.fixture(scope="module")
def typer_reading():
    """argv -> (command function's name, the keyword arguments the Typer app passes it), or
    None where the Typer path does not call it (an error, help, --version): the app made from
    recorders with the command functions' own signatures, behind main()'s own check of
    repeated options."""
    seen = []

    def recorder(function):
        @functools.wraps(function)
        def record(**kwargs):
            seen.append((function.__name__, kwargs))
        return record

    group = typer.main.get_command(cli._typer_app([(n, recorder(f), e) for n, f, e in cli._COMMANDS]))

    def read(argv):
        seen.clear()
        try:
            chosen = cli._named_command(argv)
            if chosen is not cli._app():
                cli._refuse_repeated_options(chosen, argv)
            group.main(args=list(argv), prog_name="gradcli", standalone_mode=False)
        except SystemExit:
            return None
        except Exception as exc:  # click's usage errors
            assert type(exc).__module__.startswith("typer"), exc
            return None
        return seen[0] if seen else None
    return read


def fast_reading(argv):
    fast = cli._without_typer(list(argv))
    return None if fast is None else (fast[0].__name__, fast[1])


def typed(reading):
    """Compared with the types (1 is not 1.0, an Enum member is not its value) and NaN as itself."""
    return reading and (reading[0], {k: (type(v), repr(v)) for k, v in reading[1].items()})


def valid_values(kind):
    return {"str": ["x", "", "-", "--help", "y = sum(x * x)", "a=[1, 2]", "-5:5", "--"],
            "int": ["2", "-1", " 3", "1_0"], "float": ["1e-4", "-0.5", "nan", "inf", "2"],
            "flag": [None]}.get(kind) or [m.value for m in getattr(cli, kind)]


def full_command_lines():
    """For each command: one command line with every option, in each of its spellings, and
    every value of each choice."""
    for name, (_, params) in COMMANDS.items():
        for spelling in range(2):
            for pick in range(4):
                argv = [name]
                for keyword, names, kind, _, multiple, _ in params:
                    if keyword == "debug":
                        continue
                    values = valid_values(kind)
                    value = values[pick % len(values)]
                    if not names:
                        argv.append("file.expr")
                    elif value is None:
                        argv.append(names[0])
                    elif spelling and names[-1].startswith("--"):
                        argv += [f"{names[-1]}={value}"] * (2 if multiple else 1)
                    else:
                        argv += [names[0], value] * (2 if multiple else 1)
                yield argv


CORPUS = [
    ["eval", "-e", "exp(1)", "--format", "plain"],
    ["eval", "-eexp(1)"],
    ["eval", "-e=1"],
    ["eval", "--expr=x = 1", "--print", "x", "--print", "x"],
    ["eval", "prog.expr", "--set", "x=@in.npy", "--set=y=2"],
    ["eval", "-", "--lines", "--format", "json", "--strict", "--strict"],
    ["eval", "--", "-e"],
    ["eval", "-e", "x", "--", "file"],
    ["eval", "--set", "--", "-e", "x"],
    ["eval", "-e", "--help"],
    ["eval", "-e", "-h"],
    ["eval", "--device", "dask", "--chunks", "64M", "--scheduler", "local", "--out", "a.zarr", "--force"],
    ["eval"],
    ["grad", "-e", "y = sum(x * x)", "--wrt", "x", "--set", "x=[1, 2]", "--unconnected", "zero"],
    ["grad", "--of", "y", "--grad-ys", "y=[1]", "--dtype", "float32", "-e", "y = x"],
    ["check", "-e", "y = sum(tanh(x) * x)", "--wrt", "x", "--eps", "1e-4", "--rtol=1e-3", "--atol", "0"],
    ["jacobian", "-e", "y = x * x", "--of", "y", "--wrt", "x", "--set", "x=[1, 2]"],
    ["hessian", "-e", "y = sum(x ** 3)", "--wrt", "x", "--max-memory", "8G"],
    ["derive", "-e", "y = sin(x) * x", "--wrt", "x", "--format", "table"],
    ["fix", "-e", "y = log(1 + exp(x))", "--set", "x=1000", "--diff"],
    ["graph", "samples/stable_softmax.expr", "--format", "dot"],
    ["graph", "-e", "y = x", "--format", "tree"],
    ["plot", "-e", "y = sin(x) * x", "--wrt", "x", "--range", "-5:5", "--order", "2", "--points", "50"],
    ["plot", "m.expr", "--wrt", "w[2]", "--set", "w=[1, 2, 3]", "--range", "0:1", "--png", "w2.png"],
    ["eval", "--print", "file", "file", "--set", "a=1", "--set", "b=2"],  # an argument named as a value is not
    ["eval", "-e", "-e", "--format", "plain"],  # an option given twice, nor a value spelled as an option
    *full_command_lines(),
]

REFUSED = [
    [], ["--help"], ["-h"], ["--version"], ["evl", "-e", "1"], ["--debug", "eval"],
    ["eval", "--help"], ["eval", "-h"], ["eval", "-he"], ["eval", "--nope"], ["eval", "--expr"], ["eval", "-e"],
    ["eval", "--format", "xml"], ["eval", "--format", "JSON"], ["eval", "a", "b"], ["eval", "--", "a", "b"],
    ["eval", "-x"], ["eval", "--strict=1"], ["eval", "--strict="], ["eval", "--exp", "1"],
    ["eval", "-e", "1", "--debug"], ["eval", "-e", "1", "--install-completion"],
    ["plot", "-e", "y = x", "--wrt", "x"], ["plot", "-e", "y = x", "--range", "0:1"],
    ["plot", "-e", "y = x", "--wrt", "x", "--range", "0:1", "--order", "one"],
    ["check", "--eps", "abc"], ["check", "--eps", ""],
    ["hessian", "--of", "a", "--of", "b"], ["hessian", "--of", "a", "--of=b"], ["eval", "-e", "a", "--expr", "b"],
]


@pytest.mark.parametrize("argv", CORPUS, ids=" ".join)
def test_a_well_formed_command_line_is_read_as_the_typer_app_reads_it(argv, typer_reading):
    expected = typer_reading(argv)
    assert expected is not None
    assert typed(fast_reading(argv)) == typed(expected)


@pytest.mark.parametrize("argv", REFUSED, ids=" ".join)
def test_anything_else_is_left_to_the_typer_app(argv):
    assert fast_reading(argv) is None


def test_completion_and_typer_settings_in_the_environment_are_left_to_the_typer_app(monkeypatch):
    argv = ["eval", "-e", "exp(1)"]
    assert fast_reading(argv) is not None
    for name in ("_GRADCLI_COMPLETE", "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "TYPER_STANDARD_TRACEBACK"):
        with monkeypatch.context() as m:
            m.setenv(name, "1")
            assert fast_reading(argv) is None


TOKENS = st.sampled_from(sorted({name for _, params in COMMANDS.values() for p in params for name in p[1]}
                                | {"-", "--", "-h", "--help", "--nope", "-x", "-ex", "-e=1", "--format=json",
                                   "--strict=", "--set=a=1", "x", "file", "1", "2.5", "nan", "json", "auto", "tree",
                                   "float32", "dask", "zero", "", "--version", "-5:5"}))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(sorted(COMMANDS)), st.lists(TOKENS, max_size=8))
def test_any_command_line_is_read_as_the_typer_app_reads_it_or_left_to_it(typer_reading, command, tokens):
    argv = [command, *tokens]
    fast = fast_reading(argv)
    if fast is not None:
        assert typed(fast) == typed(typer_reading(argv))


def gradcli(args, typer_env=False):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if typer_env:
        env["GRADCLI_TEST_TYPER"] = "1"  # a name with TYPER in it: the command leaves the reading to Typer
    return subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True, stdin=subprocess.DEVNULL,
                          env=env, timeout=60, cwd=ROOT)


@pytest.mark.parametrize("argv", [
    ["eval", "-e", "exp(1)", "--format", "plain"],
    ["eval", "-e", "x = [1.0, 2.0]; y = sum(x * x)", "--format", "json"],
    ["eval", "-e", "1/0", "--strict", "--format", "plain"],
    ["eval", "-e", "1 +", "--format", "plain"],
    ["grad", "-e", "y = sum(x * x)", "--wrt", "x", "--set", "x=[1, 2]", "--format=json"],
    ["check", "-e", "y = sum(tanh(x) * x)", "--wrt", "x", "--set", "x=[0.3, 1.2]", "--eps", "1e-5"],
    ["hessian", "-e", "y = sum(x ** 3)", "--wrt", "x", "--set", "x=[1, 2]", "--format", "plain"],
    ["graph", "samples/stable_softmax.expr", "--format", "dot"],
    ["eval", "--format", "xml", "-e", "1"],
], ids=" ".join)
def test_the_answer_is_the_same_with_and_without_typer(argv):
    fast, through_typer = gradcli(argv), gradcli(argv, typer_env=True)
    assert (fast.returncode, fast.stdout, fast.stderr) == (
        through_typer.returncode, through_typer.stdout, through_typer.stderr)
