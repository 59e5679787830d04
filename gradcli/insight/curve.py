"""The numbers of `gradcli plot`: a scalar's value and derivatives along one input (or one
element of one), at evenly spaced points: in one vectorised run where every operation between
them is elementwise, else one run per point, the tie and kink diagnostics placed at their points.
"""
from __future__ import annotations

import math
import re

import numpy as np

from gradcli.autodiff import gradients
from gradcli.engine.evaluate import run
from gradcli.engine.memory import check_memory
from gradcli.errors import OptionError
from gradcli.ir import Graph
from gradcli.numerics.diagnostics import Diagnostic, NumericsChecker
from gradcli.ops import fmt_shape

MARKING = ("tie", "kink")


def evenly_spaced(low: float, high: float, points: int) -> np.ndarray:
    """`points` numbers from `low` to `high` (both exactly), evenly spaced: NumPy's linspace,
    except where HIGH - LOW overflows, where each point is the weighted mean of the ends (whose
    terms never overflow) instead of infinities and NaN."""
    with np.errstate(over="ignore", invalid="ignore"):
        if math.isfinite(high - low):
            return np.linspace(low, high, points)
        t = np.linspace(0.0, 1.0, points)
        xs = low * (1.0 - t) + high * t
    xs[0], xs[-1] = low, high
    return xs


def checked_options(wrt: str, low: float, high: float, points: int, order: int) -> tuple[str, tuple | None]:
    """`plot`'s options checked, before the program is read: `wrt` as (input name, element index)."""
    if order not in (1, 2):
        raise OptionError(f"{{option}} must be 1 or 2, not {order}", "order")
    if not 2 <= points <= 100_000:
        raise OptionError(f"{{option}} must be from 2 to 100000, not {points}", "points")
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise OptionError(f"{{option}} must go from a finite low to a higher finite high, not {low:g}:{high:g}",
                          "range")
    m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*(?:\[\s*(-?\d+(?:\s*,\s*-?\d+)*)\s*,?\s*\])?\s*", wrt)
    if m is None:
        raise OptionError(f"{{option}} '{wrt}' is not a name or an element such as x[2]", "wrt")
    return m.group(1), None if m.group(2) is None else tuple(int(k) for k in m.group(2).split(","))


def check_target(graph: Graph, of_name: str, y: int, x: int, base: str, index: tuple | None, wrt: str) -> None:
    """A scalar `of`, and an input (or one element of an input) to vary."""
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


def at_once(graph: Graph, base: str, of_name: str, xs: np.ndarray, order: int, evaluate):
    """All points in one run on `graph`, the program compiled with `base` fed as the vector of
    points (None where a tie or a kink must be placed at its point, which one run cannot say);
    `evaluate(graph, fetch)` runs a command's evaluation: (host values, diagnostics)."""
    ids = _derivatives(graph, graph.names[of_name], graph.names[base], order, len(xs))
    host, diagnostics = evaluate(graph, {f"\0{k}": i for k, i in enumerate(ids)})
    if any(d.kind in MARKING for d in diagnostics):
        return None
    arrays = [np.broadcast_to(host[f"\0{k}"], xs.shape).astype(np.float64) for k in range(len(ids))]
    marked = {k: ["not finite"] for k in range(len(xs)) if not all(np.isfinite(a[k]) for a in arrays)}
    for d in diagnostics:
        d.reaches = [_point_name(r, of_name, base) for r in d.reaches]
        _say_where(d, base, [xs[k] for k in marked], "the marked points are at")
    return arrays[0], arrays[1:], marked, diagnostics


def by_point(graph: Graph, y: int, x: int, index: tuple | None, xs: np.ndarray, order: int, max_memory,
             dtype: str = "float64", accumulate: str = "float32"):
    """One run per point on the program as compiled, in `dtype`; the derivatives by reverse mode
    (the second as the gradient of the first along the element's direction)."""
    shape = graph.shapes[x]
    base_value = np.array(graph.equations[x].params["value"], dtype=np.float64)
    direction = None
    if index is not None:
        onehot = np.zeros(shape)
        onehot[index] = 1.0
        direction = graph.add_input("plot:direction", onehot)
    ids = _derivatives(graph, y, x, order, shape, direction)
    check_memory(graph, ids, dtype, max_memory)
    columns = [np.empty(len(xs)) for _ in ids]
    marked: dict[int, list[str]] = {}
    explained: dict[tuple, tuple[Diagnostic, list[float]]] = {}
    names = {f"\0{k}": i for k, i in enumerate(ids)}
    for k, point in enumerate(xs):
        value = base_value.copy()
        value[index if index is not None else ()] = point
        checker = NumericsChecker(graph, np, dtype, accumulate)
        with np.errstate(all="ignore"):
            out = run(graph, ids, overrides={x: value}, check=checker, dtype=dtype, accumulate=accumulate)
        for c, i in enumerate(ids):
            v = np.asarray(out[i], dtype=np.float64)
            columns[c][k] = v[index] if (c > 0 and index is not None) else v
        why = [] if all(np.isfinite(col[k]) for col in columns) else ["not finite"]
        for d in checker.finish(names):
            if d.kind in MARKING and d.kind not in why:
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
        d.reaches = [_point_name(r, graph.value_names.get(y, "y"), base_name) for r in d.reaches]
        _say_where(d, base_name, at)
        diagnostics.append(d)
    return columns[0], columns[1:], marked, diagnostics


def _derivatives(graph: Graph, y: int, x: int, order: int, shape, direction: int | None = None) -> list[int]:
    """y and its derivatives in x up to `order` (each past the first along `direction`, where
    given); a derivative that does not depend on x is zeros of `shape`."""
    ids = [y]
    for k in range(order):
        seeds = [direction] if (k > 0 and direction is not None) else None
        (g,) = gradients(graph, [ids[-1]], [x], seeds)
        ids.append(g if g is not None else graph.add_constant(np.zeros(shape)))
    return ids


def _point_name(key: str, of: str, wrt: str) -> str:
    k = int(key[1:])
    return of if k == 0 else f"d{'²' if k == 2 else ''}{of}/d{wrt}{'²' if k == 2 else ''}"


def _say_where(d: Diagnostic, wrt: str, at: list[float], where: str = "at") -> None:
    if at:
        shown = ", ".join(f"{v:g}" for v in at[:5]) + (f" and {len(at) - 5} more" if len(at) > 5 else "")
        d.message += f" (plot: {where} {wrt} = {shown})"
