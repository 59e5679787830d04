"""The house rules, checked over the source of gradcli/ (parsed, not imported; one test imports
the package in a child process to see that importing it does nothing else):

- imports go down the layers (LAYER_RANKS), and the top-level imports make no circle;
- no gradcli module is imported inside a function, except the start-up laziness in LAZY_IMPORTS;
- ops/ tests no library (`call.library == "torch"`): the dialects resolve spellings;
- no module assigns another module's attributes (`othermodule.name = ...`);
- sizes: a module <= 900 lines, a class <= 400, a function <= 80, except the HOT_LOOPS, each
  naming in its docstring the benchmark that keeps it whole;
- backends are asked, not sniffed: no `xp.__name__ == "numpy"` outside engine/backends.py;
- `import gradcli` has no side effects, even in a process named gradcli asked for --help.

Today's breaches are listed item by item as xfail(strict=True): each becomes a failure once it is
fixed, so that its line here is deleted and the rule holds from then on.
"""
from __future__ import annotations

import ast
import fnmatch
import functools
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gradcli"

# --------------------------------------------------------------------------- the rules' tables

# The layer of a module is its first name under gradcli (gradcli.engine.fusion: engine); the
# package's own __init__ is the layer "gradcli". A module may import its own layer's modules
# (ops' families import gradcli.ops, the engine's modules each other: no circle, checked below)
# and any layer of a lower rank; never one of its rank or above.
LAYER_RANKS = {
    "__main__": 12,              # the entry point of `python -m gradcli`
    "cli": 11,
    "gradcli": 10,               # the package __init__: __version__ and the lazy API names
    "api": 9,
    "insight": 8,                # (insight reports numerics' Diagnostic records: one floor above it)
    "numerics": 7,
    "language": 6, "forward": 5.7, "autodiff": 5.5,  # (forward mode transposes reverse mode)
    "engine": 5,
    "ir": 4,
    "ops": 3,
    "io": 2,                     # files, outputs: leaves beside limits, see IO_USERS_FROM
    "limits": 1, "dtypes": 1,     # dtypes: what each --dtype can hold (NumPy's and ml_dtypes' facts)
    "errors": 0, "records": 0,
}
IO_USERS_FROM = LAYER_RANKS["engine"]  # io/ reads files for the engine and the layers above it only

# Imports that still go up today, each fixed by a change under way; one xfail test each.
KNOWN_UPWARD: dict[tuple[str, str], str] = {}



