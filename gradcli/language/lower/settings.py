"""Statements that set a library up and change no number gradcli computes:
`jax.config.update("jax_enable_x64", True)`, `keras.config.set_floatx("float64")`,
`torch.set_default_dtype(torch.float64)`, `np.set_printoptions(...)`,
`tf.config.run_functions_eagerly(True)`, `torch.autograd.set_detect_anomaly(True)`; and the
assertions that two arrays are close (`np.testing.assert_allclose`, `torch.testing.assert_close`,
`tf.debugging.assert_near`), checked as `assert` is.

gradcli computes in float64 (or the type --dtype chooses) whatever a library's default type, as
it does for code without such a line, so a precision setting of float32 or float64 reads as
nothing. A half type would change the numbers (its range and rounding): it is refused, naming
--dtype, which computes in it."""
from __future__ import annotations

from gradcli.language import syntax as ast
from gradcli.language.dialects import FLOAT_DTYPES
from gradcli.language.lower.values import NONE, Text
from gradcli.ops import OPS

_HALF_TYPES = frozenset({"float16", "half", "bfloat16", "float8_e4m3fn", "float8_e5m2"})
# an assertion's keywords that say only what its failure prints
_MESSAGE_KEYWORDS = frozenset({"err_msg", "verbose", "msg", "message", "summarize", "name"})


class LibrarySettings:
    """Part of the lowering (gradcli.language.lower): a library's settings, read as nothing."""

    def library_setting(self, node: ast.Call, values: list, precision_at: int | None = None):
        """The setting `node` (its arguments' `values`): None, the value of such a statement.
        `precision_at`: where its floating type stands among the arguments (set_floatx's 0)."""
        if len(values) == 2 and isinstance(values[0], Text) and values[0].value == "jax_enable_x64":
            self.jax_x64 = bool(self.constant_truth(values[1]))  # JAX's draws' default type (random_draws.py)
        if precision_at is None or len(values) <= precision_at:
            return NONE
        dtype = values[precision_at]
        name = dtype.value if isinstance(dtype, Text) else None
        if name in _HALF_TYPES:
            raise self.error(f"{node.func}({name}): gradcli computes in float64 unless --dtype says otherwise; "
                             f"leave this line out and give --dtype {'float16' if name == 'half' else name}", node.pos)
        if name not in FLOAT_DTYPES:
            raise self.error(f"{node.func}() takes a floating type (float32 or float64)", node.pos)
        if node.func.endswith("set_default_dtype"):  # the type PyTorch's layers draw in (torch_layers.py)
            self.torch_default_float = "float64" if name in ("float64", "double") else "float32"
        if node.func.endswith("set_floatx"):  # Keras' optimizers hold their learning rate in it (optimizers.py)
            self.keras_floatx = "float64" if name in ("float64", "double") else "float32"
        return NONE

    def library_assertion(self, node: ast.Call, values: list, scope, library: str, tolerances: dict):
        """`np.testing.assert_allclose(actual, desired, rtol=, atol=)` and its kin: |actual - desired|
        <= atol + rtol |desired| for every element (`decimal=k`: atol 1.5 10^-k), the shapes equal
        (or one a number)."""
        args = values[:len(node.args)]
        tolerances = dict(tolerances)
        for kw, value in zip(node.keywords, values[len(node.args):]):
            if kw.name in _MESSAGE_KEYWORDS:
                continue
            known = self.known_literal(value) if kw.name in ("rtol", "atol", "equal_nan", "decimal") else None
            if known is None or known.value.ndim != 0:
                raise self.error(f"{node.func}() reads rtol=, atol=, equal_nan= (numbers written in the program), "
                                 f"not '{kw.name}'", kw.pos)
            if kw.name == "decimal":
                tolerances.update(rtol=0.0, atol=1.5 * 10.0 ** -float(known.value))
            else:
                tolerances[kw.name] = bool(known.value) if kw.name == "equal_nan" else float(known.value)
        if len(args) != 2:
            raise self.error(f"{node.func}() takes the two arrays to compare", node.pos)
        a, b = (self.materialize(v, scope, node.pos) for v in args)
        shapes = [self.graph.shapes[a], self.graph.shapes[b]]
        if shapes[0] != shapes[1] and () not in shapes:
            raise self.error(f"{node.func}: the shapes {shapes[0]} and {shapes[1]} differ ({library}: "
                             "AssertionError)", node.pos)
        close = self.emit(OPS["allclose"], (a, b), tolerances, node.pos, node.func, scope)
        self.check_condition(close, node.pos, scope, lambda: (
            f"{node.func}: the arrays are not close (rtol={tolerances['rtol']:g}, atol={tolerances['atol']:g}) "
            f"({library}: AssertionError)"))
        return NONE
