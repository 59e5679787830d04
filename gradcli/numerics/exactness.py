"""The numbers a rewrite of a program is proven against (gradcli.numerics.fixes): the original
program's own numbers computed in a wider float, and the judgement of a rewrite's numbers
against the original's and those.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import numpy as np

from gradcli.engine.evaluate import needed_equations
from gradcli.engine.memory import check_memory
from gradcli.errors import GradcliError
from gradcli.ir import Graph
from gradcli.dtypes import numpy_dtype
from gradcli.numerics.formats import format_of
from gradcli.ops.table import NO_GRADIENT, DataError


class Progress:
    """`gradcli: proving fixes ...` on a terminal, once the work has taken over a second."""
    AFTER = 1.0

    def __init__(self):
        self.stream, self.clock, self.shown = sys.stderr, time.monotonic, False
        self.start = self.clock()
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and not getattr(self.stream, "closed", False) and isatty())

    def _say(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a terminal gone: the work goes on without it
            self.tty = False

    def step(self, what: str) -> None:
        if self.tty and self.clock() - self.start >= self.AFTER:
            self.shown = True
            self._say(f"\r\033[Kgradcli: proving fixes: {what} ({self.clock() - self.start:.0f} s)")

    def done(self) -> None:
        if self.shown and self.tty:
            self._say("\r\033[K")


# A rewrite (gradcli.numerics.fixes) is proven against two things: the original numbers, where they were finite and
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
        self.unknown: str | None = None if self.wide is not None else "this machine has no float wider than float64"
        self._inexact: set = set()
        self.bytes = 0
        self.progress = None  # `step(words)` said as each long piece of work starts

    @cached_property
    def values(self) -> dict:
        return self._compute() if self.unknown is None else {}

    def _compute(self) -> dict:
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
        out = {key: None if i in inexact else env[i] for key, i in s.keys.items()}
        self.bytes = sum(v.nbytes for v in out.values() if v is not None)
        return out

    def of(self, key: str):
        return self.values.get(key)

    def _say(self, what: str) -> None:
        if self.progress is not None:
            self.progress.step(what)

    def why_unknown(self, key: str) -> str:
        return self.unknown or "an operation it reaches has no extended-precision form here"

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
    user = numpy_dtype(dtype)
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


def _tolerances(dtype: str) -> tuple[tuple, tuple]:
    """(_SAME's, _EXACT's) tolerances of `dtype`; a half format's from its epsilon (float16's
    is 1e-3, bfloat16's 8e-3: a fix is judged in the format the user runs, by its rounding)."""
    if dtype in _SAME:
        return _SAME[dtype], _EXACT[dtype]
    eps = format_of(dtype).eps
    return (8 * eps, eps), (16 * eps, 2 * eps)


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
    renamed = _renamed(original, rewritten)
    for key, o in original.items():
        if o is None:
            continue
        r = rewritten.get(renamed.get(key, key))
        if r is None:
            return Verdict(False, f"it leaves no value for {key.split(' ', 1)[1]}")
        o, r = np.asarray(o), np.asarray(r)
        if o.shape != r.shape:
            return Verdict(False, f"it changes the shape of {key.split(' ', 1)[1]}")
        why = _KeyJudge(key, o, r, exact, dtype, identities).run(verdict)
        if why is not None:
            return Verdict(False, why)
    return verdict


def _renamed(original: dict, rewritten: dict) -> dict:
    """Original key -> the rewritten program's key for it, where a rewrite inside `print(...)`
    changed the printed expression, which names the value: the values missing from the rewritten
    numbers and those new in them, paired in the order the program prints them (where as many
    are missing as are new; else none is paired)."""
    missing = [k for k in original if k.startswith("value ") and k not in rewritten]
    new = [k for k in rewritten if k.startswith("value ") and k not in original]
    return dict(zip(missing, new)) if missing and len(missing) == len(new) else {}


JUDGED_AT_ONCE = 1 << 18  # elements compared at a time: a few small temporaries, whatever the array's size


class _KeyJudge:
    """One key's numbers judged a slice at a time (the judgement's own memory stays small)."""

    def __init__(self, key, o, r, exact: Exact, dtype: str, identities: bool):
        self.key, self.shape, self.exact, self.identities = key, o.shape, exact, identities
        self.o, self.r = o.reshape(-1), r.reshape(-1)
        self.same_tol, self.tolerance = _tolerances(dtype)
        self.format = format_of(dtype)
        self.floor = 2 * self.format.smallest_normal
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
            if self.format.half and not fr.all():
                why = self._not_finite_in_half(start, at, r, fr)
                if why is not None:
                    return why
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
            if scale_e is None:
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
            # (an extended-precision evaluation, not the exact number: 1 - sigmoid(40) keeps a few digits there)
            exact = f"an extended-precision evaluation gives {e:.6g}" + ("" if np.isfinite(e) else " too")
            return f"it gives {r:.6g} at {_key_place(self.key, self.shape, k)} where {exact}{more}"
        verdict.beyond += past
        if wrong[0]:
            verdict.corrected.append((self.key, wrong[0], wrong[1]))
        if better or past:
            verdict.improved.add(self.key)
        return None

    def _not_finite_in_half(self, start: int, at, r, fr) -> str | None:
        """In a half format, a rewrite is proven in that format: one that leaves an element not
        finite where the exact number is within the format's range (finite in float64, not in
        float16) is refused, and the reason says so. (Where the exact number is past the format's
        largest, no form can hold it: that is not held against the rewrite.)"""
        if self.e is None:
            found = self.exact.of(self.key)
            if found is None:
                return None
            self.e = found.reshape(-1)
        e = np.asarray(self.e[at], dtype=np.float64)
        stuck = ~fr & np.isfinite(e) & (np.abs(e) <= self.format.largest)
        if not stuck.any():
            return None
        k = int(np.argmax(stuck))
        name = self.format.name
        return (f"it gives {r[k]:.6g} at {_key_place(self.key, self.shape, start + k)} in {name}, where the exact "
                f"value is {e[k]:.6g}, within {name}'s range: it would be finite in float64, not in {name}, the "
                f"format the program runs in")

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
