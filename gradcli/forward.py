"""Forward mode, as `jax.jvp`: Jacobian-vector products built as new equations of the same graph.

`jvp(graph, ys, xs, tangents)` appends the equations of J·t (each y's derivative along the
tangents t of the xs) and returns their ids, as `gradcli.autodiff.gradients` does for J^T·u.

How: the transpose of reverse mode, not a second table of rules. Every gradient rule of the
op table is linear in its cotangent, so the reverse pass g(u) = J^T u, seeded with a fresh
placeholder u of y's shape, is a linear function of u, and
    J t = d/du <t, J^T u>,
which is reverse mode applied once more, to g, with respect to u, seeded with t. The result is
exact (no rule is approximated) and covers every op that has a gradient rule, with nothing to
keep in step with the table: a JVP rule per op record would be a second rule to write, test
and keep consistent for each of several hundred ops. It costs about what a reverse pass costs:
the equations that depend on u are the linear part of the gradient program, and the transpose
of a linear program does the same work as the program.

The placeholder u is an input equation (never a constant), so the gradient builder's algebra
(`x * 1`, `x + 0`, folding constants: `Graph.derived`) cannot fold it away; its value is NaN,
and linearity means no equation of the result reads it: that is checked on every call, so a
rule that is not linear in its cotangent is a loud internal error, never a wrong number.
"""
from __future__ import annotations

import numpy as np

from gradcli.autodiff import depends_on, gradients
from gradcli.errors import GradcliError
from gradcli.ir import Graph
from gradcli.ops import G, fmt_shape

PLACEHOLDER = "jvp cotangent"  # the input name of the placeholders u (never evaluated)


def jvp(graph: Graph, ys: list[int], xs: list[int], tangents: list[int],
        names: dict[int, str] | None = None) -> list[int | None]:
    """Ids of sum_k dY/dX_k · T_k for each Y (shaped as Y), appended to `graph`; None where Y
    does not depend on any X through ops that pass a gradient (as reverse mode's None).

    `tangents[k]` is the id of X k's tangent, of X k's shape."""
    if len(tangents) != len(xs):
        raise ValueError(f"jvp: {len(xs)} primals and {len(tangents)} tangents")
    for x, t in zip(xs, tangents):
        if graph.shapes[t] != graph.shapes[x]:
            raise GradcliError(f"jvp: the tangent has shape {fmt_shape(graph.shapes[t])}, its primal has shape "
                               f"{fmt_shape(graph.shapes[x])}: they must match (as in jax.jvp)",
                               graph.equations[t].pos, graph.source)
    out: list[int | None] = [None] * len(ys)
    if not xs or not ys:
        return out
    reach = depends_on(graph, xs, max(ys))
    live = [k for k, y in enumerate(ys) if reach[y]]
    if not live:
        return out
    # one placeholder per connected y: the reverse pass below is linear in each
    us = [_placeholder(graph, graph.shapes[ys[k]]) for k in live]
    pulled = gradients(graph, [ys[k] for k in live], xs, us, names)  # sum over ys of J^T u, per x
    pairs = [(g, t) for g, t in zip(pulled, tangents) if g is not None]
    transpose_start = len(graph.equations)
    if not pairs:  # no gradient reaches any x: every Jacobian is 0
        columns = [None] * len(us)
    else:
        columns = gradients(graph, [g for g, _ in pairs], us, [t for _, t in pairs])
    for k, u, column in zip(live, us, columns):
        if column is None:  # J^T u does not depend on u: this Jacobian is 0
            column = _zeros(graph, graph.shapes[ys[k]])
        out[k] = column
    _check_free_of(graph, [c for c in out if c is not None], us, transpose_start)
    return out


def _placeholder(graph: Graph, shape) -> int:
    """A fresh input standing for u: NaN (a view of one number: no memory for a large y), so
    that even a value of it read by mistake could not pass for a number."""
    return graph.add_input(PLACEHOLDER, np.broadcast_to(np.float64(np.nan), shape))


def _zeros(graph: Graph, shape) -> int:
    graph.context = None
    zero = graph.constant(0.0)
    return zero.id if shape == () else G.broadcast_to(zero, shape=shape).id


def _check_free_of(graph: Graph, results: list[int], placeholders: list[int], transpose_start: int) -> None:
    """No equation the results depend on varies with a placeholder: J t is built from the
    values of the program and t alone. A gradient rule that is not linear in its cotangent
    would break this: differentiating the equation it emitted reads a value that varies with
    u. `transpose_start` is the first equation of the second reverse pass."""
    if not results:
        return
    first, end = min(placeholders), len(graph.equations)
    equations = graph.equations
    varies = bytearray(end)
    for u in placeholders:
        varies[u] = 1
    for i in range(first, transpose_start):
        if any(varies[j] for j in equations[i].inputs):
            varies[i] = 1
    ancestor = bytearray(end)
    for r in results:
        ancestor[r] = 1
        if varies[r]:  # a result that is itself a value of the reverse pass
            raise RuntimeError(f"forward mode: J·t came out as equation {r} of the gradient, which varies with its "
                               f"cotangent (the rule of '{_origin(graph, r)}')")
    for i in range(end - 1, first - 1, -1):
        if not ancestor[i]:
            continue
        for j in equations[i].inputs:
            ancestor[j] = 1
            if j < transpose_start and varies[j]:
                # i was emitted by the gradient rule of the first pass's equation `backward`,
                # which reads j: that equation's own rule (from a program op) was not linear
                culprit = equations[i].backward if i >= transpose_start and equations[i].backward is not None else j
                raise RuntimeError(f"forward mode: the gradient rule of '{_origin(graph, culprit)}' is not linear "
                                   f"in its cotangent (equation {i}, {equations[i].op.name}, reads equation {j} "
                                   "of the cotangent): J·t cannot be built as the transpose of its gradient")


def _origin(graph: Graph, i: int) -> str:
    """The program's own op whose gradient rule an equation of a gradient comes from."""
    equations = graph.equations
    while equations[i].backward is not None:
        i = equations[i].backward
    return equations[i].op.name
