"""The op table, continued: linear algebra.

The family continues, in table order, in gradcli/ops/solves.py (inverses, solves, factorizations,
the matrix exponential), whose records the conventions below are mostly about.

Conventions, where libraries differ or a derivative does not exist:
- `cholesky` reads the symmetric part (a + a^T)/2 of its argument; NumPy and TensorFlow read one
  triangle, which is the same number for the symmetric matrices it is meant for. A matrix that
  is clearly not symmetric is refused, so the difference never passes silently. Its gradient is
  symmetric. `eigh`/`eigvalsh` read what the spelling's library reads (gradcli/ops/solves.py):
  NumPy's, autograd's, TensorFlow's and SciPy's one triangle, their gradient on it; PyTorch's
  the triangle, its gradient symmetric; JAX's the symmetric part; a bare `eigh` the symmetric
  part, refusing a matrix that is clearly not symmetric.
- The gradient of eigenvectors (and of singular vectors) does not exist where eigenvalues
  (singular values) repeat: it is NaN there, and the diagnostics report where it appeared.
- A matrix that cannot be inverted (`inv`, `solve`) or factored (`cholesky`) is a user error at
  the call's place (`DataError`), never inf or garbage.
"""
from __future__ import annotations

import math
from collections import Counter

# string's letters (the module is not imported at start-up: its Template compiles a regex)
_LOWER = "abcdefghijklmnopqrstuvwxyz"
_UPPER = _LOWER.upper()
_LETTERS = _LOWER + _UPPER

from gradcli.errors import GradcliError, ShapeError
from gradcli.ops.trace import G
from gradcli.ops.table import REQUIRED, DataError, Op, register
from gradcli.ops.shapes import (
    _keep, _permuted, broadcast_shapes, fmt_shape, inverse_permutation, nonnegative_axes, normalize_axes)
from gradcli.ops.core import _mT


# --------------------------------------------------------------------------- shared helpers

def _square(shape, label=None):
    """shape, if it is a square matrix's (or a stack's); `label`, where given, names the function refusing it."""
    if len(shape) < 2 or shape[-1] != shape[-2]:
        who = f"{label} needs" if label else "needs"
        raise ShapeError(f"{who} a square matrix (or a stack of them, shape (..., n, n)), got {fmt_shape(shape)}")
    return shape


def _matrix(shape):
    if len(shape) < 2:
        raise ShapeError(f"needs a matrix (or a stack of them, shape (..., m, n)), got {fmt_shape(shape)}")
    return shape


def _sym(x):
    return (x + _mT(x)) * 0.5


def _column(v):  # (..., n) -> (..., n, 1)
    return G.reshape(v, shape=v.shape + (1,))


def _row(v):  # (..., n) -> (..., 1, n)
    return G.reshape(v, shape=v.shape[:-1] + (1, v.shape[-1]))


def _refuse(g, message: str):
    """Stop building a gradient that does not exist here, at the differentiated call's place."""
    graph = g.graph
    eq = graph.equations[graph.context] if graph.context is not None else None
    raise GradcliError(f"{eq.label if eq else 'gradient'}: {message}", eq.pos if eq else None, graph.source)


def _all_finite(xp, a) -> bool:
    return bool(xp.all(xp.isfinite(a)))


def _check_invertible(xp, a):
    """Refuse a singular (or numerically singular) matrix: its inverse would be inf or garbage."""
    if not _all_finite(xp, a):
        return
    s = xp.linalg.svdvals(a)
    largest, smallest = s[..., 0], s[..., -1]
    limit = largest * (a.shape[-1] * float(xp.finfo(a.dtype).eps))
    bad = ~(smallest > limit)
    if bool(xp.any(bad)):
        where = ""
        if a.ndim > 2:
            where = f" (matrix {tuple(int(i[0]) for i in xp.nonzero(bad))} of the stack)"
        condition = (float(xp.reshape((largest / smallest)[bad], (-1,))[0]) if bool(xp.all(smallest[bad] > 0))
                     else math.inf)
        raise DataError(f"the matrix is singular{where}: its condition number is {condition:.3g}, "
                        f"past what {a.dtype} can invert")


