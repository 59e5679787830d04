"""Statements that set a library up and change no number gradcli computes:
`jax.config.update("jax_enable_x64", True)`, `keras.config.set_floatx("float64")`,
`torch.set_default_dtype(torch.float64)`, `np.set_printoptions(...)`,
`tf.config.run_functions_eagerly(True)`.

gradcli computes in float64 (or the type --dtype chooses) whatever a library's default type, as
it does for code without such a line, so a precision setting of float32 or float64 reads as
nothing. A half type would change the numbers (its range and rounding): it is refused, naming
--dtype, which computes in it."""
from __future__ import annotations

from gradcli.language import syntax as ast
from gradcli.language.dialects import FLOAT_DTYPES
from gradcli.language.lower.values import NONE, Text

_HALF_TYPES = frozenset({"float16", "half", "bfloat16", "float8_e4m3fn", "float8_e5m2"})


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
        if node.func.endswith("set_floatx"):  # Keras' optimizers hold their learning rate in it (optimizers.py)
            self.keras_floatx = "float64" if name in ("float64", "double") else "float32"
        return NONE
