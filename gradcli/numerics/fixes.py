"""Fixes proven before they are shown.

For a diagnostic whose origin matches a known numerical trap (an overflowing or underflowing
softmax, `log(sum(exp(x)))`, `log(1 + exp(x))`, `log(sigmoid(x))`, the log of a softmax whole or
subscripted, a gradient through a `where` branch that is discarded, `sqrt` at 0, a division by
0), this module writes candidate rewrites of the user's own text: the span of the expression and
what to put there, in the user's spelling and scope (the arguments are the source text at the
call, so inside a `def` they are the `def`'s names). A candidate becomes a fix only when the
rewritten program, run on the user's inputs (the same command: values, every name, and
gradients when asked), keeps every number that was finite and right, and gives the exact number
(gradcli.numerics.exactness: an extended-precision evaluation) wherever the original was not
finite or was wrong. All candidates are proven together, halving a set that fails. A guard (a
cap at a pole) changes the numbers: it is named as what it is, never as a fix.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from gradcli.language import syntax as ast
from gradcli.errors import GradcliError
from gradcli.ir import Graph
from gradcli.numerics.diagnostics import NONFINITE_KINDS
from gradcli.numerics.exactness import Exact, Progress, Setting, Verdict, judge
from gradcli.numerics.hints import HINTS, Written, hints_of
from gradcli.numerics.explain import consumers_of
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
        pending = list(module.statements)
        while pending:  # a walk with a stack: no recursion over the program's depth
            item = pending.pop()
            if isinstance(item, ast.Node):
                pos = item.pos
                if pos is not None and 0 <= pos.start < pos.end:
                    self.by_span.setdefault((pos.start, pos.end), item)
                # (a lambda's body is a def's: its statements hold the calls a rewrite reads)
                pending.extend(ast.children(item) if not isinstance(item, ast.Lambda) else [item.fn])
            else:  # a statement: its expressions and inner statements (a def's, a tape's block, a loop's)
                pending.extend(ast.statement_parts(item))

    def node(self, graph: Graph, i: int):
        pos = graph.equations[i].pos  # (a span with no place in the text, start < 0, is never kept)
        return None if pos is None else self.by_span.get((pos.start, pos.end))

    def argument(self, graph: Graph, i: int, k: int = 0) -> str | None:
        """The text of argument k of the call that computed value i (`exp(z)` -> `z`)."""
        node = self.node(graph, i)
        if isinstance(node, ast.Call) and not node.args and k == 0 and "." in node.func:
            return node.func.rsplit(".", 1)[0]  # `x.softmax(dim=1)`: a method of a name, read as one name
        if not isinstance(node, ast.Call) or len(node.args) <= k:
            return None
        arg = node.args[k]
        if arg.pos is None or arg.pos.start < 0:
            return None
        return self.text[slice(*_balanced(self.text, arg.pos.start, arg.pos.end))]


def _balanced(text: str, start: int, end: int) -> tuple[int, int]:
    """The span widened over the parentheses it opens or closes: an expression's span stops
    inside a parenthesised last operand (`1 / (x - 1)` ends before its `)`)."""
    depth = text.count("(", start, end) - text.count(")", start, end)
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


# ----------------------------------------------------------------------------- the program's library
# A fix is written in the library the program spells at that place (pasted back into the real
# script it must run there): `{m}` is the module as the program names it, `{a}` the argument,
# `{k}` the axis, `{kd}` keepdims. Forms needing a module the program does not bind are absent.
_NUMPY_MAX = "{m}.max({a}, axis={k}, keepdims=True)"
_NUMPY_SHIFTED = f"{{m}}.exp({{o}} - {_NUMPY_MAX})"
LIBRARY_FORMS = {
    "torch": {"softmax": "torch.softmax({a}, dim={k})", "log_softmax": "torch.log_softmax({a}, dim={k})",
              "logsumexp": "torch.logsumexp({a}, dim={k}{kd})", "softplus": "torch.nn.functional.softplus({a})",
              "log_sigmoid": "torch.nn.functional.logsigmoid({a})", "ones": "torch.ones_like({a})",
              "sigmoid": "torch.sigmoid({a})"},
    "tf": {"softmax": "{m}.nn.softmax({a}, axis={k})", "log_softmax": "{m}.nn.log_softmax({a}, axis={k})",
           "logsumexp": "{m}.math.reduce_logsumexp({a}, axis={k}{kd})", "softplus": "{m}.nn.softplus({a})",
           "log_sigmoid": "{m}.math.log_sigmoid({a})", "ones": "{m}.ones_like({a})", "sigmoid": "{m}.sigmoid({a})"},
    "jax": {"softmax": "jax.nn.softmax({a}, axis={k})", "log_softmax": "jax.nn.log_softmax({a}, axis={k})",
            "logsumexp": "jax.nn.logsumexp({a}, axis={k}{kd})", "softplus": "jax.nn.softplus({a})",
            "log_sigmoid": "jax.nn.log_sigmoid({a})", "ones": "1.0", "sigmoid": "jax.nn.sigmoid({a})"},
    "numpy": {"softmax": f"{_NUMPY_SHIFTED} / {{m}}.sum({_NUMPY_SHIFTED}, axis={{k}}, keepdims=True)",
              "log_softmax": f"({{o}} - {_NUMPY_MAX} - {{m}}.log({{m}}.sum({_NUMPY_SHIFTED}, axis={{k}}, "
                             f"keepdims=True)))",
              "logsumexp": f"({{m}}.log({{m}}.sum({_NUMPY_SHIFTED}, axis={{k}}{{kd}})) + "
                           f"{{m}}.max({{a}}, axis={{k}}{{kd}}))",
              "softplus": "{m}.logaddexp(0, {a})", "log_sigmoid": "-{m}.logaddexp(0, -{o})", "ones": "1.0",
              "sigmoid": "{m}.exp(-{m}.logaddexp(0, -{o}))"},
}
_ALIASES = {"torch": "torch", "F": "torch", "tf": "tf", "tensorflow": "tf", "jax": "jax", "jnp": "jax",
            "np": "numpy", "numpy": "numpy", "scipy": "numpy"}


def _bound(text: str, module: str) -> str | None:
    """The name `import MODULE [as NAME]` binds in the program, if it does."""
    found = re.search(rf"^[ \t]*import[ \t]+{re.escape(module)}(?:[ \t]+as[ \t]+(\w+))?[ \t]*(?:#.*)?$", text,
                      re.MULTILINE)
    return None if found is None else (found.group(1) or module)


def _library_of(text: str, spelled: str | None) -> tuple[str, str] | None:
    """(library, the name its module goes by) of a call spelled `np.log`, `torch.log`, ...;
    None for gradcli's own names, or where the forms would need a name the program lacks."""
    first = (spelled or "").split(".")[0]
    library = _ALIASES.get(first) if spelled and "." in spelled else None
    if library == "torch":
        return ("torch", "torch") if _bound(text, "torch") else None
    if library == "tf":
        return ("tf", first) if first != "tf" or _bound(text, "tensorflow") == "tf" else None
    if library == "jax":
        if _bound(text, "jax") == "jax":
            return "jax", _bound(text, "jax.numpy") or "jax.numpy"
        module = _bound(text, "jax.numpy")
        return ("numpy", module) if module else None
    if library == "numpy":
        module = first if first != "scipy" else _bound(text, "numpy")
        return ("numpy", module) if module else None
    return None


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
    # None: the same mathematics computed stably (a fix, once proven); else a guard, and what it
    # does to the numbers in words: never a fix where it changes a number the program means
    guard: str | None = field(default=None, compare=False)


