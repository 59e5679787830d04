"""The op record is an op's only home: a walk over the whole table (`gradcli.ops.OPS`) that fails
on any op lacking what the engine needs, and ops registered here, in the test, that get the
engine's behaviour from their record's fields alone (adding an op is one entry; a numeric hint,
optional, is one entry of gradcli/numerics/hints.py's table)."""
import contextlib
import re
import subprocess
import sys

import numpy as np
import pytest

from gradcli import api, ops
from gradcli.numerics import hints as numeric_hints
from gradcli.numerics.hints import Hints
from gradcli.ops import CALLABLE, NO_GRADIENT, OPS, UNBOUNDED, Op, register

from test_ops import covered_operations

# What the engine's readers accept in each field (gradcli/numerics/diagnostics.py, gradcli/numerics/fixes.py,
# gradcli/language/lower/__init__.py); a value outside them would be silently ignored. (The numeric
# hints of gradcli/numerics/hints.py are checked by tests/numerics/test_hints.py.)
KINKS = {None, "extremes", "extremes_first", "pair", "zero", "zero_right"}
UNDERFLOWS = {None, "rounds", "terms"}
REPEATS = {None, "broadcast", "reshape"}
# `doc` words that say an argument (or the whole op) has no gradient rule on purpose
NO_GRADIENT_WORDS = re.compile(r"no gradient|gradient in \w+ only")


def _problems(op: Op, covered: set[str]) -> list[str]:
    out = []
    # its items are ops of their own (a tuple's parts), or it is built of them at its call (a
    # composite's expansion: F.mse_loss is subtract, square, mean), each walked here
    tuple_valued = op.parts is not None or op.expand is not None
    # a shape rule (and a forward)
    if not tuple_valued and not (callable(op.shape) and callable(op.forward)):
        out.append("no shape rule or forward")
    # a gradient rule per argument: a rule, NO_GRADIENT, or None where the doc says so
    if op.vjp is None:
        if not tuple_valued and not NO_GRADIENT_WORDS.search(op.doc):
            out.append("vjp=None, and its doc does not say it has no gradient")
    elif op.variadic:
        if len(op.vjp) != 1 or not callable(op.vjp[0]):
            out.append("a variadic op needs one rule factory")
    elif len(op.vjp) != op.arity:
        out.append(f"{len(op.vjp)} gradient entries for {op.arity} arguments")
    else:
        for arg, rule in zip(op.args, op.vjp):
            if rule is None and not NO_GRADIENT_WORDS.search(op.doc):
                out.append(f"no gradient rule for {arg}, and its doc does not say so")
            elif rule is not None and rule is not NO_GRADIENT and not callable(rule):
                out.append(f"the gradient entry for {arg} is neither a rule nor NO_GRADIENT")
    # finiteness: an elementwise op declares how large its result may be
    bound = op.bound
    if bound is not None and not (callable(bound) or bound == UNBOUNDED or (
            isinstance(bound, tuple) and len(bound) == 2 and bound[0] <= bound[1])):
        out.append(f"bound {bound!r} is not a rule, a range (lo, hi) or UNBOUNDED")
    if op.elementwise and not (op.finite_closed or bound is not None or op.grows):
        out.append("elementwise, with no declared bound (finite_closed, bound=..., grows=True or bound=UNBOUNDED)")
    # printing: a public op is written as a call of its name, an operator with its symbol
    if op.public and CALLABLE.get(op.name) is not op:
        out.append("public, but its name does not call it")
    if (op.precedence is not None or op.symbol_reads_truth) and op.symbol is None:
        out.append("a precedence or symbol_reads_truth without a symbol")
    if op.symbol is not None:
        from gradcli.language.parser import BINARY_OPS, UNARY_OPS

        table = BINARY_OPS if op.arity == 2 else UNARY_OPS if op.arity == 1 else {}
        if table.get(op.symbol) != op.name:
            out.append(f"its symbol {op.symbol!r} does not parse to it")
    # the fields the engine reads hold values it knows
    if op.kink not in KINKS:
        out.append(f"kink {op.kink!r} is not one of {sorted(k for k in KINKS if k)}")
    if op.underflows not in UNDERFLOWS:
        out.append(f"underflows {op.underflows!r} is not one of {sorted(k for k in UNDERFLOWS if k)}")
    if op.repeats not in REPEATS:
        out.append(f"repeats {op.repeats!r} is not one of {sorted(k for k in REPEATS if k)}")
    # a finite-difference row in the op table tests (the coverage walk of tests/ops/test_ops.py)
    differentiable = not all(r is NO_GRADIENT for r in op.vjp or ())
    if op.public and differentiable and op.name not in covered:
        out.append("no finite-difference row in the op table tests")
    return out


def test_every_op_record_holds_what_the_engine_needs():
    covered = covered_operations()
    problems = {name: p for name, op in OPS.items() if (p := _problems(op, covered))}
    assert not problems, "\n".join(f"{name}: {'; '.join(p)}" for name, p in sorted(problems.items()))


