"""Tuples in shapes are Python's tuples: `+` joins them, `*` by an integer repeats them, `==`
compares them whole (as NumPy's own programs rely on: `x.shape + (1,)`, `(n,) + x.shape`); each
program is checked against NumPy running the same text."""
import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

X = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]])
C = np.float64(2.0)


def value(program, **feeds):
    return next(iter(api.evaluate("import numpy as np\n" + program, feeds=feeds).outputs.values()))


def numpy_runs(program, **feeds):
    scope = {"np": np, **feeds}
    exec(compile(program, "<test>", "exec"), scope)  # the test's own text, the reference
    return scope["y"]


@pytest.mark.parametrize("program", [
    "y = np.broadcast_to(c, (1,) + (3,))",            # was shape (4,): the tuples added
    "y = np.tile(x, (2,) + (1,))",                     # was reps (3,)
    "y = np.reshape(x, x.shape + (1,))",
    "y = np.broadcast_to(x, (2,) + x.shape)",
    "y = np.reshape(x, x.shape[:-1] + (1, 3))",
    "y = np.zeros((2, 3, 4)[:2] + (1,))",
    "y = np.ones(() + (2,))",
    "y = np.ones((2,) * 2)",
    "y = np.ones(2 * (2, 1))",
    "y = np.ones((2,) * 0 + (1,))",
    "y = np.ones((1,) + (2,) + (3,))",
    "def f(a):\n    return np.reshape(a, (1,) + a.shape)\ny = f(x)",
    "y = x.sum() * (x.shape == (2, 3)) + (x.shape != (3, 2))",
    "y = x * (1.0, 2.0, 3.0)",                         # a tuple beside an array is an array
    "y = np.asarray((1.0, 2.0)) + (3.0, 4.0)",
])
def test_tuples_in_shapes_are_pythons_tuples(program):
    expected = numpy_runs(program, x=X, c=C)
    got = value(program, x=X, c=C)
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-15)


@pytest.mark.parametrize("program,message", [
    ("y = np.ones((2, 3) - (1, 1))", "'-' of two tuples"),
    ("y = np.ones((2,) * 1.5)", "a tuple repeats only by an integer"),
])
def test_what_python_refuses_of_tuples_is_refused(program, message):
    with pytest.raises(GradcliError) as info:
        value(program)
    assert message in str(info.value)


@pytest.mark.parametrize("program", [
    "y = np.array([1.0, 2.0] + [3.0])",                       # was [4.0, 5.0]: the lists added
    "y = np.array([0.5] * 3)",                                  # was [1.5]: the list multiplied
    "y = np.array(2 * [[1.0, -1.0]])",
    "y = np.where(np.array([[True, False, True]] * 2), x, 0.0)",
    "y = np.sum(np.array([[1.0, 2.0]] + [[3.0, 4.0]]), axis=0)",
])
def test_lists_of_pasted_code_join_and_repeat_as_pythons(program):
    expected = numpy_runs(program, x=X)
    got = value(program, x=X)
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-15)


@pytest.mark.parametrize("program", [
    "y = np.array([x, 2.0] + [3.0])",                               # a computed item: joined as well
    "y = np.array([x] * 3)",
    "a = [1.0, 2.0]\ny = np.array(a + [3.0])",                      # was [4.0, 5.0]: a name bound to a list
    "a = [1.0, 2.0]\ny = np.array([3.0] + a)",
    "a = [1.0, 2.0]\nb = a * 2\ny = np.sum(np.array(b) ** 2)",      # was 20.0: Python's is 10.0
    "a = [x, 2.0]\nb = a + a\ny = np.array(b)",
    "def f(u):\n    a = [u, 1.0]\n    return np.array(a + [u])\ny = f(x)",
    "a = [1.0, 2.0]\ny = np.array(a) + [3.0]",                        # an array beside a list: NumPy adds
    "y = np.array([1.0, 2.0]) * 2",
])
def test_names_bound_to_pasted_lists_join_and_repeat_as_pythons(program):
    scalar = np.float64(1.5)
    expected = numpy_runs(program, x=scalar)
    got = api.evaluate("import numpy as np\n" + program, feeds={"x": scalar}).outputs["y"]
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-15)


def test_a_gradient_flows_through_a_joined_list():
    """d/dx sum([x, 2x] + [x**2]) = 1 + 2 + 2x, through the join (concatenate)."""
    program = "import numpy as np\na = [x, 2.0 * x]\ny = np.sum(np.array(a + [x ** 2]))"
    got = api.grad(program, wrt=["x"], feeds={"x": 1.5}).gradients["x"]
    assert float(got) == 1.0 + 2.0 + 2 * 1.5


def test_a_pasted_list_repeated_by_a_computed_count_is_refused_naming_both_readings():
    with pytest.raises(GradcliError) as info:
        api.evaluate("import numpy as np\na = [1.0, 2.0]\ny = np.array(a * n)", feeds={"n": 2.0})
    assert str(info.value) == ("a list * n reads two ways: Python repeats the list, gradcli would multiply its "
                               "numbers; write np.tile(a, n) to repeat, or np.array(a) * n to multiply")


def test_the_languages_own_lists_are_arrays():
    """Without an import, `[...]` is the language's array (the documented contract)."""
    assert api.evaluate("y = [1.0, 2.0] * 2").outputs["y"].tolist() == [2.0, 4.0]
    assert api.evaluate("y = [1.0, 2.0] + [3.0, 4.0]").outputs["y"].tolist() == [4.0, 6.0]
