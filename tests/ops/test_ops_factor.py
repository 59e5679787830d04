"""More linear algebra: multi_dot, tensorinv, tensorsolve, cholesky_inverse, the LU
factorization (lu_factor, lu, lu_solve), householder_product, vander, matrix_sqrth and polar, each forward against
NumPy / SciPy (or a loop written here from PyTorch's documentation), gradients and second
derivatives against float64 finite differences, a float32 run; then the readings that differ
between libraries, and the refusal of the general eigenproblem."""
import numpy as np
import pytest
import scipy.linalg

from gradcli import api
from gradcli.errors import GradcliError

from cli_helpers import invoke
from gradcheck import check_op_case


def normal(shape):
    return lambda rng: rng.standard_normal(shape)


def const(value):
    return lambda rng: np.asarray(value, dtype=float)


def well_conditioned(n, batch=()):
    return lambda rng: rng.standard_normal(batch + (n, n)) + 3 * np.eye(n)


def lower_factor(n):
    return lambda rng: np.tril(rng.standard_normal((n, n)), -1) + np.diag(rng.uniform(1.0, 2.0, n))


def lu_each(m, part):
    m = np.asarray(m)
    out = np.empty(m.shape if part == 0 else m.shape[:-1])
    for k in np.ndindex(m.shape[:-2]):
        out[k] = scipy.linalg.lu_factor(m[k])[part]
    return out


def householder(a, tau):
    """LAPACK's orgqr by its definition: the first n columns of H_1 ... H_k."""
    m, n = a.shape
    q = np.eye(m)
    for i in range(len(tau)):
        v = np.concatenate([np.zeros(i), [1.0], a[i + 1:, i]])
        q = q @ (np.eye(m) - tau[i] * np.outer(v, v))
    return q[:, :n]


M = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, 2.0], [0.5, 4.0, 1.0]])
LU, PIV = scipy.linalg.lu_factor(M)

