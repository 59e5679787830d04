"""Rules the engine (gradcli/engine/) keeps: backends are asked by their flags, never told apart
by their module's name; a namespace handed to `run` maps to its backend in one function
(`backends.backend_for`); and the size rules, with the hot loops that are exempt naming the
benchmark that keeps them whole."""
from __future__ import annotations

import ast
import pathlib
import sys
import types

import numpy as np
import pytest

from gradcli import api
from gradcli.engine import backends, fusion
from gradcli.engine.backends import Backend, CupyBackend, DaskBackend, StandardBackend, backend_for
from gradcli.engine.evaluate import run

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "gradcli"
ENGINE = PACKAGE / "engine"

# --------------------------------------------------------------------------- asked, not sniffed

# Tests of an array namespace's module name still outside the engine: the op forwards are handed
# a namespace, not a backend (file: how many). The list may only shrink; the test says when.
NAME_TESTS_LEFT = {"ops/__init__.py": 2, "ops/elementwise.py": 1, "ops/reduce.py": 1}
MODULE_NAMES = ("numpy", "cupy", "dask", "array_api")


def _is_name_of(node) -> bool:
    """`X.__name__` or `getattr(X, "__name__", ...)`, X not `type(...)` (a class's name, such as
    an exception's, is not a namespace's)."""
    if isinstance(node, ast.Attribute) and node.attr == "__name__":
        return not (isinstance(node.value, ast.Call) and getattr(node.value.func, "id", None) == "type")
    return (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr" and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant) and node.args[1].value == "__name__")


def _names_a_module(node) -> bool:
    values = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return any(isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value.startswith(MODULE_NAMES)
               for v in values)


def name_tests(tree) -> list[int]:
    """Lines where a module's name is compared with a library's (`xp.__name__ == "numpy"`,
    `getattr(xp, "__name__", "") in (...)`, `name.startswith("dask")`), or read by getattr."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(map(_is_name_of, [node.left, *node.comparators])) \
                and any(map(_names_a_module, [node.left, *node.comparators])):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "startswith" and any(map(_names_a_module, node.args)):
            lines.append(node.lineno)
        elif _is_name_of(node) and isinstance(node, ast.Call):
            lines.append(node.lineno)
    return sorted(set(lines))


def test_the_sniff_finder_finds_the_forms_it_looks_for():
    found = name_tests(ast.parse('a = xp.__name__ == "numpy"\n'
                                 'b = getattr(xp, "__name__", "")\n'
                                 'c = name.startswith(("dask", "array_api_compat.dask"))\n'
                                 'd = "cupy" in xp.__name__\n'
                                 'e = type(exc).__name__ != "LinAlgError"\n'
                                 'f = rule.callback.__name__ != builds[kind]\n'))
    assert found == [1, 2, 3, 4]


def test_no_module_outside_the_backends_tells_a_namespace_by_its_name():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where == "engine/backends.py":
            continue
        lines = name_tests(ast.parse(path.read_text(), str(path)))
        if lines:
            found[where] = len(lines)
    assert found == NAME_TESTS_LEFT, "ask the backend's flags instead; shrink NAME_TESTS_LEFT as they go"


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


# --------------------------------------------------------------------------- size

MAX_FUNCTION, MAX_CLASS, MAX_MODULE = 80, 400, 900
HOT_LOOPS = {("evaluate.py", "run"), ("fusion.py", "evaluate")}


def _workloads() -> tuple[str, ...]:
    tree = ast.parse((ROOT / "benchmarks" / "run.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "WORKLOADS":
            return ast.literal_eval(node.value)
    raise AssertionError("benchmarks/run.py names no WORKLOADS")


def _definitions():
    for path in sorted(ENGINE.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield path.name, node, node.end_lineno - node.lineno + 1


def test_engine_modules_classes_and_functions_keep_their_size():
    too_long = [f"{path.name}: {n} lines" for path in sorted(ENGINE.glob("*.py"))
                if (n := len(path.read_text().splitlines())) > MAX_MODULE]
    for module, node, n in _definitions():
        limit = MAX_CLASS if isinstance(node, ast.ClassDef) else MAX_FUNCTION
        if n > limit and (module, node.name) not in HOT_LOOPS:
            too_long.append(f"{module}:{node.lineno} {node.name}: {n} lines")
    assert too_long == []


def test_each_hot_loop_names_the_benchmark_that_keeps_it_whole():
    workloads = _workloads()
    found = {}
    for module, node, _ in _definitions():
        if (module, node.name) in HOT_LOOPS and not isinstance(node, ast.ClassDef):
            doc = ast.get_docstring(node) or ""
            found[(module, node.name)] = "benchmarks/run.py" in doc and any(f"`{w}`" in doc for w in workloads)
    assert found == dict.fromkeys(HOT_LOOPS, True)
