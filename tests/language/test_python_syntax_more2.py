"""Still more of Python's syntax, as pasted code writes it: names bound to strings (a mode, an
einsum spec, a reduction, a dict's key, a label), chained comparisons, properties and static or
class methods, the function spellings of `^` on truths, starred loop targets, `{**d}`, `print(*xs)`,
`try` whose body runs without error, and `global` of a name only read. Each value is checked
against Python / NumPy computing the same thing (gradients against float64 finite differences or
analytic ones), each refusal with its exact sentence, place and exit code."""
import subprocess
import sys

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError
from test_language import _agree, _both_parse, _lark_reference


def outputs(program, **feeds):
    return api.evaluate(program, feeds=feeds, fixes=False).outputs


def value(program, **feeds):
    return np.asarray(list(outputs(program, **feeds).values())[-1])


def gradient(program, wrt, **feeds):
    return np.asarray(api.grad(program, wrt=[wrt], feeds=feeds, fixes=False).gradients[wrt])


def finite_difference(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def assert_refused(program, message, line, column, **feeds):
    with pytest.raises(GradcliError) as info:
        api.evaluate(program, feeds=feeds, fixes=False)
    assert str(info.value) == message
    assert (info.value.pos.line, info.value.pos.column) == (line, column)


def cli(program, *args):
    return subprocess.run([sys.executable, "-m", "gradcli", "eval", *args], input=program,
                          capture_output=True, text=True)


# --------------------------------------------------------------------------- names bound to strings
def test_a_mode_bound_to_a_string_chooses_an_if_at_the_top_level():
    program = 'x = 1.5\nmode = "relu"\nif mode == "relu":\n    y = x * 2\nelse:\n    y = -x\n'
    assert outputs(program) == {"y": 3.0}
    assert gradient(program, "x").tolist() == 2.0


def test_a_mode_in_a_conditional_expression_and_in_a_function():
    relu = 'x = 1.5\nmode = "tanh"\ny = np.maximum(x, 0.0) if mode == "relu" else np.tanh(x)\n'
    assert float(value(relu)) == float(np.tanh(1.5))
    fd = finite_difference(np.tanh, 1.5)
    assert abs(float(gradient(relu, "x")) - fd) < 1e-9
    local = 'def act(x):\n    mode = "neg"\n    return -x if mode == "neg" else x\ny = act(2.0)\n'
    assert outputs(local) == {"y": -2.0}


def test_an_einsum_spec_and_a_reduction_bound_to_names():
    a, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[0.5, -1.0], [2.0, 0.25]])
    program = (f"a = np.array({a.tolist()})\nb = np.array({b.tolist()})\n"
               'spec = "ij,jk->ik"\ny = np.einsum(spec, a, b).sum()\n')
    assert float(value(program)) == float(np.einsum("ij,jk->ik", a, b).sum())
    torch = ("import torch\nimport torch.nn.functional as F\na = torch.tensor([1.0, 2.0, 3.0])\n"
             'b = torch.tensor([0.5, 0.0, 4.0])\nreduction = "sum"\ny = F.mse_loss(a, b, reduction=reduction)\n')
    assert float(value(torch)) == 0.25 + 4.0 + 1.0


def test_dict_keys_from_names_and_a_loop_over_a_list_of_strings():
    assert outputs('d = {"w": 1.5, "b": 2.0}\nkey = "w"\ny = d[key] * 2\n') == {"y": 3.0}
    loop = 'params = {"w": 1.5, "b": 2.0}\ny = 0.0\nfor name in ["w", "b"]:\n    y = y + params[name] ** 2\n'
    assert outputs(loop) == {"y": 1.5 ** 2 + 2.0 ** 2}
    comprehension = 'params = {"w": 1.5, "b": 2.0}\ny = sum([params[n] * 3 for n in ["w", "b"]])\n'
    assert outputs(comprehension) == {"y": 10.5}


