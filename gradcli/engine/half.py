"""Operations in the half types (float16, bfloat16, float8_*: gradcli/dtypes.py), on NumPy.

Each operation reads its arguments as float32, computes as it does in float32 and rounds its
result to the type once: PyTorch's CPU kernels and XLA compute float16 and bfloat16 so, and
NumPy's own float16 ufuncs too. A result is therefore the float32 result correctly rounded to
the type (for +, -, *, / and sqrt exactly the type's own IEEE operation: float32 holds more
than twice a half type's digits, so the double rounding is innocuous). Sums, means, matrix
products, softmax, logsumexp and norms thus accumulate in float32 (`--accumulate float32`, the
default, as autocast and XLA do). `--accumulate same` accumulates in the type itself: the
namespace `SameAccumulation` gives those operations sums whose every partial sum is rounded
to the type (pairwise, as NumPy sums; a matrix product's inner sums likewise).

The factorizations of linear algebra (LAPACK's: solve, inv, det, cholesky, qr, eigh, svd, lu
...) exist in float32 and float64 only; PyTorch 2.13 and JAX 0.10.2 refuse them in float16
and bfloat16 on the CPU, and so does gradcli (`refuse`, before anything is computed; `_Linalg`
for an op that needs one only for some parameters).
"""
from __future__ import annotations

import numpy as np

from gradcli.dtypes import numpy_dtype
from gradcli.errors import GradcliError
from gradcli.ops import DataError

# The ops whose forward needs a LAPACK factorization (or an SVD, an eigendecomposition) through
# SciPy or otherwise out of the namespace's sight: refused in the half types before anything is
# computed, as PyTorch and JAX refuse them. Any other op that asks the namespace's linalg for
# one (a matrix power of a negative exponent inverts, a norm of order 2 takes singular values)
# is refused as it asks (`_Linalg`), at its place too.
FACTORIZATIONS = frozenset({
    "inv", "solve", "solve_triangular", "cofactor", "det", "slogdet", "slogdet_sign", "slogdet_logabs", "logdet",
    "cholesky", "cholesky_solve", "cholesky_solve_b_first", "qr", "qr_q", "qr_r", "eigh", "eigvalsh",
    "eigh_vectors", "svd", "svdvals", "svd_values_only", "svd_u", "svd_vh", "svd_v", "cond", "pinv", "lstsq",
    "lstsq_solution", "lstsq_residuals", "lstsq_rank", "lstsq_singular_values", "matrix_rank", "matrix_exp",
    "expm_frechet", "tensorinv", "tensorsolve", "cholesky_inverse", "lu_packed", "lu_pivots", "lu_permutation",
    "lu_lower", "lu_upper", "lu_factor", "lu", "lu_solve", "matrix_sqrth", "polar_positive",
    "polar_unitary", "polar", "eig", "eigvals",
})
# NumPy's linalg functions that factorize (the others, matmul, diagonal, vector_norm ..., are allowed)
LAPACK = frozenset({"inv", "solve", "det", "slogdet", "cholesky", "qr", "eigh", "eigvalsh", "eig", "eigvals", "svd",
                    "svdvals", "pinv", "lstsq", "matrix_rank", "cond", "tensorinv", "tensorsolve"})


def reason(dtype: str) -> str:
    """Why a factorization is not computed in the half type `dtype`."""
    return (f"not computed in {dtype}: it needs a LAPACK factorization, which exists in float32 and float64 only "
            f"(PyTorch 2.13 and JAX 0.10.2 refuse it in {dtype} too); run the program with --dtype float32")


def refuse(graph, order, dtype: str) -> None:
    """GradcliError at the first equation of `order` that is a factorization, named as the program calls it."""
    for i in order:
        eq = graph.equations[i]
        if eq.inputs and eq.op.name in FACTORIZATIONS:
            raise GradcliError(f"{eq.label or eq.op.name}: {reason(dtype)}", eq.pos, graph.source)


class Half:
    """How one run computes in a half type: `forward(op, args, params)` -> the result rounded."""

    def __init__(self, dtype: str, accumulate: str = "float32"):
        self.dtype = numpy_dtype(dtype)
        self.wide = np.dtype(np.float32)
        self.xp = (HalfNumpy if accumulate == "float32" else SameAccumulation)(self.dtype)

    def forward(self, op, args, params):
        wide = self.wide
        args = [a.astype(wide) if getattr(a, "dtype", None) != wide else a for a in args]
        form = FRAMEWORK_FORMS.get(op.name)
        value = op.forward(self.xp, *args, **params) if form is None else form(self.dtype, *args)
        return np.asarray(value).astype(self.dtype)


