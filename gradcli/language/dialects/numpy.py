"""NumPy's spellings (and the array API's, JAX's `jnp.` and autograd's `anp.`, which read as
NumPy's): the names of the language's ops are mostly NumPy's own, so this module holds NumPy's
other names, the readings where NumPy's meaning is the one chosen or refused, its index tricks
(`np.c_`, `np.r_`, `np.newaxis`) and the array arguments its functions let be left out."""
from __future__ import annotations

import math

from gradcli.language.dialects.spelling import ReadingError, assertion, setting
from gradcli.ops import OPS


def _average_reading(call):
    if call.positional > 2:
        raise ReadingError("average() with more than 2 arguments: write weights= and keepdims= by name")
    if "weights" in call.keywords:
        return "weighted_average", {}
    return None


def _interpolation_reading(call):
    # PyTorch's keyword; NumPy renamed it method= and NumPy 2.4 and JAX refuse the old name
    if call.library == "numpy" and "interpolation" in call.keywords:
        raise ReadingError(f"np.{call.name}() has no argument 'interpolation' (NumPy 2.4 and JAX refuse it): "
                           "write method=...")
    return None


def _trapezoid_reading(call):
    if call.positional > 1 or "x" in call.keywords:
        raise ReadingError("trapezoid with sample points x is not supported: give the spacing as dx=")
    return None


def _trace_reading(call):
    """np.trace traces axes 0 and 1; np.linalg.trace, jnp.linalg.trace and tf.linalg.trace (tf.trace)
    the last two, a stack of matrices."""
    if "linalg." in call.spelled or call.library == "tensorflow":
        return "trace", {"axis1": -2, "axis2": -1}
    if call.library == "torch":
        return "trace", {"matrix": True}  # torch.trace: of a matrix only
    return None


def _one_array_reading(call):
    if call.positional > 1 or "y" in call.keywords:
        raise ReadingError(f"{call.name}(x, y): give the variables as the rows of one array, "
                           f"{call.name}([x, y]) (NumPy stacks them so)")
    return None


def _split_reading(call):
    """np.split(x, 2) makes 2 parts, torch.split(x, 2) parts of size 2, tf.split(x, [2, 3])
    parts of sizes 2 and 3 (np.split(x, [2, 3]) cuts at 2 and 3)."""
    if call.library == "torch" or call.method:  # a NumPy array has no .split method
        return "split_size", {}
    if call.library == "tensorflow":
        return "split_parts", {}
    if call.library == "python":
        raise ReadingError("split() without a library: np.split(x, n) makes n parts (a list cuts at those "
                           "indices), torch.split(x, n) makes parts of size n, tf.split(x, [sizes]) parts of those "
                           "sizes; write np.split, torch.split or tf.split")
    if call.library == "jax":  # lax.split(x, sizes, axis): parts of those sizes, as tf.split's list
        return "split_parts", {}
    return ("split", {"ordered": True}) if jax_numpy(call) else None


def jax_numpy(call):
    """jnp.f: NumPy's prefix as gradcli reads it, where JAX's own function is stricter."""
    return call.library == "jax" or call.spelled.startswith(("jnp.", "jax.numpy."))


def _flip_reading(call):
    if call.name == "fliplr":
        return "flip", {"axis": 1}
    if call.name == "flipud":
        return "flip", {"axis": 0}
    return None


def _repeat_reading(call):
    # x.repeat(2, 3) is NumPy's repeat with axis=3, but PyTorch's tile by (2, 3)
    if call.name == "repeat_interleave":  # PyTorch's np.repeat
        return None
    if call.method and call.library == "torch":
        return "tile", {}
    if call.method and "axis" not in call.keywords:
        raise ReadingError("x.repeat(...) reads two ways: NumPy's repeats each element (np.repeat(x, n, axis)), "
                           "PyTorch's tiles the whole array (np.tile(x, reps)); write np.repeat(x, n, axis=...) "
                           "or np.tile(x, reps)")
    return None


def _diagonal_reading(call):
    # np.linalg.diagonal, torch.linalg.diagonal and tf.linalg.diag_part take the last two axes
    if "linalg." in call.spelled or call.name == "diag_part" or call.name == "matrix_diag_part":
        return "diagonal", {"axis1": -2, "axis2": -1}
    return None


