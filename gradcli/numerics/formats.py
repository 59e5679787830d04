"""The floating-point formats a program can run in, as the diagnostics speak of them: the largest
finite number, the smallest normal and subnormal numbers, the machine epsilon, and how close to
the largest number a value must come before the headroom note is given.

NumPy knows float64, float32 and float16; bfloat16 and the float8 formats are ml_dtypes' (the
library JAX uses), imported only when one of them is named, so that start-up never loads it.
"""
from __future__ import annotations

import math

import numpy

from gradcli.records import ValueRecord

HALF = ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")  # formats narrower than float32

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

    def __init__(self, name, largest, smallest_normal, smallest_subnormal, eps, headroom_factor):
        self.name, self.largest, self.smallest_normal = name, largest, smallest_normal
        self.smallest_subnormal, self.eps, self.headroom_factor = smallest_subnormal, eps, headroom_factor

    @property
    def half(self) -> bool:
        return self.name in HALF


_KNOWN: dict[str, Format] = {}


def numpy_dtype(name: str):
    """The NumPy dtype of a format's name (ml_dtypes' for bfloat16 and the float8 formats)."""
    if name in ("float64", "float32", "float16"):
        return numpy.dtype(name)
    import ml_dtypes  # only for a format NumPy lacks: never at start-up
    return numpy.dtype(getattr(ml_dtypes, name))


def format_of(name) -> Format:
    """The facts of the format `name` (a dtype's name, or a dtype)."""
    name = getattr(name, "name", None) or str(name)
    found = _KNOWN.get(name)
    if found is None:
        dtype = numpy_dtype(name)
        if name in ("float64", "float32", "float16"):
            info = numpy.finfo(dtype)
        else:
            import ml_dtypes
            info = ml_dtypes.finfo(dtype)
        smallest_subnormal = float(getattr(info, "smallest_subnormal", 0.0) or 0.0)
        if not smallest_subnormal:  # (an older finfo: the smallest subnormal is tiny * eps)
            smallest_subnormal = float(info.tiny) * float(info.eps)
        found = _KNOWN[name] = Format(name, float(info.max), float(info.tiny), smallest_subnormal, float(info.eps),
                                      _HEADROOM_FACTORS.get(name, HEADROOM_FACTOR))
    return found


def is_half(name) -> bool:
    return (getattr(name, "name", None) or str(name)) in HALF


def overflow_threshold(overflows_above, fmt: Format) -> float | None:
    """The argument past which an op with the hint `overflows_above` (exp: log) overflows `fmt`."""
    return None if overflows_above is None else overflows_above(fmt.largest)


def underflow_threshold(overflows_above, fmt: Format) -> float | None:
    """The argument below which such an op's result is below `fmt`'s smallest subnormal (and so
    rounds to 0): the same inverse at the other end of the range (exp: log(6e-8) = -16.6 in float16)."""
    if overflows_above is None:
        return None
    try:
        return overflows_above(fmt.smallest_subnormal)
    except ValueError:
        return None


def digits(x: float) -> str:
    """A relative error or a ratio as a user reads it (3e-03, 0.74)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    return f"{x:.2g}" if x >= 1e-2 else f"{x:.1e}"
