"""The library: a program compiled once into a `Program`, then asked what the commands answer,
how it runs given once as `RunOptions`.

    >>> import gradcli
    >>> program = gradcli.compile("y = sum(x * x)", feeds={"x": [1.0, 2.0]})
    >>> program.grad(["x"]).gradients["x"]
    array([2., 4.])
"""
from __future__ import annotations

import functools
import math
import gc

import numpy as np

from gradcli.autodiff import depends_on, gradients
from gradcli.numerics.diagnostics import NONFINITE_KINDS, Diagnostic, NumericsChecker, unconnected_diagnostic
from gradcli.errors import GradcliError, OptionError, Source
from gradcli.engine.evaluate import needed_equations, run
from gradcli.dtypes import check as check_dtype
from gradcli.engine.memory import check_memory
from gradcli.limits import default_memory_limit
from gradcli.ir import Graph, ShapeOnly
from gradcli.language.lower import lower
from gradcli.ops import fmt_shape, scalar as numbers
from gradcli.language.parser import normalise, parse_program
from gradcli.records import ValueRecord
from gradcli.language import syntax as ast
from gradcli.engine.backends import BACKENDS, Backend, FileRef, backend as backend_named


class _Answer(ValueRecord):
    """A command's answer: made from its `_fields` in order, positionally or by keyword; a field
    not given takes its default in `_defaults` (an empty dict or list is made anew each time)."""
    _defaults: dict = {}

    def __init__(self, *args, **kwargs):
        given = dict(zip(self._fields, args), **kwargs)
        if len(args) > len(self._fields) or not given.keys() <= set(self._fields):
            raise TypeError(f"{type(self).__name__} takes {', '.join(self._fields)}")
        for field in self._fields:
            value = given[field] if field in given else self._defaults[field]
            setattr(self, field, type(value)() if field not in given and type(value) in (dict, list) else value)


class Result(_Answer):
    """`outputs` (name -> array), `gradients` (name -> array, None where unconnected),
    `diagnostics`, `dtype`, `graph`, `jacobians`, `hessians`, `mixed_hessians` (d²Y/dX dZ of `hessian` with
    several inputs: {X: {Z: block shaped X.shape + Z.shape}}) and `mode`: how they were computed (jacobians.py)."""
    _fields = ("outputs", "gradients", "diagnostics", "dtype", "graph", "jacobians", "hessians", "mixed_hessians", "mode")
    _defaults = {"gradients": {}, "diagnostics": [], "dtype": "float64", "graph": None, "jacobians": {},
                 "hessians": {}, "mixed_hessians": {}, "mode": None}

    def nonfinite(self) -> list[str]:
        """Names of outputs and gradients holding a NaN or an infinity (what --strict fails on)."""
        bad = [n for n, v in self.outputs.items() if v is not None and not _all_finite(v)]  # (None: `print(x.grad)`)
        bad += [f"d/d{n}" for n, v in self.gradients.items() if v is not None and not _all_finite(v)]
        return bad


def _all_finite(value) -> bool:
    """Whether every number is finite; a value written to a file as it was computed
    (gradcli.io.outputs.Stored) carries the answer, found in the same pass."""
    finite = getattr(value, "finite", None)
    return bool(finite) if finite is not None else bool(np.isfinite(value).all())


class Fixed(_Answer):
    """`gradcli fix`: the program with every proven fix applied (`text`), the fixes applied
    (each a (diagnostic, Fix) pair), the diagnostics of the fixed program that are left, what
    is still not finite once fixed, `not_fixed` ((diagnostic, why no fix is proven for it)
    pairs) and `raw`, the program as given (its line ends, its last line: what a patch fits)."""
    _fields = ("text", "original", "applied", "remaining", "graph", "nonfinite", "not_fixed", "raw")
    _defaults = {"graph": None, "nonfinite": [], "not_fixed": [], "raw": None}
    outputs = property(lambda self: {}, doc="fix reports a program, not values")
    diagnostics = property(lambda self: self.remaining)


class Derivation(_Answer):
    """`derive`'s answer: the `program` that computes d(sum of `of`)/d(`wrt`), the `name` it
    gives the gradient, what it is of; it evaluates nothing."""
    _fields = ("program", "of", "wrt", "name", "graph", "outputs", "diagnostics", "dtype")
    _defaults = {"outputs": {}, "diagnostics": [], "dtype": "float64"}


class GraphView(_Answer):
    """The evaluated program, for `gradcli graph`: the `nodes` the output (`root`) needs, their
    `values`, and (with wrt) each node's gradient d(output)/d(node); which are `nonfinite`."""
    _fields = ("graph", "root", "nodes", "values", "gradients", "nonfinite", "diagnostics")


class Curve(_Answer):
    """`plot`'s numbers: the value of `of` and its derivatives (first, and second with order 2)
    with respect to `wrt` (an input, or one element `x[i]` of one) at each of `xs`, the others
    held at their given values. `marked[k]` says why point k is marked ("not finite", "tie",
    "kink"); `diagnostics` are those that explain the marks, each saying at which points;
    `vectorised`: all points in one pass (the program is elementwise in `wrt`)."""
    _fields = ("of", "wrt", "xs", "values", "derivatives", "marked", "diagnostics", "vectorised", "graph", "dtype")
    _defaults = {"dtype": "float64"}
    outputs = property(lambda self: {self.of: self.values})


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


def _as_real(value) -> np.ndarray | ShapeOnly:
    if isinstance(value, ShapeOnly) or type(value) is float and numbers.numbers_only():
        return value  # a stand-in (Dask), a shape alone (derive, graph), a number (gradcli.ops.scalar)
    arr = np.asarray(value)
    return arr if arr.dtype.kind == "f" and arr.dtype.itemsize >= 4 else arr.astype(np.float64)


