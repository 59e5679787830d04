"""Layer 1: the op table. Every gradient rule against float64 central finite differences on
random inputs (broadcasting included), second derivatives by reverse over reverse, and the
conventions at ties and kinks."""
import numpy as np
import pytest

from gradcli import api
from gradcli.language.dialects import callable_ops
from gradcli.ops import OPS

from gradcheck import check_program


def positive(shape):
    return lambda rng: rng.uniform(0.5, 2.0, shape)


def normal(shape):
    return lambda rng: rng.standard_normal(shape)


def away_from_zero(shape):
    return lambda rng: rng.choice([-1.0, 1.0], shape) * rng.uniform(0.3, 2.0, shape)


# (program, {input: generator}); each input is differentiated.
CASES = [
    ("y = -x", {"x": normal((3, 4))}),
    ("y = +x", {"x": normal((3,))}),
    ("y = exp(x)", {"x": normal((3, 4))}),
    ("y = log(x)", {"x": positive((3, 4))}),
    ("y = log1p(x)", {"x": positive((5,))}),
    ("y = expm1(x)", {"x": normal((5,))}),
    ("y = sqrt(x)", {"x": positive((2, 3))}),
    ("y = square(x)", {"x": normal((4,))}),
    ("y = abs(x)", {"x": away_from_zero((6,))}),
    ("y = sin(x)", {"x": normal((4,))}),
    ("y = cos(x)", {"x": normal((4,))}),
    ("y = tan(x)", {"x": lambda rng: rng.uniform(-1.2, 1.2, (4,))}),
    ("y = tanh(x)", {"x": normal((4,))}),
    ("y = sigmoid(x)", {"x": normal((2, 3))}),
    ("y = softplus(x)", {"x": normal((2, 3))}),
    ("y = relu(x)", {"x": away_from_zero((6,))}),
    ("y = log_sigmoid(x)", {"x": normal((2, 3))}),
    ("y = tf.constant(x) * np.array(x)", {"x": normal((3,))}),
    ("y = a + b", {"a": normal((3, 1)), "b": normal((1, 4))}),
    ("y = a - b", {"a": normal((3, 4)), "b": normal((4,))}),
    ("y = a * b", {"a": normal((3, 1)), "b": normal((1, 4))}),
    ("y = a / b", {"a": normal((2, 3)), "b": away_from_zero((3,))}),
    ("y = a ** b", {"a": positive((3, 1)), "b": normal((1, 4))}),
    ("y = a ** 3", {"a": normal((4,))}),
    ("y = 2 ** a", {"a": normal((4,))}),
    # Python's %: a/b stays within (2.09, 2.8) or (-2.8, -2.09), away from the jumps
    ("y = a % b", {"a": lambda rng: rng.choice([-1.0, 1.0], (5,)) * rng.uniform(2.2, 2.8, (5,)),
                   "b": lambda rng: rng.uniform(1.0, 1.05, (5,))}),
    ("y = maximum(a, b)", {"a": normal((3, 1)), "b": normal((1, 4))}),
    ("y = abs_right_at_zero(x)", {"x": away_from_zero((2, 3))}),
    ("y = selu_zero_right(x)", {"x": away_from_zero((2, 3))}),
    ("y = clip_splitting_ties(x, lo, hi)", {"x": normal((2, 3)), "lo": lambda rng: rng.uniform(-2, -1, (2, 1)),
                                            "hi": lambda rng: rng.uniform(1, 2, (1, 3))}),
    ("y = minimum(a, b)", {"a": normal((3, 4)), "b": normal((4,))}),
    ("y = where(c, a, b)", {"a": normal((4,)), "b": normal((3, 1))}),
    ("y = clip(x, lo, hi)", {"x": lambda rng: rng.uniform(-3, 3, (8,)), "lo": lambda rng: rng.uniform(-2.1, -1.9, ()),
                             "hi": lambda rng: rng.uniform(1.9, 2.1, ())}),
    ("y = sum(x)", {"x": normal((3, 4))}),
    ("y = sum(x, axis=0)", {"x": normal((3, 4))}),
    ("y = sum(x, axis=[0, 2], keepdims=True)", {"x": normal((2, 3, 4))}),
    ("y = mean(x, axis=-1)", {"x": normal((3, 4))}),
    ("y = prod(x)", {"x": away_from_zero((2, 3))}),
    ("y = prod(x, axis=1, keepdims=True)", {"x": away_from_zero((3, 4))}),
    ("y = prod_by_division(x, axis=0)", {"x": away_from_zero((3, 4))}),
    ("y = batch_norm(x, None, None, w, b, True) * x", {"x": normal((3, 2, 2)), "w": normal((2,)), "b": normal((2,))}),
    ("y = max(x, axis=1)", {"x": normal((3, 4))}),
    ("y = min(x)", {"x": normal((3, 4))}),
    ("y = logsumexp(x, axis=0)", {"x": normal((3, 4))}),
    ("y = logsumexp(x)", {"x": normal((5,))}),
    ("y = softmax(x)", {"x": normal((3, 4))}),
    ("y = softmax(x, axis=0)", {"x": normal((3, 4))}),
    ("y = log_softmax(x)", {"x": normal((2, 5))}),
    ("y = a @ b", {"a": normal((3, 4)), "b": normal((4, 2))}),
    ("y = a @ b", {"a": normal((4,)), "b": normal((4,))}),
    ("y = a @ b", {"a": normal((3, 4)), "b": normal((4,))}),
    ("y = a @ b", {"a": normal((4,)), "b": normal((4, 2))}),
    ("y = a @ b", {"a": normal((2, 3, 4)), "b": normal((4, 2))}),
    ("y = a @ b", {"a": normal((4,)), "b": normal((2, 4, 3))}),
    ("y = dot(a, b)", {"a": normal((2, 3)), "b": normal((3, 2))}),
    ("y = transpose(x)", {"x": normal((2, 3, 4))}),
    ("y = transpose(x, axes=[1, 0, 2])", {"x": normal((2, 3, 4))}),
    ("y = reshape(x, [3, -1])", {"x": normal((2, 3, 2))}),
    ("y = broadcast_to(x, [3, 4])", {"x": normal((4,))}),
    ("y = sum_to(x, [1, 4])", {"x": normal((3, 4))}),
    ("y = prod_others(x, axis=1)", {"x": away_from_zero((2, 3))}),
    ("y = prod_others(x)", {"x": away_from_zero((4,))}),
    ("y = x[1]", {"x": normal((3, 4))}),
    ("y = x[:, 1:3]", {"x": normal((3, 4))}),
    ("y = x[::-2, None]", {"x": normal((5,))}),
    ("y = x[..., -1]", {"x": normal((2, 3, 4))}),
    ("y = [a, b * 2, a * b]", {"a": normal((3,)), "b": normal((3,))}),
    ("y = sum(x * x * x + sin(x) * x + exp(x) / (1 + x * x))", {"x": normal((3,))}),
]


