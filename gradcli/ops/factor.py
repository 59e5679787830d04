"""The op table, continued: more linear algebra: products and inverses of tensors
(`multi_dot`, `tensorinv`, `tensorsolve`), the LU factorization (`lu_factor`, `lu`,
`lu_solve`), `cholesky_inverse`, `householder_product`, `vander`; and the refusal of the
general eigenproblem (`eig`, `eigvals`), whose results are complex where gradcli's values are
real.

Most are composites (gradcli/ops/nn.py describes them) of the table's linear algebra, so their
gradients and second derivatives are those ops' own. The LU factor is a record of its own: its
gradient, A = P L U with P held fixed, is written in `solve_triangular` equations (PyTorch's
formula for square matrices), so it differentiates again.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from gradcli.errors import ShapeError
from gradcli.ops.trace import G
from gradcli.ops.table import NOT_DIFFERENTIABLE, REQUIRED, DataError, Op, register
from gradcli.ops.core import _mT
from gradcli.ops.shapes import fmt_shape, to_host
from gradcli.ops.nn import composite
from gradcli.ops.linalg import _check_symmetric, _square


# --------------------------------------------------------------------------- multi_dot

def _multi_dot_plan(shapes):
    """The shapes as matrices (a first vector a row, a last one a column), and the result's."""
    if len(shapes) < 2:
        raise ShapeError("multi_dot needs at least two arrays")
    mats = []
    for k, s in enumerate(shapes):
        if len(s) == 1 and k in (0, len(shapes) - 1):
            mats.append((1, s[0]) if k == 0 else (s[0], 1))
        elif len(s) == 2:
            mats.append(tuple(s))
        else:
            where = "the first and last" if k in (0, len(shapes) - 1) else "the inner ones"
            raise ShapeError(f"array {k} has shape {fmt_shape(s)}: multi_dot takes matrices ({where} may be vectors)")
    for k in range(len(mats) - 1):
        if mats[k][1] != mats[k + 1][0]:
            raise ShapeError(f"arrays {k} and {k + 1} do not chain: shapes {fmt_shape(shapes[k])} and "
                             f"{fmt_shape(shapes[k + 1])}")
    out = ()
    if len(shapes[0]) == 2:
        out += (mats[0][0],)
    if len(shapes[-1]) == 2:
        out += (mats[-1][1],)
    return mats, out


def _multi_dot(xp, *xs):
    mats, out = _multi_dot_plan([x.shape for x in xs])
    result = xp.reshape(xs[0], mats[0])
    for x, m in zip(xs[1:], mats[1:]):
        result = xp.matmul(result, xp.reshape(x, m))
    return xp.reshape(result, out)


def _chain(xs, mats):
    result = None
    for x, m in zip(xs, mats):
        x = x if x.shape == m else G.reshape(x, shape=m)
        result = x if result is None else G.matmul(result, x)
    return result


def _multi_dot_rule(i):
    def vjp(g, ans, *xs):
        mats, _ = _multi_dot_plan([x.shape for x in xs])
        rows, cols = mats[0][0], mats[-1][1]
        g = g if g.shape == (rows, cols) else G.reshape(g, shape=(rows, cols))
        if i > 0:
            g = G.matmul(_mT(_chain(xs[:i], mats[:i])), g)
        if i < len(xs) - 1:
            g = G.matmul(g, _mT(_chain(xs[i + 1:], mats[i + 1:])))
        return g if g.shape == xs[i].shape else G.reshape(g, shape=xs[i].shape)
    return vjp


register(Op("multi_dot", _multi_dot, lambda *shapes: _multi_dot_plan(shapes)[1], (_multi_dot_rule,), args=(),
            variadic=True, sequence=1,
            doc="multi_dot([a, b, c, ...]): a @ b @ c ... (the first and last may be vectors), left to right"))


# --------------------------------------------------------------------------- tensorinv, tensorsolve

@composite("tensorinv", ("a",), {"ind": 2},
           "np.linalg.tensorinv(a, ind=2): the inverse of a read as a matrix of its first ind axes by the rest, "
           "shaped a.shape[ind:] + a.shape[:ind]")