class RunOptions(ValueRecord):
    """How a program runs: `dtype` (gradcli.dtypes.NAMES; `accumulate`: where a half type's sums do, float32
    or same); `device` cpu, cuda or dask; `max_memory` in bytes (None: gradcli's default); `chunks` (bytes a
    chunk) and `scheduler` (dask.distributed's address, "local" for one started here) for dask only; `store`:
    where values are written as computed (`_run`); `printed`: the values will be rendered as text, which
    `max_memory` must hold too (False: saved to a file). Checked when made, fixed once made."""
    __slots__ = _fields = ("dtype", "device", "max_memory", "chunks", "scheduler", "store", "printed", "accumulate")

    def __init__(self, dtype: str = "float64", device: str = "cpu", max_memory: int | None = None, chunks: int | None = None,
                 scheduler: str | None = None, store=None, printed: bool = True, accumulate: str = "float32"):
        check_dtype(dtype, device, accumulate)
        for option, given in (("chunks", chunks), ("scheduler", scheduler)):
            if given is not None and device != "dask":
                raise OptionError(f"{{option}} applies to --device dask only (this is --device {device})", option)
        if device not in BACKENDS:
            raise GradcliError(f"unknown device '{device}': use {', '.join(BACKENDS)}")
        for field, value in zip(self._fields, (dtype, device, max_memory, chunks, scheduler, store, printed, accumulate)):
            object.__setattr__(self, field, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"RunOptions are fixed once made: use .replace({name}=...)")

    def replace(self, **changes) -> RunOptions:
        return RunOptions(**{**{field: getattr(self, field) for field in self._fields}, **changes})


def _backend(options: RunOptions):
    """The backend the options' device names, with the options only a chunked one takes."""
    if options.device == "dask":
        return backend_named("dask", chunk_bytes=options.chunks, scheduler=options.scheduler,
                             max_memory=options.max_memory, progress=True)
    return backend_named(options.device)


def _check_unconnected(unconnected: str) -> None:
    if unconnected not in ("none", "zero"):
        raise OptionError(f"{{option}} must be none or zero, not '{unconnected}'", "unconnected")


def _names(given) -> list[str]:
    """Names given as a list, as one name, or as None."""
    return [given] if isinstance(given, str) else list(given or [])


def _owned(feeds: dict | None) -> dict | None:
    """Feeds a Program keeps: its own copy of each array (one changed by its owner later would
    change the numbers, and not what was decided while the program was read)."""
    return feeds and {k: v.copy() if type(v) is not float and isinstance(v, np.ndarray) else v for k, v in feeds.items()}


def _run(graph: Graph, fetch: dict[str, int], dtype: str, device: str, max_memory: int | None = None,
         text: bool = True, backend=None, overrides: dict | None = None, store=None, memory_checked: bool = False,
         accumulate: str = "float32") -> tuple[dict, list[Diagnostic]]:
    """Evaluate `fetch` on the backend (`device`'s, or the one given). `store`, where given and
    the backend is lazy, writes the values instead of returning them (gradcli.io.outputs.ZarrStore):
    `store.write(key, value)` gets each value un-computed and returns its lazy write, a Dask
    array computed in the same pass as the values' checks, so a value larger than memory is
    written chunk by chunk and never gathered; `store.written(key, computed)` is what comes
    back in the value's place; a failed pass calls `store.failed(exc)`. On a backend that is
    not lazy the values come back as usual (to be saved whole)."""
    chosen = backend or backend_named(device)
    if store is not None and not chosen.lazy:
        store = None
    if not memory_checked:  # (shapes alone decide it: a prepared program is checked once)
        check_memory(graph, list(fetch.values()), dtype, max_memory, text=text, backend=chosen,
                     gathered=store is None)
    checker = NumericsChecker(graph, chosen, dtype, accumulate)
    ids = list(dict.fromkeys([*fetch.values(), *(j for j, _, _ in graph.assertions)]))
    with chosen.quiet():
        values = run(graph, ids, dtype=dtype, backend=chosen, check=checker, overrides=overrides, accumulate=accumulate)
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
            host = {k: chosen.host_array(values[j]) for k, j in fetch.items()}
    graph.check_assertions({j: chosen.to_host(values[j]) for j, _, _ in graph.assertions})
    diagnostics = checker.finish(fetch, None if chosen.lazy else host, overrides)
    for message, pos, *kind in graph.warnings:  # (message, pos) or (message, pos, kind, op)
        kind, op = kind or ("unused_input", "input")
        diagnostics.insert(0, Diagnostic("warning", kind, op, message, None, pos))
    return host, diagnostics


def _lazy_feeds(feeds: dict | None, chosen) -> tuple[dict | None, dict]:
    """Feeds for compiling, and the lazy ones apart: a file named for the backend to read
    (`FileRef`) is read by it (lazily on Dask); the graph gets a placeholder of the same shape
    that holds no memory, and the evaluation the real value (as an override of the input)."""
    if not feeds:
        return feeds, {}
    out, lazy = {}, {}
    for name, value in feeds.items():
        if isinstance(value, FileRef):
            value = chosen.load(value.spec, value.label)
        if chosen.lazy and hasattr(value, "dask"):
            dtype = value.dtype if value.dtype.kind == "f" and value.dtype.itemsize >= 4 else np.dtype(np.float64)
            lazy[name] = value
            value = ShapeOnly(value.shape, dtype)
        out[name] = value
    return out, lazy


def _host_feeds(feeds: dict | None) -> dict | None:
    """Feeds as host arrays (what a check on the CPU of a lazily evaluated program reads)."""
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