class _Finder:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.syntax = _Syntax(graph)
        self.consumers = consumers_of(graph)
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
        found: list[Candidate] = []
        if eq.backward is not None:  # a gradient: its own rewrites, then the stable forms of its value
            found = self._gradient(g.equations[eq.backward], eq.backward)
            i = eq.backward
        for rule in (self._softmax, self._log_of_softmax, self._log_of_sum_of_exp, self._log_of_one_plus_exp,
                     self._stable_forms, self._sigmoid):
            found += rule(i)
        if eq.backward is None:
            found += self._pole_fix(i, kind)
            # a NaN or an infinity a where discards, whose gradient the where does not (sqrt(-1),
            # exp(100) in float32): the same rewrite as for the gradient's own origin
            found += self._where_trap(eq, i)
        return found

    def _spelled(self, site: int, form: str, a: str, axis=-1, keepdims: bool = False, ndim: int = 1) -> str | None:
        """`form` ("softplus", "logsumexp", ...) of `a` in the library the call at `site` spells."""
        node = self.syntax.node(self.graph, site)
        spelled = node.func if isinstance(node, ast.Call) and not node.method else None
        if isinstance(node, ast.Call) and node.method and _bound(self.syntax.text, "torch"):
            spelled = "torch.method"  # `p.log()` in a PyTorch program
        library = _library_of(self.syntax.text, spelled)
        if isinstance(axis, tuple):
            axis = axis[0] if len(axis) == 1 else "many"
        if library is None or axis == "many" or (axis is None and ndim > 1):
            return None
        k = -1 if axis is None else axis
        template = LIBRARY_FORMS[library[0]][form]
        kd = (", keepdim=True" if library[0] == "torch" else ", keepdims=True") if keepdims else ""
        return template.format(m=library[1], a=a, o=_operand(a), k=k, kd=kd)

    def _make(self, i: int, replacement: str | None, guard: str | None = None) -> list[Candidate]:
        span = self.span(i)
        if span is None or replacement is None:
            return []
        return [Candidate(*_balanced(self.graph.source.text, *span), replacement, guard)]

    # --- log of a softmax, whole or subscripted (the naive cross-entropy): log(p[i, t]) with
    # p = softmax(a) or exp(a) / sum(exp(a)) -> log_softmax(a)[i, t]
    def _log_of_softmax(self, i: int) -> list[Candidate]:
        logs = [i] if self.op(i) == "log" else []
        starts = [i] if self.op(i) in ("exp", "softmax") else []
        for s in starts:  # from an overflowing exp or a softmax, forward to the logs of it
            tops = self.used_by(s, "divide") if self.op(s) == "exp" else [s]
            for t in tops:
                logs += self.used_by(t, "log")
                logs += [k for j in self.used_by(t, "index") for k in self.used_by(j, "log")]
        out = []
        for lg in dict.fromkeys(logs):
            inner = self.graph.equations[lg].inputs[0]
            suffix = ""
            if self.op(inner) == "index":
                suffix = self._subscript_text(lg)
                if suffix is None:
                    continue
                inner = self.graph.equations[inner].inputs[0]
            for stable in (self._log_softmax_text(inner, lg), self._log_softmax_text(inner)):
                if stable is not None:
                    out += self._make(lg, f"{stable}{suffix}" if not suffix or stable.endswith(")") else
                                      f"({stable}){suffix}")
        return out

    def _subscript_text(self, lg: int) -> str | None:
        """`[1, 2]` of `log(p[1, 2])`: the subscript as the user wrote it."""
        node = self.syntax.node(self.graph, lg)
        if not isinstance(node, ast.Call) or not node.args or not isinstance(node.args[0], ast.Index):
            return None
        index = node.args[0]
        target = index.target.pos
        if target is None or index.pos is None or target.start < 0:
            return None
        end = _balanced(self.syntax.text, target.start, target.end)[1]
        suffix = self.syntax.text[end:index.pos.end].strip()
        return suffix if suffix.startswith("[") and suffix.endswith("]") else None

    def _log_softmax_text(self, s: int, site: int | None = None) -> str | None:
        """log of value s, s a softmax (called, or written out), as a stable call (with `site`,
        in the library the call there spells)."""
        g = self.graph
        if self.op(s) == "softmax":
            a = self.syntax.argument(g, s)
            axis = g.equations[s].params.get("axis", -1)
            if a is None or site is not None:
                return None if a is None else self._spelled(site, "log_softmax", a, axis, ndim=len(g.shapes[s]))
            return f"log_softmax({a}{'' if axis in (-1, None) else f', axis={axis}'})"
        if self.op(s) != "divide":
            return None
        top, bottom = g.equations[s].inputs
        if self.op(top) != "exp" or self.op(bottom) != "sum" or not self.same(top, g.equations[bottom].inputs[0]):
            return None
        a = self.syntax.argument(g, top)
        params = g.equations[bottom].params
        if a is None or not (params.get("keepdims") or len(g.shapes[top]) <= 1 or params.get("axis") is None):
            return None
        axis = params.get("axis")
        if site is not None:
            return self._spelled(site, "log_softmax", a, axis, ndim=len(g.shapes[top]))
        if axis is None and len(g.shapes[top]) > 1:  # a softmax over every element
            return f"({_operand(a)} - logsumexp({a}))"
        if isinstance(axis, tuple):
            if len(axis) != 1:
                return None
            axis = axis[0]
        return f"log_softmax({a}{'' if axis in (-1, None) else f', axis={axis}'})"

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
            if params.get("keepdims") or ndim <= 1:
                out += self._make(d, self._spelled(top, "softmax", a, params.get("axis"), ndim=ndim))
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
                out += self._make(lg, self._spelled(lg, "logsumexp", a, params.get("axis"), bool(params.get("keepdims")),
                                                    len(self.graph.shapes[inner])))
                out += self._make(lg, f"logsumexp({a}{extra})")
        if self.op(i) == "log":
            inner = self.graph.equations[i].inputs[0]
            if self.op(inner) == "sum":
                out += self._log_of_sum_of_exp(inner)
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
            sites = self.used_by(e, "log1p")
            for add in self.used_by(e, "add"):
                other = [j for j in g.equations[add].inputs if j != e]
                if len(other) == 1 and g.scalar_constant(other[0]) == 1.0:
                    sites += self.used_by(add, "log")
            for lg in sites:
                out += self._make(lg, self._spelled(lg, "softplus", a)) + self._make(lg, f"softplus({a})")
        return out

    # --- 1 / (1 + exp(-a)), the sigmoid spelled out, whose exp overflows at a large negative a -> sigmoid(a)
    def _sigmoid(self, i: int) -> list[Candidate]:
        g, out = self.graph, []
        a = self.syntax.argument(g, i) if self.op(i) == "exp" else None
        if a is None or not a.startswith("-") or self.op(g.equations[i].inputs[0]) != "negative":
            return out
        a = a[1:].strip()
        for add in self.used_by(i, "add"):
            other = [j for j in g.equations[add].inputs if j != i]
            if len(other) == 1 and g.scalar_constant(other[0]) == 1.0:
                for div in self.used_by(add, "divide"):
                    one = g.equations[div].inputs[0]
                    if g.equations[div].inputs[1] == add and g.scalar_constant(one) == 1.0:
                        out += self._make(div, self._spelled(i, "sigmoid", a)) + self._make(div, f"sigmoid({a})")
        return out

    # --- an op's stable_forms (gradcli/numerics/hints.py): log(sigmoid(a)) -> log_sigmoid(a), log(softmax(a)) -> ...
    def _stable_forms(self, i: int) -> list[Candidate]:
        out = []
        for outer, hints in HINTS.items():
            for inner_op, better in hints.stable_forms.items():
                out += self._rewrite_of(i, outer, inner_op, better)
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
            if better in LIBRARY_FORMS["numpy"]:
                out += self._make(lg, self._spelled(lg, better, a, axis, ndim=len(g.shapes[inner])))
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
        hints = hints_of(eq.op)
        if hints.pole_fix is None or hints.pole is None:
            return []
        # a 0 that is a nonzero number underflowed is not 0: a guard would change the answer
        underflowed = self.graph.equations[eq.inputs[hints.pole[0]]].op.underflows is not None
        call = self._written(i, kind, underflowed)
        guard = (f"a cap that keeps {eq.label} off its pole (where {hints.pole[1]}): it changes the value "
                 f"there and stops the gradient there")
        return self._make(i, None if call is None else hints.pole_fix(call), guard)

    # --- a gradient that is not finite
    def _gradient(self, forward, f: int) -> list[Candidate]:
        """The where trap: f's value is discarded by a where, its gradient is not: compute f on
        safe inputs in the discarded places. And sqrt at 0, whose slope is infinite."""
        out = self._where_trap(forward, f)
        hints = hints_of(forward.op)
        # (a sqrt inside another op's rule, a norm's, is not the call written: its text is no sqrt's argument)
        if hints.slope_fix is not None and forward.label.rsplit(".", 1)[-1] == forward.op.name:
            call = self._written(f)
            if call is not None:
                guard = (f"a guard that sets the gradient of {forward.label} to 0 where its slope is infinite: it "
                         f"changes the gradient there")
                out += self._make(f, hints.slope_fix(call), guard)
        return out

    def _where_trap(self, forward, f: int) -> list[Candidate]:
        """f's value is discarded by a where, its gradient is not: f computed on safe inputs
        in the discarded places (the double where)."""
        g = self.graph
        out = []
        k = hints_of(forward.op).where_trap
        where, branch = self._reaches_where(f)
        node = self.syntax.node(g, f)
        if where is not None and k is not None and isinstance(node, ast.Call) and len(node.args) > k:
            condition = self.syntax.argument(g, where, 0)
            arg = node.args[k]
            if condition is not None and arg.pos is not None and arg.pos.start >= 0:
                start, end = _balanced(self.syntax.text, arg.pos.start, arg.pos.end)
                text = self.syntax.text[start:end]
                for spelled in (self._where_spelled(where), ("where", "1.0")):
                    if spelled is not None:
                        name, one = spelled[0], spelled[1].format(a=text)
                        safe = f"{name}({condition}, {text}, {one})" if branch == 1 else \
                            f"{name}({condition}, {one}, {text})"
                        out.append(Candidate(start, end, safe))
        return out

    def _where_spelled(self, where: int) -> tuple[str, str] | None:
        """(the where function, the safe value's form) as the program's `where` call spells them."""
        node = self.syntax.node(self.graph, where)
        library = _library_of(self.syntax.text, node.func if isinstance(node, ast.Call) else None)
        if library is None:
            return None
        name = "torch" if library[0] == "torch" else library[1]
        return f"{name}.where", LIBRARY_FORMS[library[0]]["ones"].replace("{m}", library[1])

    def _reaches_where(self, f: int, depth: int = 8) -> tuple[int | None, int]:
        """The where that value f flows into through elementwise ops, and which branch."""
        frontier = f
        for _ in range(depth):
            for c in self.consumers.get(frontier, []):
                selects = hints_of(self.graph.equations[c].op).selects
                inputs = self.graph.equations[c].inputs
                for k in selects:
                    if inputs[k] == frontier:
                        return c, k
            nxt = [c for c in self.consumers.get(frontier, []) if self.graph.equations[c].op.elementwise]
            if len(nxt) != 1:
                return None, 0
            frontier = nxt[0]
        return None, 0


