"""Which values the libraries hold as integers, read from how the program writes them.

gradcli computes every value in float64, but a gradient API treats an integer tensor apart:
TensorFlow's tape does not watch one (its gradient is None, with a logged warning), JAX's grad
and its kin raise TypeError, autograd raises TypeError, and PyTorch refuses requires_grad on one
(RuntimeError). A value is an integer one where the program writes it so: an integer literal
(`10`, `[1, 2]`), a constructor of one without a float dtype (`tf.constant(10)`,
`torch.tensor([1, 2])`, `jnp.arange(3)`), a constructor with an integer dtype, or a name the
program's top level assigns such a value.

Also here (`ValuesApart`): a value computed by NumPy inside a tf.GradientTape, which the tape
does not record, and a source of tf.gradients folded into a constant."""
from __future__ import annotations

import re

from gradcli.language import dialects
from gradcli.language import syntax as ast
from gradcli.language.lower.values import Literal, Scope
from gradcli.ops import OPS

CONSTRUCTORS = {"constant", "Variable", "tensor", "as_tensor", "array", "asarray", "convert_to_tensor", "arange"}
_INTEGER_TEXT = re.compile(r"[0-9][0-9_]*")
_STEPS = 10_000  # nodes looked at for one value (a literal of many items is read item by item)


def every_written(lowering, node, look) -> bool:
    """Whether every part the program writes for `node` passes `look`, which says of a node True
    (it passes), False (it fails: so does the whole) or the nodes it stands for (its items, its
    argument); a name stands for what the top level assigned it before (none, or the same name
    met again: it fails)."""
    pending, seen = [node], set()
    for _ in range(_STEPS):
        if not pending:
            return True
        n = pending.pop()
        if isinstance(n, ast.Name):
            assigned = _assigned_before(lowering.module, n)
            if assigned is None or (n.id, n.pos.start) in seen:  # (`x = tf.Variable(x)`: its own x again)
                return False
            seen.add((n.id, n.pos.start))
            pending.append(assigned)
            continue
        found = look(n)
        if found is False:
            return False
        if found is not True:
            pending.extend(found)
    return False


def written_integer(lowering, node) -> bool:
    """Whether the library holds the value `node` writes as integers (every item integer-written;
    a float item, a float dtype, or anything computed makes it not)."""
    text = lowering.source.text

    def look(n):
        if isinstance(n, ast.Number):
            return not n.boolean and n.pos.start >= 0 and bool(_INTEGER_TEXT.fullmatch(text[n.pos.start:n.pos.end]))
        if isinstance(n, (ast.Array, ast.Tuple)) and n.items:
            return n.items
        if isinstance(n, ast.Call) and n.symbol == "-" and len(n.args) == 1:
            return n.args
        if isinstance(n, ast.Call) and not n.method and n.args and (
                (callee := lowering.spelled(n.func).rpartition(".")[2]) in CONSTRUCTORS or _tf_range(lowering, n)):
            dtype = next((k.value for k in n.keywords if k.name == "dtype"), None)
            if dtype is None and len(n.args) > 1 and callee in dialects.DTYPE_SECOND_ARGUMENT:
                dtype = n.args[1]  # `tf.constant([1, 2], tf.float32)`, `np.array([1, 2], float)`
            if dtype is not None:
                return dtype.pos.start >= 0 and "int" in text[dtype.pos.start:dtype.pos.end]
            return n.args if n.func.endswith(("arange", "range")) else n.args[:1]
        return False
    return every_written(lowering, node, look)


def written_boolean(lowering, node) -> bool:
    """Whether the program writes `node` as booleans: True/False items (`m = np.array([True, False])`,
    `torch.tensor(...)` of them), through the top level's names."""
    def look(n):
        if isinstance(n, ast.Number):
            return n.boolean
        if isinstance(n, (ast.Array, ast.Tuple)) and n.items:
            return n.items
        if isinstance(n, ast.Call) and not n.method and n.args and not n.keywords and \
                n.func.rpartition(".")[2] in CONSTRUCTORS - {"arange"}:
            return n.args[:1]
        return False
    return every_written(lowering, node, look)


def written_indices(lowering, value: int, pos):
    """An index array the program binds to a name and writes with integers (`idx = jnp.array([0, 2])`,
    then `jnp.take(x, idx)`): its values, known before evaluation (a Literal), unless given from
    outside; any other value as it is."""
    eq = lowering.graph.equations[value]
    if eq.op.name != "input" or not written_integer(lowering, ast.Name(eq.params["name"], pos)):
        return value
    return lowering.known_or_given(value)


def _tf_range(lowering, node: ast.Call) -> bool:
    """`tf.range(4)`: int32 where its bounds are integers (PyTorch's deprecated torch.range is float)."""
    return dialects.split_spelling(lowering.spelled(node.func)) == ("tensorflow", "range")