def _named_values(text: str, name: str, feeds: dict | None, dtype: str, max_memory: int | None,
                  reach: dict | None = None, known=()) -> dict:
    """Every value the program computes under a name (not its inputs and constants, which no
    rewrite changes, nor the names in `known`): a rewrite must keep them all. `reach`, where
    given, gets the names each non-finite origin reaches ({value id: {"named k", ...}})."""
    graph = compile_program(text, name, _host_feeds(feeds), max_memory=max_memory)
    fetch = {f"named {k}": v for k, v in graph.names.items()
             if not k.startswith("_") and graph.equations[v].inputs and k not in known}
    host, diagnostics = _run(graph, fetch, dtype, "cpu", max_memory, text=False)  # compared, not printed
    for d in diagnostics if reach is not None else ():
        reach.setdefault(d.value_id, set()).update(d.reaches)
    return host


def _prove_fixes(result: Result, call: str | None, rerun, prepare, name: str, feeds, dtype: str,
                 max_memory: int | None, grad_ys: dict | None = None, alternatives: bool = True) -> None:
    """Each diagnostic given a fix proven on these inputs, or why there is none
    (gradcli.numerics.fixes): `rerun(text, budget)`, the command on a rewritten program within
    `budget` bytes; `prepare(text)`, it compiled on the CPU (a prepared Program)."""
    if not any(d.kind in NONFINITE_KINDS and d.value_id is not None for d in result.diagnostics):
        return  # (nothing to prove: the proving machinery is not even imported)
    from gradcli.numerics.fixes import prove_diagnostics  # start-up: a small eval does not load it

    # what the command holds already (its answer) is not there for the proof
    limit = (max_memory or default_memory_limit()) - sum(getattr(v, "nbytes", 0) for v in _numbers(result).values())
    prove_diagnostics(result, call, lambda text, budget: _numbers(rerun(text, budget)), prepare,
                      lambda text, budget, reach: _named_values(text, name, feeds, dtype, budget, reach,
                                                                result.outputs),
                      dtype, limit, grad_ys, alternatives)


def _in_print_order(graph: Graph, host: dict) -> dict:  # a printed None (an unconnected gradient) stays None
    return {text: None if id_ is None else host[text] for text, id_ in graph.printed}


class _Command:
    """What a prepared Program runs: its graph (as compiled, or a copy holding the gradient),
    the values it fetches, `finish(host, diagnostics)` -> the answer, the lazy inputs' values,
    the store; `checked` once its memory was (shapes alone decide it)."""
    __slots__ = ("graph", "fetch", "finish", "overrides", "store", "checked")

    def __init__(self, graph: Graph, fetch: dict[str, int], finish, overrides: dict | None, store):
        self.graph, self.fetch, self.finish, self.overrides, self.store = graph, fetch, finish, overrides or {}, store
        self.checked = False