@pytest.mark.parametrize("program,inputs", CASES, ids=[c[0] for c in CASES])
def test_gradient_matches_finite_differences(program, inputs):
    rng = np.random.default_rng(abs(hash(program)) % 2**32)
    feeds = {name: make(rng) for name, make in inputs.items()}
    if "where(c" in program:
        feeds["c"] = rng.choice([0.0, 1.0], (4,))
    check_program(program, feeds, list(inputs), rng)


def _all_op_test_programs():
    """Every program of every op table test: this module's CASES and each tests/ops/test_ops_*.py's."""
    import importlib
    import pathlib

    programs = [program for program, _ in CASES]
    for path in sorted(pathlib.Path(__file__).parent.glob("test_ops_*.py")):
        module = importlib.import_module(path.stem)
        programs += [case[0] for case in module.CASES]
    return programs


def row_feeds(program, inputs, fixed):
    """The inputs of an op table row (its generators), seeded by the program's text so that a
    failure replays; `where(c, ...)` rows get a 0/1 condition."""
    rng = np.random.default_rng(sum(map(ord, program)))
    feeds = {name: np.asarray(make(rng), dtype=np.float64) for name, make in {**inputs, **fixed}.items()}
    if "where(c" in program and "c" not in feeds:
        feeds["c"] = rng.choice([0.0, 1.0], (4,))
    return feeds


def covered_operations() -> set[str]:
    """The ops some finite-difference row of the op table tests calls (tests/ops/test_op_records.py
    walks the table with it too)."""
    covered = {"negative", "positive", "broadcast_to", "sum_to", "index", "stack", "stop_gradient", "identity"}
    programs = _all_op_test_programs()
    spellings = callable_ops().items()
    for program in programs:
        for name, op in spellings:
            if f"{name}(" in program:
                covered.add(op.name)
    from gradcli.language.parser import BINARY_OPS

    for symbol, name in BINARY_OPS.items():
        if any(f" {symbol} " in p for p in programs):
            covered.add(name)
    return covered


def test_every_public_operation_is_covered_or_not_differentiable():
    """Adding an op is one record plus its test row: an op without a finite-difference row fails."""
    covered = covered_operations()
    missing = [name for name, op in OPS.items()
               if op.public and not all(r == "no gradient" for r in op.vjp or ()) and name not in covered]
    assert not missing, f"no finite-difference test for {missing}"


def grad_of(program, wrt="x", **feeds):
    result = api.grad(program, wrt=[wrt], feeds=feeds)
    return result.gradients[wrt]


