"""Graph -> program text in gradcli's own language (`gradcli derive`).

The gradient is equations of the same graph, so printing it is printing equations: values
used more than once are bound to a name once, small constant subexpressions are folded to
literals, and every operation prints as something the grammar parses back (an index's
gradient, a scatter, prints as a list of the gradient's elements and zeros).
"""
from __future__ import annotations

import math
import re

import numpy as np

from gradcli.errors import GradcliError
from gradcli.engine.evaluate import needed_equations, run
from gradcli.ir import Graph
from gradcli.ops import OPS
from gradcli.ops.core import _index_tuple

# An operator's symbol and precedence are fields of its op record (`symbol`, `precedence`).
ATOM, UNARY = 6, 4
# An operator -> the operator that is it with its right operand negated: `a + -b` prints as `a - b`
OPPOSITES = {"add": "subtract", "subtract": "add"}
FOLD_UP_TO = 16          # constant subexpressions this small print as literals
LITERAL_UP_TO = 4096     # inputs this small print as literal bindings
SELECTION_UP_TO = 1 << 16  # elements of a printed selection matrix


def number(v: float) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    text = repr(float(v))
    return text


def literal(value: np.ndarray) -> str:
    value = np.asarray(value, dtype=np.float64)
    if value.ndim == 0:
        return number(float(value))
    text = np.array2string(value, separator=", ", threshold=value.size + 1, max_line_width=10**9,
                           formatter={"float_kind": number})
    return re.sub(r"\s+", " ", text)


def _prec_of_literal(text: str) -> int:
    return UNARY if text.startswith("-") else ATOM


