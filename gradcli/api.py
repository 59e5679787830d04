"""The library: parse -> graph -> evaluate -> differentiate, usable without the CLI.

    >>> import gradcli
    >>> r = gradcli.grad("y = sum(x * x)", wrt=["x"], feeds={"x": [1.0, 2.0]})
    >>> r.gradients["x"]
    array([2., 4.])
"""
from __future__ import annotations

import functools
import gc

import numpy as np

from .autodiff import blocked_at, gradients
from .diagnostics import Diagnostic, NumericsChecker
from .errors import GradcliError, OptionError, Source
from .evaluate import DTYPES, check_memory, default_memory_limit, run
from .graph import Graph, lower
from .ops import fmt_shape
from .parser import normalise, parse_program
from .records import NEW, ValueRecord
from . import syntax as ast


def _value_id(graph: Graph, name: str, option: str) -> int:
    """The value a name given in the argument `option` stands for (OptionError if none)."""
    try:
        return graph.value_id(name, "name for {option}")
    except GradcliError as err:
        raise OptionError(err.message, option, err.pos, err.source, err.note) from None


class Result(ValueRecord):
    _fields = ("outputs", "gradients", "diagnostics", "dtype", "graph", "jacobians", "hessians", "mixed_hessians")
    outputs: dict[str, np.ndarray]
    gradients: dict[str, np.ndarray | None]
    diagnostics: list[Diagnostic]
    dtype: str = "float64"
    graph: Graph | None = None
    jacobians: dict[str, np.ndarray | None]
    hessians: dict[str, np.ndarray | None]
    # d²Y/dX dZ of `hessian` with several inputs: {X: {Z: block shaped X.shape + Z.shape}}
    mixed_hessians: dict[str, dict[str, np.ndarray | None]]

    def __init__(self, outputs, gradients=NEW, diagnostics=NEW, dtype="float64", graph=None, jacobians=NEW,
                 hessians=NEW, mixed_hessians=NEW):
        self.outputs = outputs
        self.gradients = {} if gradients is NEW else gradients
        self.diagnostics = [] if diagnostics is NEW else diagnostics
        self.dtype = dtype
        self.graph = graph
        self.jacobians = {} if jacobians is NEW else jacobians
        self.hessians = {} if hessians is NEW else hessians
        self.mixed_hessians = {} if mixed_hessians is NEW else mixed_hessians

    def nonfinite(self) -> list[str]:
        """Names of outputs and gradients holding a NaN or an infinity (what --strict fails on)."""
        bad = [n for n, v in self.outputs.items() if not _all_finite(v)]
        bad += [f"d/d{n}" for n, v in self.gradients.items() if v is not None and not _all_finite(v)]
        return bad


def _all_finite(value) -> bool:
    """Whether every number is finite; a value written to a file as it was computed
    (gradcli.outputs.Stored) carries the answer, found in the same pass."""
    finite = getattr(value, "finite", None)
    return bool(finite) if finite is not None else bool(np.isfinite(value).all())


def _collector_paused(fn):
    """Run `fn` with Python's cyclic garbage collector paused. A program becomes millions of
    small objects (tokens, AST nodes, equations) with no reference cycles among them; the
    collector would rescan them again and again as they pile up: a fifth of a 100,000-term
    program's time, for nothing. Whatever cycles there are get collected afterwards."""
    @functools.wraps(fn)
    def paused(*args, **kwargs):
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()
    return paused


@_collector_paused
def compile_program(text: str, name: str = "<expr>", feeds: dict | None = None, call: str | None = None,
                    symbols: bool = False, max_memory: int | None = None) -> Graph:
    """Parse and lower a program; `feeds` maps input names to arrays. `call` is one more
    statement run after the program (`f(a, b)`: call a pasted function with these arguments);
    without it, a program that ends with a `def` calls that function on the inputs named as
    its parameters."""
    if call is not None:
        text = text.rstrip("\n") + "\n" + call
    source = Source(name, normalise(text))
    module = parse_program(source, max_memory or default_memory_limit())
    tail = None
    if call is not None:
        tail = module.statements.pop()
        if not isinstance(tail, (ast.ExprStmt, ast.Assign)):
            raise GradcliError("the call must be one expression, such as f(a, b)", tail.pos, source)
    return lower(module, source, {k: _as_real(v) for k, v in (feeds or {}).items()}, tail, symbols)


def _as_real(value) -> np.ndarray:
    arr = np.asarray(value)
    return arr if arr.dtype.kind == "f" and arr.dtype.itemsize >= 4 else arr.astype(np.float64)


def _check_options(dtype: str, unconnected: str = "none") -> None:
    if dtype not in DTYPES:
        raise GradcliError(f"unknown dtype '{dtype}': use float64 or float32")
    if unconnected not in ("none", "zero"):
        raise OptionError(f"{{option}} must be none or zero, not '{unconnected}'", "unconnected")


