"""Trust and insight on the core engine: gradient checks with blame, Jacobians and Hessians
built by differentiating the gradient program.

Everything here works on the graph: a gradient is equations of the same program, so it can
be evaluated for many seeds (Jacobian rows), differentiated again (Hessians), or compared
with finite differences of the forward program (checks).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .autodiff import gradients
from .diagnostics import Diagnostic, NumericsChecker
from .errors import GradcliError, OptionError
from .evaluate import needed_equations, run
from .graph import Graph
from .ops import NO_GRADIENT, DataError, fmt_shape

def _seed(graph: Graph, shape, name: str) -> int:
    return graph.add_input(name, np.zeros(shape))


def _forward_values(graph: Graph, first_derived: int, ids: list[int]) -> dict[int, np.ndarray]:
    """Values of the forward equations the given gradient equations read, computed once."""
    reads = {j for i in needed_equations(graph, ids) if i >= first_derived
             for j in graph.equations[i].inputs if j < first_derived}
    reads = [j for j in reads if graph.equations[j].inputs]  # sources are cheap to recreate
    with np.errstate(all="ignore"):
        return run(graph, reads) if reads else {}


def _rows(graph: Graph, seed: int, seed_shape, outputs: list[int], held: dict) -> list[np.ndarray]:
    """For each basis vector e_k of the seed, the values of `outputs`: rows of one array
    each, written in place (no list of rows beside it)."""
    n = int(np.prod(seed_shape))
    results = [np.zeros((n,) + graph.shapes[o]) for o in outputs]
    basis = np.zeros(n)
    for k in range(n):
        basis[:] = 0.0
        basis[k] = 1.0
        with np.errstate(all="ignore"):
            values = run(graph, outputs, overrides={**held, seed: basis.reshape(seed_shape)})
        for r, o in zip(results, outputs):
            r[k] = values[o]
    return [r.reshape(tuple(seed_shape) + graph.shapes[o]) for r, o in zip(results, outputs)]


# Work one derivative command may start, in (passes x equations evaluated): about a minute
MAX_DERIVATIVE_WORK = 2_000_000_000


def _guard_blocks(graph: Graph, what: str, passes: int, block_elements: int, limit: int | None,
                  where: int, text: bool = True) -> None:
    """Refuse before starting what would not fit in memory or would run for hours: the
    derivative array itself (and with `text` its rendering), and the passes times the
    program's size."""
    from .evaluate import _gib, default_memory_limit, output_render_bytes, output_text_bytes

    limit = limit or default_memory_limit()
    need = block_elements * 8 + (output_render_bytes(block_elements) if text else 0)  # the array, its text
    pos = graph.equations[where].pos
    if need > limit:
        out = f" and about {_gib(output_text_bytes(block_elements))} of text out" if text else ""
        raise OptionError(f"the {what} would be {block_elements:,} float64 numbers: {_gib(block_elements * 8)}"
                          f"{out}, more than the {_gib(limit)} allowed by {{option}}", "max_memory", pos, graph.source)
    work = passes * max(1, len(graph.equations))
    if work > MAX_DERIVATIVE_WORK:
        raise GradcliError(f"the {what} needs {passes:,} evaluations of a {len(graph.equations):,}-operation "
                           f"program ({work:.2g} operations, hours of work): ask for a gradient (grad) of a "
                           "sum, or of fewer elements", pos, graph.source)


def jacobian(graph: Graph, y: int, xs: list[int], max_memory: int | None = None,
             text: bool = True) -> list[np.ndarray | None]:
    """dY/dX for each X, shaped Y.shape + X.shape (None where Y does not depend on X).

    Reverse mode evaluates the gradient program once per element of Y; where X has fewer
    elements than Y, forward mode, once per element of X: J v is the derivative of the
    (linear) reverse pass u -> J^T u along v, so it is built by differentiating the gradient
    program again. The cost and the result's size are checked before anything runs."""
    n_y = math.prod(graph.shapes[y])
    out: list[np.ndarray | None] = [None] * len(xs)
    reverse = [k for k, x in enumerate(xs) if math.prod(graph.shapes[x]) >= n_y]
    forward = [k for k in range(len(xs)) if k not in reverse]
    for k in range(len(xs)):
        n_x = math.prod(graph.shapes[xs[k]])
        _guard_blocks(graph, "Jacobian", min(n_x, n_y), n_x * n_y, max_memory, y, text)
    if reverse:
        first = len(graph.equations)
        seed = _seed(graph, graph.shapes[y], "jacobian seed")
        grads = gradients(graph, [y], [xs[k] for k in reverse], [seed])
        live = [g for g in grads if g is not None]
        if live:
            held = _forward_values(graph, first, live)
            rows = iter(_rows(graph, seed, graph.shapes[y], live, held))
            for k, g in zip(reverse, grads):
                out[k] = next(rows) if g is not None else None
    for k in forward:
        x = xs[k]
        first = len(graph.equations)
        u = _seed(graph, graph.shapes[y], "jacobian seed")
        (g,) = gradients(graph, [y], [x], [u])
        if g is None:
            continue
        v = _seed(graph, graph.shapes[x], "jacobian direction")
        (column,) = gradients(graph, [g], [u], [v])
        if column is None:  # J^T u does not depend on u: J is 0
            out[k] = np.zeros(graph.shapes[y] + graph.shapes[x])
            continue
        held = _forward_values(graph, first, [column])
        columns = _rows(graph, v, graph.shapes[x], [column], held)[0]  # shaped X + Y
        n_x = len(graph.shapes[x])
        out[k] = np.moveaxis(columns.reshape(graph.shapes[x] + graph.shapes[y]),
                             list(range(n_x)), list(range(len(graph.shapes[y]), len(graph.shapes[y]) + n_x)))
    return out


