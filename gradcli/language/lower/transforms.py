"""Gradients taken inside a program: more equations of the same graph.

The small API the lowering's library spellings call (gradient_calls.py: TensorFlow's tapes and
`tf.gradients`, JAX's grad family; PyTorch's and autograd's spellings are meant to call the same):

- `fresh(lowering, x, pos, scope)`: an identity of value `x`, the variable a function transform
  differentiates with respect to (what was computed from `x` before is a constant to it, as in
  JAX's tracing).
- `differentiate(lowering, ys, xs, pos, by, grad_ys=None, recorded=None)`: the ids of
  d(sum of ys)/d(each x) (None where unconnected), appended to the graph now, so later
  statements use them and they can be differentiated again. `recorded(i)` (optional) says
  whether equation i carries gradients (a tape's window, `stop_gradients`). Every equation it
  appends is stamped in `graph.made_by` (equation id -> (the call as written, "tf.gradients",
  and its Pos)).
- `jacobian(lowering, y, x, pos, by, scope, recorded=None)`: dy/dx shaped y.shape + x.shape
  (one reverse pass per element of y); `pushforward(lowering, ys, xs, tangents, pos, by, scope)`:
  J t by gradcli.forward.
- `stack`, `reshape`: the two ops the above assemble results with.
- Values the lowering holds: `FunctionRef` (a def, closure, lambda or library function used as a
  value), `Transform` (grad(f) and its kin), `Linear` (vjp's pullback, linearize's pushforward),
  `Mapped` (vmap), `Partial` (functools.partial, a PyTorch module, a Keras loss object),
  `Tape` / `TapeRecording` (a tf.GradientTape and its stop_recording()),
  `DictValue`, `Formatted` (an f-string's fields), `ClassValue` / `ObjectValue` / `BoundMethod`
  (a program's small classes). `FUNCTION_VALUES` are those a call may apply
  (`Interpreter.apply_function`).

A transform that calls a user function pushes a `_FINISH` work item under the function's body
on the lowering's work stack; when the body's value is ready, `GradientCalls.finish` takes the
gradient. So `grad(grad(f))` nests on the work stack, never on Python's.
"""
from __future__ import annotations

from gradcli.errors import Pos
from gradcli.records import ValueRecord
from gradcli import autodiff, forward
from gradcli.ops import OPS


class FunctionRef(ValueRecord):
    """A function used as a value: `fn` is an ast.FuncDef, a values.Closure, or the spelled name
    of a library function (`jnp.tanh`)."""

    __slots__ = _fields = ("fn", "name", "pos")


class Transform(ValueRecord):
    """`jax.grad(f, argnums=0, has_aux=False)` and its kin: `kind` is grad, value_and_grad."""

    __slots__ = _fields = ("kind", "fn", "argnums", "has_aux", "pos", "by")
    argnums: int | tuple  # an int or a tuple of ints
    by: str  # as the program spelled it: "jax.grad"


class Tape(ValueRecord):
    """A `tf.GradientTape`: the equation windows recorded while it was active, what it watches."""

    __slots__ = _fields = ("persistent", "watch_accessed", "windows", "watched", "open_at", "used", "pos")

    def __init__(self, persistent, watch_accessed, pos):
        self.persistent = persistent
        self.watch_accessed = watch_accessed
        self.windows = []  # [start, end) equation ids recorded
        self.watched = set()
        self.open_at = None  # first equation id of the window being recorded
        self.used = False
        self.pos = pos

    def recorded(self, i: int) -> bool:
        if self.open_at is not None and i >= self.open_at:
            return True
        return any(start <= i < end for start, end in self.windows)


class TapeRecording(ValueRecord):
    """`tape.stop_recording()`: a context that closes the tape's window while it is active."""

    __slots__ = _fields = ("tape",)


def fresh(lowering, x: int, pos: Pos, scope) -> int:
    return lowering.graph.add(OPS["identity"], (x,), {}, pos, "identity", scope.stack)


def differentiate(lowering, ys: list, xs: list, pos: Pos, by: str, grad_ys=None, recorded=None) -> list:
    """d(sum of ys)/dx for each x, taken inside the program by the call `by` at `pos`."""
    graph = lowering.graph
    start = len(graph.equations)
    result = autodiff.gradients(graph, ys, xs, grad_ys, recorded=recorded)
    if graph.made_by is None:
        graph.made_by = {}
    made_by = graph.made_by
    for i in range(start, len(graph.equations)):
        made_by[i] = (by, pos)
    return result


class Linear(ValueRecord):
    """The function `vjp` or `linearize` returns: a pullback u -> J^T u (`kind` "vjp") or a
    pushforward t -> J t (`kind` "jvp"), of outputs `ys` with respect to `xs`."""

    __slots__ = _fields = ("kind", "ys", "xs", "pos", "by")


class Mapped(ValueRecord):
    """`jax.vmap(f, in_axes=0)`: f applied to each row of the mapped arguments, results stacked."""

    __slots__ = _fields = ("fn", "in_axes", "pos")
    in_axes: object  # None: every argument mapped over axis 0; else one entry per argument


def stack(lowering, ids: list, pos: Pos, scope) -> int:
    return lowering.graph.add(OPS["stack"], tuple(ids), {}, pos, "stack", scope.stack)


def reshape(lowering, x: int, shape: tuple, pos: Pos, scope) -> int:
    if lowering.graph.shapes[x] == shape:
        return x
    return lowering.graph.add(OPS["reshape"], (x,), {"shape": shape}, pos, "reshape", scope.stack)