def _run(graph: Graph, fetch: dict[str, int], dtype: str, device: str,
         max_memory: int | None = None, text: bool = True, backend=None,
         overrides: dict | None = None, store=None, memory_checked: bool = False) -> tuple[dict, list[Diagnostic]]:
    """Evaluate `fetch` on the backend (`device`'s, or the one given). `store`, where given and
    the backend is lazy, writes the values instead of returning them (gradcli.outputs.ZarrStore):
    `store.write(key, value)` gets each value un-computed and returns its lazy write, a Dask
    array computed in the same pass as the values' checks, so a value larger than memory is
    written chunk by chunk and never gathered; `store.written(key, computed)` is what comes
    back in the value's place; a failed pass calls `store.failed(exc)`. On a backend that is
    not lazy the values come back as usual (to be saved whole)."""
    from .backends import backend as backend_named

    chosen = backend or backend_named(device)
    if store is not None and not chosen.lazy:
        store = None
    if not memory_checked:  # (shapes alone decide it: a prepared program is checked once)
        check_memory(graph, list(fetch.values()), dtype, max_memory, text=text, backend=chosen,
                     gathered=store is None)
    checker = NumericsChecker(graph, chosen, dtype)
    ids = list(dict.fromkeys(fetch.values()))
    with np.errstate(all="ignore"):
        values = run(graph, ids, dtype=dtype, backend=chosen, check=checker, overrides=overrides)
        if chosen.lazy:
            if store is not None:
                # the writes (each block written where it is made, its min, max and finiteness
                # kept) and the checks' reductions in ONE pass: nothing is gathered
                writes = {("store", k): store.write(k, values[j]) for k, j in fetch.items()}
                try:
                    computed = chosen.compute({**writes, **checker.requests})
                except BaseException as exc:
                    store.failed(exc)
                    raise
                checker.resolve(computed)
                host = {k: store.written(k, computed["store", k]) for k in fetch}
            else:
                # values, gradients and the checks' reductions in ONE pass
                computed = chosen.compute({**{("value", j): values[j] for j in ids}, **checker.requests})
                checker.resolve(computed)
                host = {k: computed["value", j] for k, j in fetch.items()}
        else:
            host = {k: np.asarray(chosen.to_host(values[j])) for k, j in fetch.items()}
    diagnostics = checker.finish(fetch)
    for message, pos in graph.warnings:
        diagnostics.insert(0, Diagnostic("warning", "unused_input", "input", message, None, pos))
    return host, diagnostics


def _backend(device: str, max_memory: int | None, chunks: int | None, scheduler: str | None):
    """The backend `device` names, with the options only a chunked one takes."""
    from .backends import backend

    if device == "dask":
        return backend("dask", chunk_bytes=chunks, scheduler=scheduler, max_memory=max_memory, progress=True)
    for option, given in (("chunks", chunks), ("scheduler", scheduler)):
        if given is not None:
            raise OptionError(f"{{option}} applies to --device dask only (this is --device {device})", option)
    return backend(device)


def _lazy_feeds(feeds: dict | None, chosen) -> tuple[dict | None, dict]:
    """Feeds for compiling, and the lazy ones apart: a file named for the backend to read
    (`FileRef`) is read by it (lazily on Dask); the graph gets a placeholder of the same shape
    that holds no memory, and the evaluation the real value (as an override of the input)."""
    from .backends import FileRef

    if not feeds:
        return feeds, {}
    out, lazy = {}, {}
    for name, value in feeds.items():
        if isinstance(value, FileRef):
            value = chosen.load(value.spec, value.label)
        if chosen.lazy and hasattr(value, "dask"):
            dtype = value.dtype if value.dtype.kind == "f" and value.dtype.itemsize >= 4 else np.dtype(np.float64)
            lazy[name] = value
            value = np.broadcast_to(np.zeros((), dtype=dtype), value.shape)
        out[name] = value
    return out, lazy


def _host_feeds(feeds: dict | None) -> dict | None:
    """Feeds as host arrays (what a check on the CPU of a lazily evaluated program reads)."""
    from .backends import FileRef, Backend

    if not feeds:
        return feeds
    out = {}
    for name, value in feeds.items():
        if isinstance(value, FileRef):
            value = Backend().load(value.spec, value.label)
        elif hasattr(value, "dask"):
            value = value.compute()
        out[name] = value
    return out


def _numbers(result: Result) -> dict:
    return {**{f"value {k}": v for k, v in result.outputs.items()},
            **{f"gradient {k}": v for k, v in result.gradients.items()}}


def _named_values(text: str, name: str, feeds: dict | None, dtype: str, max_memory: int | None) -> dict:
    """Every value the program names (not only its last): a rewrite must keep them all."""
    graph = compile_program(text, name, _host_feeds(feeds), max_memory=max_memory)
    fetch = {f"named {k}": v for k, v in graph.names.items() if not k.startswith("_")}
    host, _ = _run(graph, fetch, dtype, "cpu", max_memory, text=False)  # compared, not printed
    return host


def _prove_fixes(result: Result, call: str | None, rerun, named) -> None:
    """Give each diagnostic that has one a rewrite of the user's text proven on their inputs
    (gradcli.fixes): `rerun(text)` is the same command on the rewritten program, `named(text)`
    the values of every name the program assigns."""
    from .diagnostics import NONFINITE_KINDS

    wanted = [d for d in result.diagnostics if d.kind in NONFINITE_KINDS and d.value_id is not None]
    if not wanted:
        return
    from .fixes import find_fixes
    graph = result.graph
    text = graph.source.text
    limit = len(text) - len(call) - 1 if call is not None else None

    def numbers_of(rewritten: str):
        try:
            with np.errstate(all="ignore"):
                return {**_numbers(rerun(rewritten)), **named(rewritten)}
        except (GradcliError, MemoryError):
            return None

    proven = find_fixes(graph, [(d.value_id, d.kind) for d in wanted], lambda: numbers_of(text), numbers_of, limit)
    for d, fixes in zip(wanted, proven):
        if fixes:
            d.fix, d.more_fixes = fixes[0], fixes[1:]
            d.fix_json = d.fix.to_json(text)
            d.more_fixes_json = [f.to_json(text) for f in d.more_fixes]
            d.suggestion = "; ".join(f"replace {text[f.start:f.end]!r} at {':'.join(map(str, f.to_json(text)['start']))} "
                                     f"with {f.replacement!r}"
                                     + "".join(f" (or {a!r})" for a in f.alternatives) for f in fixes) + \
                " (verified on these inputs: finite where it was not, the same numbers elsewhere)"


