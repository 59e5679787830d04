"""Fuzzing: random programs written in the language's grammar, random bytes, and
mutations of valid programs.

- A generated program runs without any exception but gradcli's own user errors, and where
  it is smooth at the point its gradient agrees with float64 central finite differences.
- Random bytes and mutated programs are either valid or rejected with a GradcliError (exit
  2 from the CLI), never another exception.

Each test tallies how its cases ended (Tally) and fails when the property itself was reached
fewer times than its floor: a generator that drifts into programs gradcli refuses, or that
finite differences cannot judge, would otherwise pass without checking anything.

The default run is short; the long run is `GRADCLI_FUZZ_EXAMPLES=100000 pytest -m fuzz`.
"""
import collections
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from gradcli import api
from gradcli.errors import GradcliError
from gradcli.engine.evaluate import run

LONG = int(os.environ.get("GRADCLI_FUZZ_EXAMPLES", "0"))
SHORT = settings(max_examples=150, deadline=None)
FUZZ = settings(max_examples=LONG or 100_000, deadline=None)


class Tally(collections.Counter):
    """How the cases of one property test ended. `note(outcome)` counts a case (and records it
    as a Hypothesis event); `require(...)`, after the run and in the same test (so that it holds
    under xdist and in any order), fails where an outcome came up fewer times than its floor (an
    outcome's spaces are written as underscores: `require(read_csv=8)` for "read csv"). The
    tally is printed: `pytest -rP` shows it."""

    def note(self, outcome: str) -> str:
        event(outcome)
        self[outcome] += 1
        return outcome

    def require(self, **floors: int) -> None:
        print(f"cases: {dict(self.most_common())}; floors: {floors}")
        short = {outcome.replace("_", " "): floor for outcome, floor in floors.items()
                 if self[outcome.replace("_", " ")] < floor}
        assert not short, (f"the property was reached fewer times than its floor {short}; "
                           f"the cases ended: {dict(self)}")

# Inputs and their shapes: every broadcasting case among (), (2,), (3,) and (2, 3).
INPUTS = {"s": (), "u": (2,), "v": (3,), "a": (2, 3)}
SHAPES = [(), (2,), (3,), (2, 3)]
UNARY = ["exp", "log", "log1p", "expm1", "sqrt", "square", "abs", "sin", "cos", "tan", "tanh", "sigmoid",
         "softplus", "log_sigmoid", "relu", "-", "stop_gradient", "sign"]
BINARY = ["+", "-", "*", "/", "**", "maximum", "minimum", "<", ">="]
REDUCTIONS = ["sum", "mean", "max", "min", "logsumexp", "prod"]


def broadcasts_to(shape):
    """Shapes that broadcast to `shape`."""
    return [s for s in SHAPES if len(s) <= len(shape) and all(
        d == 1 or d == e for d, e in zip(reversed(s), reversed(shape)))] or [shape]


