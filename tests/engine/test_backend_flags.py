"""Backends are asked, not sniffed (gradcli/engine/backends.py): a namespace handed to `run`
maps to its backend in one function, `backend_for`, by identity with the modules each backend
serves, and the evaluator reads the backend's flags (`scalars`, `numpy`), whatever its namespace.
(That no module outside engine/backends.py tells a namespace by its name, and the size rules,
are tests/test_architecture.py's.)"""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from gradcli import api
from gradcli.engine import fusion
from gradcli.engine.backends import Backend, CupyBackend, DaskBackend, StandardBackend, backend_for
from gradcli.engine.evaluate import run

# --------------------------------------------------------------------------- one mapping

def test_numpy_and_none_are_the_cpu_backend_with_its_flags():
    for xp in (np, None):
        chosen = backend_for(xp)
        assert type(chosen) is Backend and chosen.xp is np
        assert (chosen.numpy, chosen.scalars, chosen.in_place, chosen.lazy, chosen.memory) == (
            True, True, True, False, "whole")


def test_a_backend_is_its_own_backend():
    chosen = DaskBackend(chunk_bytes=1 << 16, max_memory=1 << 30)
    assert backend_for(chosen) is chosen


def test_a_standard_namespace_is_asked_for_standard_operations_only():
    strict = pytest.importorskip("array_api_strict")
    chosen = backend_for(strict)
    assert type(chosen) is StandardBackend and chosen.xp is strict
    assert (chosen.numpy, chosen.scalars, chosen.in_place, chosen.lazy) == (False, False, False, False)


def test_numpy_through_array_api_compat_is_a_standard_namespace_not_numpy():
    compat = pytest.importorskip("array_api_compat.numpy")
    chosen = backend_for(compat)
    assert type(chosen) is StandardBackend and not chosen.numpy and not chosen.scalars


def test_cupy_namespaces_map_to_the_cupy_backend_without_importing_cupy(monkeypatch):
    """Matched by identity with the modules already imported: stand-ins registered under CuPy's
    names are enough, and nothing is imported (no GPU is needed to map a namespace)."""
    for name in CupyBackend.modules:
        fake = types.ModuleType(name)
        monkeypatch.setitem(sys.modules, name, fake)
        chosen = backend_for(fake)
        assert type(chosen) is CupyBackend
        assert (chosen.numpy, chosen.scalars, chosen.in_place, chosen.memory) == (False, False, True, "device")
    assert type(backend_for(types.ModuleType("cupy"))) is StandardBackend  # a name alone is not CuPy


def test_dask_namespaces_map_to_the_dask_backend():
    dask_array = pytest.importorskip("dask.array")
    for xp in (dask_array, DaskBackend(max_memory=1 << 30).xp):
        chosen = backend_for(xp)
        assert type(chosen) is DaskBackend
        assert (chosen.numpy, chosen.scalars, chosen.in_place, chosen.lazy, chosen.memory) == (
            False, False, False, True, "chunks")


# --------------------------------------------------------------------------- the evaluator reads the flags

class NoScalars(Backend):
    """NumPy without the scalar path: numbers stay 0-d arrays."""
    scalars = False


class NoFusion(Backend):
    """NumPy without fused chains."""
    numpy = False


def _input_as_read(chosen):
    """z's value, and the type of the input x as its first reader sees it."""
    graph = api.compile_program("y = x * 3\nz = y * y + x", feeds={"x": np.array(0.7)})
    x, y, z = graph.names["x"], graph.names["y"], graph.names["z"]
    seen = {}
    values = run(graph, [z], backend=chosen, check=lambda i, eq, value, args: seen.setdefault(i, args))
    assert graph.equations[y].inputs[0] == x
    return values[z], type(seen[y][0])


def test_numbers_are_held_as_numpy_scalars_only_where_the_backend_says_so():
    with_scalars, kind = _input_as_read(Backend())
    assert kind is np.float64
    without, kind = _input_as_read(NoScalars())
    assert kind is np.ndarray
    assert float(without) == float(with_scalars) == (0.7 * 3) * (0.7 * 3) + 0.7


def test_chains_are_fused_only_where_the_backend_says_so(monkeypatch):
    n = 2 * fusion.MIN_ELEMENTS
    rng = np.random.default_rng(3)
    feeds = {"a": rng.uniform(-1, 1, n), "b": rng.uniform(-1, 1, n)}
    graph = api.compile_program("y = exp(a) * b + a", feeds=feeds)
    y = graph.names["y"]
    calls = []
    fused = fusion.evaluate
    monkeypatch.setattr(fusion, "evaluate", lambda *args: calls.append(1) or fused(*args))
    want = np.exp(feeds["a"]) * feeds["b"] + feeds["a"]
    for chosen, chains in ((Backend(), 1), (NoFusion(), 0)):
        calls.clear()
        got = run(graph, [y], backend=chosen)[y]
        assert len(calls) == chains
        np.testing.assert_array_equal(got, want)  # elementwise ufuncs: bitwise either way