class Fixed(ValueRecord):
    """`gradcli fix`: the program with every proven fix applied, the fixes applied (each a
    (diagnostic, Fix) pair), and the diagnostics of the fixed program that are left."""
    _fields = ("text", "original", "applied", "remaining", "graph", "nonfinite")
    text: str
    original: str
    applied: list
    remaining: list[Diagnostic]
    graph: Graph | None = None
    nonfinite: list[str]  # what is still not finite once fixed

    def __init__(self, text, original, applied, remaining, graph=None, nonfinite=NEW):
        self.text = text
        self.original = original
        self.applied = applied
        self.remaining = remaining
        self.graph = graph
        self.nonfinite = [] if nonfinite is NEW else nonfinite

    @property
    def outputs(self) -> dict:
        return {}  # fix reports a program, not values

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return self.remaining


def fix(text: str, *, call: str | None = None, name: str = "<expr>", feeds: dict | None = None,
        wrt: list[str] | None = None, of: list[str] | None = None, grad_ys: dict | None = None,
        dtype: str = "float64", max_memory: int | None = None) -> Fixed:
    """Apply every verified fix to the program (values, and the gradients in `wrt` when given).
    The fixes are applied one by one, each kept only if the program with it and the ones
    before it is still proven against the original numbers."""
    from .fixes import agrees, apply_all

    def command(program: str, fixes: bool = True) -> Result:
        if wrt:
            return grad(program, wrt=wrt, of=of, name=name, feeds=feeds, grad_ys=grad_ys, dtype=dtype,
                        max_memory=max_memory, fixes=fixes)
        return evaluate(program, name=name, feeds=feeds, dtype=dtype, max_memory=max_memory, fixes=fixes)

    def numbers_of(program: str) -> dict:
        with np.errstate(all="ignore"):
            return {**_numbers(command(program, fixes=False)), **_named_values(program, name, feeds, dtype, max_memory)}

    first = command(text if call is None else text.rstrip("\n") + "\n" + call)
    source = first.graph.source.text
    numbers = numbers_of(source)
    # a fix of a gradient first: where it and a fix of the value overlap (the where trap),
    # the one that keeps the value as written is the one wanted
    offered = sorted(((d, f) for d in first.diagnostics if d.fix is not None for f in [d.fix, *d.more_fixes]),
                     key=lambda pair: (pair[0].kind != "nonfinite_gradient", pair[1].start))
    applied, current = [], source
    for d, f in offered:
        trial = apply_all(source, [a[1] for a in applied] + [f])
        if trial == current:
            continue  # overlaps one already applied
        try:
            proven = agrees(numbers, numbers_of(trial))
        except GradcliError:
            proven = False
        if proven:
            applied.append((d, f))
            current = trial
    final = command(current, fixes=False) if applied else first
    remaining = [d for d in final.diagnostics if d.kind in _nonfinite_kinds()]
    if call is not None:  # the --call line is not part of the user's file
        current = current[:len(current) - len(call) - 1]
        source = source[:len(source) - len(call) - 1]
    return Fixed(current, source, applied, remaining, first.graph, final.nonfinite())


def _nonfinite_kinds():
    from .diagnostics import NONFINITE_KINDS
    return NONFINITE_KINDS


@_collector_paused
def evaluate(text: str, *, call: str | None = None, name: str = "<expr>", feeds: dict | None = None, prints: list[str] | None = None,
             dtype: str = "float64", device: str = "cpu", max_memory: int | None = None, fixes: bool = True,
             printed: bool = True, chunks: int | None = None, scheduler: str | None = None, store=None) -> Result:
    """The value of the last statement, or of each name in `prints`. With `fixes`, a
    diagnostic may carry a rewrite proven on these inputs (`Diagnostic.fix`). `printed`: the
    values will be rendered as text, which `max_memory` must hold too (False: saved to a file).
    `device="dask"` evaluates chunk by chunk (`chunks` bytes each; on the dask.distributed
    cluster at `scheduler`, "local" for one started here); `store`: see `_run`."""
    result = prepare_evaluate(text, call=call, name=name, feeds=feeds, prints=prints, dtype=dtype, device=device,
                              max_memory=max_memory, printed=printed, chunks=chunks, scheduler=scheduler,
                              store=store).result()
    if fixes:
        _prove_fixes(result, call, lambda rewritten: evaluate(
            rewritten, name=name, feeds=feeds, prints=prints, dtype=dtype, device=device,
            max_memory=max_memory, fixes=False, printed=printed, chunks=chunks, scheduler=scheduler),
            lambda rewritten: _named_values(rewritten, name, feeds, dtype, max_memory))
    return result


class Prepared:
    """A program compiled (and differentiated) for one command, not yet run: `result()` runs it,
    `result(overrides)` with some source equations' values given anew ({id: array}), as
    `evaluate.run` takes them. `--lines` runs one prepared program for many lines that differ
    only in such numbers (gradcli.lines)."""

    def __init__(self, graph: Graph, fetch: dict[str, int], dtype: str, backend, max_memory: int | None,
                 finish, printed: bool = True, overrides: dict | None = None, store=None):
        self.graph, self.fetch, self.dtype, self.backend, self.max_memory = graph, fetch, dtype, backend, max_memory
        self._finish = finish  # (host, diagnostics) -> Result
        self._printed, self._overrides, self._store = printed, overrides or {}, store
        self._memory_checked = False

    def result(self, overrides: dict | None = None) -> Result:
        given = {**self._overrides, **overrides} if overrides else (self._overrides or None)
        host, diagnostics = _run(self.graph, self.fetch, self.dtype, self.backend.name, self.max_memory,
                                 text=self._printed, backend=self.backend, overrides=given, store=self._store,
                                 memory_checked=self._memory_checked)
        self._memory_checked = True  # overrides keep every shape: the check would say the same
        return self._finish(host, diagnostics)


