"""The op table, continued (after gradcli/ops/linalg.py): inverses and solves, factorizations
(with their gradient rules) and the matrix exponential."""
from __future__ import annotations

from gradcli.errors import ShapeError
from gradcli.ops.trace import G
from gradcli.ops.table import (
    NO_GRADIENT, NOT_DIFFERENTIABLE, REQUIRED, DataError, Op, register)
from gradcli.ops.shapes import broadcast_shapes, fmt_shape, to_host
from gradcli.ops.core import _mT, _prod_others
from gradcli.ops.linalg import (
    _all_finite, _batch, _check_invertible, _check_symmetric, _column, _matrix, _nan_like, _refuse,
    _row, _square, _sym, _triangle)


# --------------------------------------------------------------------------- inverses and solves

def _inv(xp, a):
    _check_invertible(xp, a)
    if not _all_finite(xp, a):
        return _nan_like(xp, a.shape, a.dtype)
    return xp.linalg.inv(a)


def _inv_vjp(g, ans, a):
    t = _mT(ans)
    return -G.matmul(G.matmul(t, g), t)


register(Op("inv", _inv, lambda a: _square(a), (_inv_vjp,),
            doc="the inverse of a square matrix; a singular one is an error"))


def _vector_rhs(a, b, vector):
    """Whether solve's b holds vectors: NumPy 2 reads a 1-D b as one; PyTorch reads b of shape
    a.shape[:-1] as a stack of them (`vector` preset by the spelling)."""
    if vector is None:
        return len(b) == 1
    return bool(vector) and (len(b) == 1 or tuple(b) == tuple(a[:-1]))


def _solve_shape(a, b, vector=None):
    _square(a)
    if _vector_rhs(a, b, vector):
        if b[-1] != a[-1]:
            raise ShapeError(f"solve of {fmt_shape(a)} and {fmt_shape(b)}: b has {b[-1]} rows, a {a[-1]}")
        return _batch(a[:-2], b[:-1]) + (a[-1],)
    if len(b) < 2 or b[-2] != a[-1]:
        raise ShapeError(f"solve of {fmt_shape(a)} and {fmt_shape(b)}: b must have {a[-1]} rows "
                         "(shape (n,) or (..., n, k))")
    return _batch(a[:-2], b[:-2]) + b[-2:]


def _solve(xp, a, b, vector=None):
    _check_invertible(xp, a)
    if _vector_rhs(a.shape, b.shape, vector):
        return xp.linalg.solve(a, b[..., None])[..., 0]
    return xp.linalg.solve(a, b)


def _solve_vjp_b(g, ans, a, b, vector=None):
    return G.solve(_mT(a), g, vector=_vector_rhs(a.shape, b.shape, vector))


def _solve_vjp_a(g, ans, a, b, vector=None):
    vector = _vector_rhs(a.shape, b.shape, vector)
    gb = G.solve(_mT(a), g, vector=vector)
    if vector:
        return -(_column(gb) * _row(ans))
    return -G.matmul(gb, _mT(ans))


register(Op("solve", _solve, _solve_shape, (_solve_vjp_a, _solve_vjp_b), args=("a", "b"), params={"vector": None},
            doc="solve(a, b): x with a @ x = b; b is a vector (n,) or matrices (..., n, k)"))


def _triangular_flags(lower=False, upper=None, unit_diagonal=False, unitriangular=False, trans=0, adjoint=False):
    lower = (not upper) if upper is not None else bool(lower)
    transposed = bool(adjoint) or trans in (1, 2, "T", "C")
    if trans not in (0, 1, 2, "N", "T", "C"):
        raise ShapeError(f"trans must be 0, 1, 2, 'N', 'T' or 'C', not {trans!r}")
    return lower, bool(unit_diagonal or unitriangular), transposed


_TRIANGULAR_PARAMS = {"lower": False, "upper": None, "unit_diagonal": False, "unitriangular": False, "trans": 0,
                      "adjoint": False}


def _solve_triangular_shape(a, b, **flags):
    _triangular_flags(**flags)
    return _solve_shape(a, b, None)


def _triangular_matrix(xp, a, lower, unit):
    t = _triangle(xp, a, lower)
    if unit:
        n = a.shape[-1]
        t = xp.where(xp.eye(n, dtype=xp.bool), xp.ones((), dtype=a.dtype), t)
    return t