class Program:
    """A program compiled once, with the options it runs with (`compile` makes one); each method
    answers one command, adding its equations (a gradient, a seed) to a copy: every answer is the
    one a program compiled for it alone gives. `evaluate` and `grad` keep what they prepared.

    It is also a prepared command: `result(overrides)` runs the command it was prepared for
    (`prepare_evaluate`, `prepare_grad`; the last statement's value by default), no fixes sought,
    some source equations given new values ({id: array}, as `engine.evaluate.run` takes them):
    --lines runs one for lines that differ only in such numbers. `graph`: the equations it runs."""

    def __init__(self, text: str, *, name: str = "<expr>", call: str | None = None, feeds: dict | None = None,
                 options: RunOptions | None = None, symbols: bool = False):
        self.text, self.name, self.call, self.feeds, self.symbols = text, name, call, feeds, symbols
        self.options = RunOptions() if options is None else options
        self._shared: dict = {}  # what is compiled and prepared, shared with the Programs prepared from this one
        self._command: _Command | None = None

    def _compiled(self, runnable: bool = False) -> tuple:
        """(graph, backend, values of the inputs read lazily), compiled the first time; `runnable`:
        where every input has a value (a symbol of `symbols=True` has none: compiled without
        symbols, the program says which inputs it lacks)."""
        found = self._shared.get("compiled")
        if found is None:
            chosen = _backend(self.options)
            feeds, lazy = _lazy_feeds(self.feeds, chosen)
            graph = compile_program(self.text, self.name, feeds, self.call, self.symbols, self.options.max_memory)
            lazy = {graph.inputs[n]: v for n, v in lazy.items() if n in graph.inputs}  # {input id: value}
            found = self._shared["compiled"] = (graph, chosen, lazy)
        if runnable and self.symbols and any(found[0].equations[i].params["value"] is None
                                             for i in found[0].inputs.values()):
            return compile_program(self.text, self.name, self.feeds, self.call, False, self.options.max_memory), \
                *found[1:]
        return found

    def _host_graph(self, runnable: bool = True) -> Graph:
        """The graph for the commands that compute on the CPU: the compiled one, or where inputs
        are read lazily (Dask: placeholders while compiling), one compiled from their values."""
        graph, _, lazy = self._compiled(runnable)
        if lazy and "host" not in self._shared:
            self._shared["host"] = compile_program(self.text, self.name, _host_feeds(self.feeds), self.call,
                                                   self.symbols, self.options.max_memory)
        return self._shared["host"] if lazy else graph

    def with_feeds(self, feeds: dict) -> Program:
        """This program with some inputs given new values, compiled for them: a few ops read
        their inputs' values as the program is read (a cross entropy's class targets)."""
        program = Program(self.text, name=self.name, call=self.call, feeds={**(self.feeds or {}), **_owned(feeds)},
                          options=self.options, symbols=self.symbols)
        program._compiled()
        return program

    # ----------------------------------------------------------------- a prepared command
    @property
    def graph(self) -> Graph:
        return self._command.graph if self._command is not None else self._compiled()[0]

    @property
    def fetch(self) -> dict[str, int]:
        return self._default().fetch

    def _default(self) -> _Command:
        if self._command is None:
            self._command = self.prepare_evaluate()._command
        return self._command

    def _prepared(self, key, make) -> Program:
        """A Program prepared for the command `key`, sharing this one's compiled graph; the command
        is made by `make()` the first time (a key of None is not kept). (What is shared holds
        commands, not Programs: no reference cycle keeps a large graph alive past its last use.)"""
        prepared = self._shared.setdefault("prepared", {})
        command = prepared.get(key) if key is not None else None
        if command is None:
            command = make()
            if key is not None:
                prepared[key] = command
        twin = object.__new__(Program)
        twin.__dict__.update(self.__dict__, _command=command)
        return twin

    def result(self, overrides: dict | None = None) -> Result:
        """Run the prepared command; `overrides`: {equation id: value}."""
        command = self._default()
        given = {**command.overrides, **overrides} if overrides else (command.overrides or None)
        options, chosen = self.options, self._compiled()[1]
        host, diagnostics = _run(command.graph, command.fetch, options.dtype, chosen.name, options.max_memory,
                                 text=options.printed, backend=chosen, overrides=given, store=command.store,
                                 memory_checked=command.checked, accumulate=options.accumulate)
        command.checked = True  # overrides keep every shape: the check would say the same
        return command.finish(host, diagnostics)

    @_collector_paused
    def prepare_evaluate(self, prints: list[str] | None = None) -> Program:
        """This program prepared to answer `evaluate(prints)` on `result()`."""
        prints = _names(prints)

        def make() -> _Command:
            graph, _, lazy = self._compiled(runnable=True)
            printing = graph.printed and not prints  # a program that prints: each printed value, in print order
            fetch = {p: graph.option_value_id(p, "prints") for p in prints} if prints else \
                {text: id_ for text, id_ in graph.printed if id_ is not None} if printing else \
                {graph.result[0]: graph.result[1]}
            dtype, store = self.options.dtype, self.options.store
            return _Command(graph, fetch, lambda host, diagnostics: Result(
                _in_print_order(graph, host) if printing else host, {}, diagnostics, dtype, graph), lazy,
                None if store is None else _StoredAs(store, {k: ("output", k) for k in fetch}, list(fetch)))
        return self._prepared(("evaluate", tuple(prints)), make)

    @_collector_paused
    def prepare_grad(self, wrt: list[str], of: list[str] | None = None, grad_ys: dict | None = None,
                     unconnected: str = "none") -> Program:
        """This program prepared to answer `grad(...)` on `result()`: differentiated."""
        _check_unconnected(unconnected)
        wrt, of = _names(wrt), _names(of)
        if not wrt:
            raise OptionError("grad needs at least one {option} NAME", "wrt")
        key = None if grad_ys else ("grad", tuple(wrt), tuple(of), unconnected)  # (a seed's values: not kept)
        return self._prepared(key, lambda: self._grad_command(wrt, of, grad_ys, unconnected))

    def _grad_command(self, wrt: list[str], of: list[str], grad_ys: dict | None, unconnected: str) -> _Command:
        compiled, _, lazy = self._compiled(runnable=True)
        graph, dtype = compiled.fork(), self.options.dtype
        ys = of or [graph.result[0]]
        y_ids = [graph.option_value_id(y, "of") for y in ys]
        x_ids = [graph.option_value_id(x, "wrt") for x in wrt]
        seeds = []  # each output's upstream gradient, an input of the graph (None: ones)
        for y, y_id in zip(ys, y_ids):
            if grad_ys and y in grad_ys:
                value = np.asarray(grad_ys[y], dtype=np.float64)
                if value.shape != graph.shapes[y_id]:
                    raise OptionError(f"{{option}} {y}: has shape {fmt_shape(value.shape)}, but {y} has shape "
                                      f"{fmt_shape(graph.shapes[y_id])}; the upstream gradient must match it "
                                      "exactly", "grad_ys")
                seeds.append(graph.add_input(f"grad_ys:{y}", value, label=f"grad_ys {y}"))
            else:
                seeds.append(None)
        for y in grad_ys or {}:
            if y not in ys:
                raise OptionError(f"{{option}} {y}: '{y}' is not a differentiated output (those are "
                                  f"{', '.join(ys)})", "grad_ys")
        grad_ids = gradients(graph, y_ids, x_ids, seeds, {v: k for k, v in graph.names.items()})
        fetch = dict(zip(ys, y_ids))

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
                    diagnostics.append(unconnected_diagnostic(graph, y_ids, ys, x, x_id))
            return Result(outputs, result_grads, diagnostics, dtype, graph)

        saved_as = {**{y: ("output", y) for y in fetch}, **{f"\0{x}": ("gradient", x) for x in wrt}}
        grad_fetch = {f"\0{x}": g for x, g in zip(wrt, grad_ids) if g is not None}
        store = None if self.options.store is None else _StoredAs(self.options.store, saved_as, ys, wrt)
        return _Command(graph, {**fetch, **grad_fetch}, finish, lazy, store)

    # ----------------------------------------------------------------- the commands
    @_collector_paused
    def evaluate(self, prints: list[str] | None = None, *, feeds: dict | None = None, fixes: bool = True) -> Result:
        """The value of the last statement, or of each name in `prints`; `feeds`: new values for some
        inputs (`with_feeds`); `fixes`: a diagnostic may carry a rewrite proven on these inputs."""
        if feeds:
            return self.with_feeds(feeds).evaluate(prints, fixes=fixes)
        result = self.prepare_evaluate(prints).result()
        if fixes:
            self._prove_fixes(result, lambda program: program.evaluate(prints, fixes=False),
                              lambda program: program.prepare_evaluate(prints))
        return result

    @_collector_paused
    def grad(self, wrt: list[str], of: list[str] | None = None, grad_ys: dict | None = None, *,
             unconnected: str = "none", feeds: dict | None = None, fixes: bool = True) -> Result:
        """d(sum of the `of` values)/d(each `wrt` name), as `tf.gradients(ys, xs, grad_ys)`;
        `unconnected="zero"`: zeros where TensorFlow gives None. `feeds`, `fixes`: as `evaluate`'s."""
        if feeds:
            return self.with_feeds(feeds).grad(wrt, of, grad_ys, unconnected=unconnected, fixes=fixes)
        result = self.prepare_grad(wrt, of, grad_ys, unconnected).result()
        if fixes:
            self._prove_fixes(result, lambda program: program.grad(wrt, of, grad_ys, unconnected=unconnected,
                                                                   fixes=False),
                              lambda program: program.prepare_grad(wrt, of, grad_ys, unconnected), grad_ys)
        return result

    def _prove_fixes(self, result: Result, ask, prepared, grad_ys: dict | None = None) -> None:
        """`_prove_fixes`, each rewrite asked `ask(program)` with this one's options (no store, not
        printed, within the budget the proof leaves it) and compiled on the CPU by `prepared(program)`."""
        options = self.options.replace(store=None, printed=False)
        host = RunOptions(options.dtype, max_memory=options.max_memory, printed=False)
        _prove_fixes(result, self.call,
                     lambda text, budget: ask(Program(text, name=self.name, feeds=self.feeds,
                                                      options=options.replace(max_memory=budget))),
                     lambda text: prepared(Program(text, name=self.name, feeds=_host_feeds(self.feeds), options=host)),
                     self.name, self.feeds, options.dtype, options.max_memory, grad_ys)

    _numbers = property(lambda self: {"dtype": self.options.dtype, "accumulate": self.options.accumulate})  # (run's)

    def _second_order(self, wrt, of, unconnected) -> tuple:
        """`jacobian`'s and `hessian`'s start: a graph to add to, Y, the Xs, Y's value and diagnostics."""
        _check_unconnected(unconnected)
        graph = self._host_graph().fork()
        ys, (y,), x_ids = _targets(graph, [of] if of else None, _names(wrt))
        return (graph, y, x_ids, *_run(graph, {ys[0]: y}, self.options.dtype, "cpu", self.options.max_memory,
                                       text=self.options.printed, accumulate=self.options.accumulate))

    @_collector_paused
    def jacobian(self, wrt: list[str], of: str | None = None, *, unconnected: str = "none") -> Result:
        """The full Jacobian dY/dX of each X, shaped Y.shape + X.shape, computed in the
        options' dtype; Y defaults to the last statement."""
        graph, y, x_ids, host, diagnostics = self._second_order(wrt, of, unconnected)
        from gradcli.insight.jacobians import jacobian as jacobian_blocks  # start-up: a small eval does not load it
        blocks = jacobian_blocks(graph, y, x_ids, self.options.max_memory, text=self.options.printed, **self._numbers)
        jac = _fill_unconnected(_names(wrt), x_ids, blocks, unconnected, lambda x: graph.shapes[y] + graph.shapes[x])
        return Result(host, {}, diagnostics, self.options.dtype, graph, jacobians=jac, mode=blocks.mode)

    @_collector_paused
    def hessian(self, wrt: list[str], of: str | None = None, *, unconnected: str = "none") -> Result:
        """The Hessian block d²Y/dX² of each X (Y a scalar), shaped X.shape + X.shape (in the
        options' dtype), and with several inputs the mixed blocks d²Y/dX dZ."""
        graph, y, x_ids, host, diagnostics = self._second_order(wrt, of, unconnected)
        from gradcli.insight.jacobians import hessian as hessian_blocks  # start-up: a small eval does not load it
        found = hessian_blocks(graph, y, x_ids, self.options.max_memory, text=self.options.printed, **self._numbers)
        blocks, mixed_blocks = found
        wrt = _names(wrt)
        hes = _fill_unconnected(wrt, x_ids, blocks, unconnected, lambda x: graph.shapes[x] * 2)
        mixed = {}
        for i, (a, xa) in enumerate(zip(wrt, x_ids)):
            others = [(j, b, xb) for j, (b, xb) in enumerate(zip(wrt, x_ids)) if j != i]
            if others:
                mixed[a] = _fill_unconnected([b for _, b, _ in others], [xb for _, _, xb in others],
                                             [mixed_blocks[i, j] for j, _, _ in others], unconnected,
                                             lambda xb: graph.shapes[xa] + graph.shapes[xb])
        return Result(host, {}, diagnostics, self.options.dtype, graph, hessians=hes, mixed_hessians=mixed, mode=found.mode)

    @_collector_paused
    def check(self, wrt: list[str], of: list[str] | None = None, *, eps: float = 1e-6, rtol: float = 1e-5,
              atol: float = 1e-8):
        """Reverse-mode gradients against float64 central finite differences, with blame."""
        for option, number in (("eps", eps), ("rtol", rtol), ("atol", atol)):
            if number == math.inf:  # (an infinite tolerance passes any gradient; an infinite step measures nothing)
                raise OptionError(f"{{option}} must be finite, not {number:g}", option)
            if not (number > 0 if option == "eps" else number >= 0):
                rule = "be positive" if option == "eps" else "not be negative"
                raise OptionError(f"{{option}} must {rule}, not {number:g}", option)
        graph, max_memory, wrt = self._host_graph().fork(casts=False), self.options.max_memory, _names(wrt)
        ys, y_ids, x_ids = _targets(graph, _names(of) or None, wrt)
        # the forward program (run twice per difference) and the gradients, before anything runs;
        # the gradient equations built here are the ones the check reuses
        grads = [g for g in gradients(graph, y_ids, x_ids) if g is not None]
        check_memory(graph, y_ids + grads, "float64", max_memory, text=False)
        from gradcli.insight.jacobians import check as check_gradients  # start-up: a small eval does not load it
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

    @_collector_paused
    def derive(self, wrt: str, of: list[str] | None = None) -> Derivation:
        """The gradient d(sum of `of`)/d(`wrt`) as a program in gradcli's own language, which
        evaluates (with the same inputs) to the gradient; an input without a value (compiled
        with `symbols=True`) is a free name in it."""
        graph = self._host_graph(runnable=False).fork()
        ys, y_ids, (x,) = _targets(graph, _names(of) or None, [wrt])
        (g,) = gradients(graph, y_ids, [x])
        target = "+".join(ys)
        root = (f"d{'_'.join(ys)}_d{wrt}" if len(ys) < 4 else f"grad_{wrt}").replace(".", "_")  # (loss.probs)
        header = f"d({target})/d{wrt} of {self.name}, as a gradcli program (evaluate it with the same inputs)"
        numbers = list((graph.unshaped or {}).values())
        header += f"; {', '.join(numbers)} taken to be {'numbers' if len(numbers) > 1 else 'a number'} (no shape given)" \
            if numbers else ""
        if g is not None and all(graph.shapes[i] is not None for i in range(len(graph.shapes))):
            check_memory(graph, [g], "float64", self.options.max_memory, text=False)  # folding evaluates constant parts
        from gradcli.insight.printer import Printer  # start-up: a small eval does not load it
        printer = Printer(graph, set(graph.names) | {root})
        if g is None:
            g = graph.add_constant(np.zeros(graph.shapes[x]))
            header += f"; {target} does not depend on {wrt}"
        return Derivation(printer.program({root: g}, header), list(ys), wrt, root, graph)

    @_collector_paused
    def graph_view(self, of: str | None = None, wrt: list[str] | None = None) -> GraphView:
        """What `gradcli graph` shows: the equations `of` (default: the last statement) needs,
        their values, and with `wrt` each one's gradient d(of)/d(it)."""
        graph = self._host_graph(runnable=False).fork()
        y = graph.option_value_id(of, "of") if of else graph.result[1]
        x_ids = [graph.option_value_id(x, "wrt") for x in _names(wrt)]
        nodes = needed_equations(graph, [y])
        cotangents: dict[int, int] = {}
        if x_ids:
            reach = depends_on(graph, x_ids, y)
            on_path = [i for i in nodes if reach[i]]
            for i, g in zip(on_path, gradients(graph, [y], on_path)):
                if g is not None:
                    cotangents[i] = g
        # what is computed from an input given a shape but no values has none (None)
        valueless = graph.valueless()
        fetch = {f"v{i}": i for i in nodes if i not in valueless} | {
            f"g{i}": g for i, g in cotangents.items() if g not in valueless}
        host, diagnostics = _run(graph, fetch, "float64", "cpu", self.options.max_memory)
        values = {i: host.get(f"v{i}") for i in nodes}
        grads = {i: host.get(f"g{i}") for i in cotangents}
        # what a diagnostic reaches, in the user's words: the names the program gave its values
        # (and their gradients), not the keys the values were fetched by
        y_name = graph.value_names.get(y, "y")
        shown = {f"v{i}": graph.value_names[i] for i in nodes if i in graph.value_names}
        shown |= {f"g{i}": f"d{y_name}/d{graph.value_names[i]}" for i in cotangents if i in graph.value_names}
        for d in diagnostics:
            d.reaches = list(dict.fromkeys(shown[r] for r in d.reaches if r in shown))
        nonfinite = {i for i, v in values.items() if v is not None and not np.isfinite(v).all()}
        return GraphView(graph, y, nodes, values, grads, nonfinite, diagnostics)

    @_collector_paused
    def curve(self, wrt: str, low: float, high: float, points: int = 200, of: str | None = None,
              order: int = 1) -> Curve:
        """The value of the scalar `of` and its derivatives with respect to `wrt` (an input, or
        one element `x[2]` of one) at `points` evenly spaced points from `low` to `high`
        (gradcli.insight.curve). A scalar input the program gives no value is given one."""
        from gradcli.insight import curve as plot  # start-up: a small eval does not load it
        base, index = plot.checked_options(wrt, low, high, points, order)
        program = self
        try:
            graph = self._host_graph().fork()
        except GradcliError as err:
            if index is not None or base in (self.feeds or {}):
                raise
            try:  # a --wrt the program does not name is said so, not the inputs it lacks
                named = Program(self.text, name=self.name, call=self.call, feeds=self.feeds, symbols=True)._compiled()[0]
            except GradcliError:
                raise err from None
            named.option_value_id(base, "wrt")
            program = self.with_feeds({base: float(low)})  # (any error is then the program's)
            graph = program._host_graph().fork()
        (of_name,), (y,), (x,) = _targets(graph, [of] if of else None, [base])
        plot.check_target(graph, of_name, y, x, base, index, wrt)
        xs, max_memory = plot.evenly_spaced(low, high, points), self.options.max_memory  # (HIGH - LOW may overflow)
        reach = depends_on(graph, [x], y)
        found = None
        if index is None and all(graph.equations[i].op.elementwise or not reach[i] or i == x
                                 for i in needed_equations(graph, [y])):
            found = plot.at_once(program.with_feeds({base: xs})._host_graph(), base, of_name, xs, order,
                                 lambda graph, fetch: _run(graph, fetch, self.options.dtype, "cpu", max_memory,
                                                           accumulate=self.options.accumulate))
        vectorised = found is not None
        if found is None:
            found = plot.by_point(graph, y, x, index, xs, order, max_memory, **self._numbers)
        values, derivatives, marked, diagnostics = found
        return Curve(of_name, wrt.strip(), xs, values, derivatives, marked, diagnostics, vectorised, graph)

    @_collector_paused
    def fix(self, wrt: list[str] | None = None, of: list[str] | None = None, grad_ys: dict | None = None) -> Fixed:
        """Apply every fix proven on these inputs (values, and the gradients in `wrt` when given),
        proven together: the program with all of them is run and judged as one, so the answer is
        the proof. The diagnostics left without a fix say why (`Fixed.not_fixed`)."""
        return _fix(self, wrt, of, grad_ys)


