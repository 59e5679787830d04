"""Loss scaling, explained: the power-of-two scale that keeps every scaled gradient of a
half-precision backward pass representable, and a gradient computed with it.

Mixed-precision training (PyTorch's GradScaler, TensorFlow's LossScaleOptimizer) multiplies
the seed of the backward pass (the output's cotangent, 1 or the user's grad_ys) by a scale S,
runs the backward pass in the half-precision dtype, and divides the gradients by S in float32
(the master gradients). The backward pass is linear in its seed, so every cotangent it computes
is S times the unscaled one: a small one is lifted out of the underflow range, a large one may
be pushed past the largest number. The frameworks find S by trial and error (halve it on every
overflow); `measure` finds it from one float32 pass, by looking at every cotangent's magnitude.

Which values scale: the backward equations that depend on a seed (a rule's other factors, such
as the cos(x) of sin's rule, are forward values and do not scale).
"""
from __future__ import annotations

import math

import numpy as np

from gradcli.dtypes import finfo
from gradcli.engine.evaluate import run
from gradcli.engine.memory import check_memory
from gradcli.errors import GradcliError, OptionError
from gradcli.ir import Graph
from gradcli.numerics.diagnostics import Diagnostic
from gradcli.records import Record


# The scaled values are kept at most half the largest number (one power of two of headroom).
# Why: the measure is a float32 pass, and the dtype's own pass computes each cotangent with its
# rounding compounded over the backward pass, and sums terms that the float32 pass summed with
# more care; a factor 2 absorbs any such difference short of the result being wholly wrong. It
# is also the step GradScaler grows its scale by (growth_factor=2): a scale chosen here is at
# least one growth step away from an overflow.
MARGIN = 2.0


def parse_scale(text) -> float | str:
    """--loss-scale: 'auto', or a positive finite number (a power of two is exact)."""
    if isinstance(text, str) and text.strip().lower() == "auto":
        return "auto"
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise OptionError(f"{{option}} takes a positive number (such as 1024) or auto, not '{text}'",
                          "loss_scale") from None
    if not (value > 0 and math.isfinite(value)):
        raise OptionError(f"{{option}} must be a positive finite number, not {text}", "loss_scale")
    return value


def power_text(power: int) -> str:
    return f"2^{power} = {2.0 ** power:g}" if -16 <= power <= 40 else f"2^{power}"


class Place(Record):
    """One value of the backward pass: its magnitude, what it is (`d y/d x`, the gradient
    through an operation), and where that operation stands."""
    __slots__ = _fields = ("magnitude", "what", "pos")
    magnitude: float
    what: str

    def to_json(self) -> dict:
        return {"value": self.magnitude, "what": self.what,
                "line": self.pos.line if self.pos else None, "column": self.pos.column if self.pos else None}

    def said(self) -> str:
        return f"{self.magnitude:.3g} ({self.what}{f' at {self.pos.line}:{self.pos.column}' if self.pos else ''})"


