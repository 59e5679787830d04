"""Forward mode (gradcli/forward.py): Jacobian-vector products on every row of the op table
tests, against reverse mode (J^T applied to each basis vector) to float64 round-off and against
central differences along the tangent; the placeholder of the transpose construction never
reaches the result; and the edges (unconnected outputs, zero Jacobians, several ys and xs, a
tangent of the wrong shape, a gradient rule that is not linear)."""
import importlib
import pathlib

import numpy as np
import pytest

from gradcli import ops
from gradcli.api import compile_program
from gradcli.autodiff import gradients
from gradcli.engine.evaluate import needed_equations, run
from gradcli.errors import GradcliError
from gradcli.forward import PLACEHOLDER, jvp

EPS = np.finfo(np.float64).eps


def _op_table_rows():
    """(id, program, {input: generator}, {held input: generator}, options) for every row of the
    op table tests (tests/ops/test_ops*.py), as tests/engine/test_backends.py walks them."""
    rows = []
    for path in sorted((pathlib.Path(__file__).parent / "ops").glob("test_ops*.py")):
        module = importlib.import_module(path.stem)
        for case in module.CASES:
            options = case[3] if len(case) > 3 else {}
            rows.append((f"{path.stem}:{case[0]}", case[0], case[1], options.get("fixed") or {}, options))
    return rows


ROWS = _op_table_rows()


def _graph(program, inputs, fixed, rng):
    feeds = {name: np.asarray(make(rng), dtype=np.float64) for name, make in {**inputs, **fixed}.items()}
    if "where(c" in program and "c" not in feeds:
        feeds["c"] = rng.choice([0.0, 1.0], (4,))
    graph = compile_program(program, "<test>", feeds)
    return graph, graph.result[1], [graph.names[name] for name in inputs]


def _value(graph, i, overrides=None):
    with np.errstate(all="ignore"):
        return np.asarray(run(graph, [i], overrides=overrides)[i], dtype=np.float64)


def _reverse_jacobians(graph, y, xs):
    """dY/dX for each X, one reverse pass per element of Y (each row J^T e_i)."""
    seed = graph.add_input("seed", np.zeros(graph.shapes[y]))
    grads = gradients(graph, [y], xs, [seed])
    n_y = int(np.prod(graph.shapes[y]))
    out = [np.zeros((n_y,) + graph.shapes[x]) for x in xs]
    for i in range(n_y):
        basis = np.zeros(n_y)
        basis[i] = 1.0
        live = [g for g in grads if g is not None]
        with np.errstate(all="ignore"):
            values = run(graph, live, overrides={seed: basis.reshape(graph.shapes[y])})
        for block, g in zip(out, grads):
            if g is not None:
                block[i] = values[g]
    return out


def _placeholders(graph, after):
    return [i for i in range(after, len(graph.equations))
            if graph.equations[i].op.name == "input" and graph.equations[i].params.get("name") == PLACEHOLDER]


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_forward_mode_is_reverse_mode_transposed_and_the_derivative_along_the_tangent(row):
    _, program, inputs, fixed, options = row
    rng = np.random.default_rng(sum(map(ord, program)))
    graph, y, xs = _graph(program, inputs, fixed, rng)
    points = [_value(graph, x) for x in xs]
    tangent_values = [rng.standard_normal(graph.shapes[x]) for x in xs]
    tangents = [graph.add_input(f"t{k}", t) for k, t in enumerate(tangent_values)]
    first = len(graph.equations)
    (product,) = jvp(graph, [y], xs, tangents)
    assert product is not None, f"{program!r}: no derivative along the tangent"
    got = _value(graph, product).reshape(-1)

    # the placeholder u of J^T u is not read (not even through a dead-looking path), and
    # giving it a value changes nothing: its own value is NaN, so a leak could not hide
    used = set(needed_equations(graph, [product]))
    placeholders = _placeholders(graph, first)
    assert placeholders and not used & set(placeholders)
    moved = _value(graph, product, {u: rng.standard_normal(graph.shapes[u]) for u in placeholders}).reshape(-1)
    np.testing.assert_array_equal(moved, got)

    # reverse mode: J t from the rows J^T e_i, to round-off: relative to the largest sum of
    # |J| |t| terms (an element that cancels to 0, corrcoef's diagonal, is 0 to that size)
    jacobians = _reverse_jacobians(graph, y, xs)
    n_y = got.size
    want = sum(j.reshape(n_y, -1) @ t.reshape(-1) for j, t in zip(jacobians, tangent_values))
    size = sum(np.abs(j.reshape(n_y, -1)) @ np.abs(t.reshape(-1)) for j, t in zip(jacobians, tangent_values))
    assert np.all(np.abs(got - want) <= 64 * EPS * np.max(size, initial=0.0) + 1e-300), \
        f"{program!r}: forward {got} against reverse {want}"

    # central differences of the program along the tangent
    step = 1e-6 * max(1.0, *(float(np.max(np.abs(p), initial=0.0)) for p in points))

    def at(sign):
        return _value(graph, y, {x: p + sign * step * t for x, p, t in zip(xs, points, tangent_values)}).reshape(-1)

    plus, minus = at(1), at(-1)
    differences = (plus - minus) / (2 * step)
    noise = 8 * EPS * (np.abs(plus) + np.abs(minus)) / step
    rtol, atol = max(options.get("rtol", 1e-6), 1e-6), max(options.get("atol", 1e-7), 1e-7)
    np.testing.assert_allclose(got, differences, rtol=rtol, atol=atol + float(np.max(noise, initial=0.0)),
                               err_msg=f"forward mode against central differences of {program!r}")


