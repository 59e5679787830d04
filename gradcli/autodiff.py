"""Reverse mode, as `tf.gradients`: the gradient is built as new equations of the same graph.

The backward pass walks the equations in reverse with a cotangent dictionary whose missing
entries are zeros (autodidax's `eval_jaxpr_transposed`). Each op's rule comes from the op
table; a cotangent of a broadcast shape is summed back to the input's shape here, in one
place. Only equations on a path from some X to some Y are differentiated, so an op that
passes no gradient (`stop_gradient`, comparisons) simply cuts the path.
"""
from __future__ import annotations

from gradcli.errors import GradcliError
from gradcli.ir import Graph
from gradcli.ops import G, NO_GRADIENT, Sym


def depends_on(graph: Graph, xs: list[int], upto: int, recorded=None) -> list[bool]:
    """reach[i]: value i depends on some x through edges that carry a gradient (and, given
    `recorded`, through equations i for which recorded(i) holds: a tape's window)."""
    reach = [False] * (upto + 1)
    for x in xs:
        if x <= upto:
            reach[x] = True
    for i in range(min(xs, default=upto + 1), upto + 1):
        if reach[i] or (recorded is not None and not recorded(i)):
            continue
        eq = graph.equations[i]
        op = eq.op
        for k, j in enumerate(eq.inputs):
            # (Op.rule written out)
            if reach[j] and (None if op.vjp is None else op.vjp[0](k) if op.variadic else op.vjp[k]) is not NO_GRADIENT:
                reach[i] = True
                break
    return reach


def gradients(graph: Graph, ys: list[int], xs: list[int], grad_ys: list[int | None] | None = None,
              names: dict[int, str] | None = None, recorded=None) -> list[int | None]:
    """Ids of d(sum of ys)/dx for each x (None where unconnected), appended to `graph`.

    `grad_ys[k]` is the id of Y k's upstream gradient (default: ones). Records the forward
    equations it differentiated in `graph.differentiated` (for tie and kink diagnostics).
    `recorded(i)`: whether equation i carries gradients (a tape's recorded window; None: all)."""
    if not xs:
        return []
    names = names or {}
    upto = max(ys)
    reach = depends_on(graph, xs, upto, recorded)
    cotangent: dict[int, int] = {}
    for k, y in enumerate(ys):
        if not reach[y]:
            continue
        graph.context = y
        seed = grad_ys[k] if grad_ys and grad_ys[k] is not None else None
        if seed is None:
            one = graph.constant(1.0)
            seed = one.id if graph.shapes[y] == () else G.broadcast_to(one, shape=graph.shapes[y]).id
        _accumulate(graph, cotangent, y, Sym(graph, seed))
    differentiated = graph.differentiated
    equations, pending, shapes = graph.equations, cotangent.get, graph.shapes
    stop = min(xs)
    for i in range(upto, stop - 1, -1):
        g = pending(i)
        if g is None or (recorded is not None and not recorded(i)):
            continue
        eq = equations[i]
        inputs = eq.inputs
        if not inputs:
            continue
        graph.context = i
        op = eq.op
        args = None  # made once a rule needs them
        for k, j in enumerate(inputs):
            if not reach[j]:
                continue
            vjp = op.vjp  # (Op.rule written out: a call per input costs more than it does)
            rule = None if vjp is None else vjp[0](k) if op.variadic else vjp[k]
            if rule is NO_GRADIENT:
                continue
            if rule is None:
                what = names.get(j) or f"argument {k + 1}"
                raise GradcliError(
                    f"operation '{eq.label}' has no gradient rule, and it lies on the path from "
                    f"{what} to the differentiated output (TensorFlow: LookupError)", eq.pos, graph.source)
            differentiated.add(i)
            if args is None:  # (one or two by hand: a list comprehension is a call)
                args = [Sym(graph, inputs[0])] if len(inputs) == 1 else [Sym(graph, a) for a in inputs]
            ct = rule(Sym(graph, g), Sym(graph, i), *args, **eq.params)
            if j not in cotangent and graph.dtypes is None and shapes[ct.id] == shapes[j]:
                cotangent[j] = ct.id  # (_accumulate's common case: the first cotangent, of the value's shape)
            else:
                _accumulate(graph, cotangent, j, ct)
    graph.context = None
    return [cotangent.get(x) for x in xs]


def _accumulate(graph: Graph, cotangent: dict, j: int, ct: Sym) -> None:
    shapes = graph.shapes
    target, shape = shapes[j], shapes[ct.id]
    if shape != target:
        ct = G.sum_to(ct, shape=target) if len(shape) >= len(target) else G.broadcast_to(ct, shape=target)
    dtypes = graph.dtypes
    if dtypes is not None and dtypes.get(ct.id) != dtypes.get(j):  # a cotangent has its value's type (a cast's)
        ct = G.cast(ct, dtype=dtypes.get(j, "float64"))
    previous = cotangent.get(j)
    cotangent[j] = ct.id if previous is None else G.add(Sym(graph, previous), ct).id


def blocked_at(graph: Graph, ys: list[int], x: int) -> list[int] | None:
    """Why x gets no gradient: None if no y depends on x at all, else the equations on the
    way from x to the ys that pass it no gradient (stop_gradient, comparisons, sign, ...)."""
    upto = max(ys)
    if x > upto:
        return None
    ancestor = bytearray(upto + 1)
    for y in ys:
        ancestor[y] = 1
    for i in range(upto, x - 1, -1):
        if ancestor[i]:
            for j in graph.equations[i].inputs:
                ancestor[j] = 1
    if not ancestor[x]:
        return None
    depends = bytearray(upto + 1)
    depends[x] = 1
    cuts = []
    for i in range(x + 1, upto + 1):
        eq = graph.equations[i]
        if any(depends[j] for j in eq.inputs):
            depends[i] = 1
            if ancestor[i] and any(depends[j] and eq.op.rule(k) is NO_GRADIENT for k, j in enumerate(eq.inputs)):
                cuts.append(i)
    return cuts
