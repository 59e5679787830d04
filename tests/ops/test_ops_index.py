"""Indexing with constant integer arrays and masks (NumPy's advanced indexing) and JAX's
functional updates `x.at[idx]`: each forward against NumPy written here, gradients and second
derivatives against finite differences, and the refusals (out of range, a repeated index
where the update would be ambiguous, a computed index) as positioned errors."""
import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

from gradcheck import check_op_case


def normal(shape=(2, 3)):
    return lambda rng: rng.standard_normal(shape)


def at_add(x, idx, v):
    out = x.copy()
    np.add.at(out, idx, v)
    return out


def at_set(x, idx, v):
    out = x.copy()
    out[idx] = v
    return out


def at_mul(x, idx, v):
    out = x.copy()
    out[idx] = out[idx] * v
    return out


CASES = [
    # gathers: repeated indices accumulate in the gradient
    ("y = x[[0, 2, 2]]", {"x": normal((4,))}, lambda x: x[[0, 2, 2]], {}),
    ("y = x[[0, 2, 2]] ** 2", {"x": normal((4,))}, lambda x: x[[0, 2, 2]] ** 2, {}),
    ("y = x[[-1, 0, -1]] * x[[1, 1, 3]]", {"x": normal((4,))}, lambda x: x[[-1, 0, -1]] * x[[1, 1, 3]], {}),
    ("y = x[:, [1, 0, 1]]", {"x": normal((2, 3))}, lambda x: x[:, [1, 0, 1]], {}),
    ("y = x[[[0, 1], [1, 1]]]", {"x": normal((3, 2))}, lambda x: x[[[0, 1], [1, 1]]], {}),
    ("y = x[np.array([0, 1]), [2, 2]]", {"x": normal((2, 3))}, lambda x: x[np.array([0, 1]), [2, 2]], {}),
    ("y = x[1, 1:, [0, 2, 0]]", {"x": normal((2, 3, 4))}, lambda x: x[1, 1:, [0, 2, 0]], {}),
    ("y = x[[0, 1], :, [2, 3]]", {"x": normal((2, 3, 4))}, lambda x: x[[0, 1], :, [2, 3]], {}),
    ("y = x[..., [3, 0]]", {"x": normal((2, 3, 4))}, lambda x: x[..., [3, 0]], {}),
    ("y = x[None, [1, 0]]", {"x": normal((2, 3))}, lambda x: x[None, [1, 0]], {}),
    ("y = x[[True, False, True]]", {"x": normal((3, 2))}, lambda x: x[[True, False, True]], {}),
    ("y = x[:, [True, False, True]]", {"x": normal((2, 3))}, lambda x: x[:, [True, False, True]], {}),
    ("y = x[[[True, False], [False, True]]]", {"x": normal((2, 2))},
     lambda x: x[np.array([[True, False], [False, True]])], {}),
    ("y = exp(x)[[2, 0]] / sum(x[[1, 1]])", {"x": normal((3,))},
     lambda x: np.exp(x)[[2, 0]] / np.sum(x[[1, 1]]), {}),
    ("def f(x):\n    idx = [0, 2, 0]\n    return x[idx] * x[idx]\ny = f(x)", {"x": normal((3,))},
     lambda x: x[[0, 2, 0]] ** 2, {}),
    # JAX's functional updates
    ("y = x.at[[0, 2, 2]].add(v)", {"x": normal((4,)), "v": normal((3,))},
     lambda x, v: at_add(x, [0, 2, 2], v), {}),
    ("y = x.at[[0, 2, 2]].add(v) ** 2", {"x": normal((4,)), "v": normal((3,))},
     lambda x, v: at_add(x, [0, 2, 2], v) ** 2, {}),
    ("y = x.at[1].add(v)", {"x": normal((3, 2)), "v": normal((2,))}, lambda x, v: at_add(x, 1, v), {}),
    ("y = x.at[:, [1, 0]].add(v)", {"x": normal((2, 3)), "v": normal((2,))},
     lambda x, v: at_add(x, (slice(None), [1, 0]), v), {}),
    ("y = x.at[[0, 2]].set(v) * x", {"x": normal((4,)), "v": normal((2,))},
     lambda x, v: at_set(x, [0, 2], v) * x, {}),
    ("y = x.at[1:].set(v) ** 2", {"x": normal((3, 2)), "v": normal((2,))},
     lambda x, v: at_set(x, slice(1, None), v) ** 2, {}),
    ("y = jnp.sin(x.at[-1].set(v))", {"x": normal((3,)), "v": normal(())},
     lambda x, v: np.sin(at_set(x, -1, v)), {}),
    ("y = x.at[[1, 2]].multiply(v) ** 2", {"x": normal((4,)), "v": normal((2,))},
     lambda x, v: at_mul(x, [1, 2], v) ** 2, {}),
    ("y = x.at[[0, 3]].divide(v)", {"x": normal((4,)), "v": lambda rng: rng.uniform(0.5, 2, 2)},
     lambda x, v: at_set(x, [0, 3], x[[0, 3]] / v), {}),
    ("y = x.at[[0, 3]].power(v)", {"x": lambda rng: rng.uniform(0.5, 2, 4), "v": normal((2,))},
     lambda x, v: at_set(x, [0, 3], x[[0, 3]] ** v), {}),
    ("y = x.at[[0, 1, 3]].min(v) ** 2", {"x": normal((4,)), "v": normal((3,))},
     lambda x, v: at_set(x, [0, 1, 3], np.minimum(x[[0, 1, 3]], v)) ** 2, {}),
    ("y = x.at[[0, 1, 3]].max(v) ** 2", {"x": normal((4,)), "v": normal((3,))},
     lambda x, v: at_set(x, [0, 1, 3], np.maximum(x[[0, 1, 3]], v)) ** 2, {}),
    ("y = x.at[[2, 0, 2]].get() ** 3", {"x": normal((4,))}, lambda x: x[[2, 0, 2]] ** 3, {}),
]


