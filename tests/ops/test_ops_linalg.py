"""The linear-algebra ops: each forward against NumPy/SciPy, its gradient and second derivative
against float64 finite differences, a float32 run; then singular data (a positioned user error),
repeated eigenvalues (NaN with a diagnostic), and how the libraries' spellings are read."""
import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg as sl

from gradcli import api
from gradcli.errors import GradcliError

from gradcheck import check_op_case


def normal(shape):
    return lambda rng: rng.standard_normal(shape)


def well_conditioned(shape):  # a + n I: far from singular
    n = shape[-1]
    return lambda rng: rng.standard_normal(shape) * 0.5 + n * np.eye(n)


def spd(shape):  # symmetric positive definite, distinct eigenvalues
    n = shape[-1]

    def make(rng):
        m = rng.standard_normal(shape)
        return m @ np.swapaxes(m, -1, -2) + np.diag(np.arange(1.0, n + 1)) * 2
    return make


def tall(shape):  # full column rank, distinct singular values
    def make(rng):
        m = rng.standard_normal(shape)
        return m + np.eye(*shape[-2:]) * np.arange(2.0, 2 + shape[-1]) * 2
    return make


def lower(shape):
    return lambda rng: np.tril(rng.standard_normal(shape)) + 3 * np.eye(shape[-1])


def transposed(make):
    return lambda rng: np.swapaxes(make(rng), -1, -2)


def sym(a):
    return (a + np.swapaxes(a, -1, -2)) / 2


def tensordot_pairs(a, b):
    return np.tensordot(a, b, axes=([1, 0], [0, 2]))


