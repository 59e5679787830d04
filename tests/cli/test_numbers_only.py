"""The command's numbers-only path (gradcli.ops.scalar: a program of numbers computed on Python's
floats, NumPy never imported) answers exactly as the NumPy path: the same standard output, standard
error and exit code, byte for byte, on every program of numbers here (a generated set, and the
edges: -0.0, subnormals, huge numbers, inf and nan given or made, kinks, unconnected gradients,
unused inputs, user errors, --format json/plain, --print, --strict). The samples/*.expr programs
all use arrays, so none of them takes this path. The NumPy path is the same command in a process
that imported NumPy first (the numbers-only attempt is made only where NumPy is not loaded)."""
from __future__ import annotations

import os
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gradcli.ops import scalar as numbers

ROOT = Path(__file__).resolve().parents[2]
NUMPY_FIRST = "import sys, numpy; sys.argv[0] = 'gradcli'; from gradcli.cli import main; main()"


def answer(args: list[str], numpy_first: bool) -> tuple:
    """(stdout, stderr, exit code, NumPy imported) of `gradcli ARGS`."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    code = ["-c", NUMPY_FIRST] if numpy_first else ["-m", "gradcli"]
    p = subprocess.run([sys.executable, "-X", "importtime", *code, *args], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, env=env, timeout=120)
    lines = p.stderr.splitlines(keepends=True)
    stderr = "".join(line for line in lines if not line.startswith("import time:"))
    # (NumPy's own modules: a deferred NumPy is executed in place, its package not listed by importtime)
    loaded = any(line.rpartition("|")[2].strip().split(".")[0] == "numpy" for line in lines
                 if line.startswith("import time:"))
    return p.stdout, stderr, p.returncode, loaded or numpy_first


def generated(count: int, seed: int = 20261128) -> list[list[str]]:
    """Programs of numbers made of the ops with a scalar implementation, as eval and grad commands."""
    rng = random.Random(seed)
    unary = ["sin", "cos", "exp", "sigmoid", "arctan", "sinh", "log1p", "expm1"]
    commands = []
    for k in range(count):
        term = "x"
        for _ in range(rng.randint(1, 4)):
            op = rng.choice(unary + ["*", "+", "-", "/", "**"])
            c = repr(round(rng.uniform(-3, 3), rng.randint(0, 3)))
            if op == "/":
                term = f"({term}) / ({c} * {c} + 1.5)"
            elif op == "**":
                term = f"({term}) ** {rng.choice(['2', '3', '0.5', '-1', '1.5'])}"
            elif op in "*+-":
                term = f"({term}) {op} {c}"
            else:
                term = f"{op}({term})"
        x = repr(round(rng.uniform(-2.5, 2.5), rng.randint(0, 4)))
        program = f"y = {term}\nz = y * y - x"
        fmt = ["--format", rng.choice(["plain", "json"])]
        if k % 2:
            commands.append(["grad", "-e", program, "--wrt", "x", "--of", "z", "--set", f"x={x}", *fmt])
        else:
            commands.append(["eval", "-e", program, "--set", f"x={x}", *fmt])
    return commands


EDGES = [
    ["eval", "-e", "exp(1)"],
    ["eval", "-e", "exp(1)", "--format", "json"],
    ["grad", "-e", "y = sin(x) * x", "--wrt", "x", "--set", "x=2"],
    ["grad", "-e", "y = sin(x) * x", "--wrt", "x", "--set", "x=2", "--format", "json"],
    ["eval", "-e", "-0.0 * 1"],
    ["eval", "-e", "x = -0.0\ny = x * 2\nz = 0.0 - 0.0", "--format", "json"],
    ["eval", "-e", "5e-324 * 0.5"],
    ["eval", "-e", "1e300 * 10"],
    ["eval", "-e", "1e300 * 1e300", "--format", "json"],
    ["eval", "-e", "1e200 ** 2"],
    ["eval", "-e", "1 / 0"],
    ["eval", "-e", "0 / 0", "--format", "json"],
    ["eval", "-e", "log(0)"],
    ["eval", "-e", "sqrt(-1)"],
    ["eval", "-e", "exp(1000)"],
    ["eval", "-e", "(-8) ** (1 / 3)"],
    ["eval", "-e", "y = x * 2", "--set", "x=nan"],
    ["eval", "-e", "y = x * 2", "--set", "x=-inf", "--format", "json"],
    ["eval", "-e", "y = x * 2", "--set", "x=inf", "--strict"],
    ["grad", "-e", "y = abs(x)", "--wrt", "x", "--set", "x=0"],
    ["grad", "-e", "y = maximum(x, 1)", "--wrt", "x", "--set", "x=1"],
    ["grad", "-e", "y = relu(x) * 3", "--wrt", "x", "--set", "x=2"],
    ["grad", "-e", "y = sign(x) * 3", "--wrt", "x", "--set", "x=2"],
    ["grad", "-e", "y = stop_gradient(x) * 3 + x", "--wrt", "x", "--set", "x=2", "--format", "json"],
    ["grad", "-e", "y = 3 * 2", "--wrt", "x", "--set", "x=2"],
    ["grad", "-e", "y = log(x)", "--wrt", "x", "--set", "x=0"],
    ["grad", "-e", "y = x ** 0.5", "--wrt", "x", "--set", "x=0"],
    ["grad", "-e", "y = 1e200 * x", "--wrt", "x", "--set", "x=1e200"],
    ["eval", "-e", "y = x * 2", "--set", "x=1", "--set", "w=3"],
    ["eval", "-e", "a = 2\nb = a * 3\nc = b - a", "--print", "a", "--print", "c"],
    ["eval", "-e", "a = 2\nb = a * 3", "--print", "nothing"],
    ["eval", "-e", "exp(1, 2)"],
    ["eval", "-e", "x +"],
    ["eval", "-e", "y = z * 2"],
    ["grad", "-e", "y = x * 2", "--wrt", "q", "--set", "x=1"],
    ["eval", "-e", "y = x * 2", "--set", "x=[1, 2]"],
    ["eval", "-e", "y = x * 2", "--set", "x="],
    ["eval", "-e", "tanh(1)"],
    ["eval", "-e", "sum([1.0, 2.0])"],
    ["eval", "-e", "floor(2.5) + True + pi"],
    ["eval", "-e", "(1 < 2) + (2 == 2) - (3 != 3)"],
    ["eval", "-e", "where(1 > 2, 5, 7) * hypot(3, 4)"],
]


def test_the_numbers_only_path_answers_as_the_numpy_path_byte_for_byte():
    commands = EDGES + generated(16)
    with ThreadPoolExecutor(2) as pool:
        fast = list(pool.map(lambda c: answer(c, False), commands))
        plain = list(pool.map(lambda c: answer(c, True), commands))
    for command, a, b in zip(commands, fast, plain):
        assert a[:3] == b[:3], command
    without_numpy = [c for c, a in zip(commands, fast) if not a[3]]
    # the path is taken (the test can fail): the two goal commands, and most of the generated set,
    # where NumPy's float64 exp and sin are the C library's (gradcli.ops.scalar.LIBM_OPS); the
    # exact operations everywhere
    assert ["eval", "-e", "-0.0 * 1"] in without_numpy
    if numbers.numpy_calls_the_c_library():
        assert EDGES[0] in without_numpy and EDGES[2] in without_numpy
        assert len(without_numpy) >= 28, len(without_numpy)
    # and left where NumPy must speak: not finite, an array, an op with no scalar implementation
    for edge in (["eval", "-e", "1 / 0"], ["eval", "-e", "sum([1.0, 2.0])"], ["eval", "-e", "tanh(1)"]):
        assert edge not in without_numpy


DEFERRED = """
import sys
sys.argv[0] = "gradcli"
import gradcli.cli as cli
from gradcli.ops import scalar
cli._defer("numpy")
import numpy


def submodule():
    import numpy.linalg  # noqa: F401


def from_numpy():
    from numpy import float64  # noqa: F401


for text, attempt in (("import numpy.linalg", submodule), ("from numpy import float64", from_numpy),
                      ("numpy.float64(1)", lambda: numpy.float64(1))):
    try:
        with scalar.attempt():
            attempt()
        print("imported", text)
    except scalar.NeedsArrays:
        print("gave way", text)
print("numpy._core" in sys.modules, "numpy.linalg" in sys.modules)
import numpy.linalg
print(numpy.linalg.norm([3.0, 4.0]), numpy is sys.modules["numpy"], numpy.float64 is type(numpy.float64(1)))
"""


def test_deferred_numpy_gives_way_to_any_use_in_the_attempt_and_imports_whole_after_it():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", DEFERRED], capture_output=True, text=True, env=env, timeout=120)
    assert (p.returncode, p.stderr) == (0, "")
    assert p.stdout.splitlines() == ["gave way import numpy.linalg", "gave way from numpy import float64",
                                     "gave way numpy.float64(1)", "False False", "5.0 True True"]