class LossScale(Record):
    """The loss scale of a run and why: `given` ('auto' or the number asked), `dtype`, `master`
    (the type the gradients are divided back in: float32, float64 for a float64 run), `scale`
    (the one used), `power` (its power of two, None for a number that is none), `low` and
    `high` (the powers of the window that keeps every scaled cotangent in the dtype's normal
    range without overflow; low > high where no single scale can), `smallest` and `largest`
    (the Places that bound it), `values` (how many backward values were measured), `nonfinite`
    (how many of those were not finite already in float32), `flushed` (elements that the chosen
    scale leaves below the smallest subnormal: zero), `subnormal` (those left subnormal), and
    `overflowed` (the gradients that were not finite with the scale: GradScaler skips the step)."""
    __slots__ = _fields = ("given", "dtype", "scale", "power", "low", "high", "smallest", "largest", "values",
                           "nonfinite", "flushed", "subnormal", "overflowed", "measured")

    def __init__(self, given, dtype, scale, power=None, low=None, high=None, smallest=None, largest=None,
                 values=0, nonfinite=0, flushed=0, subnormal=0, overflowed=(), measured=False):
        self.given, self.dtype, self.scale, self.power, self.low, self.high = given, dtype, scale, power, low, high
        self.smallest, self.largest, self.values, self.nonfinite = smallest, largest, values, nonfinite
        self.flushed, self.subnormal, self.overflowed, self.measured = flushed, subnormal, list(overflowed), measured

    @property
    def master(self) -> str:
        return "float64" if self.dtype == "float64" else "float32"

    @property
    def fits(self) -> bool:
        """Whether one scale keeps every measured value in range (True where nothing was measured)."""
        return self.low is None or self.high is None or self.low <= self.high

    def to_json(self) -> dict:
        limits = finfo(self.dtype)
        window = None if self.low is None or self.high is None else \
            {"low": 2.0 ** self.low, "high": 2.0 ** self.high, "low_power": self.low, "high_power": self.high}
        return {"given": self.given, "chosen": self.scale, "power": self.power, "dtype": self.dtype,
                "master": self.master,
                "fits": self.fits, "range": window if self.fits else None,
                "needed": window if not self.fits else None,
                "smallest": self.smallest and self.smallest.to_json(), "largest": self.largest and self.largest.to_json(),
                "normal_min": limits.tiny, "max": limits.max, "margin": MARGIN, "values": self.values,
                "nonfinite": self.nonfinite, "flushed_to_zero": self.flushed, "subnormal": self.subnormal,
                "overflowed": self.overflowed}

    def lines(self) -> list[str]:
        """The explanation, for standard error."""
        limits, name = finfo(self.dtype), self.dtype
        chosen = power_text(self.power) if self.power is not None else f"{self.scale:g}"
        out = []
        if self.measured:
            out.append(f"loss scale {chosen} (--loss-scale {self.given}), from a {self.master} pass over the "
                       f"{self.values} values of the backward pass that the seed scales:")
            out += ["  " + line for line in self._window_lines(limits)]
        else:
            out.append(f"loss scale {chosen} (--loss-scale {self.given})")
        out.append(f"  the seed was multiplied by {chosen}, the backward pass ran in {name}, and the gradients "
                   f"were divided by it in {self.master} (master gradients, as GradScaler keeps them)")
        if self.overflowed:
            out.append(f"  not finite with this scale: {', '.join(self.overflowed)} (GradScaler would skip this step)")
        return out

    def _window_lines(self, limits) -> list[str]:
        name = limits.name
        if self.smallest is None:
            return ["every value of the backward pass is zero (or not finite): no scale changes it; 1 is used"]
        out = [f"smallest nonzero |value| {self.smallest.said()} needs a scale >= {power_text(self.low)} to reach "
               f"{name}'s smallest normal number {limits.tiny:.3g}",
               f"largest |value| {self.largest.said()} allows a scale <= {power_text(self.high)} to stay below "
               f"{name}'s largest {limits.max:g} / {MARGIN:g} (one power of two of headroom)"]
        if self.fits:
            if self.low == self.high:
                out.append(f"exactly one power of two works: {power_text(self.low)}")
            else:
                out.append(f"every scale from {power_text(self.low)} to {power_text(self.high)} works; "
                           f"2^{self.power}, the middle, leaves a factor 2^{self.power - self.low} of room above "
                           f"underflow and 2^{self.high - self.power} below overflow")
        else:
            apart = math.log2(self.largest.magnitude / self.smallest.magnitude)
            span = math.log2(limits.max / MARGIN / limits.tiny)
            out.append(f"no single scale can: these two values are 2^{apart:.1f} apart, more than {name}'s normal range "
                       f"of 2^{span:.1f} ({limits.tiny:.3g} to {limits.max:g} / {MARGIN:g}); the largest scale "
                       f"that does not overflow, 2^{self.power}, is used (an overflow loses the whole step; an "
                       "underflow, the smallest values)")
        if self.flushed or self.subnormal:
            out.append(f"with it, {self.flushed} element(s) stay below {name}'s smallest subnormal (zero) and "
                       f"{self.subnormal} are subnormal (fewer digits)")
        if self.nonfinite:
            out.append(f"{self.nonfinite} value(s) are not finite already in float32: no scale changes them")
        return out


# --------------------------------------------------------------------------- the measure