# (program, differentiated inputs, reference, options)
CASES = [
    # products
    ("y = dot(a, b)", {"a": normal((2, 1, 2)), "b": normal((2, 2, 1))}, lambda a, b: np.dot(a, b), {}),
    ("y = np.dot(a, b)", {"a": normal((3,)), "b": normal((3, 2))}, lambda a, b: np.dot(a, b), {}),
    ("y = np.dot(a, b)", {"a": normal((2, 3)), "b": normal((3,))}, lambda a, b: np.dot(a, b), {}),
    ("y = np.dot(a, b)", {"a": normal(()), "b": normal((2, 3))}, lambda a, b: np.dot(a, b), {}),
    ("y = torch.dot(a, b)", {"a": normal((4,)), "b": normal((4,))}, lambda a, b: np.dot(a, b), {}),
    ("y = tensordot(a, b)", {"a": normal((2, 3, 4)), "b": normal((3, 4, 2))},
     lambda a, b: np.tensordot(a, b), {}),
    ("y = tensordot(a, b, axes=[[1, 0], [0, 2]])", {"a": normal((2, 3, 4)), "b": normal((3, 5, 2))},
     tensordot_pairs, {}),
    ("y = tf.tensordot(a, b, 1)", {"a": normal((2, 3)), "b": normal((3, 4))}, lambda a, b: np.tensordot(a, b, 1), {}),
    ("y = inner(a, b)", {"a": normal((2, 3)), "b": normal((4, 3))}, lambda a, b: np.inner(a, b), {}),
    ("y = vdot(a, b)", {"a": normal((2, 3)), "b": normal((6,))}, lambda a, b: np.vdot(a, b), {}),
    ("y = outer(a, b)", {"a": normal((2, 2)), "b": normal((3,))}, lambda a, b: np.outer(a, b), {}),
    ("y = torch.ger(a, b)", {"a": normal((2,)), "b": normal((3,))}, lambda a, b: np.outer(a, b), {}),
    ("y = vecdot(a, b)", {"a": normal((2, 3)), "b": normal((3,))}, lambda a, b: np.sum(a * b, axis=-1), {}),
    ("y = vecdot(a, b, axis=0)", {"a": normal((3, 2)), "b": normal((3, 1))}, lambda a, b: np.sum(a * b, axis=0), {}),
    ("y = kron(a, b)", {"a": normal((2, 3)), "b": normal((2, 2))}, lambda a, b: np.kron(a, b), {}),
    ("y = kron(a, b)", {"a": normal((3,)), "b": normal((2, 2))}, lambda a, b: np.kron(a, b), {}),
    ("y = cross(a, b)", {"a": normal((2, 3)), "b": normal((3,))}, lambda a, b: np.cross(a, b), {}),
    ("y = cross(a, b, axis=0)", {"a": normal((3, 2)), "b": normal((3, 2))}, lambda a, b: np.cross(a, b, axis=0), {}),
    # einsum
    ("y = einsum('ij,jk->ik', a, b)", {"a": normal((2, 3)), "b": normal((3, 4))},
     lambda a, b: np.einsum("ij,jk->ik", a, b), {}),
    ("y = np.einsum('ij,kj', a, b)", {"a": normal((2, 3)), "b": normal((4, 3))},
     lambda a, b: np.einsum("ij,kj", a, b), {}),
    ("y = einsum('ii->i', a)", {"a": normal((3, 3))}, lambda a: np.einsum("ii->i", a), {}),
    ("y = einsum('ii', a)", {"a": normal((3, 3))}, lambda a: np.einsum("ii", a), {}),
    ("y = einsum('iij->j', a)", {"a": normal((2, 2, 3))}, lambda a: np.einsum("iij->j", a), {}),
    ("y = einsum('ij->', a)", {"a": normal((2, 3))}, lambda a: np.einsum("ij->", a), {}),
    ("y = einsum('i,j,k->ijk', a, b, c)", {"a": normal((2,)), "b": normal((3,)), "c": normal((2,))},
     lambda a, b, c: np.einsum("i,j,k->ijk", a, b, c), {}),
    ("y = einsum('...ij,...jk->...ik', a, b)", {"a": normal((2, 2, 3)), "b": normal((3, 2))},
     lambda a, b: np.einsum("...ij,...jk->...ik", a, b), {}),
    ("y = einsum('i...,i...', a, b)", {"a": normal((2, 3)), "b": normal((2, 1, 1))},
     lambda a, b: np.einsum("i...,i...", a, b), {}),
    ("y = einsum('ij,ij->ij', a, b)", {"a": normal((1, 3)), "b": normal((2, 3))},
     lambda a, b: np.einsum("ij,ij->ij", a, b), {}),
    ("y = tf.einsum('bij,bjk->bik', a, b)", {"a": normal((2, 2, 3)), "b": normal((2, 3, 2))},
     lambda a, b: np.einsum("bij,bjk->bik", a, b), {}),
    # inverses and solves
    ("y = inv(a)", {"a": well_conditioned((3, 3))}, lambda a: np.linalg.inv(a), {}),
    ("y = np.linalg.inv(a)", {"a": well_conditioned((2, 3, 3))}, lambda a: np.linalg.inv(a), {}),
    ("y = solve(a, b)", {"a": well_conditioned((3, 3)), "b": normal((3,))}, lambda a, b: np.linalg.solve(a, b), {}),
    ("y = np.linalg.solve(a, b)", {"a": well_conditioned((2, 3, 3)), "b": normal((3, 2))},
     lambda a, b: np.linalg.solve(a, b), {}),
    ("y = torch.linalg.solve(a, b)", {"a": well_conditioned((2, 3, 3)), "b": normal((2, 3))},
     lambda a, b: np.linalg.solve(a, b[..., None])[..., 0], {}),
    ("y = solve_triangular(a, b, lower=True)", {"a": lower((3, 3)), "b": normal((3, 2))},
     lambda a, b: sl.solve_triangular(a, b, lower=True), {}),
    ("y = scipy.linalg.solve_triangular(a, b)", {"a": normal((3, 3))}, lambda a, b: sl.solve_triangular(a, b),
     {"fixed": {"b": normal((3,))}}),
    ("y = solve_triangular(a, b, lower=True, trans=1, unit_diagonal=True)", {"a": lower((3, 3)), "b": normal((3,))},
     lambda a, b: sl.solve_triangular(a, b, lower=True, trans=1, unit_diagonal=True), {}),
    ("y = tf.linalg.triangular_solve(a, b)", {"a": lower((2, 3, 3)), "b": normal((2, 3, 2))},
     lambda a, b: np.linalg.solve(np.tril(a), b), {}),
    ("y = cholesky_solve(c, b)", {"c": lower((3, 3)), "b": normal((3, 2))},
     lambda c, b: sl.cho_solve((np.tril(c), True), b), {}),
    ("y = torch.cholesky_solve(b, c, upper=True)", {"c": transposed(lower((3, 3))), "b": normal((3, 1))},
     lambda c, b: sl.cho_solve((np.triu(c), False), b), {}),
    ("y = det(a)", {"a": normal((3, 3))}, lambda a: np.linalg.det(a), {}),
    ("y = tf.linalg.det(a)", {"a": normal((2, 2, 2))}, lambda a: np.linalg.det(a), {}),
    ("s, y = slogdet(a)", {"a": normal((3, 3))}, lambda a: np.linalg.slogdet(a)[1], {}),
    ("sign, logabs = np.linalg.slogdet(a)\ny = logabs * sign", {"a": normal((2, 3, 3))},
     lambda a: np.linalg.det(a) / np.abs(np.linalg.det(a)) * np.linalg.slogdet(a)[1], {}),
    ("y = logdet(a)", {"a": spd((3, 3))}, lambda a: np.linalg.slogdet(a)[1], {}),
    ("y = matrix_power(a, 3)", {"a": normal((3, 3))}, lambda a: np.linalg.matrix_power(a, 3), {}),
    ("y = matrix_power(a, -2)", {"a": well_conditioned((2, 2, 2))}, lambda a: np.linalg.matrix_power(a, -2), {}),
    ("y = matrix_power(a, 0)", {"a": normal((2, 2))}, lambda a: np.eye(2), {}),
    ("y = pinv(a)", {"a": tall((4, 3))}, lambda a: np.linalg.pinv(a), {}),
    ("y = torch.pinverse(a)", {"a": transposed(tall((3, 2)))},
     lambda a: np.linalg.pinv(a), {}),
    ("y = lstsq(a, b)[0]", {"a": tall((4, 3)), "b": normal((4,))}, lambda a, b: np.linalg.lstsq(a, b)[0], {}),
    ("x, res, rank, sv = lstsq(a, b)\ny = res", {"a": tall((4, 2)), "b": normal((4, 2))},
     lambda a, b: np.linalg.lstsq(a, b)[1], {}),
    ("x, res, y, sv = lstsq(a, b)\ny = sv + y", {"a": tall((4, 2))},
     lambda a, b: np.linalg.svd(a, compute_uv=False) + 2, {"fixed": {"b": normal((4,))}}),
    ("y = tf.linalg.lstsq(a, b)", {"a": tall((4, 3)), "b": normal((4, 2))}, lambda a, b: np.linalg.lstsq(a, b)[0], {}),
    # factorizations
    ("y = cholesky(a)", {"a": spd((3, 3))}, lambda a: np.linalg.cholesky(a), {}),
    ("y = np.linalg.cholesky(a, upper=True)", {"a": spd((2, 3, 3))}, lambda a: np.linalg.cholesky(a, upper=True), {}),
    ("y = scipy.linalg.cholesky(a)", {"a": spd((3, 3))}, lambda a: sl.cholesky(a), {}),
    ("q, y = qr(a)", {"a": tall((4, 3))}, lambda a: np.linalg.qr(a)[1], {}),
    ("q, r = qr(a)\ny = q", {"a": tall((2, 4, 3))}, lambda a: np.linalg.qr(a)[0], {}),
    ("q, r = scipy.linalg.qr(a)\ny = q", {"a": tall((3, 3))}, lambda a: sl.qr(a)[0], {}),
    ("w, v = eigh(a)\ny = w", {"a": spd((3, 3))}, lambda a: np.linalg.eigh(a)[0], {}),
    ("w, v = eigh(a)\ny = v * v[0]", {"a": spd((3, 3))}, lambda a: np.linalg.eigh(a)[1] * np.linalg.eigh(a)[1][0], {}),
    ("w, v = tf.linalg.eigh(a)\ny = v * v[..., :1, :]", {"a": spd((2, 3, 3))},
     lambda a: np.linalg.eigh(a)[1] * np.linalg.eigh(a)[1][..., :1, :], {}),
    ("y = eigvalsh(a)", {"a": spd((3, 3))}, lambda a: np.linalg.eigvalsh(a), {}),
    ("u, s, vh = svd(a)\ny = s", {"a": tall((4, 3))}, lambda a: np.linalg.svd(a)[1], {}),
    ("u, s, vh = svd(a, full_matrices=False)\ny = u * u[0]", {"a": tall((4, 3))},
     lambda a: np.linalg.svd(a, full_matrices=False)[0] * np.linalg.svd(a, full_matrices=False)[0][0], {}),
    ("u, s, vh = svd(a)\ny = vh * vh[:, :1]", {"a": tall((4, 3))},
     lambda a: np.linalg.svd(a)[2] * np.linalg.svd(a)[2][:, :1], {}),
    ("u, s, vh = svd(a, full_matrices=False)\ny = vh * vh[:, :1]", {"a": transposed(tall((4, 3)))}, lambda a: np.linalg.svd(a, full_matrices=False)[2]
     * np.linalg.svd(a, full_matrices=False)[2][:, :1], {}),
    ("s, u, v = tf.linalg.svd(a)\ny = v * v[0] + s", {"a": tall((4, 3))},
     lambda a: (lambda u, s, vh: vh.T * vh.T[0] + s)(*np.linalg.svd(a, full_matrices=False)), {}),
    ("u, s, v = torch.svd(a, some=True)\ny = v * v[0]", {"a": tall((4, 3))},
     lambda a: (lambda u, s, vh: vh.T * vh.T[0])(*np.linalg.svd(a, full_matrices=False)), {}),
    ("y = svdvals(a)", {"a": tall((2, 3, 2))}, lambda a: np.linalg.svd(a, compute_uv=False), {}),
    ("y = np.linalg.svd(a, full_matrices=False, compute_uv=False)", {"a": tall((5, 3))},
     lambda a: np.linalg.svd(a, compute_uv=False), {}),
    ("y = cond(a)", {"a": tall((3, 3))}, lambda a: np.linalg.cond(a), {}),
    ("y = cond(a, -2)", {"a": tall((2, 3, 3))}, lambda a: np.linalg.cond(a, -2), {}),
    ("y = matrix_exp(a)", {"a": normal((3, 3))}, lambda a: sl.expm(a), {"second_order": False}),
    ("y = scipy.linalg.expm(a)", {"a": normal((2, 2, 2))}, lambda a: sl.expm(a), {"second_order": False}),
]


