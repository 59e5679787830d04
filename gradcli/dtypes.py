"""The floating-point types a program may run in (`--dtype`), and the facts about each that the
engine, the op table and the diagnostics read: one place, so that they all say the same.

float64 and float32 are NumPy's own. float16 is NumPy's too, but NumPy computes with it as
float32 does, only rounded (its ufuncs) or not at all (linear algebra). bfloat16 and the two
float8 types are ml_dtypes' (the library JAX uses), imported only when one of them is asked
for: a command in float64 never loads it. The "half" types (float16, bfloat16, float8_*) are
computed as PyTorch's autocast and XLA compute them: each operation reads its arguments as
float32, computes in float32 and rounds its result to the type (`compute`), so sums, matrix
products and softmax accumulate in float32 (docs/half-precision.md; `--accumulate same`
accumulates in the type itself instead).
"""
from __future__ import annotations

import numpy as np

from gradcli.errors import GradcliError, OptionError

NAMES = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")
# computed in float32 and rounded to their type after every operation
HALF = frozenset(NAMES[2:])
# their type comes from ml_dtypes, imported on their first use
FROM_ML_DTYPES = frozenset(NAMES[3:])
ACCUMULATE = ("float32", "same")


def unknown(name) -> GradcliError:
    return GradcliError(f"unknown dtype '{name}': use {', '.join(NAMES)}")


def check(name: str, device: str = "cpu", accumulate: str = "float32") -> str:
    """`name` if it names a type here that `device` computes in, with sums accumulated as
    `accumulate` says (float32 or same; GradcliError if not). An
    ml_dtypes type is loaded here, which registers its name with NumPy: `np.dtype("bfloat16")`
    works from then on."""
    if name not in NAMES:
        raise unknown(name)
    if accumulate not in ACCUMULATE:
        raise OptionError(f"{{option}} must be float32 or same, not '{accumulate}'", "accumulate")
    if name in HALF and device != "cpu":
        raise OptionError(f"--dtype {name} runs on --device cpu only (this is --device {device})", "device")
    if name in FROM_ML_DTYPES:
        numpy_dtype(name)
    return name


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype of a type's name (ml_dtypes imported for its own)."""
    if name in FROM_ML_DTYPES:
        try:
            import ml_dtypes
        except ImportError as exc:  # (a runtime dependency: only a broken installation lacks it)
            raise GradcliError(f"--dtype {name} needs the package ml_dtypes, which cannot be imported ({exc}); "
                               "install it with: pip install ml_dtypes") from None
        return np.dtype(getattr(ml_dtypes, name))
    if name not in NAMES:
        raise unknown(name)
    return np.dtype(name)


class Facts:
    """What a type can hold: `max` (its largest finite number), `tiny` (its smallest normal
    number: below it, digits are lost), `smallest_subnormal` (below half of it, a number becomes
    0), `eps` (the gap between 1 and the next number: a rounding's relative error is at most
    eps / 2), `bits` (its size), and `accumulates_in_float32` (sums, matrix products, softmax
    and norms accumulate in float32 and round once, by default)."""

    __slots__ = ("name", "max", "tiny", "smallest_subnormal", "eps", "bits", "accumulates_in_float32")

    def __init__(self, name: str):
        dtype = numpy_dtype(name)
        if name in FROM_ML_DTYPES:
            import ml_dtypes
            info = ml_dtypes.finfo(dtype)
        else:
            info = np.finfo(dtype)
        self.name = name
        self.max = float(info.max)
        self.tiny = float(info.tiny)
        self.smallest_subnormal = float(info.smallest_subnormal)
        self.eps = float(info.eps)
        self.bits = dtype.itemsize * 8
        self.accumulates_in_float32 = name in HALF

    def __repr__(self):
        return (f"Facts({self.name}: max {self.max:.6g}, tiny {self.tiny:.6g}, smallest subnormal "
                f"{self.smallest_subnormal:.6g}, eps {self.eps:.6g})")


_FACTS: dict[str, Facts] = {}


def finfo(dtype) -> Facts:
    """The facts of a type, by name or dtype (worked out once per process)."""
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    facts = _FACTS.get(name)
    if facts is None:
        facts = _FACTS[name] = Facts(check(name))
    return facts
