"""Trust and insight on the core engine: gradient checks with blame, Jacobians and Hessians
built by differentiating the gradient program.

Everything here works on the graph: a gradient is equations of the same program, so it can
be evaluated for many seeds (Jacobian rows), differentiated again (Hessians), or compared
with finite differences of the forward program (checks).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from gradcli.autodiff import gradients
from gradcli.numerics.diagnostics import Diagnostic, NumericsChecker
from gradcli.numerics.explain import fmt_number
from gradcli.errors import GradcliError, OptionError
from gradcli.engine.evaluate import needed_equations, run
from gradcli.forward import jvp
from gradcli.ir import Graph
from gradcli.ops import fmt_shape
from gradcli.limits import default_memory_limit, describe_size, output_render_bytes, output_text_bytes

# How a Jacobian or a Hessian is computed: one evaluation of a derivative program per basis
# vector, of the output (reverse) or of the inputs (forward).
FORWARD, REVERSE = "forward", "reverse"
FORWARD_OVER_REVERSE, REVERSE_OVER_REVERSE = "forward-over-reverse", "reverse-over-reverse"


class Jacobians(list):
    """dY/dX for each X (None where Y does not depend on X), and `mode`: how they were
    computed, "forward" (one pass per element of the Xs) or "reverse" (one per element of Y)."""

    __slots__ = ("mode",)

    def __init__(self, blocks, mode: str):
        super().__init__(blocks)
        self.mode = mode


class HessianBlocks(tuple):
    """(own blocks, mixed blocks), as `own, mixed = hessian(...)` unpacks them, and `mode`:
    "forward-over-reverse" (Hessian-vector products as the derivative of the gradient along
    each basis vector) or "reverse-over-reverse" (the gradient of each gradient element)."""

    def __new__(cls, own: list, mixed: dict, mode: str):
        self = super().__new__(cls, (own, mixed))
        self.mode = mode
        return self


def jacobian_mode(n_inputs: int, n_outputs: int) -> str:
    """JAX's rule (jacfwd for tall Jacobians, jacrev for wide ones): forward mode takes one pass
    per input element, reverse mode one per output element; forward where inputs are fewer."""
    return FORWARD if n_inputs < n_outputs else REVERSE


def _held_values(graph: Graph, seed: int, outputs: list[int], numbers: dict) -> dict[int, np.ndarray]:
    """The values the passes read that the seed does not change, computed once: every needed
    equation that does not depend on the seed and is read by one that does (the program's
    values, and the parts of the derivative program that are the same for every seed)."""
    varies = {seed}
    reads = set()
    equations = graph.equations
    for i in needed_equations(graph, outputs):
        if i > seed and any(j in varies for j in equations[i].inputs):
            varies.add(i)
            reads.update(j for j in equations[i].inputs if j not in varies)
    reads = [j for j in reads if equations[j].inputs]  # sources are cheap to recreate
    with np.errstate(all="ignore"):
        return run(graph, sorted(reads), **numbers) if reads else {}


def _rows(graph: Graph, seed: int, seed_shape, outputs: list[int], numbers: dict) -> list[np.ndarray]:
    """For each basis vector e_k of the seed, the values of `outputs`: rows of one array
    each, written in place (no list of rows beside it). `numbers`: run's dtype and accumulate
    (a half type's values are held exactly in the float64 rows)."""
    held = _held_values(graph, seed, outputs, numbers)
    n = int(np.prod(seed_shape))
    results = [np.zeros((n,) + graph.shapes[o]) for o in outputs]
    basis = np.zeros(n)
    for k in range(n):
        basis[:] = 0.0
        basis[k] = 1.0
        with np.errstate(all="ignore"):
            values = run(graph, outputs, overrides={**held, seed: basis.reshape(seed_shape)}, **numbers)
        for r, o in zip(results, outputs):
            r[k] = values[o]
    return [r.reshape(tuple(seed_shape) + graph.shapes[o]) for r, o in zip(results, outputs)]


def _columns(graph: Graph, ys: list[int], x: int, tag: str, numbers: dict) -> list[np.ndarray | None]:
    """dY/dX for each Y by forward mode, one Jacobian-vector product per element of X, each
    block shaped Y.shape + X.shape (None where Y does not depend on X)."""
    direction = graph.add_input(tag, np.zeros(graph.shapes[x]))
    products = jvp(graph, ys, [x], [direction])
    live = [p for p in products if p is not None]
    if not live:
        return [None] * len(ys)
    found = iter(_rows(graph, direction, graph.shapes[x], live, numbers))
    n_x = len(graph.shapes[x])
    # a block comes as X.shape + Y.shape: its X axes go last
    return [None if p is None else np.moveaxis(next(found), list(range(n_x)), list(range(-n_x, 0))) for p in products]


# Work one derivative command may start, in (passes x equations evaluated): about a minute
MAX_DERIVATIVE_WORK = 2_000_000_000


def _guard_blocks(graph: Graph, what: str, passes: int, block_elements: int, limit: int | None,
                  where: int, text: bool = True) -> None:
    """Refuse before starting what would not fit in memory or would run for hours: the
    derivative array itself (and with `text` its rendering), and the passes times the
    program's size."""

    limit = limit or default_memory_limit()
    need = block_elements * 8 + (output_render_bytes(block_elements) if text else 0)  # the array, its text
    pos = graph.equations[where].pos
    if need > limit:
        out = f" and about {describe_size(output_text_bytes(block_elements))} of text out" if text else ""
        raise OptionError(f"the {what} would be {block_elements:,} float64 numbers: {describe_size(block_elements * 8)}"
                          f"{out}, more than the {describe_size(limit)} allowed by {{option}}", "max_memory", pos, graph.source)
    work = passes * max(1, len(graph.equations))
    if work > MAX_DERIVATIVE_WORK:
        raise GradcliError(f"the {what} needs {passes:,} evaluations of a {len(graph.equations):,}-operation "
                           f"program ({work:.2g} operations, hours of work): ask for a gradient (grad) of a "
                           "sum, or of fewer elements", pos, graph.source)


def jacobian(graph: Graph, y: int, xs: list[int], max_memory: int | None = None,
             text: bool = True, mode: str | None = None, **numbers) -> Jacobians:
    """dY/dX for each X, shaped Y.shape + X.shape (None where Y does not depend on X), with
    the mode that computed them (`mode` forces one; the default follows `jacobian_mode`).

    Reverse mode evaluates the gradient program once per element of Y, for every X at once;
    forward mode evaluates a Jacobian-vector product once per element of each X
    (gradcli.forward). The cost and the result's size are checked before anything runs.
    `numbers`: the evaluation's `dtype` and `accumulate` (engine.evaluate.run's)."""
    if mode not in (None, FORWARD, REVERSE):
        raise ValueError(f"unknown Jacobian mode {mode!r}: {FORWARD!r} or {REVERSE!r}")
    n_y = math.prod(graph.shapes[y])
    sizes = [math.prod(graph.shapes[x]) for x in xs]
    mode = mode or jacobian_mode(sum(sizes), n_y)
    for n_x in sizes:
        _guard_blocks(graph, "Jacobian", n_x if mode == FORWARD else n_y, n_x * n_y, max_memory, y, text)
    if mode == FORWARD:
        return Jacobians([_columns(graph, [y], x, "jacobian direction", numbers)[0] for x in xs], mode)
    return Jacobians(_gradient_rows(graph, y, xs, "jacobian seed", numbers), mode)


def hessian(graph: Graph, y: int, xs: list[int], max_memory: int | None = None, text: bool = True,
            mode: str | None = None, **numbers) -> HessianBlocks:
    """d²Y/dXi dXj (Y a scalar). Returns each X's own block, shaped X.shape + X.shape, and the
    mixed blocks {(i, j): shaped Xi.shape + Xj.shape} for i != j (Himmelblau's d²f/dx dy);
    None where Y does not depend on Xi; and the mode that computed them.

    The Hessian is the Jacobian of the gradient map, which is square (as many outputs as
    inputs): `jacobian_mode`'s rule gives reverse over reverse, row block i (against every Xj)
    from the gradient of each element of dY/dXi. JAX's `hessian` takes forward over reverse
    instead, where a forward pass is cheaper than a reverse one; here a forward pass is the
    transpose of a reverse one (gradcli.forward), the same work, so nothing is gained by it
    (`mode` asks for it: column block j from the derivative of every gradient along each
    basis vector of Xj). Either takes one pass per element of the Xs."""
    if mode not in (None, FORWARD_OVER_REVERSE, REVERSE_OVER_REVERSE):
        raise ValueError(f"unknown Hessian mode {mode!r}: {FORWARD_OVER_REVERSE!r} or {REVERSE_OVER_REVERSE!r}")
    if graph.shapes[y] != ():
        raise GradcliError(f"a Hessian needs a scalar output; this one has shape {fmt_shape(graph.shapes[y])} "
                           "(sum it, or pick an element)", graph.equations[y].pos, graph.source)
    sizes = [math.prod(graph.shapes[x]) for x in xs]
    for n_x in sizes:
        _guard_blocks(graph, "Hessian", n_x, n_x * sum(sizes), max_memory, y, text)
    mode = mode or REVERSE_OVER_REVERSE  # (the gradient map is square: see the docstring)
    grads = [gradients(graph, [y], [x])[0] for x in xs]
    blocks: dict[tuple[int, int], np.ndarray | None] = {}
    for i, g in enumerate(grads):
        if g is None:  # Y does not depend on Xi
            blocks.update({(i, j): None for j in range(len(xs))})
    live = [i for i, g in enumerate(grads) if g is not None]
    for k, x in enumerate(xs):
        if mode == FORWARD_OVER_REVERSE:
            found = _columns(graph, [grads[i] for i in live], x, "hessian direction", numbers)
            pairs = [((i, k), block) for i, block in zip(live, found)]  # d grad_i / d x_k
        elif k in live:
            rows = _gradient_rows(graph, grads[k], xs, "hessian seed", numbers)  # d grad_k / d x_j
            pairs = list(zip([(k, j) for j in range(len(xs))], rows))
        else:
            continue
        for (i, j), block in pairs:
            # a gradient that does not depend on Xj: that block is 0 (Y is linear in it)
            blocks[i, j] = block if block is not None else np.zeros(graph.shapes[xs[i]] + graph.shapes[xs[j]])
    own = [blocks[i, i] for i in range(len(xs))]
    mixed = {(i, j): blocks[i, j] for i in range(len(xs)) for j in range(len(xs)) if i != j}
    return HessianBlocks(own, mixed, mode)


def _gradient_rows(graph: Graph, y: int, xs: list[int], tag: str, numbers: dict) -> list[np.ndarray | None]:
    """dY/dXj for each Xj by reverse mode, one pass per element of Y, each block shaped
    Y.shape + Xj.shape (None where Y does not depend on Xj): a Jacobian's, or a Hessian's row
    block (Y a gradient)."""
    seed = graph.add_input(tag, np.zeros(graph.shapes[y]))
    grads = gradients(graph, [y], xs, [seed])
    live = [g for g in grads if g is not None]
    if not live:
        return [None] * len(xs)
    rows = iter(_rows(graph, seed, graph.shapes[y], live, numbers))
    return [next(rows) if g is not None else None for g in grads]


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
        shown = "; ".join(f"at {_place(k)} the slope is {fmt_number(k['left_slope'])} from the left and "
                          f"{fmt_number(k['right_slope'])} from the right, the gradient {fmt_number(k['gradient'])}"
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


def _nonfinite_reason(diffs: _Differences, shape) -> str | None:
    ours, fd = diffs.ours, diffs.central
    bad = ~(np.isfinite(ours) & np.isfinite(fd))
    if not bad.any():
        return None
    k = int(np.argmax(bad))
    count = int(bad.sum())
    more = f" (and {count - 1} more)" if count > 1 else ""
    return (f"not finite at {_place(diffs.kink(k, shape))}{more}: the gradient gives {float(ours[k])!r}, finite differences "
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