def _empty_reading(call):
    raise ReadingError(f"{call.name}() gives uninitialized memory, whose numbers are whatever was there: write "
                       f"{call.name.replace('empty', 'zeros')}(...) (or full) for the values you mean")


def _complex_refusal(call):
    raise ReadingError(f"{call.name}: the eigenvalues of a general matrix are complex numbers (with complex "
                       "eigenvectors), and gradcli's values are real; for a symmetric matrix write "
                       f"{'eigvalsh' if call.name == 'eigvals' else 'eigh'}, whose results are real")


def _eigh_reading(name):
    """Which matrix eigh and eigvalsh read, and where their gradient goes (gradcli.ops.solves):
    np.linalg's (autograd's), tf.linalg's and scipy.linalg's one triangle, the gradient on it;
    torch.linalg's the triangle, the gradient symmetric; jnp.linalg's and jax.scipy.linalg's the
    symmetric part (symmetrize_input=True). A bare eigh reads the symmetric part and refuses a
    matrix that is clearly not symmetric."""
    def reading(call):
        if jax_numpy(call) or call.spelled.startswith(("jax.", "jsl.")):
            return name, {"reads": "symmetrized"}
        if call.library == "torch":
            return name, {"reads": "triangle_symmetric_gradient"}
        if call.library in ("numpy", "tensorflow", "scipy"):
            return name, {"reads": "triangle"}
        return None
    return reading


def _ufunc_method(function: str, *positional: str):
    """np.add.reduce(x, axis=0, ...) and its kin: a ufunc's reduce (accumulate) is the reduction
    (scan) named `function` along axis 0 unless told otherwise (np.sum's own default is every axis)."""
    def lower(lowering, node, values, scope):
        return lowering.call_instead(f"numpy.{function}", node, values, scope, ("array", "axis", *positional), {"axis": 0})
    return lower


def _count_nonzero(lowering, node, values, scope):
    """np.count_nonzero(a, axis=None, keepdims=False): sum(a != 0) along axis (no gradient)."""
    given = lowering.arguments_by_name(node, values, ("a", "axis", "keepdims"))
    x = lowering.materialize(given["a"], scope)
    zero = lowering.graph.add_constant(0.0, node.pos, scope.stack)
    nonzero = lowering.emit(OPS["not_equal"], (x, zero), {}, node.pos, node.func, scope)
    params = {name: lowering.static_param(name, given[name], node.func, node.pos) for name in ("axis", "keepdims")
              if name in given and not lowering.is_none(given[name])}
    return lowering.emit(OPS["sum"], (nonzero,), dict(OPS["sum"].defaults, **params), node.pos, node.func, scope)


UFUNC_METHODS = {
    "add.reduce": _ufunc_method("sum", "dtype", "out", "keepdims"),
    "multiply.reduce": _ufunc_method("prod", "dtype", "out", "keepdims"),
    "maximum.reduce": _ufunc_method("max", "dtype", "out", "keepdims"),
    "minimum.reduce": _ufunc_method("min", "dtype", "out", "keepdims"),
    "logaddexp.reduce": _ufunc_method("logsumexp", "dtype", "out", "keepdims"),
    "add.accumulate": _ufunc_method("cumsum", "dtype", "out"),
    "multiply.accumulate": _ufunc_method("cumprod", "dtype", "out"),
    "maximum.accumulate": _ufunc_method("cummax", "dtype", "out"),
    "minimum.accumulate": _ufunc_method("cummin", "dtype", "out"),
}

def random_draw(lowering, node, values, scope, work):
    """np.random's and jax.random's draws, the library's numbers where it was seeded (lower/random_draws.py)."""
    return lowering.random_draw(node, values, scope, work)


random_draw.calls_functions = True  # (it reads the work stack: a draw in a body JAX traces once is refused)
RANDOM_NAMES = ("seed", "RandomState", "default_rng", "randn", "rand", "standard_normal", "random", "random_sample",
                "ranf", "sample", "normal", "uniform", "randint", "choice", "permutation", "shuffle")