def scaled_values(graph: Graph, first: int, seeds: list[int]) -> list[int]:
    """The backward equations (ids from `first` on) whose values the seeds scale: those that
    depend on a seed. (A rule's other factors, forward values, do not scale.)"""
    scaled = set(seeds)
    for i in range(first, len(graph.equations)):
        if i not in scaled and any(j in scaled for j in graph.equations[i].inputs):
            scaled.add(i)
    return sorted(scaled)


class _Ranges:
    """The magnitudes seen as the float32 pass goes (engine.evaluate.run's `check`): the
    smallest nonzero and largest of each watched value, and a histogram of every element's
    binary exponent (how many would fall below a threshold under any scale)."""

    OFFSET = 1100  # exponents of float64 run from -1074 to 1024

    def __init__(self, watched: set):
        self.watched = watched
        self.smallest: dict[int, float] = {}
        self.largest: dict[int, float] = {}
        self.nonfinite = self.seen = 0
        self.exponents = np.zeros(2 * self.OFFSET, dtype=np.int64)

    def __call__(self, i, eq, value, args) -> None:
        if i not in self.watched:
            return
        self.seen += 1
        magnitude = np.abs(np.asarray(value, dtype=np.float64)).ravel()
        finite = np.isfinite(magnitude)
        if not finite.all():
            self.nonfinite += int(magnitude.size - np.count_nonzero(finite))
            magnitude = magnitude[finite]
        nonzero = magnitude[magnitude > 0]
        if nonzero.size:
            self.smallest[i], self.largest[i] = float(nonzero.min()), float(nonzero.max())
            _, exponent = np.frexp(nonzero)
            self.exponents += np.bincount(exponent + self.OFFSET, minlength=2 * self.OFFSET)

    def at_most(self, exponent: int, power: int) -> int:
        """How many elements times 2**power are below 2**exponent (an element m * 2**e, m in
        [0.5, 1), is below it for any m exactly when e + power <= exponent)."""
        cut = exponent - power + self.OFFSET + 1
        return int(self.exponents[:max(0, min(cut, len(self.exponents)))].sum())


def _window(smallest: float, largest: float, limits, master) -> tuple[int, int]:
    """(low, high): the powers k with smallest * 2**k >= tiny and largest * 2**k <= max / MARGIN,
    worked out on the numbers' exponents (no power is ever computed that could overflow), and
    kept to the scales the master type holds."""
    _, tiny_exponent = math.frexp(limits.tiny)  # tiny = 2**(tiny_exponent - 1)
    _, exponent = math.frexp(smallest)
    # smallest = m * 2**exponent with m in [0.5, 1): times 2**k it reaches 2**(tiny_exponent - 1)
    # exactly when k >= tiny_exponent - exponent (m = 0.5 needs that much, any larger m as much)
    low = tiny_exponent - exponent
    ceiling = limits.max / MARGIN
    mantissa_c, exponent_c = math.frexp(ceiling)
    mantissa_l, exponent_l = math.frexp(largest)
    high = math.floor(math.log2(mantissa_c / mantissa_l)) + exponent_c - exponent_l

    def fits(k: int) -> bool:
        try:
            return math.ldexp(largest, k) <= ceiling
        except OverflowError:
            return False

    while not fits(high):  # (the logarithm rounded the wrong way)
        high -= 1
    while fits(high + 1):
        high += 1
    top, bottom = math.frexp(master.max)[1] - 2, math.frexp(master.tiny)[1] - 1
    return max(low, bottom), min(high, top)