def _solve_triangular(xp, a, b, **flags):
    lower, unit, transposed = _triangular_flags(**flags)
    t = _triangular_matrix(xp, a, lower, unit)
    if _all_finite(xp, t) and bool(xp.any(xp.linalg.diagonal(t) == 0)):
        raise DataError("the triangular matrix is singular: its diagonal holds a zero")
    if transposed:
        t = xp.matrix_transpose(t)
    return _solve(xp, t, b)


def _solve_triangular_vjp_b(g, ans, a, b, **flags):
    lower, unit, transposed = _triangular_flags(**flags)
    return G.solve_triangular(a, g, lower=lower, unit_diagonal=unit, adjoint=not transposed)


def _solve_triangular_vjp_a(g, ans, a, b, **flags):
    lower, unit, transposed = _triangular_flags(**flags)
    gb = G.solve_triangular(a, g, lower=lower, unit_diagonal=unit, adjoint=not transposed)
    if len(b.shape) == 1:
        gt = -(_column(gb) * _row(ans))
    else:
        gt = -G.matmul(gb, _mT(ans))
    if transposed:
        gt = _mT(gt)
    return G.triangle_part(gt, lower=lower, k=(-1 if lower else 1) if unit else 0)


register(Op("solve_triangular", _solve_triangular, _solve_triangular_shape,
            (_solve_triangular_vjp_a, _solve_triangular_vjp_b), args=("a", "b"), params=dict(_TRIANGULAR_PARAMS),
            doc="solve_triangular(a, b, lower=False): solve with the lower or upper triangle of a (SciPy's "
                "default: upper; TensorFlow's: lower)"))


def _cofactor(xp, a):
    """det(a) * inv(a)^T, also where a is singular (from the SVD: no division)."""
    if not _all_finite(xp, a):
        return _nan_like(xp, a.shape, a.dtype)
    u, s, vh = xp.linalg.svd(a)
    signs = xp.linalg.det(u) * xp.linalg.det(vh)
    return (u * _prod_others(xp, s, axis=-1)[..., None, :]) @ vh * signs[..., None, None]


def _matrix_of(g):  # (...) -> (..., 1, 1), to scale a stack of matrices
    return G.reshape(g, shape=g.shape + (1, 1))


def _cofactor_vjp(g, ans, a):
    inv_t = _mT(G.inv(a))
    weight = G.sum(g * ans, axis=(-2, -1))
    return _matrix_of(weight) * inv_t - _matrix_of(G.det(a)) * G.matmul(G.matmul(inv_t, _mT(g)), inv_t)


register(Op("cofactor", _cofactor, lambda a: _square(a), (_cofactor_vjp,), public=False,
            doc="the cofactor matrix det(a) inv(a)^T (the gradient of det)"))
register(Op("det", lambda xp, a: xp.linalg.det(a), lambda a: _square(a)[:-2],
            (lambda g, ans, a: _matrix_of(g) * G.cofactor(a),), doc="the determinant"))


def _slogdet_parts(a):
    _square(a)
    return [("slogdet_sign", {}), ("slogdet_logabs", {})]


def _logabs_vjp(g, ans, a):
    return _matrix_of(g) * _mT(G.inv(a))


register(Op("slogdet", None, None, None, parts=_slogdet_parts, fields=("sign", "logabsdet"),
            doc="sign, log|det| = slogdet(a): the determinant's sign and the logarithm of its magnitude"))
register(Op("slogdet_sign", lambda xp, a: xp.linalg.slogdet(a)[0], lambda a: _square(a)[:-2], NOT_DIFFERENTIABLE,
            public=False, doc="the sign of the determinant"))
register(Op("slogdet_logabs", lambda xp, a: xp.linalg.slogdet(a)[1], lambda a: _square(a)[:-2], (_logabs_vjp,),
            public=False, doc="log |det(a)|"))


def _logdet(xp, a):
    sign, logabs = xp.linalg.slogdet(a)
    return xp.astype(xp.where(sign > 0, logabs, xp.where(sign == 0, -xp.inf, xp.full_like(logabs, xp.nan))), a.dtype)


register(Op("logdet", _logdet, lambda a: _square(a)[:-2], (_logabs_vjp,),
            doc="log det(a): NaN where the determinant is negative"))


def _matrix_power_shape(a, n):
    if not isinstance(n, int):
        raise ShapeError(f"the power must be an integer, not {n}")
    return _square(a)


def _matrix_power(xp, a, n):
    if n < 0:
        _check_invertible(xp, a)
    return xp.linalg.matrix_power(a, n)