@_collector_paused
def prepare_evaluate(text: str, *, call: str | None = None, name: str = "<expr>", feeds: dict | None = None,
                     prints: list[str] | None = None, dtype: str = "float64", device: str = "cpu",
                     max_memory: int | None = None, printed: bool = True, chunks: int | None = None,
                     scheduler: str | None = None, store=None) -> Prepared:
    """`evaluate` up to running the program."""
    _check_options(dtype)
    chosen = _backend(device, max_memory, chunks, scheduler)
    compiled_feeds, lazy = _lazy_feeds(feeds, chosen)
    graph = compile_program(text, name, compiled_feeds, call, max_memory=max_memory)
    if prints:
        fetch = {p: _value_id(graph, p, "prints") for p in prints}
    else:
        fetch = {graph.result[0]: graph.result[1]}
    return Prepared(graph, fetch, dtype, chosen, max_memory,
                    lambda host, diagnostics: Result(host, {}, diagnostics, dtype, graph), printed,
                    _input_overrides(graph, lazy), _saved_as(store, {k: ("output", k) for k in fetch}, list(fetch)))


@_collector_paused
def grad(text: str, *, call: str | None = None, wrt: list[str], of: list[str] | None = None, name: str = "<expr>",
         feeds: dict | None = None, grad_ys: dict | None = None, unconnected: str = "none",
         dtype: str = "float64", device: str = "cpu", max_memory: int | None = None, fixes: bool = True,
         printed: bool = True, chunks: int | None = None, scheduler: str | None = None, store=None) -> Result:
    """d(sum of the `of` values)/d(each `wrt` name), as `tf.gradients(ys, xs, grad_ys)`. With
    `fixes`, a diagnostic may carry a rewrite proven on these inputs (`Diagnostic.fix`);
    `printed` as for `evaluate`. `device`, `chunks`, `scheduler`, `store`: as `evaluate`'s
    (each array written under the name gradcli.outputs.result_arrays gives it)."""
    result = prepare_grad(text, call=call, wrt=wrt, of=of, name=name, feeds=feeds, grad_ys=grad_ys,
                          unconnected=unconnected, dtype=dtype, device=device, max_memory=max_memory,
                          printed=printed, chunks=chunks, scheduler=scheduler, store=store).result()
    if fixes:
        _prove_fixes(result, call, lambda rewritten: grad(
            rewritten, wrt=wrt, of=of, name=name, feeds=feeds, grad_ys=grad_ys, unconnected=unconnected,
            dtype=dtype, device=device, max_memory=max_memory, fixes=False, printed=printed, chunks=chunks,
            scheduler=scheduler),
            lambda rewritten: _named_values(rewritten, name, feeds, dtype, max_memory))
    return result


@_collector_paused
def prepare_grad(text: str, *, call: str | None = None, wrt: list[str], of: list[str] | None = None,
                 name: str = "<expr>", feeds: dict | None = None, grad_ys: dict | None = None,
                 unconnected: str = "none", dtype: str = "float64", device: str = "cpu",
                 max_memory: int | None = None, printed: bool = True, chunks: int | None = None,
                 scheduler: str | None = None, store=None) -> Prepared:
    """`grad` up to running the program: compiled and differentiated."""
    _check_options(dtype, unconnected)
    if not wrt:
        raise OptionError("grad needs at least one {option} NAME", "wrt")
    chosen = _backend(device, max_memory, chunks, scheduler)
    compiled_feeds, lazy = _lazy_feeds(feeds, chosen)
    graph = compile_program(text, name, compiled_feeds, call, max_memory=max_memory)
    ys = of or [graph.result[0]]
    y_ids = [_value_id(graph, y, "of") for y in ys]
    x_ids = [_value_id(graph, x, "wrt") for x in wrt]
    seeds = []
    for y, y_id in zip(ys, y_ids):
        if grad_ys and y in grad_ys:
            value = np.asarray(grad_ys[y], dtype=np.float64)
            if value.shape != graph.shapes[y_id]:
                raise OptionError(f"{{option}} {y}: has shape {fmt_shape(value.shape)}, but {y} has shape "
                                  f"{fmt_shape(graph.shapes[y_id])}; the upstream gradient must match it exactly",
                                  "grad_ys")
            seeds.append(graph.add_input(f"grad_ys:{y}", value, label=f"grad_ys {y}"))
        else:
            seeds.append(None)
    for y in grad_ys or {}:
        if y not in ys:
            raise OptionError(f"{{option}} {y}: '{y}' is not a differentiated output (those are {', '.join(ys)})",
                              "grad_ys")
    names = {v: k for k, v in graph.names.items()}
    grad_ids = gradients(graph, y_ids, x_ids, seeds, names)
    fetch = dict(zip(ys, y_ids))
    grad_fetch = {f"\0{x}": g for x, g in zip(wrt, grad_ids) if g is not None}

    def finish(host, diagnostics):
        outputs = {k: host.get(k) for k in fetch}  # (nothing comes back where `store` wrote it)
        result_grads: dict[str, np.ndarray | None] = {}
        for x, x_id, g in zip(wrt, x_ids, grad_ids):
            if g is not None:
                result_grads[x] = host.get(f"\0{x}")
            elif unconnected == "zero":
                result_grads[x] = np.zeros(graph.shapes[x_id], dtype=dtype)
            else:
                result_grads[x] = None
        for d in diagnostics:
            d.reaches = [r.replace("\0", "d/d") for r in d.reaches]
        for x, x_id, g in zip(wrt, x_ids, grad_ids):
            if g is None:
                diagnostics.append(_unconnected(graph, y_ids, ys, x, x_id))
        return Result(outputs, result_grads, diagnostics, dtype, graph)

    saved_as = {**{y: ("output", y) for y in fetch}, **{f"\0{x}": ("gradient", x) for x in wrt}}
    return Prepared(graph, {**fetch, **grad_fetch}, dtype, chosen, max_memory, finish, printed,
                    _input_overrides(graph, lazy), _saved_as(store, saved_as, ys, wrt))