def _command_line_s_lazy_imports() -> dict[tuple[str, str], str]:
    """The start-up laziness of the command line, as cli/ lists it in one place: the tuple
    LAZY_IMPORTS of (module, why) in gradcli/cli/__init__.py, read from its source."""
    for node in ast.parse((PACKAGE / "cli" / "__init__.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "LAZY_IMPORTS" for t in node.targets):
            listed = ast.literal_eval(node.value)
            assert len({module for module, _ in listed}) == len(listed) and all(why for _, why in listed), listed
            return {("gradcli/cli/*.py", module): why for module, why in listed}
    raise AssertionError("gradcli/cli/__init__.py defines no LAZY_IMPORTS")


# Imports of gradcli modules inside a function, allowed: (file pattern, module pattern) -> why.
# Patterns are fnmatch's; "gradcli.ops.*" is a module name computed at run time. An entry that
# matches no import any more fails test_every_lazy_import_allowance_is_used: delete it then.
LAZY_IMPORTS = {
    **_command_line_s_lazy_imports(),
    ("gradcli/__init__.py", "gradcli.api"): "the lazy API names (gradcli.evaluate, ...): NumPy loads when one is used",
    ("gradcli/api.py", "gradcli.insight.curve"): "start-up: a small eval does not load it",
    ("gradcli/api.py", "gradcli.insight.jacobians"): "start-up: a small eval does not load it",
    ("gradcli/api.py", "gradcli.insight.printer"): "start-up: a small eval does not load it",
    ("gradcli/api.py", "gradcli.io.outputs"): "start-up: a small eval does not load it",
    ("gradcli/api.py", "gradcli.numerics.fixes"): "start-up: a small eval does not load it",
    ("gradcli/ops/table.py", "gradcli.ops.*"): "the op table loads a family on the first use of one of its names",
}

MAX_MODULE_LINES, MAX_CLASS_LINES, MAX_FUNCTION_LINES = 900, 400, 80

# The hot loops, allowed to be long: splitting them costs time on the named benchmark, which
# their docstring must name as `benchmarks/run.py --only WORKLOAD`. (file, qualified name) -> workload.
HOT_LOOPS = {
    ("gradcli/language/parser.py", "_Parser.parse"): "terms",
    ("gradcli/language/lower/interpret.py", "Interpreter.lower"): "terms",
    ("gradcli/engine/evaluate.py", "run"): "deep",
    ("gradcli/engine/fusion.py", "evaluate"): "arrays",
}

# Over their size today, one xfail test each: (kind, file, qualified name or "") -> why it is kept for now.
OVERSIZE: dict[tuple[str, str, str], str] = {}

# Tests of a library's name in ops/: `call.library == "torch"`, or a library's name compared.
LIBRARIES = {"numpy", "torch", "tensorflow", "tf", "keras", "jax", "optax", "scipy", "lax"}

# --------------------------------------------------------------------------- reading the source


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@functools.cache
def source_files() -> tuple[Path, ...]:
    return tuple(sorted(PACKAGE.rglob("*.py")))


@functools.cache
def modules() -> frozenset[str]:
    return frozenset(module_name(p) for p in source_files())


@functools.cache
def tree_of(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@dataclass(frozen=True)
class Import:
    file: str         # gradcli/cli/__init__.py
    line: int
    target: str       # a module: gradcli.cli.render; gradcli.ops.* for a name computed at run time
    in_function: bool
    bound: str = ""   # the name it binds to the module, if it binds one

    def __str__(self):
        return f"{self.file}:{self.line} imports {self.target}" + (" (in a function)" if self.in_function else "")


def _resolve_from(path: Path, node: ast.ImportFrom) -> str | None:
    """The absolute module of `from X import ...`, or None if X is not gradcli's."""
    if node.level:
        package = module_name(path).split(".")
        if path.name != "__init__.py":
            package = package[:-1]
        package = package[:len(package) - (node.level - 1)]
        return ".".join(package + ([node.module] if node.module else []))
    return node.module if node.module and (node.module + ".").startswith("gradcli.") else None


def _dynamic_target(path: Path, call: ast.Call) -> str | None:
    """`importlib.import_module(...)` / `__import__(...)` of a gradcli module: its name (a
    computed part as *), or None if it is not gradcli's."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name not in ("import_module", "__import__") or not call.args:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        text = arg.value
    elif isinstance(arg, ast.JoinedStr):
        text = ""
        for part in arg.values:
            if isinstance(part, ast.Constant):
                text += str(part.value)
            elif isinstance(part.value, ast.Name) and part.value.id == "__package__":
                package = module_name(path)
                text += package if path.name == "__init__.py" else package.rpartition(".")[0]
            else:
                text += "*"
    else:
        return "?"  # a name made at run time: it must be listed to be allowed
    return text if (text + ".").startswith("gradcli.") or text == "?" else None


class _ImportCollector(ast.NodeVisitor):
    def __init__(self, path: Path):
        self.path, self.file, self.depth, self.found = path, relative(path), 0, []

    def _function(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def _add(self, node, target, bound=""):
        self.found.append(Import(self.file, node.lineno, target, self.depth > 0, bound))

    def visit_Import(self, node):
        for alias in node.names:
            if (alias.name + ".").startswith("gradcli."):
                # `import gradcli.x.y` binds gradcli (the package); `import gradcli.x as m` binds the module
                self._add(node, alias.name, alias.asname or alias.name.partition(".")[0])

    def visit_ImportFrom(self, node):
        base = _resolve_from(self.path, node)
        if base is None:
            return
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            if sub in modules():
                self._add(node, sub, alias.asname or alias.name)
            else:
                self._add(node, base)

    def visit_Call(self, node):
        target = _dynamic_target(self.path, node)
        if target is not None:
            self._add(node, target)
        self.generic_visit(node)


@functools.cache
def imports_of(path: Path) -> tuple[Import, ...]:
    collector = _ImportCollector(path)
    collector.visit(tree_of(path))
    return tuple(collector.found)


def all_imports() -> list[Import]:
    return [imp for path in source_files() for imp in imports_of(path)]


def allowed_edge(importer: str, target: str) -> bool:
    a, b = layer_of(importer), layer_of(target)
    if a == b:
        return True
    if LAYER_RANKS[a] <= LAYER_RANKS[b]:
        return False
    return b != "io" or LAYER_RANKS[a] >= IO_USERS_FROM


# --------------------------------------------------------------------------- imports


def test_every_module_has_a_layer():
    missing = sorted({layer_of(m) for m in modules()} - LAYER_RANKS.keys())
    assert not missing, f"add these layers to LAYER_RANKS in {relative(Path(__file__))}: {missing}"


def test_allowed_edges_follow_the_ranks():
    assert allowed_edge("gradcli.ops.array", "gradcli.ops") and allowed_edge("gradcli.engine.memory", "gradcli.ir")
    assert allowed_edge("gradcli.engine.backends", "gradcli.io.files")
    assert allowed_edge("gradcli.io.files", "gradcli.limits")
    assert not allowed_edge("gradcli.ops", "gradcli.engine.evaluate")      # up
    assert allowed_edge("gradcli.language.lower", "gradcli.autodiff")  # in-program gradients append equations
    assert not allowed_edge("gradcli.autodiff", "gradcli.language.lower")
    assert not allowed_edge("gradcli.ir", "gradcli.io.files")              # io/ is for the engine and above
    assert not allowed_edge("gradcli.io.files", "gradcli.ops")              # and a leaf


def test_imports_go_down_the_layers():
    upward = [str(imp) for imp in all_imports()
              if not allowed_edge(module_name(ROOT / imp.file), imp.target)
              and (imp.file, imp.target) not in KNOWN_UPWARD]
    assert not upward, "imports that do not go down the layers (LAYER_RANKS):\n" + "\n".join(upward)


@pytest.mark.parametrize("file,target", [pytest.param(
    *key, marks=pytest.mark.xfail(strict=True, reason=why), id=f"{key[0]}->{key[1]}")
    for key, why in KNOWN_UPWARD.items()])
def test_known_upward_import_is_gone(file, target):
    still = [str(imp) for imp in imports_of(ROOT / file) if imp.target == target]
    assert not still or allowed_edge(module_name(ROOT / file), target), still


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (or a module importing
    itself), by Tarjan's algorithm, iteratively."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in graph.get(node, ()):
                        found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    graph: dict[str, set[str]] = {m: set() for m in modules()}
    for imp in all_imports():
        if not imp.in_function and imp.target in modules():
            graph[module_name(ROOT / imp.file)].add(imp.target)
    circles = _cycles(graph)
    assert not circles, f"modules that import each other at the top level: {circles}"


def _lazy_allowance(imp: Import):
    return next((key for key in LAZY_IMPORTS if fnmatch.fnmatchcase(imp.file, key[0])
                 and fnmatch.fnmatchcase(imp.target, key[1])), None)


def test_no_gradcli_import_inside_a_function_but_the_listed_ones():
    unlisted = sorted({(imp.file, imp.target): str(imp) for imp in all_imports()
                       if imp.in_function and _lazy_allowance(imp) is None}.items())
    assert not unlisted, ("imports of gradcli modules inside functions; import them at the top of the module, "
                          "or add (file, module) with the reason to LAZY_IMPORTS:\n"
                          + "\n".join(f"{key}  # {where}" for key, where in unlisted))


def test_every_lazy_import_allowance_is_used():
    used = {_lazy_allowance(imp) for imp in all_imports() if imp.in_function}
    stale = [key for key in LAZY_IMPORTS if key not in used]
    assert not stale, f"LAZY_IMPORTS entries that match no import any more (delete them): {stale}"


# --------------------------------------------------------------------------- ops names no library


def _reads_library(node) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "library") or (
        isinstance(node, ast.Name) and node.id == "library")


def _names_library(node) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in LIBRARIES
    return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and any(map(_names_library, node.elts))


def library_tests(tree: ast.Module, label: str) -> list[str]:
    """Comparisons that read a `library` or compare with a library's name (a namespace's
    `__name__` is the backend rule's, below)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_reads_library(o) or _names_library(o) for o in operands) and not any(map(_name_read, operands)):
                found.append((node.lineno, f"{label}:{node.lineno}: {ast.unparse(node)[:100]}"))
    return [hit for _, hit in sorted(found)]


def test_library_finder_sees_a_test():
    sample = ast.parse("a = call.library == 'torch'\nb = lib in ('tf', 'x')\nc = name == 'max'\n"
                       "d = xp.__name__ == 'numpy'\n")
    found = [hit.split(": ", 1)[1] for hit in library_tests(sample, "sample.py")]
    assert found == ["call.library == 'torch'", "lib in ('tf', 'x')"]


def test_ops_tests_no_library():
    found = [hit for path in source_files() if path.is_relative_to(PACKAGE / "ops")
             for hit in library_tests(tree_of(path), relative(path))]
    assert not found, f"{len(found)} library tests in ops/ (a spelling is its dialect's to resolve):\n" + "\n".join(
        found)


# --------------------------------------------------------------------------- no patching of other modules


def _root_name(node):
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _targets(node):
    if isinstance(node, (ast.Tuple, ast.List)):
        for element in node.elts:
            yield from _targets(element)
    elif isinstance(node, ast.Starred):
        yield from _targets(node.value)
    else:
        yield node


def module_patches(tree: ast.Module, label: str, module_names: set[str]) -> list[str]:
    """Assignments (and setattr/delattr) to an attribute of one of `module_names` (the names this
    file bound to gradcli modules by importing them), or of an attribute of theirs."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = [t for target in node.targets for t in _targets(target)]
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("setattr", "delattr") and node.args):
            targets = [ast.Attribute(value=node.args[0], attr="?")]
        else:
            continue
        if any(isinstance(t, ast.Attribute) and _root_name(t) in module_names for t in targets):
            found.append(f"{label}:{node.lineno}: {ast.unparse(node)[:100]}")
    return found


def test_patch_finder_sees_a_patch():
    sample = ast.parse("x = object()\ngraph.number_value = 1\ngraph.Graph.add, y = 2, 3\n"
                       "setattr(gradcli, 'a', 1)\nx.attr = 4\nops.OPS['a'] = 5\n")
    found = [hit.split(": ", 1)[1] for hit in module_patches(sample, "sample.py", {"graph", "gradcli"})]
    assert found == ["graph.number_value = 1", "graph.Graph.add, y = (2, 3)", "setattr(gradcli, 'a', 1)"]


def test_import_collector_sees_the_names_bound_to_modules():
    bound = {imp.bound for imp in imports_of(PACKAGE / "language" / "lower" / "subscripts.py") if imp.bound}
    assert "torch_dialect" in bound  # `from gradcli.language.dialects import ReadingError, torch as torch_dialect`


def test_no_module_assigns_another_modules_attributes():
    found = [hit for path in source_files() for hit in module_patches(
        tree_of(path), relative(path), {imp.bound for imp in imports_of(path) if imp.bound})]
    assert not found, "assignments to another module's attributes at run time:\n" + "\n".join(found)


# --------------------------------------------------------------------------- sizes


def _definitions(tree):
    """(kind, qualified name, node) of every class and function, nested ones included."""
    work = [("", tree)]
    while work:
        prefix, node = work.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                yield ("class" if isinstance(child, ast.ClassDef) else "function"), name, child
                work.append((name + ".", child))
            else:
                work.append((prefix, child))


def _lines(node) -> int:
    return node.end_lineno - node.lineno + 1  # from `def`/`class` (decorators not counted) to the end


LIMITS = {"module": MAX_MODULE_LINES, "class": MAX_CLASS_LINES, "function": MAX_FUNCTION_LINES}


@functools.cache
def sizes() -> dict[tuple[str, str, str], int]:
    found = {}
    for path in source_files():
        found[("module", relative(path), "")] = len(path.read_text(encoding="utf-8").splitlines())
        for kind, name, node in _definitions(tree_of(path)):
            found[(kind, relative(path), name)] = _lines(node)
    return found


def test_sizes_within_their_limits():
    over = [f"{kind} {file}{'::' + name if name else ''}: {n} lines (at most {LIMITS[kind]})"
            for (kind, file, name), n in sorted(sizes().items()) if n > LIMITS[kind]
            and (kind, file, name) not in OVERSIZE and (file, name) not in HOT_LOOPS]
    assert not over, "\n".join(over)


@pytest.mark.parametrize("kind,file,name", [pytest.param(
    *key, marks=pytest.mark.xfail(strict=True, reason=why), id=f"{key[0]} {key[1]}{'::' + key[2] if key[2] else ''}")
    for key, why in OVERSIZE.items()])
def test_oversize_today(kind, file, name):
    n = sizes().get((kind, file, name))
    assert n is None or n <= LIMITS[kind], f"{n} lines"


def test_hot_loops_exist():
    missing = [key for key in HOT_LOOPS if ("function", *key) not in sizes()]
    assert not missing, f"HOT_LOOPS entries naming no function any more (rename or delete them): {missing}"


@functools.cache
def workloads() -> tuple[str, ...]:
    for node in tree_of(ROOT / "benchmarks" / "run.py").body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "WORKLOADS" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    raise AssertionError("benchmarks/run.py defines no WORKLOADS")


def test_hot_loop_workloads_are_benchmarks():
    assert set(HOT_LOOPS.values()) <= set(workloads())


@pytest.mark.parametrize("file,name", [pytest.param(
    *key, id=f"{key[0]}::{key[1]}") for key in HOT_LOOPS])
def test_hot_loop_names_its_benchmark(file, name):
    node = next(node for kind, qualified, node in _definitions(tree_of(ROOT / file))
                if kind == "function" and qualified == name)
    wanted = f"benchmarks/run.py --only {HOT_LOOPS[file, name]}"
    assert wanted in (ast.get_docstring(node) or ""), f"the docstring of {name} does not say {wanted!r}"


# --------------------------------------------------------------------------- backends are asked


def _name_read(node) -> bool:
    """`x.__name__` or `getattr(x, "__name__", ...)`, x not `type(...)` (a class's name is not a backend's)."""
    if isinstance(node, ast.Attribute) and node.attr == "__name__":
        subject = node.value
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
          and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value == "__name__"):
        subject = node.args[0]
    else:
        return False
    return not (isinstance(subject, ast.Call) and isinstance(subject.func, ast.Name) and subject.func.id == "type")


def _text(node) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and bool(node.elts) and all(map(_text, node.elts))


def name_sniffs(tree: ast.Module, label: str) -> list[str]:
    """Tests of a namespace's __name__ against text: `xp.__name__ == "numpy"`, `.startswith(...)`,
    also through a name assigned from it (`name = getattr(xp, "__name__", "")`)."""
    holders = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and _name_read(node.value)
               for t in node.targets if isinstance(t, ast.Name)}

    def sniffed(node):
        return _name_read(node) or (isinstance(node, ast.Name) and node.id in holders)

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            hit = any(map(sniffed, operands)) and any(map(_text, operands))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            hit = node.func.attr in ("startswith", "endswith") and sniffed(node.func.value)
        else:
            continue
        if hit:
            found.append((node.lineno, f"{label}:{node.lineno}: {ast.unparse(node)[:100]}"))
    return [hit for _, hit in sorted(found)]


def test_sniff_finder_sees_a_sniff():
    sample = ast.parse("a = xp.__name__ == 'numpy'\nn = getattr(xp, '__name__', '')\nb = n in ('cupy',)\n"
                       "c = n.startswith('dask')\nd = type(e).__name__ == 'LinAlgError'\n"
                       "f = fn.__name__ != other\ng = __name__ == '__main__'\n")
    found = [hit.split(": ", 1)[1] for hit in name_sniffs(sample, "sample.py")]
    assert found == ["xp.__name__ == 'numpy'", "n in ('cupy',)", "n.startswith('dask')"]


def test_backends_are_asked_not_sniffed():
    found = [hit for path in source_files() if path != PACKAGE / "engine" / "backends.py"
             for hit in name_sniffs(tree_of(path), relative(path))]
    assert not found, "a namespace's name tested outside engine/backends.py:\n" + "\n".join(found)


# --------------------------------------------------------------------------- importing has no side effects

_PROBE = r"""
import gc, json, signal, sys
sys.argv = ["gradcli", "--help"]
def handlers():
    found = {}
    for s in signal.valid_signals():
        try:
            found[int(s)] = signal.getsignal(s)
        except (OSError, ValueError):
            pass
    return found
before, collecting = handlers(), gc.isenabled()
import gradcli
after = handlers()
changed = sorted(signal.Signals(s).name for s in before if after.get(s) is not before[s])
with open(REPORT, "w") as fh:
    json.dump({"gc_enabled": gc.isenabled(), "gc_was_enabled": collecting, "signals_changed": changed,
               "frozen": gc.get_freeze_count()}, fh)
"""


def test_importing_the_package_has_no_side_effects(tmp_path):
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not (k.endswith("_COMPLETE") or "TYPER" in k)}
    env.update(PYTHONPATH=str(ROOT), COLUMNS="100")  # wide enough for the kept --help text
    proc = subprocess.run([sys.executable, "-c", f"REPORT = {str(report)!r}\n" + _PROBE], capture_output=True,
                          env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b""), "importing gradcli printed or exited"
    assert json.loads(report.read_text()) == {"gc_enabled": True, "gc_was_enabled": True, "signals_changed": [],
                                              "frozen": 0}