NAMES = {
    **UFUNC_METHODS, "count_nonzero": _count_nonzero,
    **{f"random.{name}": random_draw for name in RANDOM_NAMES},
    "set_printoptions": setting(),
    # np.testing's: rtol 1e-7, atol 0 (assert_allclose); decimal=6: |a - b| < 1.5e-6; NaN equal to NaN
    "testing.assert_allclose": assertion("NumPy", 1e-7, 0.0, True),
    "testing.assert_array_almost_equal": assertion("NumPy", 0.0, 1.5e-6, True),
    "testing.assert_almost_equal": assertion("NumPy", 0.0, 1.5e-7, True),
    "testing.assert_array_equal": assertion("NumPy", 0.0, 0.0, True),
    # np.array([...]): the value itself
    "array": "identity", "asarray": "identity",
    "absolute": "abs", "true_divide": "divide", "float_power": "power", "remainder": "mod",
    "amax": "max", "amin": "min", "permute_dims": "transpose",
    # the array API's (NumPy 2's) names of the inverse trigonometric functions
    "asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh",
    "atanh": "arctanh", "atan2": "arctan2",
    "radians": "deg2rad", "degrees": "rad2deg", "fix": "trunc", "rint": "round",
    "conj": "real", "conjugate": "real", "real_if_close": "real",
    "trapz": "trapezoid", "stack": "stack_arrays", "row_stack": "vstack", "flatten": "ravel",
    "fliplr": "flip", "flipud": "flip", "empty_like": "empty",
    "copy": "identity",  # np.copy(x), x.copy(): the same numbers
    "tolist": "stop_gradient",  # x.tolist(): Python numbers, which carry no gradient
}

def _order_reading(call):
    """np.reshape(x, shape, order='F'), x.reshape(..., order='F'): Fortran order (reshape_order)."""
    if "order" in call.keywords or (call.positional > 2 and not call.method):
        return "reshape_order", {}
    return None


READINGS = {
    "reshape": _order_reading,
    # np.mean(x, where=mask)
    "mean": lambda call: ("masked_mean", {}) if "where" in call.keywords else None,
    "prod": lambda call: ("masked_prod", {}) if {"initial", "where"} & set(call.keywords) else (
        ("prod_by_division", {}) if call.spelled.startswith("autograd.numpy.") else None),  # (its gradient: ans / x)
    # np.identity(n) is the n x n identity matrix (the constructor `eye`), tf.identity(x) the value x
    "identity": lambda call: ("eye", {}) if call.name == "identity" and call.library == "numpy" else None,
    "average": _average_reading,
    "quantile": _interpolation_reading,
    "percentile": _interpolation_reading,
    "trapezoid": _trapezoid_reading,
    "cumulative_trapezoid": _trapezoid_reading,
    "trace": _trace_reading,
    "cov": _one_array_reading,
    "corrcoef": _one_array_reading,
    "split": _split_reading,
    "flip": _flip_reading,
    "repeat": _repeat_reading,
    "diagonal": _diagonal_reading,
    "empty": _empty_reading,
    "eigh": _eigh_reading("eigh"),
    "eigvalsh": _eigh_reading("eigvalsh"),
    "eig": _complex_refusal,
    "eigvals": _complex_refusal,
}

# Array arguments that may be left out or written as None, and the value that stands for
# them (clip's open bound: `np.clip(x, 0, None)`, `jnp.clip(x, min=0)`)
ABSENT = {
    "clip": {"lo": -math.inf, "hi": math.inf}
}

# PyTorch's methods that NumPy's arrays (and JAX's, TensorFlow's) lack, where NumPy's function of
# that name takes its arguments in another order: as a method of such an array, refused
MISSING_METHODS = {
    "where": "NumPy arrays have no .where method (PyTorch's x.where(condition, y) is where(condition, x, y)): "
             "write np.where(condition, x, y)",
    "polygamma": "NumPy arrays have no .polygamma method (PyTorch's x.polygamma(n) is polygamma(n, x)): "
                 "write scipy.special.polygamma(n, x)",
}

# NumPy's index tricks, `np.c_[a, b]` and `np.r_[a, b]`: the op joining what the subscript holds
INDEX_TRICKS = {"c_": "c_", "r_": "r_"}
# NumPy's name for None in a subscript
NEW_AXIS = "newaxis"
