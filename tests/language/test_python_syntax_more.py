"""More of Python's syntax, as pasted NumPy / PyTorch / JAX / TensorFlow code writes it: the bitwise
operators (`&`, `|`, `^`, `~`, `<<`, `>>` and their augmented forms), membership (`in`, `not in`),
`*args` / `**kwargs`, `break` / `continue` in an unrolled loop, and `if __name__ == "__main__":`.
Each value is checked against Python / NumPy computing the same thing (gradients against analytic
ones), each refusal with its exact sentence and place, and the parser against Lark's own."""
import subprocess
import sys

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError
from test_language import _agree, _both_parse, _lark_reference

X = np.array([-2.0, 0.5, 3.0, -0.25, 1.5])


def outputs(program, **feeds):
    return api.evaluate(program, feeds=feeds, fixes=False).outputs


def value(program, **feeds):
    return np.asarray(list(outputs(program, **feeds).values())[-1])


def gradient(program, wrt, **feeds):
    return np.asarray(api.grad(program, wrt=[wrt], feeds=feeds, fixes=False).gradients[wrt])


def assert_refused(program, message, line, column, **feeds):
    with pytest.raises(GradcliError) as info:
        api.evaluate(program, feeds=feeds, fixes=False)
    assert str(info.value) == message
    assert (info.value.pos.line, info.value.pos.column) == (line, column)


def array(values) -> str:
    return "np.array([" + ", ".join(repr(float(v)) for v in values) + "])"


# --------------------------------------------------------------------------- & | ^ ~ on masks
def test_and_of_two_comparisons_is_a_mask_for_where():
    program = f"x = {array(X)}\nm = (x > 0) & (x < 2.5)\nnp.where(m, x, 0.0)"
    assert value(program).tolist() == np.where((X > 0) & (X < 2.5), X, 0.0).tolist()


def test_or_of_comparisons_selects_and_its_gradient_is_the_mask():
    program = f"x = {array(X)}\nnp.sum(x[(x > 0) | (x < -1)])"
    chosen = (X > 0) | (X < -1)
    assert float(value(program)) == float(np.sum(X[chosen]))
    assert gradient(program, "x").tolist() == chosen.astype(float).tolist()  # d/dx_i sum(x[m]) = m_i


def test_invert_of_a_torch_mask_and_its_gradient():
    program = f"x = torch.tensor({X.tolist()})\nmask = x > 0\nmask = ~mask\n(x * mask).sum()"
    assert float(value(program)) == float(np.sum(X * ~(X > 0)))
    assert gradient(program, "x").tolist() == (~(X > 0)).astype(float).tolist()


def test_xor_of_masks_and_precedence_of_and_over_or_over_comparisons():
    a, b = X > 0, X < 1
    assert value(f"x = {array(X)}\n(x > 0) ^ (x < 1)").tolist() == (a ^ b).astype(float).tolist()
    # `|` binds looser than `^`, which binds looser than `&`: a | b ^ c & d is a | (b ^ (c & d))
    c, d = X > -1, X < 2
    program = f"x = {array(X)}\n(x > 0) | (x < 1) ^ (x > -1) & (x < 2)"
    assert value(program).tolist() == (a | b ^ c & d).astype(float).tolist()


def test_masks_known_before_evaluation_index_and_fold():
    program = "x = np.array([1.0, -1.0, 2.0])\nm = ~(x > 0) | (x > 1.5)\nx[m]"
    assert value(program).tolist() == [-1.0, 2.0]
    assert value("y = True & False | True").tolist() == (True & False | True)
    assert value("y = (1 < 2) ^ (3 < 4)").tolist() == 0.0