class _StoredAs:
    """A store (see `_run`) given each value under the name it is saved under."""

    def __init__(self, store, names: dict[str, str]):
        self.store, self.names = store, names

    def write(self, key, value):
        return self.store.write(self.names[key], value)

    def written(self, key, computed):
        return self.store.written(self.names[key], computed)

    def failed(self, exc):
        self.store.failed(exc)


def _saved_as(store, kinds: dict[str, tuple], outputs: list[str], gradients: list[str] = ()):
    """`store` keyed by the fetched values' keys, each array under the name `result_arrays`
    gives it in the finished result (`kinds`: fetch key -> what it is, as `array_names` has it)."""
    if store is None:
        return None
    from .outputs import array_names

    names = array_names(outputs, gradients)
    return _StoredAs(store, {k: names[kind] for k, kind in kinds.items()})


def _input_overrides(graph: Graph, lazy: dict) -> dict | None:
    """The lazy feeds as the values of the graph's inputs they stand for."""
    return {graph.inputs[n]: v for n, v in lazy.items() if n in graph.inputs} or None


def _unconnected(graph: Graph, y_ids: list[int], ys: list[str], x: str, x_id: int) -> Diagnostic:
    """Why x has no gradient: no path to the outputs, or every path is cut (and where)."""
    cuts = blocked_at(graph, y_ids, x_id)
    targets = " + ".join(ys)
    if cuts is None:
        return Diagnostic("info", "unconnected", "grad", f"{x} has no gradient: {targets} does not depend on {x}",
                          None, graph.equations[x_id].pos)
    where = ", ".join(f"{graph.equations[c].label} at {graph.equations[c].pos}" for c in cuts[:5])
    more = f" and {len(cuts) - 5} more" if len(cuts) > 5 else ""
    first = graph.equations[cuts[0]]
    return Diagnostic("info", "unconnected", first.label,
                      f"{x} has no gradient: every path from {x} to {targets} passes through an operation "
                      f"that passes no gradient: {where}{more}", None, first.pos, first.stack)


def _targets(graph: Graph, of: list[str] | None, wrt: list[str]) -> tuple[list[str], list[int], list[int]]:
    if not wrt:
        raise OptionError("give at least one {option} NAME", "wrt")
    ys = of or [graph.result[0]]
    return ys, [_value_id(graph, y, "of") for y in ys], [_value_id(graph, x, "wrt") for x in wrt]


def _fill_unconnected(graph, wrt, x_ids, blocks, unconnected, shape_of):
    out = {}
    for x, x_id, block in zip(wrt, x_ids, blocks):
        if block is None and unconnected == "zero":
            block = np.zeros(shape_of(x_id))
        out[x] = block
    return out


@_collector_paused
def jacobian(text: str, *, call: str | None = None, of: str | None = None, wrt: list[str], name: str = "<expr>",
             feeds: dict | None = None, unconnected: str = "none", max_memory: int | None = None,
             printed: bool = True) -> Result:
    """The full Jacobian dY/dX of each X, shaped Y.shape + X.shape (float64); Y defaults
    to the last statement. `printed` as for `evaluate`."""
    from .insight import jacobian as jacobian_blocks

    _check_options("float64", unconnected)
    graph = compile_program(text, name, feeds, call, max_memory=max_memory)
    ys, (y,), x_ids = _targets(graph, [of] if of else None, wrt)
    host, diagnostics = _run(graph, {ys[0]: y}, "float64", "cpu", max_memory, text=printed)
    blocks = jacobian_blocks(graph, y, x_ids, max_memory, text=printed)
    jac = _fill_unconnected(graph, wrt, x_ids, blocks, unconnected, lambda x: graph.shapes[y] + graph.shapes[x])
    return Result(host, {}, diagnostics, "float64", graph, jacobians=jac)


