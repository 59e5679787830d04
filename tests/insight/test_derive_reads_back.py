"""Every program `derive` prints reads back: parsed by gradcli and evaluated on the same inputs it
gives the gradient `grad` gives, on every row of the op table tests (each op with a gradient, in
each of its spellings, against each differentiated input). An op that programs cannot call by
name (a part of a factorization, a step of a gradient: `svd_u`, `cofactor`, `einsum_to`) is
printed as the calls that compute it; the forward programs of the rows print and read back too."""
import importlib
import pathlib

import numpy as np
import pytest

from gradcli import api
from gradcli.insight.printer import SPELLINGS, Printer
from gradcli.ops import OPS
from test_ops import row_feeds as _feeds

OP_TESTS = pathlib.Path(__file__).resolve().parents[1] / "ops"


def _rows():
    """(id, program, {differentiated input: generator}, {held input: generator}) of every row of
    tests/ops/test_ops*.py, as tests/test_forward.py walks them."""
    rows = []
    for path in sorted(OP_TESTS.glob("test_ops*.py")):
        for case in importlib.import_module(path.stem).CASES:
            options = case[3] if len(case) > 3 else {}
            rows.append((f"{path.stem}:{case[0]}", case[0], case[1], options.get("fixed") or {}))
    return rows


ROWS = _rows()


def _same(got, want, what):
    assert np.shape(got) == np.shape(want), what
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12 * max(1.0, float(np.max(np.abs(want), initial=0))),
                               equal_nan=True, err_msg=what)


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_the_derived_program_reads_back_and_gives_the_gradient(row):
    _, program, inputs, fixed = row
    feeds = _feeds(program, inputs, fixed)
    for x in inputs:
        derived = api.derivation(program, wrt=x, feeds=feeds)
        want = api.grad(program, wrt=[x], feeds=feeds, fixes=False).gradients[x]
        got = api.evaluate(derived.program, feeds=feeds, prints=[derived.name], fixes=False).outputs[derived.name]
        _same(got, np.zeros(np.shape(feeds[x])) if want is None else want, f"d/d{x} of {program!r}:\n{derived.program}")


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_the_forward_program_prints_and_reads_back(row):
    _, program, inputs, fixed = row
    feeds = _feeds(program, inputs, fixed)
    graph = api.compile_program(program, "<test>", feeds)
    text = Printer(graph, set(graph.names) | {"printed"}).program({"printed": graph.result[1]}, "the forward program")
    (want,) = api.evaluate(program, feeds=feeds, fixes=False).outputs.values()
    _same(api.evaluate(text, feeds=feeds, prints=["printed"], fixes=False).outputs["printed"], want, text)


def test_every_op_programs_cannot_call_has_a_spelling():
    """Such an op is written as the calls that compute it (or its own `prints_as`); those that
    never stand in a graph (a tuple's holder, a composite expanded where it is called, the
    inputs, constants, lists and indexing the printer writes itself) need none."""
    structural = {"input", "const", "stack", "scatter", "index"}
    missing = [name for name, op in OPS.items() if not op.public and op.prints_as is None and name not in SPELLINGS
               and op.parts is None and op.expand is None and name not in structural]
    assert not missing, f"no spelling in the language for {missing}"
    assert not [name for name in SPELLINGS if name not in OPS]


SQUARE = {"a": [[2.0, 1.0], [0.5, 3.0]]}


@pytest.mark.parametrize("program,expected", [
    ("y = sum(np.linalg.svd(a, full_matrices=False)[0])", "t1 = svd(a, full_matrices=False)[0]"),
    ("y = np.linalg.det(a)", "dy_da = (((svd(a)[0] * prod_others(svd(a)[1], axis=-1)[..., None, :]) @ svd(a)[2])"),
    ("y = sum(np.einsum('ij->', a) * a)", "einsum(',i,j->ij', sum(a), ones([2]), ones([2]))"),
    ("y = sum(np.linalg.eigh(a)[1])", "t1 = eigh(a)[1]"),
])
def test_the_internal_names_of_the_issue_print_as_calls_of_the_language(program, expected):
    derived = api.derivation(program, wrt="a", feeds=SQUARE).program
    assert expected in derived, derived
    for internal in ("cofactor", "slogdet_logabs", "eigh_vectors", "svd_u", "einsum_to", "subscripts="):
        assert internal not in derived, derived
