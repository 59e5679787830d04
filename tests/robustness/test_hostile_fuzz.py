"""Hostile fuzz of the whole command: generated programs, data files, option values and
`--lines` streams, Dask (`--device dask`, `--chunks`), Zarr stores read and written, `--out`
files, `plot` (ranges, points, `--png`/`--svg` files) and `fix --diff`, run through the real command line (typer/click parsing, `cli._run`,
`streams.write_output`), in-process for speed and, for a sample, as real processes.

The oracle, for every case:
- never exit 70 (a bug in gradcli), never a Python traceback, no Python warning leaking out;
- a user error (exit 2) is one message on stderr and nothing on stdout;
- an answer is whole: with `--format json` exit 0 or 1 means exactly one JSON document;
- `--lines`: exactly one JSON object per non-blank input line (or per over-long line), none
  of them an internal error;
- a refused command (exit 2) leaves no `--out`, `--png` or `--svg` file behind;
- within a time bound, and within `--max-memory` plus a fixed overhead (the process's peak
  resident memory, reset before each case through /proc/self/clear_refs).
The sampled real processes also check the real exit code, the peak RSS of the process and
that SIGINT/SIGTERM at a random moment give 130/143 (or the answer), never a traceback.

The default run is short (a few hundred cases); the long run, split over two processes:

    GRADCLI_FUZZ_EXAMPLES=50000 GRADCLI_FUZZ_SEED=1 pytest -m fuzz tests/robustness/test_hostile_fuzz.py &
    GRADCLI_FUZZ_EXAMPLES=50000 GRADCLI_FUZZ_SEED=2 pytest -m fuzz tests/robustness/test_hostile_fuzz.py

It does not stop at the first finding: each finding is recorded (one line of JSON each, in
$GRADCLI_FUZZ_FINDINGS if set) and the test fails at the end if there was any. It also fails
when the cases stopped reaching what the oracle judges: answers, user errors and --lines streams
each came up fewer times than their floor (a renamed option would make every case click's usage
error, judged in a line).
"""
import gc
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

import typer.main
import typer.testing
from typer.testing import CliRunner
from gradcli import cli
from gradcli.errors import GradcliError
from gradcli.limits import parse_size

import test_values  # the hostile data-file generator (tests/io/test_values.py)
from test_fuzz import Tally  # how a property test's cases ended (tests/robustness/test_fuzz.py)

LONG = int(os.environ.get("GRADCLI_FUZZ_EXAMPLES", "0"))
SEED = int(os.environ.get("GRADCLI_FUZZ_SEED", "0"))
FINDINGS = os.environ.get("GRADCLI_FUZZ_FINDINGS")
MiB = 1 << 20
TIME_LIMIT = 20.0  # seconds for one in-process case (they take milliseconds)
OVERHEAD = 64 * MiB  # peak memory allowed above --max-memory (measured: docs/robustness.md)
SUBPROCESS_BASE = 96 * MiB  # a process's own memory before it reads anything (Python, NumPy, typer)
ROOT = Path(__file__).resolve().parents[2]
SEEDS = sorted((ROOT / "samples").glob("*.expr")) + sorted((ROOT / "tests" / "snippets").glob("*"))
SEED_TEXTS = [p.read_bytes() for p in SEEDS if p.is_file()][:60]
WORK = tempfile.mkdtemp(prefix="gradcli-hostile-")
COMMAND = typer.main.get_command(cli.app)  # built once: building it takes 20 ms, a case 5

# --------------------------------------------------------------------------- generators


def _zarr_stores() -> list[str]:
    """Stores to read (`--set x=@s.zarr`): whole, with a chunk cut short, with its metadata
    damaged, one of ints, one 2-d; [] where zarr is not installed."""
    try:
        import zarr
    except ImportError:
        return []
    made = []
    for name, values, chunks in [("whole", np.arange(1.0, 301.0), (64,)), ("ints", np.arange(40), (16,)),
                                 ("grid", np.linspace(-3, 3, 60).reshape(6, 10), (3, 5)),
                                 ("cut", np.linspace(0, 1, 200), (50,)), ("meta", np.ones(10), (5,))]:
        path = os.path.join(WORK, f"{name}.zarr")
        z = zarr.open_array(path, mode="w", shape=values.shape, chunks=chunks, dtype=values.dtype)
        z[...] = values
        made.append(path)
    for dirpath, _, files in sorted(os.walk(os.path.join(WORK, "cut.zarr"))):
        for f in sorted(files):
            if not f.startswith((".z", "zarr.json")):
                with open(os.path.join(dirpath, f), "r+b") as fh:
                    fh.truncate(7)
                break
    for f in ("zarr.json", ".zarray"):
        meta = os.path.join(WORK, "meta.zarr", f)
        if os.path.exists(meta):
            with open(meta, "w") as fh:
                fh.write('{"shape": [10], "zarr_format": ')
    return made


