"""Numbers without NumPy: the second implementation of the elementwise op records, over Python
floats, for a program whose values are all numbers (the command's start-up path, which never
imports NumPy for `gradcli eval -e 'exp(1)'`).

An op record's forward is written over an array namespace `xp` (gradcli.ops describes the record);
`NAMESPACE` is such a namespace whose values are Python floats and whose functions compute what
NumPy's float64 ufuncs compute, bit for bit: the C library's functions where NumPy's are the same
(tests/ops/test_scalar_ops.py compares them on a grid of values, ±0, tiny, huge, inf and nan
included), the IEEE operations, and NumPy's rules for NaN and signed zeros (maximum, sign).
`SCALAR_OPS` names the records whose forward computes on it; their gradient rules emit only
records of the same set. Where Python's float raises (an overflow, a division by zero, a log of 0:
NumPy would give inf or nan with a warning and the numerical diagnostics would speak) the
function raises `NeedsArrays` instead, and the command starts over on NumPy, which says what it
says today. An op or a value outside this set raises it too: nothing here ever guesses.
"""
from __future__ import annotations

import math
import operator
import os
import sys


class NeedsArrays(BaseException):
    """The program needs NumPy (an array, an op with no scalar implementation, a number Python's
    float refuses where NumPy's gives inf or nan): the numbers-only attempt is abandoned and the
    command runs again on NumPy. A BaseException: no `except Exception` on the way turns it into
    an error of the program."""


class _Mode:
    """Whether this process is running a program on numbers only (set by the command line around
    one attempt; the library API never sets it)."""

    active = False


MODE = _Mode()


def numbers_only() -> bool:
    return MODE.active


class attempt:
    """`with attempt():` the numbers-only mode, on inside the block only."""

    def __enter__(self):
        MODE.active = True

    def __exit__(self, *exc):
        MODE.active = False


class Float64:
    """float64 as a dtype of the namespace: what the evaluator and the checks ask of a dtype."""

    name = "float64"
    kind = "f"
    itemsize = 8
    type = float  # the type of the namespace's numbers (the evaluator's scalar path)
    # NumPy's finfo(float64)
    max = 1.7976931348623157e308
    tiny = smallest_normal = 2.2250738585072014e-308
    smallest_subnormal = 5e-324
    eps = 2.220446049250313e-16

    def __eq__(self, other):
        return other is self or other == "float64" or getattr(other, "name", None) == "float64"

    def __hash__(self):
        return hash("float64")

    def __repr__(self):
        return "dtype('float64')"


FLOAT64 = Float64()


def _guarded(fn):
    """fn over floats, an error of Python's float (where NumPy gives inf or nan) a NeedsArrays."""
    def guarded(*args):
        try:
            return float(fn(*args))
        except (ArithmeticError, ValueError, TypeError) as exc:
            raise NeedsArrays(f"{fn.__name__}{args}: {exc}") from None
    guarded.__name__ = fn.__name__
    return guarded


def _maximum(x, y):  # NumPy's: a NaN wins, and a tie (0.0, -0.0) gives the second
    return x if x > y or x != x else y


def _minimum(x, y):
    return x if x < y or x != x else y


def _sign(x):  # NumPy's: sign(±0) is +0.0, sign(nan) is nan
    return 1.0 if x > 0 else -1.0 if x < 0 else x if x != x else 0.0


def _power(x, y):
    # NumPy's float64 power computes these exponents as a square, a reciprocal and a square root
    # (sqrt(-0.0) is -0.0 where pow's is 0.0); any other by the C library's pow, as math.pow does
    if y == 2.0:
        return x * x
    if y == -1.0:
        return 1.0 / x
    if y == 0.5:
        return math.sqrt(x)
    return math.pow(x, y)


def _square(x):
    return x * x


def _where(condition, x, y):
    return x if condition else y


