"""Fixes proven before they are shown.

For a diagnostic whose origin matches a known numerical trap (an overflowing or underflowing
softmax, `log(sum(exp(x)))`, `log(1 + exp(x))`, `log(sigmoid(x))`, `log(softmax(x))`, a
gradient through a `where` branch that is discarded, `sqrt` at 0, a division by 0), this
module writes candidate rewrites of the user's own text: the span of the expression and what
to put there, in the user's spelling and scope (the arguments are the source text at the
call, so inside a `def` they are the `def`'s names). A candidate becomes a fix only when
`verify` has run the rewritten program on the user's inputs (the same command: value, and
gradient when one was asked) and it is finite where the original was not and equal to
rounding wherever the original was finite. Nothing unverified is offered as code.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from gradcli.language import syntax as ast
from gradcli.errors import GradcliError
from gradcli.ir import Graph
from gradcli.ops import OPS
from gradcli.ops.table import Written
from gradcli.language.parser import parse_program


@dataclass(frozen=True)
class Fix:
    start: int            # character offsets of the span replaced, in the program's text
    end: int
    replacement: str
    verified: bool = True
    alternatives: tuple = ()  # other replacements of the same span, proven as well

    def to_json(self, text: str) -> dict:
        out = {"start": list(_line_column(text, self.start)), "end": list(_line_column(text, self.end)),
               "replacement": self.replacement, "verified": self.verified}
        if self.alternatives:
            out["alternatives"] = list(self.alternatives)
        return out

    def apply(self, text: str) -> str:
        return text[:self.start] + self.replacement + text[self.end:]


def _line_column(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


# ----------------------------------------------------------------------------- the program's text

class _Syntax:
    """The program's syntax nodes by their span, to read a call's arguments as written."""

    def __init__(self, graph: Graph):

        self.text = graph.source.text
        self.by_span: dict[tuple[int, int], ast.Node] = {}
        try:
            module = parse_program(graph.source)
        except GradcliError:
            return
        pending = []
        for stmt in module.statements:
            pending.append(stmt)
        while pending:  # a walk with a stack: no recursion over the program's depth
            item = pending.pop()
            if isinstance(item, ast.FuncDef):
                pending.extend(item.body)
                pending.extend(item.defaults.values())
            elif isinstance(item, (ast.Assign, ast.Unpack, ast.ExprStmt, ast.Return)):
                pending.append(item.value)
            elif isinstance(item, ast.Node):
                pos = item.pos
                if pos is not None and 0 <= pos.start < pos.end:
                    self.by_span.setdefault((pos.start, pos.end), item)
                pending.extend(ast.children(item))

    def node(self, graph: Graph, i: int):
        pos = graph.equations[i].pos
        if pos is None or pos.start < 0:
            return None
        return self.by_span.get((pos.start, pos.end))

    def source(self, node) -> str:
        return self.text[node.pos.start:node.pos.end]

    def argument(self, graph: Graph, i: int, k: int = 0) -> str | None:
        """The text of argument k of the call that computed value i (`exp(z)` -> `z`)."""
        node = self.node(graph, i)
        if not isinstance(node, ast.Call) or len(node.args) <= k:
            return None
        arg = node.args[k]
        if arg.pos is None or arg.pos.start < 0:
            return None
        return self.text[slice(*_balanced(self.text, arg.pos.start, arg.pos.end))]


def _balanced(text: str, start: int, end: int) -> tuple[int, int]:
    """The span widened over the parentheses it opens or closes: an expression's span stops
    inside a parenthesised last operand (`1 / (x - 1)` ends before its `)`)."""
    depth = 0
    for ch in text[start:end]:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
    while depth > 0 and end < len(text):
        if text[end] == ")":
            depth -= 1
        elif not text[end].isspace():
            break
        end += 1
    while depth < 0 and start > 0:
        if text[start - 1] == "(":
            depth += 1
        elif not text[start - 1].isspace():
            break
        start -= 1
    return start, end


def _operand(text: str) -> str:
    """Parenthesised unless it is a name, a number or a call."""
    simple = text.replace("_", "a").replace(".", "a").isalnum() or (
        text.endswith(")") and text.split("(", 1)[0].replace("_", "a").replace(".", "a").isalnum()
        and text.count("(") == 1)
    return text if simple else f"({text})"


def _axis_words(params: dict, ndim: int, default_last: bool) -> str | None:
    """`, axis=k` for a reduction's axis, as the rewrite must keep it; None where it cannot."""
    axis = params.get("axis")
    if axis is None:
        return "" if (ndim <= 1 or not default_last) else None
    if isinstance(axis, tuple):
        if len(axis) != 1:
            return None
        axis = axis[0]
    return f", axis={axis}"