ZARR_STORES = _zarr_stores()

NAMES = ["x", "w", "b", "y", "z", "t", "a"]
FUNCS = ["exp", "log", "sqrt", "abs", "sin", "tanh", "sigmoid", "softplus", "relu", "sign", "square",
         "log1p", "expm1", "stop_gradient", "sum", "mean", "max", "min", "prod", "logsumexp", "softmax",
         "log_softmax", "transpose", "reshape", "broadcast_to", "maximum", "minimum", "where", "clip", "matmul",
         "dot", "norm", "cumsum", "sort", "det", "inv", "tf.reduce_sum", "np.exp", "undefined_fn"]
NUMBERS = ["0", "1", "2", "-1", "0.5", "1e-3", "3.0", "inf", "nan", "-inf", "1e308", "1e309", "5e-324", "1" * 400,
           "0.0", "-0.0", "1e-400", "True", "False", "pi", "e", "2**63", "2**1000", "10**400", "1_000", "0x10",
           "1.", ".5", "1e", "9" * 30]
SHAPES = ["[-5]", "[2, -1]", "[-1]", "[0]", "[0, -5]", "[2**63]", "[9223372036854775807]", "[1e300]", "[nan]",
          "[True]", "[2.5]", "[]", "[3]", "[2, 3]", "[1, 1]", "[" + ", ".join(["1"] * 65) + "]", "[100000000]",
          "[1000, 1000, 1000]", "x", "2", "[[2]]", "[-1, -1]", "(2, 3)"]
AXES = ["0", "-1", "1", "99", "-99", "[0, 0]", "[0, 1]", "2**64", "1.5", "None", "x", "[]", "(0,)"]
HOSTILE_TEXT = ["\u2028", "\x85", "\x0c", "\x1c", "\x00", "\ufeff", "\r", "\t", "\r\n", "\\", "#", ";", ":",
                "(", ")", "[" * 200, "]", "(" * 300, "=", "def", "return", "lambda", "**", "@", "'", '"', "\udcff",
                "é", "𝑥", "\u202e", " " * 100]


@st.composite
def expression(draw, depth=3):
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(NAMES + NUMBERS))
    kind = draw(st.integers(0, 7))
    sub = lambda: draw(expression(depth - 1))  # noqa: E731
    if kind == 0:
        return f"({sub()} {draw(st.sampled_from(['+', '-', '*', '/', '**', '@', '<', '==', '%', '//']))} {sub()})"
    if kind == 1:
        return f"{draw(st.sampled_from(FUNCS))}({sub()})"
    if kind == 2:
        f = draw(st.sampled_from(["sum", "mean", "max", "softmax", "log_softmax", "logsumexp", "min", "prod"]))
        return f"{f}({sub()}, axis={draw(st.sampled_from(AXES))}, keepdims={draw(st.sampled_from(['True', 'False', '2']))})"
    if kind == 3:
        f = draw(st.sampled_from(["reshape", "broadcast_to"]))
        return f"{f}({sub()}, shape={draw(st.sampled_from(SHAPES))})"
    if kind == 4:
        return "[" + ", ".join(sub() for _ in range(draw(st.integers(0, 3)))) + "]"
    if kind == 5:
        index = draw(st.sampled_from(["0", "-1", "99", "1:3", "::-1", ":, 0", "..., 0", "None", "x", "2**63", "::0"]))
        return f"{sub()}[{index}]"
    if kind == 6:
        return f"{draw(st.sampled_from(FUNCS))}({sub()}, {sub()})"
    return f"where({sub()} > 0, {sub()}, {sub()})"


def doubling(k: int, call: bool) -> str:
    """Work that doubles k times: a literal of 2**k numbers, or calls that expand 2**k times."""
    if call:
        return ("def pick(a, b): return a\ndef f0(a): return a + 1\n"
                + "".join(f"def f{i}(a): return pick(f{i - 1}(a), f{i - 1}(a))\n" for i in range(1, k + 1))
                + f"y = f{k}(x)\n")
    return "a0 = [x, x]\n" + "".join(f"a{i} = [a{i - 1}, a{i - 1}]\n" for i in range(1, k + 1)) + f"y = sum(a{k})\n"