def _fix(program: Program, wrt: list[str] | None, of: list[str] | None, grad_ys: dict | None) -> Fixed:
    """`Program.fix`."""
    options = RunOptions(program.options.dtype, max_memory=program.options.max_memory, printed=False)
    call, name, feeds = program.call, program.name, program.feeds
    # the --call line is part of the program fixed (and cut off the answer)
    whole = program.text if call is None else program.text.rstrip("\n") + "\n" + call

    def prepare(text: str, budget: int | None = options.max_memory, on_host: bool = False) -> Program:
        if text is None and call is None and program.options == options:
            rewritten = program
        else:
            rewritten = Program(whole if text is None else text, name=name,
                                feeds=_host_feeds(feeds) if on_host else feeds, options=options.replace(max_memory=budget))
        return rewritten.prepare_grad(wrt, of, grad_ys) if wrt else rewritten.prepare_evaluate()

    first = prepare(None).result()
    source = first.graph.source.text
    hints = [d.suggestion for d in first.diagnostics]
    _prove_fixes(first, call, lambda text, budget: prepare(text, budget).result(),
                 lambda text: prepare(text, on_host=True), name, feeds, options.dtype, options.max_memory, grad_ys,
                 alternatives=False)
    applied, spans = [], set()
    for d in first.diagnostics:
        for f in [d.fix, *d.more_fixes] if d.fix is not None else []:
            if (f.start, f.end) not in spans:
                spans.add((f.start, f.end))
                applied.append((d, f))
    not_fixed = [(d, d.not_fixed) for d in first.diagnostics if d.not_fixed]
    if applied:
        from gradcli.numerics.fixes import apply_all  # start-up: a small eval does not load it
        current = apply_all(source, [f for _, f in applied])
        final = prepare(current).result()
    else:  # the program as it was: its hints as they were, the reasons said once (not_fixed)
        current, final = source, first
        for d, hint in zip(first.diagnostics, hints):
            d.suggestion = hint
    remaining = [d for d in final.diagnostics if d.kind in NONFINITE_KINDS]
    if call is not None:  # the --call line is not part of the user's file
        current = current[:len(current) - len(call) - 1]
        source = source[:len(source) - len(call) - 1]
    return Fixed(current, source, applied, remaining, first.graph, final.nonfinite(), not_fixed, program.text)


