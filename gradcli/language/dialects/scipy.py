"""SciPy's spellings (`scipy.special.`, `scipy.stats.`, `scipy.linalg.`, `integrate.`, and JAX's
`jax.scipy.`): its other names for the table's functions and the readings where SciPy's defaults
differ (a softmax over every element, an upper Cholesky factor, the complete Q of a QR)."""
from __future__ import annotations

from gradcli.ops import OPS
from gradcli.language.dialects.spelling import ReadingError, Spelling


def _logsumexp_weights(call: Spelling):
    """SciPy's logsumexp(a, axis, b): with weights b it is log(sum(b exp(a))), an op of its own
    (gradcli.ops.nn); TensorFlow's third argument is keepdims."""
    if "b" in call.keywords or (call.library == "scipy" and call.positional >= 3):
        return "weighted_logsumexp", {}
    if call.library == "torch" and call.positional < 2 and not {"dim", "axis"} & set(call.keywords):
        raise ReadingError("torch.logsumexp(x, dim) needs its dim (PyTorch has no default); "
                           "write torch.logsumexp(x, dim=...)")
    return None


def _softmax_reading(call: Spelling):
    """The axis a softmax takes when none is written: -1 in TensorFlow, JAX and Keras; every
    element in SciPy (`scipy.special.softmax(x)`, axis=None); PyTorch's deprecated implicit
    dim depends on the rank (0 for 1-D and 3-D, else 1), so it is refused."""
    if call.positional >= 2 or "axis" in call.keywords or "dim" in call.keywords:
        return None
    if call.library == "scipy":
        return call.name, {"axis": None}
    if call.library == "torch":
        raise ReadingError(f"torch's {call.name} without dim picks the axis from the rank (deprecated in "
                           f"PyTorch: 0 for 1-D and 3-D inputs, else 1); write dim=... as PyTorch asks")
    return None


def _cholesky_reading(call: Spelling):
    if call.library == "scipy" and "lower" not in call.keywords:
        return "cholesky", {"lower": False}  # scipy.linalg.cholesky: upper by default
    return None


def _qr_reading(call: Spelling):
    if call.library == "scipy" and "mode" not in call.keywords:
        return "qr", {"mode": "full"}  # scipy.linalg.qr: the complete Q by default
    return None


def _lu_factor_reading(call):
    if call.library == "torch":
        return None
    if call.library == "scipy":
        return "lu_factor", {"one_based": False}
    raise ReadingError("lu_factor() without its library: torch.linalg.lu_factor numbers the pivots from 1, "
                       "scipy.linalg.lu_factor from 0; write torch.linalg.lu_factor or scipy.linalg.lu_factor")


def _lu_solve_reading(call):
    if call.library == "scipy" or call.positional == 2:
        raise ReadingError("scipy.linalg.lu_solve((lu, piv), b) is not supported: write "
                           "torch.linalg.lu_solve(LU, pivots, B), with the pivots of torch.linalg.lu_factor")
    return None


def _cho_solve(lowering, node, values, scope):
    """scipy.linalg.cho_solve((c, lower), b), jax.scipy.linalg.cho_solve: the factor and its flag
    as a pair (cho_factor's result); only c's lower (or upper) triangle is read, as SciPy's."""
    label = "cho_solve"
    if len(node.args) != 2 or node.method:
        raise lowering.error(f"{label}((c, lower), b) takes the pair cho_factor gives and b", node.pos)
    pair, b = values[0], values[1]
    items = getattr(pair, "items", None)
    if not isinstance(items, list) or len(items) != 2:
        raise lowering.error(f"{label}: its first argument is the pair (c, lower), as cho_factor gives", node.pos)
    for kw, value in zip(node.keywords, values[2:]):
        if kw.name not in ("overwrite_b", "check_finite"):
            raise lowering.error(f"{label}() has no argument '{kw.name}'", kw.pos)
    lower = lowering.static_param("lower", items[1], label, node.pos)
    if lower not in (0, 1):
        raise lowering.error(f"{label}: lower must be True or False, not {lower!r}", node.pos)
    chol, rhs = lowering.materialize(items[0], scope), lowering.materialize(b, scope)
    shape = lowering.graph.shapes[rhs]
    if shape is None or lowering.graph.shapes[chol] is None:
        return chol  # a missing input: the lowering lists them all
    vector = len(shape) == 1
    if vector:
        rhs = lowering.emit(OPS["reshape"], (rhs,), {"shape": shape + (1,)}, node.pos, label, scope)
    out = lowering.emit_call(OPS["cholesky_solve"], (chol, rhs), {"upper": not lower}, node.pos, label, scope)
    return lowering.emit(OPS["reshape"], (out,), {"shape": shape}, node.pos, label, scope) if vector else out


NAMES = {
    "cho_solve": _cho_solve,
    "expit": "sigmoid", "psi": "digamma", "jn": "jv", "yn": "yv",
    "cumtrapz": "cumulative_trapezoid", "expm": "matrix_exp",
    # scipy.stats.norm's methods
    "norm.logpdf": "norm_logpdf", "norm.pdf": "norm_pdf", "norm.cdf": "norm_cdf", "norm.logcdf": "norm_logcdf",
    "norm.sf": "norm_sf", "norm.ppf": "norm_ppf",
}

def _kl_div_reading(call):
    """scipy.special.kl_div(x, y) (and jax.scipy.special's) is elementwise, x log(x / y) - x + y;
    PyTorch's F.kl_div(input, target) is a loss over log-probabilities, reduced."""
    if call.library == "torch" and "functional." not in call.spelled and not call.spelled.startswith("F."):
        raise ReadingError("torch.kl_div is ATen's function, whose reduction is an integer: write F.kl_div "
                           "(torch.nn.functional.kl_div) for PyTorch's loss")
    return ("kl_div_elementwise", {}) if call.library == "scipy" else None


def _xlogy_reading(call):
    """xlogy's slope in x at x = 0: TensorFlow's 0 (the op's), JAX's jax.scipy.special.xlogy log(y),
    PyTorch's log(y) but 0 where y <= 0 too."""
    if call.library == "torch":
        return "xlogy_masked_slope", {}
    if call.spelled.startswith("jax."):
        return "xlogy_log_slope", {}
    return None


READINGS = {
    "xlogy": _xlogy_reading,
    "kl_div": _kl_div_reading,
    # jax.scipy.special.xlog1py: JAX's slope log1p(y) in x also at x = 0 (tf.math.xlog1py's is 0 there)
    "xlog1py": lambda call: ("xlog1py_log_slope", {}) if call.spelled.startswith("jax.") else None,
    "logsumexp": _logsumexp_weights,
    "softmax": _softmax_reading,
    "log_softmax": _softmax_reading,
    "cholesky": _cholesky_reading,
    "qr": _qr_reading,
    "lu_factor": _lu_factor_reading,
    "lu_solve": _lu_solve_reading,
}

ABSENT: dict = {}