class Printer:
    def __init__(self, graph: Graph, reserved: set[str]):
        self.graph = graph
        self.reserved = set(reserved)
        self.counter = 0
        self.own_names: set[str] = set()  # the program's names given to the gradients it takes (once each)

    def fresh(self, hint: str | None = None) -> str:
        if hint and hint.isidentifier() and hint not in self.reserved:
            self.reserved.add(hint)
            return hint
        while True:
            self.counter += 1
            name = f"t{self.counter}"
            if name not in self.reserved:
                self.reserved.add(name)
                return name

    def program(self, roots: dict[str, int], header: str) -> str:
        g = self.graph
        order = needed_equations(g, list(roots.values()))
        inputs = [i for i in order if g.equations[i].op.name == "input"]
        constant = self._constant_flags(order)
        folded = self._fold(order, constant)
        uses: dict[int, int] = {}
        for i in order:
            if i in folded:
                continue
            # a scatter writes its input once per element: bind it to a name first
            weight = 2 if g.equations[i].op.name == "scatter" else 1
            for j in g.equations[i].inputs:
                uses[j] = uses.get(j, 0) + weight
        for r in roots.values():
            uses[r] = uses.get(r, 0) + 1
        returned = self._returned_gradients(order, folded)
        lines = [f"# {header}"]
        text: dict[int, tuple[str, int]] = {}
        for i in inputs:
            eq = g.equations[i]
            name = eq.params["name"]
            self.reserved.add(name)
            text[i] = (name, ATOM)
            value = eq.params["value"]
            if value is not None and np.asarray(value).size <= LITERAL_UP_TO:
                lines.append(f"{name} = {literal(value)}")
        for i in order:
            if i in text:
                continue
            if i in folded:
                text[i] = folded[i]
                continue
            expr = self._expression(i, text)
            shared = uses.get(i, 0) > 1 and not expr[0].replace("_", "a").isalnum()
            named = i not in roots.values() and (shared or len(expr[0]) > 400)
            taken = self._taken_gradient(i, expr[0]) if i in returned and i not in roots.values() else None
            if taken is not None:  # a gradient the program takes itself: bound to its name, with its call
                name, call = taken
                lines.append(f"{name} = {expr[0]}  # {call}")
                text[i] = (name, ATOM)
            elif named:
                hint = g.value_names.get(i) if g.equations[i].backward is None else None
                name = self.fresh(hint)
                lines.append(f"{name} = {expr[0]}")
                text[i] = (name, ATOM)
            else:
                text[i] = expr
        for name, r in roots.items():
            lines.append(f"{name} = {text[r][0]}")
        return "\n".join(lines) + "\n"

    def _returned_gradients(self, order: list[int], folded: dict) -> set[int]:
        """The values gradient calls of the program returned (`g = tf.gradients(y, x)[0]`):
        Graph.made_by stamps the equations of each call, and a value one call made that the
        program's own equations (or another call's) go on to use is what it returned."""
        g = self.graph
        made_by = g.made_by
        if not made_by:
            return set()
        returned = set()
        for k, eq in enumerate(g.equations):  # (its users need not be printed: `y = g * x`)
            by = made_by.get(k)
            if by is None and eq.backward is not None:  # the printed gradient's own equations
                continue
            returned.update(j for j in eq.inputs if j in made_by and made_by[j] != by and j not in folded)
        return returned.intersection(order)

    def _taken_gradient(self, i: int, expr: str) -> tuple[str, str] | None:
        """(name, the call as written and its place) for a value a gradient call of the program
        returned: the program's name for it where the program binds it once at the top level,
        else one like it (`g_1`, `grad_1` where it has none)."""
        g = self.graph
        taken = g.made_by.get(i)
        hint = g.value_names.get(i, "grad")
        if expr.replace("_", "a").isalnum():  # already a name
            return None
        if g.names.get(hint) == i and hint not in self.own_names:
            self.own_names.add(hint)
            name = hint
        else:
            name = next(f"{hint}_{k}" for k in range(1, len(g.equations) + 2) if f"{hint}_{k}" not in self.reserved)
            self.reserved.add(name)
        by, pos = taken
        return name, f"{by} at {pos}" if pos is not None else by

    def _constant_flags(self, order: list[int]) -> dict[int, bool]:
        g = self.graph
        flags = {}
        for i in order:
            eq = g.equations[i]
            flags[i] = eq.op.name == "const" or (bool(eq.inputs) and all(flags[j] for j in eq.inputs))
        return flags

    def _fold(self, order, constant) -> dict[int, tuple[str, int]]:
        g = self.graph
        small = [i for i in order if constant[i] and math.prod(g.shapes[i]) <= FOLD_UP_TO]
        if not small:
            return {}
        with np.errstate(all="ignore"):
            values = run(g, small)
        out = {}
        for i in small:
            t = literal(values[i])
            out[i] = (t, _prec_of_literal(t))
        return out

    def _expression(self, i: int, text: dict) -> tuple[str, int]:
        g = self.graph
        eq = g.equations[i]
        op = eq.op.name
        args = [text[j] for j in eq.inputs]

        def wrap(arg, need):
            return arg[0] if arg[1] >= need else f"({arg[0]})"

        if op == "const":
            t = literal(eq.params["value"])
            return t, _prec_of_literal(t)
        sym, p = eq.op.symbol, eq.op.precedence
        if sym is not None and p is not None and len(args) == 1:  # a prefix operator: -x
            return f"{sym}{wrap(args[0], p + 1)}", p
        if sym is not None and p is not None:
            if sym == "**":  # binds tighter than a unary minus on its left, and to the right
                return f"{wrap(args[0], ATOM)} ** {wrap(args[1], UNARY)}", p
            right = args[1]
            opposite = OPPOSITES.get(op)
            if opposite is not None and right[0].startswith("-") and right[1] >= 3:  # a + -b*c is a - b*c
                sym = OPS[opposite].symbol
                right = (right[0][1:], right[1] if right[1] != UNARY else ATOM)
            return f"{wrap(args[0], p if p > 1 else 2)} {sym} {wrap(right, p + 1)}", p
        if op == "stack":  # the language's list literal
            return "[" + ", ".join(a[0] for a in args) + "]", ATOM
        if eq.op.prints_as is not None:  # text, or (text, precedence) where it is no atom
            printed = eq.op.prints_as(*(wrap(a, ATOM) for a in args), **eq.params)
            return printed if isinstance(printed, tuple) else (printed, ATOM)
        if op == "scatter":
            return self._scatter(eq, args[0]), ATOM
        name, defaults, given = eq.op.name, eq.op.params, eq.params
        plain = eq.op.simpler(**given) if eq.op.simpler is not None else None
        if plain is not None:  # the same op written simpler (sum_to a scalar is sum)
            name, given = plain
            defaults = OPS[name].params
        params = []
        if eq.op.sequence:  # `concatenate([a, b], axis=1)`: each sequence as a list
            counts = eq.params.get("counts") or (len(args),)
            starts = [sum(counts[:k]) for k in range(len(counts))]
            args = [("[" + ", ".join(a[0] for a in args[s:s + n]) + "]", ATOM) for s, n in zip(starts, counts)]
        for key, value in given.items():
            if value is None or (key in defaults and defaults[key] == value) or (eq.op.sequence and key == "counts"):
                continue
            if isinstance(value, str):
                params.append(f"{key}={value!r}")
            elif isinstance(value, bool):
                params.append(f"{key}={value}")
            elif isinstance(value, tuple):
                params.append(f"{key}=[{', '.join(str(v) for v in value)}]")
            else:
                params.append(f"{key}={value}")
        return f"{name}({', '.join([a[0] for a in args] + params)})", ATOM

    def _scatter(self, eq, arg) -> str:
        """scatter(g, shape, index): the array of `shape` holding g's elements where the index
        took them (summed where it took one twice) and 0 elsewhere, written as a list of
        `g[k]` items. Exact: no 0 * g product, so a NaN in g stays where it is."""

        shape = tuple(eq.params["shape"])
        n = math.prod(shape)
        if n > SELECTION_UP_TO:  # before anything of size n is made
            raise GradcliError(f"derive: the gradient of the indexing at {eq.pos} would print as a list of {n:,} "
                               "items, too many to be readable", eq.pos, self.graph.source)
        positions = np.arange(n).reshape(shape)[_index_tuple(eq.params["index"])].reshape(-1)
        g_shape = self.graph.shapes[eq.inputs[0]]
        atom = arg[0] if arg[0].replace("_", "a").isalnum() else f"({arg[0]})"
        if g_shape == ():
            element = [arg[0]]
        else:
            flat = atom if len(g_shape) == 1 else f"reshape({arg[0]}, [{positions.size}])"
            element = [f"{flat}[{k}]" for k in range(positions.size)]
        items = [[] for _ in range(n)]
        for k, position in enumerate(positions):
            items[position].append(element[k])
        listed = ", ".join(" + ".join(terms) if terms else "0.0" for terms in items)
        dims = ", ".join(str(d) for d in shape)
        return f"reshape([{listed}], [{dims}])"