# ----------------------------------------------------------------------------- proving together

@dataclass
class Outcome:
    """For one diagnostic: the fixes proven (each place it is written), or why there is none,
    and the guards known for it with what they would change."""
    fixes: list
    reason: str | None = None
    guards: list = field(default_factory=list)   # (Candidate, what it would change)
    together: int = 0        # the fixes proven with it (it was proven in their company)
    corrected: list = field(default_factory=list)
    beyond: int = 0


class Prover:
    """Sets of rewrites proven together: the text with all of them, run once, judged element by
    element; a set that fails is halved until each rewrite at fault is found (a few runs for
    hundreds of places, not one run each)."""

    def __init__(self, text: str, numbers_of: Callable, setting: Setting):
        self.text = text
        self.numbers_of = numbers_of   # (program, memory budget in bytes) -> {key: array}; raises GradcliError
        self.setting = setting
        self.original: dict | None = None
        self.exact = Exact(setting, self._held)
        self.progress = self.exact.progress = Progress()
        self.runs = 0

    def _held(self) -> int:
        return sum(getattr(v, "nbytes", 0) for v in (self.original or {}).values())

    def budget(self) -> int:
        return self.setting.limit - self._held() - self.exact.bytes

    def start(self) -> str | None:
        self.progress.step("the program again, for the numbers a rewrite must keep")
        try:
            self.original = self.numbers_of(self.text, self.setting.limit)
        except MemoryError:
            return "proving a rewrite needs more memory than this machine has"
        except GradcliError as err:
            return f"the program could not be run again to prove a rewrite ({err.message})"
        return None

    def verdict(self, chosen: list[Candidate]) -> Verdict:
        self.runs += 1
        self.progress.step(f"run {self.runs}, {len(chosen)} rewrite{'s' * (len(chosen) != 1)} together")
        program = apply_all(self.text, [Fix(c.start, c.end, c.replacement) for c in chosen])
        budget = self.budget()
        try:
            if budget <= 0:
                raise MemoryError
            numbers = self.numbers_of(program, budget)
        except (MemoryError, GradcliError) as err:
            if isinstance(err, GradcliError) and getattr(err, "option", None) != "max_memory":
                return Verdict(False, f"the rewritten program fails: {err.message}")
            return Verdict(False, "proving it needs more memory than --max-memory leaves beside the original numbers")
        return judge(self.original, numbers, self.exact, self.setting.dtype, all(c.guard is None for c in chosen))

    def harmless(self, base: list[Candidate], trial: list[Candidate]) -> tuple[list, dict]:
        """The rewrites of `trial` that do no harm on top of `base`, and why each other one
        is refused: the whole set first, then halves of a set that fails."""
        accepted: list[Candidate] = []
        refused: dict[Candidate, str] = {}
        pending = [trial]
        while pending:
            group = pending.pop(0)
            verdict = self.verdict(base + accepted + group)
            if verdict.ok:
                accepted += group
            elif len(group) == 1:
                refused[group[0]] = verdict.why
            else:
                half = len(group) // 2
                pending[:0] = [group[:half], group[half:]]
        return accepted, refused