def _check_symmetric(xp, a, name: str):
    if not _all_finite(xp, a):
        return
    scale = float(xp.max(xp.abs(a))) if a.size else 0.0
    gap = float(xp.max(xp.abs(a - xp.matrix_transpose(a)))) if a.size else 0.0
    if gap > 1e-4 * scale:
        raise DataError(f"the matrix is not symmetric (|a - a^T| reaches {gap:.3g}): NumPy reads only its lower "
                        f"triangle, gradcli reads (a + a^T)/2; write {name}((a + a.T) / 2) or {name}(tril(a) + "
                        "tril(a, -1).T) for the matrix you mean")


def _nan_like(xp, shape, dtype):
    return xp.full(shape, xp.nan, dtype=dtype)


def _batch(*shapes):
    try:
        return broadcast_shapes(*shapes)
    except ShapeError:
        raise ShapeError("the stacks of matrices " + " and ".join(fmt_shape(s) for s in shapes)
                         + " cannot be broadcast together") from None


# --------------------------------------------------------------------------- triangles, gaps (internal)

def _triangle(xp, x, lower=True, k=0):
    return xp.tril(x, k=k) if lower else xp.triu(x, k=k)


register(Op("triangle_part", _triangle, lambda shape, lower=True, k=0: _matrix(shape),
            (lambda g, ans, x, lower=True, k=0: G.triangle_part(g, lower=lower, k=k),),
            params={"lower": True, "k": 0}, public=False, finite_closed=True,
            prints_as=lambda x, lower=True, k=0: f"{'tril' if lower else 'triu'}({x}" + (f", {k})" if k else ")"),
            doc="tril(x, k) or triu(x, k) of the last two axes"))


def _inverse_gaps(xp, w, squared=False):
    """F[..., i, j] = 1 / (w_j - w_i) (of squares, for singular values), 0 on the diagonal, NaN
    where two eigenvalues are equal: there the vectors' gradient does not exist."""
    v = w * w if squared else w
    gaps = v[..., None, :] - v[..., :, None]
    n = w.shape[-1]
    diagonal = xp.eye(n, dtype=xp.bool)
    safe = xp.where(diagonal | (gaps == 0), 1, gaps)
    return xp.astype(xp.where(diagonal, 0, xp.where(gaps == 0, xp.nan, 1 / safe)), w.dtype)


def _inverse_gaps_vjp(g, ans, w, squared=False):
    gf = g * ans * ans
    wbar = G.sum(gf, axis=-1) - G.sum(gf, axis=-2)
    return wbar * (2.0 * w) if squared else wbar


register(Op("inverse_gaps", _inverse_gaps, lambda shape, squared=False: shape + shape[-1:],
            (_inverse_gaps_vjp,), params={"squared": False}, public=False,
            doc="1 / (w_j - w_i): the eigenvector gradient's weights; NaN where eigenvalues repeat"))


# --------------------------------------------------------------------------- products

def _contracted(a_ndim, b_ndim, axes):
    """tensordot's `axes` (an int N, a pair of ints, or a pair of lists) as two tuples of axes."""
    if isinstance(axes, tuple) and len(axes) == 1:  # a number read as a list of one
        axes = axes[0]
    if isinstance(axes, int):
        if not 0 <= axes <= min(a_ndim, b_ndim):
            raise ShapeError(f"axes={axes} contracts more axes than the arrays have (ranks {a_ndim} and {b_ndim})")
        return tuple(range(a_ndim - axes, a_ndim)), tuple(range(axes))
    if len(axes) != 2:
        raise ShapeError("axes must be an integer or a pair of lists of axes, such as [[1], [0]]")
    first, second = ((x,) if isinstance(x, int) else tuple(x) for x in axes)
    if len(first) != len(second):
        raise ShapeError(f"axes names {len(first)} axes of the first array and {len(second)} of the second")
    return (tuple(normalize_axes_unsorted(first, a_ndim)), tuple(normalize_axes_unsorted(second, b_ndim)))