def test_a_mask_written_with_true_and_false_combines_with_comparisons():
    program = ("x = torch.tensor([-1.0, 0.5, 2.0, 3.0], requires_grad=True)\nm = torch.tensor([True, False, True, True])\n"
               "valid = m & (x < 2.5)\nloss = (x[valid] ** 2).sum()\nloss.backward()\nprint(x.grad)")
    x, m = np.array([-1.0, 0.5, 2.0, 3.0]), np.array([True, False, True, True])
    assert outputs(program)["x.grad"].tolist() == np.where(m & (x < 2.5), 2 * x, 0.0).tolist()  # d sum(x[v]**2)
    program = ("x = np.array([-1.0, 0.5, 2.0, 3.0])\nm = np.array([True, False, True, True])\n"
               "np.sum(np.where(~m | (x > 2), x, 0.0))")
    assert float(value(program)) == float(np.sum(np.where(~m | (x > 2), x, 0.0)))
    given = np.array([False, False, True, False])
    assert float(value(program, m=given.astype(float))) == float(np.sum(np.where(~given | (x > 2), x, 0.0)))


def test_a_mask_from_outside_is_computed_in_the_graph():
    program = "x = np.array([0.0, 0.0, 0.0])\nnp.sum(np.where((x > 0) & (x < 2), x, 0.0))"
    assert float(value(program, x=X[:3])) == float(np.sum(np.where((X[:3] > 0) & (X[:3] < 2), X[:3], 0.0)))


# --------------------------------------------------------------------------- bitwise integers
def test_integers_give_pythons_bitwise_results():
    program = "n = 6\ny = n & 3\nz = n | 9\nw = n ^ 5\nv = ~n\ns = 1 << 4\nt = n >> 1\nu = -7 >> 1\n(y, z, w, v, s, t, u)"
    n = 6
    assert value(program).tolist() == [n & 3, n | 9, n ^ 5, ~n, 1 << 4, n >> 1, -7 >> 1]


def test_augmented_bitwise_assignments():
    program = "x = 6\nx &= 3\nx |= 8\nx ^= 1\nx <<= 2\nx >>= 1\nx"
    x = 6
    x &= 3
    x |= 8
    x ^= 1
    x <<= 2
    x >>= 1
    assert value(program).tolist() == x == 22


def test_shifts_bind_looser_than_plus_and_tighter_than_and():
    assert value("y = 1 << 2 + 1").tolist() == 1 << 2 + 1 == 8
    assert value("y = 6 & 3 << 1").tolist() == 6 & 3 << 1 == 6
    assert value("y = 1 < 2 << 1").tolist() == (1 < 2 << 1)


def test_a_loop_counter_is_an_integer_for_bitwise_tests():
    program = ("def f(x):\n    s = 0.0\n    for i in range(5):\n        if i & 1:\n            s = s + x * i\n"
               "    return s\nf(2.0)")
    assert value(program).tolist() == sum(2.0 * i for i in range(5) if i & 1)


@pytest.mark.parametrize("program,message,line,column", [
    ("x = np.array([1.0, 2.0])\nx & 1", "'&' of a float value: NumPy and PyTorch refuse bitwise operators on "
     "floats (NumPy's ufunc is not supported for the input types); for a mask compare first, as in (x > 0) & "
     "(x < 1); for a number write an integer", 2, 1),
    ("x = 2.5\ny = x | 1", "'|' of a float value: NumPy and PyTorch refuse bitwise operators on floats (NumPy's "
     "ufunc is not supported for the input types); for a mask compare first, as in (x > 0) | (x < 1); for a "
     "number write an integer", 2, 5),
    ("x = 6.0\nx &= 3", "'&' of a float value: NumPy and PyTorch refuse bitwise operators on floats (NumPy's "
     "ufunc is not supported for the input types); for a mask compare first, as in (x > 0) & (x < 1); for a "
     "number write an integer", 2, 1),
    ("y = ~True", "~ of True or False is Python's integer invert (~True is -2, deprecated since Python 3.12): "
     "write `not`", 1, 5),
    ("y = 2 << -1", "negative shift count (Python's ValueError)", 1, 10),
    ("x = torch.tensor([1.0, 2.0])\ny = ~x", "'~' of a float value: NumPy and PyTorch refuse bitwise operators on "
     "floats (NumPy's ufunc is not supported for the input types); for a mask compare first, as in (x > 0) & "
     "(x < 1); for a number write an integer", 2, 6),
])
def test_bitwise_refusals(program, message, line, column):
    assert_refused(program, message, line, column)