@st.composite
def expression(draw, shape, depth):
    """Source text of an expression of the given shape."""
    if depth <= 0 or draw(st.integers(0, 4)) == 0:
        names = [n for n, s in INPUTS.items() if s == shape]
        choice = draw(st.integers(0, 3))
        if choice == 0 or not names:
            inner = draw(st.sampled_from(broadcasts_to(shape)))
            leaf = [n for n, s in INPUTS.items() if s == inner]
            if leaf and shape == inner:
                return leaf[0]
            number = draw(st.sampled_from(["0.5", "2", "1e-3", "3.0", "pi", "-1.5"]))
            return number if not shape else f"({number} + 0 * {names[0] if names else 'a[0, 0]'})"
        return draw(st.sampled_from(names))
    kind = draw(st.sampled_from(["unary", "binary", "binary", "reduce", "softmax", "where", "matmul",
                                 "index", "call", "array"]))
    sub = lambda s: draw(expression(s, depth - 1))  # noqa: E731
    if kind == "unary":
        op = draw(st.sampled_from(UNARY))
        return f"-({sub(shape)})" if op == "-" else f"{op}({sub(shape)})"
    if kind == "binary":
        op = draw(st.sampled_from(BINARY))
        left, right = draw(st.sampled_from(broadcasts_to(shape))), shape
        if draw(st.booleans()):
            left, right = right, left
        if op == "**":
            return f"(exp({sub(left)}) ** {sub(right)})"
        if op in ("maximum", "minimum"):
            return f"{op}({sub(left)}, {sub(right)})"
        return f"({sub(left)} {op} {sub(right)})"
    if kind == "reduce":
        op = draw(st.sampled_from(REDUCTIONS))
        if shape == ():
            return f"{op}({sub(draw(st.sampled_from([(2,), (3,), (2, 3)])))})"
        if shape == (3,):
            return f"{op}({sub((2, 3))}, axis=0)"
        if shape == (2,):
            return f"{op}({sub((2, 3))}, axis=-1)"
        return f"({op}({sub((2, 3))}, axis=1, keepdims=True) * {sub((2, 3))})"
    if kind == "softmax" and shape:
        return f"{draw(st.sampled_from(['softmax', 'log_softmax']))}({sub(shape)})"
    if kind == "where":
        return f"where({sub(shape)} > 0, {sub(shape)}, {sub(draw(st.sampled_from(broadcasts_to(shape))))})"
    if kind == "matmul":
        if shape == ():
            return f"({sub((3,))} @ {sub((3,))})"
        if shape == (2,):
            return f"({sub((2, 3))} @ {sub((3,))})"
        if shape == (3,):
            return f"({sub((2,))} @ {sub((2, 3))})"
    if kind == "index":
        if shape == ():
            return f"{sub((3,))}[{draw(st.sampled_from(['0', '-1', '2']))}]"
        if shape == (3,):
            return f"{sub((2, 3))}[{draw(st.sampled_from(['0', '1', '-1']))}]"
        if shape == (2,):
            return f"{sub((2, 3))}[:, {draw(st.sampled_from(['0', '1:2', '::2']))}]".replace("1:2", "1").replace(
                "::2", "2")
    if kind == "call":
        return f"f({sub(shape)}, {sub(draw(st.sampled_from(broadcasts_to(shape))))})"
    if kind == "array" and shape == (2,):
        return f"[{sub(())}, {sub(())}]"
    return sub(shape)


@st.composite
def program(draw):
    body = draw(st.sampled_from(["p * q", "sin(p) + q * q", "tanh(p - stop_gradient(q))", "p / (1 + q * q)",
                                 "maximum(p, q) + softplus(q)"]))
    out = draw(expression(draw(st.sampled_from(SHAPES)), 4))
    return f"def f(p, q):\n    t = {body}\n    return t + p\nz = {out}\ny = sum(z)\n"


def smooth_gradient_check(text, feeds):
    """Run `text`; where it is smooth at the point, compare its gradient with finite
    differences (stop_gradient held at its unperturbed value)."""
    used = [n for n in INPUTS if re.search(rf"\b{n}\b", text)]
    feeds = {n: feeds[n] for n in used}
    try:
        r = api.grad(text, wrt=used, feeds=feeds, unconnected="zero")
    except GradcliError:
        return "rejected"
    if not used:
        return "no input"  # it ran; there is no gradient to compare
    graph = r.graph
    values = [r.outputs["y"], *r.gradients.values()]
    if not all(np.isfinite(v).all() for v in values):
        return "non-finite"
    if any(d.kind in ("tie", "kink") or d.severity == "warning" for d in r.diagnostics):
        return "non-smooth"
    forward = [i for i, eq in enumerate(graph.equations) if eq.inputs and eq.backward is None]
    if any(np.max(np.abs(v), initial=0.0) > 1e12 for v in run(graph, forward).values()):
        # ill-conditioned: reverse mode adds terms this large whose rounding finite
        # differences never see (softmax of equal 1e31s: 2/9 - 1/9 - 1/9 = 3e-17, times 3e33)
        return "ill-conditioned"
    periodic = [i for i, eq in enumerate(graph.equations) if eq.op.name in ("sin", "cos", "tan")]
    if periodic:
        args = run(graph, [graph.equations[i].inputs[0] for i in periodic])
        if any(np.max(np.abs(a)) > 1e6 for a in args.values()):
            return "non-smooth"  # sin(1e15): a finite-difference step spans many periods
    y = graph.names["z"]  # y = sum(z): difference z elementwise, then sum (no cancellation)
    held = [i for i, eq in enumerate(graph.equations[:y + 1]) if eq.op.name == "stop_gradient"]
    with np.errstate(all="ignore"):
        fixed = run(graph, held) if held else {}
    for name, grad in r.gradients.items():
        x = graph.names[name]
        point = np.asarray(feeds[name], dtype=np.float64)
        fd = {}
        for eps in (1e-5, 1e-6):
            est = np.zeros(point.size)
            for k in range(point.size):
                step = np.zeros(point.size)
                step[k] = eps
                plus = run(graph, [y], overrides={**fixed, x: point + step.reshape(point.shape)})[y]
                minus = run(graph, [y], overrides={**fixed, x: point - step.reshape(point.shape)})[y]
                est[k] = np.sum((plus - minus) / (2 * eps))
            fd[eps] = est.reshape(point.shape)
        # finite differences cannot see below their rounding noise, about |f| * ulp / step
        noise = 10 * np.finfo(float).eps * float(np.sum(np.abs(run(graph, [y], overrides=fixed)[y]))) / 1e-6
        scale = 1e-6 * (1 + np.abs(fd[1e-6])) + noise
        if not np.all(np.abs(fd[1e-5] - fd[1e-6]) <= 10 * scale + 1e-4 * np.abs(fd[1e-6])):
            return "non-smooth"  # the two step sizes disagree: a kink or a cliff nearby
        np.testing.assert_allclose(grad, fd[1e-6], rtol=1e-4, atol=1e-5 + noise,
                                   err_msg=f"d/d{name} of:\n{text}\nat {feeds}")
    return "checked"


