"""The evaluator's short ways (gradcli/engine/evaluate.py): needed_equations fills last_use in its own
pass, exactly as a plain forward walk finds it; numbers take the scalar path without losing a guarantee
(a fetched value is never freed nor written over, nothing returned is the graph's or the
caller's); the checker's inline bound propagation reports what a look at the values would."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gradcli import api
from gradcli.autodiff import gradients
from gradcli.numerics.diagnostics import NumericsChecker
from gradcli.engine.evaluate import needed_equations, run


def last_uses(graph, order, given=()):
    """The reference: for each value, the last equation in `order` that reads it (given values read none)."""
    last = {}
    for i in order:
        if i not in given:
            for j in graph.equations[i].inputs:
                last[j] = i
    return last

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "samples").glob("*.expr"))

MIXED = """x = [0.5, -1.5, 2.0, 3.0]
s = sum(x * x)
t = tanh(s) * 2.0 - s / 3.0
u = x * t + s
v = exp(u) * t
y = sum(v) + t * s
"""


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_needed_equations_fills_last_use_as_last_uses_finds_it(path):
    graph = api.compile_program(path.read_text())
    y = graph.result[1]
    ids = [y, *[g for g in gradients(graph, [y], list(graph.inputs.values())) if g is not None]]
    for given in ((), {ids[-1]: None}, {graph.equations[y].inputs[0]: None} if graph.equations[y].inputs else ()):
        last_use: dict[int, int] = {}
        order = needed_equations(graph, ids, given, last_use)
        assert order == needed_equations(graph, ids, given)
        assert last_use == last_uses(graph, order, given)


def test_fetched_values_are_never_freed_nor_written_over():
    graph = api.compile_program(MIXED)
    every = needed_equations(graph, [graph.result[1]])
    whole = run(graph, every)
    # each value fetched alone with the result: it is the one the whole evaluation computed,
    # although its last reader could have written into it
    for i in every:
        fetched = run(graph, [i, graph.result[1]])
        assert np.array_equal(fetched[i], whole[i])
        assert np.array_equal(fetched[graph.result[1]], whole[graph.result[1]])
    # nothing returned shares memory with another returned value, a constant or an override
    x = graph.names["x"]
    given = np.array([0.25, 1.0, -2.0, 0.5])
    out = run(graph, every, overrides={x: given})
    arrays = [v for v in out.values() if isinstance(v, np.ndarray) and v.ndim]
    for k, a in enumerate(arrays):
        assert not np.shares_memory(a, given)
        assert not any(np.shares_memory(a, b) for b in arrays[k + 1:])


def test_numbers_are_numpy_scalars_and_a_kept_number_is_the_callers_own():
    graph = api.compile_program("a = 0.5\nb = -2.0\ny = tanh(a) * b + sin(b) / a\n")
    a, y = graph.names["a"], graph.result[1]
    out = run(graph, [a, y])
    assert type(out[y]) is np.float64
    assert not np.shares_memory(out[a], graph.equations[a].params["value"])
    with np.errstate(all="ignore"):
        expected = np.tanh(np.float64(0.5)) * -2.0 + np.sin(np.float64(-2.0)) / 0.5
    assert out[y].tobytes() == np.float64(expected).tobytes()


def _diagnostics(text, feeds=None):
    graph = api.compile_program(text, feeds=feeds)
    y = graph.result[1]
    checker = NumericsChecker(graph, np, "float64")
    with np.errstate(all="ignore"):
        run(graph, [y], check=checker)
    return [(d.kind, d.op, d.pos.line, d.pos.column) for d in checker.finish({"y": y})]


def test_numbers_checked_by_bounds_report_where_a_look_would():
    # bounded all the way (tanh, sin, sums of bounded terms): nothing to report
    assert _diagnostics("x = 0.5\na = tanh(x) + sin(x) * 3.0\ny = a * a - a / 4.0\n") == []
    # exp has no bound: its result is looked at, and the overflow is found where it is made
    assert _diagnostics("x = 800.0\na = tanh(x) * 2.0\ny = exp(x) * a\n") == [("overflow", "exp", 3, 5)]
    # a division by a number that is 0: the pole is found at the division, not downstream
    found = _diagnostics("x = 0.0\na = sin(x)\ny = tanh(1.0 / a) + a\n")
    assert [(kind, op) for kind, op, _, _ in found] == [("divide_by_zero", "/")]
    # large but finite numbers from bounded inputs: the headroom note of a plain look
    found = _diagnostics("x = 1e304\ny = x * 100.0\n")
    assert [kind for kind, *_ in found] == ["headroom"]