def _matrix_power_vjp(g, ans, a, n):
    if n == 0:
        return g * 0.0
    if n < 0:
        b = G.inv(a)
        return _inv_vjp(_matrix_power_vjp(g, G.matrix_power(b, n=-n), b, -n), b, a)
    t = _mT(a)
    powers = {1: t}
    for k in range(2, n):
        powers[k] = G.matmul(powers[k - 1], t)
    total = None
    for k in range(n):  # sum over k of (a^T)^k g (a^T)^(n-1-k)
        term = g if k == 0 else G.matmul(powers[k], g)
        if n - 1 - k:
            term = G.matmul(term, powers[n - 1 - k])
        total = term if total is None else total + term
    return total


register(Op("matrix_power", _matrix_power, _matrix_power_shape, (_matrix_power_vjp,), params={"n": REQUIRED},
            doc="matrix_power(a, n): a @ a @ ... (n times); a negative n inverts"))


# --------------------------------------------------------------------------- factorizations

def _cholesky_flags(upper, lower):
    return (not lower) if lower is not None else bool(upper)


def _cholesky(xp, a, upper=False, lower=None):
    _check_symmetric(xp, a, "cholesky")
    if not _all_finite(xp, a):
        return _nan_like(xp, a.shape, a.dtype)
    try:
        factor = xp.linalg.cholesky((a + xp.matrix_transpose(a)) * 0.5)
    except Exception as exc:  # a LinAlgError: the standard names no class for it
        if type(exc).__name__ != "LinAlgError":
            raise
        raise DataError("the matrix is not positive definite") from None
    return xp.matrix_transpose(factor) if _cholesky_flags(upper, lower) else factor


def _cholesky_vjp(g, ans, a, upper=False, lower=None):
    factor = ans
    if _cholesky_flags(upper, lower):
        factor, g = _mT(ans), _mT(g)
    # a = L L^T: grad = sym(L^-T phi(L^T g) L^-1), phi keeping the lower triangle, half the diagonal
    product = G.matmul(_mT(factor), g)
    phi = G.triangle_part(product, lower=True, k=-1) + 0.5 * (G.triangle_part(product, lower=True, k=0)
                                                             - G.triangle_part(product, lower=True, k=-1))
    left = G.solve_triangular(factor, phi, lower=True, adjoint=True)            # L^-T phi
    both = _mT(G.solve_triangular(factor, _mT(left), lower=True, adjoint=True))  # (L^-T (L^-T phi)^T)^T
    return _sym(both)


register(Op("cholesky", _cholesky, lambda a, **_: _square(a), (_cholesky_vjp,), params={"upper": False, "lower": None},
            doc="the Cholesky factor L (a = L L^T) of a symmetric positive definite matrix; upper=True "
                "gives L^T (SciPy's default)"))


def _cholesky_solve(xp, chol, b, upper=False):
    lower = _triangle(xp, chol, not upper)
    if upper:
        lower = xp.matrix_transpose(lower)
    if _all_finite(xp, lower) and bool(xp.any(xp.linalg.diagonal(lower) == 0)):
        raise DataError("the Cholesky factor is singular: its diagonal holds a zero")
    y = xp.linalg.solve(lower, b)
    return xp.linalg.solve(xp.matrix_transpose(lower), y)


def _cholesky_solve_shape(chol, b, upper=False):
    _square(chol)
    if len(b) < 2 or b[-2] != chol[-1]:
        raise ShapeError(f"cholesky_solve of {fmt_shape(chol)} and {fmt_shape(b)}: the right-hand side must be "
                         f"matrices of {chol[-1]} rows, shape (..., n, k)")
    return _batch(chol[:-2], b[:-2]) + b[-2:]


def _cholesky_solve_vjp_b(g, ans, chol, b, upper=False):
    return G.cholesky_solve(chol, g, upper=upper)


def _cholesky_solve_vjp_chol(g, ans, chol, b, upper=False):
    gb = G.cholesky_solve(chol, g, upper=upper)
    m = -(G.matmul(gb, _mT(ans)) + G.matmul(ans, _mT(gb)))
    if upper:
        return G.triangle_part(G.matmul(chol, m), lower=False)
    return G.triangle_part(G.matmul(m, chol), lower=True)


def _b_first(rule):
    return lambda g, ans, b, chol, upper=False: rule(g, ans, chol, b, upper=upper)


register(Op("cholesky_solve", _cholesky_solve, _cholesky_solve_shape, (_cholesky_solve_vjp_chol, _cholesky_solve_vjp_b),
            args=("chol", "b"), params={"upper": False},
            doc="cholesky_solve(L, b): x with (L L^T) x = b (TensorFlow's order; torch.cholesky_solve(b, L))"))