def prove(graph: Graph, origins: list[tuple[int, str]], reaches: Callable[[], list[set]], numbers_of: Callable,
          setting: Callable[[], Setting], limit: int | None = None, alternatives: bool = True) -> list[Outcome]:
    """For each diagnostic origin (value id, kind), the rewrites proven on these inputs (all of
    them together): finite where the original was not and there equal to the exact numbers,
    equal to the exact numbers where the original was finite but wrong, the same numbers
    elsewhere. `reaches()[k]`: the keys origin k makes not finite (known once the original
    numbers are); `setting()`: what the exact numbers are computed from. `limit`: where the
    user's own text ends (a --call after it is not rewritten)."""
    finder = _Finder(graph)
    text = graph.source.text
    end = len(text) if limit is None else limit
    offered = [[c for c in finder.candidates(i, kind) if c.end <= end] for i, kind in origins]
    outcomes = [Outcome([], None if o else NONE_KNOWN) for o in offered]
    if not any(offered):
        return outcomes
    prover = Prover(text, numbers_of, setting())
    try:
        failed = prover.start()
        if failed is not None:
            for outcome, o in zip(outcomes, offered):
                if o:
                    outcome.reason = failed
            return outcomes
        _prove_sites(prover, offered, reaches(), outcomes, alternatives)
    finally:
        prover.progress.done()
    return outcomes