def hessian(graph: Graph, y: int, xs: list[int], max_memory: int | None = None, text: bool = True
            ) -> tuple[list[np.ndarray | None], dict[tuple[int, int], np.ndarray | None]]:
    """d²Y/dXi dXj (Y a scalar): reverse over reverse. Returns each X's own block, shaped
    X.shape + X.shape, and the mixed blocks {(i, j): shaped Xi.shape + Xj.shape} for i != j
    (Himmelblau's d²f/dx dy); None where Y does not depend on Xi. One pass per element of Xi
    gives row block i against every Xj at once."""
    if graph.shapes[y] != ():
        raise GradcliError(f"a Hessian needs a scalar output; this one has shape {fmt_shape(graph.shapes[y])} "
                           "(sum it, or pick an element)", graph.equations[y].pos, graph.source)
    sizes = [math.prod(graph.shapes[x]) for x in xs]
    for n_x in sizes:
        _guard_blocks(graph, "Hessian", n_x, n_x * sum(sizes), max_memory, y, text)
    own: list[np.ndarray | None] = []
    mixed: dict[tuple[int, int], np.ndarray | None] = {}
    for i, x in enumerate(xs):
        (g,) = gradients(graph, [y], [x])
        if g is None:
            own.append(None)
            mixed.update({(i, j): None for j in range(len(xs)) if j != i})
            continue
        first = len(graph.equations)
        seed = _seed(graph, graph.shapes[x], "hessian seed")
        hs = gradients(graph, [g], xs, [seed])
        live = [h for h in hs if h is not None]
        held = _forward_values(graph, first, live)
        rows = iter(_rows(graph, seed, graph.shapes[x], live, held) if live else [])
        for j, h in enumerate(hs):
            # a gradient that does not depend on Xj: that block is 0 (Y is linear in it)
            block = next(rows) if h is not None else np.zeros(graph.shapes[x] + graph.shapes[xs[j]])
            if j == i:
                own.append(block)
            else:
                mixed[i, j] = block
    return own, mixed


# --------------------------------------------------------------------------- gradient check

@dataclass
class CheckReport:
    name: str
    max_abs_error: float
    max_rel_error: float
    passed: bool
    method: str  # "all elements" or "N random directions"
    reason: str | None = None  # why it failed where the errors are not numbers (inf, NaN)
    # comparisons made at a kink or a tie: {"element": [i, j] or "direction": k, "left_slope",
    # "right_slope", "gradient"}
    kinks: list = field(default_factory=list)

    def to_json(self) -> dict:
        out = {"max_abs_error": self.max_abs_error, "max_rel_error": self.max_rel_error,
               "passed": self.passed, "method": self.method}
        if self.reason:
            out["reason"] = self.reason
        if self.kinks:
            out["kinks"] = self.kinks
        return out


@dataclass
class CheckResult:
    reports: dict[str, CheckReport]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    gradient_ids: dict[str, int] = field(default_factory=dict)  # the reverse-mode gradients checked

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.reports.values())


ALL_ELEMENTS_UP_TO = 64   # inputs this small are checked element by element
DIRECTIONS = 16           # else along this many random directions


def _objective(graph: Graph, ys: list[int]):
    """The elements of all ys as one vector (their sum is what is differentiated), with
    stop_gradient values held at the unperturbed point."""
    held_ids = [i for i in needed_equations(graph, ys) if graph.equations[i].op.stops_gradient]
    with np.errstate(all="ignore"):
        held = run(graph, held_ids) if held_ids else {}

    def value(overrides):
        with np.errstate(all="ignore"):
            out = run(graph, ys, overrides={**held, **overrides})
        return np.concatenate([np.asarray(out[y], dtype=np.float64).reshape(-1) for y in ys])
    return value