# The names (prefix stripped) of calls whose answer on integer arguments a library gives
# otherwise than gradcli's floating point (see integer_refusal): never remembered by spelling
INTEGER_SENSITIVE = frozenset({*dialects.tensorflow.ON_INTEGERS, *dialects.torch.ON_INTEGERS, "power", "pow"})


def integer_refusal(lowering, node: ast.Call, library: str | None, bare: str, op) -> str | None:
    """Why a call of pasted code is refused, or None: its library holds the argument as integers
    and answers otherwise than gradcli computing in floating point (an integer mean, an error)."""
    first = node.args[0] if node.args else next(
        (k.value for k in node.keywords if k.name in dialects.FIRST_ARGUMENT_KEYWORDS), None)
    if first is None:
        return None
    written = f".{bare}()" if node.method else node.func
    said = dialects.integer_refusal(library, bare)
    if said is not None and written_integer(lowering, first):
        prefix = "tf" if library == "tensorflow" else "torch"
        return (f"{written} of an integer tensor {said}; gradcli computes in floating point: write the numbers "
                f"as floats ([1., 2.]), give a float dtype (dtype={prefix}.float32) or cast the tensor to one")
    if op.name == "power" and len(node.args) == 2 and _negative_integer(node.args[1], lowering) and (
            written_integer(lowering, first) and not (node.symbol is not None and _python_number(first))):
        # (Python's own 2 ** -1 is 0.5; every array library refuses an integer array's)
        return (f"{node.symbol or written}: integers to a negative integer power are an error (NumPy: ValueError, "
                "PyTorch: RuntimeError, JAX: TypeError, TensorFlow: InvalidArgumentError; Integers to negative "
                "integer powers are not allowed); gradcli computes in floating point: write the numbers as floats "
                "([1., 2.]) or the power as one (** -1.0)")
    return None


def _python_number(node) -> bool:
    """A number written as such (`2`, `-2`): a Python int, not an array."""
    if isinstance(node, ast.Call) and node.symbol == "-" and len(node.args) == 1:
        node = node.args[0]
    return isinstance(node, ast.Number)


def _negative_integer(node, lowering) -> bool:
    """`-1`, `-2`: a negative integer written as such."""
    return (isinstance(node, ast.Call) and node.symbol == "-" and len(node.args) == 1
            and isinstance(node.args[0], ast.Number) and node.args[0].value > 0 and written_integer(lowering, node))


def _assigned_before(module, name: ast.Name):
    """The expression the top level last assigns to `name` before its use, or None."""
    found = None
    for stmt in module.statements:
        if stmt.pos.start >= name.pos.start:
            break
        if isinstance(stmt, ast.Assign) and stmt.name == name.id:
            found = stmt.value
    return found


def integer_items(lowering, node) -> list[bool]:
    """For a source or a list of them as written (`x`, `[x, y]`): whether each is an integer one."""
    items = node.items if isinstance(node, (ast.Array, ast.Tuple)) else [node]
    return [written_integer(lowering, item) for item in items]


class ValuesApart:
    """Part of the lowering (gradcli.language.lower): what a gradient API treats apart."""

    def numpy_under_tape(self, node: ast.Call, values: list, scope: Scope, work: list):
        """`np.mean(x2)` while a tf.GradientTape records: TensorFlow hands NumPy an array, so the
        tape does not see the computation and its result is a constant to it (the gradient
        through it is None); said as a warning, since it is the classic way to lose a gradient."""
        self._numpy_under_tape = True
        try:
            value = self.call(node, values, scope, work)
        finally:
            self._numpy_under_tape = False
        if type(value) is not int:
            return value
        self.graph.warnings.append((f"{node.func} computes in NumPy, outside the GradientTape: the tape does not "
                                    "record it, so no gradient flows through it (TensorFlow gives None); compute it "
                                    "with TensorFlow's operations to keep the gradient", node.pos, "gradient_lost",
                                    node.func))
        return self.emit(OPS["stop_gradient"], (value,), {}, node.pos, node.func, scope)

    def refuse_integer_argument(self, fn, arg) -> None:
        """JAX's and autograd's TypeError for an integer argument a transform differentiates."""
        if self.spelled(fn.by).startswith("autograd"):
            raise self.error(f"{fn.by}: Can't differentiate w.r.t. type <class 'int'> (autograd: TypeError): "
                             "write the value as a float (2.0)", arg.pos)
        raise self.error(f"{fn.kind} requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
                         "np.inexact), but got int32 (JAX: TypeError): write the value as a float (2.0)", arg.pos)

    def refuse_folded_sources(self, sources: list, pos) -> None:
        """tf.gradients with respect to a constant the lowering folded (its uses were folded with
        it: no equation of the program depends on it, so its gradient would read as unconnected)."""
        folded = [x for x in sources if isinstance(x, Literal)]
        if folded:
            raise self.error("tf.gradients: a source is a constant that gradcli computed while building the "
                             "program (inside a function, tf.constant(...) and what is computed from it are "
                             "folded), so no gradient can be traced to it: make it an argument of the function "
                             f"or a value of the program's top level (the constant is made at line {folded[0].pos.line})", pos)