register(Op("cholesky_solve_b_first", lambda xp, b, chol, upper=False: _cholesky_solve(xp, chol, b, upper),
            lambda b, chol, upper=False: _cholesky_solve_shape(chol, b, upper),
            (_b_first(_cholesky_solve_vjp_b), _b_first(_cholesky_solve_vjp_chol)), args=("b", "chol"),
            params={"upper": False}, public=False, doc="torch.cholesky_solve(b, L)"))


# QR
def _qr_mode(mode, full_matrices):
    if full_matrices is not None:
        return "complete" if full_matrices else "reduced"
    modes = {"reduced": "reduced", "economic": "reduced", "complete": "complete", "full": "complete"}
    if mode not in modes:
        raise ShapeError(f"mode={mode!r} is not supported: write mode='reduced' or 'complete' (qr(a)[1] for R)")
    return modes[mode]


def _qr_parts(a, mode="reduced", full_matrices=None):
    _matrix(a)
    complete = _qr_mode(mode, full_matrices) == "complete"
    return [("qr_q", {"complete": complete}), ("qr_r", {"complete": complete})]


def _qr_q_shape(a, complete=False):
    return _svd_u_shape(a, complete)  # (m, m) complete, (m, min(m, n)) reduced: the same left factor


def _qr_r_shape(a, complete=False):
    m, n = a[-2:]
    return a[:-2] + (m if complete else min(m, n), n)


def _qr_vjp(part):
    def vjp(g, ans, a, complete=False):
        m, n = a.shape[-2:]
        if m < n:
            _refuse(g, "the gradient of qr of a wide matrix (fewer rows than columns) is not implemented")
        if complete and m != n:
            _refuse(g, "the gradient of qr with the complete Q of a tall matrix does not exist (its extra columns "
                       "are arbitrary): use mode='reduced'")
        q, r = G.qr_q(a, complete=False), G.qr_r(a, complete=False)
        # a = q r: grad = (gq + q copyltu(M)) r^-T, M = r gr^T - gq^T q
        if part == "q":
            m_ = -G.matmul(_mT(g), q)
            left = g
        else:
            m_ = G.matmul(r, _mT(g))
            left = None
        mirrored = G.triangle_part(m_, lower=True) + _mT(G.triangle_part(m_, lower=True, k=-1))
        total = G.matmul(q, mirrored) if left is None else left + G.matmul(q, mirrored)
        return _mT(G.solve_triangular(r, _mT(total), lower=False))
    return vjp


register(Op("qr", None, None, None, params={"mode": "reduced", "full_matrices": None}, parts=_qr_parts,
            doc="q, r = qr(a): the reduced QR factorization (mode='complete' for the square q)"))
register(Op("qr_q", lambda xp, a, complete=False: xp.linalg.qr(a, mode="complete" if complete else "reduced")[0],
            _qr_q_shape, (_qr_vjp("q"),), params={"complete": False}, public=False, doc="the Q of qr"))
register(Op("qr_r", lambda xp, a, complete=False: xp.linalg.qr(a, mode="complete" if complete else "reduced")[1],
            _qr_r_shape, (_qr_vjp("r"),), params={"complete": False}, public=False, doc="the R of qr"))


# symmetric eigenproblem. Which matrix eigh reads, and so where its gradient goes, is the spelling's
# library's (`reads`): NumPy, autograd, TensorFlow and SciPy read one triangle (UPLO='L' / lower=True
# by default) and their gradient lies on that triangle; PyTorch reads the triangle too but gives the
# symmetric gradient; JAX reads the symmetric part (a + a^T)/2; a bare eigh reads the symmetric part
# and refuses a matrix that is clearly not symmetric, where the libraries' numbers differ.
_EIGH_PARAMS = {"UPLO": None, "lower": None, "reads": None}
_EIGH_READS = (None, "symmetrized", "triangle", "triangle_symmetric_gradient")


def _reads_lower(UPLO, lower) -> bool:
    if UPLO not in (None, "L", "U") or lower not in (None, True, False, 0, 1):
        raise ShapeError(f"UPLO must be 'L' or 'U' (and lower True or False), not {UPLO if lower is None else lower!r}")
    return UPLO != "U" and lower not in (False, 0)