NONE_KNOWN = "no rewrite is known for it"
GUARD_PASSED = ("its numbers pass on these inputs, but only against differences taken across the point, which "
                "average the two sides of a kink: the mathematics has no value there for it to be proven by")


def _sites(offered: list[list[Candidate]]):
    """The places to rewrite, in the order found: span -> (its rewrites in order, the origins)."""
    sites: dict[tuple[int, int], tuple[list, set]] = {}
    # (the places of rewrites that keep the mathematics first: a guard over the same text, never a
    # fix, must not take the place of the where trap's rewrite inside it)
    found = [(k, c) for k, candidates in enumerate(offered) for c in candidates]
    for k, c in sorted(found, key=lambda kc: kc[1].guard is not None):
        options, owners = sites.setdefault((c.start, c.end), ([], set()))
        if c.replacement not in [o.replacement for o in options]:
            options.append(c)
        owners.add(k)
    return sites


def _prove_sites(prover: Prover, offered, reaches, outcomes: list[Outcome], alternatives: bool) -> None:
    sites = _sites(offered)
    choice = {span: 0 for span in sites}
    accepted: dict[tuple, Candidate] = {}
    refused: dict[tuple, list] = {span: [] for span in sites}
    while True:  # each round tries the next rewrite of every place still open
        taken = list(accepted)
        trial = []
        for span, (options, _) in sites.items():
            if span in accepted or choice[span] >= len(options) or _overlaps(span, taken):
                continue
            trial.append(options[choice[span]])
            taken.append(span)
        if not trial:
            break
        good, bad = prover.harmless(list(accepted.values()), trial)
        for c in good:
            accepted[(c.start, c.end)] = c
        for c, why in bad.items():
            refused[(c.start, c.end)].append((c, why))
            choice[(c.start, c.end)] += 1
    final = _final(prover, list(accepted.values()))
    kept = _contributing(prover, final, sites, reaches)
    passed = [c for c in kept if c.guard is not None]
    if passed:  # a guard is never a fix, even where its numbers pass (|x| as sqrt(x * x) at 0)
        for c in passed:
            refused[(c.start, c.end)].append((c, GUARD_PASSED))
        kept = [c for c in kept if c.guard is None]
        final = _final(prover, kept)
    alternative = _alternatives(prover, kept, sites) if alternatives else {}
    _outcomes(prover, sites, kept, alternative, refused, final, outcomes)


