"""The broadcast diagnostic: an elementwise operation whose implicit broadcast crosses two
operands of the same length on different axes, `(n,)` against `(n, 1)` or `(n, 1)` against
`(1, n)`, so that the result, `(n, n)`, is larger than both. NumPy, PyTorch and JAX compute it
without a word; it is how a column of targets read from a file, or the `(n, 1)` result of
`X @ w` with a column `w`, silently turns a mean of n squared errors into a mean over n * n.

The warning is left out where the program asks for the crossing: an operand shaped by the
program itself (`x[:, None]`, `np.newaxis`, `reshape`, `expand_dims`/`unsqueeze`,
`broadcast_to`, `outer`, `stack`, `tile`, `einsum`, a reduction with `keepdims=True`, or
an elementwise or view operation of such a value), and a value met with its own transpose
(`c - c.T`: the table of every pair). A different length (`(n, 1)` against `(m,)`, m != n)
or a number is never a crossing. Only the program's own equations are looked at, never
those of its gradients, and only their shapes: nothing is evaluated."""
from __future__ import annotations

import math

from gradcli.ir import Graph

# ops whose result's axes the program chose: a broadcast of such a value is asked for
_SHAPING = frozenset({
    "reshape", "expand_dims", "broadcast_to", "broadcast_arrays", "broadcast_part", "atleast_2d", "atleast_3d",
    "unflatten", "outer", "meshgrid", "meshgrid_part", "tile", "repeat", "stack", "stack_arrays", "vstack",
    "hstack", "dstack", "column_stack", "c_", "r_", "kron", "einsum", "einsum_to", "tensordot", "swapaxes",
    "moveaxis", "rollaxis", "cartesian_prod", "combinations"})
# ops that pass their input's arrangement of axes on (a slice of x[:, None] is still one)
_PASSING_MEMORY = frozenset({"view", "same"})
_TRANSPOSES = frozenset({"transpose", "swapaxes", "moveaxis"})


def _asks_for_axes(eq) -> bool:
    if eq.op.name in _SHAPING or eq.params.get("keepdims") is True:
        return True
    if eq.op.name == "index":  # `x[:, None]`, `x[np.newaxis]`: a new axis in the subscript
        index = eq.params.get("index")
        return isinstance(index, tuple) and any(part is None for part in index)
    return False


def shaped_on_purpose(graph: Graph) -> list[bool]:
    """Per value: whether the program arranged its axes itself (see the module's docstring)."""
    out = []
    for eq in graph.equations:
        if _asks_for_axes(eq):
            out.append(True)
        elif eq.op.elementwise or eq.op.memory in _PASSING_MEMORY:
            out.append(any(out[j] for j in eq.inputs if type(j) is int))
        else:
            out.append(False)
    return out


def _crossed_length(shapes: list[tuple], result: tuple) -> int | None:
    """The length n that two operands hold on different axes, each where the other has 1 (or
    no axis), when the result is larger than every operand; None where there is none."""
    size = math.prod(result)
    if any(math.prod(s) >= size for s in shapes):
        return None
    rank = len(result)
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    for a in range(rank):
        n = result[a]
        if n < 2:
            continue
        for b in range(rank):
            if b == a or result[b] != n:
                continue
            holds_a = any(s[a] == n and s[b] == 1 for s in padded)
            holds_b = any(s[b] == n and s[a] == 1 for s in padded)
            if holds_a and holds_b:
                return n
    return None


def _transposed_pair(graph: Graph, operands: tuple) -> bool:
    """`c - c.T`, `p[:, 0:1].T - p[:, 0:1]`: one operand is the other transposed."""
    for j in operands:
        eq = graph.equations[j]
        if eq.op.name in _TRANSPOSES and eq.inputs and any(_same(graph, eq.inputs[0], k) for k in operands if k != j):
            return True
    return False


