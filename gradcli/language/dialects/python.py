"""Python's built-ins where they differ from NumPy's functions of the same names: `max(a, b)`
compares two values, `sum([a, b])` adds a list's items, `range(n)` is a sequence of integers
(a bare name is Python's; `math.` is Python's prefix)."""
from __future__ import annotations

from gradcli.language.dialects.spelling import ReadingError, Spelling


def _python_pairwise(elementwise: str):
    """Python's built-in `max(a, b)` / `min(a, b)` compares its arguments (elementwise here);
    NumPy's and TensorFlow's `max(x, 0)` reduce over axis 0; PyTorch's `torch.max(x, 1)` and
    `x.max(dim=1)` give the tuple (values, indices)."""
    def reading(call: Spelling):
        if {"initial", "where"} & set(call.keywords):  # np.max(x, initial=0.5), np.max(x, where=m, initial=0)
            return f"masked_{elementwise[:3]}", {}
        if call.name in ("amax", "amin", "reduce_max", "reduce_min"):
            return None  # torch.amax(x, dim) gives the values alone
        if call.library == "jax":  # lax.max(x, y) compares (lax's reductions are reduce_max, reduce_min)
            return elementwise, {}
        if call.library == "torch" and call.positional == 2 and not call.keywords:
            if call.kinds[1] == "array":
                return elementwise, {}  # torch.max(input, other) of two tensors compares them
            if call.kinds[1] == "number input":
                raise ReadingError(
                    f"torch.{call.name}(x, y) with y an input number: PyTorch compares two tensors elementwise, "
                    f"but reads an int as the dim; write torch.{elementwise}(x, y), or torch.{call.name}(x, dim=...)")
        if (call.library == "torch" and call.positional >= 2) or "dim" in call.keywords:
            return f"{elementwise[:3]}_values_indices", {}
        if call.library == "python" and call.name in ("max", "min") and call.positional >= 2:
            if call.positional > 2 or call.keywords:
                raise ReadingError(
                    f"{call.name}() with {call.positional} arguments: Python's built-in {call.name}(a, b) "
                    f"compares two values (gradcli: {elementwise}(a, b)), NumPy's np.{call.name}(x, axis) "
                    f"reduces; write {elementwise}(a, b) or {call.name}(x, axis=...)")
            return elementwise, {}
        return None
    return reading


def _python_sum_of_list(call: Spelling):
    """Python's built-in `sum([a, b])` adds the list's items (a + b, elementwise); NumPy's
    `np.sum([a, b])` adds every element of the stacked array. Python's `sum(x, 1)` reads 1 as
    the start value, NumPy's `np.sum(x, 1)` as the axis: a bare `sum` with two arguments is
    refused, naming both. NumPy's `np.sum(x, initial=, where=)` is masked_sum."""
    if {"initial", "where"} & set(call.keywords):
        return "masked_sum", {}
    if call.library != "python" or call.name != "sum":
        return None
    if call.positional >= 2:
        raise ReadingError(
            "sum() with 2 arguments: Python's built-in sum(x, start) adds start to the sum, "
            "NumPy's np.sum(x, axis) sums along that axis; write sum(x, axis=...) or sum(x) + start")
    if call.list_argument and call.positional == 1 and not call.keywords:
        return "sum", {"axis": 0}
    return None


def _range_reading(call):
    if call.name == "range" and call.library == "python":
        raise ReadingError("range(...) is Python's sequence of integers, read by a for loop: write "
                           "np.arange(...) or tf.range(...) for the array")
    return None


def _zip(lowering, node, values, scope):
    """zip(a, b, ...) as a value: the tuples of the items at each place (lower/function_values.py)."""
    return lowering.zipped(node, values, scope)


def _sequence(lowering, node, values, scope):
    """list(x) / tuple(x) as a value: the items of a tuple or list, or an array's rows
    (`list(model.parameters())`, lower/function_values.py)."""
    return lowering.sequence_of(node, values, scope)


def _partial(lowering, node, values, scope):
    """functools.partial(f, *args, **keywords): f with those arguments given first (function_values.py)."""
    return lowering.partial_of(node, values)


def _bitwise(name: str):
    """`a & b`, `a | b`, `a ^ b`, `~a`, `a << n`, `a >> n` (and NumPy's and PyTorch's functions of
    those names): logical of truth values, Python's result of integers (lower/python_operators.py)."""
    def lowered(lowering, node, values, scope):
        return lowering.bitwise_operator(name, node, values, scope)
    return lowered


def _membership(lowering, node, values, scope):
    """`x in c`, `x not in c` (lower/python_operators.py)."""
    return lowering.membership_test(node, values, scope)


def _membership_in_range(lowering, node, values, scope):
    """`x in range(...)`: range's arguments after x (lower/python_operators.py)."""
    return lowering.membership_in_range(node, values, scope)


def _text_comparison(lowering, node, values, scope):
    """`a == "text"`, `a != "text"` (lower/python_operators.py)."""
    return lowering.text_comparison(node, values, scope)


def _logical_xor(lowering, node, values, scope):
    """np.logical_xor, torch.logical_xor, tf.math.logical_xor: `^` of truths (lower/python_operators.py)."""
    return lowering.logical_xor(node, values, scope)


def _chained_comparison(lowering, node, values, scope):
    """`a < b < c` (lower/python_operators.py)."""
    return lowering.chained_comparison(node, values, scope)


def _spreading(method: str, calls_functions: bool = False):
    """`f(*xs, **d)`, `[*a, b]`, `a, *rest = t`, `*x` elsewhere (lower/python_operators.py)."""
    if calls_functions:
        def lowered(lowering, node, values, scope, work):
            return getattr(lowering, method)(node, values, scope, work)
        lowered.calls_functions = True
        return lowered

    def lowered_here(lowering, node, values, scope):
        return getattr(lowering, method)(node, values, scope)
    return lowered_here


NAMES = {
    "pow": "power",
    "partial": _partial, "zip": _zip, "list": _sequence, "tuple": _sequence,
    **{name: _bitwise(name) for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
                                          "invert")},
    "bitwise_not": _bitwise("invert"), "bitwise_left_shift": _bitwise("left_shift"),
    "bitwise_right_shift": _bitwise("right_shift"),
    # (the names of syntax.py's calls: no program can spell them)
    "<in>": _membership, "<in range>": _membership_in_range, "<compare text>": _text_comparison,
    "<chained comparison>": _chained_comparison, "logical_xor": _logical_xor,
    "<dict display>": _spreading("dict_display"),
    "<spread call>": _spreading("spread_call", calls_functions=True), "<spread display>": _spreading("spread_display"),
    "<star target>": _spreading("star_target"), "<starred>": _spreading("starred_alone"),
}

READINGS = {
    "sum": _python_sum_of_list,
    "max": _python_pairwise("maximum"),
    "min": _python_pairwise("minimum"),
    "arange": _range_reading,
    # (no other reading: Python's all(x) and any(x) iterate over x's rows, which the lowering checks)
    "all": lambda call: None, "any": lambda call: None,
}

ABSENT: dict = {}