@pytest.mark.parametrize("program,inputs,reference,options", CASES, ids=[c[0] for c in CASES])
def test_op(program, inputs, reference, options):
    rng = np.random.default_rng(sum(map(ord, program)))
    check_op_case(program, inputs, reference, rng, **options)


def value(program, **feeds):
    return api.evaluate(program, feeds=feeds).outputs["y"]


def refused(program, words, wrt=None, **feeds):
    with pytest.raises(GradcliError) as info:
        if wrt:
            api.grad(program, wrt=wrt, feeds=feeds)
        else:
            api.evaluate(program, feeds=feeds)
    assert words in str(info.value), str(info.value)
    assert info.value.pos is not None and info.value.pos.line >= 1
    return info.value


def test_dot_is_numpys_dot_not_matmul():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 1, 2)), rng.standard_normal((2, 2, 1))
    got = value("y = np.dot(a, b)", a=a, b=b)
    assert got.shape == (2, 1, 2, 1)
    np.testing.assert_allclose(got, np.dot(a, b), rtol=1e-15)
    assert value("y = a @ b", a=a, b=b).shape == (2, 1, 1) == value("y = tf.matmul(a, b)", a=a, b=b).shape
    np.testing.assert_array_equal(value("y = np.dot(3, x)", x=[1.0, 2.0]), [3.0, 6.0])
    assert value("y = dot(x, 2)", x=4.0) == 8.0