def normalize_axes_unsorted(axes, ndim):
    out = nonnegative_axes(axes, ndim)
    if len(set(out)) != len(out):
        raise ShapeError(f"axes {tuple(axes)} repeat an axis")
    return out


def _tensordot_shape(a, b, axes=2):
    ia, ib = _contracted(len(a), len(b), axes)
    for i, j in zip(ia, ib):
        if a[i] != b[j]:
            raise ShapeError(f"tensordot of {fmt_shape(a)} and {fmt_shape(b)}: axis {i} ({a[i]}) and axis {j} "
                             f"({b[j]}) differ in length")
    return tuple(d for i, d in enumerate(a) if i not in ia) + tuple(d for j, d in enumerate(b) if j not in ib)


def _tensordot(xp, a, b, axes=2):
    return xp.tensordot(a, b, axes=_contracted(a.ndim, b.ndim, axes))


def _tensordot_vjp_a(g, ans, a, b, axes=2):
    ia, ib = _contracted(a.ndim, b.ndim, axes)
    free_a = [i for i in range(a.ndim) if i not in ia]
    free_b = [j for j in range(b.ndim) if j not in ib]
    g_b_axes = tuple(range(len(free_a), len(free_a) + len(free_b)))
    out = G.tensordot(g, b, axes=(g_b_axes, tuple(free_b)))  # axes: free a, then b's contracted ones in order
    return _permuted(out, inverse_permutation(free_a + [ia[ib.index(j)] for j in sorted(ib)]))


def _tensordot_vjp_b(g, ans, a, b, axes=2):
    ia, ib = _contracted(a.ndim, b.ndim, axes)
    free_a = [i for i in range(a.ndim) if i not in ia]
    free_b = [j for j in range(b.ndim) if j not in ib]
    out = G.tensordot(a, g, axes=(tuple(free_a), tuple(range(len(free_a)))))  # a's contracted axes, free b
    return _permuted(out, inverse_permutation([ib[ia.index(i)] for i in sorted(ia)] + free_b))


register(Op("tensordot", _tensordot, _tensordot_shape, (_tensordot_vjp_a, _tensordot_vjp_b), args=("a", "b"),
            params={"axes": 2},
            doc="tensordot(a, b, axes): sum products over axes (an int N: the last N of a, the first N of b)"))


def _dot_axes(a_ndim, b_ndim):
    """np.dot as a tensordot: the last axis of a with the second-to-last of b (the only one of a vector)."""
    return ((a_ndim - 1,), (max(b_ndim - 2, 0),))


def _product_with_scalar(axes_of):
    """The shape rule and the gradient rules of a tensordot over the axes `axes_of(a.ndim, b.ndim)`,
    a product that multiplies where an operand is a number (np.dot(3, x))."""
    def shape(a, b):
        if not a or not b:  # a number multiplies
            return a or b
        return _tensordot_shape(a, b, axes_of(len(a), len(b)))

    def with_scalar(rule):
        def vjp(g, ans, a, b, **_):
            if a.ndim == 0 or b.ndim == 0:
                return g * (b if rule is _tensordot_vjp_a else a)
            return rule(g, ans, a, b, axes=axes_of(a.ndim, b.ndim))
        return vjp
    return shape, (with_scalar(_tensordot_vjp_a), with_scalar(_tensordot_vjp_b))


register(Op("dot", lambda xp, a, b: xp.dot(a, b), *_product_with_scalar(_dot_axes), args=("a", "b"),
            doc="NumPy's dot: the last axis of a with the second-to-last of b; a number multiplies",
            nonstandard="NumPy's dot"))


def _inner_axes(a_ndim, b_ndim):
    return ((a_ndim - 1,), (b_ndim - 1,))


register(Op("inner", lambda xp, a, b: xp.inner(a, b), *_product_with_scalar(_inner_axes),
            args=("a", "b"), doc="sum products over the last axes of a and b; a number multiplies",
            nonstandard="NumPy's inner"))


