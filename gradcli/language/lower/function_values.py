"""Function values made from other functions: `functools.partial`, a library's function objects
(a PyTorch module such as `nn.MSELoss(reduction='sum')`, a Keras loss object such as
`keras.losses.BinaryCrossentropy(from_logits=True)`), `jax.vmap`'s mapped function, and the value
and linear map of `jax.vjp`, `jax.jvp` and `jax.linearize`, and autograd's vector products.

A function object is its library's function with the constructor's arguments given: PyTorch's
`nn.MSELoss(reduction='sum')(a, b)` is `F.mse_loss(a, b, reduction='sum')`; Keras'
`MeanSquaredError()(t, p)` is the mean, over the batch, of `keras.losses.mean_squared_error(t, p)`
(the loss object's default reduction, "sum_over_batch_size"). The dialects name which function
each object is (their `_function_object` entries); this part builds and applies the value.
"""
from __future__ import annotations

import numpy as np

from gradcli.errors import LoopPass
from gradcli.language import syntax as ast
from gradcli.language.dialects import split_spelling
from gradcli.language.lower.transforms import _FINISH, FUNCTION_VALUES, FunctionRef, Linear, Mapped, Partial
from gradcli.language.lower import pytrees, transforms
from gradcli.language.lower.flow import MAX_WHILE_PASSES
from gradcli.language.lower.values import NONE, Literal, Scope, TupleValue
from gradcli.ops import OPS

# Keras' reductions of a loss object's per-sample losses -> the op that reduces them (None: each kept)
KERAS_REDUCTIONS = {"sum_over_batch_size": "mean", "mean": "mean", "sum": "sum", "none": None}