def measure(graph: Graph, first: int, seeds: list[int], fetch: list[int], dtype: str, names: dict[int, str],
            given="auto", max_memory: int | None = None, places: dict | None = None) -> LossScale:
    """The loss scale for a backward pass in `dtype`, from one float32 run of `graph` (float64
    for a float64 one) (whose equations
    from `first` on are the backward pass, seeded by the input equations `seeds`, unscaled);
    `fetch`: the gradients' ids, `names`: {id: what it is} for the values that have a name,
    `places`: {id: Pos} for those whose equation stands nowhere (a seed: where its output is)."""
    limits = finfo(dtype)
    watched = scaled_values(graph, first, seeds)
    ranges = _Ranges(set(watched))
    measured_in = "float64" if dtype == "float64" else "float32"  # (float32's range holds the half types')
    check_memory(graph, fetch, measured_in, max_memory, text=False)
    with np.errstate(all="ignore"):
        run(graph, fetch, dtype=measured_in, check=ranges)
    if not ranges.smallest:
        return LossScale(given, dtype, 1.0, 0, values=ranges.seen, nonfinite=ranges.nonfinite, measured=True)
    low_id = min(ranges.smallest, key=ranges.smallest.__getitem__)
    high_id = max(ranges.largest, key=ranges.largest.__getitem__)
    places = places or {}
    smallest = Place(ranges.smallest[low_id], _what(graph, low_id, names), places.get(low_id, graph.equations[low_id].pos))
    largest = Place(ranges.largest[high_id], _what(graph, high_id, names),
                    places.get(high_id, graph.equations[high_id].pos))
    low, high = _window(smallest.magnitude, largest.magnitude, limits, finfo(measured_in))
    power = (low + high) // 2 if low <= high else high
    # below half the smallest subnormal a number becomes 0; below the smallest normal, a subnormal
    zero_below, normal_from = math.frexp(limits.smallest_subnormal)[1] - 2, math.frexp(limits.tiny)[1] - 1
    return LossScale(given, dtype, 2.0 ** power, power, low, high, smallest, largest, ranges.seen, ranges.nonfinite,
                     flushed=ranges.at_most(zero_below, power), subnormal=ranges.at_most(normal_from, power)
                     - ranges.at_most(zero_below, power),
                     measured=True)


def _what(graph: Graph, i: int, names: dict[int, str]) -> str:
    if i in names:
        return names[i]
    eq = graph.equations[i]
    forward = graph.equations[eq.backward] if eq.backward is not None else eq
    return f"the gradient through '{forward.label}'"


# --------------------------------------------------------------------------- a gradient with a loss scale

def _seeds(program, wrt: list[str], of: list[str], grad_ys: dict | None, scale: float) -> dict:
    """Each differentiated output's seed times `scale` (ones where no grad_ys gives it)."""
    graph = program.graph
    ys = of or [graph.result[0]]
    out = {}
    for y in ys:
        try:
            shape = graph.shapes[graph.value_id(y, "name for {option}")]
        except GradcliError as err:
            raise OptionError(err.message, "of", err.pos, err.source, err.note) from None
        given = (grad_ys or {}).get(y)
        seed = np.ones(shape) if given is None else np.asarray(given, dtype=np.float64)
        out[y] = seed * scale if scale != 1.0 else seed
    return out


def measured(float32_program, wrt: list[str], of: list[str], grad_ys: dict | None, dtype: str,
             given="auto") -> LossScale:
    """`measure` for a gradient in `dtype` of a Program (gradcli.api), from its float32 twin."""
    unscaled = _seeds(float32_program, wrt, of, grad_ys, 1.0)
    first = len(float32_program.graph.equations)
    prepared = float32_program.prepare_grad(wrt, of, unscaled)
    graph = prepared.graph
    seeds = [i for i in range(first, len(graph.equations)) if graph.equations[i].op.name == "input"]
    gradients = {key: i for key, i in prepared.fetch.items() if key.startswith("\0")}
    y_names = ", ".join(of or [graph.result[0]])
    names = {i: f"d{y_names}/d{key[1:]}" for key, i in gradients.items()}
    outputs = {i: graph.equations[i].params["name"].partition(":")[2] for i in seeds}
    names.update({i: f"the seed of {y}" for i, y in outputs.items()})
    places = {i: graph.equations[graph.value_id(y)].pos for i, y in outputs.items()}
    return measure(graph, first, seeds, list(gradients.values()), dtype, names, given,
                   float32_program.options.max_memory, places)