@_collector_paused
def hessian(text: str, *, call: str | None = None, of: str | None = None, wrt: list[str], name: str = "<expr>",
            feeds: dict | None = None, unconnected: str = "none", max_memory: int | None = None,
            printed: bool = True) -> Result:
    """The Hessian block d²Y/dX² of each X (Y a scalar), shaped X.shape + X.shape (float64).
    `printed` as for `evaluate`."""
    from .insight import hessian as hessian_blocks

    _check_options("float64", unconnected)
    graph = compile_program(text, name, feeds, call, max_memory=max_memory)
    ys, (y,), x_ids = _targets(graph, [of] if of else None, wrt)
    host, diagnostics = _run(graph, {ys[0]: y}, "float64", "cpu", max_memory, text=printed)
    blocks, mixed_blocks = hessian_blocks(graph, y, x_ids, max_memory, text=printed)
    hes = _fill_unconnected(graph, wrt, x_ids, blocks, unconnected, lambda x: graph.shapes[x] * 2)
    mixed = {}
    for i, (a, xa) in enumerate(zip(wrt, x_ids)):
        others = [(j, b, xb) for j, (b, xb) in enumerate(zip(wrt, x_ids)) if j != i]
        if others:
            row = _fill_unconnected(graph, [b for _, b, _ in others], [xb for _, _, xb in others],
                                    [mixed_blocks[i, j] for j, _, _ in others], unconnected,
                                    lambda xb: graph.shapes[xa] + graph.shapes[xb])
            mixed[a] = row
    return Result(host, {}, diagnostics, "float64", graph, hessians=hes, mixed_hessians=mixed)


@_collector_paused
def check(text: str, *, call: str | None = None, wrt: list[str], of: list[str] | None = None, name: str = "<expr>",
          feeds: dict | None = None, eps: float = 1e-6, rtol: float = 1e-5, atol: float = 1e-8,
          max_memory: int | None = None):
    """Reverse-mode gradients against float64 central finite differences, with blame."""
    from .insight import check as check_gradients

    if not eps > 0:
        raise OptionError(f"{{option}} must be positive, not {eps:g}", "eps")
    for option, tolerance in (("rtol", rtol), ("atol", atol)):
        if not tolerance >= 0:
            raise OptionError(f"{{option}} must not be negative, not {tolerance:g}", option)
    graph = compile_program(text, name, feeds, call, max_memory=max_memory)
    ys, y_ids, x_ids = _targets(graph, of, wrt)
    # the forward program (run twice per difference) and the gradients, before anything runs;
    # the gradient equations built here are the ones the check reuses
    grads = [g for g in gradients(graph, y_ids, x_ids) if g is not None]
    check_memory(graph, y_ids + grads, "float64", max_memory, text=False)
    result = check_gradients(graph, y_ids, dict(zip(wrt, x_ids)), eps=eps, rtol=rtol, atol=atol)
    fetch = dict(zip(ys, y_ids))
    if any(r.reason for r in result.reports.values()):
        # where a gradient is not finite, the numerical diagnostics say where it first was not
        fetch |= {f"d/d{n}": g for n, g in result.gradient_ids.items()}
    host, found = _run(graph, fetch, "float64", "cpu", max_memory)
    if any(r.reason for r in result.reports.values()):
        result.diagnostics[:0] = found
    result.graph = graph
    result.outputs = {y: host[y] for y in ys}  # the values checked, as every command reports them
    result.dtype = "float64"
    return result


class Derivation(ValueRecord):
    """`derive`'s answer: the program that computes d(sum of `of`)/d(`wrt`), and what it is of."""
    _fields = ("program", "of", "wrt", "name", "graph", "outputs", "diagnostics", "dtype")
    program: str
    of: list[str]
    wrt: str
    name: str  # the name the program gives the gradient
    graph: Graph
    outputs: dict  # derive evaluates nothing
    diagnostics: list[Diagnostic]
    dtype: str = "float64"

    def __init__(self, program, of, wrt, name, graph, outputs=NEW, diagnostics=NEW, dtype="float64"):
        self.program = program
        self.of = of
        self.wrt = wrt
        self.name = name
        self.graph = graph
        self.outputs = {} if outputs is NEW else outputs
        self.diagnostics = [] if diagnostics is NEW else diagnostics
        self.dtype = dtype


def derive(text: str, **kwargs) -> str:
    """The gradient d(sum of `of`)/d(`wrt`) as a program in gradcli's own language, which
    evaluates (with the same inputs) to the gradient (`derivation` with the program alone)."""
    return derivation(text, **kwargs).program


@_collector_paused
def derivation(text: str, *, call: str | None = None, wrt: str, of: list[str] | None = None, name: str = "<expr>",
               feeds: dict | None = None, max_memory: int | None = None) -> Derivation:
    """The gradient d(sum of `of`)/d(`wrt`) as a program in gradcli's own language, with what
    it is of."""
    from .printer import Printer

    graph = compile_program(text, name, feeds, call, symbols=True, max_memory=max_memory)
    ys, y_ids, (x,) = _targets(graph, of, [wrt])
    (g,) = gradients(graph, y_ids, [x])
    target = "+".join(ys)
    root = f"d{'_'.join(ys)}_d{wrt}" if len(ys) < 4 else f"grad_{wrt}"
    header = f"d({target})/d{wrt} of {name}, as a gradcli program (evaluate it with the same inputs)"
    if g is not None and all(graph.shapes[i] is not None for i in range(len(graph.shapes))):
        check_memory(graph, [g], "float64", max_memory, text=False)  # folding evaluates constant parts
    printer = Printer(graph, set(graph.names) | {root})
    if g is None:
        g = graph.add_constant(np.zeros(graph.shapes[x]))
        header += f"; {target} does not depend on {wrt}"
    return Derivation(printer.program({root: g}, header), list(ys), wrt, root, graph)


class GraphView(ValueRecord):
    """The evaluated program, for `gradcli graph`: nodes the output needs, their values,
    and (with wrt) each node's gradient d(output)/d(node)."""
    _fields = ("graph", "root", "nodes", "values", "gradients", "nonfinite", "diagnostics")
    graph: Graph
    root: int
    nodes: list[int]
    values: dict[int, np.ndarray]
    gradients: dict[int, np.ndarray]
    nonfinite: set[int]
    diagnostics: list[Diagnostic]

    def __init__(self, graph, root, nodes, values, gradients, nonfinite, diagnostics):
        self.graph = graph
        self.root = root
        self.nodes = nodes
        self.values = values
        self.gradients = gradients
        self.nonfinite = nonfinite
        self.diagnostics = diagnostics


