"""What a dialect reads of a call (`Spelling`), and its refusal of a spelling that reads two ways."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Spelling:
    """What the lowering knows of a call when an op chooses its reading."""
    library: str          # "python" for a bare name, else "numpy", "tensorflow", "jax", "scipy", "nn"
    name: str             # the name without its library prefix (`max`, `reduce_max`)
    positional: int       # positional arguments given
    keywords: tuple       # keyword names given
    list_argument: bool   # the first argument is written as a list literal, `[a, b]`
    method: bool = False  # written as a method of a value, `x.split(2)`
    spelled: str = ""     # the name as written, prefixes included (`np.linalg.diagonal`)
    # per positional argument, what was written: "constant" (`1`, `x.ndim - 1`), "number input"
    # (an input of shape (): given with --set, or a top-level `dim = 1`), or "array" (any other value)
    kinds: tuple = ()


class ReadingError(Exception):
    """A spelling whose meaning differs between Python and the array libraries."""


# The language's prefixes for pasted TensorFlow / NumPy / JAX code, stripped repeatedly; the
# first one stripped names the library whose meaning the spelling carries.


class Distribution:
    """A library's distribution object (`torch.distributions.Normal(loc, scale)`): not a number, but
    a name may hold it and its methods (`log_prob`) are functions of its parameters."""

    __slots__ = ("name", "params", "pos")

    def __init__(self, name: str, params: dict, pos):
        self.name, self.params, self.pos = name, params, pos


class Autocast:
    """PyTorch's `torch.autocast(device_type, dtype)` as a context: in its region the ops of
    PyTorch's tables for `device` ("cuda" or "cpu") compute in `dtype` or in float32
    (gradcli/language/lower/autocast.py); `enabled` False: a region like any other."""

    __slots__ = ("device", "dtype", "enabled", "pos")

    def __init__(self, device: str, dtype: str, enabled: bool, pos):
        self.device, self.dtype, self.enabled, self.pos = device, dtype, enabled, pos