class _StoredAs:
    """A store (see `_run`) keyed by the fetched values' keys, each array under the name
    `result_arrays` gives it in the finished result (`kinds`: fetch key -> what it is, as
    `array_names` has it)."""

    def __init__(self, store, kinds: dict[str, tuple], outputs: list[str], gradients: list[str] = ()):
        from gradcli.io.outputs import array_names  # start-up: a small eval does not load it
        names = array_names(outputs, gradients)
        self.store, self.names = store, {k: names[kind] for k, kind in kinds.items()}

    def write(self, key, value):
        return self.store.write(self.names[key], value)

    def written(self, key, computed):
        return self.store.written(self.names[key], computed)

    def failed(self, exc):
        self.store.failed(exc)


def _targets(graph: Graph, of: list[str] | None, wrt: list[str]) -> tuple[list[str], list[int], list[int]]:
    if not wrt:
        raise OptionError("give at least one {option} NAME", "wrt")
    ys = of or [graph.result[0]]
    return ys, [graph.option_value_id(y, "of") for y in ys], [graph.option_value_id(x, "wrt") for x in wrt]


def _fill_unconnected(wrt, x_ids, blocks, unconnected, shape_of) -> dict:
    return {x: np.zeros(shape_of(x_id)) if block is None and unconnected == "zero" else block
            for x, x_id, block in zip(wrt, x_ids, blocks)}


