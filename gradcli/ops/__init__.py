"""The op table: every operation defined once, with its forward rule, gradient rule and shape
rule next to each other.

- `forward(xp, *arrays, **params)` computes over an array namespace `xp` (NumPy, CuPy).
- `vjp` holds, per input, a rule `(g, ans, *inputs, **params) -> cotangent` written over
  symbolic values (`Sym`), so a gradient is built as new equations of the same program (as
  `tf.gradients` adds ops to the graph). A rule may return a cotangent of the broadcast output
  shape: `gradcli.autodiff` sums it back to the input's shape in one place. `NO_GRADIENT` for
  an input means the op passes no gradient to it (comparisons, `sign`, `stop_gradient`);
  `vjp=None` means the op has no gradient rule at all, an error if it lies on a path.
- `shape(*shapes, **params)` gives the output shape or raises `ShapeError`.

The record is an op's only home: how it evaluates, prints and parses, how a bound on its result
follows from its inputs', whether it may overflow, its ties and kinks are its fields (declared in
`Op`, one comment each), which the engine reads instead of op names. (The domain, poles, overflow
limits, words and rewrites the numerical checks know of a few ops are a table keyed by op name in
gradcli/numerics/hints.py.) tests/ops/test_op_records.py walks the table for what each needs.

`register()` is the public API to add an operation (tests use it to inject a wrong rule).
"""

from gradcli.ops.table import (  # the public face of the table
    CALLABLE, FAMILIES, NO_GRADIENT, NOT_DIFFERENTIABLE, OPS, REQUIRED, UNBOUNDED, DataError, Op, register)
from gradcli.ops.trace import G, Sym
from gradcli.ops.shapes import broadcast_shapes, fmt_shape
from gradcli.ops import core  # the core's records, registered as the package is imported

__all__ = ["CALLABLE", "FAMILIES", "NO_GRADIENT", "NOT_DIFFERENTIABLE", "OPS", "REQUIRED", "UNBOUNDED", "DataError",
           "Op", "register", "G", "Sym", "broadcast_shapes", "fmt_shape", "core"]