def test_names_bound_to_strings_compare_as_pythons_strings():
    assert outputs('x = 2.0\na = "relu"\nb = "relu"\ny = x if a == b else -x\n') == {"y": 2.0}
    local = 'x = 2.0\na = "relu"\ndef f(v, kind="tanh"):\n    return v if kind != a else -v\ny = f(x)\n'
    assert outputs(local) == {"y": 2.0}
    assert_refused('x = 2.0\na = "relu"\ny = x if a == x else -x\n',
                   "'==' of a string and a value that is not one: compare strings with strings", 3, 15)


def test_a_name_bound_to_a_list_of_strings_is_pythons_list():
    program = ('x = 2.0\nmodes = ["relu", "tanh"]\ny = 0.0\nfor m in modes:\n    if m == "tanh":\n'
               '        y = y + np.tanh(x)\n    else:\n        y = y + np.maximum(x, 0.0)\n')
    assert float(value(program)) == float(np.maximum(2.0, 0.0) + np.tanh(2.0))
    assert outputs('x = 2.0\nmodes = ["relu", "tanh"]\ny = x * 2 if "gelu" in modes else x\n') == {"y": 2.0}


def test_a_name_bound_to_a_string_labels_a_printed_number():
    program = 'x = 1.25\nname = "x"\nprint(f"{name} = {x:.2f}")\n'
    assert outputs(program) == {"x": 1.25}
    done = cli(program)
    assert (done.returncode, done.stdout, done.stderr) == (0, "x\t1.25\n", "")


def test_a_name_bound_to_a_string_is_no_input():
    program = 'x = 1.5\nmode = "relu"\ny = x if mode == "relu" else -x\n'
    done = cli(program, "--set", "mode=1.0")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[0] == (
        "<stdin>:2:1: error: --set mode: 'mode' is bound to the string 'relu' here, so it is not an input "
        "(a string is never one): edit the program to change it")


@pytest.mark.parametrize("program,message,line,column", [
    ('x = 2.0\nmode = "a"\nmode\n',
     "the program ends with the string 'a', which gradcli does not show: its outputs are numbers; print the text "
     'with them (print(f"{name} = {x}")) or end with a number', 3, 1),
    ('x = 2.0\nf"{x}"\n',
     "the program ends with an f-string, which gradcli does not show: its outputs are numbers; print the text "
     'with them (print(f"{name} = {x}")) or end with a number', 2, 1),
])
def test_a_program_ending_with_a_string_is_refused(program, message, line, column):
    assert_refused(program, message, line, column)
    done = cli(program)
    assert (done.returncode, done.stdout) == (2, "")


def test_a_program_of_strings_only_computes_nothing():
    with pytest.raises(GradcliError) as info:
        api.evaluate('mode = "relu"\nprint(mode)\n', fixes=False)
    assert str(info.value) == "the program computes nothing: it binds no number (only strings or functions)"


def test_strings_standing_alone_before_the_end_are_ignored_as_python_ignores_them():
    assert outputs('x = 2.0\nlabel = f"{x}"\nlabel\ny = x * 3\n') == {"y": 6.0}


# --------------------------------------------------------------------------- a < b < c
@pytest.mark.parametrize("text,expected", [
    ("1 < 2 < 3", 1 < 2 < 3), ("3 < 2 < 5", 3 < 2 < 5), ("1 <= 1 < 2 == 2", 1 <= 1 < 2 == 2),
    ("0 < 1 > 2", 0 < 1 > 2), ("2 > 1 != 1", 2 > 1 != 1),
])
def test_a_chain_of_numbers_known_before_evaluation_is_pythons_truth(text, expected):
    assert outputs(f"y = {text}\n") == {"y": float(expected)}


def test_a_chain_over_a_loop_counter_chooses_an_if():
    program = "n = 4\ny = 0.0\nfor i in range(6):\n    if 0 <= i < n:\n        y = y + i\n"
    assert outputs(program) == {"y": float(sum(i for i in range(6) if 0 <= i < 4))}