def test_bitwise_of_a_float_is_exit_2_on_the_command_line():
    done = subprocess.run([sys.executable, "-m", "gradcli", "eval"], input="x = np.array([1.0, 2.0])\ny = x & 1\n",
                          capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("<stdin>:2:5: error: '&' of a float value")


# --------------------------------------------------------------------------- in, not in
def test_in_a_dict_chooses_before_evaluation():
    program = ('d = {"a": 1.5, "b": 2.0}\nx = 3.0\ny = x\nif "a" in d:\n    y = y * d["a"] + 1.0\n'
               'if "c" not in d:\n    y = y * 2.0\ny')
    assert value(program).tolist() == (3.0 * 1.5 + 1.0) * 2.0


def test_in_a_pytree_dicts_keys_and_a_list_of_strings():
    program = ('def f(params, x):\n    out = x\n    for k in ("w", "b", "z"):\n        if k in params:\n'
               '            out = out + params[k]\n    return out\nf({"w": 1.0, "b": 2.0}, 3.0)')
    assert value(program).tolist() == 6.0
    program = ('def act(x, mode="relu"):\n    y = x\n    if mode in ["relu", "gelu"]:\n'
               '        y = np.maximum(x, 0.0)\n    return y\n')
    assert value(program + "act(np.array([-1.0, 2.0]))").tolist() == [0.0, 2.0]
    assert value(program + "act(np.array([-1.0, 2.0]), 'tanh')").tolist() == [-1.0, 2.0]


def test_in_numbers_ranges_and_strings():
    program = ("t = 3 in [1, 2, 3]\nu = 4 in range(0, 10, 2)\nv = 5 in range(0, 10, 2)\nw = 'ab' in 'xaby'\n"
               "z = 2.5 in (1, 2.5)\nq = -3 in range(0, -6, -1)\n(t, u, v, w, z, q)")
    assert value(program).tolist() == [3 in [1, 2, 3], 4 in range(0, 10, 2), 5 in range(0, 10, 2),
                                       "ab" in "xaby", 2.5 in (1, 2.5), -3 in range(0, -6, -1)]


def test_in_a_list_of_tensors_tests_identity_first():
    program = ("w = torch.tensor([1.0, 2.0], requires_grad=True)\nb = torch.tensor([0.5], requires_grad=True)\n"
               "params = [w, b]\nloss = (w * 2).sum()\nif w in params:\n    loss = loss * 3\nloss")
    assert float(value(program)) == (1.0 + 2.0) * 2 * 3  # PyTorch: `w in [w, b]` is True (w is w)


def test_in_an_array_is_numpys_any_of_equal():
    arr = np.array([1.0, 2.0, 3.0])
    program = f"arr = {array(arr)}\nb = 2.0 in arr\nc = 5.0 not in arr\n(b, c)"
    assert value(program).tolist() == [2.0 in arr, 5.0 not in arr] == [True, True]
    program = f"arr = {array(arr)}\nif 2.0 in arr:\n    y = arr * 2\nelse:\n    y = arr\ny"
    assert gradient(program, "arr").tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("program,message,line,column", [
    ("y = 2 in [[1, 2], [3, 4]]", "'in' of a number in a list of lists: Python compares it with each row, never "
     "equal; write the rows' elements flat", 1, 10),
    ("x = np.array([1.0, 2.0])\n'a' in x", "'in' of an array tests a number against its elements", 2, 1),
    ("y = 1 in 'abc'", "'in <string>' requires a string on its left (Python's TypeError)", 1, 5),
    ("y = 1 in range(0, 4, 0)", "range() arg 3 must not be zero (Python's ValueError)", 1, 22),
])
def test_membership_refusals(program, message, line, column):
    assert_refused(program, message, line, column)


def test_a_membership_of_a_value_from_outside_in_an_if_is_data():
    program = "x = np.array([1.0, 2.0])\ny = 1.0 in x\nz = x\nif y:\n    z = 2 * x\nz"
    assert_refused(program, "this if depends on the data, which is not known before evaluation: compute both "
                   "sides and choose with where(condition, a, b) (or `a if condition else b`)", 4, 4,
                   x=np.array([5.0, 6.0]))


# --------------------------------------------------------------------------- *args, **kwargs
def test_a_function_of_args_and_kwargs():
    program = ("def f(*args, **kwargs):\n    s = 0.0\n    for a in args:\n        s = s + a\n"
               "    return s * kwargs['scale']\ny = f(1.0, 2.0, 3.0, scale=2.0)")
    assert value(program).tolist() == (1.0 + 2.0 + 3.0) * 2.0
    program = ("def f(a, *rest, b=1.0, **kw):\n    return a + len(rest) * b + sum(rest)\n"
               "y = f(1.0, 2.0, 3.0, b=10.0)\nz = f(1.0)\n(y, z)")
    assert value(program).tolist() == [1.0 + 2 * 10.0 + 5.0, 1.0]
    assert value("g = lambda *a: a[0] * a[1]\ny = g(2.0, 3.0)").tolist() == 6.0


def test_calls_spread_tuples_dicts_and_an_arrays_rows():
    program = ("def f(x, y, scale=1.0):\n    return (x - y) * scale\nxs = (3.0, 1.0)\nparams = {'scale': 2.0}\n"
               "y = f(*xs, **params)")
    assert value(program).tolist() == (3.0 - 1.0) * 2.0
    program = "x = np.array([1.0, 2.0, 3.0])\ndef f(*cols):\n    return cols[0] * cols[1] + cols[2]\ny = f(*x)"
    assert value(program).tolist() == 1.0 * 2.0 + 3.0
    assert gradient(program, "x").tolist() == [2.0, 1.0, 1.0]  # d(x0 x1 + x2) = (x1, x0, 1)
    program = ("class M:\n    def __init__(self, w):\n        self.w = w\n    def forward(self, *xs):\n"
               "        return self.w * sum(xs)\nm = M(2.0)\nxs = (1.0, 2.0)\ny = m.forward(*xs)")
    assert value(program).tolist() == 6.0


def test_jax_grad_of_a_call_with_spread_arguments():
    program = ("import jax\nimport jax.numpy as jnp\ndef loss(w, b, x):\n    return jnp.sum((w * x + b) ** 2)\n"
               "args = (jnp.array([1.0, 2.0]), 0.5, jnp.array([3.0, 4.0]))\ng = jax.grad(loss)(*args)")
    w, b, x = np.array([1.0, 2.0]), 0.5, np.array([3.0, 4.0])
    assert value(program).tolist() == (2 * (w * x + b) * x).tolist() == [21.0, 68.0]


def test_displays_and_assignments_spread():
    program = ("a = [np.array([1.0, 2.0]), np.array([3.0, 4.0])]\nb = np.array([5.0, 6.0])\n"
               "y = np.stack([*a, b])")
    assert value(program).tolist() == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    program = ("t = (1.0, 2.0, 3.0, 4.0)\na, *rest = t\nfirst, *_ = t\n*init, last = t\n"
               "y = (a, sum(rest), first, last, len(init), len((*rest, a)))")
    a, *rest = t = (1.0, 2.0, 3.0, 4.0)
    first, *_ = t
    *init, last = t
    assert value(program).tolist() == [a, sum(rest), first, last, len(init), len((*rest, a))]


@pytest.mark.parametrize("program,message,line,column", [
    ("x = 1.0\ny = max(*x)", "the value after * must be a tuple, a list, a dict or an array (Python's TypeError: "
     "it is not iterable)", 2, 10),
    ("def f(a, b):\n    return a - b\ny = f(**{'a': 1.0, 'c': 2.0})", "f() has no parameter 'c'", 3, 9),
    ("def f(a, *, b):\n    return a - b\ny = f(1.0, 2.0)", "f() takes 1 positional argument, got 2", 3, 5),
    ("a, *b, *c = (1, 2, 3)", "multiple starred names in an assignment (Python's SyntaxError)", 1, 1),
    ("a, *b, c = (1.0,)", "not enough values to unpack (expected at least 2, got 1)", 1, 13),
    ("def f(a, b):\n    return a\nd = {'b': 1.0}\ny = f(1.0, b=2.0, **d)",
     "f() got multiple values for the argument 'b'", 4, 21),
    ("def f(*a, *b):\n    return a", "* may appear only once in a function's parameters", 1, 12),
    ("def f(a, *):\n    return a", "named arguments must follow bare * (Python's SyntaxError)", 1, 10),
    ("def f(**kw, a):\n    return a", "no parameter may follow **kw", 1, 13),
    ("xs = (1.0, 2.0)\ny = print(*xs)", "print(...) inside an expression: a print is a statement, on its own line",
     2, 5),
    ("def f(x):\n    return x\nd = (1.0,)\ny = f(**d)", "the argument after ** must be a dict (its keys strings "
     "written in the program)", 4, 9),
])
def test_spread_refusals(program, message, line, column):
    assert_refused(program, message, line, column)


# --------------------------------------------------------------------------- break, continue
def python_loop(x):
    """The loop the programs below write, run by Python."""
    s = 0.0
    for i in range(10):
        if i == 3:
            continue
        if i >= 6:
            break
        s = s + x * i
    return s


LOOP_BODY = ("    for i in range(10):\n        if i == 3:\n            continue\n        if i >= 6:\n"
             "            break\n        s = s + x * i\n")


def test_break_and_continue_in_a_for_loop_at_the_top_level_and_in_a_function():
    top = "x = 2.0\ns = 0.0\n" + LOOP_BODY.replace("\n    ", "\n")[4:] + "y = s"
    assert value(top).tolist() == python_loop(2.0) == 24.0
    assert gradient(top, "x").tolist() == python_loop(1.0) == 12.0  # s is linear in x
    function = "def f(x):\n    s = 0.0\n" + LOOP_BODY.replace("\n    ", "\n        ").replace("    for", "        for", 1)[4:]
    function += "    return s\ny = f(2.0)"
    assert value(function).tolist() == 24.0


def python_while(x):
    i, y = 0, x
    while True:
        i += 1
        if i % 2 == 0:
            continue
        y = y * x
        if i > 4:
            break
    return y


WHILE_BODY = ("i = 0\ny = x\nwhile True:\n    i += 1\n    if i % 2 == 0:\n        continue\n    y = y * x\n"
              "    if i > 4:\n        break\n")


def test_break_and_continue_in_a_while_loop():
    assert value("x = 2.0\n" + WHILE_BODY + "z = y").tolist() == python_while(2.0) == 16.0
    assert gradient("x = 2.0\n" + WHILE_BODY + "z = y", "x").tolist() == 4 * 2.0 ** 3  # y = x**4
    function = "def f(x):\n" + "".join("    " + line + "\n" for line in WHILE_BODY.splitlines()) + "    return y\n"
    assert value(function + "z = f(2.0)").tolist() == 16.0


def test_a_break_leaves_the_innermost_loop():
    program = ("x = 1.0\ns = 0.0\nfor i in range(4):\n    for j in range(4):\n        if j > i:\n            break\n"
               "        s = s + x * (10 * i + j)\n    if i == 2:\n        break\ny = s")
    expected = 0.0
    for i in range(4):
        for j in range(4):
            if j > i:
                break
            expected += 10 * i + j
        if i == 2:
            break
    assert value(program).tolist() == expected == 84.0
    assert gradient(program, "x").tolist() == 84.0


def test_a_break_out_of_a_with_block_leaves_it():
    program = ("x = torch.tensor([1.0, 2.0], requires_grad=True)\nw = torch.tensor([1.0, 1.0])\n"
               "for i in range(5):\n    with torch.no_grad():\n        if i == 2:\n            break\n"
               "        w = w * 2\ny = (x * w).sum()\ny.backward()\nprint(x.grad)")
    # PyTorch 2.13: x.grad is w, tensor([4., 4.]); under a no_grad left open, backward would raise
    assert outputs(program)["x.grad"].tolist() == [4.0, 4.0]


def test_continue_over_a_list_and_break_over_a_list_of_values():
    program = "def f(x):\n    out = []\n    for i in range(5):\n        if i % 2:\n            continue\n" \
              "        out.append(x * i)\n    return sum(out)\ny = f(1.5)"
    assert value(program).tolist() == sum(1.5 * i for i in range(5) if not i % 2)


@pytest.mark.parametrize("program,message,line,column", [
    ("x = np.array([1.0, 2.0])\nfor i in range(3):\n    if x[0] > 0:\n        break\n    x = x * 2\ny = x",
     "this if around a break depends on the data, which is not known before evaluation: gradcli unrolls a loop, "
     "and takes a break only where the if around it is known then (constants, counters, values written in the "
     "program); loop a fixed number of times and choose each step's value with where(condition, a, b)", 3, 13),
    ("x = np.array([1.0, 2.0])\nfor i in range(3):\n    if x[0] > 0:\n        continue\n    x = x * 2\ny = x",
     "this if around a continue depends on the data, which is not known before evaluation: gradcli unrolls a "
     "loop, and takes a continue only where the if around it is known then (constants, counters, values written "
     "in the program); loop a fixed number of times and choose each step's value with where(condition, a, b)",
     3, 13),
    ("x = 1.0\nbreak", "'break' outside a loop (in a function, the loop must be in that function too)", 2, 1),
    ("def f(x):\n    continue\n    return x\ny = f(1.0)", "'continue' outside a loop (in a function, the loop "
     "must be in that function too)", 2, 5),
])
def test_loop_exit_refusals(program, message, line, column):
    assert_refused(program, message, line, column, x=np.array([1.0, 2.0]))


# --------------------------------------------------------------------------- __name__, strings compared
def test_a_script_ends_with_its_main_guard():
    program = ("def f(x):\n    return x * 2\ndef main():\n    print(f(2.0))\n"
               "if __name__ == '__main__':\n    main()\n")
    assert {k: float(v) for k, v in outputs(program).items()} == {"f(2.0)": 4.0}
    program = "x = 2.0\nif __name__ != \"__main__\":\n    x = 3.0\ny = x * 1"
    assert value(program).tolist() == 2.0


def test_strings_compare_as_pythons():
    program = ('def act(x, mode="relu"):\n    y = x\n    if mode == "relu":\n        y = np.maximum(x, 0.0)\n'
               '    elif mode != "tanh":\n        y = 3 * x\n    return y\nv = np.array([-1.0, 2.0])\n'
               'a = act(v)\nb = act(v, "tanh")\nc = act(v, "id")\n(a, b, c)')
    v = np.array([-1.0, 2.0])
    assert value(program).tolist() == [np.maximum(v, 0.0).tolist(), v.tolist(), (3 * v).tolist()]
    assert_refused("x = 1.0\ny = x == 'a'", "'==' of a string and a value that is not one: compare strings with "
                   "strings", 2, 5)


# --------------------------------------------------------------------------- the parser
def test_the_parser_builds_what_larks_parser_builds_for_the_new_forms():
    reference = _lark_reference()
    for text in ["m = (x > 0) & (x < 2) | ~y ^ z\n", "a = 1 << 2 >> 1 + 3\nb <<= 2\nc &= d\n",
                 "y = k in d\nz = k not in range(3)\nfor a, b in zip(c, d): pass\n",
                 "y = [i for i in xs if i not in ys]\n", "y = 1 < 2 << 1\n",
                 "if __name__ == '__main__':\n    main()\n", "y = a != 'b'\n",
                 "for i in x:\n    if i:\n        break\n    else:\n        continue\n",
                 "def f(a, *args, b=1, **kw): return g(*args, a, *[b], **kw, c=2)\n", "a, *b = c\n",
                 "g = lambda *a, **k: a\n", "y = (*a, b)\nz = [*a]\n", "@jax.jit\ndef f(x): return x\n",
                 "def f(*, a): return a\n"]:
        _agree(*_both_parse(reference, text))