def test_every_differentiable_operation_has_a_row_here():
    """The walk above covers each op that has a gradient (the op tests' own coverage rule)."""
    from test_ops import covered_operations
    covered = covered_operations()
    missing = [name for name, op in ops.OPS.items()
               if op.public and not all(r == "no gradient" for r in op.vjp or ()) and name not in covered]
    assert not missing and len(ROWS) > 600


# --------------------------------------------------------------------------- edges

def _program(text, **feeds):
    graph = compile_program(text, "<test>", {k: np.asarray(v, dtype=float) for k, v in feeds.items()})
    return graph


def test_several_outputs_and_inputs_sum_over_the_inputs_per_output():
    g = _program("p = a * b\nq = sum(sin(a)) + b[0] ** 3", a=[0.5, -1.0, 2.0], b=[1.5, 0.25, -2.0])
    a, b, p, q = (g.names[n] for n in "abpq")
    ta, tb = np.array([1.0, 2.0, -1.0]), np.array([0.5, 0.0, 3.0])
    products = jvp(g, [p, q], [a, b], [g.add_input("ta", ta), g.add_input("tb", tb)])
    av, bv = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -2.0])
    np.testing.assert_allclose(_value(g, products[0]), ta * bv + av * tb, rtol=1e-15)
    np.testing.assert_allclose(_value(g, products[1]), np.cos(av) @ ta + 3 * bv[0] ** 2 * tb[0], rtol=1e-15)


def test_an_output_cut_off_by_stop_gradient_is_none_as_in_reverse_mode():
    g = _program("y = stop_gradient(x) * 2\nz = x * 3", x=[1.0, 2.0])
    x, y, z = g.names["x"], g.names["y"], g.names["z"]
    products = jvp(g, [y, z], [x], [g.add_input("t", [1.0, -1.0])])
    assert products[0] is None and gradients(g, [y], [x]) == [None]
    np.testing.assert_array_equal(_value(g, products[1]), [3.0, -3.0])


def test_a_function_constant_in_x_has_a_zero_derivative():
    g = _program("y = x - x + 1", x=[1.0, 2.0, 3.0])
    (product,) = jvp(g, [g.names["y"]], [g.names["x"]], [g.add_input("t", [1.0, 5.0, -2.0])])
    np.testing.assert_array_equal(_value(g, product), [0.0, 0.0, 0.0])


def test_the_derivative_of_an_input_along_a_tangent_is_the_tangent():
    g = _program("y = x", x=[[1.0, 2.0]])
    t = g.add_input("t", [[4.0, -5.0]])
    (product,) = jvp(g, [g.names["x"]], [g.names["x"]], [t])
    np.testing.assert_array_equal(_value(g, product), [[4.0, -5.0]])


def test_forward_over_forward_is_a_second_directional_derivative():
    """d/ds (d/dt f(x + t v + s w)) = w^T H v, against central differences of the first JVP."""
    g = _program("y = sum(exp(x) * sin(x[::-1]))", x=[0.3, -0.7, 1.1])
    x, y = g.names["x"], g.names["y"]
    v, w = np.array([1.0, 0.5, -2.0]), np.array([0.25, -1.0, 0.75])
    (first,) = jvp(g, [y], [x], [g.add_input("v", v)])
    (second,) = jvp(g, [first], [x], [g.add_input("w", w)])
    point = np.array([0.3, -0.7, 1.1])
    h = 1e-5
    want = (_value(g, first, {x: point + h * w}) - _value(g, first, {x: point - h * w})) / (2 * h)
    np.testing.assert_allclose(_value(g, second), want, rtol=1e-8)


def test_a_tangent_of_another_shape_is_refused_at_its_place():
    g = _program("y = x * 2\nt = [1.0, 2.0]", x=[1.0, 2.0, 3.0])
    with pytest.raises(GradcliError) as err:
        jvp(g, [g.names["y"]], [g.names["x"]], [g.names["t"]])
    assert str(err.value).startswith("jvp: the tangent has shape (2,), its primal has shape (3,): they must match")
    assert err.value.pos.line == 2


def test_a_gradient_rule_that_is_not_linear_in_its_cotangent_is_a_loud_internal_error():
    """The transpose construction is exact only for rules linear in the cotangent (all of the
    table's): one that is not would read the placeholder, which is refused, never a wrong J t."""
    good = ops.OPS["sin"]
    ops.register(good.replace(vjp=(lambda g, ans, x: g * g * ops.G.cos(x),)), replace=True)
    try:
        g = _program("y = sin(x) * 2", x=[0.5, 1.0])
        with pytest.raises(RuntimeError, match="the gradient rule of 'sin' is not linear in its cotangent"):
            jvp(g, [g.names["y"]], [g.names["x"]], [g.add_input("t", [1.0, 1.0])])
    finally:
        ops.register(good, replace=True)