def _tensorinv(f, a, ind):
    if isinstance(ind, bool) or not isinstance(ind, int) or ind <= 0:
        raise ShapeError(f"ind must be a positive integer, not {ind!r}")
    rows, cols = a.shape[:ind], a.shape[ind:]
    if math.prod(rows) != math.prod(cols):
        raise ShapeError(f"a of shape {fmt_shape(a.shape)} with ind={ind} is not square: "
                         f"{math.prod(rows)} rows for {math.prod(cols)} columns")
    inverse = f.inv(f.reshape(a, shape=(math.prod(rows), math.prod(cols))))
    return f.reshape(inverse, shape=cols + rows)


@composite("tensorsolve", ("a", "b"), {"axes": None},
           "np.linalg.tensorsolve(a, b, axes=None): x with tensordot(a, x, x.ndim) = b (axes: a's axes moved "
           "to the end first)")
def _tensorsolve(f, a, b, axes):
    if axes is not None:
        moved = tuple(axes) if isinstance(axes, tuple) else (axes,)
        if any(isinstance(k, bool) or not isinstance(k, int) or not -a.ndim <= k < a.ndim for k in moved) or \
                len({k % a.ndim for k in moved}) != len(moved):
            raise ShapeError(f"axes {axes} are not distinct axes of a (rank {a.ndim})")
        order = [k % a.ndim for k in moved]
        a = f.transpose(a, axes=tuple(k for k in range(a.ndim) if k not in order) + tuple(order))
    if a.shape[:b.ndim] != b.shape:
        raise ShapeError(f"a's leading axes {fmt_shape(a.shape[:b.ndim])} must be b's shape {fmt_shape(b.shape)}")
    x_shape = a.shape[b.ndim:]
    n = math.prod(b.shape)
    if math.prod(x_shape) != n:
        raise ShapeError(f"a of shape {fmt_shape(a.shape)} is not square for b of shape {fmt_shape(b.shape)}: "
                         f"{n} equations for {math.prod(x_shape)} unknowns")
    x = f.solve(f.reshape(a, shape=(n, n)), f.reshape(b, shape=(n,)))
    return f.reshape(x, shape=x_shape)


# --------------------------------------------------------------------------- cholesky_inverse

@composite("cholesky_inverse", ("input",), {"upper": False},
           "torch.cholesky_inverse(L, upper=False): the inverse of L L^T (upper=True: U^T U), reading only L's "
           "lower (upper) triangle as LAPACK does, so the other triangle gets no gradient")
def _cholesky_inverse(f, chol, upper):
    _square(chol.shape, "cholesky_inverse")
    eye = np.broadcast_to(np.eye(chol.shape[-1]), chol.shape)
    return f.cholesky_solve(chol, eye, upper=bool(upper))


# --------------------------------------------------------------------------- LU