# ----------------------------------------------------------------------------- candidates
# What is known of one op (the argument to guard in a where branch, a fix at its pole or where
# its slope is infinite, the stable function of it and its argument) is a field of its record
# in gradcli/ops/__init__.py; the rules that name ops here match patterns of several (a softmax written
# out, log(sum(exp(a))), log(1 + exp(a))).

@dataclass(frozen=True)
class Candidate:
    start: int
    end: int
    replacement: str


class _Finder:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.syntax = _Syntax(graph)
        consumers: dict[int, list[int]] = {}
        for k, e in enumerate(graph.equations):
            if e.backward is None:
                for j in e.inputs:
                    consumers.setdefault(j, []).append(k)
        self.consumers = consumers
        twins: dict[tuple, list[int]] = {}
        for k, e in enumerate(graph.equations):
            if e.inputs and e.backward is None:
                twins.setdefault((e.op.name, e.inputs, repr(sorted(e.params.items()))), []).append(k)
        self._twins = twins

    def op(self, i: int) -> str:
        return self.graph.equations[i].op.name

    def span(self, i: int) -> tuple[int, int] | None:
        pos = self.graph.equations[i].pos
        if pos is None or not 0 <= pos.start < pos.end:
            return None
        return pos.start, pos.end

    def used_by(self, i: int, name: str) -> list[int]:
        """The consumers of value i, or of the same computation written again, that are `name`."""
        return [k for j in self.twins(i) for k in self.consumers.get(j, []) if self.op(k) == name]

    def twins(self, i: int) -> list[int]:
        """Value i and the equations computing the same thing (`exp(x) / sum(exp(x))`)."""
        eq = self.graph.equations[i]
        key = (eq.op.name, eq.inputs, repr(sorted(eq.params.items())))
        return self._twins.get(key, [i])

    def same(self, a: int, b: int) -> bool:
        return a == b or b in self.twins(a)

    def candidates(self, i: int, kind: str | None = None) -> list[Candidate]:
        """Rewrites for the diagnostic of `kind` whose origin is value i."""
        g = self.graph
        eq = g.equations[i]
        if eq.backward is not None:
            return self._gradient(g.equations[eq.backward], eq.backward)
        found: list[Candidate] = []
        for rule in (self._softmax, self._log_of_sum_of_exp, self._log_of_one_plus_exp, self._stable_forms):
            found += rule(i)
        found += self._pole_fix(i, kind)
        return found

    def _make(self, i: int, replacement: str | None) -> list[Candidate]:
        span = self.span(i)
        if span is None or replacement is None:
            return []
        return [Candidate(*_balanced(self.graph.source.text, *span), replacement)]

    # --- softmax written out: exp(a) / sum(exp(a), axis, keepdims)
    def _softmax(self, i: int) -> list[Candidate]:
        divides = [i] if self.op(i) == "divide" else self.used_by(i, "divide")
        out = []
        for d in divides:
            top, bottom = self.graph.equations[d].inputs
            if self.op(top) != "exp" or self.op(bottom) != "sum" or not self.same(top, self.graph.equations[bottom].inputs[0]):
                continue
            a = self.syntax.argument(self.graph, top)
            if a is None:
                continue
            params = self.graph.equations[bottom].params
            ndim = len(self.graph.shapes[top])
            axis = _axis_words(params, ndim, default_last=True)
            # first the user's own formula with the maximum subtracted, then the library's name
            shift_axis = "" if params.get("axis") is None else f", axis={params['axis']}, keepdims=True"
            shifted = f"exp({_operand(a)} - stop_gradient(max({a}{shift_axis})))"
            keep = ", keepdims=True" if params.get("keepdims") else ""
            sum_axis = "" if params.get("axis") is None else f", axis={params['axis']}"
            out += self._make(d, f"{shifted} / sum({shifted}{sum_axis}{keep})")
            if axis is not None and (params.get("keepdims") or ndim <= 1 or params.get("axis") is None):
                out += self._make(d, f"softmax({a}{axis})")
        return out

    # --- log(sum(exp(a))) -> logsumexp(a)
    def _log_of_sum_of_exp(self, i: int) -> list[Candidate]:
        out = []
        for s in ([i] if self.op(i) == "sum" else self.used_by(i, "sum") if self.op(i) == "exp" else []):
            inner = self.graph.equations[s].inputs[0]
            if self.op(inner) != "exp":
                continue
            a = self.syntax.argument(self.graph, inner)
            params = self.graph.equations[s].params
            if a is None:
                continue
            extra = "" if params.get("axis") is None else f", axis={params['axis']}"
            extra += ", keepdims=True" if params.get("keepdims") else ""
            for lg in self.used_by(s, "log"):
                out += self._make(lg, f"logsumexp({a}{extra})")
        if self.op(i) == "log":
            inner = self.graph.equations[i].inputs[0]
            if self.op(inner) == "sum":
                for c in self._log_of_sum_of_exp(inner):
                    out.append(c)
        return out

    # --- log(1 + exp(a)), log(exp(a) + 1), log1p(exp(a)) -> softplus(a)
    def _log_of_one_plus_exp(self, i: int) -> list[Candidate]:
        g = self.graph
        exps = [i] if self.op(i) == "exp" else []
        if self.op(i) in ("log", "log1p"):
            inner = g.equations[i].inputs[0]
            exps = [inner] if self.op(inner) == "exp" else [j for j in g.equations[inner].inputs
                                                            if self.op(j) == "exp"] if self.op(inner) == "add" else []
        out = []
        for e in exps:
            a = self.syntax.argument(g, e)
            if a is None:
                continue
            for lp in self.used_by(e, "log1p"):
                out += self._make(lp, f"softplus({a})")
            for add in self.used_by(e, "add"):
                other = [j for j in g.equations[add].inputs if j != e]
                if len(other) == 1 and g.scalar_constant(other[0]) == 1.0:
                    for lg in self.used_by(add, "log"):
                        out += self._make(lg, f"softplus({a})")
        return out

    # --- a record's stable_forms: log(sigmoid(a)) -> log_sigmoid(a), log(softmax(a)) -> log_softmax(a)
    def _stable_forms(self, i: int) -> list[Candidate]:
        out = []
        for outer in OPS.values():
            for inner_op, better in outer.stable_forms.items():
                out += self._rewrite_of(i, outer.name, inner_op, better)
        return out

    def _rewrite_of(self, i: int, outer: str, inner_op: str, better: str) -> list[Candidate]:
        g = self.graph
        calls = [i] if self.op(i) == outer else self.used_by(i, outer) if self.op(i) == inner_op else []
        out = []
        for lg in calls:
            inner = g.equations[lg].inputs[0]
            if self.op(inner) != inner_op:
                continue
            a = self.syntax.argument(g, inner)
            if a is None:
                continue
            axis = g.equations[inner].params.get("axis", -1)
            extra = "" if axis in (-1, None) else f", axis={axis}"
            out += self._make(lg, f"{better}({a}{extra})")
        return out

    def _written(self, i: int, kind: str | None = None, underflowed: bool = False) -> Written | None:
        """The call that computed value i as written (its arguments' text), or None."""
        texts = [self.syntax.argument(self.graph, i, k) for k in range(len(self.graph.equations[i].inputs))]
        if not texts or None in texts:
            return None
        return Written(tuple(texts), tuple(_operand(t) for t in texts), kind, underflowed)

    # --- off a pole: the record's pole_fix (a / b with b reaching 0, log at 0)
    def _pole_fix(self, i: int, kind: str | None) -> list[Candidate]:
        eq = self.graph.equations[i]
        if eq.op.pole_fix is None or eq.op.pole is None:
            return []
        # a 0 that is a nonzero number underflowed is not 0: a guard would change the answer
        underflowed = self.graph.equations[eq.inputs[eq.op.pole[0]]].op.underflows is not None
        call = self._written(i, kind, underflowed)
        return self._make(i, None if call is None else eq.op.pole_fix(call))

    # --- a gradient that is not finite
    def _gradient(self, forward, f: int) -> list[Candidate]:
        """The where trap: f's value is discarded by a where, its gradient is not: compute f on
        safe inputs in the discarded places. And sqrt at 0, whose slope is infinite."""
        g = self.graph
        out = []
        k = forward.op.where_trap
        where, branch = self._reaches_where(f)
        node = self.syntax.node(g, f)
        if where is not None and k is not None and isinstance(node, ast.Call) and len(node.args) > k:
            condition = self.syntax.argument(g, where, 0)
            arg = node.args[k]
            if condition is not None and arg.pos is not None and arg.pos.start >= 0:
                start, end = _balanced(self.syntax.text, arg.pos.start, arg.pos.end)
                text = self.syntax.text[start:end]
                safe = f"where({condition}, {text}, 1.0)" if branch == 1 else f"where({condition}, 1.0, {text})"
                out.append(Candidate(start, end, safe))
        if forward.op.slope_fix is not None:
            call = self._written(f)
            if call is not None:
                out += self._make(f, forward.op.slope_fix(call))
        return out

    def _reaches_where(self, f: int, depth: int = 8) -> tuple[int | None, int]:
        """The where that value f flows into through elementwise ops, and which branch."""
        frontier = f
        for _ in range(depth):
            for c in self.consumers.get(frontier, []):
                selects = self.graph.equations[c].op.selects
                inputs = self.graph.equations[c].inputs
                for k in selects:
                    if inputs[k] == frontier:
                        return c, k
            nxt = [c for c in self.consumers.get(frontier, []) if self.graph.equations[c].op.elementwise]
            if len(nxt) != 1:
                return None, 0
            frontier = nxt[0]
        return None, 0