@st.composite
def program(draw) -> str:
    """Program text: generated statements, a doubling, a mutated real program, or bytes."""
    kind = draw(st.integers(0, 9))
    if kind <= 4:
        lines = []
        for _ in range(draw(st.integers(1, 4))):
            if draw(st.integers(0, 5)) == 0:
                lines.append(f"def f(p, q):\n    t = {draw(expression(2))}\n    return t + p")
            else:
                lines.append(f"{draw(st.sampled_from(NAMES))} = {draw(expression())}")
        lines.append(draw(st.sampled_from(["y = " + draw(expression()), "y = f(x, w)", "y = sum(x * x)", "y"])))
        return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\r\n", "\n\n# end"]))
    if kind == 5:
        call = draw(st.booleans())
        return doubling(draw(st.integers(1, 14 if call else 34)), call)
    if kind == 6:
        return (draw(st.sampled_from(["\n", "# c\n", "\r\n", " \n"])) * draw(st.integers(0, 20000))
                + draw(st.sampled_from(["y = 1\n", "", "y = (\n"])))
    text = draw(st.sampled_from(SEED_TEXTS)).decode("utf-8", "surrogateescape")
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        choice = draw(st.integers(0, 3))
        if choice == 0:
            text = text[:i] + draw(st.sampled_from(HOSTILE_TEXT)) + text[i:]
        elif choice == 1:
            text = text[:i] + text[i + draw(st.integers(1, 40)):]
        elif choice == 2:
            text = text[:i] + draw(st.sampled_from(NUMBERS + SHAPES + AXES)) + text[i:]
        else:
            text = text[:i] + draw(st.text(max_size=20)) + text[i:]
    return text


@st.composite
def literal(draw) -> str:
    """A --set / --grad-ys literal: numbers, nested (maybe ragged) lists, deep nesting, junk."""
    kind = draw(st.integers(0, 6))
    if kind == 0:
        return draw(st.sampled_from(NUMBERS))
    if kind == 1:
        n = draw(st.integers(0, 6))
        return "[" + ", ".join(draw(st.sampled_from(NUMBERS[:12])) for _ in range(n)) + "]"
    if kind == 2:
        rows = draw(st.lists(st.integers(0, 4), min_size=1, max_size=4))
        return "[" + ", ".join("[" + ", ".join("1.5" for _ in range(r)) + "]" for r in rows) + "]"
    if kind == 3:
        depth = draw(st.sampled_from([1, 63, 64, 65, 1000, 100000]))
        return "[" * depth + "1" + "]" * depth
    if kind == 4:
        return draw(st.sampled_from(["", "[", "]", "[1,", "[1 2]", "x", "@", "@/dev/zero", "@/nonexistent.npy",
                                     "@/proc/self/mem", "@" + WORK, "@x.txt", "[1, [2]]", "{}", '"1"', "null"]))
    if kind == 5:
        return draw(st.text(max_size=30))
    return "[" + ", ".join(["0.25"] * draw(st.integers(0, 3000))) + "]"


def option_name(draw) -> str:
    return draw(st.one_of(st.sampled_from(NAMES + ["", "1x", "x y", "exp", "_", "ẋ", "x" * 10000, "y.z", "-x"]),
                          st.text(max_size=8)))


MAX_MEMORY = ["1K", "4K", "64K", "1M", "8M", "32M", "32M", "64M"]
HOSTILE_MAX_MEMORY = ["inf", "0.5", "-1", "1e400", "nan", "0", "", "1.5K", "100x", "K", "1e-3G", "0x10", " 8M ",
                      "8MiB", "8mb", "+inf", "9" * 400, "1023", "1_000"]


@st.composite
def data_file(draw):
    """(file name, bytes): a mutated .npy/.npz/.json/.csv (tests/io/test_values.py) or a CSV."""
    if draw(st.integers(0, 3)):
        return draw(test_values.hostile_file())
    rows = draw(st.lists(st.lists(st.sampled_from(["1", "-2.5", "", "nan", "x", "1e999", '"3"', " 4 ", "1,5",
                                                   "\x00", "inf", "0x1"]), max_size=4), max_size=4))
    delim = draw(st.sampled_from([",", ";", "\t", " ", "|"]))
    text = draw(st.sampled_from(["", "\ufeff"])) + draw(st.sampled_from(["\n", "\r\n", "\r"])).join(
        delim.join(r) for r in rows)
    return "r.csv", text.encode("utf-8", "surrogateescape") + draw(st.sampled_from([b"", b"\n", b"\xff"]))