def _vdot_shape(a, b):
    if math.prod(a) != math.prod(b):
        raise ShapeError(f"vdot of {fmt_shape(a)} and {fmt_shape(b)}: they have different numbers of elements")
    return ()


register(Op("vdot", lambda xp, a, b: xp.asarray(xp.vdot(a, b)), _vdot_shape,
            (lambda g, ans, a, b: g * G.reshape(b, shape=a.shape), lambda g, ans, a, b: g * G.reshape(a, shape=b.shape)),
            args=("a", "b"), doc="the dot product of a and b flattened", nonstandard="NumPy's vdot"))


def _outer_shape(a, b, flatten=True):
    if not flatten and (len(a) != 1 or len(b) != 1):  # torch.outer: NumPy's flattens
        raise ShapeError(f"outer of {fmt_shape(a)} and {fmt_shape(b)}: PyTorch's takes two vectors (NumPy's "
                         "flattens); flatten them first")
    return (math.prod(a), math.prod(b))


register(Op("outer", lambda xp, a, b, flatten=True: xp.outer(a, b), _outer_shape,
            (lambda g, ans, a, b, flatten=True: G.reshape(G.matmul(g, G.reshape(b, shape=(-1,))), shape=a.shape),
             lambda g, ans, a, b, flatten=True: G.reshape(G.matmul(G.reshape(a, shape=(-1,)), g), shape=b.shape)),
            args=("a", "b"), params={"flatten": True},
            doc="outer(a, b)[i, j] = a[i] * b[j] of a and b flattened (torch.outer: of two vectors)",
            nonstandard="NumPy's outer"))


def _vecdot_shape(x, y, axis=-1):
    full = _batch(x, y)
    if not full:
        raise ShapeError("vecdot needs arrays of rank 1 or more")
    (k,) = normalize_axes(axis, len(full))
    for s in (x, y):
        j = k - (len(full) - len(s))
        if j < 0 or s[j] != full[k]:
            raise ShapeError(f"vecdot of {fmt_shape(x)} and {fmt_shape(y)}: axis {axis} differs in length")
    return tuple(d for i, d in enumerate(full) if i != k)


def _vecdot_vjp(other):
    def vjp(g, ans, x, y, axis=-1):
        full = broadcast_shapes(x.shape, y.shape)
        return _keep(g, full, axis, False) * (y if other == 1 else x)
    return vjp


register(Op("vecdot", lambda xp, x, y, axis=-1: xp.sum(x * y, axis=axis), _vecdot_shape,
            (_vecdot_vjp(1), _vecdot_vjp(0)), args=("x", "y"), params={"axis": -1},
            doc="vecdot(x, y, axis=-1): sum(x * y, axis), broadcasting the other axes"))


def _kron_padded(a, b):
    n = max(len(a), len(b))
    return (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)


def _kron_vjp(which):
    def vjp(g, ans, a, b):
        pa, pb = _kron_padded(a.shape, b.shape)
        n = len(pa)
        big, small = _UPPER[:n], _LOWER[:n]
        interleaved = G.reshape(g, shape=tuple(d for pair in zip(pa, pb) for d in pair))
        spec_g = "".join(c for pair in zip(big, small) for c in pair)
        if which == 0:
            out = G.einsum_to(interleaved, G.reshape(b, shape=pb), subscripts=f"{spec_g},{small}->{big}", shape=pa)
            return G.reshape(out, shape=a.shape)
        out = G.einsum_to(interleaved, G.reshape(a, shape=pa), subscripts=f"{spec_g},{big}->{small}", shape=pb)
        return G.reshape(out, shape=b.shape)
    return vjp


register(Op("kron", lambda xp, a, b: xp.kron(a, b), lambda a, b: tuple(x * y for x, y in zip(*_kron_padded(a, b))),
            (_kron_vjp(0), _kron_vjp(1)), args=("a", "b"), doc="the Kronecker product", nonstandard="NumPy's kron"))


