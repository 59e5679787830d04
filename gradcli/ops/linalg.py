"""The op table, continued: linear algebra.

Each op is one record registered with `gradcli.ops.register` (see gradcli/ops/__init__.py). Gradient
rules are written with `G.` ops, so they can be differentiated again.

Conventions, where libraries differ or a derivative does not exist:
- `cholesky` and `eigh`/`eigvalsh` read the symmetric part (a + a^T)/2 of their argument; NumPy
  and TensorFlow read one triangle, which is the same number for the symmetric matrices these
  functions are meant for. A matrix that is clearly not symmetric is refused, so the difference
  never passes silently. Their gradients are symmetric, as in JAX, TensorFlow and PyTorch.
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
from gradcli.ops.table import (
    NO_GRADIENT, NOT_DIFFERENTIABLE, REQUIRED, DataError, Op, register)
from gradcli.ops.shapes import _keep, broadcast_shapes, fmt_shape, normalize_axes, to_host
from gradcli.ops.core import _mT, _prod_others


# --------------------------------------------------------------------------- shared helpers

def _square(shape, what="a square matrix"):
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ShapeError(f"needs {what} (or a stack of them, shape (..., n, n)), got {fmt_shape(shape)}")
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
            nonfinite_reason=("eigenvalues (or singular values) repeat, and the gradient of their vectors does "
                              "not exist there"),
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
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ShapeError(f"axis {a} is out of range for an array of rank {ndim}")
        out.append(a % ndim)
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


def _inverse_permutation(order):
    perm = [0] * len(order)
    for position, axis in enumerate(order):
        perm[axis] = position
    return tuple(perm)


def _transposed(x, order):
    perm = _inverse_permutation(order)
    return x if perm == tuple(range(len(perm))) else G.transpose(x, axes=perm)


def _tensordot_vjp_a(g, ans, a, b, axes=2):
    ia, ib = _contracted(a.ndim, b.ndim, axes)
    free_a = [i for i in range(a.ndim) if i not in ia]
    free_b = [j for j in range(b.ndim) if j not in ib]
    g_b_axes = tuple(range(len(free_a), len(free_a) + len(free_b)))
    out = G.tensordot(g, b, axes=(g_b_axes, tuple(free_b)))  # axes: free a, then b's contracted ones in order
    return _transposed(out, free_a + [ia[ib.index(j)] for j in sorted(ib)])


def _tensordot_vjp_b(g, ans, a, b, axes=2):
    ia, ib = _contracted(a.ndim, b.ndim, axes)
    free_a = [i for i in range(a.ndim) if i not in ia]
    free_b = [j for j in range(b.ndim) if j not in ib]
    out = G.tensordot(a, g, axes=(tuple(free_a), tuple(range(len(free_a)))))  # a's contracted axes, free b
    return _transposed(out, [ib[ia.index(i)] for i in sorted(ia)] + free_b)


register(Op("tensordot", _tensordot, _tensordot_shape, (_tensordot_vjp_a, _tensordot_vjp_b), args=("a", "b"),
            params={"axes": 2},
            doc="tensordot(a, b, axes): sum products over axes (an int N: the last N of a, the first N of b)"))


def _dot_axes(a_ndim, b_ndim):
    """np.dot as a tensordot: the last axis of a with the second-to-last of b (the only one of a vector)."""
    return ((a_ndim - 1,), (max(b_ndim - 2, 0),))


def _dot_shape(a, b):
    if not a or not b:  # a number multiplies
        return a or b
    return _tensordot_shape(a, b, _dot_axes(len(a), len(b)))


def _product_with_scalar(rule, axes_of):
    """The rule of a product that multiplies where an operand is a number (np.dot(3, x))."""
    def vjp(g, ans, a, b, **_):
        if a.ndim == 0 or b.ndim == 0:
            return g * (b if rule is _tensordot_vjp_a else a)
        return rule(g, ans, a, b, axes=axes_of(a.ndim, b.ndim))
    return vjp


def _dot(xp, a, b):
    return xp.dot(a, b)


register(Op("dot", _dot, _dot_shape,
            (_product_with_scalar(_tensordot_vjp_a, _dot_axes), _product_with_scalar(_tensordot_vjp_b, _dot_axes)),
            args=("a", "b"),
            doc="NumPy's dot: the last axis of a with the second-to-last of b; a number multiplies",
            nonstandard="NumPy's dot"))


def _inner_axes(a_ndim, b_ndim):
    return ((a_ndim - 1,), (b_ndim - 1,))


def _inner_shape(a, b):
    if not a or not b:
        return a or b
    return _tensordot_shape(a, b, _inner_axes(len(a), len(b)))


register(Op("inner", lambda xp, a, b: xp.inner(a, b), _inner_shape,
            (_product_with_scalar(_tensordot_vjp_a, _inner_axes), _product_with_scalar(_tensordot_vjp_b, _inner_axes)),
            args=("a", "b"), doc="sum products over the last axes of a and b; a number multiplies",
            nonstandard="NumPy's inner"))


def _vdot_shape(a, b):
    if math.prod(a) != math.prod(b):
        raise ShapeError(f"vdot of {fmt_shape(a)} and {fmt_shape(b)}: they have different numbers of elements")
    return ()


register(Op("vdot", lambda xp, a, b: xp.asarray(xp.vdot(a, b)), _vdot_shape,
            (lambda g, ans, a, b: g * G.reshape(b, shape=a.shape), lambda g, ans, a, b: g * G.reshape(a, shape=b.shape)),
            args=("a", "b"), doc="the dot product of a and b flattened", nonstandard="NumPy's vdot"))


def _outer_vjp_a(g, ans, a, b):
    return G.reshape(G.matmul(g, G.reshape(b, shape=(-1,))), shape=a.shape)


def _outer_vjp_b(g, ans, a, b):
    return G.reshape(G.matmul(G.reshape(a, shape=(-1,)), g), shape=b.shape)


def _outer_shape(a, b, flatten=True):
    if not flatten and (len(a) != 1 or len(b) != 1):  # torch.outer: NumPy's flattens
        raise ShapeError(f"outer of {fmt_shape(a)} and {fmt_shape(b)}: PyTorch's takes two vectors (NumPy's "
                         "flattens); flatten them first")
    return (math.prod(a), math.prod(b))


register(Op("outer", lambda xp, a, b, flatten=True: xp.outer(a, b), _outer_shape,
            (lambda g, ans, a, b, flatten=True: _outer_vjp_a(g, ans, a, b),
             lambda g, ans, a, b, flatten=True: _outer_vjp_b(g, ans, a, b)), args=("a", "b"),
            params={"flatten": True},
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


def _det(xp, a):
    return xp.linalg.det(a)


def _cofactor(xp, a):
    """det(a) * inv(a)^T, also where a is singular (from the SVD: no division)."""
    if not _all_finite(xp, a):
        return _nan_like(xp, a.shape, a.dtype)
    u, s, vh = xp.linalg.svd(a)
    signs = xp.linalg.det(u) * xp.linalg.det(vh)
    return (u * _prod_others(xp, s, axis=-1)[..., None, :]) @ vh * signs[..., None, None]


def _cofactor_vjp(g, ans, a):
    inv_t = _mT(G.inv(a))
    weight = G.sum(g * ans, axis=(-2, -1))
    return G.reshape(weight, shape=weight.shape + (1, 1)) * inv_t \
        - G.reshape(G.det(a), shape=weight.shape + (1, 1)) * G.matmul(G.matmul(inv_t, _mT(g)), inv_t)


register(Op("cofactor", _cofactor, lambda a: _square(a), (_cofactor_vjp,), public=False,
            doc="the cofactor matrix det(a) inv(a)^T (the gradient of det)"))


def _matrix_of(g):  # (...) -> (..., 1, 1), to scale a stack of matrices
    return G.reshape(g, shape=g.shape + (1, 1))


register(Op("det", _det, lambda a: _square(a)[:-2], (lambda g, ans, a: _matrix_of(g) * G.cofactor(a),),
            doc="the determinant"))


def _slogdet_parts(a):
    _square(a)
    return [("slogdet_sign", {}), ("slogdet_logabs", {})]


def _logabs_vjp(g, ans, a):
    return _matrix_of(g) * _mT(G.inv(a))


register(Op("slogdet", None, None, None, parts=_slogdet_parts,
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


def _cholesky_solve_lower(upper):
    return not upper


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
            params={"upper": False}, public=False,
            doc="torch.cholesky_solve(b, L)"))


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
    m, n = a[-2:]
    return a[:-2] + (m, m if complete else min(m, n))


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


# symmetric eigenproblem
def _symmetric_eigh(xp, a):
    _check_symmetric(xp, a, "eigh")
    if not _all_finite(xp, a):
        n = a.shape[-1]
        return _nan_like(xp, a.shape[:-1], a.dtype), _nan_like(xp, a.shape[:-2] + (n, n), a.dtype)
    return xp.linalg.eigh((a + xp.matrix_transpose(a)) * 0.5)


def _eigh_parts(a, UPLO=None, lower=None):
    _square(a)
    return [("eigvalsh", {}), ("eigh_vectors", {})]


def _eigvalsh_vjp(g, ans, a, **_):
    v = G.eigh_vectors(a)
    return G.matmul(v * _row(g), _mT(v))


def _eigh_vectors_vjp(g, ans, a):
    # grad = sym(V (F o V^T g) V^T), F[i, j] = 1 / (w_j - w_i): NaN where eigenvalues repeat
    gaps = G.inverse_gaps(G.eigvalsh(a))
    inner = gaps * G.matmul(_mT(ans), g)
    return _sym(G.matmul(G.matmul(ans, inner), _mT(ans)))


register(Op("eigh", None, None, None, params={"UPLO": None, "lower": None}, parts=_eigh_parts,
            doc="w, v = eigh(a): eigenvalues (ascending) and eigenvectors of a symmetric matrix"))
register(Op("eigvalsh", lambda xp, a, **_: _symmetric_eigh(xp, a)[0], lambda a, **_: _square(a)[:-1],
            (_eigvalsh_vjp,), params={"UPLO": None, "lower": None},
            doc="the eigenvalues of a symmetric matrix, ascending"))
register(Op("eigh_vectors", lambda xp, a: _symmetric_eigh(xp, a)[1], lambda a: _square(a), (_eigh_vectors_vjp,),
            public=False, doc="the eigenvectors of eigh (columns)"))


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