def test_operator_symbols_are_unique():
    seen: dict[tuple, str] = {}
    for op in OPS.values():
        if op.symbol is not None:
            key = (op.symbol, op.arity)
            assert key not in seen, f"{op.name} and {seen[key]} both spell {op.symbol!r}"
            seen[key] = op.name


# --------------------------------------------------------------------------- one entry is enough

@contextlib.contextmanager
def throwaway(name, forward, vjp=None, **fields):
    """An elementwise op registered for one test, and removed after it."""
    op = Op(name, forward, lambda shape: shape, (vjp or (lambda g, ans, x: g),), elementwise=True, **fields)
    assert name not in OPS
    register(op, replace=True)
    try:
        yield op
    finally:
        OPS.pop(name, None)
        CALLABLE.pop(name, None)
        ops.G.__dict__.pop(name, None)


@contextlib.contextmanager
def hinted(name, hints: Hints):
    """An entry in the numeric hints table (gradcli/numerics/hints.py) for one test, and removed after it."""
    assert name not in numeric_hints.HINTS
    numeric_hints.HINTS[name] = hints
    try:
        yield
    finally:
        numeric_hints.HINTS.pop(name, None)


def kinds(program, wrt=None, **feeds):
    result = api.grad(program, wrt=wrt, feeds=feeds) if wrt else api.evaluate(program, feeds=feeds)
    return {d.kind: d for d in result.diagnostics}


def test_an_op_registered_with_grows_gets_the_headroom_warning():
    """The headroom check reads `grows`, not a list of names: a new op with it is checked."""
    scale = lambda xp, x: x * 1e306  # noqa: E731  (1e306 is within a factor 1000 of float64's largest)
    with throwaway("scale_up_grows", scale, bound=UNBOUNDED, grows=True):
        d = kinds("y = scale_up_grows(x)", x=1.0)["headroom"]
        assert d.op == "scale_up_grows" and "within a factor of" in d.message
    with throwaway("scale_up_quiet", scale, bound=UNBOUNDED):  # the same op without the field: silent
        assert "headroom" not in kinds("y = scale_up_quiet(x)", x=1.0)


def test_an_op_registered_with_a_domain_hint_gets_its_message_and_hint():
    def forward(xp, x):
        with np.errstate(all="ignore"):
            return xp.sqrt(x - 2.0)

    with throwaway("sqrt_from_two", forward, bound=UNBOUNDED), \
            hinted("sqrt_from_two", Hints(domain=2.0, suggestions={"invalid": "keep its argument above 2"})):
        d = kinds("y = sqrt_from_two(x)", x=[1.0, 3.0])["invalid"]
        assert "its argument reaches 1, below its domain's start 2" in d.message
        assert d.suggestion == "keep its argument above 2"


def test_an_op_registered_with_a_pole_hint_gets_its_message():
    def forward(xp, x):
        with np.errstate(all="ignore"):
            return 1.0 / x

    with throwaway("one_over", forward, bound=UNBOUNDED), hinted("one_over", Hints(pole=(0, "its argument is 0"))):
        d = kinds("y = one_over(x)", x=[0.0, 2.0])["divide_by_zero"]
        assert d.message.endswith("gives infinity at 1 of 2 elements: its argument is 0"), d.message


def test_an_op_registered_with_a_kink_gets_the_kink_note():
    with throwaway("relu_again", lambda xp, x: xp.maximum(x, 0.0), lambda g, ans, x: g * ops.G.greater(x, 0.0),
                   finite_closed=True, kink="zero"):
        d = kinds("y = sum(relu_again(x))", wrt=["x"], x=[0.0, 1.0])["kink"]
        assert d.op == "relu_again" and "exactly at 0 for 1 element" in d.message


# --------------------------------------------------------------------------- failing on the user's data

@pytest.mark.parametrize("command,program,sets,words", [
    ("eval", "y = solve(a, b)", ["a=[[1,2],[2,4]]", "b=[1,2]"], "1:5: error: solve: the matrix is singular"),
    ("grad", "y = sum(solve(a, b))", ["a=[[1,2],[2,4]]", "b=[1,2]"], "1:9: error: solve: the matrix is singular"),
    ("eval", "y = cholesky(a)", ["a=[[1,2],[2,1]]"], "1:5: error: cholesky: the matrix is not positive definite"),
    ("grad", "y = sum(cholesky(a))", ["a=[[1,2],[2,1]]"], "1:9: error: cholesky: the matrix is not positive definite"),
])
def test_an_op_failing_on_the_users_data_is_a_positioned_user_error(command, program, sets, words):
    args = [sys.executable, "-m", "gradcli", command, "-e", program]
    for s in sets:
        args += ["--set", s]
    if command == "grad":
        args += ["--wrt", "a"]
    run = subprocess.run(args, capture_output=True, text=True)
    assert run.returncode == 2, (run.returncode, run.stderr)  # a user error, never 70 (an internal one)
    assert words in run.stderr and "Traceback" not in run.stderr