class _Namespace:
    """The namespace: only the functions below; any other name needs NumPy (NeedsArrays)."""

    exp = staticmethod(_guarded(math.exp))
    log = staticmethod(_guarded(math.log))
    log1p = staticmethod(_guarded(math.log1p))
    expm1 = staticmethod(_guarded(math.expm1))
    sqrt = staticmethod(_guarded(math.sqrt))
    sin = staticmethod(_guarded(math.sin))
    cos = staticmethod(_guarded(math.cos))
    tan = staticmethod(_guarded(math.tan))
    asin = staticmethod(_guarded(math.asin))
    acos = staticmethod(_guarded(math.acos))
    atan = staticmethod(_guarded(math.atan))
    sinh = staticmethod(_guarded(math.sinh))
    cosh = staticmethod(_guarded(math.cosh))
    asinh = staticmethod(_guarded(math.asinh))
    acosh = staticmethod(_guarded(math.acosh))
    atanh = staticmethod(_guarded(math.atanh))
    hypot = staticmethod(_guarded(math.hypot))
    abs = absolute = staticmethod(_guarded(math.fabs))
    sign = staticmethod(_guarded(_sign))
    square = staticmethod(_guarded(_square))
    negative = staticmethod(_guarded(operator.neg))
    positive = staticmethod(_guarded(operator.pos))
    add = staticmethod(_guarded(operator.add))
    subtract = staticmethod(_guarded(operator.sub))
    multiply = staticmethod(_guarded(operator.mul))
    divide = staticmethod(_guarded(operator.truediv))
    pow = power = staticmethod(_guarded(_power))
    maximum = staticmethod(_guarded(_maximum))
    minimum = staticmethod(_guarded(_minimum))
    where = staticmethod(_where)

    @staticmethod
    def astype(x, dtype):
        if dtype is not FLOAT64 or not isinstance(x, (bool, float)):
            raise NeedsArrays(f"astype({x!r}, {dtype!r})")
        return float(x)

    @staticmethod
    def result_type(*values):
        if not all(type(v) is float for v in values):
            raise NeedsArrays(f"result_type{values}")
        return FLOAT64

    def __getattr__(self, name):
        raise NeedsArrays(f"the numbers-only namespace has no {name}")


NAMESPACE = _Namespace()

# The evaluator's operators on two numbers (gradcli.engine.evaluate.SCALAR_OPERATORS): Python's
# division raises where IEEE's gives inf or nan
OPERATORS = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
             "divide": NAMESPACE.divide, "negative": operator.neg}

# The records whose forward computes on NAMESPACE as NumPy's does on float64, bit for bit, and whose
# gradient rules emit only records of these sets. EXACT: IEEE's correctly rounded operations, the
# same on every machine. LIBM: the C library's functions, which NumPy's float64 loops call on x86-64
# without AVX-512 (tests/ops/test_scalar_ops.py compares them on the machine that runs it); with
# AVX-512 NumPy computes them with its own vector code (SVML's), which may differ in the last bit,
# and elsewhere it is not known: there they are left to NumPy. tanh is in neither: NumPy's float64
# tanh is its own everywhere.
EXACT_OPS = frozenset({
    "const", "input", "identity", "positive", "negative", "stop_gradient",
    "add", "subtract", "multiply", "divide", "square", "sqrt",
    "abs", "abs_right_at_zero", "sign", "maximum", "minimum", "relu", "where",
    "less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
    "logical_and", "logical_or",
})
LIBM_OPS = frozenset({
    "power", "exp", "expm1", "log", "log1p", "sin", "cos", "tan",
    "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "hypot",
    "sigmoid", "sigmoid_slope", "sigmoid_grad",
})


def numpy_calls_the_c_library() -> bool:
    """Whether NumPy's float64 loops of LIBM_OPS are the C library's here: x86-64 Linux whose CPU
    has no AVX-512 (read from /proc/cpuinfo, the flags NumPy's dispatch reads from the CPU)."""
    if sys.platform != "linux" or os.uname().machine != "x86_64":
        return False
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            for line in info:
                if line.startswith("flags"):
                    return "avx512f" not in line.split()
    except OSError:
        pass
    return False


if numpy_calls_the_c_library():
    SCALAR_OPS = EXACT_OPS | LIBM_OPS
else:  # the namespace itself refuses the C library's functions (NeedsArrays), whoever asks
    SCALAR_OPS = EXACT_OPS
    for _name in ("exp", "log", "log1p", "expm1", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
                  "asinh", "acosh", "atanh", "hypot", "pow", "power"):
        delattr(_Namespace, _name)