@_collector_paused
def graph_view(text: str, *, call: str | None = None, of: str | None = None, wrt: list[str] | None = None, name: str = "<expr>",
               feeds: dict | None = None, max_memory: int | None = None) -> GraphView:
    from .autodiff import depends_on
    from .evaluate import needed_equations

    graph = compile_program(text, name, feeds, call, max_memory=max_memory)
    y = _value_id(graph, of, "of") if of else graph.result[1]
    x_ids = [_value_id(graph, x, "wrt") for x in wrt or []]
    nodes = needed_equations(graph, [y])
    cotangents: dict[int, int] = {}
    if x_ids:
        reach = depends_on(graph, x_ids, y)
        on_path = [i for i in nodes if reach[i]]
        for i, g in zip(on_path, gradients(graph, [y], on_path)):
            if g is not None:
                cotangents[i] = g
    fetch = {f"v{i}": i for i in nodes} | {f"g{i}": g for i, g in cotangents.items()}
    host, diagnostics = _run(graph, fetch, "float64", "cpu", max_memory)
    values = {i: host[f"v{i}"] for i in nodes}
    grads = {i: host[f"g{i}"] for i in cotangents}
    # what a diagnostic reaches, in the user's words: the names the program gave its values
    # (and their gradients), not the keys the values were fetched by
    y_name = graph.value_names.get(y, "y")
    shown = {f"v{i}": graph.value_names[i] for i in nodes if i in graph.value_names}
    shown |= {f"g{i}": f"d{y_name}/d{graph.value_names[i]}" for i in cotangents if i in graph.value_names}
    for d in diagnostics:
        d.reaches = list(dict.fromkeys(shown[r] for r in d.reaches if r in shown))
    nonfinite = {i for i, v in values.items() if not np.isfinite(v).all()}
    return GraphView(graph, y, nodes, values, grads, nonfinite, diagnostics)


# --------------------------------------------------------------------------- plot

class Curve(ValueRecord):
    """`plot`'s numbers: the value of `of` and its derivatives (first, and second with order 2)
    with respect to `wrt` (an input, or one element `x[i]` of one) at each of `xs`, the others
    held at their given values. `marked[k]` says why point k is marked ("not finite", "tie",
    "kink"); `diagnostics` are those that explain the marks, each saying at which points."""
    _fields = ("of", "wrt", "xs", "values", "derivatives", "marked", "diagnostics", "vectorised", "graph", "dtype")
    of: str
    wrt: str
    xs: np.ndarray
    values: np.ndarray
    derivatives: list[np.ndarray]
    marked: dict[int, list[str]]
    diagnostics: list[Diagnostic]
    vectorised: bool  # all points in one pass (the program is elementwise in `wrt`)
    graph: Graph
    dtype: str = "float64"

    def __init__(self, of, wrt, xs, values, derivatives, marked, diagnostics, vectorised, graph, dtype="float64"):
        self.of = of
        self.wrt = wrt
        self.xs = xs
        self.values = values
        self.derivatives = derivatives
        self.marked = marked
        self.diagnostics = diagnostics
        self.vectorised = vectorised
        self.graph = graph
        self.dtype = dtype

    @property
    def outputs(self) -> dict:
        return {self.of: self.values}


_MARKING = ("tie", "kink")


def _element(wrt: str) -> tuple[str, tuple[int, ...] | None]:
    """`x` or `x[2]` / `x[1, 0]`: the input's name and the element's index."""
    import re

    m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*(?:\[\s*(-?\d+(?:\s*,\s*-?\d+)*)\s*,?\s*\])?\s*", wrt)
    if m is None:
        raise OptionError(f"{{option}} '{wrt}' is not a name or an element such as x[2]", "wrt")
    return m.group(1), None if m.group(2) is None else tuple(int(k) for k in m.group(2).split(","))


@_collector_paused
def curve(text: str, *, wrt: str, low: float, high: float, points: int = 200, of: str | None = None,
          order: int = 1, call: str | None = None, name: str = "<expr>", feeds: dict | None = None,
          max_memory: int | None = None) -> Curve:
    """The value of the scalar `of` and its derivatives with respect to `wrt` at `points` evenly
    spaced points from `low` to `high`: in one vectorised pass where every operation between
    `wrt` and `of` is elementwise and `wrt` a scalar, else one run per point."""
    from .autodiff import depends_on
    from .evaluate import needed_equations

    if order not in (1, 2):
        raise OptionError(f"{{option}} must be 1 or 2, not {order}", "order")
    if not 2 <= points <= 100_000:
        raise OptionError(f"{{option}} must be from 2 to 100000, not {points}", "points")
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise OptionError(f"{{option}} must go from a finite low to a higher finite high, not {low:g}:{high:g}",
                          "range")
    base, index = _element(wrt)
    try:
        graph = compile_program(text, name, feeds, call)
    except GradcliError:
        if index is not None or base in (feeds or {}):
            raise
        # a scalar input needs no value: it is given one at every point (any error is the program's)
        feeds = {**(feeds or {}), base: float(low)}
        graph = compile_program(text, name, feeds, call)
    (of_name,), (y,), (x,) = _targets(graph, [of] if of else None, [base])
    if graph.shapes[y] != ():
        raise OptionError(f"{{option}} {of_name} has shape {fmt_shape(graph.shapes[y])}: plot draws a scalar "
                          f"(sum it, or pick an element)", "of")
    if graph.equations[x].op.name != "input":
        raise OptionError(f"{{option}} {base} is computed by the program: plot varies an input", "wrt")
    shape = graph.shapes[x]
    if index is None and shape != ():
        raise OptionError(f"{{option}} {base} has shape {fmt_shape(shape)}: name one element, such as {base}[0]",
                          "wrt")
    if index is not None and (len(index) != len(shape) or not all(-n <= k < n for k, n in zip(index, shape))):
        raise OptionError(f"{{option}} {wrt.strip()}: no such element of {base}, shaped {fmt_shape(shape)}", "wrt")
    from .plotting import evenly_spaced
    xs = evenly_spaced(low, high, points)  # (HIGH - LOW may overflow: -1e308:1e308)
    reach = depends_on(graph, [x], y)
    elementwise = index is None and all(graph.equations[i].op.elementwise or not reach[i] or i == x
                                        for i in needed_equations(graph, [y]))
    found = None
    if elementwise:
        found = _curve_at_once(text, name, feeds, call, base, of_name, xs, order, max_memory)
    vectorised = found is not None
    if found is None:
        found = _curve_by_point(graph, y, x, index, xs, order, max_memory)
    values, derivatives, marked, diagnostics = found
    return Curve(of_name, wrt.strip(), xs, values, derivatives, marked, diagnostics, vectorised, graph)