def _cross_shape(a, b, axis=-1):
    if len(a) != len(b) and axis >= 0:
        raise ShapeError("cross of arrays of different ranks needs a negative axis (counted from the end)")
    moved = []
    for s in (a, b):
        (k,) = normalize_axes(axis, len(s)) if s else (None,)
        if k is None or s[k] != 3:
            raise ShapeError(f"cross needs vectors of 3 components along axis {axis}, got {fmt_shape(s)} "
                             "(2-component vectors are not supported)")
        moved.append(tuple(d for i, d in enumerate(s) if i != k))
    out = list(_batch(*moved))
    (k,) = normalize_axes(axis, len(out) + 1)
    return tuple(out[:k]) + (3,) + tuple(out[k:])


register(Op("cross", lambda xp, a, b, axis=-1: xp.cross(a, b, axis=axis), _cross_shape,
            (lambda g, ans, a, b, axis=-1: G.cross(b, g, axis=axis), lambda g, ans, a, b, axis=-1: G.cross(g, a, axis=axis)),
            args=("a", "b"), params={"axis": -1}, doc="the cross product of 3-vectors along axis",
            nonstandard="NumPy's cross"))


# --------------------------------------------------------------------------- einsum

def _einsum_terms(subscripts, shapes):
    """(input terms, output term) with '...' spelled out as letters of its own and the output
    made explicit, as NumPy reads the spec; ShapeError for a spec that does not fit."""
    if not isinstance(subscripts, str):
        raise ShapeError("einsum's first argument must be its subscripts, a string such as 'ij,jk->ik' "
                         "(the interleaved form einsum(a, [0, 1], b, [1, 2]) is not supported)")
    spec = subscripts.replace(" ", "")
    if spec.count("->") > 1:
        raise ShapeError(f"subscripts '{subscripts}' have more than one '->'")
    lhs, arrow, out = spec.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ShapeError(f"subscripts '{subscripts}' name {len(terms)} operand{'s' * (len(terms) != 1)}, "
                         f"got {len(shapes)}")
    for term in terms + [out]:
        bare = term.replace("...", "", 1)
        if any(c not in _LETTERS for c in bare):
            raise ShapeError(f"subscripts '{subscripts}': '{term}' holds a character that is not a letter "
                             "(or one '...')")
    spare = [c for c in _LETTERS if c not in spec]
    ellipsis_rank = 0
    ranks = []
    for term, shape in zip(terms, shapes):
        letters = len(term.replace("...", ""))
        rank = len(shape) - letters if "..." in term else 0
        if rank < 0 or ("..." not in term and letters != len(shape)):
            raise ShapeError(f"subscripts '{subscripts}': '{term}' names {letters} axes of an array of shape "
                             f"{fmt_shape(shape)}")
        ranks.append(rank)
        ellipsis_rank = max(ellipsis_rank, rank)
    dots = "".join(spare[:ellipsis_rank])
    inputs = [t.replace("...", dots[ellipsis_rank - r:]) for t, r in zip(terms, ranks)]
    if arrow:
        if "..." in out:
            out = out.replace("...", dots)
        elif ellipsis_rank:
            raise ShapeError(f"subscripts '{subscripts}': the operands have axes under '...' that the output "
                             "does not name (write '...' in the output)")
        seen = "".join(terms)
        for c in out:
            if c not in dots and c not in seen:
                raise ShapeError(f"subscripts '{subscripts}': the output's '{c}' names no operand's axis")
        if len(set(out)) != len(out):
            raise ShapeError(f"subscripts '{subscripts}': the output repeats a letter")
    else:
        counts = Counter("".join(terms).replace(".", ""))
        out = dots + "".join(sorted(c for c, n in counts.items() if n == 1))
    return inputs, out