def scaled_grad(program, float32_program, wrt: list[str], of: list[str] | None, grad_ys: dict | None,
                scale, unconnected: str = "none", fixes: bool = True):
    """`program.grad(...)` with a loss scale: `scale` a number, or "auto" (measured on
    `float32_program`, the same program in float32). The seeds are multiplied by the scale,
    the backward pass runs in the program's dtype, and the gradients come back divided by it
    in float32. The Result carries the LossScale as `loss_scale`; a gradient that the scaled
    pass overflowed gets a diagnostic naming it and the largest scale that would not."""
    wrt, of = list(wrt or []), list(of or [])
    dtype = program.options.dtype
    limits = finfo(dtype)
    if scale == "auto":
        chosen = measured(float32_program, wrt, of, grad_ys, dtype)
    else:
        power = math.frexp(scale)[1] - 1 if math.frexp(scale)[0] == 0.5 else None
        chosen = LossScale(_given(scale), dtype, float(scale), power)
    seeds = _seeds(program, wrt, of, grad_ys, chosen.scale)
    for y, seed in seeds.items():
        if seed.size and float(np.abs(seed).max()) > limits.max:
            raise OptionError(f"{{option}} {chosen.scale:g}: the seed of {y} scaled by it, {float(np.abs(seed).max()):g}, "
                              f"is beyond {dtype}'s largest number {limits.max:g}; use a smaller scale "
                              f"(at most 2^{math.floor(math.log2(limits.max / MARGIN))}) or auto", "loss_scale")
    result = program.grad(wrt, of or None, seeds, unconnected=unconnected, fixes=fixes)
    master = np.float64 if dtype == "float64" else np.float32  # (float64 gradients are not cut to float32)
    with np.errstate(all="ignore"):
        for x, g in result.gradients.items():
            if g is not None:
                result.gradients[x] = np.asarray(g, dtype=master) / master(chosen.scale)
    if not chosen.fits and chosen.flushed:  # (said in the explanation too; a diagnostic, so no number is silently 0)
        result.diagnostics.append(Diagnostic(
            "warning", "loss_scale_underflow", "loss scale",
            f"no single loss scale keeps every gradient in {dtype}: with {power_text(chosen.power)}, {chosen.flushed} "
            f"element(s) of the backward pass fall below {dtype}'s smallest subnormal and become 0, the smallest "
            f"being {chosen.smallest.said()}",
            f"compute this gradient in float32, or rescale the program so that its gradients are less than 2^"
            f"{int(math.log2(limits.max / MARGIN / limits.tiny))} apart", chosen.smallest.pos))
    overflowed = [x for x, g in result.gradients.items() if g is not None and not np.isfinite(g).all()]
    if overflowed:
        _overflow_diagnostics(result, program, float32_program, wrt, of, grad_ys, chosen, overflowed)
    result.loss_scale = chosen
    return result


def _given(scale: float):
    return int(scale) if float(scale).is_integer() and abs(scale) < 2 ** 53 else scale


def _overflow_diagnostics(result, program, float32_program, wrt, of, grad_ys, chosen: LossScale,
                          overflowed: list[str]) -> None:
    """A diagnostic for each gradient that is not finite with the scale: the scale's doing
    where the float32 pass, unscaled, is finite (then the largest scale that is not)."""
    dtype = chosen.dtype
    chosen.overflowed = [f"d/d{x}" for x in overflowed]
    safe = chosen if chosen.measured else measured(float32_program, wrt, of, grad_ys, dtype, chosen.given)
    plain = float32_program.grad(wrt, of or None, grad_ys, fixes=False).gradients
    first_bad = next((d.pos for d in result.diagnostics if d.pos is not None and d.severity != "info"), None)
    for x in overflowed:
        if plain.get(x) is not None and not np.isfinite(plain[x]).all():
            message = (f"d/d{x} is not finite with the loss scale {chosen.scale:g} in {dtype}, nor in float32 without "
                       "a scale: the scale is not the cause")
            suggestion = "see the diagnostics of the forward pass"
        else:
            message = (f"d/d{x} is not finite with the loss scale {chosen.scale:g}: the scaled backward pass overflowed "
                       f"{dtype} (GradScaler would skip this step and halve its scale)")
            suggestion = (f"use --loss-scale {2.0 ** safe.high:g} or smaller (the largest power of two that keeps "
                          f"every scaled value below {dtype}'s largest / {MARGIN:g}, from a float32 pass), or "
                          "--loss-scale auto" if safe.high is not None else "use a smaller --loss-scale, or auto")
        result.diagnostics.append(Diagnostic("warning", "loss_scale_overflow", "loss scale", message, suggestion,
                                             first_bad, reaches=[f"d/d{x}"]))