@pytest.mark.parametrize("program,inputs,reference,options", CASES, ids=[c[0] for c in CASES])
def test_op(program, inputs, reference, options):
    rng = np.random.default_rng(sum(map(ord, program)))
    check_op_case(program, inputs, reference, rng, **options)


def test_repeated_indices_accumulate_in_the_gradient():
    r = api.grad("y = sum(x[[0, 0, 2, 0]] * w)", wrt=["x", "w"], feeds={"x": [1.0, 2.0, 3.0], "w": [1.0, 2.0, 3.0, 4.0]})
    np.testing.assert_array_equal(r.gradients["x"], [7.0, 0.0, 3.0])
    np.testing.assert_array_equal(r.gradients["w"], [1.0, 1.0, 3.0, 1.0])


def test_a_mask_is_not_read_as_integers():
    r = api.evaluate("y = x[[True, False, True]]", feeds={"x": [1.0, 2.0, 3.0]})
    np.testing.assert_array_equal(r.outputs["y"], [1.0, 3.0])
    r = api.evaluate("y = x[[1, 0, 1]]", feeds={"x": [1.0, 2.0, 3.0]})
    np.testing.assert_array_equal(r.outputs["y"], [2.0, 1.0, 2.0])
    r = api.evaluate("y = x[np.array([True, True, False])]", feeds={"x": [1.0, 2.0, 3.0]})
    np.testing.assert_array_equal(r.outputs["y"], [1.0, 2.0])


@pytest.mark.parametrize("program,words,column", [
    ("y = x[[0, 3]]", "index 3 is out of bounds for axis 0 with size 3", 6),
    ("y = x[[0, -4]]", "index -4 is out of bounds", 6),
    ("y = x[[True, False]]", "boolean index did not match", 6),
    ("y = x[[0.5, 1]]", "an index array must hold integers, not 0.5", 7),
    ("y = x[x > 0]", "a computed index would make the shape depend on the data", 9),
    ("y = x[n]", "'n' is an input (a top-level NAME = literal can be changed with --set)", 7),
    ("y = x[True]", "a boolean scalar index", 7),
    ("y = x.at[[0, 0]].set(1.0)", "repeated index", 9),
    ("y = x.at[[0, 1]].multiply(x[[1, 1, 2]])", "cannot be written where the index selects (2,)", 28),
    ("y = x.at[5].set(1.0)", "index 5 is out of bounds", 9),
    ("y = x.at[0].scale(2.0)", "unknown update '.scale'", 12),
    ("y = x.at[0] + 1", "x.at[index] is not a value", 9),
    ("y = x.at[0].set(1.0, mode='drop')", "keyword 'mode'", 22),
])
def test_index_errors_are_positioned(program, words, column):
    with pytest.raises(GradcliError) as info:
        api.evaluate(program, feeds={"x": [1.0, 2.0, 3.0], **({"n": 1.0} if "[n]" in program else {})})
    assert words in str(info.value)
    assert info.value.pos is not None and info.value.pos.column == column, info.value.pos