COMMANDS = ["eval", "eval", "grad", "grad", "check", "jacobian", "hessian", "derive", "graph", "fix", "plot"]
RANGES = ["-5:5", "0:1", "0:1e-320", "-1e308:1e308", "5:5", "1:0", "nan:1", "-inf:0", "x", "", "1e400:2", "0:5e-324",
          "-1:1:1", ":"]
OUT_NAMES = ["o.npz", "o.npy", "o.zarr", "o.txt", "o", "sub/o.npz", "", "o.npz/"]
CHUNKS = ["1K", "4K", "64K", "1M", "0", "-1", "x", "1", "1e400"]


@st.composite
def case(draw):
    """One command line: (argv, standard input, files to write, --lines expectation or None)."""
    command = draw(st.sampled_from(COMMANDS))
    lines = command in ("eval", "grad") and draw(st.integers(0, 3)) == 0
    argv, files, stdin = [command], {}, b""
    if draw(st.integers(0, 9)):
        max_memory = draw(st.sampled_from(MAX_MEMORY))
    else:
        max_memory = draw(st.one_of(st.sampled_from(HOSTILE_MAX_MEMORY), st.text(max_size=6)))
        try:
            if parse_size(max_memory) > 64 * MiB:
                max_memory = "64M"  # a valid size, just too large for a fuzz case to be safe
        except GradcliError:
            pass
    argv += ["--max-memory", max_memory]
    if lines:
        argv.append("--lines")
        pieces = []
        for _ in range(draw(st.integers(1, 8))):
            k = draw(st.integers(0, 7))
            if k == 0:
                pieces.append(b"y = sum(x * x)")
            elif k == 1:
                pieces.append(draw(st.sampled_from([b"", b"   ", b"\t", b"\r", b"\x0c", b"\x0b"])))
            elif k == 2:
                pieces.append(draw(st.binary(max_size=30)).replace(b"\n", b" "))
            elif k == 3:
                pieces.append(b"y = " + b"[" * draw(st.integers(1, 3000)) + b"1")
            elif k == 4:
                pieces.append(b"x" * draw(st.sampled_from([10, 1500, 5000, 70000])))
            else:
                pieces.append(draw(program()).replace("\n", ";").encode("utf-8", "surrogateescape"))
        stdin = b"\n".join(pieces) + draw(st.sampled_from([b"", b"\n", b"\r\n"]))
    else:
        text = draw(program())
        how = draw(st.integers(0, 2))
        if how == 0:
            argv += ["-e", text]
        elif how == 1:
            files["p.expr"] = text.encode("utf-8", "surrogateescape")
            argv.append(os.path.join(WORK, "p.expr"))
        else:
            stdin = text.encode("utf-8", "surrogateescape")
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(NAMES)) if draw(st.integers(0, 4)) else option_name(draw)
        if draw(st.integers(0, 2)) == 0:
            fname, data = draw(data_file())
            files[fname.split(":")[0]] = data
            argv += ["--set", f"{name}=@{os.path.join(WORK, fname)}"]
        else:
            argv += ["--set", f"{name}={draw(literal())}"]
    if command == "plot":
        argv += ["--range", draw(st.sampled_from(RANGES))]
        if draw(st.integers(0, 2)) == 0:
            argv += ["--points", draw(st.sampled_from(["0", "1", "2", "7", "-3", "x", "100000000", "1e3"]))]
        if draw(st.integers(0, 2)) == 0:
            argv += ["--order", draw(st.sampled_from(["1", "2", "3", "0"]))]
        if draw(st.integers(0, 9)) == 0:  # drawing a file imports Matplotlib: rare
            argv += [draw(st.sampled_from(["--png", "--svg"])),
                     os.path.join(WORK, draw(st.sampled_from(["p.png", "p.svg", "p.txt", "p", "sub/p.png"])))]
            if draw(st.booleans()):
                argv.append("--force")
    if command in ("eval", "grad") and ZARR_STORES and draw(st.integers(0, 9)) == 0:
        argv += ["--set", f"{draw(st.sampled_from(NAMES))}=@{draw(st.sampled_from(ZARR_STORES))}"]
    if command in ("eval", "grad") and draw(st.integers(0, 24)) == 0:
        argv += ["--device", "dask"]
        if draw(st.booleans()):
            argv += ["--chunks", draw(st.sampled_from(CHUNKS))]
    if command in ("eval", "grad", "jacobian", "hessian") and draw(st.integers(0, 7)) == 0:
        argv += ["--out", os.path.join(WORK, draw(st.sampled_from(OUT_NAMES)))]
        if draw(st.booleans()):
            argv.append("--force")
    if command == "plot":
        argv += ["--wrt", draw(st.sampled_from(NAMES + ["x[2]", "x[-1]", "x[9]", "y"])) if draw(st.integers(0, 3))
                 else option_name(draw)]
    elif command in ("grad", "check", "jacobian", "hessian", "graph", "fix") or (command == "derive"):
        for _ in range(draw(st.integers(0 if command in ("graph", "fix") else 1, 2 if command != "derive" else 1))):
            argv += ["--wrt", draw(st.sampled_from(NAMES)) if draw(st.integers(0, 3)) else option_name(draw)]
    if command != "derive" and command != "fix" and draw(st.integers(0, 3)) == 0:
        argv += ["--of", draw(st.sampled_from(NAMES)) if draw(st.booleans()) else option_name(draw)]
    if command == "grad" and draw(st.integers(0, 3)) == 0:
        if draw(st.booleans()):
            fname, data = draw(data_file())
            files[fname.split(":")[0]] = data
            argv += ["--grad-ys", f"y=@{os.path.join(WORK, fname)}"]
        else:
            argv += ["--grad-ys", f"{option_name(draw)}={draw(literal())}"]
    if command in ("eval", "grad") and draw(st.integers(0, 5)) == 0:
        argv += ["--dtype", draw(st.sampled_from(["float32", "float64", "float16", "", "int"]))]
    if command in ("eval", "grad", "check", "jacobian", "hessian"):
        argv += ["--format", draw(st.sampled_from(["json", "json", "plain", "table", "auto", "xml"]))]
    if command == "graph":
        argv += ["--format", draw(st.sampled_from(["tree", "dot"]))]
    if command in ("eval", "grad") and draw(st.booleans()):
        argv.append("--strict")
    if command == "eval" and draw(st.integers(0, 4)) == 0:
        argv += ["--print", option_name(draw)]
    if command == "check" and draw(st.integers(0, 3)) == 0:
        argv += [draw(st.sampled_from(["--eps", "--rtol", "--atol"])),
                 draw(st.sampled_from(["0", "-1", "nan", "inf", "1e400", "1e-300", "x"]))]
    if command == "fix" and draw(st.booleans()):
        argv.append("--diff")
    if command in ("grad", "jacobian", "hessian") and draw(st.integers(0, 3)) == 0:
        argv += ["--unconnected", draw(st.sampled_from(["zero", "none", "nan"]))]
    return argv, stdin, files, max_memory


