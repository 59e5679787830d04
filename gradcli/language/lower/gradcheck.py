"""`torch.autograd.gradcheck(fn, inputs)` and `gradgradcheck` inside a program: the Jacobian
the gradient rules give (a custom `torch.autograd.Function`'s backward among them) against
float64 central finite differences, as PyTorch compares them (eps=1e-6, atol=1e-5, rtol=1e-3:
|analytical - numerical| <= atol + rtol * |numerical| for every element). The check runs while
the program is built, on a copy of its graph, at the values the program gives the inputs: its
result is the constant True, and a rule that disagrees is PyTorch's GradcheckError, placed at the
call (or False with raise_exception=False). gradgradcheck checks the vector-Jacobian product
g(x, v) = J(x)^T v the same way, for fixed pseudo-random v (PyTorch draws them at random)."""
from __future__ import annotations

import math

import numpy as np

from gradcli.autodiff import gradients
from gradcli.engine.evaluate import needed_equations, run
from gradcli.ir import Graph
from gradcli.language import syntax as ast
from gradcli.language.lower import pytrees, transforms
from gradcli.language.lower.transforms import _FINISH, FUNCTION_VALUES, Transform
from gradcli.language.lower.values import NONE, Literal, Scope, Text, TupleValue

DEFAULTS = {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-3}
MAX_RUNS = 20_000  # evaluations of the function for one check (one per output element, two per input element)


def jacobian_mismatch(graph: Graph, outs: list, variables: list, eps: float, atol: float, rtol: float) -> str | None:
    """PyTorch's words for the first (output, input) pair whose Jacobians disagree, or None."""
    seeds = [graph.add_input(f"<seed {k}>", np.zeros(graph.shapes[o])) for k, o in enumerate(outs)]
    grads = gradients(graph, outs, variables, grad_ys=seeds)
    live = [g for g in grads if g is not None]
    zeros = {s: np.zeros(graph.shapes[s]) for s in seeds}
    with np.errstate(all="ignore"):
        point = {v: np.asarray(value, dtype=np.float64) for v, value in run(graph, variables).items()}
    sizes = [math.prod(graph.shapes[o]) for o in outs]
    widths = [point[v].size for v in variables]
    analytical = [[np.zeros((rows, cols)) for cols in widths] for rows in sizes]
    numerical = [[np.zeros((rows, cols)) for cols in widths] for rows in sizes]
    for k, seed in enumerate(seeds):
        for j in range(sizes[k]):
            one = np.zeros(sizes[k])
            one[j] = 1.0
            with np.errstate(all="ignore"):
                got = run(graph, live, overrides={**zeros, seed: one.reshape(graph.shapes[seed])}) if live else {}
            for i, g in enumerate(grads):
                if g is not None:
                    analytical[k][i][j] = np.asarray(got[g], dtype=np.float64).reshape(-1)
    for i, v in enumerate(variables):
        for m in range(widths[i]):
            sides = []
            for step in (eps, -eps):
                moved = point[v].copy()
                moved.flat[m] += step
                with np.errstate(all="ignore"):
                    sides.append(run(graph, outs, overrides={v: moved}))
            for k, o in enumerate(outs):
                numerical[k][i][:, m] = (np.asarray(sides[0][o], dtype=np.float64).reshape(-1)
                                         - np.asarray(sides[1][o], dtype=np.float64).reshape(-1)) / (2 * eps)
    for k in range(len(outs)):
        for i in range(len(variables)):
            a, n = analytical[k][i], numerical[k][i]
            if not np.all(np.abs(a - n) <= atol + rtol * np.abs(n)):
                return (f"Jacobian mismatch for output {k} with respect to input {i}, numerical: {_shown(n)}, "
                        f"analytical: {_shown(a)}")
    return None


