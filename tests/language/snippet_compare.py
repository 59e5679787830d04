"""Run a library's program through gradcli (`outputs`, `refusal`) and compare what it printed with
what the library printed for the same code (the tutorial snippets' JSON records: each `prints`
entry's `expr`, `kind`, `value`)."""
from __future__ import annotations

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

def outputs(program: str) -> dict:
    """What the program printed, by the text printed (the fixes are off: nothing here is about them)."""
    return api.evaluate(program, fixes=False).outputs


def refusal(program: str) -> GradcliError:
    """The error gradcli refuses the program with; the test fails where it runs."""
    with pytest.raises(GradcliError) as caught:
        api.evaluate(program, fixes=False)
    return caught.value


COMPARED_KINDS = ("value", "none", "shape", "sequence", "mapping", "display:value", "display:shape",
                  "display:sequence", "display:mapping")


def expected_by_expression(record: dict) -> dict:
    """expr -> the value printed under that text (gradcli's outputs are keyed by the text; a text
    printed more than once, as in a loop, is numbered `expr #k` but its last)."""
    entries = [(p["expr"], p["value"]) for p in record["prints"] if p.get("kind") in COMPARED_KINDS]
    times = {expr: [e for e, _ in entries].count(expr) for expr, _ in entries}
    seen: dict = {}
    expected = {}
    for expr, value in entries:
        seen[expr] = seen.get(expr, 0) + 1
        expected[expr if seen[expr] == times[expr] else f"{expr} #{seen[expr]}"] = value
    return expected


def as_numbers(value):
    """A printed value as a float array ("nan"/"inf" strings, booleans as 0/1); None where it is
    not one array (a None inside, ragged items)."""
    def number(v):
        return float(v) if isinstance(v, str) else v

    def walk(v):
        if isinstance(v, list):
            return [walk(item) for item in v]
        if v is None:
            raise ValueError("None inside")
        return number(v)

    try:
        return np.array(walk(value), dtype=float)
    except ValueError:
        return None


def mismatches(record: dict, outputs: dict) -> list[str]:
    """What differs between the library's prints and gradcli's outputs ([] when all match), at
    float32's tolerance (the libraries computed in float32 unless the snippet says float64). A
    printed tuple gradcli outputs item by item (`text[0]`, `text[1]`, ...) is compared so, and a
    printed dict key by key (`text['w']`, nested `text['c']['a']`)."""
    problems: list[str] = []
    pending = list(expected_by_expression(record).items())
    while pending:
        expr, want = pending.pop()
        text, hash_, number = expr.rpartition(" #") if " #" in expr else (expr, "", "")
        again = f"{hash_}{number}" if number.isdigit() else ""
        text = text if again else expr
        if isinstance(want, dict):  # a printed dict (JAX's pytree): one output per key, `expr['w']`
            pending.extend((f"{text}[{key!r}]{' ' + again if again else ''}", item) for key, item in want.items())
            continue
        if expr not in outputs and f"{text}[0]{' ' + again if again else ''}" in outputs and isinstance(want, list):
            pending.extend((f"{text}[{k}]{' ' + again if again else ''}", item) for k, item in enumerate(want))
            continue
        if expr not in outputs:
            problems.append(f"{expr!r} not among {list(outputs)}")
            continue
        got = outputs[expr]
        if want is None:
            if got is not None:
                problems.append(f"{expr}: expected None, got {got}")
            continue
        wanted = as_numbers(want)
        if wanted is None or got is None:
            problems.append(f"{expr}: expected {want}, got {got}")
            continue
        got = np.asarray(got, dtype=float)
        if got.shape != wanted.shape or not np.allclose(got, wanted, rtol=2e-6, atol=1e-6, equal_nan=True):
            problems.append(f"{expr}: expected {want}, got {got.tolist()}")
    return problems


LIBRARY_NAMES = {"tensorflow": "TensorFlow", "jax": "JAX", "pytorch": "PyTorch", "autograd": "autograd"}


def refusal_mismatches(record: dict, evaluate) -> list[str]:
    """For a snippet the library raised in: what differs from the library's behaviour ([] when
    gradcli matches it): gradcli refuses at the error's line, naming the library and its exception
    (`PyTorch: RuntimeError`), and the program up to that line prints what the library printed
    before it raised. `evaluate(code)` returns the outputs or raises GradcliError."""
    error = record["error"]
    problems = []
    try:
        outputs = evaluate(record["code"])
        problems.append(f"no refusal: gradcli printed {list(outputs)}")
    except GradcliError as exc:
        named = f"{LIBRARY_NAMES[record['library']]}: {error['type']}"
        if named not in str(exc):
            problems.append(f"the refusal does not name {named!r}: {exc}")
        if exc.pos is None or exc.pos.line != error["line"]:
            problems.append(f"refused at {exc.pos}, the library raised at line {error['line']}")
    before = dict(record, prints=[p for p in record["prints"] if p.get("line", 0) < error["line"]])
    if expected_by_expression(before):
        head = "\n".join(record["code"].splitlines()[:error["line"] - 1]) + "\n"
        problems.extend(mismatches(before, evaluate(head)))
    return problems