def _matrix_read(xp, a, reads, UPLO, lower):
    """The symmetric matrix an eigh spelling reads of its argument."""
    if reads in ("triangle", "triangle_symmetric_gradient"):
        low = _reads_lower(UPLO, lower)
        return (xp.tril(a) + xp.matrix_transpose(xp.tril(a, -1)) if low
                else xp.triu(a) + xp.matrix_transpose(xp.triu(a, 1)))
    if reads is None:
        _check_symmetric(xp, a, "eigh")
    return (a + xp.matrix_transpose(a)) * 0.5


def _symmetric_eigh(xp, a, UPLO=None, lower=None, reads=None):
    read = _matrix_read(xp, a, reads, UPLO, lower)
    if not _all_finite(xp, read):
        n = a.shape[-1]
        return _nan_like(xp, a.shape[:-1], a.dtype), _nan_like(xp, a.shape[:-2] + (n, n), a.dtype)
    if reads in ("triangle", "triangle_symmetric_gradient"):  # LAPACK on the triangle: the library's signs
        return xp.linalg.eigh(a, UPLO="L" if _reads_lower(UPLO, lower) else "U")
    return xp.linalg.eigh(read)


def _eigh_shape(a, UPLO=None, lower=None, reads=None):
    if reads not in _EIGH_READS:
        raise ShapeError(f"reads must be one of {', '.join(repr(r) for r in _EIGH_READS)}, not {reads!r}")
    _reads_lower(UPLO, lower)
    return _square(a)


def _eigh_parts(a, **params):
    _eigh_shape(a, **params)
    return [("eigvalsh", params), ("eigh_vectors", params)]


def _onto_argument(s, UPLO=None, lower=None, reads=None):
    """The gradient with respect to the matrix read (s, symmetric) as the argument's: on the
    triangle read (its off-diagonal entries count twice) where the library's gradient is the
    triangle's, else s itself."""
    if reads != "triangle":
        return s
    return G.tril(s) + G.tril(s, k=-1) if _reads_lower(UPLO, lower) else G.triu(s) + G.triu(s, k=1)


def _eigvalsh_vjp(g, ans, a, **params):
    v = G.eigh_vectors(a, **params)
    return _onto_argument(G.matmul(v * _row(g), _mT(v)), **params)


def _eigh_vectors_vjp(g, ans, a, **params):
    # grad = sym(V (F o V^T g) V^T), F[i, j] = 1 / (w_j - w_i): NaN where eigenvalues repeat
    gaps = G.inverse_gaps(G.eigvalsh(a, **params))
    inner = gaps * G.matmul(_mT(ans), g)
    return _onto_argument(_sym(G.matmul(G.matmul(ans, inner), _mT(ans))), **params)


register(Op("eigh", None, None, None, params=dict(_EIGH_PARAMS), parts=_eigh_parts,
            fields=("eigenvalues", "eigenvectors"),
            doc="w, v = eigh(a): eigenvalues (ascending) and eigenvectors of a symmetric matrix; "
                "which triangle it reads, and its gradient's, are the spelling's library's"))
register(Op("eigvalsh", lambda xp, a, **params: _symmetric_eigh(xp, a, **params)[0],
            lambda a, **params: _eigh_shape(a, **params)[:-1], (_eigvalsh_vjp,), params=dict(_EIGH_PARAMS),
            doc="the eigenvalues of a symmetric matrix, ascending"))
register(Op("eigh_vectors", lambda xp, a, **params: _symmetric_eigh(xp, a, **params)[1], _eigh_shape,
            (_eigh_vectors_vjp,), params=dict(_EIGH_PARAMS), public=False, doc="the eigenvectors of eigh (columns)"))


# singular value decomposition
def _svd_parts(a, full_matrices=True, compute_uv=True, hermitian=False, some=None, layout="usvh"):
    _matrix(a)
    if not compute_uv:
        raise ShapeError("compute_uv=False returns the singular values alone: write svdvals(a)")  # (read apart)
    if hermitian:
        raise ShapeError("hermitian=True is not supported (its singular vectors may differ in sign): leave it out")
    full = bool(full_matrices) if some is None else not some
    if layout == "suv":  # TensorFlow: s, u, v
        return [("svdvals", {}), ("svd_u", {"full": full}), ("svd_v", {"full": full})]
    if layout == "usv":  # torch.svd: u, s, v
        return [("svd_u", {"full": full}), ("svdvals", {}), ("svd_v", {"full": full})]
    return [("svd_u", {"full": full}), ("svdvals", {}), ("svd_vh", {"full": full})]


def _svd_u_shape(a, full=False):
    m, n = a[-2:]
    return a[:-2] + (m, m if full else min(m, n))