@dataclass
class _Differences:
    """A gradient against finite differences: per element (or random direction) the gradient's
    slope, the central difference, the one-sided ones, and what rounding alone can make of them."""
    ours: np.ndarray
    central: np.ndarray
    left: np.ndarray
    right: np.ndarray
    noise: float
    method: str
    step: float
    directions: np.ndarray

    def where(self, k: int, shape) -> str:
        if self.method != "all elements":
            return f"random direction {k}"
        return f"element {list(map(int, np.unravel_index(k, shape)))}" if shape else "this point"

    def kink(self, k: int, shape) -> dict:
        at = {"direction": k} if self.method != "all elements" else {
            "element": list(map(int, np.unravel_index(k, shape))) if shape else []}
        return {**at, "left_slope": float(self.left[k]), "right_slope": float(self.right[k]),
                "gradient": float(self.ours[k])}


def _differences(f, x: int, point: np.ndarray, grad: np.ndarray, eps: float, rng) -> _Differences:
    """Reverse mode against central and one-sided differences, per element or along random
    directions. Outputs are differenced element by element before they are summed (no
    cancellation between large and small elements)."""
    step = eps * max(1.0, float(np.max(np.abs(point)))) if point.size else eps
    if point.size <= ALL_ELEMENTS_UP_TO:
        directions = np.eye(point.size)
    else:
        directions = rng.standard_normal((DIRECTIONS, point.size))
        directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    # element by element, the gradient itself (a product with the identity would make
    # 0 * inf = NaN of one infinite element in every row)
    ours = grad.reshape(-1).copy() if point.size <= ALL_ELEMENTS_UP_TO else directions @ grad.reshape(-1)
    central, left, right = (np.empty(len(directions)) for _ in range(3))
    with np.errstate(all="ignore"):  # inf - inf at an overflowing point is reported, not warned
        base = f({})
        scale = float(np.sum(np.abs(base)))
        for k, d in enumerate(directions):
            up = f({x: point + step * d.reshape(point.shape)})
            down = f({x: point - step * d.reshape(point.shape)})
            central[k] = np.sum(up - down) / (2 * step)
            right[k] = np.sum(up - base) / step
            left[k] = np.sum(base - down) / step
        noise = 8 * np.finfo(np.float64).eps * scale / step
    method = "all elements" if point.size <= ALL_ELEMENTS_UP_TO else f"{DIRECTIONS} random directions"
    return _Differences(ours, central, left, right, noise, method, step, directions)


def _judge(f, x: int, point: np.ndarray, diffs: _Differences, atol: float, rtol: float
           ) -> tuple[np.ndarray, list[int]]:
    """Which comparisons hold, and which of them hold only as at a kink or a tie. Where the
    gradient and the central difference disagree, the point may sit at a kink (abs or relu at
    0, a tie of max or maximum, a bound of clip, equal elements of sort): there the central
    difference averages two slopes and is no reference. A kink is told from curvature by
    halving the step (the one-sided slopes stay apart at a kink, and close in on each other
    where the function is smooth), and the gradient must then lie between the two slopes."""
    ours, central = diffs.ours, diffs.central
    with np.errstate(all="ignore"):
        holds = np.abs(ours - central) <= atol + diffs.noise + rtol * np.abs(central)
    kinks: list[int] = []
    for k in np.flatnonzero(~holds & np.isfinite(ours) & np.isfinite(diffs.left) & np.isfinite(diffs.right)):
        left, right = diffs.left[k], diffs.right[k]
        side_noise = 2 * diffs.noise
        tolerance = atol + side_noise + rtol * max(abs(left), abs(right))
        if abs(right - left) <= tolerance:
            continue  # the slopes agree: no kink, a wrong gradient
        d = diffs.directions[k].reshape(point.shape)
        half = diffs.step / 2
        with np.errstate(all="ignore"):
            base = f({})
            right2 = float(np.sum(f({x: point + half * d}) - base)) / half
            left2 = float(np.sum(base - f({x: point - half * d}))) / half
        if not (np.isfinite(left2) and np.isfinite(right2)):
            continue
        if abs(right2 - left2) < 0.75 * abs(right - left) - 2 * side_noise:
            continue  # the gap closes with the step: curvature, not a kink
        low, high = min(left, right, left2, right2), max(left, right, left2, right2)
        if low - tolerance <= ours[k] <= high + tolerance:
            holds[k] = True
            kinks.append(int(k))
    return holds, kinks