# --------------------------------------------------------------------------- running a case

def expected_answers(stdin: bytes, max_memory: str) -> int:
    """How many answers `--lines` owes: one per line that is not blank, or is over-long."""
    try:
        limit = min(16 * MiB, parse_size(max_memory))
    except GradcliError:
        return 0
    return sum(1 for line in stdin.split(b"\n") if line.strip() or len(line) > limit)


def _peak_reset() -> int:
    """Reset the process's peak RSS (VmHWM); the resident memory now."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return -1
    return _status("VmRSS")


def _status(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return -1


WRITTEN_OPTIONS = ("--out", "--png", "--svg")


def written_paths(argv) -> list[str]:
    """The files a command line asks gradcli to write."""
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in WRITTEN_OPTIONS]


def clear_written(argv) -> None:
    """Remove what an earlier case wrote at this case's output paths (so that a file found
    after a refusal is this case's)."""
    for path in written_paths(argv):
        if os.path.normpath(path) == os.path.normpath(WORK):  # (`--out ''`: the folder itself)
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)


def left_behind(argv, code) -> list[str]:
    """A refused command writes nothing: no file (or a temporary part of one) at its paths."""
    if code != 2:
        return []
    found = []
    for path in written_paths(argv):
        folder, name = os.path.split(path)
        parts = [n for n in os.listdir(folder) if name and n.startswith(name) and n.endswith(".part")] \
            if os.path.isdir(folder) else []
        if (name and os.path.lexists(path)) or parts:
            found.append(f"a refusal left {name}{' (a part)' if parts else ''} behind")
    return found


def write_files(files: dict) -> None:
    for name, data in files.items():
        with open(os.path.join(WORK, name), "wb") as fh:
            fh.write(data)