def _svd_vh_shape(a, full=False):
    m, n = a[-2:]
    return a[:-2] + (n if full else min(m, n), n)


def _svd_vjp(a, gu=None, gs=None, gv=None):
    """Townsend's rule for the reduced SVD a = u diag(s) v^T (gv: the gradient of v, not of v^T)."""
    m, n = a.shape[-2:]
    u, s, vh = G.svd_u(a, full=False), G.svdvals(a), G.svd_vh(a, full=False)
    v = _mT(vh)
    k = min(m, n)
    total = None
    if gs is not None:
        total = G.matmul(u * _row(gs), vh)
    inner = None
    if gu is not None or gv is not None:
        gaps = G.inverse_gaps(s, squared=True)  # 1 / (s_j^2 - s_i^2): NaN where singular values repeat
    if gu is not None:
        ut_gu = G.matmul(_mT(u), gu)
        inner = gaps * (ut_gu - _mT(ut_gu)) * _row(s)
        if m > k:
            rest = G.matmul(gu - G.matmul(u, ut_gu), G.reshape(1.0 / s, shape=s.shape[:-1] + (k, 1)) * vh)
            total = rest if total is None else total + rest
    if gv is not None:
        vt_gv = G.matmul(_mT(v), gv)
        term = _column(s) * (gaps * (vt_gv - _mT(vt_gv)))
        inner = term if inner is None else inner + term
        if n > k:
            rest = G.matmul(u / _row(s), _mT(gv - G.matmul(v, vt_gv)))
            total = rest if total is None else total + rest
    if inner is not None:
        middle = G.matmul(G.matmul(u, inner), vh)
        total = middle if total is None else total + middle
    return total


def _svd_vectors_vjp(which):
    def vjp(g, ans, a, full=False):
        m, n = a.shape[-2:]
        if full and m != n and ((which == "u" and m > n) or (which != "u" and n > m)):
            _refuse(g, "the gradient of the full singular vectors of a non-square matrix does not exist (the extra "
                       "ones are arbitrary): use full_matrices=False")
        if which == "u":
            return _svd_vjp(a, gu=g)
        return _svd_vjp(a, gv=g if which == "v" else _mT(g))
    return vjp


def _svd_forward(xp, a, index, full):
    if not _all_finite(xp, a):
        shapes = (_svd_u_shape(a.shape, full), a.shape[:-2] + (min(a.shape[-2:]),), _svd_vh_shape(a.shape, full))
        return _nan_like(xp, shapes[index], a.dtype)
    return xp.linalg.svd(a, full_matrices=full)[index]


register(Op("svd", None, None, None, parts=_svd_parts,
            params={"full_matrices": True, "compute_uv": True, "hermitian": False, "some": None, "layout": "usvh"},
            doc="u, s, vh = svd(a): NumPy's order and full matrices by default; tf.linalg.svd gives s, u, v"))
def _svdvals(xp, a, **_):
    return xp.linalg.svdvals(a) if _all_finite(xp, a) else _svd_forward(xp, a, 1, False)


register(Op("svdvals", _svdvals, lambda a: _matrix(a)[:-2] + (min(a[-2:]),),
            (lambda g, ans, a: _svd_vjp(a, gs=g),), doc="the singular values, descending"))


def _svd_values_only_shape(a, compute_uv=True, **_):
    if compute_uv:
        raise ShapeError("compute_uv=True returns u, s, vh: leave compute_uv out")
    return _matrix(a)[:-2] + (min(a[-2:]),)


register(Op("svd_values_only", _svdvals, _svd_values_only_shape,
            (lambda g, ans, a, **_: _svd_vjp(a, gs=g),),
            params={"compute_uv": REQUIRED, "full_matrices": True, "hermitian": False}, public=False,
            doc="svd(a, compute_uv=False): the singular values"))
register(Op("svd_u", lambda xp, a, full=False: _svd_forward(xp, a, 0, full), _svd_u_shape, (_svd_vectors_vjp("u"),),
            params={"full": False}, public=False, doc="the u of svd"))
register(Op("svd_vh", lambda xp, a, full=False: _svd_forward(xp, a, 2, full), _svd_vh_shape, (_svd_vectors_vjp("vh"),),
            params={"full": False}, public=False, doc="the vh of svd"))
