"""What a dialect reads of a call (`Spelling`), and its refusal of a spelling that reads two ways."""
from __future__ import annotations

import numpy as np

from gradcli.ops import OPS


class Spelling:
    """What the lowering knows of a call when an op chooses its reading. (Frozen, equal and hashed
    by its fields: what `dataclass(frozen=True, slots=True)` makes, written out, see gradcli/records.py.)"""

    __slots__ = _fields = ("library", "name", "positional", "keywords", "list_argument", "method", "spelled", "kinds")
    library: str          # "python" for a bare name, else "numpy", "tensorflow", "jax", "scipy", "nn"
    name: str             # the name without its library prefix (`max`, `reduce_max`)
    positional: int       # positional arguments given
    keywords: tuple       # keyword names given
    list_argument: bool   # the first argument is written as a list literal, `[a, b]`
    method: bool          # (False) written as a method of a value, `x.split(2)`
    spelled: str          # ("") the name as written, prefixes included (`np.linalg.diagonal`)
    # per positional argument, what was written: "constant" (`1`, `x.ndim - 1`), "number input"
    # (an input of shape (): given with --set, or a top-level `dim = 1`), or "array" (any other value)
    kinds: tuple          # (())

    def __init__(self, library: str, name: str, positional: int, keywords: tuple, list_argument: bool,
                 method: bool = False, spelled: str = "", kinds: tuple = ()):
        for field, value in zip(self._fields, (library, name, positional, keywords, list_argument, method, spelled,
                                               kinds)):
            object.__setattr__(self, field, value)

    def _values(self) -> tuple:
        return tuple(getattr(self, field) for field in self._fields)

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field '{name}'")

    def __eq__(self, other):
        return self._values() == other._values() if other.__class__ is self.__class__ else NotImplemented

    def __hash__(self):
        return hash(self._values())

    def __repr__(self):
        return f"Spelling({', '.join(f'{k}={v!r}' for k, v in zip(self._fields, self._values()))})"

    def __reduce__(self):
        return Spelling, self._values()

    def replace(self, **changes) -> Spelling:
        """A new spelling with these fields changed (as `dataclasses.replace`)."""
        return Spelling(**{**dict(zip(self._fields, self._values())), **changes})


def setting(precision_at: int | None = None):
    """A library's setting that changes no number gradcli computes (`jax.config.update(...)`,
    `keras.config.set_floatx("float64")`): read as nothing by the lowering (lower/settings.py);
    `precision_at`: where a floating type stands among its arguments (a half type is refused)."""
    def lower(lowering, node, values, scope):
        return lowering.library_setting(node, values, precision_at)
    return lower


def assertion(library: str, rtol: float, atol: float, equal_nan: bool):
    """A library's assertion that two arrays are close (`np.testing.assert_allclose(actual, desired)`,
    `torch.testing.assert_close`, `tf.debugging.assert_near`), with its default tolerances: checked as
    `assert` is, by the lowering (lower/settings.py); a false one is the library's error at the call."""
    def lower(lowering, node, values, scope):
        return lowering.library_assertion(node, values, scope, library, {"rtol": rtol, "atol": atol,
                                                                         "equal_nan": equal_nan})
    return lower


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


def composer(lowering, pos, label: str, scope):
    """op(name, *ids, **params) and number(value): the equations and constants of a call the lowering
    composes of the table's ops (a dialect's composite, an optimizer's step), placed at the call."""
    def op(name, *ids, **params):
        return lowering.emit(OPS[name], ids, params, pos, label, scope)

    def number(value):
        return lowering.graph.add_constant(value if isinstance(value, np.ndarray) else float(value), pos, scope.stack)
    return op, number