def judge(argv, code, out: bytes, err: str, max_memory: str, stdin: bytes, lines: bool) -> list[str]:
    """What is wrong with an answer (empty if nothing)."""
    problems = []
    if code == 70 or "internal error" in err:
        problems.append("exit 70 / internal error")
    if "Traceback" in err:
        problems.append("traceback")
    if code not in (0, 1, 2):
        problems.append(f"exit {code}")
    # click refused an option (its own message), or gradcli refused an option's value before
    # reading any line (`--set t` given twice, a CSV of no rows): exit 2, one message, nothing out
    usage_error = "Usage:" in err or (lines and code == 2 and not out and "<line " not in err
                                      and err.count(" error: ") == 1)
    if code == 2 and not lines:
        if out:
            problems.append("output on a user error")
        if not usage_error and err.count(" error: ") != 1:
            problems.append("not exactly one error message")
    if lines and not usage_error:
        try:
            valid_size = parse_size(max_memory)
        except GradcliError:
            valid_size = None
        plain = "--format" in argv and argv[argv.index("--format") + 1] == "plain"
        if valid_size is not None and plain:
            # N<TAB>NAME<TAB>numbers per result, N<TAB>#error<TAB>message per bad line: every
            # answered line number once or more, in order
            text = out.decode("utf-8", "replace") if isinstance(out, bytes) else out
            numbers = [ln.split("\t", 1)[0] for ln in text.splitlines()]
            if not all(n.isdigit() for n in numbers):
                problems.append("a plain answer without its line number")
            elif len(dict.fromkeys(numbers)) != expected_answers(stdin, max_memory):
                problems.append(f"{len(dict.fromkeys(numbers))} answers for {expected_answers(stdin, max_memory)} lines")
            if "#error\tinternal error" in text:
                problems.append("an internal error answered")
        elif valid_size is not None:
            docs = out.splitlines()
            if len(docs) != expected_answers(stdin, max_memory):
                problems.append(f"{len(docs)} answers for {expected_answers(stdin, max_memory)} lines")
            for doc in docs:
                try:
                    obj = json.loads(doc)
                except ValueError:
                    problems.append("an answer that is not JSON")
                    break
                if not isinstance(obj, dict) or not ("outputs" in obj or "error" in obj):
                    problems.append("an answer that is neither outputs nor error")
                elif "error" in obj and obj["error"].get("internal"):
                    problems.append("an internal error answered")
    elif not lines and code in (0, 1) and "--format" in argv and argv[argv.index("--format") + 1] == "json":
        try:
            json.loads(out)
            if not out.endswith(b"\n") or out.count(b"\n") != 1:
                problems.append("not one JSON document")
        except ValueError:
            problems.append("a partial or invalid JSON document")
    return problems


def run_in_process(argv, stdin, files, max_memory):
    write_files(files)
    clear_written(argv)
    runner = CliRunner()
    typer.testing._get_command = lambda app: COMMAND  # (the one built above; restored below)
    lines = "--lines" in argv
    base = _peak_reset()
    started, cpu = time.monotonic(), time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = runner.invoke(cli.app, argv, input=stdin, catch_exceptions=True)
        finally:
            typer.testing._get_command = typer.main.get_command
    elapsed, cpu = time.monotonic() - started, time.process_time() - cpu
    peak = _status("VmHWM") - base if base >= 0 else 0
    code = result.exit_code
    err = result.stderr_bytes.decode("utf-8", "replace") if result.stderr_bytes else ""
    problems = judge(argv, code, result.stdout_bytes, err, max_memory, stdin, lines) + left_behind(argv, code)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        problems.append(f"exception {type(result.exception).__name__}: {result.exception}")
    if code == 70:  # once more with --debug, for the traceback of the bug
        typer.testing._get_command = lambda app: COMMAND
        try:
            with warnings.catch_warnings(record=True):
                warnings.simplefilter("always")
                again = runner.invoke(cli.app, argv + ["--debug"], input=stdin, catch_exceptions=True)
        finally:
            typer.testing._get_command = typer.main.get_command
        if again.exception is not None and again.exc_info is not None:
            import traceback
            err += "".join(traceback.format_exception(*again.exc_info))[-1500:]
        err += again.stderr_bytes.decode("utf-8", "replace")[-1500:]
    leaked = [w for w in caught if issubclass(w.category, (RuntimeWarning, UserWarning))]
    if leaked:
        problems.append(f"warning {leaked[0].category.__name__}: {leaked[0].message}")
    if cpu > TIME_LIMIT:  # CPU time: other processes on the machine do not count
        problems.append(f"took {cpu:.1f} s of CPU")
    try:
        allowed = parse_size(max_memory) + OVERHEAD
    except GradcliError:
        allowed = OVERHEAD
    if peak > allowed:
        problems.append(f"peak memory {peak / MiB:.0f} MiB above --max-memory {max_memory} + overhead")
    return problems, dict(code=code, seconds=round(elapsed, 3), cpu=round(cpu, 3), peak_mib=round(peak / MiB, 1),
                          stderr=err[-3000:])