def _lu_each(a):
    """scipy.linalg.lu_factor of each matrix of a stack: (packed L and U, 0-based pivots)."""
    import scipy.linalg

    packed, pivots = np.empty(a.shape, dtype=a.dtype), np.empty(a.shape[:-1], dtype=np.int64)
    for k in np.ndindex(a.shape[:-2]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a singular matrix factors (U has a zero); its solves refuse it
            packed[k], pivots[k] = scipy.linalg.lu_factor(a[k], check_finite=False)
    return packed, pivots


def _lu_packed(xp, a):
    if not bool(xp.isfinite(a).all()):
        return xp.full(a.shape, xp.nan, dtype=a.dtype)
    return xp.asarray(_lu_each(to_host(xp, a))[0])


def _lu_pivots(xp, a, one_based=True):
    if not bool(xp.isfinite(a).all()):
        return xp.full(a.shape[:-1], xp.nan, dtype=a.dtype)
    return xp.asarray((_lu_each(to_host(xp, a))[1] + (1 if one_based else 0)).astype(a.dtype))


def _permutation(pivots, n, dtype):
    """P (A = P L U) of 0-based LAPACK pivots: row k was swapped with row pivots[k]."""
    rows = np.broadcast_to(np.arange(n), pivots.shape[:-1] + (n,)).copy()
    flat_rows, flat_piv = rows.reshape(-1, n), pivots.reshape(-1, n)
    for r in range(flat_rows.shape[0]):
        for k in range(n):
            p = flat_piv[r, k]
            flat_rows[r, k], flat_rows[r, p] = flat_rows[r, p], flat_rows[r, k]
    perm = np.zeros(pivots.shape[:-1] + (n, n), dtype=dtype)
    np.put_along_axis(perm, flat_rows.reshape(pivots.shape[:-1] + (1, n)), 1.0, axis=-2)
    return perm


def _lu_permutation(xp, a):
    if not bool(xp.isfinite(a).all()):
        return xp.full(a.shape, xp.nan, dtype=a.dtype)
    return xp.asarray(_permutation(_lu_each(to_host(xp, a))[1], a.shape[-1], a.dtype))


def _lu_vjp(a, g_lower=None, g_upper=None):
    """The gradient in a of L's strictly lower part and U's upper part (A = P L U, P fixed):
    P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T."""
    packed = G.lu_packed(a)
    phi = None
    if g_lower is not None:  # L^T gL, L = strict(packed) + I
        g_lower = G.triangle_part(g_lower, lower=True, k=-1)
        product = G.matmul(_mT(G.triangle_part(packed, lower=True, k=-1)), g_lower) + g_lower
        phi = G.triangle_part(product, lower=True, k=-1)
    if g_upper is not None:
        upper = G.triangle_part(packed, lower=False)
        term = G.triangle_part(G.matmul(G.triangle_part(g_upper, lower=False), _mT(upper)), lower=False)
        phi = term if phi is None else phi + term
    left = G.solve_triangular(packed, phi, lower=True, unit_diagonal=True, adjoint=True)  # L^-T phi
    both = _mT(G.solve_triangular(packed, _mT(left), lower=False))                        # (L^-T phi) U^-T
    return G.matmul(G.lu_permutation(a), both)


def _lu_shape(a, **_):
    return _square(a, "lu")


register(Op("lu_packed", _lu_packed, _lu_shape, (lambda g, ans, a: _lu_vjp(a, g, g),), public=False, nonstandard="SciPy's LU on the host",
            doc="L (below the diagonal, its unit diagonal left out) and U of a = P L U, packed in one matrix"))
register(Op("lu_pivots", _lu_pivots, lambda a, one_based=True: _lu_shape(a)[:-1], NOT_DIFFERENTIABLE,
            params={"one_based": True}, public=False, nonstandard="SciPy's LU on the host",
            doc="LAPACK's pivots of the LU factorization"))
register(Op("lu_permutation", _lu_permutation, _lu_shape, NOT_DIFFERENTIABLE, public=False, nonstandard="SciPy's LU on the host",
            doc="P of a = P L U (a permutation matrix)"))
register(Op("lu_lower", lambda xp, a: xp.tril(_lu_packed(xp, a), -1) + xp.eye(a.shape[-1], dtype=a.dtype), _lu_shape,
            (lambda g, ans, a: _lu_vjp(a, g_lower=g),), public=False, nonstandard="SciPy's LU on the host",
            doc="L of a = P L U (unit diagonal)"))
register(Op("lu_upper", lambda xp, a: xp.triu(_lu_packed(xp, a)), _lu_shape,
            (lambda g, ans, a: _lu_vjp(a, g_upper=g),), public=False, nonstandard="SciPy's LU on the host", doc="U of a = P L U"))


def _lu_parts(a, pivot=True, one_based=True, overwrite_a=False, check_finite=True):
    _square(a, "lu_factor")
    if not pivot:
        raise ShapeError("pivot=False is not supported (LU without pivoting)")
    return [("lu_packed", {}), ("lu_pivots", {"one_based": one_based})]


register(Op("lu_factor", None, None, None,
            params={"pivot": True, "one_based": True, "overwrite_a": False, "check_finite": True},
            parts=_lu_parts,
            doc="LU, pivots = torch.linalg.lu_factor(a): L and U of a = P L U packed in one matrix, and the pivots "
                "(from 1; scipy.linalg.lu_factor's from 0); square matrices"))


def _lu_full_parts(a, pivot=True, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False):
    _square(a, "lu")
    if not pivot or permute_l or p_indices:
        raise ShapeError("pivot=False, permute_l and p_indices are not supported: lu returns (P, L, U)")
    return [("lu_permutation", {}), ("lu_lower", {}), ("lu_upper", {})]


register(Op("lu", None, None, None,
            params={"pivot": True, "permute_l": False, "overwrite_a": False, "check_finite": True, "p_indices": False},
            parts=_lu_full_parts,
            doc="P, L, U = torch.linalg.lu(a) (scipy.linalg.lu): a = P L U, L with a unit diagonal; square matrices"))


def _pivot_permutation(xp, pivots, n):
    """P of torch's 1-based pivots, checked: integers from 1 to n."""
    host = to_host(xp, pivots)
    if host.size and not (np.all(host == np.round(host)) and np.all((host >= 1) & (host <= n))):
        raise DataError(f"the pivots must be integers from 1 to {n} (as torch.linalg.lu_factor gives them)")
    return xp.asarray(_permutation(host.astype(np.int64) - 1, n, pivots.dtype))


register(Op("pivot_permutation", _pivot_permutation, lambda shape, n: tuple(shape) + (n,), NOT_DIFFERENTIABLE,
            params={"n": REQUIRED}, public=False, nonstandard="checks the pivots on the host",
            doc="the permutation matrix P of 1-based LU pivots (A = P L U)"))


@composite("lu_solve", ("LU", "pivots", "B"), {"left": True, "adjoint": False},
           "torch.linalg.lu_solve(LU, pivots, B, left=True, adjoint=False): X with A X = B (left=False: X A = B; "
           "adjoint: A^T), A = P L U given as lu_factor's LU and 1-based pivots; the pivots get no gradient")
def _lu_solve(f, lu, pivots, b, left, adjoint):
    _square(lu.shape, "lu_solve")
    n = lu.shape[-1]
    if pivots.shape != lu.shape[:-1]:
        raise ShapeError(f"pivots of shape {fmt_shape(pivots.shape)} for LU of shape {fmt_shape(lu.shape)}: "
                         f"they must have shape {fmt_shape(lu.shape[:-1])}")
    if b.ndim < 2:
        raise ShapeError(f"B must be matrices (..., n, k), got {fmt_shape(b.shape)}")
    transposed = bool(adjoint)
    if not left:  # X A = B: A^T X^T = B^T
        b, transposed = f.transpose(b, axes=tuple(range(b.ndim - 2)) + (b.ndim - 1, b.ndim - 2)), not transposed
    if b.shape[-2] != n:
        raise ShapeError(f"B of shape {fmt_shape(b.shape)} does not fit LU of shape {fmt_shape(lu.shape)}")
    perm = f.pivot_permutation(pivots, n=n)
    if not transposed:  # U^-1 L^-1 P^T b
        y = f.matmul(f.transpose(perm, axes=tuple(range(perm.ndim - 2)) + (perm.ndim - 1, perm.ndim - 2)), b)
        x = f.solve_triangular(lu, f.solve_triangular(lu, y, lower=True, unit_diagonal=True), lower=False)
    else:  # P L^-T U^-T b
        z = f.solve_triangular(lu, b, lower=False, adjoint=True)
        x = f.matmul(perm, f.solve_triangular(lu, z, lower=True, unit_diagonal=True, adjoint=True))
    if not left:
        x = f.transpose(x, axes=tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))
    return x