def _letter_sizes(inputs, shapes, out="", out_shape=()):
    sizes: dict[str, int] = {}
    for term, shape in zip(inputs, shapes):
        within: dict[str, int] = {}
        for c, d in zip(term, shape):
            if within.setdefault(c, d) != d:
                raise ShapeError(f"einsum: '{term}' takes a diagonal of axes of different lengths {fmt_shape(shape)}")
            if sizes.get(c, 1) == 1:
                sizes[c] = d
            elif d != 1 and d != sizes[c]:
                raise ShapeError(f"einsum: the axes named '{c}' differ in length ({sizes[c]} and {d})")
    for c, d in zip(out, out_shape):
        sizes.setdefault(c, d)
    return sizes


def _einsum_shape(*shapes, subscripts, optimize=None):
    inputs, out = _einsum_terms(subscripts, shapes)
    sizes = _letter_sizes(inputs, shapes)
    return tuple(sizes[c] for c in out)


def _einsum_to_shape(*shapes, subscripts, shape):
    inputs, out = subscripts.split("->")
    _letter_sizes(inputs.split(","), shapes, out, shape)
    return tuple(shape)


def _einsum_to(xp, *xs, subscripts, shape):
    """einsum with an explicit spec whose output may also repeat a letter (a diagonal, zero
    elsewhere), name a letter no operand has (broadcast to `shape`), or keep a letter at length 1
    where the operands have more (summed): the transposes of einsum's own cases."""
    lhs, out = subscripts.split("->")
    inputs = lhs.split(",")
    sizes = _letter_sizes(inputs, [x.shape for x in xs], out, shape)
    xs = [x if x.shape == tuple(sizes[c] for c in term) else xp.broadcast_to(x, tuple(sizes[c] for c in term))
          for x, term in zip(xs, inputs)]
    present = set(lhs)
    distinct = "".join(dict.fromkeys(out))
    kept = "".join(c for c in distinct if c in present)
    r = xp.einsum(f"{lhs}->{kept}", *xs)
    out_size = dict(zip(out, shape))
    for k, c in enumerate(kept):
        if out_size[c] == 1 and r.shape[k] != 1:
            r = xp.sum(r, axis=k, keepdims=True)
    r = r.reshape(tuple(r.shape[kept.index(c)] if c in present else 1 for c in distinct))
    if len(distinct) == len(out):
        return xp.broadcast_to(r.transpose(tuple(distinct.index(c) for c in out)) if distinct != out else r,
                               tuple(shape))
    result = xp.zeros(tuple(shape), dtype=r.dtype)
    index = tuple(xp.arange(out_size[c]).reshape(tuple(-1 if d == c else 1 for d in distinct)) for c in out)
    result[index] = r
    return result


def _einsum(xp, *xs, subscripts, optimize=None):
    inputs, out = _einsum_terms(subscripts, [x.shape for x in xs])
    return _einsum_to(xp, *xs, subscripts=",".join(inputs) + "->" + out, shape=_einsum_shape(
        *[x.shape for x in xs], subscripts=subscripts))


def _einsum_vjp(k):
    def vjp(g, ans, *xs, subscripts, shape=None, optimize=None):
        if shape is None:
            inputs, out = _einsum_terms(subscripts, [x.shape for x in xs])
        else:
            lhs, out = subscripts.split("->")
            inputs = lhs.split(",")
        others = [i for i in range(len(xs)) if i != k]
        spec = ",".join([inputs[i] for i in others] + [out]) + "->" + inputs[k]
        return G.einsum_to(*[xs[i] for i in others], g, subscripts=spec, shape=xs[k].shape)
    return vjp


register(Op("einsum", _einsum, _einsum_shape, (_einsum_vjp,), args=(), variadic=True,
            params={"subscripts": REQUIRED, "optimize": None}, view=True,
            doc="einsum('ij,jk->ik', a, b): Einstein summation; repeated letters take diagonals, '...' "
                "stands for the leading axes", nonstandard="NumPy's einsum"))
register(Op("einsum_to", _einsum_to, _einsum_to_shape, (_einsum_vjp,), args=(), variadic=True,
            params={"subscripts": REQUIRED, "shape": REQUIRED}, public=False, view=True,
            doc="einsum with an explicit output shape (the gradient of einsum)", nonstandard="NumPy's einsum"))