CASES = [
    ("y = np.linalg.multi_dot([a, b, c])", {"a": normal((3,)), "b": normal((3, 4)), "c": normal((4, 2))},
     lambda a, b, c: a @ b @ c, {}),
    ("y = np.linalg.multi_dot((a, b, c, d))", {"a": normal((2, 3)), "b": normal((3, 4)), "c": normal((4, 2)),
                                               "d": normal((2,))},
     lambda a, b, c, d: np.linalg.multi_dot([a, b, c, d]), {}),
    ("y = np.linalg.tensorinv(a)", {"a": lambda rng: (rng.standard_normal((6, 6)) + 3 * np.eye(6)).reshape(2, 3, 6)},
     lambda a: np.linalg.tensorinv(a), {}),
    ("y = np.linalg.tensorinv(a, ind=1)", {"a": lambda rng: (rng.standard_normal((4, 4)) + 3 * np.eye(4)).reshape(4, 2, 2)},
     lambda a: np.linalg.tensorinv(a, ind=1), {}),
    ("y = np.linalg.tensorsolve(a, b)", {"a": lambda rng: (rng.standard_normal((6, 6)) + 3 * np.eye(6)).reshape(2, 3, 6),
                                         "b": normal((2, 3))},
     lambda a, b: np.linalg.tensorsolve(a, b), {}),
    ("y = np.linalg.tensorsolve(a, b, axes=(0,))",
     {"a": lambda rng: (rng.standard_normal((6, 6)) + 3 * np.eye(6)).reshape(6, 2, 3), "b": normal((2, 3))},
     lambda a, b: np.linalg.tensorsolve(a, b, axes=(0,)), {}),
    ("y = torch.cholesky_inverse(l)", {"l": lower_factor(3)}, lambda l: np.linalg.inv(np.tril(l) @ np.tril(l).T), {}),
    ("y = torch.cholesky_inverse(u, upper=True)", {"u": lambda rng: lower_factor(3)(rng).T},
     lambda u: np.linalg.inv(np.triu(u).T @ np.triu(u)), {}),
    ("y = torch.linalg.lu_factor(m)[0]", {"m": well_conditioned(3, (2,))}, lambda m: lu_each(m, 0), {}),
    ("y = torch.linalg.lu(m)[1] + torch.linalg.lu(m)[2]", {"m": well_conditioned(3)},
     lambda m: scipy.linalg.lu(m)[1] + scipy.linalg.lu(m)[2], {}),
    ("y = scipy.linalg.lu(m)[2]", {"m": const(M)}, lambda m: scipy.linalg.lu(m)[2], {}),
    ("y = torch.linalg.lu_solve(lu, p, b)", {"lu": const(LU), "b": normal((3, 2))},
     lambda lu, b, p: scipy.linalg.lu_solve((lu, p.astype(int) - 1), b), {"fixed": {"p": const(PIV + 1)}}),
    ("y = torch.linalg.lu_solve(lu, p, b, adjoint=True)", {"lu": const(LU), "b": normal((3, 2))},
     lambda lu, b, p: scipy.linalg.lu_solve((lu, p.astype(int) - 1), b, trans=1), {"fixed": {"p": const(PIV + 1)}}),
    ("y = torch.linalg.lu_solve(lu, p, b, left=False)", {"lu": const(LU), "b": normal((2, 3))},
     lambda lu, b, p: scipy.linalg.lu_solve((lu, p.astype(int) - 1), b.T, trans=1).T,
     {"fixed": {"p": const(PIV + 1)}}),
    ("y = torch.linalg.householder_product(a, tau)", {"a": normal((4, 3)), "tau": normal((2,))},
     lambda a, tau: householder(a, tau), {}),
    ("y = torch.linalg.matrix_sqrth(a)", {"a": lambda rng: (lambda b: b @ b.T + np.eye(3))(rng.standard_normal((3, 3)))},
     lambda a: scipy.linalg.sqrtm(a).real, {"forward_rtol": 1e-10}),
    ("y = torch.linalg.matrix_sqrth(a)", {"a": const(2 * np.eye(3))}, lambda a: np.sqrt(2) * np.eye(3), {}),
    ("y = torch.linalg.polar(x)[0]", {"x": normal((4, 3))}, lambda x: scipy.linalg.polar(x)[0],
     {"forward_rtol": 1e-10}),
    ("u, p = scipy.linalg.polar(x)\ny = p", {"x": normal((3, 3))}, lambda x: scipy.linalg.polar(x)[1],
     {"forward_rtol": 1e-10}),
    ("y = np.vander(x, 4)", {"x": normal((3,))}, lambda x: np.vander(x, 4), {}),
    ("y = vander(x, increasing=True)", {"x": normal((3,))}, lambda x: np.vander(x, increasing=True), {}),
    ("y = torch.linalg.vander(x, N=3)", {"x": normal((2, 4))},
     lambda x: np.stack([np.vander(r, 3, increasing=True) for r in x]), {}),
]


@pytest.mark.parametrize("program,inputs,reference,options", CASES, ids=[c[0] for c in CASES])
def test_op(program, inputs, reference, options):
    rng = np.random.default_rng(sum(map(ord, program)))
    check_op_case(program, inputs, reference, rng, **options)


def test_lu_factor_pivots_follow_the_library():
    # torch.linalg.lu_factor(tensor([[1., 2], [3, 4]])) in PyTorch 2.13: LU [[3, 4], [1/3, 2/3]], pivots [2, 2]
    a = [[1.0, 2.0], [3.0, 4.0]]
    r = api.evaluate("lu, p = torch.linalg.lu_factor(a)\ny = p", feeds={"a": a})
    np.testing.assert_array_equal(r.outputs["y"], [2.0, 2.0])
    r = api.evaluate("lu, p = scipy.linalg.lu_factor(a)\ny = p", feeds={"a": a})
    np.testing.assert_array_equal(r.outputs["y"], [1.0, 1.0])
    r = api.evaluate("y = torch.linalg.lu_factor(a)[0]", feeds={"a": a})
    np.testing.assert_allclose(r.outputs["y"], [[3.0, 4.0], [1 / 3, 2 / 3]], rtol=1e-15)
    p, low, up = (api.evaluate(f"y = torch.linalg.lu(m)[{k}]", feeds={"m": M}).outputs["y"] for k in range(3))
    np.testing.assert_allclose(p @ low @ up, M, rtol=1e-14)