def test_singular_matrix_is_a_positioned_user_error_from_the_command_line():
    run = subprocess.run([sys.executable, "-m", "gradcli", "eval", "-e", "y = inv(a)", "--set", "a=[[1,2],[2,4]]"],
                         capture_output=True, text=True)
    assert run.returncode == 2, run.stderr
    assert "1:5: error: inv: the matrix is singular" in run.stderr
    assert "Traceback" not in run.stderr and run.stdout == ""


def test_data_that_cannot_be_inverted_or_factored_is_refused_at_its_place():
    singular = [[1.0, 2.0], [2.0, 4.0]]
    refused("y = solve(a, b)", "the matrix is singular", a=singular, b=[1.0, 2.0])
    refused("y = matrix_power(a, -1)", "the matrix is singular", a=singular)
    refused("y = np.linalg.inv(a)", "matrix (1,) of the stack", a=[np.eye(2), singular])
    error = refused("z = 1\ny = cholesky(a)", "not positive definite", a=[[1.0, 2.0], [2.0, 1.0]])
    assert (error.pos.line, error.pos.column) == (2, 5)
    refused("y = cholesky(a)", "not symmetric", a=[[2.0, 1.0], [0.0, 2.0]])
    refused("y = eigvalsh(a)", "not symmetric", a=[[2.0, 1.0], [0.0, 2.0]])
    refused("y = solve_triangular(a, b, lower=True)", "diagonal holds a zero", a=[[0.0, 0.0], [1.0, 1.0]], b=[1.0, 1.0])
    # a matrix nearly singular in float64 (condition ~1e17): refused, not garbage
    refused("y = inv(a)", "condition number", a=[[1.0, 1.0], [1.0, 1.0 + 1e-17]])