register(Op("svd_v", lambda xp, a, full=False: xp.matrix_transpose(_svd_forward(xp, a, 2, full)),
            lambda a, full=False: _svd_vh_shape(a, full)[:-2] + _svd_vh_shape(a, full)[:-3:-1],
            (_svd_vectors_vjp("v"),), params={"full": False}, public=False, doc="the v of svd (vh transposed)"))


def _cond_shape(a, p=None):
    if p not in (None, 2, -2):
        raise ShapeError(f"cond with p={p} is not supported: only the 2-norm (p=None, 2 or -2)")
    return _matrix(a)[:-2]


def _cond(xp, a, p=None):
    s = xp.linalg.svdvals(a)
    with_zero = xp.where(s[..., -1] == 0, xp.inf, s[..., 0] / xp.where(s[..., -1] == 0, 1, s[..., -1]))
    return 1 / with_zero if p == -2 else with_zero


def _cond_vjp(g, ans, a, p=None):
    s = G.svdvals(a)
    batch = ((None, None, None),) * (len(s.shape) - 1)
    first, last = batch + (0,), batch + (-1,)
    if p == -2:
        first, last = last, first
    top, bottom = G.index(s, index=first), G.index(s, index=last)
    gs = G.scatter(g / bottom, shape=s.shape, index=first) + G.scatter(-(g * top) / (bottom * bottom),
                                                                        shape=s.shape, index=last)
    return _svd_vjp(a, gs=gs)


register(Op("cond", _cond, _cond_shape, (_cond_vjp,), params={"p": None},
            doc="the condition number in the 2-norm, s_max / s_min"))


def _pinv_vjp(g, ans, a, **_):
    # X = pinv(a): -X^T g X^T + (I - a X) g^T X X^T + X^T X g^T (I - X a)   (constant rank)
    x, gt = ans, _mT(g)
    first = -G.matmul(G.matmul(_mT(x), g), _mT(x))
    m2 = G.matmul(gt, G.matmul(x, _mT(x)))
    second = m2 - G.matmul(a, G.matmul(x, m2))
    m3 = G.matmul(G.matmul(_mT(x), x), gt)
    third = m3 - G.matmul(G.matmul(m3, x), a)
    return first + second + third


def _pinv(xp, a, rcond=None, hermitian=False, rtol=None):
    if not _all_finite(xp, a):
        return _nan_like(xp, a.shape[:-2] + a.shape[:-3:-1], a.dtype)
    if rcond is None and rtol is None:
        return xp.linalg.pinv(a)
    return xp.linalg.pinv(a, rcond=rcond if rcond is not None else rtol)


register(Op("pinv", _pinv, lambda a, **_: _matrix(a)[:-2] + a[:-3:-1], (_pinv_vjp,),
            params={"rcond": None, "hermitian": False, "rtol": None},
            doc="the Moore-Penrose pseudo-inverse; its gradient assumes the rank does not change nearby"))


def _lstsq_shape(a, b, rcond=None):
    if len(a) != 2 or len(b) not in (1, 2) or b[0] != a[0]:
        raise ShapeError(f"lstsq needs a matrix (m, n) and b of m rows, (m,) or (m, k); got {fmt_shape(a)} and "
                         f"{fmt_shape(b)}")
    return (a[1],) + tuple(b[1:])


def _lstsq(xp, a, b, rcond=None):
    if not (_all_finite(xp, a) and _all_finite(xp, b)):
        return _nan_like(xp, _lstsq_shape(a.shape, b.shape), a.dtype)
    return xp.linalg.lstsq(a, b, rcond=rcond)[0]


def _lstsq_solution_vjp_a(g, ans, a, b, rcond=None):
    x = G.pinv(a, rcond=rcond)
    gx = _column(g) * _row(b) if len(b.shape) == 1 else G.matmul(g, _mT(b))
    return _pinv_vjp(gx, x, a)


def _lstsq_solution_vjp_b(g, ans, a, b, rcond=None):
    return G.matmul(_mT(G.pinv(a, rcond=rcond)), g)


def _lstsq_residuals_shape(a, b, rcond=None):
    _lstsq_shape(a, b)
    return ((b[1] if len(b) == 2 else 1),) if a[0] > a[1] else (0,)


def _lstsq_residuals(xp, a, b, rcond=None):
    x, residuals, rank, _ = xp.linalg.lstsq(a, b, rcond=rcond)
    if a.shape[0] > a.shape[1] and rank < a.shape[1]:
        raise DataError(f"the matrix has rank {rank} < {a.shape[1]} columns: NumPy returns no residuals then")
    return xp.astype(residuals, a.dtype)