def check(graph: Graph, ys: list[int], xs: dict[str, int], *, eps: float = 1e-6, rtol: float = 1e-5,
          atol: float = 1e-8, seed: int = 0) -> CheckResult:
    """Reverse-mode gradients of sum(ys) against float64 central finite differences (one-sided
    ones at a kink or a tie); where they disagree, blame the equation whose own gradient rule
    disagrees at this point."""
    rng = np.random.default_rng(seed)
    names = list(xs)
    grads = gradients(graph, ys, [xs[n] for n in names])
    live = [g for g in grads if g is not None]
    # the kinks and ties gradcli finds at this point (abs at 0, a tie of max), named in the report
    checker = NumericsChecker(graph, np, "float64")
    with np.errstate(all="ignore"):
        values = run(graph, live + [xs[n] for n in names] + list(ys), check=checker)
    known = [d for d in checker.finish({}) if d.kind in ("tie", "kink")]
    f = _objective(graph, ys)
    reports = {}
    for name, g in zip(names, grads):
        x = xs[name]
        point = np.asarray(values[x], dtype=np.float64)
        grad = np.zeros(graph.shapes[x]) if g is None else np.asarray(values[g], dtype=np.float64)
        diffs = _differences(f, x, point, grad, eps, rng)
        reason = _nonfinite_reason(diffs, point.shape)
        if reason:  # an inf or NaN on either side is no agreement, and no error size either
            reports[name] = CheckReport(name, math.nan, math.nan, False, diffs.method, reason)
            continue
        holds, kinks = _judge(f, x, point, diffs, atol, rtol)
        compared = np.ones(len(holds), dtype=bool)
        compared[kinks] = False  # a kink's element has no one error: its slopes are reported
        with np.errstate(all="ignore"):
            abs_err = np.abs(diffs.ours - diffs.central)[compared]
            scale = np.maximum(np.abs(diffs.central), np.abs(diffs.ours))[compared]
            rel_err = np.where(abs_err == 0, 0.0, abs_err / scale)
        reports[name] = CheckReport(name, float(np.max(abs_err, initial=0.0)), float(np.max(rel_err, initial=0.0)),
                                    bool(np.all(holds)), diffs.method, kinks=[diffs.kink(k, point.shape) for k in kinks])
    result = CheckResult(reports, gradient_ids={n: g for n, g in zip(names, grads) if g is not None})
    result.diagnostics.extend(_kink_notes(graph, reports, known))
    if not result.passed:
        result.diagnostics.extend(blame(graph, eps=eps, rtol=rtol, atol=atol, rng=rng))
    return result


def _kink_notes(graph: Graph, reports: dict[str, CheckReport], known: list[Diagnostic]) -> list[Diagnostic]:
    """One note per input compared at a kink: where, the slopes on either side, and the kinks
    and ties gradcli found at this point (the operations that make them)."""
    notes = []
    found = "; ".join(dict.fromkeys(f"{d.op} at {d.pos}" if d.pos else d.op for d in known))
    for name, report in reports.items():
        if not report.kinks:
            continue
        shown = "; ".join(f"at {_place(k)} the slope is {_number(k['left_slope'])} from the left and "
                          f"{_number(k['right_slope'])} from the right, the gradient {_number(k['gradient'])}"
                          for k in report.kinks[:5])
        more = f" (and {len(report.kinks) - 5} more)" if len(report.kinks) > 5 else ""
        count = len(report.kinks)
        notes.append(Diagnostic(
            "info", "kink", known[0].op if known else "check",
            f"d/d{name}: {count} comparison{'s' * (count != 1)} at a kink or a tie"
            f"{f' ({found})' if found else ''}, where the function has no derivative and the gradient takes a "
            f"value between the one-sided slopes; compared with the one-sided differences there, not counted "
            f"as a failure: {shown}{more}", None, known[0].pos if known else None,
            known[0].stack if known else ()))
    return notes


def _place(kink: dict) -> str:
    if "direction" in kink:
        return f"random direction {kink['direction']}"
    return f"element {kink['element']}" if kink["element"] else "this point"


def _number(v: float) -> str:
    return f"{v:.6g}"


def _nonfinite_reason(diffs: _Differences, shape) -> str | None:
    ours, fd = diffs.ours, diffs.central
    bad = ~(np.isfinite(ours) & np.isfinite(fd))
    if not bad.any():
        return None
    k = int(np.argmax(bad))
    count = int(bad.sum())
    more = f" (and {count - 1} more)" if count > 1 else ""
    return (f"not finite at {diffs.where(k, shape)}{more}: the gradient gives {float(ours[k])!r}, finite differences "
            f"{float(fd[k])!r}; the function is not differentiable there, or overflows")


