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


COMPARED_KINDS = ("value", "none", "shape", "sequence", "display:value", "display:shape", "display:sequence")


def expected_by_expression(record: dict) -> dict:
    """expr -> the value printed last under that text (gradcli's outputs are keyed by the text)."""
    return {p["expr"]: p["value"] for p in record["prints"] if p.get("kind") in COMPARED_KINDS}


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
    printed tuple gradcli outputs item by item (`text[0]`, `text[1]`, ...) is compared so."""
    problems: list[str] = []
    pending = list(expected_by_expression(record).items())
    while pending:
        expr, want = pending.pop()
        if expr not in outputs and f"{expr}[0]" in outputs and isinstance(want, list):
            pending.extend((f"{expr}[{k}]", item) for k, item in enumerate(want))
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