class FunctionValues:
    """Part of the lowering (gradcli.language.lower): functions with some arguments given, vmap,
    vjp/jvp/linearize."""

    _function_labels: dict | None = None  # (made on first use) a def -> the name recursion is told by

    def function_label(self, fn: ast.FuncDef) -> str:
        """The name a call of `fn` is known by among the calls being expanded, which tell recursion:
        its name, unless another def of that name came first (two classes' `__init__`: a module
        whose __init__ makes a sub-module is no recursion), then its name and place; a lambda's
        place (one per place)."""
        if fn.name == "<lambda>":
            return f"<lambda at {fn.pos.line}:{fn.pos.column}>"
        labels = self._function_labels
        if labels is None:
            labels = self._function_labels = {}
        label = labels.get(id(fn))
        if label is None:
            taken = fn.name in labels.values()
            label = labels[id(fn)] = f"{fn.name} at {fn.pos.line}:{fn.pos.column}" if taken else fn.name
        return label

    def call_on(self, fn, values: list, pos, scope: Scope, work: list):
        """Call the function value `fn` on `values`, positional arguments no source text wrote
        (a transform's, a loop's, a check's call: apply_function's)."""
        return self.apply_function(fn, ast.Call("<function>", [ast.Name("_", pos)] * len(values), pos), values, scope, work)

    def partial_of(self, node: ast.Call, values: list) -> Partial:
        """`functools.partial(f, *args, **keywords)`: f with those arguments given first."""
        if not node.args or not isinstance(values[0], FUNCTION_VALUES):
            raise self.error(f"{node.func}(f, ...) needs a function first: a def, a lambda or a library's "
                             "function (np.power)", node.pos)
        return Partial(values[0], node.args[1:], node.keywords, values[1:], None, node.pos)

    def function_object(self, function: str, positional: tuple, node: ast.Call, values: list,
                        dropped: tuple = (), keras: bool = False) -> Partial:
        """A library's function object: `function` (its spelled name) with the constructor's
        arguments given by keyword (`positional`: the constructor's names for its positional
        arguments; `dropped`: those that change no number, left out). `keras`: a Keras loss
        object, whose `reduction` reduces the per-sample losses."""
        label = node.func
        if len(node.args) > len(positional):
            takes = f"at most {len(positional)} ({', '.join(positional)})" if positional else "none"
            raise self.error(f"{label}() takes {takes} positional arguments; give the others by name", node.pos)
        keywords = [ast.Keyword(name, arg, arg.pos) for name, arg in zip(positional, node.args)] + list(node.keywords)
        then = "mean" if keras else None
        kept_keywords, kept_values = [], []
        for kw, value in zip(keywords, values):
            if kw.name in dropped:
                continue
            if keras and kw.name == "reduction":
                reduction = "none" if value is NONE else self.static_param("reduction", value, label, kw.pos)
                if reduction not in KERAS_REDUCTIONS:
                    raise self.error(f"{label}(reduction={reduction!r}): Keras' reductions are "
                                     f"{', '.join(map(repr, KERAS_REDUCTIONS))} or None", kw.pos)
                then = KERAS_REDUCTIONS[reduction]
                continue
            kept_keywords.append(kw)
            kept_values.append(value)
        return Partial(FunctionRef(function, function, node.pos), [], kept_keywords, kept_values, then, node.pos)

    def apply_partial(self, fn: Partial, node: ast.Call, values: list, scope: Scope, work: list):
        """Call `fn`: its given arguments first, then the call's; a keyword given again at the call
        replaces the given one (as functools.partial does)."""
        given_at_call = {kw.name for kw in node.keywords}
        bound_keywords = [(kw, v) for kw, v in zip(fn.keywords, fn.values[len(fn.args):]) if kw.name not in given_at_call]
        label = getattr(fn.fn, "name", None) or "<function>"
        call = ast.Call(label, list(fn.args) + list(node.args), node.pos,
                        [kw for kw, _ in bound_keywords] + list(node.keywords))
        call_values = (list(fn.values[:len(fn.args)]) + list(values[:len(node.args)])
                       + [v for _, v in bound_keywords] + list(values[len(node.args):]))
        result = self.apply_function(fn.fn, call, call_values, scope, work)
        if fn.then is None:
            return result
        losses = self.materialize(result, scope, node.pos)
        return self.emit(OPS[fn.then], (losses,), {"axis": None, "keepdims": False}, node.pos, label, scope)

    def call_instead(self, function: str, node: ast.Call, values: list, scope: Scope, positional: tuple,
                     defaults: dict):
        """A call read as another function's (`np.add.reduce(x)` is `np.sum(x, axis=0)`): the call's
        own arguments (`positional`: their names in order), and `defaults` where the call leaves
        those out."""
        given = set(positional[:len(node.args)]) | {kw.name for kw in node.keywords}
        added = [(name, value) for name, value in defaults.items() if name not in given]
        keywords = list(node.keywords) + [ast.Keyword(name, ast.Number(value, node.pos), node.pos) for name, value in added]
        call = ast.Call(function, node.args, node.pos, keywords)
        constants = [Literal(np.float64(value), node.pos) for _, value in added]
        return self.apply_function(FunctionRef(function, function, node.pos), call, list(values) + constants, scope, [])

    @staticmethod
    def is_none(value) -> bool:
        """Whether a value is Python's None (a left-out argument), for the dialects, which hold no values."""
        return value is NONE

    def nested_numbers(self, value):
        """A constant's numbers as nested lists (`(((1,), (0,)), ((), ()))`, ragged or not), None
        where any part is computed: for the dialects, which hold no values."""
        if isinstance(value, TupleValue):
            items = [self.nested_numbers(item) for item in value.items]  # (as deep as the text: written nesting)
            return None if any(item is None for item in items) else items
        value = self.constant_value(value)
        return value.value.tolist() if isinstance(value, Literal) else None

    def arguments_by_name(self, node: ast.Call, values: list, names: tuple, required: int = 1) -> dict:
        """A library call's arguments by name (`names`: its parameters in order; the first
        `required` must be given), each given once."""
        given = dict(zip(names, values[:len(node.args)]))
        if len(node.args) > len(names):
            raise self.error(f"{node.func}() takes at most {len(names)} arguments ({', '.join(names)})", node.pos)
        for kw, value in zip(node.keywords, values[len(node.args):]):
            if kw.name not in names or kw.name in given:
                raise self.error(f"{node.func}() takes {', '.join(names)}; got '{kw.name}'", kw.pos)
            given[kw.name] = value
        missing = [name for name in names[:required] if name not in given]
        if missing:
            raise self.error(f"{node.func}() needs {', '.join(missing)}", node.pos)
        return given

    def fori_loop(self, node: ast.Call, values: list, scope: Scope, work: list):
        """`lax.fori_loop(lower, upper, body_fun, init_val)`: body_fun(i, val) for i from lower to
        upper, unrolled (the bounds constants, as a Python for loop's); each call is a work item
        that takes the value the last one left, so no call nests in another."""
        given = self.arguments_by_name(node, values, ("lower", "upper", "body_fun", "init_val", "unroll"), required=4)
        lower, upper = (self.known_int(given[name], name, node.pos) for name in ("lower", "upper"))
        body = given["body_fun"]
        if not isinstance(body, FUNCTION_VALUES):
            raise self.error(f"{node.func}(lower, upper, body_fun, init_val): body_fun must be a function", node.pos)
        work.append((_FINISH, ("loop", "fori", body, node, lower, upper, lower), scope))  # (lower: to number the passes)
        return given["init_val"]

    def scan(self, node: ast.Call, values: list, scope: Scope, work: list):
        """`lax.scan(f, init, xs, length=None, reverse=False)`: carry, y = f(carry, x) over the rows
        of xs (or `length` times with xs None), giving (the last carry, the ys stacked)."""
        given = self.arguments_by_name(node, values, ("f", "init", "xs", "length", "reverse", "unroll"), required=2)
        f = given["f"]
        if not isinstance(f, FUNCTION_VALUES):
            raise self.error(f"{node.func}(f, init, xs): f must be a function", node.pos)
        xs = given.get("xs")
        if xs is None or xs is NONE:
            if "length" not in given:
                raise self.error(f"{node.func}(f, init): without xs, give length=", node.pos)
            rows = [NONE] * self.known_int(given["length"], "length", node.pos)
        else:
            xs = self.materialize(xs, scope, node.pos)
            shape = self.graph.shapes[xs]
            if not shape:
                raise self.error(f"{node.func}: xs must have a leading axis to scan over", node.pos)
            rows = [self.emit(OPS["index"], (xs,), {"index": (k,)}, node.pos, node.func, scope) for k in range(shape[0])]
        if not rows:  # (JAX would still trace f once for the shape of ys)
            raise self.error(f"{node.func}: a scan of zero steps is not supported (the shape of its ys is "
                             "not known without a step)", node.pos)
        reverse = "reverse" in given and bool(self.constant_truth(given["reverse"]))
        if reverse:
            rows = rows[::-1]
        work.append((_FINISH, ("loop", "scan", f, node, 0, len(rows), (rows, [], reverse)), scope))
        return given["init"]

    def library_of(self, node: ast.Call) -> str:
        return split_spelling(self.spelled(node.func))[0]

    def branch(self, node: ast.Call, values: list, scope: Scope, work: list):
        """`lax.cond(pred, true_fun, false_fun, *operands)` and `lax.switch(index, branches,
        *operands)`: the branch chosen, called on the operands. The choice is known before
        evaluation, as an if's condition is; JAX differentiates the chosen branch only, and so does this."""
        switch = self.spelled(node.func).endswith("switch")
        usage = f"{node.func}(index, branches, *operands)" if switch else f"{node.func}(pred, true_fun, false_fun, *operands)"
        first = 2 if switch else 3
        if node.keywords or len(values) < first:
            raise self.error(f"{usage}: write the arguments by position", node.pos)
        branches = (values[1].items if isinstance(values[1], TupleValue) else []) if switch else values[1:3]
        if not branches or not all(isinstance(b, FUNCTION_VALUES) for b in branches):
            raise self.error(f"{usage}: the branches must be functions", node.pos)
        if switch:  # (JAX clamps the index into range)
            chosen = branches[min(max(self.known_int(values[0], "the index of lax.switch", node.args[0].pos), 0),
                                  len(branches) - 1)]
        else:
            chosen = branches[0] if self.known_truth(values[0], node.args[0].pos, "cond") else branches[1]
        return self.call_on(chosen, values[first:], node.pos, scope, work)

    def while_loop(self, node: ast.Call, values: list, scope: Scope, work: list):
        """`lax.while_loop(cond_fun, body_fun, init_val)`: body_fun while cond_fun holds, unrolled
        as a while statement is (each condition known before evaluation)."""
        given = self.arguments_by_name(node, values, ("cond_fun", "body_fun", "init_val"), required=3)
        if not all(isinstance(given[name], FUNCTION_VALUES) for name in ("cond_fun", "body_fun")):
            raise self.error(f"{node.func}(cond_fun, body_fun, init_val): cond_fun and body_fun must be functions",
                             node.pos)
        work.append((_FINISH, ("loop", "while", (given["cond_fun"], given["body_fun"]), node, 0, None, None), scope))
        return given["init_val"]

    def _while_step(self, item, values: list, scope: Scope, work: list) -> None:
        """One step of while_loop: a carry is tested; a test's truth ends the loop or runs the body."""
        _, kind, (cond_fun, body_fun), node, passes, before, tested = item
        result = values.pop()
        if tested is None and before is not None and self._carry_form(result) != self._carry_form(before):
            raise self.error(f"{node.func}: body_fun must return a carry of init_val's structure and shapes "
                             "(as JAX requires)", node.pos)
        if tested is None:  # result: the carry, which cond_fun tests next
            work.append((_FINISH, ("loop", kind, (cond_fun, body_fun), node, passes, None, (result,)), scope))
            fn, given = cond_fun, result
        elif not self.known_truth(result, node.pos, "while_loop"):
            values.append(tested[0])
            return
        else:
            self.steps_left -= 1
            if passes >= MAX_WHILE_PASSES or self.steps_left < 0:
                raise self.error(f"{node.func}: the program expands to more than {MAX_WHILE_PASSES:,} passes of a "
                                 "while loop (the loop is unrolled: does its condition become false?)", node.pos)
            work.append((_FINISH, ("loop", kind, (cond_fun, body_fun), node, passes + 1, tested[0], None), scope))
            fn, given = body_fun, tested[0]
        result = self.call_on(fn, [given], node.pos, self._in_pass(scope, node, passes + 1), work)
        if result is not None:
            values.append(result)

    @staticmethod
    def _in_pass(scope: Scope, node: ast.Call, number: int, binding: str = "") -> Scope:
        """`scope` with a lax loop's pass on its stack, for the diagnostics of what the pass makes."""
        return Scope(scope.locals, scope.stack + (LoopPass(node.pos, number, binding),), scope.active, scope.parent)

    def _carry_form(self, carry) -> list:
        """A loop carry's tree paths and its leaves' shapes."""
        return [(path, None if leaf is NONE else self.shape_of(leaf)) for path, leaf in pytrees.walk(self.as_tuple(carry))]

    def loop_step(self, item, values: list, scope: Scope, work: list) -> None:
        """One step of fori_loop or scan: the value the last call left is the next call's carry."""
        _, kind, fn, node, i, end, scanned = item
        if kind == "while":
            return self._while_step(item, values, scope, work)
        carry = values.pop()
        if kind == "scan" and i > 0:  # (f returned (carry, y))
            if not isinstance(carry, TupleValue) or len(carry.items) != 2:
                raise self.error(f"{node.func}: f must return a pair (carry, y)", node.pos)
            carry, y = carry.items
            scanned[1].append(y)
        if i == end:
            values.append(carry if kind == "fori" else TupleValue([carry, self._stacked(scanned, node, scope)], node.pos))
            return
        work.append((_FINISH, ("loop", kind, fn, node, i + 1, end, scanned), scope))
        given = [Literal(np.float64(i), node.pos), carry] if kind == "fori" else [carry, scanned[0][i]]
        passing = self._in_pass(scope, node, i - scanned + 1, f"i = {i}") if kind == "fori" else \
            self._in_pass(scope, node, i + 1)
        result = self.call_on(fn, given, node.pos, passing, work)
        if result is not None:
            values.append(result)

    def _stacked(self, scanned, node: ast.Call, scope: Scope):
        """scan's ys: stacked along a new leading axis (in xs' order, also when reversed); None if f gave None."""
        _, ys, reverse = scanned
        if not ys or all(y is NONE for y in ys):
            return NONE
        if reverse:
            ys = ys[::-1]
        if any(y is NONE or not (type(y) is int or isinstance(y, Literal)) for y in ys):
            raise self.error(f"{node.func}: each y that f returns must be one array (or None at every step)", node.pos)
        ids = tuple(self.materialize(y, scope, node.pos) for y in ys)
        return self.emit(OPS["stack"], ids, {}, node.pos, node.func, scope)

    def zipped(self, node: ast.Call, values: list, scope: Scope) -> TupleValue:
        """`zip(a, b, ...)` as a value (`optimizer.apply_gradients(zip(grads, variables))`): the
        tuples of the items at each place, as far as the shortest goes (a loop's zip, flow.py)."""
        if node.keywords:
            raise self.error(f"{node.func}() with keywords is not supported", node.pos)
        columns = [self.items_of(v, node.pos, scope) for v in values]
        return TupleValue([TupleValue(list(row), node.pos) for row in zip(*columns)], node.pos)

    def sequence_of(self, node: ast.Call, values: list, scope: Scope) -> TupleValue:
        """`list(x)`, `tuple(x)`: the items of a tuple or list, or an array's rows."""
        if node.keywords or len(values) != 1:
            raise self.error(f"{node.func}() takes one sequence here", node.pos)
        return TupleValue(list(self.items_of(values[0], node.pos, scope)), node.pos)

    def vmap_of(self, args: list, keywords: dict, node: ast.Call) -> Mapped:
        """`jax.vmap(f, in_axes=0)`: f mapped over axis 0 of the arguments (in_axes: 0, or a tuple
        of 0 and None, one per argument); torch.func.vmap spells them in_dims= (out_dims= 0 only)."""
        keywords = {"in_axes" if name == "in_dims" else name: value for name, value in keywords.items()}
        for name in ("out_axes", "out_dims"):
            if name in keywords and not (isinstance(keywords[name], Literal) and keywords[name].value.ndim == 0
                                         and self.static_int(keywords.pop(name), name, node.pos) == 0):
                raise self.error(f"vmap: gradcli stacks the results on axis 0 only ({name}=0)", node.pos)
        if set(keywords) - {"in_axes"}:
            raise self.error(f"vmap: gradcli reads in_axes= (in_dims=) and out_axes=0 only, not "
                             f"'{sorted(set(keywords) - {'in_axes'})[0]}'", node.pos)
        in_axes = keywords.get("in_axes", args[1] if len(args) > 1 else None)
        if in_axes is None or isinstance(in_axes, Literal) and in_axes.value.ndim == 0:
            if in_axes is not None and self.static_int(in_axes, "in_axes", node.pos) != 0:
                raise self.error("vmap: gradcli maps over axis 0 only (in_axes=0 or None per argument)", node.pos)
            axes = None
        elif isinstance(in_axes, TupleValue):
            axes = [None if v is NONE else self.static_int(v, "in_axes", node.pos) for v in in_axes.items]
        else:
            raise self.error("vmap: in_axes must be 0 or a tuple of 0 and None", node.pos)
        return Mapped(args[0], axes, node.pos)

    def linearization(self, kind: str, args: list, node: ast.Call, scope: Scope, work: list, has_aux=False):
        """jax.vjp(f, *primals), jax.jvp(f, primals, tangents), jax.linearize(f, *primals); with
        has_aux=True f returns (output, aux) and aux comes last in what they return."""
        f = args[0]
        if kind == "jvp":
            args = [args[0]] + [self.as_tuple(a) for a in args[1:]]
            if len(args) != 3 or not isinstance(args[1], TupleValue) or not isinstance(args[2], TupleValue):
                raise self.error("jax.jvp(f, primals, tangents): primals and tangents are tuples", node.pos)
            primals, tangents = args[1].items, [self.materialize(t, scope, node.pos) for t in args[2].items]
            if len(primals) != len(tangents):
                raise self.error("jax.jvp: primals and tangents must have the same number of items", node.pos)
        else:
            primals, tangents = args[1:], None
        xs = [transforms.fresh(self, self.materialize(p, scope, node.pos), node.pos, scope) for p in primals]
        work.append((_FINISH, ("linear", kind, xs, tangents, node, has_aux), scope))
        return self.call_on(f, xs, node.pos, scope, work)

    def finish_linearization(self, item, result, scope: Scope) -> TupleValue:
        _, kind, xs, tangents, node, has_aux = item
        by = node.func if isinstance(node, ast.Call) else kind
        aux = []
        if has_aux:
            if not isinstance(result, TupleValue) or len(result.items) != 2:
                raise self.error(f"{by}(has_aux=True): the function must return (output, aux)", node.pos)
            result, aux = result.items[0], [result.items[1]]
        y = self.materialize(result, scope, node.pos)
        if kind == "jvp":
            (out,) = transforms.pushforward(self, [y], xs, tangents, node.pos, by, scope)
            return TupleValue([y, out] + aux, node.pos)
        return TupleValue([y, Linear("vjp" if kind == "vjp" else "jvp", [y], xs, node.pos, by)] + aux, node.pos)

    def vector_product(self, fn, result, xs: list, node, trees: list, vector: int, scope: Scope):
        """autograd's `vector_jacobian_product(f)(x, v)`, the gradient of sum(f(x) * v), and
        `hessian_tensor_product(f)(x, v)`, the gradient of sum(grad(f)(x) * v), of one array x."""
        if len(xs) != 1:
            raise self.error(f"{fn.by}: gradcli reads the product with respect to one array argument", node.pos)
        y = self.materialize(result, scope, node.pos)
        if fn.kind != "vector_jacobian_product":
            if self.graph.shapes[y] not in ((), None):
                raise self.error(f"{fn.by}: the function's output must be a scalar, it has shape "
                                 f"{self.graph.shapes[y]} (autograd: TypeError)", node.pos)
            (g,) = transforms.differentiate(self, [y], xs, node.pos, fn.by)
            g = self.zeros_like(xs[0], scope) if g is None else g
            y, vector = self.emit(OPS["sum"], (self.emit(OPS["multiply"], (g, vector), {}, node.pos, fn.by, scope),),
                                  {"axis": None, "keepdims": False}, node.pos, fn.by, scope), None
        (found,) = transforms.differentiate(self, [y], xs, node.pos, fn.by, None if vector is None else [vector])
        grads = [self.zeros_like(xs[0], scope) if found is None else found]
        return self.in_argument_trees(fn, trees, grads, node.pos)