# --------------------------------------------------------------------------- householder_product

@composite("householder_product", ("A", "tau"), {},
           "torch.linalg.householder_product(A, tau): the first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T, "
           "v_i the i-th column of A below the diagonal with 1 on it (LAPACK's orgqr)")
def _householder_product(f, a, tau):
    if a.ndim < 2 or a.shape[-2] < a.shape[-1]:
        raise ShapeError(f"A must be matrices (..., m, n) with m >= n, got {fmt_shape(a.shape)}")
    m, n = a.shape[-2:]
    k = tau.shape[-1] if tau.ndim else -1
    if tau.ndim != a.ndim - 1 or k > n or tau.shape[:-1] != a.shape[:-2]:
        raise ShapeError(f"tau of shape {fmt_shape(tau.shape)} does not fit A of shape {fmt_shape(a.shape)}: "
                         f"it must have shape {fmt_shape(a.shape[:-2] + ('k',))} with k <= {n}")
    batch = a.shape[:-2]
    full = tuple((None, None, None) for _ in batch)
    # the reflectors: A's strictly lower part, with 1 on the diagonal
    reflectors = f.triangle_part(a, lower=True, k=-1) + np.eye(m, n)
    q = f.broadcast_to(np.eye(m, n), shape=batch + (m, n))
    for i in reversed(range(k)):  # H_1 (... (H_k Q0)): apply the last reflector first
        v = f.index(reflectors, index=full + ((None, None, None), (i, i + 1, None)))          # (..., m, 1)
        t = f.reshape(f.index(tau, index=full + ((i, i + 1, None),)), shape=batch + (1, 1))  # (..., 1, 1)
        vt = f.transpose(v, axes=tuple(range(len(batch))) + (len(batch) + 1, len(batch)))
        q = q - f.matmul(v * t, f.matmul(vt, q))
    return q