def _overlaps(span, spans) -> bool:
    return any(span[0] < b and a < span[1] for a, b in spans)


def _final(prover: Prover, chosen: list[Candidate]) -> tuple[list, Verdict]:
    """The chosen rewrites proven as one program (rarely, two that are harmless apart are not
    together: then they are taken one by one)."""
    if not chosen:
        return [], Verdict(True, numbers=prover.original)
    verdict = prover.verdict(chosen)
    if verdict.ok:
        return chosen, verdict
    kept, last = [], Verdict(True, numbers=prover.original)
    for c in chosen:
        trial = prover.verdict(kept + [c])
        if trial.ok:
            kept, last = kept + [c], trial
    return kept, last


def _contributing(prover: Prover, final, sites, reaches) -> list[Candidate]:
    """The rewrites that make something finite or exact: those whose origin reaches a key that
    improved, and those that change a number without it (a rewrite of a value that is then
    discarded changes nothing the program reports: it is no fix)."""
    chosen, verdict = final
    if not verdict.improved:
        return []
    kept = list(chosen)
    for c in chosen:
        owners = sites[(c.start, c.end)][1]
        if any(reaches[k] & verdict.improved for k in owners):
            continue
        without = [d for d in kept if d is not c]
        other = prover.verdict(without)
        if other.ok and _same_numbers(other.numbers, verdict.numbers):
            kept = without
    return kept