def test_max_splits_the_gradient_evenly_among_ties():
    np.testing.assert_array_equal(grad_of("y = max(x)", x=[2.0, 2.0, 2.0]), [1 / 3] * 3)
    np.testing.assert_array_equal(grad_of("y = min(x, axis=1)", x=[[1.0, 1.0, 2.0], [0.0, 3.0, 0.0]]),
                                  [[0.5, 0.5, 0.0], [0.5, 0.0, 0.5]])


def test_maximum_splits_on_equality_but_relu_abs_sign_give_zero_at_zero():
    np.testing.assert_array_equal(grad_of("y = maximum(x, 0)", x=[0.0, 1.0, -1.0]), [0.5, 1.0, 0.0])
    np.testing.assert_array_equal(grad_of("y = minimum(x, 0)", x=[0.0, 1.0, -1.0]), [0.5, 0.0, 1.0])
    np.testing.assert_array_equal(grad_of("y = relu(x)", x=[0.0, 2.0, -2.0]), [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(grad_of("y = abs(x)", x=[0.0, 2.0, -2.0]), [0.0, 1.0, -1.0])


def test_non_differentiable_operations_pass_no_gradient():
    for program in ("y = sign(x)", "y = x > 1", "y = floor(x)", "y = argmax(x)", "y = stop_gradient(x)"):
        assert grad_of(program, x=[0.5, 1.5]) is None, program


def test_stop_gradient_passes_the_value_but_not_the_gradient():
    x = np.array([1.9, -0.8, 0.5])
    r = api.grad("y = sum(stop_gradient(x) * x + x)", wrt=["x"], feeds={"x": x})
    np.testing.assert_allclose(r.outputs["y"], np.sum(x * x + x))
    np.testing.assert_allclose(r.gradients["x"], x + 1.0, rtol=1e-15)


def test_prod_gradient_is_exact_with_zeros():
    np.testing.assert_array_equal(grad_of("y = prod(x)", x=[0.0, 2.0, 3.0]), [6.0, 0.0, 0.0])
    np.testing.assert_array_equal(grad_of("y = prod(x)", x=[0.0, 2.0, 0.0]), [0.0, 0.0, 0.0])


def test_stable_forms_stay_finite_at_extremes():
    r = api.grad("y = sigmoid(x)", wrt=["x"], feeds={"x": [-1000.0, 0.0, 1000.0]})
    np.testing.assert_array_equal(r.outputs["y"], [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(r.gradients["x"], [0.0, 0.25, 0.0])
    r = api.grad("y = logsumexp(x)", wrt=["x"], feeds={"x": [1000.0, 1001.0, 1002.0]})
    z = np.exp(np.array([-2.0, -1.0, 0.0]))
    np.testing.assert_allclose(r.outputs["y"], 1002.0 + np.log(z.sum()), rtol=1e-15)
    np.testing.assert_allclose(r.gradients["x"], z / z.sum(), rtol=1e-12)
    r = api.evaluate("y = softplus(x)", feeds={"x": [-1000.0, 1000.0]})
    np.testing.assert_array_equal(r.outputs["y"], [0.0, 1000.0])


def test_logsumexp_and_log_softmax_stay_accurate_at_large_magnitudes():
    # found by fuzzing: the gradient as exp(x - logsumexp(x)) cancels catastrophically
    x = np.array([[1.7762e13, 1.7762e13, 1.7762e13 + 2.0], [0.5, -1.0, 2.0]])
    r = api.grad("y = sum(logsumexp(x, axis=1) * [1.0, 2.0])", wrt=["x"], feeds={"x": x})
    z = x - x.max(axis=1, keepdims=True)
    s = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(r.gradients["x"], s * [[1.0], [2.0]], rtol=1e-14)
    r = api.evaluate("y = log_softmax(x)", feeds={"x": x})
    np.testing.assert_allclose(r.outputs["y"], z - np.log(np.exp(z).sum(axis=1, keepdims=True)), rtol=1e-14)
    r = api.grad("y = logsumexp(exp(exp(sum(a, axis=1, keepdims=True) * 3.0)), axis=-1)", wrt=["a"],
                 feeds={"a": [[0.31990733, 0.68848968, 0.13087497]]})
    s0 = 0.31990733 + 0.68848968 + 0.13087497
    exact = np.exp(np.exp(3 * s0)) * np.exp(3 * s0) * 3  # 1.616679371718890e15 (40 digits: ...890.51)
    np.testing.assert_allclose(r.gradients["a"], [[exact] * 3], rtol=1e-12)


def test_log_sigmoid_is_finite_where_log_of_sigmoid_is_not():
    r = api.grad("y = log_sigmoid(x)", wrt=["x"], feeds={"x": [-1000.0, 0.0, 1000.0]})
    np.testing.assert_allclose(r.outputs["y"], [-1000.0, -np.log(2.0), 0.0])
    np.testing.assert_allclose(r.gradients["x"], [1.0, 0.5, 0.0])