def blame(graph: Graph, *, eps: float, rtol: float, atol: float, rng) -> list[Diagnostic]:
    """Each differentiated equation's gradient rule, checked alone at this point against
    finite differences of its own forward rule (one-sided ones at its kinks): the ones that
    disagree."""
    found = []
    forward = sorted(i for i in graph.differentiated if graph.equations[i].backward is None)
    with np.errstate(all="ignore"):
        values = run(graph, sorted({j for i in forward for j in graph.equations[i].inputs}))
    for i in forward:
        eq = graph.equations[i]
        local = Graph(graph.source)
        params = [local.add_input(f"arg{k}", np.asarray(values[j], dtype=np.float64), eq.pos)
                  for k, j in enumerate(eq.inputs)]
        out = local.add(eq.op, tuple(params), eq.params, eq.pos, eq.label)
        cot_value = rng.standard_normal(local.shapes[out])
        cot = local.add_input("g", cot_value, eq.pos)
        wanted = [p for k, p in enumerate(params) if eq.op.rule(k) not in ("no gradient", None)]
        if not wanted:
            continue
        grads = gradients(local, [out], wanted, [cot])
        live = [g for g in grads if g is not None]
        with np.errstate(all="ignore"):
            got = run(local, live) if live else {}

        def f(overrides, out=out, local=local, cot_value=cot_value):
            with np.errstate(all="ignore"):
                return (cot_value * run(local, [out], overrides=overrides)[out]).reshape(-1)

        for p, g in zip(wanted, grads):
            point = np.asarray(local.equations[p].params["value"])
            grad = np.zeros(point.shape) if g is None else np.asarray(got[g], dtype=np.float64)
            diffs = _differences(f, p, point, grad, eps, rng)
            if not np.all(np.isfinite(diffs.central)):
                continue
            holds, _ = _judge(f, p, point, diffs, atol, rtol)
            if not np.all(holds):
                err = float(np.max(np.abs(diffs.ours - diffs.central)[~holds]))
                found.append(Diagnostic(
                    "error", "gradient_mismatch", eq.label,
                    f"the gradient rule of {eq.label} disagrees with finite differences of {eq.label} itself "
                    f"at this point (max abs error {err:.3g} over {int((~holds).sum())} of {holds.size} "
                    f"comparisons)", f"check the vjp of '{eq.op.name}' in the op table", eq.pos, eq.stack,
                    value_id=i))
                break
    return found


# --------------------------------------------------------------------------- exact numbers
# A rewrite (gradcli.fixes) is proven against two things: the original numbers, where they were finite and
# right (it must keep them), and the numbers the mathematics gives, where the original was not
# finite or was finite but wrong (it must give those). The second are the original program's
# own numbers in a wider float (np.longdouble: a 64-bit mantissa and exponents to +-16384, so
# exp(800) and exp(-800) are numbers there), and, for a gradient still not finite there (the
# where trap: 0 * inf in a discarded branch), central differences of that evaluation with the
# comparisons held (the gradient of the branch the program selects).

@dataclass
class Setting:
    """What a proof compares: `keys` maps each number's key ("value y", "gradient x", "named t")
    to its value in `graph`; a gradient key's slopes are those of sum(seed * y) over `ys` with
    respect to the input `wrt[key]`."""
    graph: Graph
    keys: dict
    dtype: str
    limit: int
    ys: list = field(default_factory=list)
    seeds: list = field(default_factory=list)   # per y: an array, or None for ones
    wrt: dict = field(default_factory=dict)


def _wide(dtype: str):
    """The float wider than `dtype` that the exact numbers are computed in, or None."""
    if np.finfo(np.longdouble).max > np.finfo(np.float64).max:
        return np.longdouble
    return np.float64 if dtype == "float32" else None


SLOPES_BY_ELEMENT = 8   # gradients checked by differences element by element up to this many, else
SLOPE_DIRECTIONS = 3    # along this many random directions over them