def _held(dtype, value):
    """`value` (float32) as the type holds it, in float32."""
    return np.asarray(value, np.float32).astype(dtype).astype(np.float32)


def _tanh_slope(dtype, x):
    y = _held(dtype, np.tanh(x))
    return 1 - y * y


def _sigmoid_slope(dtype, x):
    with np.errstate(over="ignore"):
        s = _held(dtype, 1 / (1 + np.exp(-x)))
    return s * (1 - s)


# The gradients through tanh and sigmoid as PyTorch's and JAX's kernels compute them in a half
# type: from the forward value as the type holds it (torch's tanh_backward is grad * (1 - y²) and
# sigmoid_backward grad * y * (1 - y), y the rounded output; JAX's rules read `ans` alike), where
# gradcli's rule reads x (sech², exact as tanh(x) nears 1): in bfloat16 tanh(2.95) is held as
# 0.9961, and 1 - y² is 0.0078 where sech² is 0.0108. The float32 computation, rounded once.
FRAMEWORK_FORMS = {
    "tanh_slope": _tanh_slope,
    "tanh_grad": lambda dtype, g, x: g * _tanh_slope(dtype, x),
    "sigmoid_slope": _sigmoid_slope,
    "sigmoid_grad": lambda dtype, g, x: g * _sigmoid_slope(dtype, x),
}


class _Linalg:
    """NumPy's linalg, whose factorizations refuse (DataError: the evaluator says where)."""

    def __init__(self, dtype):
        self.dtype = dtype

    def __getattr__(self, name):
        if name in LAPACK:
            raise DataError(reason(self.dtype.name))
        return getattr(np.linalg, name)


class HalfNumpy:
    """The namespace an op computes in for a half type: NumPy, on float32 arrays, but for the
    factorizations of its linalg, refused."""

    host_numpy = True  # (gradcli.ops.shapes.is_numpy: its arrays are NumPy's, SciPy applies to them)

    def __init__(self, dtype):
        self.dtype = dtype
        self.linalg = _Linalg(dtype)

    def __getattr__(self, name):
        return getattr(np, name)


