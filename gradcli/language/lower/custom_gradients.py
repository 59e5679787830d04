"""Gradients the program defines itself: `@tf.custom_gradient` (the function returns its value and
its gradient function), `jax.custom_vjp` with `f.defvjp(fwd, bwd)` and `jax.custom_jvp` with
`@f.defjvp`. The user's rule becomes the gradient of that call: the call's value is one equation,
`custom_gradient(y, *xs)`, which passes no gradient to y (the forward computation) and whose rule
for each x is the user's gradient function, lowered once with a placeholder for the upstream
gradient and copied, the placeholder replaced, wherever a backward pass meets the call. The
copies are ordinary equations: a second derivative differentiates them again, and `gradcli check`
compares the rule with finite differences as it does any op's (the equations carry the call's
place, so a wrong rule is named by where it was called)."""
from __future__ import annotations

import numpy as np

from gradcli.errors import Pos
from gradcli.language import syntax as ast
from gradcli.language.lower import transforms
from gradcli.language.lower.transforms import _FINISH, FunctionRef
from gradcli.language.lower.values import NONE, Scope, TupleValue
from gradcli.ops import NO_GRADIENT, Sym
from gradcli.ops.table import Op
from gradcli.ops import OPS

CUSTOM_DECORATORS = {"tensorflow.custom_gradient": "tf", "tf.custom_gradient": "tf",
                     "jax.custom_vjp": "vjp", "jax.custom_jvp": "jvp",
                     "autograd.extend.primitive": "primitive", "autograd.primitive": "primitive"}
DEFVJP = ("autograd.extend.defvjp", "autograd.defvjp")


class CustomRule:
    """A function's custom derivative: `kind` "vjp" (with `fwd`, `bwd`) or "jvp" (with `jvp`, or
    `jvps`: defjvps' one rule per argument, None for an argument without one)."""

    __slots__ = ("kind", "fwd", "bwd", "jvp", "jvps", "makers")

    def __init__(self, kind):
        self.kind = kind
        self.fwd = self.bwd = self.jvp = self.jvps = self.makers = None


def _static_ints(node) -> tuple | None:
    """`(0,)`, `(0, 2)` or `1` written in a decorator: the integers, or None where not so written."""
    items = node.items if isinstance(node, ast.Tuple) else [node]
    if not all(isinstance(item, ast.Number) and float(item.value).is_integer() for item in items):
        return None
    return tuple(int(item.value) for item in items)


def _clone_rule(original, placeholder: int, result: int, forward: tuple):
    """The rule for one input: the template equations that lead from the placeholder to
    `result`, copied with the placeholder replaced by the upstream gradient. In the program's own
    graph the copy reuses the forward values; in another graph (the check's graph of this one
    equation, whose inputs stand for y and the xs: `forward`) every equation the template needs
    is copied back to those inputs, its constants with it."""
    def rule(g, ans, *args, **params):
        graph = g.graph
        if result == placeholder:
            return g
        mapping = {placeholder: g.id}
        if graph is original and tuple(a.id for a in args) == forward:
            order = range(placeholder + 1, result + 1)
        else:
            mapping.update({old: a.id for old, a in zip(forward, args)})
            needed, stack = set(), [result]
            while stack:  # the template's ancestors, back to the placeholder and the forward values
                i = stack.pop()
                if i in mapping or i in needed:
                    continue
                needed.add(i)
                stack.extend(original.equations[i].inputs)
            order = sorted(needed)
        for i in order:
            eq = original.equations[i]
            if not eq.inputs:
                if i not in mapping and graph is not original:
                    mapping[i] = graph.add_constant(eq.params["value"], eq.pos, eq.stack)
            elif i not in mapping and any(j in mapping for j in eq.inputs):
                inputs = tuple(mapping.get(j, j) for j in eq.inputs)
                mapping[i] = graph.add(eq.op, inputs, eq.params, eq.pos, eq.label, eq.stack)
        return Sym(graph, mapping.get(result, result))
    return rule


