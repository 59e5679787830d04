"""The floating-point formats a program can run in, as the diagnostics speak of them: the facts
of gradcli/dtypes.py (the largest finite number, the smallest normal and subnormal numbers, the
machine epsilon), and how close to the largest number a value must come before the headroom
note is given.
"""
from __future__ import annotations

import math

from gradcli.dtypes import HALF, finfo
from gradcli.ops.scalar import FLOAT64
from gradcli.records import ValueRecord

# "close to overflowing": within this factor of the largest number. float16's range is so short
# (65504) that float32's factor would flag every value above 65; past 1024 (2**10) it takes a
# factor of 64, about four doublings, to overflow
HEADROOM_FACTOR = 1e3
_HEADROOM_FACTORS = {"float16": 64.0, "float8_e4m3fn": 4.0, "float8_e5m2": 64.0}


class Format(ValueRecord):
    """What the diagnostics read of one floating-point format."""

    _fields = __slots__ = ("name", "largest", "smallest_normal", "smallest_subnormal", "eps", "headroom_factor")
    name: str
    largest: float             # the largest finite number
    smallest_normal: float     # below it, numbers are subnormal: they keep fewer significant bits
    smallest_subnormal: float  # below half of it, a number rounds to 0
    eps: float                 # the gap between 1 and the next number
    headroom_factor: float     # within this factor of `largest`, a value gets the headroom note

    @property
    def half(self) -> bool:
        return self.name in HALF


# float64's facts as the numbers-only path holds them: a program of numbers is checked without NumPy
_KNOWN: dict[str, Format] = {"float64": Format("float64", FLOAT64.max, FLOAT64.smallest_normal, FLOAT64.smallest_subnormal,
                                               FLOAT64.eps, HEADROOM_FACTOR)}


def format_of(name) -> Format:
    """The facts of the format `name` (a dtype's name, or a dtype)."""
    name = getattr(name, "name", None) or str(name)
    found = _KNOWN.get(name)
    if found is None:
        facts = finfo(name)
        found = _KNOWN[name] = Format(name, facts.max, facts.tiny, facts.smallest_subnormal, facts.eps,
                                      _HEADROOM_FACTORS.get(name, HEADROOM_FACTOR))
    return found


def is_half(name) -> bool:
    return (getattr(name, "name", None) or str(name)) in HALF


def underflow_threshold(overflows_above, fmt: Format) -> float | None:
    """The argument below which such an op's result is under half the format's smallest subnormal,
    and so rounds to 0: the same inverse at the other end of the range (exp: log(2**-25) = -17.3
    in float16, as log(2**-1075) = -745.1 in float64)."""
    if overflows_above is None:
        return None
    try:
        return overflows_above(fmt.smallest_subnormal / 2)
    except ValueError:
        return None


def digits(x: float) -> str:
    """A relative error or a ratio as a user reads it (3e-03, 0.74)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    return f"{x:.2g}" if x >= 1e-2 else f"{x:.1e}"