def run_process(argv, stdin, files, max_memory, signum=None, delay=0.0):
    """The same case as a real process: its exit code, peak RSS (wait4) and stderr."""
    if any(len(a.encode("utf-8", "surrogateescape")) >= 100_000 for a in argv) or "\x00" in "".join(argv):
        return [], {"skipped": "an argument no process can be given (over 128 KiB, or a NUL)"}
    write_files(files)
    clear_written(argv)
    paths = [os.path.join(WORK, name) for name in ("stdin", "stdout", "stderr", "rss")]
    with open(paths[0], "wb") as fh:
        fh.write(stdin)
    started = time.monotonic()
    # /usr/bin/time measures the peak RSS: a child forked from this (large) process would
    # count this process's pages in its own ru_maxrss until it execs
    timing = ["/usr/bin/time", "-f", "%M", "-o", paths[3]] if os.path.exists("/usr/bin/time") and not signum else []
    with open(paths[0], "rb") as i, open(paths[1], "wb") as o, open(paths[2], "wb") as e:
        proc = subprocess.Popen(timing + [sys.executable, "-m", "gradcli", *argv], stdin=i, stdout=o, stderr=e)
    if signum is not None:
        time.sleep(delay)
        proc.send_signal(signum)
    timer = threading.Timer(120, proc.kill)
    timer.start()
    proc.wait()
    timer.cancel()
    code = proc.returncode
    elapsed = time.monotonic() - started
    out = Path(paths[1]).read_bytes()
    err = Path(paths[2]).read_bytes().decode("utf-8", "replace")
    try:
        peak = int(Path(paths[3]).read_text().split()[-1]) * 1024 if timing else 0
    except (OSError, ValueError, IndexError):  # killed by a signal: time says so instead
        peak = 0
    if timing and "Command terminated by signal" in Path(paths[3]).read_text():
        code = -int(Path(paths[3]).read_text().split("signal")[1].split()[0])
    elif timing and "Command exited with non-zero status" in Path(paths[3]).read_text():
        code = int(Path(paths[3]).read_text().split("status")[1].split()[0])
    problems = []
    if elapsed > 100:
        problems.append(f"took {elapsed:.0f} s")
    before_us = "KeyboardInterrupt" in err and not re.search(r'/gradcli/[^"]*", line [1-9]', err)
    if signum is not None and (code in (128 + signum, -signum) or before_us):
        # a signal before gradcli's first line (the interpreter starting) is Python's own;
        # from gradcli/__init__.py's first line on there is no traceback
        if "Traceback" in err and re.search(r'/gradcli/[^"]*", line [1-9]', err):
            problems.append("traceback after a signal")
        if "--format" in argv and argv[argv.index("--format") + 1] == "json" and out and "--lines" not in argv:
            try:
                json.loads(out)
            except ValueError:
                problems.append("a partial document after a signal")
        return problems, dict(code=code, seconds=round(elapsed, 2))
    problems += judge(argv, code, out, err, max_memory, stdin, "--lines" in argv) + left_behind(argv, code)
    try:
        allowed = parse_size(max_memory) + OVERHEAD + SUBPROCESS_BASE
    except GradcliError:
        allowed = OVERHEAD + SUBPROCESS_BASE
    if peak > allowed:
        problems.append(f"peak RSS {peak / MiB:.0f} MiB above --max-memory {max_memory} + overhead")
    return problems, dict(code=code, seconds=round(elapsed, 2), peak_mib=round(peak / MiB, 1), stderr=err[-300:])


# --------------------------------------------------------------------------- the tests