@pytest.mark.parametrize("x", [-0.5, 1.0, 1.5, 2.5])
def test_a_chain_of_computed_scalars_is_the_and_of_its_comparisons(x):
    program = "y = (0 < x <= 2) * x ** 2\n"
    assert float(value(program, x=x)) == float((0 < x <= 2) * x ** 2)
    fd = finite_difference(lambda v: float((0 < v <= 2)) * v ** 2, x)  # (no step crosses 0 or 2 here)
    assert float(gradient(program, "x", x=x)) == pytest.approx(fd, abs=1e-6)


def test_the_middle_operand_is_computed_once():
    program = "import numpy as np\nx = 1.5\ny = (0 < np.exp(x) < 10) * x\n"
    assert api.evaluate(program, fixes=False).outputs == {"y": 1.5}
    graph = api.compile_program(program)
    assert [eq.op.name for eq in graph.equations].count("exp") == 1


def test_a_chain_ending_in_an_array_gives_the_last_comparison():
    # Python: `0 < 1 < x` is `(0 < 1) and (1 < x)`, the array of the last comparison
    assert value("x = np.array([1.0, 2.0])\ny = 0 < 1 < x\n").tolist() == [0.0, 1.0]


@pytest.mark.parametrize("program,message,line,column", [
    ("x = np.array([1.0, 2.0])\ny = x < 2 < 3\n",
     "'x < 2' in a chained comparison is an array of 2 elements, whose truth value is ambiguous (Python reads "
     "a < b < c as (a < b) and (b < c), and NumPy raises ValueError): for an elementwise mask write "
     "(a < b) & (b < c)", 2, 5),
    ("x = np.array([1.0, 2.0])\ny = 0 < x < 3\n",
     "'0 < x' in a chained comparison is an array of 2 elements, whose truth value is ambiguous (Python reads "
     "a < b < c as (a < b) and (b < c), and NumPy raises ValueError): for an elementwise mask write "
     "(a < b) & (b < c)", 2, 5),
    ("x = 1.5\nv = np.array([1.0, 2.0])\ny = 0 < x < v\n",
     "'x < v' ends a chained comparison with an array of 2 elements after comparisons computed from data: "
     "Python gives False or this array by their truth; for an elementwise mask write (a < b) & (b < c)", 3, 9),
    ("mode = 'a'\ny = 1 < mode < 3\n",
     "'<' of a string and a value that is not one: compare strings with strings", 2, 5),
])
def test_chain_refusals(program, message, line, column):
    assert_refused(program, message, line, column)


def test_an_ambiguous_chain_is_exit_2_on_the_command_line():
    done = cli("import torch\nx = torch.tensor([1.0, 2.0])\ny = (x < 2 < 3).sum()\n")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("<stdin>:3:6: error: 'x < 2' in a chained comparison is an array of 2 elements")


def test_is_and_in_do_not_chain_with_comparisons():
    with pytest.raises(GradcliError) as info:
        api.evaluate("y = 1.0\nz = y is None < 3\n")
    assert str(info.value) == ("'is' and 'in' do not chain with comparisons here: write each in brackets, as in "
                               "(a is b) and (b < c)")


def test_the_parser_builds_what_larks_parser_builds_for_the_new_forms():
    reference = _lark_reference()
    for text in ["y = a < b < c\n", "y = 0 <= i < n == m != k > 2 >= 1\n", "y = (a < b) < c\n",
                 "if 0 < x < 1:\n    pass\n", "y = a < b | c < d\n", "for a, *rest in xs:\n    pass\n",
                 "for *a, b in xs: pass\n", "e = {**d, 'k': v, **f}\n", "print(*xs, **d)\n"]:
        assert _agree(*_both_parse(reference, text)) == "parsed alike", text