def _same_numbers(a: dict, b: dict) -> bool:
    for key, x in b.items():
        y = a.get(key)
        if (x is None) != (y is None):
            return False
        if x is not None and not np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True):
            return False
    return True


def _alternatives(prover: Prover, kept: list[Candidate], sites) -> dict:
    """Other rewrites of the places fixed (softmax(x) beside the shifted formula), proven in
    their place: {span: [replacement, ...]}."""
    found: dict[tuple, list] = {}
    rank = 1
    while True:
        swaps = {(c.start, c.end): sites[(c.start, c.end)][0][rank] for c in kept
                 if len(sites[(c.start, c.end)][0]) > rank and sites[(c.start, c.end)][0][rank] is not c}
        if not swaps:
            return found
        base = [c for c in kept if (c.start, c.end) not in swaps]
        good, _ = prover.harmless(base, list(swaps.values()))
        for c in good:
            found.setdefault((c.start, c.end), []).append(c.replacement)
        rank += 1


def _outcomes(prover: Prover, sites, kept, alternative, refused, final, outcomes: list[Outcome]) -> None:
    corrected = final[1].corrected if kept else []
    fixed_spans = [(c.start, c.end) for c in kept]
    for span, (options, owners) in sites.items():
        fixed = next((c for c in kept if (c.start, c.end) == span), None)
        why_not = dict(refused.get(span, []))
        for k in sorted(owners):
            outcome = outcomes[k]
            if fixed is not None:
                others = tuple(r for r in alternative.get(span, []) if r != fixed.replacement)
                outcome.fixes.append(Fix(fixed.start, fixed.end, fixed.replacement, alternatives=others))
                outcome.together = len(kept) - 1
                outcome.corrected = corrected
                outcome.beyond = final[1].beyond if kept else 0
                continue
            for c in options:
                why = why_not.get(c)
                if why is None:
                    over = next((s for s in fixed_spans if _overlaps(span, [s])), None)
                    why = (f"a fix proven at {':'.join(map(str, _line_column(prover.text, over[0])))} takes its "
                           f"place" if over else "it makes nothing finite or exact on these inputs")
                if c.guard is not None:
                    outcome.guards.append((c, why))
                elif outcome.reason is None:
                    outcome.reason = f"{c.replacement!r} is known for it, but {why}"
    for outcome in outcomes:
        if outcome.fixes:
            outcome.reason = None
        elif outcome.reason is None:
            outcome.reason = ("no rewrite that keeps the mathematics is known for it, only a guard" if outcome.guards
                              else "no rewrite of it is proven on these inputs")