def point(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return {n: rng.uniform(-1.5, 1.5, s) for n, s in INPUTS.items()}


def test_random_programs_run_and_their_gradients_agree():
    tally = Tally()

    @SHORT
    @given(program(), st.data())
    def case(text, data):
        tally.note(smooth_gradient_check(text, point(data.draw)))

    case()
    tally.require(checked=60)  # of 150; the replayed (derandomized) run: 117


needs_long = pytest.mark.skipif(not LONG, reason="the long fuzz run: set GRADCLI_FUZZ_EXAMPLES")


@pytest.mark.fuzz
@needs_long
def test_fuzz_random_programs():
    tally = Tally()

    @FUZZ
    @given(program(), st.data())
    def case(text, data):
        tally.note(smooth_gradient_check(text, point(data.draw)))

    case()
    tally.require(checked=LONG // 4)  # about 78%


VALID = [
    "x = [1.0, 2.0]\ndef f(a):\n    b = exp(a - stop_gradient(max(a)))\n    return b / sum(b)\ny = sum(f(x) * [1, 2])\n",
    "y = tf.reduce_sum(tf.exp(x), axis=0, keepdims=True)[0, ::2] @ [1.0]\n",
    "m = [[1, 2], [3, 4]]; y = transpose(m)[:, None] ** 2 - -1e-3\n",
]


def only_user_errors(text) -> str:
    try:
        api.grad(text, wrt=["x"], feeds={"x": [0.5, 1.5]}, unconnected="zero")
    except GradcliError as err:
        assert err.message and "\n" not in err.message.strip("\n")
        return "rejected"
    return "accepted"


def test_random_bytes_are_rejected_cleanly():
    tally = Tally()

    @SHORT
    @given(st.binary(max_size=200))
    def case(data):
        tally.note(only_user_errors(data.decode("utf-8", "replace")))

    case()
    tally.require(rejected=100)  # of 150; the replayed (derandomized) run: 150


@st.composite
def mutation(draw):
    text = draw(st.sampled_from(VALID))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        kind = draw(st.integers(0, 2))
        if kind == 0:
            text = text[:i] + text[i + 1:]
        elif kind == 1:
            text = text[:i] + draw(st.sampled_from(list("()[]:,;=+-*/@<>.\n #e0x\\") + ["    ", "def", "**"])) + text[i:]
        else:
            j = draw(st.integers(0, len(text)))
            text = text[:min(i, j)] + text[max(i, j):]
    return text


def test_mutated_programs_are_rejected_cleanly():
    tally = Tally()

    @SHORT
    @given(mutation())
    def case(text):
        tally.note(only_user_errors(text))

    case()
    tally.require(rejected=100, accepted=2)  # of 150; the replayed (derandomized) run: 145 and 5


@pytest.mark.fuzz
@needs_long
def test_fuzz_mutations():
    tally = Tally()

    @FUZZ
    @given(st.one_of(mutation(), st.binary(max_size=300).map(lambda b: b.decode("utf-8", "replace"))))
    def case(text):
        tally.note(only_user_errors(text))

    case()
    tally.require(rejected=LONG // 4, accepted=LONG // 500)  # about 98% and 1.5%


def test_cli_rejects_garbage_with_exit_2():
    rng = np.random.default_rng(7)
    for _ in range(5):
        data = rng.integers(0, 256, 64, dtype=np.uint8).tobytes()
        proc = subprocess.run([sys.executable, "-m", "gradcli", "eval", "-"], input=data, capture_output=True,
                              timeout=60)
        err = proc.stderr.decode("utf-8", "replace")
        assert proc.returncode == 2 and "Traceback" not in err and ": error: " in err