# --------------------------------------------------------------------------- @property, @staticmethod, @classmethod
LAYER = """class Layer:
    def __init__(self, w):
        self.w = w
    @property
    def scale(self):
        return self.w * 2
    @property
    def squared_scale(self):
        return self.scale * self.scale
    @staticmethod
    def act(v):
        return v * v
    @classmethod
    def make(cls, w):
        return cls(w)
    def __call__(self, x):
        return self.act(x * self.scale)
"""


class _Layer:  # the same class in Python: the reference
    def __init__(self, w):
        self.w = w

    @property
    def scale(self):
        return self.w * 2

    @property
    def squared_scale(self):
        return self.scale * self.scale

    @staticmethod
    def act(v):
        return v * v

    @classmethod
    def make(cls, w):
        return cls(w)

    def __call__(self, x):
        return self.act(x * self.scale)


def test_properties_static_and_class_methods_as_python_calls_them():
    program = LAYER + "w = 1.5\nm = Layer.make(w)\ny = m(2.0) + Layer.act(1.0) + m.squared_scale\n"
    m = _Layer.make(1.5)
    assert outputs(program) == {"y": m(2.0) + _Layer.act(1.0) + m.squared_scale}
    fd = finite_difference(lambda w: _Layer.make(w)(2.0) + _Layer(w).squared_scale, 1.5)
    assert float(gradient(program, "w")) == pytest.approx(fd, rel=1e-8)


def test_a_static_method_read_as_a_value_and_a_property_in_a_gradient():
    program = LAYER + ("import jax\nimport jax.numpy as jnp\nf = Layer(1.0).act\n"
                       "def loss(w):\n    return Layer(jnp.tanh(w)).scale ** 2\ng = jax.grad(loss)(0.5) + f(3.0)\n")
    assert float(value(program)) == pytest.approx(
        finite_difference(lambda w: (2 * np.tanh(w)) ** 2, 0.5) + 9.0, rel=1e-8)


@pytest.mark.parametrize("program,message,line,column", [
    ("class A:\n    def __init__(self):\n        self.v = 2.0\n    @property\n    def scale(self):\n"
     "        return self.v\n    @scale.setter\n    def scale(self, value):\n        self.v = value\n"
     "y = A().scale\n",
     "@scale.setter is not supported: a property is read, never set (set the attribute it reads instead)", 7, 6),
    ("class A:\n    @property\n    def scale(self):\n        return 2.0\ny = A().scale()\n",
     "'scale' is a property: read it without calling it (obj.scale)", 5, 8),
    ("class A:\n    @property\n    def loop(self):\n        return self.loop + 1\ny = A().loop\n",
     "recursion is not supported: 'loop' calls itself (loop -> loop); functions are expanded where they are "
     "called", 4, 16),
    ("class A:\n    @memoize\n    def f(self):\n        return 2.0\ny = A().f()\n",
     "the decorator @memoize is not supported (gradcli accepts those that do not change values: @jax.jit, "
     "@tf.function, @partial(jax.jit, ...), and on a method @property, @staticmethod, @classmethod)", 2, 6),
])
def test_method_decorator_refusals(program, message, line, column):
    assert_refused(program, message, line, column)


# --------------------------------------------------------------------------- logical_xor, *rest, {**d}, print(*xs)
XS = np.array([-1.0, 0.5, 2.0])


@pytest.mark.parametrize("program", [
    f"x = np.array({XS.tolist()})\nm = np.logical_xor(x > 0, x < 1)\ny = np.where(m, x, 0.0)\n",
    f"import torch\nx = torch.tensor({XS.tolist()})\ny = torch.logical_xor(x > 0, x < 1) * x\n",
    f"import tensorflow as tf\nx = tf.constant({XS.tolist()})\n"
    "y = tf.cast(tf.math.logical_xor(x > 0, x < 1), tf.float32) * x\n",
])
def test_logical_xor_of_masks_in_each_library(program):
    want = np.where(np.logical_xor(XS > 0, XS < 1), XS, 0.0)  # [-1.0, 0.0, 2.0]
    assert value(program).tolist() == want.tolist()
    assert gradient(program, "x").tolist() == np.logical_xor(XS > 0, XS < 1).astype(float).tolist()