def jacobian(lowering, y: int, x: int, pos: Pos, by: str, scope, recorded=None, zero_if_unconnected=True):
    """d y / d x shaped y.shape + x.shape, one reverse pass per element of y (seeded one-hot);
    None where y does not depend on x (unless `zero_if_unconnected`)."""
    import math

    import numpy as np

    graph = lowering.graph
    y_shape, x_shape = graph.shapes[y], graph.shapes[x]
    count = math.prod(y_shape)
    rows = []
    for k in range(count):
        seed = np.zeros(count)
        seed[k] = 1.0
        seed_id = graph.add_constant(seed.reshape(y_shape), pos, scope.stack)
        (row,) = differentiate(lowering, [y], [x], pos, by, [seed_id], recorded)
        if row is None:
            if not zero_if_unconnected:
                return None
            row = graph.add_constant(np.zeros(x_shape), pos, scope.stack)
        rows.append(row)
    if not y_shape:
        return rows[0]
    return reshape(lowering, stack(lowering, rows, pos, scope), tuple(y_shape) + tuple(x_shape), pos, scope)


def pushforward(lowering, ys: list, xs: list, tangents: list, pos: Pos, by: str, scope) -> list:
    """J t for each y (zeros where unconnected), by gradcli.forward's transpose of reverse mode."""
    import numpy as np


    graph = lowering.graph
    start = len(graph.equations)
    found = forward.jvp(graph, ys, xs, tangents)
    if graph.made_by is None:
        graph.made_by = {}
    for i in range(start, len(graph.equations)):
        graph.made_by[i] = (by, pos)
    return [graph.add_constant(np.zeros(graph.shapes[y]), pos, scope.stack) if t is None else t
            for y, t in zip(ys, found)]


class DictValue(ValueRecord):
    """`{'w': w, 'b': b}`: constant keys to values (tape.gradient's sources, and its result)."""

    __slots__ = _fields = ("keys", "items", "pos")


class Formatted(ValueRecord):
    """An f-string's fields as values, for print: [(text, value)]."""

    __slots__ = _fields = ("fields", "pos")


class Partial(ValueRecord):
    """A function with some of its arguments given: `functools.partial(f, 2.0, axis=0)`, or a
    library's function object (`nn.MSELoss(reduction='sum')` is F.mse_loss with that reduction,
    `keras.losses.MeanSquaredError()` the mean of mean_squared_error's per-sample losses). `fn`:
    the function value; `args`, `keywords`: the given arguments as written, `values` theirs (the
    args' first); `then`: the op applied to the result (a Keras loss object's reduction), or None."""

    __slots__ = _fields = ("fn", "args", "keywords", "values", "then", "pos")


FUNCTION_VALUES = (FunctionRef, Transform, Linear, Mapped, Partial)
JAX_TRANSFORMS = {"grad", "value_and_grad", "jacfwd", "jacrev", "jacobian", "hessian", "elementwise_grad",
                  "grad_and_aux", "vector_jacobian_product", "hessian_tensor_product", "hessian_vector_product"}
# autograd's transforms that are another's with has_aux: grad_and_aux(f) is grad(f, has_aux=True)
WITH_AUX = {"grad_and_aux": "grad"}
# autograd's products, `vector_jacobian_product(f)(x, v)`, `hessian_tensor_product(f)(x, v)`: their
# last argument is the vector, not one of f's
VECTOR_PRODUCTS = {"vector_jacobian_product", "hessian_tensor_product", "hessian_vector_product"}
# calls whose list arguments are lists of values (sources, targets, an optimizer's parameters), not one array
GRADIENT_CALLS = {"gradient", "gradients", "jacobian", "watch", "grad", "check_grads",  # (grad: torch.autograd.grad)
                  "SGD", "Adam", "AdamW", "RMSprop", "zip", "switch", "list", "tuple"}  # (switch: lax.switch's branches)
NOT_MINE = object()  # GradientCalls.call_gradient_api: not a call of the gradient API
_FINISH = 7  # the lowering's work item after a transformed function's body: its gradient


class ClassValue(ValueRecord):
    """A class of the program: its methods (FuncDefs), its constants, and its bases as spelled
    (`tensorflow.Module`)."""

    __slots__ = _fields = ("name", "methods", "constants", "pos", "bases")


class ObjectValue(ValueRecord):
    """An object of a program's class: the attributes its methods set (`self.w = w`)."""

    __slots__ = _fields = ("cls", "attrs", "pos")

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other


class BoundMethod(ValueRecord):
    """`m.forward` taken as a value: the method with its object."""

    __slots__ = _fields = ("obj", "fn", "pos")


FUNCTION_VALUES = FUNCTION_VALUES + (ClassValue, ObjectValue, BoundMethod)


_OPENERS, _CLOSERS = "([{", ")]}"


def printed_text(source: str, start: int, end: int) -> str:
    """The source text of a printed expression: its node's span widened over the brackets the
    parser dropped (`(x ** 2).requires_grad` spans from `x`, and `(a - b) / c` from `a`), so
    the output's key is the expression as written."""
    depth = lowest = 0
    quote = ""
    for ch in source[start:end]:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in _OPENERS:
            depth += 1
        elif ch in _CLOSERS:
            depth -= 1
            lowest = min(lowest, depth)
    unopened, unclosed = -lowest, depth - lowest
    while unopened and start > 0 and (source[start - 1] in _OPENERS or source[start - 1].isspace()):
        start -= 1
        unopened -= source[start] in _OPENERS
    while unclosed and end < len(source) and (source[end] in _CLOSERS or source[end].isspace()):
        end += 1
        unclosed -= source[end - 1] in _CLOSERS
    return source[start:end]