def _curve_at_once(text, name, feeds, call, base, of_name, xs, order, max_memory):
    """All points in one run, `base` fed as the vector of points (None where a tie or a kink
    must be placed at its point, which one run cannot say)."""
    graph = compile_program(text, name, {**(feeds or {}), base: xs}, call)
    y, x = graph.names[of_name], graph.names[base]
    ids = [y]
    for _ in range(order):
        (g,) = gradients(graph, [ids[-1]], [x])
        if g is None:
            g = graph.add_constant(np.zeros(len(xs)))
        ids.append(g)
    host, diagnostics = _run(graph, {f"\0{k}": i for k, i in enumerate(ids)}, "float64", "cpu", max_memory)
    if any(d.kind in _MARKING for d in diagnostics):
        return None
    arrays = [np.broadcast_to(host[f"\0{k}"], xs.shape).astype(np.float64) for k in range(len(ids))]
    marked = {k: ["not finite"] for k in range(len(xs)) if not all(np.isfinite(a[k]) for a in arrays)}
    for d in diagnostics:
        d.reaches = [_curve_name(r, of_name, base) for r in d.reaches]
        _say_where(d, base, [xs[k] for k in marked], "the marked points are at")
    return arrays[0], arrays[1:], marked, diagnostics


def _curve_by_point(graph, y, x, index, xs, order, max_memory):
    """One run per point on the program as compiled; the derivatives by reverse mode (the second
    as the gradient of the first along the element's direction)."""
    from .evaluate import run

    shape = graph.shapes[x]
    base_value = np.array(graph.equations[x].params["value"], dtype=np.float64)
    direction = None
    if index is not None:
        onehot = np.zeros(shape)
        onehot[index] = 1.0
        direction = graph.add_input("plot:direction", onehot)
    ids = [y]
    for k in range(order):
        seeds = [direction] if (k > 0 and direction is not None) else None
        (g,) = gradients(graph, [ids[-1]], [x], seeds)
        if g is None:
            g = graph.add_constant(np.zeros(shape))
        ids.append(g)
    check_memory(graph, ids, "float64", max_memory)
    columns = [np.empty(len(xs)) for _ in ids]
    marked: dict[int, list[str]] = {}
    explained: dict[tuple, tuple[Diagnostic, list[float]]] = {}
    names = {f"\0{k}": i for k, i in enumerate(ids)}
    for k, point in enumerate(xs):
        value = base_value.copy()
        value[index if index is not None else ()] = point
        checker = NumericsChecker(graph, np, "float64")
        with np.errstate(all="ignore"):
            out = run(graph, ids, overrides={x: value}, check=checker)
        for c, i in enumerate(ids):
            v = np.asarray(out[i], dtype=np.float64)
            columns[c][k] = v[index] if (c > 0 and index is not None) else v
        why = [] if all(np.isfinite(col[k]) for col in columns) else ["not finite"]
        for d in checker.finish(names):
            if d.kind in _MARKING and d.kind not in why:
                why.append(d.kind)
            key = (d.kind, d.op, d.pos.line if d.pos else None, d.pos.column if d.pos else None)
            at = explained.setdefault(key, (d, []))[1]
            if not at or at[-1] != point:  # a diagnostic is found once per point
                at.append(point)
        if why:
            marked[k] = why
    base_name = graph.equations[x].params["name"]
    diagnostics = []
    for d, at in explained.values():
        d.reaches = [_curve_name(r, graph.value_names.get(y, "y"), base_name) for r in d.reaches]
        _say_where(d, base_name, at)
        diagnostics.append(d)
    return columns[0], columns[1:], marked, diagnostics


def _curve_name(key: str, of: str, wrt: str) -> str:
    k = int(key[1:])
    return of if k == 0 else f"d{'²' if k == 2 else ''}{of}/d{wrt}{'²' if k == 2 else ''}"


def _say_where(d: Diagnostic, wrt: str, at: list[float], where: str = "at") -> None:
    if at:
        shown = ", ".join(f"{v:g}" for v in at[:5]) + (f" and {len(at) - 5} more" if len(at) > 5 else "")
        d.message += f" (plot: {where} {wrt} = {shown})"