def _same(graph: Graph, a: int, b: int) -> bool:
    """Whether values a and b are one computation: the same value, or the same op of the same
    inputs with the same parameters (an expression written twice)."""
    if a == b:
        return True
    first, second = graph.equations[a], graph.equations[b]
    if first.op is not second.op or first.inputs != second.inputs or first.op.name in ("input", "const"):
        return False
    try:
        return bool(first.params == second.params)
    except (TypeError, ValueError):  # parameters that hold arrays
        return False


def _written(graph: Graph, j: int) -> str | None:
    """How the program writes value j: its name, or its text where short and on one line."""
    name = graph.value_names.get(j)
    if name is None:
        pos, text = graph.equations[j].pos, graph.source.text if graph.source else ""
        piece = text[pos.start:pos.end] if pos is not None and 0 <= pos.start < pos.end else ""
        # a span leaves out the parentheses around its first operand: `(c + 1)[:2]` is `c + 1)[:2]`
        piece = "(" * max(piece.count(")") - piece.count("("), 0) + piece
        name = piece if piece and len(piece) <= 40 and "\n" not in piece else None
    return name


def _described(graph: Graph, j: int) -> str:
    written = _written(graph, j)
    return f"'{written}' {graph.shapes[j]}" if written else f"an operand of shape {graph.shapes[j]}"


def _suggestion(graph: Graph, operands: list, n: int) -> str:
    fixes = []
    for j in operands:
        if len(graph.shapes[j]) > 1 and math.prod(graph.shapes[j]) == n:
            written = _written(graph, j)
            how = f" with `{written if written.isidentifier() else f'({written})'}.reshape(-1)`" if written else ""
            fixes.append(f"{_described(graph, j)} to ({n},){how}")
    one = ("flatten " + " and ".join(fixes)) if fixes else "give both operands one shape"
    return (f"if one value per element was meant, {one}; if the {n} x {n} table of every pair was meant, "
            "write the new axis yourself (`v[:, None]`, `np.newaxis`, `reshape`, `expand_dims`), "
            "which silences this warning")


def accidental_broadcasts(graph: Graph) -> list[tuple]:
    """One warning per place where the program's elementwise operations cross two operands
    of the same length, in the order of the program: the arguments of a Diagnostic
    (severity, kind "broadcast", op, message, suggestion, pos, stack)."""
    found, seen = [], set()
    on_purpose = []  # per value, once a crossing is found (shaped_on_purpose)
    shapes = graph.shapes
    if max(map(len, filter(None, shapes)), default=0) < 2:  # (no value of two axes: no crossing)
        return found
    for i, eq in enumerate(graph.equations):
        result = shapes[i]
        # the common cases first, cheaply (a large program has one equation per line or more):
        # a crossing needs a result of two axes or more, larger than every operand
        if result is None or len(result) < 2 or eq.backward is not None or eq.pos is None or not eq.op.elementwise:
            continue
        operands = eq.inputs
        for j in operands:
            if shapes[j] == result or shapes[j] is None:
                break
        else:
            n = _crossed_length([shapes[j] for j in operands], result) if len(operands) > 1 else None
            if n is None or eq.pos in seen:
                continue
            on_purpose = on_purpose or shaped_on_purpose(graph)
            if not any(on_purpose[j] for j in operands) and not _transposed_pair(graph, operands):
                seen.add(eq.pos)
                found.append(_warning(graph, i, n))
    return found


def _warning(graph: Graph, i: int, n: int) -> tuple:
    eq, shapes = graph.equations[i], graph.shapes
    crossed = [j for j in eq.inputs if math.prod(shapes[j]) > 1]
    message = (f"'{eq.label}' broadcasts " + " against ".join(_described(graph, j) for j in crossed)
               + f" into a {shapes[i]} result, larger than both: each of the {n} elements of one meets every one "
               "of the other's")
    return "warning", "broadcast", eq.label, message, _suggestion(graph, crossed, n), eq.pos, eq.stack