# --------------------------------------------------------------------------- one call, one command
# The functions of one call (the command line calls them): each compiles a Program and asks it once.

def _compile(text: str, *, name: str = "<expr>", call: str | None = None, feeds: dict | None = None,
             options: RunOptions | None = None, symbols: bool = False) -> Program:
    """`text` compiled into a Program (an error in it is raised here): `name` is how messages
    name it, `call` one more statement run after it (`f(a, b)`), `feeds` the inputs' values
    (name -> number, nested list or array); `symbols`: an input given no value is a free scalar
    (what `derive` prints; such a program cannot be evaluated)."""
    program = Program(text, name=name, call=call, feeds=_owned(feeds), options=options, symbols=symbols)
    program._compiled()
    return program


# gradcli.compile, spelled so that gradcli's source never calls Python's builtin of that name
# (a test looks for such a call: no user text is ever compiled as Python)
compile = _compile
_compile.__name__ = _compile.__qualname__ = "compile"


def evaluate(text: str, *, call: str | None = None, name: str = "<expr>", feeds: dict | None = None,
             prints: list[str] | None = None, dtype: str = "float64", device: str = "cpu", max_memory: int | None = None,
             fixes: bool = True, printed: bool = True, chunks: int | None = None, scheduler: str | None = None,
             store=None, accumulate: str = "float32") -> Result:
    """`Program.evaluate`, the options as `RunOptions` takes them."""
    options = RunOptions(dtype, device, max_memory, chunks, scheduler, store, printed, accumulate)
    return Program(text, name=name, call=call, feeds=feeds, options=options).evaluate(prints, fixes=fixes)


