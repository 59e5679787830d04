"""Which gradient call inside the program made an equation, in a diagnostic's words.

A gradient taken inside the program (`tf.gradients`, a tape's `gradient`, `jax.grad`,
`backward()`) is equations of the same graph, each stamped in `Graph.made_by` with the call
as spelled and its place. A non-finite number born in one is reported at the forward
operation whose rule made it (the caret under `log`), and named with the call that took it:
"the gradient of log at 3:9, taken by tf.gradients at 7:5".
"""
from __future__ import annotations

from gradcli.errors import Pos
from gradcli.ir import Equation, Graph


def taken_by(graph: Graph, i: int) -> tuple[str, Pos | None] | None:
    """(the call as spelled, its place) of the in-program gradient that made equation i, if one did."""
    return (graph.made_by or {}).get(i)


def _call_text(by: str, pos: Pos | None) -> str:
    return f"{by} at {pos}" if pos is not None else by


def subject(graph: Graph, i: int, eq: Equation) -> str:
    """What made value i non-finite, as a diagnostic's message names it: `the gradient through log`
    (a gradient asked for by the command), `the gradient of log at 3:9, taken by tf.gradients at
    7:5`, or, for an equation of a derivative that is no gradient rule's (a forward-mode product),
    `log at 3:9 in the derivative taken by jax.jvp at 5:1`."""
    found = taken_by(graph, i)
    if found is None:
        return f"the gradient through {eq.label}" if eq.backward is not None else eq.label
    where = f" at {eq.pos}" if eq.pos is not None else ""
    if eq.backward is not None:
        return f"the gradient of {eq.label}{where}, taken by {_call_text(*found)},"
    return f"{eq.label}{where} in the derivative taken by {_call_text(*found)}"


def place(graph: Graph, i: int, eq: Equation) -> str:
    """Where equation i stands, for "then ... turns the infinities into NaN": `exp at 5:25`, or
    `the gradient of exp at 5:25, taken by tape.gradient at 6:5`."""
    if taken_by(graph, i) is None:
        return f"{eq.label} at {eq.pos}"
    return subject(graph, i, eq)


def taken_by_json(graph: Graph, i: int) -> dict | None:
    """The call for a diagnostic's JSON: {"call": "tf.gradients", "line": 7, "column": 5}."""
    found = taken_by(graph, i)
    if found is None:
        return None
    by, pos = found
    return {"call": by, "line": pos.line if pos else None, "column": pos.column if pos else None}