def test_logical_xor_of_numbers_reads_nonzero_as_true_as_numpy_does():
    x = np.array([-1.0, 0.0, 2.0])
    assert value(f"x = np.array({x.tolist()})\ny = np.logical_xor(x, 0.5)\n").tolist() == \
        np.logical_xor(x, 0.5).astype(float).tolist()
    assert value(f"x = np.array({x.tolist()})\ny = np.logical_xor(x, x > 0)\n").tolist() == \
        np.logical_xor(x, x > 0).astype(float).tolist()
    assert value("y = np.logical_xor([1.0, 0.0], [0.0, 0.0])\n").tolist() == [1.0, 0.0]


def test_a_loop_target_with_a_starred_name():
    rows = [(1.0, 2.0, 3.0), (4.0, 5.0, 6.0)]
    program = f"xs = {rows}\ny = 0.0\nfor a, *rest in xs:\n    y = y + a * sum(rest)\n"
    assert outputs(program) == {"y": sum(a * sum(rest) for a, *rest in rows)}
    local = "def f(xs):\n    t = 0.0\n    for *init, last in xs:\n        t = t + last * init[0]\n    return t\n" \
            "y = f([(1.0, 2.0), (3.0, 4.0)])\n"
    assert outputs(local) == {"y": sum(last * init[0] for *init, last in [(1.0, 2.0), (3.0, 4.0)])}


def test_a_dict_display_spreads_dicts_and_later_keys_win():
    d = {"a": 1.0, "b": 2.0}
    e = {**d, "b": 5.0, "c": 3.0}
    program = 'd = {"a": 1.0, "b": 2.0}\ne = {**d, "b": 5.0, "c": 3.0}\ny = e["a"] + e["b"] * e["c"]\n'
    assert outputs(program) == {"y": e["a"] + e["b"] * e["c"]}
    spread_last = 'x = 1.5\nd = {"a": x}\ne = {"z": 2.0, **d}\ny = e["a"] * e["z"]\n'
    assert outputs(spread_last) == {"y": 3.0}
    assert float(gradient(spread_last, "x")) == 2.0
    assert outputs('d = {"a": 1.0, "b": 2.0}\ne = {**d, "a": 4.0}\nfor k in e:\n    print(k, e[k])\n') == \
        {"e[k] #1": 4.0, "e[k]": 2.0}  # (the order of Python's dict: "a" keeps its first place)


def test_print_of_spread_items_prints_each_item():
    program = "x = 2.0\nxs = [x, x * 3]\nprint(*xs)\nprint('total', *[x, x + 1], x * 10)\n"
    assert outputs(program) == {"xs[0]": 2.0, "xs[1]": 6.0, "[x, x + 1][0]": 2.0, "[x, x + 1][1]": 3.0,
                                "x * 10": 20.0}
    done = cli("import numpy as np\nx = np.array([[1.0, 2.0], [3.0, 4.0]])\nprint(*x)\n")
    assert (done.returncode, done.stdout, done.stderr) == (0, "x[0]\t1.0 2.0\nx[1]\t3.0 4.0\n", "")


@pytest.mark.parametrize("program,message,line,column", [
    ('d = {"a": 1.0}\ny = {**d for k in d}\n',
     "dict unpacking (**d) cannot be used in a dict comprehension (Python's SyntaxError)", 2, 8),
    ("x = 2.0\ne = {**x}\ny = e\n",
     "the value after ** in a dict display must be a dict (its keys strings written in the program)", 2, 8),
    ('x = 2.0\nd = {"a": x}\nprint(**d)\n',
     "print(**d) passes d's items as print's keywords (Python's TypeError): print the dict, print(d)", 3, 9),
    ("x = np.array([1.0])\ny = np.logical_xor(x, x, x)\n", "np.logical_xor() takes two arrays (no keywords)", 2, 5),
])
def test_spread_and_xor_refusals(program, message, line, column):
    assert_refused(program, message, line, column)