def prepare_evaluate(text: str, *, call: str | None = None, name: str = "<expr>", feeds: dict | None = None,
                     prints: list[str] | None = None, dtype: str = "float64", device: str = "cpu",
                     max_memory: int | None = None, printed: bool = True, chunks: int | None = None,
                     scheduler: str | None = None, store=None, accumulate: str = "float32") -> Program:
    """`Program.prepare_evaluate`: `evaluate` up to running (`result()` runs it)."""
    options = RunOptions(dtype, device, max_memory, chunks, scheduler, store, printed, accumulate)
    return Program(text, name=name, call=call, feeds=feeds, options=options).prepare_evaluate(prints)


def grad(text: str, *, call: str | None = None, wrt: list[str], of: list[str] | None = None, name: str = "<expr>",
         feeds: dict | None = None, grad_ys: dict | None = None, unconnected: str = "none", dtype: str = "float64",
         device: str = "cpu", max_memory: int | None = None, fixes: bool = True, printed: bool = True,
         chunks: int | None = None, scheduler: str | None = None, store=None, accumulate: str = "float32") -> Result:
    """`Program.grad`, the options as `RunOptions` takes them."""
    options = RunOptions(dtype, device, max_memory, chunks, scheduler, store, printed, accumulate)
    return Program(text, name=name, call=call, feeds=feeds, options=options).grad(
        wrt, of, grad_ys, unconnected=unconnected, fixes=fixes)


def prepare_grad(text: str, *, call: str | None = None, wrt: list[str], of: list[str] | None = None,
                 name: str = "<expr>", feeds: dict | None = None, grad_ys: dict | None = None,
                 unconnected: str = "none", dtype: str = "float64", device: str = "cpu",
                 max_memory: int | None = None, printed: bool = True, chunks: int | None = None,
                 scheduler: str | None = None, store=None, accumulate: str = "float32") -> Program:
    """`Program.prepare_grad`: `grad` up to running (`result()` runs it)."""
    options = RunOptions(dtype, device, max_memory, chunks, scheduler, store, printed, accumulate)
    return Program(text, name=name, call=call, feeds=feeds, options=options).prepare_grad(wrt, of, grad_ys, unconnected)


def jacobian(text: str, *, call: str | None = None, of: str | None = None, wrt: list[str], name: str = "<expr>",
             feeds: dict | None = None, unconnected: str = "none", max_memory: int | None = None,
             printed: bool = True, dtype: str = "float64", accumulate: str = "float32") -> Result:
    """`Program.jacobian`."""
    options = RunOptions(dtype, max_memory=max_memory, printed=printed, accumulate=accumulate)
    return Program(text, name=name, call=call, feeds=feeds, options=options).jacobian(wrt, of, unconnected=unconnected)


def hessian(text: str, *, call: str | None = None, of: str | None = None, wrt: list[str], name: str = "<expr>",
            feeds: dict | None = None, unconnected: str = "none", max_memory: int | None = None,
            printed: bool = True, dtype: str = "float64", accumulate: str = "float32") -> Result:
    """`Program.hessian`."""
    options = RunOptions(dtype, max_memory=max_memory, printed=printed, accumulate=accumulate)
    return Program(text, name=name, call=call, feeds=feeds, options=options).hessian(wrt, of, unconnected=unconnected)


def check(text: str, *, call: str | None = None, wrt: list[str], of: list[str] | None = None, name: str = "<expr>",
          feeds: dict | None = None, eps: float = 1e-6, rtol: float = 1e-5, atol: float = 1e-8,
          max_memory: int | None = None):
    """`Program.check`."""
    return Program(text, name=name, call=call, feeds=feeds, options=RunOptions(max_memory=max_memory)).check(
        wrt, of, eps=eps, rtol=rtol, atol=atol)


def derive(text: str, **kwargs) -> str:
    """`derivation`'s program alone."""
    return derivation(text, **kwargs).program


def derivation(text: str, *, call: str | None = None, wrt: str, of: list[str] | None = None, name: str = "<expr>",
               feeds: dict | None = None, max_memory: int | None = None) -> Derivation:
    """`Program.derive`, an input without a value a free name in it (`symbols=True`)."""
    return Program(text, name=name, call=call, feeds=feeds, options=RunOptions(max_memory=max_memory),
                   symbols=True).derive(wrt, of)


def graph_view(text: str, *, call: str | None = None, of: str | None = None, wrt: list[str] | None = None,
               name: str = "<expr>", feeds: dict | None = None, max_memory: int | None = None) -> GraphView:
    """`Program.graph_view`, an input without values (a shape alone, or nothing: a number) shown
    with its shape (`symbols=True`)."""
    return Program(text, name=name, call=call, feeds=feeds, options=RunOptions(max_memory=max_memory),
                   symbols=True).graph_view(of, wrt)


def curve(text: str, *, wrt: str, low: float, high: float, points: int = 200, of: str | None = None,
          order: int = 1, call: str | None = None, name: str = "<expr>", feeds: dict | None = None,
          max_memory: int | None = None, dtype: str = "float64", accumulate: str = "float32") -> Curve:
    """`Program.curve`."""
    options = RunOptions(dtype, max_memory=max_memory, accumulate=accumulate)
    return Program(text, name=name, call=call, feeds=feeds, options=options).curve(wrt, low, high, points, of, order)


def fix(text: str, *, call: str | None = None, name: str = "<expr>", feeds: dict | None = None,
        wrt: list[str] | None = None, of: list[str] | None = None, grad_ys: dict | None = None,
        dtype: str = "float64", max_memory: int | None = None, accumulate: str = "float32") -> Fixed:
    """`Program.fix`."""
    options = RunOptions(dtype, max_memory=max_memory, accumulate=accumulate)
    return Program(text, name=name, call=call, feeds=feeds, options=options).fix(wrt, of, grad_ys)