def _residual(a, b, rcond):
    return G.matmul(a, G.lstsq_solution(a, b, rcond=rcond)) - b


def _lstsq_residuals_vjp_a(g, ans, a, b, rcond=None):
    # at the optimum the solution's own change does not move the residuals (normal equations)
    r = _residual(a, b, rcond)
    x = G.lstsq_solution(a, b, rcond=rcond)
    if len(b.shape) == 1:
        return 2.0 * G.reshape(g, shape=()) * _column(r) * _row(x)
    return 2.0 * G.matmul(r * _row(g), _mT(x))


def _lstsq_residuals_vjp_b(g, ans, a, b, rcond=None):
    r = _residual(a, b, rcond)
    return -2.0 * (r * (G.reshape(g, shape=()) if len(b.shape) == 1 else _row(g)))


def _lstsq_parts(a, b, rcond=None):
    _lstsq_shape(a, b)
    return [("lstsq_solution", {"rcond": rcond}), ("lstsq_residuals", {"rcond": rcond}),
            ("lstsq_rank", {"rcond": rcond}), ("lstsq_singular_values", {})]


register(Op("lstsq", None, None, None, args=("a", "b"), params={"rcond": None}, parts=_lstsq_parts,
            doc="x, residuals, rank, s = lstsq(a, b): least squares (tf.linalg.lstsq gives x alone)"))
register(Op("lstsq_solution", _lstsq, _lstsq_shape,
            (_lstsq_solution_vjp_a, _lstsq_solution_vjp_b), args=("a", "b"), params={"rcond": None}, public=False,
            doc="the least-squares solution", nonstandard="NumPy's linalg.lstsq"))
register(Op("lstsq_residuals", _lstsq_residuals, _lstsq_residuals_shape,
            (_lstsq_residuals_vjp_a, _lstsq_residuals_vjp_b), args=("a", "b"), params={"rcond": None},
            public=False, doc="the sums of squared residuals of lstsq",
            nonstandard="NumPy's linalg.lstsq"))
register(Op("lstsq_rank", lambda xp, a, b, rcond=None: xp.asarray(xp.linalg.lstsq(a, b, rcond=rcond)[2], dtype=a.dtype),
            lambda a, b, rcond=None: (), NOT_DIFFERENTIABLE * 2, args=("a", "b"), params={"rcond": None},
            public=False, doc="the rank lstsq found", nonstandard="NumPy's linalg.lstsq"))
register(Op("lstsq_singular_values", lambda xp, a, b: xp.linalg.svdvals(a),
            lambda a, b: (min(a[-2:]),), (lambda g, ans, a, b: _svd_vjp(a, gs=g), NO_GRADIENT), args=("a", "b"),
            public=False, doc="the singular values of lstsq's matrix"))

register(Op("matrix_rank", lambda xp, a, tol=None: xp.asarray(xp.linalg.matrix_rank(a, tol=tol), dtype=a.dtype),
            lambda a, tol=None: _matrix(a)[:-2], NOT_DIFFERENTIABLE, params={"tol": None},
            doc="the number of singular values above tol"))


# --------------------------------------------------------------------------- the matrix exponential

def _expm(xp, a):
    if not _all_finite(xp, a):
        return _nan_like(xp, a.shape, a.dtype)
    import scipy.linalg
    return xp.asarray(scipy.linalg.expm(to_host(xp, a))).astype(a.dtype)


def _expm_frechet(xp, a, e):
    """The derivative of expm at a in the direction e: the top-right block of expm([[a, e], [0, a]])."""
    n = a.shape[-1]
    batch = broadcast_shapes(a.shape[:-2], e.shape[:-2])
    block = xp.zeros(batch + (2 * n, 2 * n), dtype=a.dtype)
    block[..., :n, :n] = a
    block[..., n:, n:] = a
    block[..., :n, n:] = e
    return _expm(xp, block)[..., :n, n:]


register(Op("matrix_exp", _expm, lambda a: _square(a), (lambda g, ans, a: G.expm_frechet(_mT(a), g),),
            doc="the matrix exponential; its gradient by the block-matrix rule",
            nonstandard="scipy.linalg's expm"))
register(Op("expm_frechet", _expm_frechet, lambda a, e: _batch(_square(a)[:-2], _square(e)[:-2]) + a[-2:],
            (None, lambda g, ans, a, e: G.expm_frechet(_mT(a), g)), args=("a", "e"), public=False,
            doc="the derivative of expm at a in the direction e (no gradient in a: no second derivative)",
            nonstandard="scipy.linalg's expm"))