def test_det_of_a_singular_matrix_and_its_gradient_are_finite():
    r = api.grad("y = det(a)", wrt=["a"], feeds={"a": [[1.0, 2.0], [2.0, 4.0]]})
    assert abs(float(r.outputs["y"])) < 1e-15
    np.testing.assert_allclose(r.gradients["a"], [[4.0, -2.0], [-2.0, 1.0]], atol=1e-14)  # the cofactors


def test_repeated_eigenvalues_give_nan_vector_gradients_with_a_reason():
    a = np.diag([2.0, 2.0, 3.0])
    r = api.grad("w, v = eigh(a)\ny = sum(v * v[0])", wrt=["a"], feeds={"a": a})
    assert np.isnan(r.gradients["a"]).any()
    (diagnostic,) = [d for d in r.diagnostics if d.kind == "nonfinite_gradient"]
    assert "eigenvalues (or singular values) repeat" in diagnostic.message
    assert (diagnostic.pos.line, diagnostic.pos.column) == (1, 8)
    # the eigenvalues' own gradient stays finite there (V diag(g) V^T): the sum of the repeated ones is smooth
    r = api.grad("y = sum(eigvalsh(a))", wrt=["a"], feeds={"a": a})
    np.testing.assert_allclose(r.gradients["a"], np.eye(3), atol=1e-15)
    r = api.grad("u, s, vh = svd(a)\ny = sum(u * u[0])", wrt=["a"], feeds={"a": np.eye(2)})
    assert np.isnan(r.gradients["a"]).any() and any("singular values" in d.message for d in r.diagnostics)


def test_non_finite_input_gives_nan_not_a_crash():
    for program in ("y = inv(a)", "y = cholesky(a)", "y = pinv(a)", "y = matrix_exp(a)", "y = svdvals(a)"):
        r = api.evaluate(program, feeds={"a": [[np.nan, 1.0], [1.0, 2.0]]})
        assert np.isnan(r.outputs["y"]).all(), program