# ----------------------------------------------------------------------------- verification

def agrees(original: dict, rewritten: dict) -> bool:
    """Finite wherever the original was not (somewhere), and equal to rounding wherever the
    original was finite: the rewrite changes no number the user already had."""
    improved = False
    for key, a in original.items():
        b = rewritten.get(key)
        if a is None:
            continue
        if b is None:
            return False
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            return False
        finite_a, finite_b = np.isfinite(a), np.isfinite(b)
        if np.any(finite_a & ~finite_b):
            return False
        if np.any(finite_a):
            scale = float(np.max(np.abs(a[finite_a])))
            if not np.allclose(b[finite_a], a[finite_a], rtol=1e-9, atol=1e-12 * scale):
                return False
        improved = improved or bool(np.any(~finite_a & finite_b))
    return improved


def find_fixes(graph: Graph, origins: list[tuple[int, str]], original: Callable[[], dict | None],
               rerun: Callable[[str], dict | None], limit: int | None = None) -> list[list[Fix]]:
    """For each diagnostic origin (value id, kind), the candidate rewrites that `rerun` (the
    same command on the rewritten text, returning its numbers or None where it fails) proves:
    the first one at each place where the origin is written (`exp(x)` may stand in a softmax
    and in a log-sum-exp). `original()` gives the numbers to keep, computed only if there is
    a candidate to try. `limit` is where the user's own text ends (a --call after it is not
    rewritten)."""
    finder = _Finder(graph)
    text = graph.source.text
    end = len(text) if limit is None else limit
    offered = [[c for c in finder.candidates(i, kind) if c.end <= end] for i, kind in origins]
    numbers = original() if any(offered) else None
    if numbers is None:
        return [[] for _ in origins]
    tried: dict[Candidate, bool] = {}

    def proven(cand: Candidate) -> bool:
        if cand not in tried:
            rewritten = rerun(text[:cand.start] + cand.replacement + text[cand.end:])
            tried[cand] = rewritten is not None and agrees(numbers, rewritten)
        return tried[cand]

    out: list[list[Fix]] = []
    for candidates in offered:
        chosen: list[Fix] = []
        for k, cand in enumerate(candidates):
            if any(cand.start < f.end and f.start < cand.end for f in chosen) or not proven(cand):
                continue
            others = tuple(c.replacement for c in candidates[k + 1:]
                           if (c.start, c.end) == (cand.start, cand.end) and proven(c))
            chosen.append(Fix(cand.start, cand.end, cand.replacement, alternatives=others))
        out.append(chosen)
    return out


def apply_all(text: str, fixes: list[Fix]) -> str:
    """The text with every fix applied; where two overlap, the first one found wins."""
    taken: list[Fix] = []
    for fix in fixes:
        if all(fix.end <= t.start or fix.start >= t.end for t in taken):
            taken.append(fix)
    for fix in sorted(taken, key=lambda f: f.start, reverse=True):
        text = fix.apply(text)
    return text