class GradientCheck(Transform):
    """autograd's check_grads(f, ...): applied to arguments, the check of f's gradient at them
    (argnums None: every argument; `order`: 1, or 2 with the vector-Jacobian product's)."""

    __slots__ = ("order", "options")
    _fields = Transform._fields + ("order", "options")


def _shown(jacobian: np.ndarray) -> str:
    return " ".join(np.array2string(jacobian, precision=6, separator=", ").split())


class GradCheck:
    """Part of the lowering (gradcli.language.lower): PyTorch's gradcheck and gradgradcheck."""

    def torch_gradcheck(self, kind: str, node: ast.Call, args: list, keywords: dict, scope: Scope, work: list):
        fn = args[0] if args else keywords.get("func")
        inputs = args[1] if len(args) > 1 else keywords.get("inputs")
        if not isinstance(fn, FUNCTION_VALUES) or inputs is None:
            raise self.error(f"torch.autograd.{kind}(func, inputs): give the function and its inputs", node.pos)
        options = {name: float(self.static_number(keywords[name], name, node.pos)) if name in keywords else default
                   for name, default in DEFAULTS.items()}
        raising = keywords.get("raise_exception")
        options["raising"] = raising is None or bool(self.constant_truth(raising))
        inputs = self.as_tuple(inputs)
        values = [v if v is NONE or isinstance(v, FUNCTION_VALUES + (Text,)) else self.materialize(v, scope, node.pos)
                  for v in pytrees.leaves(inputs)]
        checked = [k for k, v in enumerate(values) if type(v) is int and self.requires_grad(v)]
        if not checked:
            raise self.error(f"{kind} expects at least one input tensor to require gradient (PyTorch: ValueError): "
                             "create it with requires_grad=True", node.pos)
        if any(self.graph.shapes[values[k]] is None for k in checked):
            raise self.error(f"{kind} needs the values of its inputs, known while the program is built", node.pos)
        for k in checked:
            values[k] = transforms.fresh(self, values[k], node.pos, scope)
        work.append((_FINISH, ("gradcheck", kind, [values[k] for k in checked], options, node), scope))
        return self.call_on(fn, values, node.pos, scope, work)

    def gradcheck_finish(self, item, values: list, scope: Scope) -> None:
        _, kind, xs, options, node = item
        result = values.pop()
        outs = [self.materialize(leaf, scope, node.pos) for leaf in pytrees.leaves(result) if leaf is not NONE]
        problem = self.first_mismatch(kind, outs, xs, 2 if kind == "gradgradcheck" else 1, options, node)
        if problem and options["raising"]:
            raise self.error(f"{problem} (PyTorch: GradcheckError): the gradient rule disagrees with finite "
                             "differences at these inputs", node.pos)
        values.append(Literal(np.float64(problem is None), node.pos, boolean=True))

    def check_grads_finish(self, fn, result, xs: list, node, scope: Scope):
        """autograd's `check_grads(f, modes, order=2)(*args)` and JAX's `check_grads(f, args,
        order)`: None, or the library's AssertionError."""
        outs = [self.materialize(leaf, scope, node.pos) for leaf in pytrees.leaves(result) if leaf is not NONE]
        jax = fn.kind == "jax_check_grads"
        # autograd.test_util's EPS, TOL, RTOL; jax._src.public_test_util's EPS and float64 tolerance
        options = {"eps": 1e-4, "atol": 1e-5, "rtol": 1e-5} if jax else {"eps": 1e-6, "atol": 1e-6, "rtol": 1e-6}
        options.update(fn.options if jax else {})
        for order in range(1, fn.order + 1):
            problem = self.first_mismatch("check_grads", outs, xs, order, options, node)
            if problem:
                name = getattr(fn.fn, "name", None) or "the function"
                raise self.error(f"Derivative check of {name} failed (order {order}): {problem} "
                                 f"({'JAX' if jax else 'autograd'}: AssertionError)", node.pos)
        return NONE

    def jax_check_grads(self, node: ast.Call, args: list, keywords: dict, scope: Scope, work: list):
        """JAX's `check_grads(f, args, order, modes=("fwd", "rev"), atol=, rtol=, eps=)`: f's
        gradients checked at args (to `order`) against finite differences; None."""
        given = dict(zip(("f", "args", "order", "modes", "atol", "rtol", "eps"), args)) | keywords
        if not isinstance(given.get("f"), FUNCTION_VALUES) or "args" not in given or "order" not in given:
            raise self.error("check_grads(f, args, order): give the function, its arguments and the order", node.pos)
        order = self.static_int(given["order"], "order", node.pos)
        if order not in (1, 2):
            raise self.error("check_grads: gradcli checks order 1 or 2", node.pos)
        options = {name: float(self.static_number(given[name], name, node.pos))
                   for name in ("atol", "rtol", "eps") if name in given and given[name] is not NONE}
        check = GradientCheck("jax_check_grads", given["f"], None, False, node.pos, node.func, order, options)
        arguments = given["args"]
        if isinstance(arguments, Literal) and arguments.from_tuple and arguments.value.ndim:  # (of constants)
            arguments = [Literal(row, arguments.pos) for row in arguments.value]
        elif isinstance(arguments, TupleValue):
            arguments = arguments.items
        else:
            raise self.error("check_grads(f, args, order): args is the tuple of f's arguments", node.pos)
        return self.call_on(check, list(arguments), node.pos, scope, work)

    def first_mismatch(self, kind: str, outs: list, xs: list, order: int, options: dict, node) -> str | None:
        """The check on a copy of the graph: order 1 the Jacobian of outs in xs; order 2 that of
        v -> J^T v in x and in v."""
        if getattr(self.graph, "unread_inputs", frozenset()) & set(needed_equations(self.graph, outs)):
            raise self.error(f"{kind} needs the values of its inputs while the program is built, but --device "
                             "dask reads them only when it runs: evaluate it on the CPU", node.pos)
        graph = self.graph.fork()  # (the check's equations are not the program's)
        variables = list(xs)
        if order == 2:
            rng = np.random.default_rng(0)
            vs = [graph.add_input(f"<grad_output {k}>", rng.standard_normal(graph.shapes[o]))
                  for k, o in enumerate(outs)]
            outs = [g for g in gradients(graph, outs, xs, grad_ys=vs) if g is not None]
            variables += vs
        runs = sum(math.prod(graph.shapes[o]) for o in outs) + 2 * sum(math.prod(graph.shapes[v]) for v in variables)
        if runs > MAX_RUNS:
            raise self.error(f"{kind}: the check would evaluate the function {runs:,} times (at most {MAX_RUNS:,} "
                             "here): check a smaller case, or use gradcli check --wrt", node.pos)
        return jacobian_mismatch(graph, outs, variables, options["eps"], options["atol"], options["rtol"])

    def autograd_check_grads(self, node: ast.Call, args: list, keywords: dict):
        """`check_grads(f, modes=['fwd', 'rev'], order=2)`: a function of f's arguments that checks
        f's gradient (and, order 2, that of its vector-Jacobian product) at them."""
        if not args or not isinstance(args[0], FUNCTION_VALUES) or set(keywords) - {"modes", "order"}:
            raise self.error("check_grads(f, modes=[...], order=2): give the function (gradcli reads modes and "
                             "order)", node.pos)
        order = self.static_int(keywords["order"], "order", node.pos) if "order" in keywords else 2
        if order not in (1, 2):
            raise self.error("check_grads: gradcli checks order 1 or 2", node.pos)
        return GradientCheck("check_grads", args[0], None, False, node.pos, node.func, order, {})

    def static_number(self, value, what: str, pos) -> float:
        value = self.constant_value(value)
        if not isinstance(value, Literal) or value.value.ndim != 0:
            raise self.error(f"{what} must be a number written in the program", pos)
        return float(value.value)