class Record:
    """Counts cases and keeps findings (deduplicated by what went wrong and the command)."""

    def __init__(self):
        self.cases = self.processes = 0
        self.outcomes = Tally()
        self.findings: dict[str, dict] = {}
        self.previous = None
        self.started = time.monotonic()

    def add(self, problems, argv, stdin, info, how):
        for problem in problems:
            key = f"{argv[0]}: {re.sub(r'[0-9]+', 'N', problem)[:80]}"
            if key not in self.findings:
                finding = dict(problem=problem, how=how, argv=[a[:5000] for a in argv], stdin=stdin[:300].decode(
                    "utf-8", "backslashreplace"), **info)
                self.findings[key] = finding
                if FINDINGS:
                    with open(FINDINGS, "a") as fh:
                        fh.write(json.dumps(finding) + "\n")

    def summary(self) -> str:
        return (f"{self.cases} cases ({self.processes} also as processes) in "
                f"{time.monotonic() - self.started:.0f} s, {len(self.findings)} findings")


def outcome(argv, info) -> str:
    """What the oracle judged in a case: click's usage error, gradcli's user error, an answer
    (exit 0 or 1), or a --lines stream (any other exit is a finding of its own)."""
    if "Usage:" in info["stderr"]:
        return "usage error"
    if "--lines" in argv:
        return "lines"
    return {0: "answered", 1: "answered", 2: "refused"}.get(info["code"], f"exit {info['code']}")


def fuzz(examples: int, every_process: int, derandomize: bool):
    record = Record()

    @settings(max_examples=examples, deadline=None, derandomize=derandomize, database=None)
    @given(case())
    def one(c):
        argv, stdin, files, max_memory = c
        record.cases += 1
        problems, info = run_in_process(argv, stdin, files, max_memory)
        record.outcomes.note(outcome(argv, info))
        if problems:  # state left behind by the case before could be the cause: say which it was
            info["previous"] = record.previous
        record.previous = [a[:300] for a in argv], stdin[:300].decode("utf-8", "backslashreplace")
        if record.cases % 1000 == 0:
            print(f"hostile fuzz (seed {SEED}): {record.summary()}", file=sys.__stderr__, flush=True)
        record.add(problems, argv, stdin, info, "in-process")
        if every_process and record.cases % every_process == 0:
            record.processes += 1
            problems, info = run_process(argv, stdin, files, max_memory)
            record.add(problems, argv, stdin, info, "process")

    if not derandomize:
        one = seed(SEED)(one)
    for heavy in ("dask.array", "zarr", "matplotlib.pyplot"):  # imported once, before memory is measured
        try:
            __import__(heavy)
        except ImportError:
            pass
    gc.collect()
    gc.freeze()  # the test session's own objects: no collection in a case need scan them
    try:
        one()
    finally:
        gc.unfreeze()
    print("\nhostile fuzz:", record.summary())
    for finding in record.findings.values():
        print(json.dumps(finding)[:1000])
    return record


def test_hostile_fuzz_short():
    record = fuzz(250, every_process=0, derandomize=True)
    assert not record.findings, list(record.findings.values())
    # of 250; the replayed (derandomized) run: 2 answered, 180 refused, 8 --lines streams (60 usage errors)
    record.outcomes.require(answered=1, refused=90, lines=4)


@pytest.mark.parametrize("argv,stdin", [
    (["eval", "--format", "json", "-e", "y = broadcast_to(1.5, shape=[100000])"], b""),
    (["eval", "--lines", "--max-memory", "1M"], b"y = 1\n\xff\n" + b"[" * 3000 + b"\ny = broadcast_to(1, shape=[-5])\n"),
    (["grad", "--wrt", "x", "--set", "x=" + "[" * 1000 + "1" + "]" * 1000, "-e", "y = x"], b""),
    (["eval", "--max-memory", "1M", "-e", doubling(40, False)], b""),
])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_hostile_processes_and_signals(argv, stdin, signum):
    """A sample as real processes: the real exit code, peak RSS, and a signal at some moment."""
    max_memory = argv[argv.index("--max-memory") + 1] if "--max-memory" in argv else "64M"
    problems, info = run_process(argv, stdin, {}, max_memory)
    assert not problems, (problems, info)
    for delay in (0.05, 0.4):
        problems, info = run_process(argv, stdin, {}, max_memory, signum=signum, delay=delay)
        assert not problems, (problems, info)


@pytest.mark.fuzz
@pytest.mark.skipif(not LONG, reason="the long fuzz run: set GRADCLI_FUZZ_EXAMPLES")
def test_hostile_fuzz_long():
    record = fuzz(LONG, every_process=500, derandomize=False)
    assert not record.findings, f"{record.summary()}: {list(record.findings.values())}"
    record.outcomes.require(answered=LONG // 1000, refused=LONG // 4, lines=LONG // 100)  # about 1%, 70%, 3%
