"""The backends (gradcli/backends.py): every op of the op table and its gradient on Dask
(small chunks, several per axis) against NumPy, and on array-api-strict (the proof that the
engine uses only standard array operations where an op record does not declare otherwise)."""
import importlib
import math
import pathlib

import numpy as np
import pytest

from gradcli import api

dask_array = pytest.importorskip("dask.array")


def _op_table_rows():
    """(id, program, {name: generator}) for every row of the op table tests (tests/test_ops*.py)."""
    rows = []
    for path in sorted(pathlib.Path(__file__).parent.glob("test_ops*.py")):
        module = importlib.import_module(path.stem)
        for case in module.CASES:
            program, inputs = case[0], case[1]
            options = case[3] if len(case) > 3 else {}
            rows.append((f"{path.stem}:{program}", program, inputs, options.get("fixed") or {}))
    return rows


def _covering(rows):
    """The rows, fewest first, that together call every op the whole table calls (each op is
    tried in the program it is tested by; a second row of the same op adds little on Dask)."""
    from gradcli.ops import CALLABLE
    from gradcli.parser import BINARY_OPS

    def ops_of(program):
        found = {op.name for name, op in CALLABLE.items() if f"{name}(" in program}
        return found | {name for symbol, name in BINARY_OPS.items() if f" {symbol} " in program}

    chosen, seen = [], set()
    for row in rows:
        new = ops_of(row[1]) - seen
        if new:
            chosen.append(row)
            seen |= new
    return chosen


ROWS = _covering(_op_table_rows())


@pytest.fixture(autouse=True)
def _in_this_thread():
    """The op walk runs Dask's tasks in the calling thread: thousands of tiny graphs, whose
    thread-pool hand-offs would cost more than the work (the threaded scheduler is tested by
    the command-line tests below)."""
    import dask
    with dask.config.set(scheduler="synchronous"):
        yield


def _feeds(program, inputs, fixed):
    rng = np.random.default_rng(sum(map(ord, program)))
    feeds = {name: np.asarray(make(rng), dtype=np.float64) for name, make in {**inputs, **fixed}.items()}
    if "where(c" in program and "c" not in feeds:
        feeds["c"] = rng.choice([0.0, 1.0], (4,))
    return feeds


def _chunked(value: np.ndarray):
    """A Dask array of `value` cut in two (or more) chunks along every axis longer than one."""
    chunks = tuple(max(1, math.ceil(n / 2)) for n in value.shape) or ()
    return dask_array.from_array(value, chunks=chunks)


def _close(got, want, what):
    if want is None:
        assert got is None, what
        return
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=what)


def _grad_or_eval(program, wrt, feeds, **options):
    try:
        if wrt:
            return api.grad(program, wrt=wrt, feeds=feeds, fixes=False, **options)
        return api.evaluate(program, feeds=feeds, fixes=False, **options)
    except Exception as exc:  # compared with NumPy's error below
        return exc


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_every_op_and_its_gradient_agree_between_numpy_and_dask(row):
    _, program, inputs, fixed = row
    feeds = _feeds(program, inputs, fixed)
    wrt = list(inputs)
    want = _grad_or_eval(program, wrt, feeds)
    got = _grad_or_eval(program, wrt, {k: _chunked(v) for k, v in feeds.items()}, device="dask", chunks=1024)
    if isinstance(want, Exception):
        assert isinstance(got, Exception) and str(got) == str(want)
        return
    assert not isinstance(got, Exception), f"{program!r} fails on Dask: {got!r}"
    for k in want.outputs:
        _close(got.outputs[k], want.outputs[k], f"value of {program!r}")
    for k in want.gradients:
        _close(got.gradients[k], want.gradients[k], f"d/d{k} of {program!r}")
    assert [d.to_json() for d in got.diagnostics] == [d.to_json() for d in want.diagnostics]