def test_a_gradient_through_lu_factor_and_lu_solve_is_the_solve_s():
    # lu_solve(lu_factor(a), b) is solve(a, b): so are its gradients, through the factorization
    rng = np.random.default_rng(5)
    feeds = {"a": rng.standard_normal((3, 3)) + 2 * np.eye(3), "b": rng.standard_normal((3, 2))}
    via_lu = api.grad("lu, p = torch.linalg.lu_factor(a)\ny = sum(torch.linalg.lu_solve(lu, p, b) ** 2)",
                      wrt=["a", "b"], feeds=feeds)
    direct = api.grad("y = sum(np.linalg.solve(a, b) ** 2)", wrt=["a", "b"], feeds=feeds)
    for name in ("a", "b"):
        np.testing.assert_allclose(via_lu.gradients[name], direct.gradients[name], rtol=1e-10)


@pytest.mark.parametrize("program,message", [
    ("y = np.linalg.eig(x)",
     "eig: the eigenvalues of a general matrix are complex numbers (with complex eigenvectors), and gradcli's "
     "values are real; for a symmetric matrix write eigh, whose results are real"),
    ("y = torch.linalg.eigvals(x)",
     "eigvals: the eigenvalues of a general matrix are complex numbers (with complex eigenvectors), and gradcli's "
     "values are real; for a symmetric matrix write eigvalsh, whose results are real"),
    ("y = lu_factor(x)", "lu_factor() without its library: torch.linalg.lu_factor numbers the pivots from 1, "
                         "scipy.linalg.lu_factor from 0; write torch.linalg.lu_factor or scipy.linalg.lu_factor"),
    ("y = scipy.linalg.lu_solve((x, [0, 1]), x)",
     "scipy.linalg.lu_solve((lu, piv), b) is not supported: write torch.linalg.lu_solve(LU, pivots, B), with the "
     "pivots of torch.linalg.lu_factor"),
    ("y = torch.linalg.lu_solve(x, [0, 1], x)",
     "lu_solve: the pivots must be integers from 1 to 2 (as torch.linalg.lu_factor gives them)"),
    ("y = vander(x[0])", "vander() without its library: np.vander's powers decrease along a row (increasing=False), "
                         "torch.linalg.vander's increase; write np.vander, torch.linalg.vander, or increasing="),
    ("y = torch.linalg.matrix_sqrth(x @ x.T - 2 * eye(2))",
     "matrix_sqrth: the matrix is not positive definite (an eigenvalue is -1): matrix_sqrth needs all its "
     "eigenvalues above 0"),
    ("y = torch.polar(x, x)", "torch.polar(abs, angle) makes complex numbers, and gradcli's values are real; "
                              "torch.linalg.polar (scipy.linalg.polar) is the polar decomposition"),
    ("y = torch.linalg.polar(x)[0]", "polar needs matrices (..., m, n) with m >= n, got (2, 3)"),
    ("y = torch.linalg.vander(x, N=1)", "N must be an integer of 2 or more, not 1"),
    ("y = np.linalg.multi_dot([x, x])", "arrays 0 and 1 do not chain: shapes (2, 3) and (2, 3)"),
    ("y = np.linalg.tensorinv(x, ind=1)", "a of shape (2, 3) with ind=1 is not square: 2 rows for 3 columns"),
    ("y = torch.linalg.lu_factor(x)", "lu_factor needs a square matrix"),
    ("y = torch.linalg.householder_product(x, x[0])",
     "A must be matrices (..., m, n) with m >= n, got (2, 3)"),
])
def test_refusals_name_the_reason_at_the_call(program, message):
    with pytest.raises(GradcliError) as info:
        api.grad(program, wrt=["x"], feeds={"x": np.arange(6.0).reshape(2, 3) if "lu_solve" not in program
                                            else np.eye(2)})
    assert message in str(info.value), str(info.value)
    assert info.value.pos is not None and info.value.pos.line == 1


def test_cli_refuses_eig_with_exit_2():
    result = invoke("grad", "-e", "y = sum(np.linalg.eig(a)[0])", "--wrt", "a", "--set", "a=[[1, 2], [3, 4]]")
    assert result.exit_code == 2
    assert "eig: the eigenvalues of a general matrix are complex numbers" in result.output