# --------------------------------------------------------------------------- vander

def _powers(f, x, count, increasing):
    """The columns 1, x, x^2, ... (reversed unless increasing) along a new last axis, as products,
    not powers: the gradient of x^0 at 0 is 0, never 0 * inf."""
    columns = [f.broadcast_to(1.0, shape=x.shape)]
    for _ in range(1, count):
        columns.append(x if len(columns) == 1 else columns[-1] * x)
    if not increasing:
        columns.reverse()
    stacked = f.stack(*columns)  # (N, ..., n)
    return f.transpose(stacked, axes=tuple(range(1, x.ndim + 1)) + (0,))


def _count(N, n, least):
    count = n if N is None else N
    if isinstance(count, bool) or not isinstance(count, int) or count < least:
        raise ShapeError(f"N must be an integer of {least} or more, not {N!r}")
    return count


@composite("vander", ("x",), {"N": None, "increasing": False},
           "np.vander(x, N=None, increasing=False): the columns x^(N-1), ..., x, 1 of a vector x "
           "(increasing: 1, x, ..., x^(N-1))")
def _vander(f, x, N, increasing):
    if x.ndim != 1:
        raise ShapeError(f"x must be a vector, got {fmt_shape(x.shape)}")
    return _powers(f, x, _count(N, x.shape[0], 1), bool(increasing))


@composite("vander_ascending", ("x",), {"N": None},
           "torch.linalg.vander(x, N=None): 1, x, ..., x^(N-1) along a new last axis (x: a vector or a batch of "
           "them; N at least 2)", public=False)
def _torch_vander(f, x, N):
    if x.ndim < 1:
        raise ShapeError("x must be a vector (or a batch of them), got a number")
    return _powers(f, x, _count(N, x.shape[-1], 2), True)


# --------------------------------------------------------------------------- matrix_sqrth, polar

def _positive_eigh(xp, a, name):
    """eigh of a symmetric positive definite matrix (its symmetric part, as eigh reads it), or a
    DataError naming the smallest eigenvalue."""

    _check_symmetric(xp, a, name)
    w, v = xp.linalg.eigh((a + xp.matrix_transpose(a)) * 0.5)
    if a.size and not bool(xp.all(w > 0)):
        raise DataError(f"the matrix is not positive definite (an eigenvalue is {float(w.min()):.3g}): {name} "
                        "needs all its eigenvalues above 0")
    return w, v


def _matrix_sqrth(xp, a):
    if not bool(xp.all(xp.isfinite(a))):
        return xp.full(a.shape, xp.nan, dtype=a.dtype)
    w, v = _positive_eigh(xp, a, "matrix_sqrth")
    return (v * xp.sqrt(w)[..., None, :]) @ xp.matrix_transpose(v)


def _sylvester_sum(xp, x, c):
    """g with x g + g x = c, x symmetric positive definite: in x's eigenbasis c / (w_i + w_j)."""
    if not (bool(xp.all(xp.isfinite(x))) and bool(xp.all(xp.isfinite(c)))):
        return xp.full(c.shape, xp.nan, dtype=c.dtype)
    w, v = _positive_eigh(xp, x, "matrix_sqrth")
    vt = xp.matrix_transpose(v)
    inner = (vt @ c @ v) / (w[..., :, None] + w[..., None, :])
    return v @ inner @ vt