class SameAccumulation(HalfNumpy):
    """HalfNumpy, but its sums accumulate in `dtype`: every partial sum of sum, nansum, mean,
    cumsum, matmul, einsum, tensordot, vecdot and vdot is rounded to `dtype` (on float32
    arrays whose numbers are of `dtype`, the results are float32 arrays of `dtype`'s numbers).
    Everything else is NumPy's own."""

    def round(self, x, *args, **kwargs):  # NumPy's round, not this namespace's rounding
        return np.round(x, *args, **kwargs)

    def to_type(self, x):
        """`x` rounded to the type, held as float32."""
        return _held(self.dtype, x)

    def _pairwise(self, x, axis):
        """The sum of `x` along `axis`, every partial sum rounded (pairwise, as NumPy sums)."""
        x = np.moveaxis(self.to_type(x), axis, -1)
        if x.shape[-1] == 0:
            return np.zeros(x.shape[:-1], np.float32)
        while x.shape[-1] > 1:
            n = x.shape[-1]
            half = n // 2
            head = self.to_type(x[..., :half] + x[..., half:2 * half])
            x = np.concatenate([head, x[..., 2 * half:]], axis=-1) if n % 2 else head
        return x[..., 0]

    def sum(self, x, axis=None, dtype=None, keepdims=False, **kwargs):
        x = np.asarray(x, dtype=np.float32)
        axes = tuple(range(x.ndim)) if axis is None else (axis,) if np.ndim(axis) == 0 else tuple(axis)
        axes = tuple(a % x.ndim for a in axes) if x.ndim else ()
        kept = [a for a in range(x.ndim) if a not in axes]
        moved = np.transpose(x, kept + list(axes)).reshape([x.shape[a] for a in kept] + [-1])
        total = self._pairwise(moved, -1)
        if keepdims:
            total = total.reshape([1 if a in axes else x.shape[a] for a in range(x.ndim)])
        return total

    def nansum(self, x, axis=None, dtype=None, keepdims=False, **kwargs):
        x = np.asarray(x, dtype=np.float32)
        return self.sum(np.where(np.isnan(x), 0, x), axis=axis, keepdims=keepdims)

    def mean(self, x, axis=None, dtype=None, keepdims=False, **kwargs):
        x = np.asarray(x, dtype=np.float32)
        count = x.size if axis is None else int(np.prod([x.shape[a] for a in np.atleast_1d(axis)]))
        return self.to_type(self.sum(x, axis=axis, keepdims=keepdims) / np.float32(max(count, 1)))

    def cumsum(self, x, axis=None, dtype=None, **kwargs):
        """Prefix sums in the type (each one the previous rounded sum plus the next term)."""
        x = np.asarray(x, dtype=np.float32)
        if axis is None:
            x, axis = x.reshape(-1), 0
        x = np.moveaxis(self.to_type(x), axis, 0)
        out = np.empty_like(x)
        running = np.zeros(x.shape[1:], np.float32)
        for k in range(x.shape[0]):
            running = out[k] = self.to_type(running + x[k])
        return np.moveaxis(out, 0, axis)

    def cumulative_sum(self, x, axis=None, dtype=None, include_initial=False, **kwargs):
        out = self.cumsum(x, axis=0 if axis is None else axis)
        if include_initial:
            axis = 0 if axis is None else axis
            shape = list(out.shape)
            shape[axis] = 1
            out = np.concatenate([np.zeros(shape, np.float32), out], axis=axis)
        return out

    def matmul(self, a, b, **kwargs):
        a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
        vector_a, vector_b = a.ndim == 1, b.ndim == 1
        a = a[None, :] if vector_a else a
        b = b[:, None] if vector_b else b
        products = self.to_type(a[..., :, :, None] * b[..., None, :, :])
        out = self._pairwise(products, -2)
        if vector_b:
            out = out[..., 0]
        if vector_a:
            out = out[..., 0, :] if not vector_b else out[..., 0]
        return out

    def dot(self, a, b, **kwargs):
        a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
        if a.ndim == 0 or b.ndim == 0:
            return self.to_type(a * b)
        if b.ndim <= 2:
            return self.matmul(a, b)
        return self.tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 2]))

    def vdot(self, a, b, **kwargs):
        return self.sum(self.to_type(np.ravel(a).astype(np.float32) * np.ravel(b).astype(np.float32)))

    def vecdot(self, a, b, axis=-1, **kwargs):
        return self.sum(self.to_type(np.asarray(a, np.float32) * np.asarray(b, np.float32)), axis=axis)

    def tensordot(self, a, b, axes=2, **kwargs):
        a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
        if np.ndim(axes) == 0:
            axes = (list(range(a.ndim - axes, a.ndim)), list(range(axes)))
        left, right = [list(np.atleast_1d(s)) for s in axes]
        left = [k % a.ndim for k in left]
        right = [k % b.ndim for k in right]
        free_a = [k for k in range(a.ndim) if k not in left]
        free_b = [k for k in range(b.ndim) if k not in right]
        a2 = np.transpose(a, free_a + left).reshape([a.shape[k] for k in free_a] + [-1])
        b2 = np.transpose(b, right + free_b).reshape([-1] + [b.shape[k] for k in free_b])
        a2 = a2.reshape(-1, a2.shape[-1])
        b2 = b2.reshape(b2.shape[0], -1)
        return self.matmul(a2, b2).reshape([a.shape[k] for k in free_a] + [b.shape[k] for k in free_b])

    def einsum(self, subscripts, *operands, **kwargs):
        """Every product of the operands rounded to the type, then summed over the contracted
        letters in the type (explicit letters only: `...` is refused)."""
        if "..." in subscripts:
            raise DataError(f"einsum with '...' is not computed with --accumulate same in {self.dtype.name}; "
                            "use --accumulate float32, or name every axis")
        spec = subscripts.replace(" ", "")
        inputs, _, output = spec.partition("->")
        terms = inputs.split(",")
        letters = "".join(dict.fromkeys("".join(terms)))
        if "->" not in spec:
            output = "".join(sorted(c for c in letters if inputs.count(c) == 1))
        product = None
        for term, operand in zip(terms, operands):
            seen = "".join(dict.fromkeys(term))
            full = np.einsum(f"{term}->{seen}", np.asarray(operand, np.float32))  # (a repeated letter: its diagonal)
            present = [c for c in letters if c in seen]
            full = np.transpose(full, [seen.index(c) for c in present])
            full = full.reshape([full.shape[present.index(c)] if c in seen else 1 for c in letters])
            product = full if product is None else self.to_type(product * full)
        contracted = tuple(k for k, c in enumerate(letters) if c not in output)
        total = self.sum(product, axis=contracted) if contracted else product
        kept = [c for c in letters if c in output]
        return np.transpose(total, [kept.index(c) for c in output]) if kept else total