def test_cli_reports_an_out_of_range_index_with_exit_2(tmp_path):
    import subprocess
    import sys
    program = tmp_path / "p.py"
    program.write_text("x = [1.0, 2.0]\ny = x[[0, 2]]\n")
    done = subprocess.run([sys.executable, "-m", "gradcli", "grad", str(program), "--wrt", "x"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "p.py:2:6: error: []: index 2 is out of bounds" in done.stderr and "^" in done.stderr


def test_derive_of_advanced_indexing_and_updates_round_trips():
    program = ("y = sum(x[[0, 2, 2]] ** 2) + sum(x.at[[1]].set(w[0]) * x) + sum(x.at[[0, 2]].multiply(w[[1, 1]]))"
               " + sum(M[[1, 0], [True, False, True]] * M[:, [2, 2]].sum(axis=0))")
    feeds = {"x": [1.0, 2.0, 3.0], "w": [0.5, -1.5], "M": np.arange(6.0).reshape(2, 3)}
    for x in ("x", "w", "M"):
        printed = api.derive(program, wrt=x, feeds=feeds)
        got = next(iter(api.evaluate(printed).outputs.values()))
        np.testing.assert_allclose(got, api.grad(program, wrt=[x], feeds=feeds).gradients[x], rtol=1e-14,
                                   err_msg=printed)


def test_set_replaces_non_finite_values_and_multiply_keeps_them_elsewhere():
    r = api.grad("y = x.at[1].set(v) * 2", wrt=["x", "v"], feeds={"x": [1.0, np.inf, np.nan], "v": 4.0})
    np.testing.assert_array_equal(r.outputs["y"], [2.0, 8.0, np.nan])
    np.testing.assert_array_equal(r.gradients["x"], [2.0, 0.0, 2.0])
    assert float(r.gradients["v"]) == 2.0
    r = api.evaluate("y = x.at[0].multiply(2.0)", feeds={"x": [1.0, np.inf, 3.0]})
    np.testing.assert_array_equal(r.outputs["y"], [2.0, np.inf, 3.0])


def test_a_tuple_as_the_whole_subscript_is_one_index_per_axis_as_in_numpy():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    for program, want in (("y = x[(0, 1)]", x[(0, 1)]), ("y = x[(0, [1, 0])]", x[(0, [1, 0])]),
                          ("y = x[([0, 1], [1, 0])]", x[([0, 1], [1, 0])]), ("y = x[(0, 1), 0]", x[(0, 1), 0]),
                          ("y = x[(1,)]", x[(1,)]), ("y = x[[0, 1]]", x[[0, 1]]),
                          ("def f(x):\n    i = (0, 1)\n    return x[i]\ny = f(x)", x[(0, 1)]),
                          ("y = x.at[(0, 1)].set(9.0)", np.array([[1.0, 9.0], [3.0, 4.0]]))):
        got = api.evaluate(program, feeds={"x": x}).outputs
        np.testing.assert_array_equal(next(iter(got.values())), want, err_msg=program)


def test_a_trailing_comma_makes_the_tuple_one_index_array_as_in_numpy():
    x = np.arange(6.0).reshape(2, 3)
    r = api.grad("y = sum(x[(1, 1),] * w)", wrt=["x"], feeds={"x": x, "w": np.ones((2, 3))})
    np.testing.assert_array_equal(r.outputs["y"], x[(1, 1),].sum())
    np.testing.assert_array_equal(r.gradients["x"], [[0, 0, 0], [2, 2, 2]])
    assert api.evaluate("y = x[(1, 1)]", feeds={"x": x}).outputs["y"] == x[(1, 1)]
    updated = api.evaluate("y = x.at[(0, 1),].add(1.0)", feeds={"x": x}).outputs["y"]
    np.testing.assert_array_equal(updated, x + 1)