def _sylvester_sum_vjp_x(g, ans, x, c):
    # x G + G x = c: dG = -L^-1(dx G + G dx), L self-adjoint for a symmetric x
    h = G.sylvester_sum(x, g)
    return -(G.matmul(h, _mT(ans)) + G.matmul(_mT(ans), h))


def _sylvester_sum_shape(x, c):
    _square(x, "sylvester_sum")
    if tuple(c) != tuple(x):
        raise ShapeError(f"c of shape {fmt_shape(c)} for x of shape {fmt_shape(x)}")
    return tuple(c)


register(Op("sylvester_sum", _sylvester_sum, _sylvester_sum_shape,
            (_sylvester_sum_vjp_x, lambda g, ans, x, c: G.sylvester_sum(x, g)), args=("x", "c"), public=False,
            doc="g with x g + g x = c, x symmetric positive definite (matrix_sqrth's gradient)"))
register(Op("matrix_sqrth", _matrix_sqrth, lambda a: _square(a, "matrix_sqrth"),
            (lambda g, ans, a: (lambda h: (h + _mT(h)) * 0.5)(G.sylvester_sum(ans, g)),),
            doc="torch.linalg.matrix_sqrth(a): the principal square root of a symmetric positive definite matrix "
                "(its symmetric part, as eigh reads it); the gradient solves x g + g x = the cotangent"))


def _polar_parts(a, side="right"):
    if len(a) < 2 or a[-2] < a[-1]:
        raise ShapeError(f"polar needs matrices (..., m, n) with m >= n, got {fmt_shape(a)}")
    if side != "right":
        raise ShapeError(f"side={side!r} is not supported: polar gives a = u p (side='right')")
    return [("polar_unitary", {}), ("polar_positive", {})]


def _polar_positive(xp, a):
    return _matrix_sqrth(xp, xp.matrix_transpose(a) @ a)


def _polar_positive_vjp(g, ans, a):
    gram = G.sylvester_sum(ans, g)  # the gradient in a^T a of its square root, then of a^T a in a
    return G.matmul(a, gram + _mT(gram))


def _polar_unitary(xp, a):
    p = _polar_positive(xp, a)
    return xp.matrix_transpose(xp.linalg.solve(p, xp.matrix_transpose(a)))  # a p^-1 (p symmetric)


def _polar_unitary_vjp(g, ans, a):
    # u = a p^-1: du = da p^-1 - u dp p^-1, with dp from d(a^T a) as above
    p = G.polar_positive(a)
    gp = -_mT(G.solve(p, G.matmul(_mT(g), ans)))         # the cotangent of p: -u^T g p^-1
    ga = _mT(G.solve(p, _mT(g)))                           # g p^-1
    return ga + _polar_positive_vjp(gp, p, a)


register(Op("polar_positive", _polar_positive, lambda a: a[:-2] + (a[-1], a[-1]), (_polar_positive_vjp,),
            public=False, doc="p of the polar decomposition a = u p"))
register(Op("polar_unitary", _polar_unitary, lambda a: tuple(a), (_polar_unitary_vjp,), public=False,
            doc="u of the polar decomposition a = u p (orthonormal columns)"))
register(Op("polar", None, None, None, params={"side": "right"}, parts=_polar_parts,
            doc="u, p = torch.linalg.polar(a) (scipy.linalg.polar): a = u p, u with orthonormal columns, p "
                "symmetric positive definite, for a of full column rank (m >= n); torch.polar (complex) is refused"))


# --------------------------------------------------------------------------- the general eigenproblem: refused

def _refused(xp, *_, **__):
    raise ShapeError("refused when read")


for _name, _what in (("eig", "eigenvalues and eigenvectors"), ("eigvals", "eigenvalues")):
    register(Op(_name, _refused, _refused, None,
                doc=f"the {_what} of a general matrix: refused (complex results; no gradient); eigh / eigvalsh "
                    "for symmetric matrices"))