class Exact:
    """The original program's numbers in a wider float, computed once when first asked."""

    def __init__(self, setting: Setting, held: Callable[[], int]):
        self.setting = setting
        self.held = held          # bytes the proof already holds (the original numbers)
        self.wide = _wide(setting.dtype)
        self._values: dict | None = None
        self.unknown: str | None = None if self.wide is not None else "this machine has no float wider than float64"
        self._inexact: set = set()
        self.bytes = 0
        self.progress = None  # `step(words)` said as each long piece of work starts

    def values(self) -> dict:
        if self._values is None:
            self._values = {}
            if self.unknown is None:
                self._values = self._compute()
        return self._values

    def _compute(self) -> dict:
        from .evaluate import check_memory

        s = self.setting
        ids = sorted(set(s.keys.values()))
        ratio = max(1, np.dtype(self.wide).itemsize // 8)
        try:  # the evaluation's peak, simulated from the shapes (as every command's is)
            check_memory(s.graph, ids, "float64", max(1, (s.limit - self.held()) // ratio), text=False)
        except GradcliError:
            self.unknown = "an extended-precision evaluation would need more memory than --max-memory leaves"
            return {}
        self._say("an extended-precision evaluation of the program")
        env, inexact = _exact_run(s.graph, ids, s.dtype, self.wide)
        self._inexact = inexact
        out = {}
        for key, i in s.keys.items():
            out[key] = None if i in inexact else env[i]
        self.bytes = sum(v.nbytes for v in out.values() if v is not None)
        return out

    def of(self, key: str):
        return self.values().get(key)

    def _say(self, what: str) -> None:
        if self.progress is not None:
            self.progress.step(what)

    def why_unknown(self, key: str) -> str:
        if self.unknown:
            return self.unknown
        return "an operation it reaches has no extended-precision form here"

    # ------------------------------------------------------------------ slopes by differences
    def slopes(self, key: str, mask: np.ndarray, ours: np.ndarray):
        """For the gradient `key` at the elements `mask`: (the slopes by central differences, per
        element, NaN where there are none) or, for many elements, (None, whether `ours` agrees
        along random directions over them)."""
        s = self.setting
        x = s.wrt.get(key)
        if x is None or self.unknown or not s.ys or any(i in self._inexact for i in s.ys):
            return None, False
        graph = s.graph
        held_ids = [i for i in needed_equations(graph, s.ys) if graph.equations[i].inputs and _passes_none(graph, i)]
        base, _ = _exact_run(graph, sorted(set(held_ids) | {x}), s.dtype, self.wide)
        held = {i: base[i] for i in held_ids}
        point = base[x]
        seeds = [None if sd is None else np.asarray(sd).astype(self.wide) for sd in s.seeds] or [None] * len(s.ys)

        def f(value):
            self._say("differences of the extended-precision evaluation")
            env, _ = _exact_run(graph, list(s.ys), s.dtype, self.wide, {**held, x: value})
            return np.concatenate([(env[y] if sd is None else sd * env[y]).reshape(-1) for y, sd in zip(s.ys, seeds)])

        eps = float(np.finfo(self.wide).eps)
        flat = np.flatnonzero(mask)
        if len(flat) <= SLOPES_BY_ELEMENT:
            slopes = np.full(mask.shape, np.nan)
            for k in flat:
                step = np.cbrt(eps) * max(1.0, abs(float(point.reshape(-1)[k])))
                d = np.zeros(point.size, dtype=self.wide)
                d[k] = step
                d = d.reshape(point.shape)
                with np.errstate(all="ignore"):
                    slopes.reshape(-1)[k] = float(np.sum(f(point + d) - f(point - d)) / (2 * step))
            return slopes, True
        rng = np.random.default_rng(0)
        step = np.cbrt(eps) * max(1.0, float(np.max(np.abs(point.reshape(-1)[flat]))))
        for _ in range(SLOPE_DIRECTIONS):
            d = np.zeros(point.size)
            d[flat] = rng.standard_normal(len(flat))
            d /= np.linalg.norm(d)
            with np.errstate(all="ignore"):
                fd = float(np.sum(f(point + step * d.reshape(point.shape)) - f(point - step * d.reshape(point.shape)))
                           / (2 * step))
            along = float(np.dot(ours.reshape(-1)[flat], d[flat]))
            if not (np.isfinite(fd) and abs(along - fd) <= 1e-6 * (abs(fd) + np.abs(ours.reshape(-1)[flat]).sum())
                    + 1e-12):
                return None, False
        return None, True


def _passes_none(graph: Graph, i: int) -> bool:
    """Whether value i passes no gradient to any input (a comparison, stop_gradient): held
    at its value when the inputs move, as the gradient takes it."""
    op = graph.equations[i].op
    return op.stops_gradient or all(op.rule(k) == NO_GRADIENT for k in range(len(graph.equations[i].inputs)))


def _exact_run(graph: Graph, ids: list[int], dtype: str, wide, overrides: dict | None = None):
    """The values `ids` with every operation computed in `wide` (the sources rounded to the
    user's dtype first, as the program reads them); also the ids an operation computed in a
    narrower float (their numbers are not the exact ones)."""
    overrides = overrides or {}
    last_use: dict[int, int] = {}
    order = needed_equations(graph, ids, overrides, last_use)
    keep = set(ids)
    env: dict[int, np.ndarray] = {}
    inexact: set[int] = set()
    user = np.dtype(dtype)
    with np.errstate(all="ignore"):
        for i in order:
            eq = graph.equations[i]
            if i in overrides:
                env[i] = np.asarray(overrides[i])
                continue
            if not eq.inputs:
                env[i] = np.asarray(eq.params["value"]).astype(user).astype(wide)
                continue
            args = [env[j] for j in eq.inputs]
            try:
                value = np.asarray(eq.op.forward(np, *args, **eq.params))
            except DataError:
                raise
            except Exception:  # the op has no form in the wide float: its numbers are float64's
                value = np.asarray(eq.op.forward(np, *[a.astype(np.float64) for a in args], **eq.params))
                inexact.add(i)
            if value.dtype.kind == "f" and value.dtype != wide or value.dtype.kind == "c":
                inexact.add(i)
            env[i] = value.astype(wide) if value.dtype.kind != "c" else value.real.astype(wide)
            if not inexact.isdisjoint(eq.inputs):
                inexact.add(i)
            for j in eq.inputs:
                if last_use.get(j) == i and j not in keep:
                    env.pop(j, None)
    return env, inexact


# --------------------------------------------------------------------------- a rewrite's numbers judged

_SAME = {"float64": (1e-9, 1e-12), "float32": (1e-5, 1e-6)}    # rounding: (rtol, atol as a share of the scale)
_EXACT = {"float64": (1e-8, 1e-13), "float32": (1e-4, 1e-6)}   # against the exact numbers
_SLOPE = (1e-6, 1e-9)                                           # against differences of them


def _close(a, b, tolerance, scale, floor=0.0):
    rtol, share = tolerance
    with np.errstate(all="ignore"):
        return np.abs(a - b) <= rtol * np.abs(b) + max(share * scale, floor)


def _scale(*arrays) -> float:
    tops = [float(np.max(np.abs(a[np.isfinite(a)]), initial=0.0)) for a in arrays if a is not None and a.size]
    return max(tops, default=0.0)


def _key_place(key: str, shape, k: int) -> str:
    name = key.split(" ", 1)[1]
    what = f"d/d{name}" if key.startswith("gradient ") else name
    return f"{what}{list(map(int, np.unravel_index(k, shape)))}" if shape else what


@dataclass
class Verdict:
    ok: bool
    why: str | None = None          # what is wrong with it
    improved: set = field(default_factory=set)   # keys made finite, or corrected, to the exact numbers
    corrected: list = field(default_factory=list)   # (key, count, an example) finite but wrong before
    numbers: dict | None = None
    beyond: int = 0   # elements past even the wide float's range, taken by the rewrites' identities


def judge(original: dict, rewritten: dict, exact: Exact, dtype: str, identities: bool = False) -> Verdict:
    """A rewrite's numbers against the original's and the exact ones, key by key. With
    `identities` (every rewrite computes the same mathematics, only stably), an element that
    is not finite even in the wide float, nor by its differences, is taken by the identity."""
    verdict = Verdict(True, numbers=rewritten)
    for key, o in original.items():
        if o is None:
            continue
        r = rewritten.get(key)
        if r is None:
            return Verdict(False, f"it leaves no value for {key.split(' ', 1)[1]}")
        o, r = np.asarray(o), np.asarray(r)
        if o.shape != r.shape:
            return Verdict(False, f"it changes the shape of {key.split(' ', 1)[1]}")
        why = _KeyJudge(key, o, r, exact, dtype, identities).run(verdict)
        if why is not None:
            return Verdict(False, why)
    return verdict


JUDGED_AT_ONCE = 1 << 18  # elements compared at a time: a few small temporaries, whatever the array's size


class _KeyJudge:
    """One key's numbers judged a slice at a time (the judgement's own memory stays small)."""

    def __init__(self, key, o, r, exact: Exact, dtype: str, identities: bool):
        self.key, self.shape, self.exact, self.identities = key, o.shape, exact, identities
        self.o, self.r = o.reshape(-1), r.reshape(-1)
        self.same_tol = _SAME.get(dtype, _SAME["float64"])
        self.tolerance = _EXACT.get(dtype, _EXACT["float64"])
        self.floor = 2 * float(np.finfo(np.dtype(dtype)).tiny)
        self.e = None

    def slices(self):
        for start in range(0, self.o.size, JUDGED_AT_ONCE):
            yield start, slice(start, start + JUDGED_AT_ONCE)

    def chunk(self, array, at):
        return np.asarray(array[at], dtype=np.float64)

    def scale(self, array) -> float:
        return max((_scale(self.chunk(array, at)) for _, at in self.slices()), default=0.0)

    def run(self, verdict: Verdict) -> str | None:
        scale_o = self.scale(self.o)
        left_first, left_count, unknown, past, wrong, better = None, 0, [], 0, [0, None], False
        scale_e = None
        for start, at in self.slices():
            o, r = self.chunk(self.o, at), self.chunk(self.r, at)
            fo, fr = np.isfinite(o), np.isfinite(r)
            if (fo & ~fr).any():
                k = int(np.argmax(fo & ~fr))
                return (f"it makes {_key_place(self.key, self.shape, start + k)} {r[k]:.6g} where it was {o[k]:.6g}")
            changed = fr & ~(fo & _close(r, o, self.same_tol, scale_o))
            if not changed.any():
                continue
            if self.e is None:
                self.e = self.exact.of(self.key)
                if self.e is None:
                    k = int(np.argmax(changed))
                    return (f"it gives {r[k]:.6g} at {_key_place(self.key, self.shape, start + k)} where the program gave "
                            f"{o[k]:.6g}, and the exact value is not known ({self.exact.why_unknown(self.key)})")
                self.e = self.e.reshape(-1)
                scale_e = self.scale(self.e)
            wide = self.e[at]
            e = np.asarray(wide, dtype=np.float64)
            known = np.isfinite(wide)
            right = changed & known & _close(r, e, self.tolerance, scale_e, self.floor)
            left = changed & ~right
            if self.key.startswith("gradient "):
                unknown.append(start + np.flatnonzero(left & ~known))
                left &= known
            if self.identities:
                beyond = left & ~fo & ~known
                past += int(beyond.sum())
                left &= ~beyond
            if left.any():
                left_count += int(left.sum())
                if left_first is None:
                    k = int(np.argmax(left))
                    left_first = (start + k, r[k], e[k])
            bad = right & fo & ~_close(o, e, self.tolerance, scale_e, self.floor)
            if bad.any():
                k = int(np.argmax(bad))
                wrong = [wrong[0] + int(bad.sum()), wrong[1] or
                         f"{_key_place(self.key, self.shape, start + k)} was {o[k]:.6g}, exactly {e[k]:.6g}"]
            better = better or bool((right & (~fo | bad)).any())
        unknown = np.concatenate(unknown) if unknown else np.zeros(0, dtype=np.int64)
        if len(unknown):
            found = self._by_differences(unknown, verdict)
            if isinstance(found, str):
                return found
            better = better or found
        if left_first is not None:
            k, r, e = left_first
            more = f" (and at {left_count - 1} more)" if left_count > 1 else ""
            exact = f"the exact value is {e:.6g}" if np.isfinite(e) else \
                f"an extended-precision evaluation gives {e:.6g} too"
            return f"it gives {r:.6g} at {_key_place(self.key, self.shape, k)} where {exact}{more}"
        verdict.beyond += past
        if wrong[0]:
            verdict.corrected.append((self.key, wrong[0], wrong[1]))
        if better or past:
            verdict.improved.add(self.key)
        return None

    def _by_differences(self, unknown: np.ndarray, verdict: Verdict):
        """A gradient changed where even the wide float has no number (the where trap: 0 * inf
        in a discarded branch): compared with differences of the wide evaluation."""
        mask = np.zeros(self.o.size, dtype=bool)
        mask[unknown] = True
        r = np.asarray(self.r, dtype=np.float64)
        slopes, agree = self.exact.slopes(self.key, mask.reshape(self.shape), r.reshape(self.shape))
        if slopes is not None:
            slopes = slopes.reshape(-1)
            ok = _close(r[unknown], slopes[unknown], _SLOPE, _scale(slopes[unknown], r[unknown]))
            if ok.all():
                return True
            k = int(unknown[np.argmax(~ok)])
            return (f"it gives {r[k]:.6g} at {_key_place(self.key, self.shape, k)} where differences of an "
                    f"extended-precision evaluation give {slopes[k]:.6g}")
        if agree:
            return True
        o = np.asarray(self.o[unknown], dtype=np.float64)
        if self.identities and not np.isfinite(o).any():
            verdict.beyond += len(unknown)
            return True
        k = int(unknown[0])
        return (f"it gives {r[k]:.6g} at {_key_place(self.key, self.shape, k)}, where neither an extended-precision "
                f"evaluation nor its differences give a number to compare with")
