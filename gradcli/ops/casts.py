"""Casts written in the program (`x.half()`, `x.astype(np.float16)`, `tf.cast(x, tf.bfloat16)`)
and the types they give the values computed after them.

A graph whose program casts holds, beside its equations, `dtypes`: equation id -> the floating
type its library computes it in, for the equations whose type is not the run's (`--dtype`). A
cast's result has the cast's type; any other op's result has its inputs' types combined as the
libraries promote them (`declared_type`):
- two types: the wider (float16 with float32 is float32); float16 with bfloat16 is float32
  (NumPy with ml_dtypes, PyTorch and JAX agree);
- a number written in the program (`2.0`, a 0-d constant) and a comparison's 0/1 do not take
  part (NumPy 2's and JAX's weak Python scalars, PyTorch's too): float16 * 2.0 is float16;
- PyTorch only: a 0-d value does not take part beside values of one or more dimensions
  (float16 array * float64 0-d tensor is float16 in PyTorch, float64 in NumPy and JAX);
- the inputs that carry no gradient (a `where`'s condition, an index) do not take part, unless
  no other input does (`floor`, `stop_gradient` of a float16 value are float16).
An equation without an entry has the run's type, which stands above every other: a value of
the run's type beside a float16 one makes the result the run's type, as a float64 array beside
a float16 one does in NumPy. A type wider than the run's is the run's (`capped`): `--dtype`
is the most precision any value gets, so `--dtype float16` computes a program's `.float()`
sections in float16 too, and the default float64 computes every type the program names.
"""
from __future__ import annotations

from functools import reduce

from gradcli.ops.table import NO_GRADIENT

# how wide each type is; two types of one width but different names are not ordered
WIDTH = {"float64": 3, "float32": 2, "float16": 1, "bfloat16": 1, "float8_e4m3fn": 0, "float8_e5m2": 0}
# the type two different types of one width promote to (NumPy with ml_dtypes, PyTorch, JAX)
_ABOVE = {1: "float32", 0: "float16"}
# a program's spelling of a floating type -> its name here (`torch.float` and `x.float()` are
# float32 in PyTorch: the lowering reads those two as "float32" before they come here)
CANONICAL = {"float16": "float16", "half": "float16", "bfloat16": "bfloat16", "float32": "float32",
             "single": "float32", "float64": "float64", "double": "float64", "float": "float64",
             "float_": "float64", "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2"}
DEFAULT = "float64"  # (an equation without an entry: the run's type, above all the others)


def join(a: str, b: str) -> str:
    """The type of an operation on values of types a and b."""
    if a == b:
        return a
    wa, wb = WIDTH[a], WIDTH[b]
    if wa != wb:
        return a if wa > wb else b
    return _ABOVE[wa]


def capped(name: str, run: str) -> str | None:
    """The type a value declared `name` is computed in, in a run of type `run`: `name` where it
    is narrower, the run's where it is not; None where neither holds the other (float16 in a
    bfloat16 run)."""
    if name == run or WIDTH[name] > WIDTH[run]:
        return run
    if WIDTH[name] < WIDTH[run]:
        return name
    return None


def _weak(graph, j: int) -> bool:
    eq = graph.equations[j]
    return eq.op.boolean or (eq.op.name == "const" and graph.shapes[j] == ())


def declared_type(graph, op, inputs: tuple, params: dict) -> str | None:
    """The type of a new equation of `op` on `inputs` in `graph` (whose `dtypes` holds the
    inputs'), or None where it is the run's."""
    if op.name == "cast":
        name = params["dtype"]
        return None if name == DEFAULT else name
    dtypes, shapes = graph.dtypes, graph.shapes
    carrying = [j for k, j in enumerate(inputs) if op.rule(k) is not NO_GRADIENT] if op.vjp is not None else []
    taking_part = [j for j in carrying or inputs if not _weak(graph, j)]
    if not graph.zero_dims_promote:  # (PyTorch's rule: the lowering says whose rules the program's are)
        dimensioned = [j for j in taking_part if shapes[j]]
        taking_part = dimensioned or taking_part
    if not taking_part:
        return None
    found = reduce(join, [dtypes.get(j, DEFAULT) for j in taking_part])
    return None if found == DEFAULT else found


def forward(xp, x, dtype):
    """The cast's value: the engine rounds it to the cast's type (gradcli/engine/mixed.py); where
    that type is the run's or wider, the value as it is."""
    return x


def cotangent(g, ans, x, dtype):
    """The cotangent passes as it is: gradcli.autodiff casts every cotangent to its value's type
    (back to the input's type here), as PyTorch's and JAX's casts do."""
    return g