def prove_diagnostics(result, call: str | None, rerun: Callable, prepare: Callable, named_values: Callable,
                      dtype: str, limit: int, grad_ys: dict | None = None, alternatives: bool = True) -> None:
    """Give each diagnostic of a command's `result` a rewrite of the user's text proven on
    their inputs, or the reason there is none. `rerun(text, budget)`: the same command's
    numbers (`{"value y": ..., "gradient x": ...}`) on a rewritten program within `budget`
    bytes; `named_values(text, budget, reach)`: the values of its other names; `prepare(text)`:
    the command compiled on the CPU (what the exact numbers come from). The proof keeps
    `limit`: what it holds is taken from what each run may use."""
    # a fix of a gradient first: where it and a fix of the value overlap (the where trap),
    # the one that keeps the value as written is the one wanted
    wanted = sorted((d for d in result.diagnostics if d.kind in NONFINITE_KINDS and d.value_id is not None),
                    key=lambda d: d.kind != "nonfinite_gradient")
    if not wanted:
        return
    text = result.graph.source.text
    named_reach: dict[int, set] = {}

    def numbers_of(program: str, budget: int) -> dict:
        with np.errstate(all="ignore"):
            found = rerun(program, budget)
            held = sum(getattr(v, "nbytes", 0) for v in found.values())
            found.update(named_values(program, budget - held, named_reach if program == text else None))
        return found

    def reaches() -> list[set]:
        def key(r: str) -> str:
            return f"gradient {r[3:]}" if r.startswith("d/d") else f"value {r}"
        return [{key(r) for r in d.reaches} | named_reach.get(d.value_id, set()) for d in wanted]

    def setting() -> Setting:
        prepared = prepare(text)
        g, fetch = prepared.graph, prepared.fetch
        keys = {(f"gradient {k[1:]}" if k.startswith("\0") else f"value {k}"): v for k, v in fetch.items()}
        keys |= {f"named {k}": v for k, v in g.names.items()
                 if not k.startswith("_") and g.equations[v].inputs and k not in result.outputs}
        ys = [k for k in fetch if not k.startswith("\0")]
        wrt = {f"gradient {k[1:]}": g.names[k[1:]] for k in fetch if k.startswith("\0") and k[1:] in g.names}
        return Setting(g, keys, dtype, limit, [fetch[y] for y in ys] if wrt else [],
                       [(grad_ys or {}).get(y) for y in ys] if wrt else [], wrt)

    end = len(text) - len(call) - 1 if call is not None else None
    outcomes = prove(result.graph, [(d.value_id, d.kind) for d in wanted], reaches, numbers_of, setting, end,
                     alternatives)
    for d, outcome in zip(wanted, outcomes):
        annotate(d, outcome, text)


def annotate(d, outcome: Outcome, text: str) -> None:
    """Write a proof's outcome into its diagnostic: the fixes in code, or why there is none
    (with the guards known, as what they are)."""
    if outcome.fixes:
        d.fix, d.more_fixes = outcome.fixes[0], outcome.fixes[1:]
        d.fix_json, d.more_fixes_json = d.fix.to_json(text), [f.to_json(text) for f in d.more_fixes]
        proof = ("verified on these inputs: finite where it was not and there equal to an extended-precision "
                 "evaluation of the program, the same numbers elsewhere")
        if outcome.corrected:
            proof += "; it also corrects numbers that were finite but wrong: " + "; ".join(
                f"{example}" + (f" (and {count - 1} more)" if count > 1 else "") for _, count, example in outcome.corrected)
        if outcome.beyond:
            proof += (f"; at {outcome.beyond} element{'s' * (outcome.beyond != 1)} past even the extended range the "
                      f"rewrite stands by its identity alone")
        if outcome.together:
            proof += f"; proven together with the {outcome.together} other fix{'es' * (outcome.together != 1)}"
        d.suggestion = "; ".join(
            f"replace {text[f.start:f.end]!r} at {':'.join(map(str, _line_column(text, f.start)))} with "
            f"{f.replacement!r}" + "".join(f" (or {a!r})" for a in f.alternatives) for f in outcome.fixes) + \
            f" ({proof})"
        return
    d.not_fixed = outcome.reason
    d.guards_json = [{**Fix(c.start, c.end, c.replacement, verified=False).to_json(text), "guard": c.guard,
                      "reason": why} for c, why in outcome.guards]
    if outcome.reason == NONE_KNOWN:
        return  # the hint in words says all there is (and not_fixed, why)
    said = [d.suggestion] if d.suggestion else []
    said += [f"no fix is proven: {outcome.reason}"] + [
        f"{c.replacement!r} would be {c.guard}, not a fix: {why}" for c, why in outcome.guards]
    d.suggestion = "; ".join(said)


def apply_all(text: str, fixes: list) -> str:
    """The text with every fix applied; where two overlap, the first one found wins. One pass
    over the text, however many fixes."""
    taken: list = []
    for fix in sorted(enumerate(fixes), key=lambda p: (p[1].start, p[0])):
        f = fix[1]
        if taken and f.start < taken[-1][1].end:
            if fix[0] < taken[-1][0]:  # an earlier-found fix wins the overlap
                taken[-1] = fix
            continue
        taken.append(fix)
    parts, at = [], 0
    for _, f in taken:
        parts += [text[at:f.start], f.replacement]
        at = f.end
    parts.append(text[at:])
    return "".join(parts)