class CustomGradients:
    """Part of the lowering (gradcli.language.lower): user-defined gradients."""

    _custom_depth = 0  # (rules being lowered now; defaults here: reading them costs no AttributeError)
    _custom_rules: dict | None = None

    def custom_kind(self, fn: ast.FuncDef) -> str | None:
        return self.custom_spec(fn)[0]

    def custom_spec(self, fn: ast.FuncDef) -> tuple:
        """(kind, nondiff_argnums) of a function's custom-gradient decorator; (None, ()) where it
        has none. `@partial(jax.custom_vjp, nondiff_argnums=(0,))` is read as JAX reads it."""
        for decorator in fn.decorators:
            spelled = decorator.func if isinstance(decorator, ast.Call) else getattr(decorator, "id", "")
            kind = CUSTOM_DECORATORS.get(self.spelled(spelled))
            if kind is not None:
                return kind, ()
            partial = self.partial_custom(decorator)
            if partial is not None:
                return partial
        return None, ()

    def partial_custom(self, decorator) -> tuple | None:
        """`partial(jax.custom_vjp, nondiff_argnums=(0,))`: ("vjp", (0,)); None where not such a call."""
        if not (isinstance(decorator, ast.Call) and self.spelled(decorator.func) in ("partial", "functools.partial")
                and decorator.args and isinstance(decorator.args[0], ast.Name)):
            return None
        kind = CUSTOM_DECORATORS.get(self.spelled(decorator.args[0].id))
        if kind not in ("vjp", "jvp"):
            return None
        nondiff = ()
        for keyword in decorator.keywords:
            nondiff = _static_ints(keyword.value) if keyword.name == "nondiff_argnums" else None
            if nondiff is None:
                raise self.error(f"@partial(jax.custom_{kind}, ...): gradcli reads nondiff_argnums=(k, ...) "
                                 "written with integers", keyword.pos)
        return kind, nondiff

    def custom_call(self, fn: ast.FuncDef, node, values: list, work: list, scope: Scope) -> None:
        """A call of a function with a custom gradient: its arguments become the ids the rule is
        for; a work item after its body builds the custom equation."""

        kind, nondiff = self.custom_spec(fn)
        if kind is None:
            return
        count = len(node.args)
        values[:count] = [v if k in nondiff else self.materialize(v, scope, node.pos)
                          for k, v in enumerate(values[:count])]
        xs = [v for k, v in enumerate(values[:count]) if k not in nondiff]
        fixed = [values[k] for k in nondiff if k < count]  # JAX passes these to the rules first
        if kind == "tf":
            work.append((_FINISH, ("custom", "tf_result", xs, node), scope))
            return
        rules = self.custom_rules.get(fn.name)
        if rules is None or (rules.fwd is None and rules.jvp is None and rules.jvps is None
                             and rules.makers is None) or self._custom_depth:
            return  # no rule given yet (or a call inside a rule): f's own derivative
        work.append((_FINISH, ("custom", "after_body", rules, xs, node, fixed, list(values[:count])), scope))

    def custom_rule_given(self, node, values: list):
        """`f.defvjp(fwd, bwd)`, `f.defjvp(jvp)` (also as the decorator `@f.defjvp`); None where
        `node` is not one."""

        if not (node.method and node.func in ("defvjp", "defjvp", "defjvps") and values and isinstance(values[0], FunctionRef)
                and isinstance(values[0].fn, ast.FuncDef)):
            return None
        fn = values[0].fn
        kind = self.custom_kind(fn)
        if kind not in ("vjp", "jvp") or node.func.rstrip("s") != f"def{kind}":
            raise self.error(f"{node.func}: {fn.name} is not decorated with @jax.custom_{node.func[3:6]}", node.pos)
        rules = self.custom_rules.setdefault(fn.name, CustomRule(kind))
        given = values[1:]
        if kind == "vjp":
            if len(given) != 2:
                raise self.error("defvjp(fwd, bwd): give the forward and the backward function", node.pos)
            rules.fwd, rules.bwd = given
        elif node.func == "defjvps":  # one rule per argument: (tangent, primal_out, *primals) -> tangent out
            if len(given) != len(fn.params):
                raise self.error(f"defjvps: give one rule (or None) for each of {fn.name}'s {len(fn.params)} "
                                 f"arguments, not {len(given)} (JAX: TypeError)", node.pos)
            rules.jvps = [None if g is NONE else g for g in given]
        else:
            if len(given) != 1:
                raise self.error("defjvp(jvp): give the function of (primals, tangents)", node.pos)
            rules.jvp = given[0]
        return NONE

    def autograd_defvjp(self, node, args: list):
        """autograd's `defvjp(f, vjp_maker_0, vjp_maker_1, ...)` (None for an argument without one):
        each maker(ans, *args) returns the function g -> the gradient of that argument."""
        if not args or not isinstance(args[0], FunctionRef) or not isinstance(args[0].fn, ast.FuncDef) \
                or self.custom_kind(args[0].fn) != "primitive":
            raise self.error("defvjp(f, ...): f must be a def decorated with @primitive", node.pos)
        rules = self.custom_rules.setdefault(args[0].fn.name, CustomRule("primitive"))
        rules.makers = list(args[1:])
        return NONE

    def custom_decorator(self, stmt: ast.FuncDef, decorator) -> bool:
        """`@f.defjvp` over a def: registers it as f's rule; a custom gradient's own decorator is
        accepted (its calls are taken by custom_call)."""
        name = getattr(decorator, "id", "")
        if CUSTOM_DECORATORS.get(self.spelled(decorator.func if isinstance(decorator, ast.Call) else name)) \
                or self.partial_custom(decorator) is not None:
            return True
        base, _, method = name.rpartition(".")
        if method not in ("defjvp", "defvjp") or not isinstance(self.globals.get(base), ast.FuncDef):
            return False
        call = ast.Call(method, [ast.Name(base, decorator.pos)], decorator.pos, method=True)
        self.custom_rule_given(call, [FunctionRef(self.globals[base], base, decorator.pos),
                                      FunctionRef(stmt, stmt.name, stmt.pos)])
        return True

    @property
    def custom_rules(self) -> dict:
        rules = self._custom_rules
        if rules is None:
            rules = self._custom_rules = {}
        return rules

    def custom_finish(self, item, values: list, scope: Scope, work: list) -> None:
        step = item[1]
        if step == "tf_result":
            _, _, xs, node = item
            result = values.pop()
            if not isinstance(result, TupleValue) or len(result.items) != 2:
                raise self.error("@tf.custom_gradient: the function must return (value, gradient function)",
                                 node.pos)
            y, grad_fn = result.items
            found = self.custom_backward(self.materialize(y, scope, node.pos), xs, grad_fn, [], node, scope, work)
            if found is not None:
                values.append(found)
        elif step == "function_forward":  # torch.autograd.Function: forward done, now its backward
            _, _, cls, ctx, xs, node = item
            y = self.materialize(values.pop(), scope, node.pos)
            backward = FunctionRef(cls.methods["backward"], f"{cls.name}.backward", node.pos)
            found = self.custom_backward(y, xs, backward, [ctx], node, scope, work)
            if found is not None:
                values.append(found)
        elif step == "function_setup":  # forward(*args) gave y: setup_context(ctx, inputs, y), then y again
            _, _, cls, ctx, xs, node = item
            y = self.materialize(values.pop(), scope, node.pos)
            work.append((_FINISH, ("custom", "value_again", y), scope))
            setup = cls.methods["setup_context"]
            call = ast.Call(setup.name, [ast.Name("_", node.pos)] * 3, node.pos)
            found = self.call_user(setup, call, [ctx, TupleValue(list(xs), node.pos), y], scope, work, None)
            if found is not None:
                values.append(found)
        elif step == "value_again":  # (setup_context's None dropped)
            values.pop()
            values.append(item[2])
        elif step == "after_body":
            self.custom_after_body(item, values, scope, work)
        elif step == "vjp_residuals":
            _, _, y, xs, bwd, node, fixed = item
            pair = values.pop()
            if not isinstance(pair, TupleValue) or len(pair.items) != 2:
                raise self.error("custom_vjp: the forward function must return (output, residuals)", node.pos)
            found = self.custom_backward(y, xs, bwd, fixed + [pair.items[1]], node, scope, work)
            if found is not None:
                values.append(found)
        elif step == "jvp_out":
            _, _, y, xs, tangents, node = item
            pair = values.pop()
            if not isinstance(pair, TupleValue) or len(pair.items) != 2:
                raise self.error("custom_jvp: the rule must return (primal_out, tangent_out)", node.pos)
            values.append(self.jvp_equation(y, xs, tangents, [pair.items[1]], node, scope))
        elif step == "jvps_out":  # one of defjvps' rules gave its tangent out
            _, _, state, k = item
            state["outs"].append(values.pop())
            self.jvps_next(state, k + 1, values, scope, work)
        elif step == "maker_done":  # the maker gave the function of g: apply it to the placeholder
            _, _, state, k = item
            fn = values.pop()
            work.append((_FINISH, ("custom", "grad_done", state, k), scope))
            call = ast.Call("<vjp>", [ast.Name("_", state["node"].pos)], state["node"].pos)
            found = self.apply_function(fn, call, [state["u"]], scope, work)
            if found is not None:
                values.append(found)
        elif step == "grad_done":
            _, _, state, k = item
            state["grads"].append(values.pop())
            self.primitive_next(state, k + 1, values, scope, work)
        elif step == "depth_down":
            self._custom_depth -= 1
        elif step == "rule":
            _, _, y, xs, placeholder, start, node = item
            grads = values.pop()
            values.append(self.custom_equation(y, xs, placeholder, start, grads, node, scope))

    def custom_after_body(self, item, values: list, scope: Scope, work: list) -> None:
        """f's body gave its value y: lower the rule (fwd then bwd, or the jvp) for this call."""

        _, _, rules, xs, node, fixed, arguments = item
        y = self.materialize(values.pop(), scope, node.pos)
        self._custom_depth += 1  # calls inside the rule: plain
        work.append((_FINISH, ("custom", "depth_down"), scope))
        if rules.kind == "primitive":
            graph = self.graph
            state = {"y": y, "xs": xs, "u": self.placeholder(graph.shapes[y], node.pos), "grads": [],
                     "makers": rules.makers, "node": node}
            self.primitive_next(state, 0, values, scope, work)
            return
        if rules.kind == "vjp":  # fwd takes every argument; bwd the nondiff ones, residuals, g
            work.append((_FINISH, ("custom", "vjp_residuals", y, xs, rules.bwd, node, fixed), scope))
            call = ast.Call("<fwd>", [ast.Name("_", node.pos)] * len(arguments), node.pos)
            found = self.apply_function(rules.fwd, call, arguments, scope, work)
        elif rules.jvps is not None:
            tangents = [self.placeholder(self.graph.shapes[x], node.pos) for x in xs]
            state = {"y": y, "xs": xs, "tangents": tangents, "outs": [], "rules": rules.jvps, "node": node}
            self.jvps_next(state, 0, values, scope, work)
            return
        else:
            tangents = [self.placeholder(self.graph.shapes[x], node.pos) for x in xs]
            work.append((_FINISH, ("custom", "jvp_out", y, xs, tangents, node), scope))
            call = ast.Call("<jvp>", [ast.Name("_", node.pos)] * (2 + len(fixed)), node.pos)
            found = self.apply_function(rules.jvp, call, fixed + [TupleValue(list(xs), node.pos),
                                                                  TupleValue(tangents, node.pos)], scope, work)
        if found is not None:
            values.append(found)

    def jvp_equation(self, y: int, xs: list, tangents: list, outs: list, node, scope: Scope) -> int:
        """The custom equation of a JVP rule: its tangent out (the sum of `outs`), linear in the
        tangent placeholders, is transposed by a reverse pass into each x's gradient."""
        found = [None] * len(xs)
        placeholder = self.placeholder(self.graph.shapes[y], node.pos)
        if outs:
            out = self.materialize(outs[0], scope, node.pos)
            for more in outs[1:]:
                out = self.emit(OPS["add"], (out, self.materialize(more, scope, node.pos)), {}, node.pos, "+", scope)
            found = transforms.differentiate(self, [out], tangents, node.pos, "custom_jvp", [placeholder])
        grads = TupleValue([NONE if g is None else g for g in found], node.pos)
        return self.custom_equation(y, xs, placeholder, placeholder + 1, grads, node, scope)

    def jvps_next(self, state: dict, k: int, values: list, scope: Scope, work: list) -> None:
        """defjvps' rules, one argument after another (rule k of (tangent k, primal_out, *primals));
        then the custom equation of their summed tangent."""
        rules, node, xs = state["rules"], state["node"], state["xs"]
        while k < len(xs) and (k >= len(rules) or rules[k] is None):
            k += 1
        if k == len(xs):
            values.append(self.jvp_equation(state["y"], xs, state["tangents"], state["outs"], node, scope))
            return
        work.append((_FINISH, ("custom", "jvps_out", state, k), scope))
        call = ast.Call("<jvp rule>", [ast.Name("_", node.pos)] * (2 + len(xs)), node.pos)
        found = self.apply_function(rules[k], call, [state["tangents"][k], state["y"]] + list(xs), scope, work)
        if found is not None:
            values.append(found)

    def placeholder(self, shape: tuple, pos: Pos) -> int:
        """What a rule is lowered with for the upstream gradient (or a tangent): a value no
        constant folding can read (a rule that needs it as a constant, `np.full(shape, g)`, is
        refused rather than built with a zero), never one of the program's inputs."""

        return self.graph.add(OPS["input"], (), {"name": "<upstream gradient>", "value": np.zeros(shape)}, pos,
                              "upstream gradient")

    def primitive_next(self, state: dict, k: int, values: list, scope: Scope, work: list) -> None:
        """autograd's makers, one argument after another; then the custom equation."""

        makers, node = state["makers"], state["node"]
        while k < len(state["xs"]) and (k >= len(makers) or makers[k] is NONE or makers[k] is None):
            state["grads"].append(NONE)
            k += 1
        if k == len(state["xs"]):
            grads = TupleValue(state["grads"], node.pos)
            values.append(self.custom_equation(state["y"], state["xs"], state["u"], state["u"] + 1, grads, node,
                                               scope))
            return
        work.append((_FINISH, ("custom", "maker_done", state, k), scope))
        call = ast.Call("<vjp maker>", [ast.Name("_", node.pos)] * (1 + len(state["xs"])), node.pos)
        found = self.apply_function(makers[k], call, [state["y"]] + list(state["xs"]), scope, work)
        if found is not None:
            values.append(found)

    def custom_backward(self, y: int, xs: list, grad_fn, leading: list, node, scope: Scope, work: list):
        """Lower grad_fn(*leading, u) for a placeholder u, then build the custom equation (the
        gradient function's result, where it came at once, else None: it comes by the work stack)."""

        graph = self.graph
        placeholder = self.placeholder(graph.shapes[y], node.pos)
        work.append((_FINISH, ("custom", "rule", y, xs, placeholder, placeholder + 1, node), scope))
        args = leading + [placeholder]
        call = ast.Call("<gradient function>", [ast.Name("_", node.pos)] * len(args), node.pos)
        # a rule is its own expansion, not a call inside the function that called f (a backward may
        # apply another Function whose backward has the same name): the recursion check starts anew
        rule_scope = Scope(scope.locals, scope.stack, (), scope.parent)
        return self.apply_function(grad_fn, call, args, rule_scope, work)

    def custom_equation(self, y: int, xs: list, placeholder: int, start: int, grads, node, scope: Scope) -> int:
        items = grads.items if isinstance(grads, TupleValue) else [grads]
        if len(items) != len(xs):
            raise self.error(f"the gradient function returned {len(items)} gradient{'s' * (len(items) != 1)} "
                             f"for {len(xs)} input{'s' * (len(xs) != 1)}", node.pos)
        rules = [NO_GRADIENT]
        for x, g in zip(xs, items):
            if g is NONE or g is None:
                rules.append(NO_GRADIENT)
                continue
            g = self.materialize(g, scope, node.pos)
            if self.graph.shapes[g] != self.graph.shapes[x]:
                g = self.emit_sum_to(g, x, node.pos, scope)
            rules.append(_clone_rule(self.graph, placeholder, g, (y, *xs)))
        op = Op("custom_gradient", lambda xp, y, *xs: y, lambda y, *xs: y, tuple(rules),
                args=("y",) + tuple(f"x{k}" for k in range(len(xs))), public=False,
                doc="a value whose gradient is the program's own rule")
        return self.graph.add(op, (y, *xs), {}, node.pos, getattr(node, "func", "custom gradient"), scope.stack)

    def emit_sum_to(self, g: int, x: int, pos: Pos, scope: Scope) -> int:
        shape = self.graph.shapes[x]
        if self.graph.shapes[g] == () and shape != ():
            return self.emit(OPS["broadcast_to"], (g,), {"shape": shape}, pos, "broadcast_to", scope)
        return self.emit(OPS["sum_to"], (g,), {"shape": shape}, pos, "sum_to", scope)