def test_spellings_follow_their_library():
    rng = np.random.default_rng(2)
    m = rng.standard_normal((4, 3))
    spd = m.T @ m + np.eye(3)
    np.testing.assert_allclose(value("y = scipy.linalg.cholesky(a)", a=spd), sl.cholesky(spd), rtol=1e-12)
    np.testing.assert_allclose(value("y = cholesky(a)", a=spd), np.linalg.cholesky(spd), rtol=1e-12)
    np.testing.assert_allclose(value("q, r = scipy.linalg.qr(a)\ny = q", a=m), sl.qr(m)[0], rtol=1e-12)
    assert value("q, r = qr(a)\ny = q", a=m).shape == (4, 3)
    assert value("q, r = tf.linalg.qr(a, full_matrices=True)\ny = q", a=m).shape == (4, 4)
    s, u, v = (api.evaluate(f"s, u, v = tf.linalg.svd(a)\ny = {name}", feeds={"a": m}).outputs["y"]
               for name in "suv")
    assert (s.shape, u.shape, v.shape) == ((3,), (4, 3), (3, 3))
    np.testing.assert_allclose((u * s) @ v.T, m, atol=1e-13)
    u, s, vh = (value(f"u, s, vh = np.linalg.svd(a)\ny = {name}", a=m) for name in ("u", "s", "vh"))
    assert (u.shape, vh.shape) == ((4, 4), (3, 3))
    np.testing.assert_allclose((u[:, :3] * s) @ vh, m, atol=1e-13)
    refused("u, s, v = torch.svd(a)\ny = s", "torch.linalg.svd(a) returns Vh", a=m)
    lower = np.tril(spd)
    b = rng.standard_normal((3, 2))
    np.testing.assert_allclose(value("y = tf.linalg.triangular_solve(a, b)", a=lower, b=b),
                               sl.solve_triangular(lower, b, lower=True), rtol=1e-12)
    np.testing.assert_allclose(value("y = scipy.linalg.solve_triangular(a, b)", a=spd, b=b),
                               sl.solve_triangular(spd, b), rtol=1e-12)
    refused("y = torch.linalg.solve_triangular(a, b)", "needs upper=True or upper=False", a=spd, b=b)
    np.testing.assert_allclose(value("y = torch.linalg.solve_triangular(a, b, upper=False)", a=spd, b=b),
                               sl.solve_triangular(spd, b, lower=True), rtol=1e-12)
    np.testing.assert_allclose(value("y = tf.linalg.lstsq(a, b)", a=m, b=rng.standard_normal((4, 1))).shape, (3, 1))
    np.testing.assert_allclose(value("y = torch.cholesky_solve(b, c)", b=b, c=np.linalg.cholesky(spd)),
                               np.linalg.solve(spd, b), rtol=1e-12)
    np.testing.assert_allclose(value("y = tf.linalg.cholesky_solve(c, b)", b=b, c=np.linalg.cholesky(spd)),
                               np.linalg.solve(spd, b), rtol=1e-12)


def test_gradients_that_do_not_exist_are_refused_at_the_call():
    rng = np.random.default_rng(3)
    wide, tall = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    refused("q, r = qr(a)\ny = q", "wide matrix", wrt=["a"], a=wide)
    refused("u, s, vh = svd(a)\ny = u", "full_matrices=False", wrt=["a"], a=tall)
    with pytest.raises(GradcliError, match="no gradient rule"):
        api.hessian("y = sum(matrix_exp(a))", wrt=["a"], feeds={"a": np.eye(2) * 0.5})
    refused("y = svd(a, compute_uv=True)", "leave compute_uv out", a=tall)
    refused("q, r = qr(a, mode='r')", "mode='reduced'", a=tall)


def test_einsum_specs_are_checked_at_the_call():
    a = np.ones((2, 3))
    refused("y = einsum('ij,jk->ik', a)", "name 2 operands, got 1", a=a)
    refused("y = einsum('ijk', a)", "names 3 axes of an array of shape (2, 3)", a=a)
    refused("y = einsum('ij->k', a)", "names no operand's axis", a=a)
    refused("y = einsum('ii', a)", "diagonal of axes of different lengths", a=a)
    refused("y = einsum('ij,ij', a, b)", "differ in length", a=a, b=np.ones((2, 2)))
    refused("y = einsum(a, [0, 1])", "subscripts", a=a)
    np.testing.assert_allclose(value("y = einsum('ij,jk', a, b, optimize=True)", a=a, b=np.ones((3, 2))),
                               np.full((2, 2), 3.0))