# --------------------------------------------------------------------------- try, raise, global
def test_a_try_runs_its_body_else_and_finally_and_skips_its_handlers():
    program = ("x = 2.0\ntry:\n    y = x * 3\nexcept ValueError as e:\n    raise RuntimeError('bad') from e\n"
               "else:\n    y = y + 1\nfinally:\n    z = y * 2\n")
    assert outputs(program) == {"z": (2.0 * 3 + 1) * 2}
    assert float(gradient(program, "x")) == 6.0
    assert outputs("x = 1.0\ntry:\n    y = x\nfinally:\n    y = y + 1\n") == {"y": 2.0}
    local = "def f(x):\n    try:\n        return x * 2\n    except Exception:\n        return 0.0\ny = f(2.0)\n"
    assert outputs(local) == {"y": 4.0}
    imports = "try:\n    import torch\nexcept ImportError:\n    torch = None\nx = torch.tensor(2.0)\ny = x * x\n"
    assert outputs(imports) == {"y": 4.0}


def test_the_error_of_a_try_body_is_reported_never_handled():
    done = cli("x = 2.0\ntry:\n    y = undefined_fn(x)\nexcept Exception:\n    y = 0.0\n")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("<stdin>:3:9: error: unknown function 'undefined_fn'")


def test_a_raise_reached_is_the_programs_error_and_one_not_reached_is_nothing():
    assert outputs("n = 3\ndef f(x):\n    if n < 0:\n        raise ValueError('n')\n    return x * n\ny = f(2.0)\n") \
        == {"y": 6.0}
    done = cli("x = -1.0\nif x < 0:\n    raise ValueError(f'negative: {x}')\ny = x\n")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[0] == "<stdin>:3:5: error: the program raises ValueError(f'negative: {x}')"


def test_global_of_a_name_only_read_is_nothing():
    assert outputs("scale = 3.0\ndef f(x):\n    global scale\n    return x * scale\ny = f(2.0)\n") == {"y": 6.0}
    assert outputs("global x\nx = 1.0\ny = x + 1\n") == {"y": 2.0}


@pytest.mark.parametrize("program,message,line,column", [
    ("scale = 3.0\ndef f(x):\n    global scale\n    scale = x\n    return x\ny = f(2.0)\n",
     "'global scale' in a function that assigns scale: gradcli's functions do not write the program's names; "
     "return the new value and assign it where the function is called (scale = f(...))", 4, 5),
    ("x = 2.0\ntry:\n    y = 1.0 / x\nexcept ZeroDivisionError:\n    y = 0.0\n",
     "except ZeroDivisionError: gradcli computes as NumPy does (1 / 0 is inf, reported by its diagnostics), never "
     "raising it, so this handler would never run: choose the value with where(...)", 4, 8),
    ("x = 2.0\nraise\n", "raise with no exception outside an except clause (Python's RuntimeError: no active "
     "exception to reraise)", 2, 1),
    ("def f(x):\n    if x > 0:\n        raise ValueError('positive')\n    return x\ny = f(2.0)\n",
     "the program raises ValueError('positive')", 3, 9),
])
def test_try_raise_and_global_refusals(program, message, line, column):
    assert_refused(program, message, line, column)


def test_the_parser_builds_what_larks_parser_builds_for_try_raise_and_global():
    reference = _lark_reference()
    for text in ["try:\n    y = 1\nexcept ValueError as e:\n    raise RuntimeError('x') from e\nelse:\n    z = 2\n"
                 "finally:\n    w = 3\n", "try:\n    y = 1\nfinally:\n    pass\n",
                 "try:\n    y = 1\nexcept (KeyError, IndexError):\n    pass\nexcept:\n    raise\n",
                 "def f(x):\n    global a, b\n    return x * a\n", "raise ValueError\n"]:
        assert _agree(*_both_parse(reference, text)) == "parsed alike", text
