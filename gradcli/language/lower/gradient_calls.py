"""The library calls that take a gradient inside the program, over transforms.py's API:
TensorFlow's tapes, `tf.gradients` and variables; JAX's grad family, vjp, jvp, linearize, vmap."""
from __future__ import annotations

import numpy as np

from gradcli.errors import Pos
from gradcli.language import syntax as ast
from gradcli.language.dialects import split_spelling
from gradcli.language.lower import pytrees, transforms
from gradcli.language.lower.pytrees import TREE_CALLS, PyTrees
from gradcli.language.lower.integers import ValuesApart, integer_items, written_integer
from gradcli.language.lower.transforms import (
    _FINISH, FUNCTION_VALUES, JAX_TRANSFORMS, NOT_MINE, VECTOR_PRODUCTS, WITH_AUX, BoundMethod, ClassValue,
    DictValue, FunctionRef, Linear, Mapped, ObjectValue, Partial, Tape, TapeRecording, Transform)
from gradcli.language.lower.values import NONE, Closure, Literal, Scope, Text, TupleValue
from gradcli.language.lower.optimizers import MODULE_METHODS, OPTIMIZER_METHODS
from gradcli.language.lower.optax_chain import OPTAX_CALLS
from gradcli.language.lower.random_draws import reproduced, split_keys
from gradcli.autodiff import depends_on
from gradcli.ops import OPS


class GradientCalls(PyTrees, ValuesApart):
    """Part of the lowering (gradcli.language.lower): in-program gradients as each library spells them."""

    # ------------------------------------------------------------------ library calls
    def call_gradient_api(self, node: ast.Call, values: list, scope: Scope, work: list):
        """A call that takes or sets up a gradient (None: its value comes by the work stack), or
        NOT_MINE where `node` is no such call."""
        taken = self.torch_call(node, values, scope, work)  # PyTorch's autograd (torch_autograd.py)
        if taken is not NOT_MINE:
            return taken
        if node.method and values:
            receiver = values[0]
            if isinstance(receiver, Tape):
                return self.tape_method(receiver, node, values[1:], scope)
            if isinstance(receiver, (ObjectValue, ClassValue)):  # (its class's methods first: statements.py)
                return self.program_method(receiver, node, values, scope, work)
            method = OPTIMIZER_METHODS.get(type(receiver))  # (optimizers.py)
            if method is not None:
                return getattr(self, method)(receiver, node, values, scope)
            if isinstance(receiver, (DictValue, Text)):
                return self.dict_or_text_method(receiver, node, values[1:])
            if receiver is NONE and node.func == "__init__":
                return NONE  # super().__init__(): nothing to set up
            if node.func == "numpy" and not node.args[1:]:
                return receiver
            if node.func in ("assign", "assign_add", "assign_sub") and type(receiver) is int \
                    and receiver in self.variables:
                return self.assign_variable(node, values, scope)
            return NOT_MINE
        library, bare = split_spelling(self.spelled(node.func))
        keywords = {kw.name: v for kw, v in zip(node.keywords, values[len(node.args):])}
        args = values[:len(node.args)]
        if bare == "super" and not args:
            return NONE
        if library == "optax" and bare in OPTAX_CALLS:  # (optax_chain.py: optax.clip is not NumPy's clip)
            return self.optax_call(bare, node, values, scope)
        if library == "tensorflow" and bare == "GradientTape":
            persistent = self.constant_truth(keywords.get("persistent", Literal(np.float64(0), node.pos)))
            accessed = self.constant_truth(keywords.get("watch_accessed_variables", Literal(np.float64(1), node.pos)))
            return Tape(bool(persistent), bool(accessed), node.pos)
        if library == "tensorflow" and bare == "Variable" and args:
            value = self.materialize(args[0], scope, node.pos)
            variable = transforms.fresh(self, value, node.pos, scope)
            self.variables.add(variable)
            return variable
        if library == "tensorflow" and bare == "gradients":
            return self.tf_gradients(node, args, keywords, scope)
        if library == "jax" and bare in TREE_CALLS:
            return self.tree_call(bare.rpartition(".")[2], args, node, scope, work)
        if library == "numpy" and self.active_tapes and not getattr(self, "_numpy_under_tape", False):
            return self.numpy_under_tape(node, values, scope, work)
        if unreproducible(library, bare) and not reproduced(library, bare):
            raise self.error(unreproducible(library, bare), node.pos)
        if bare == "jit" and args and isinstance(args[0], FUNCTION_VALUES):
            return self.note_jitted(args[0])  # compiling changes no value (random_draws.py: nor draws in it)
        if bare in ("checkpoint", "remat") and args and isinstance(args[0], FUNCTION_VALUES):
            return args[0]  # recomputing in the backward pass (jax.checkpoint) changes no value
        if bare == "vmap" and args and isinstance(args[0], FUNCTION_VALUES):
            return self.vmap_of(args, keywords, node)  # (function_values.py)
        if bare in ("vjp", "jvp", "linearize") and args and isinstance(args[0], FUNCTION_VALUES):
            if set(keywords) - {"has_aux"}:
                raise self.error(f"{node.func}() takes no keyword argument '{sorted(set(keywords) - {'has_aux'})[0]}' "
                                 "here: gradcli reads has_aux=", node.pos)
            has_aux = bool(self.constant_truth(keywords.get("has_aux", Literal(np.float64(0), node.pos))))
            return self.linearization(bare, args, node, scope, work, has_aux)
        if bare in JAX_TRANSFORMS and args and isinstance(args[0], FUNCTION_VALUES):
            unknown = sorted(set(keywords) - {"argnums", "has_aux"})
            if unknown:  # (JAX raises TypeError for a misspelling such as argnum=; holomorphic= is not read here)
                raise self.error(f"{node.func}() takes no keyword argument '{unknown[0]}' here: gradcli reads "
                                 "argnums= and has_aux=", node.pos)
            argnums = keywords.get("argnums", args[1] if len(args) > 1 else Literal(np.float64(0), node.pos))
            if isinstance(argnums, Literal) and argnums.value.ndim == 1:
                argnums = tuple(int(k) for k in argnums.value)
            elif isinstance(argnums, TupleValue):
                argnums = tuple(self.static_int(v, "argnums", node.pos) for v in argnums.items)
            else:
                argnums = self.static_int(argnums, "argnums", node.pos)
            has_aux = bool(self.constant_truth(keywords.get("has_aux", Literal(np.float64(0), node.pos))))
            return Transform(WITH_AUX.get(bare, bare), args[0], argnums, has_aux or bare in WITH_AUX, node.pos, node.func)
        return NOT_MINE

    def assign_variable(self, node: ast.Call, values: list, scope: Scope):
        """`v.assign(value)`, `v.assign_add(d)`, `v.assign_sub(d)` in straight-line code: the name
        of the variable is bound to a new variable holding the new value. Like TensorFlow's
        stateful update it passes no gradient to the old value."""

        target = node.args[0]
        if not isinstance(target, ast.Name) or "." in target.id or len(values) != 2:
            raise self.error(f".{node.func}() is supported on a variable named in the program, with one value",
                             node.pos)
        old, given = values[0], self.materialize(values[1], scope, node.pos)
        if node.func == "assign":
            new = given
        else:
            op = OPS["add" if node.func == "assign_add" else "subtract"]
            new = self.emit(op, (old, given), {}, node.pos, node.func, scope)
        cut = self.emit(OPS["stop_gradient"], (new,), {}, node.pos, node.func, scope)
        variable = transforms.fresh(self, cut, node.pos, scope)
        self.variables.add(variable)
        self.rebind_variable(old, variable, scope)  # (in place: every name and list holding it; lists.py)
        if scope.locals is not None and target.id in scope.locals:
            scope.locals[target.id] = variable
        else:
            self.globals[target.id] = variable
            self.graph.names[target.id] = variable
        return variable

    def sources(self, value, pos: Pos, scope: Scope) -> tuple[list, bool]:
        """The ids of a source or a list of them; whether it was a list."""
        if isinstance(value, (TupleValue, DictValue)):
            return [self.materialize(v, scope, pos) for v in value.items], True
        return [self.materialize(value, scope, pos)], False

    def tape_method(self, tape: Tape, node: ast.Call, args: list, scope: Scope):
        keywords = {kw.name: v for kw, v in zip(node.keywords, args[len(node.args) - 1:])}
        args = args[:len(node.args) - 1]
        if node.func == "watch":
            ids, _ = self.sources(args[0], node.pos, scope)
            integers = integer_items(self, node.args[1]) if len(node.args) == 2 else [False] * len(ids)
            if any(integers):  # TensorFlow logs this and does not watch it: its gradient is None
                self.graph.warnings.append(("The dtype of the watched tensor must be floating (e.g. tf.float32), "
                                            "got tf.int32 (TensorFlow's warning): its gradient is None", node.pos,
                                            "gradient_lost", "watch"))
            tape.watched.update(i for i, integer in zip(ids, integers) if not integer)
            return NONE
        if node.func == "stop_recording":
            return TapeRecording(tape)
        if node.func == "reset":  # forget what was recorded; go on recording if active
            tape.windows = []
            tape.used = False
            if tape.open_at is not None:
                tape.open_at = len(self.graph.equations)
            return NONE
        if node.func in ("gradient", "jacobian"):
            if len(args) < 2:
                raise self.error(f"tape.{node.func}(target, sources) takes a target and its sources", node.pos)
            if tape.used and not tape.persistent:
                raise self.error("A non-persistent GradientTape can only be used to compute one set of "
                                 "gradients (or jacobians) (TensorFlow: RuntimeError); create it with "
                                 "tf.GradientTape(persistent=True)", node.pos)
            tape.used = True
            targets, _ = self.sources(args[0], node.pos, scope)
            sources, listed = self.sources(args[1], node.pos, scope)
            upstream = keywords.get("output_gradients")
            grad_ys = None if upstream is None or upstream is NONE else self.sources(upstream, node.pos, scope)[0]
            integers = integer_items(self, node.args[2]) if len(node.args) > 2 else []
            integer = {s for s, flag in zip(sources, integers) if flag}  # (TensorFlow: no gradient, None)
            watched = [s for s in sources if s not in integer and self.traced_by(tape, s)]
            results = dict.fromkeys(sources)
            if node.func == "jacobian":
                for s in watched:
                    results[s] = transforms.jacobian(self, targets[0], s, node.pos, "tape.jacobian", scope,
                                                     tape.recorded, zero_if_unconnected=False)
            elif watched:
                by = f"{node.args[0].id if isinstance(node.args[0], ast.Name) else 'tape'}.gradient"
                found = transforms.differentiate(self, targets, watched, node.pos, by, grad_ys,
                                                 tape.recorded)
                results.update(zip(watched, found))
            zero = self.unconnected_zero(keywords, node.pos)
            out = [self.zeros_like(s, scope) if results[s] is None and zero else results[s] for s in sources]
            out = [NONE if v is None else v for v in out]
            if isinstance(args[1], DictValue):
                return DictValue(args[1].keys, out, node.pos)
            return TupleValue(out, node.pos) if listed else out[0]
        if node.func == "batch_jacobian":
            return self.batch_jacobian(tape, node, args, scope)
        raise self.error(f"GradientTape has no method '{node.func}' that gradcli knows", node.pos)

    def traced_by(self, tape: Tape, source: int) -> bool:
        """Whether the tape traced `source`: watched, a variable it watches, or computed while it
        recorded from what it traced (an intermediate value)."""
        if source in tape.watched or (tape.watch_accessed and source in self.variables):
            return True
        if not tape.recorded(source):
            return False
        roots = sorted(tape.watched | (self.variables if tape.watch_accessed else set()))
        return bool(roots) and autodiff_reach(self.graph, roots, source, tape.recorded)

    def batch_jacobian(self, tape: Tape, node: ast.Call, args: list, scope: Scope):
        """tape.batch_jacobian(y, x): for each example b, d y[b] / d x[b] (rows are independent)."""
        y, x = (self.materialize(a, scope, node.pos) for a in args[:2])
        if not self.traced_by(tape, x):
            return NONE
        full = transforms.jacobian(self, y, x, node.pos, "tape.batch_jacobian", scope, tape.recorded)
        y_shape, x_shape = self.graph.shapes[y], self.graph.shapes[x]
        if len(x_shape) < 2 or len(y_shape) < 2 or x_shape[0] != y_shape[0]:
            raise self.error("tape.batch_jacobian: the target and the source need two dimensions or more and one "
                             f"batch size first (TensorFlow's), not shapes {y_shape} and {x_shape}", node.pos)
        # row b: full[b, :, ..., b] (a slice as the index param writes it: (start, stop, step))
        rows = [self.emit(OPS["index"], (full,), {"index": (b,) + ((None, None, None),) * (len(y_shape) - 1) + (b,)},
                          node.pos, "[]", scope) for b in range(y_shape[0])]
        return transforms.stack(self, rows, node.pos, scope)

    def unconnected_zero(self, keywords: dict, pos: Pos) -> bool:
        mode = keywords.get("unconnected_gradients")
        if mode is None or mode is NONE:
            return False
        text = mode.value.lower() if isinstance(mode, Text) else ""
        if text not in ("none", "zero"):
            raise self.error("unconnected_gradients must be 'none' or 'zero'", pos)
        return text == "zero"

    def zeros_like(self, x: int, scope: Scope) -> int:
        return self.graph.add_constant(np.zeros(self.graph.shapes[x]), None, scope.stack)

    def tf_gradients(self, node: ast.Call, args: list, keywords: dict, scope: Scope):
        names = ["ys", "xs", "grad_ys"]
        given = dict(zip(names, args))
        given.update({k: v for k, v in keywords.items() if k in names})
        self.refuse_folded_sources(pytrees.leaves(self.as_tuple(given["xs"])), node.pos)
        ys, _ = self.sources(given["ys"], node.pos, scope)
        xs, _ = self.sources(given["xs"], node.pos, scope)
        upstream = given.get("grad_ys")
        grad_ys = None if upstream is None or upstream is NONE else self.sources(upstream, node.pos, scope)[0]
        stops = keywords.get("stop_gradients")
        recorded = None
        if stops is not None and stops is not NONE:
            stopped = set(self.sources(stops, node.pos, scope)[0])
            recorded = lambda i: i not in stopped  # noqa: E731  (a stopped value passes no gradient)
        found = transforms.differentiate(self, ys, xs, node.pos, node.func, grad_ys, recorded)
        zero = self.unconnected_zero(keywords, node.pos)
        out = [self.zeros_like(x, scope) if g is None and zero else g for x, g in zip(xs, found)]
        return TupleValue([NONE if v is None else v for v in out], node.pos)

    # ------------------------------------------------------------------ function values
    def apply_function(self, fn, node, values: list, scope: Scope, work: list):
        """Call the function value `fn` with `values` (those of node.args, then node.keywords)."""
        call = ast.Call(getattr(fn, "name", "<function>") or "<function>", node.args, node.pos, node.keywords)
        if type(fn) is Partial:  # (function_values.py)
            return self.apply_partial(fn, node, values, scope, work)
        if isinstance(fn, FunctionRef):
            if isinstance(fn.fn, ast.FuncDef):
                return self.call_user(fn.fn, call, values, scope, work, None)
            if isinstance(fn.fn, Closure):
                return self.call_user(fn.fn.fn, call, values, scope, work, fn.fn.scope)
            return self.call(ast.Call(fn.fn, node.args, node.pos, node.keywords), values, scope, work)
        if isinstance(fn, Transform):
            vector = ()
            if fn.kind in VECTOR_PRODUCTS:  # (autograd's: the vector comes last)
                if not node.args:
                    raise self.error(f"{fn.by}(f)(*args, vector): the vector is the last argument", node.pos)
                vector = (self.materialize(values[len(node.args) - 1], scope, node.pos),)
                values = values[:len(node.args) - 1] + values[len(node.args):]
                node = (ast.CallValue(node.callee, node.args[:-1], node.keywords, node.pos)
                        if isinstance(node, ast.CallValue) else ast.Call(node.func, node.args[:-1], node.pos, node.keywords))
            argnums = (tuple(range(len(node.args))) if fn.argnums is None  # (check_grads: every argument)
                       else fn.argnums if isinstance(fn.argnums, tuple) else (fn.argnums,))
            values = list(values)
            xs, trees = [], []  # the variables, and each argument's tree of them (JAX's pytrees)
            for k in argnums:
                if k >= len(node.args):
                    raise self.error(f"{fn.by}: argnums {k} is past the {len(node.args)} arguments given", node.pos)
                if written_integer(self, node.args[k]):
                    self.refuse_integer_argument(fn, node.args[k])
                values[k] = self.as_tuple(values[k])  # `(0.5, 2.0)`: a tuple of two leaves, as in JAX
                leaves = [transforms.fresh(self, self.materialize(leaf, scope, node.pos), node.pos, scope)
                          for leaf in pytrees.leaves(values[k])]
                values[k] = pytrees.rebuild(values[k], leaves)
                xs.extend(leaves)
                trees.append(values[k])
            work.append((_FINISH, ("transform", fn, xs, node, trees) + vector, scope))
            return self.apply_function(fn.fn, node, values, scope, work)
        if isinstance(fn, Linear):
            given = [self.materialize(v, scope, node.pos) for v in values[:len(node.args)]]
            if fn.kind == "vjp":
                found = transforms.differentiate(self, fn.ys, fn.xs, node.pos, fn.by, given)
                grads = [self.zeros_like(x, scope) if g is None else g for x, g in zip(fn.xs, found)]
                return TupleValue(grads, node.pos)
            (out,) = transforms.pushforward(self, fn.ys, fn.xs, given, node.pos, fn.by, scope)
            return out
        if isinstance(fn, Mapped):
            return self.map_rows(fn, node, values, scope, work)
        if isinstance(fn, ClassValue):
            obj = ObjectValue(fn, {}, node.pos)
            init = fn.methods.get("__init__")
            if init is None:
                return obj
            work.append((_FINISH, ("object", obj), scope))
            with_self = ast.Call(fn.name, [ast.Name("self", node.pos)] + list(node.args), node.pos, node.keywords)
            return self.call_user(init, with_self, [obj] + list(values), scope, work, None)
        if isinstance(fn, (ObjectValue, BoundMethod)):
            obj = fn if isinstance(fn, ObjectValue) else fn.obj
            method = fn.fn if isinstance(fn, BoundMethod) else (
                obj.cls.methods.get("__call__") or obj.cls.methods.get("forward"))
            if method is None:
                raise self.error(f"an object of {obj.cls.name} is not callable: it has no __call__ or forward",
                                 node.pos)
            with_self = ast.Call(method.name, [ast.Name("self", node.pos)] + list(node.args), node.pos, node.keywords)
            return self.call_user(method, with_self, [obj] + list(values), scope, work, None)
        raise self.error("this value is not a function", node.pos)

    def call_method(self, obj: ObjectValue, node: ast.Call, values: list, scope: Scope, work: list):
        """`m.forward(x)`: a method of the object's class, or an attribute holding a function."""
        method = obj.cls.methods.get(node.func)
        if method is not None:
            return self.call_user(method, node, values, scope, work, None)
        held = obj.attrs.get(node.func)
        if isinstance(held, FUNCTION_VALUES):
            rest = ast.Call(node.func, node.args[1:], node.pos, node.keywords)
            return self.apply_function(held, rest, values[1:], scope, work)
        if node.func in MODULE_METHODS:  # an nn.Module's model.parameters(), model.zero_grad() (optimizers.py)
            return self.module_method(obj, node, values[1:])
        raise self.error(f"{obj.cls.name} has no method '{node.func}'", node.pos)

    def map_rows(self, fn: Mapped, node, values: list, scope: Scope, work: list):
        """vmap: f of each row, stacked (work items: the calls, then the stack)."""
        args = list(values[:len(node.args)])
        axes = fn.in_axes if fn.in_axes is not None else [0] * len(args)
        mapped = [k for k, a in enumerate(axes) if a == 0]
        # (an argument not mapped, in_axes None, passes whole: a tree of parameters stays a tree)
        args = [self.materialize(v, scope, node.pos) if k in mapped and not isinstance(v, FUNCTION_VALUES)
                and not split_keys(v) else v for k, v in enumerate(args)]  # (JAX keys map as rows: random_draws.py)
        if not mapped:
            raise self.error("vmap: no argument is mapped", node.pos)
        first = args[mapped[0]]
        count = len(first.items) if split_keys(first) else self.graph.shapes[first][0] if self.graph.shapes[first] else 0
        rows = {k: self.unpack(args[k], count, node.pos, scope) for k in mapped}
        work.append((_FINISH, ("stack", count, node), scope))
        for i in reversed(range(count)):
            call_values = [rows[k][i] if k in rows else a for k, a in enumerate(args)]
            work.append((_FINISH, ("call", fn.fn, node, call_values), scope))
        return None

    def finish(self, item, values: list, scope: Scope, work: list) -> None:
        """A work item after a function's body: what the transform makes of the function's result."""
        tag = item[0]
        if tag in ("torch", "torch_mode"):  # torch.autograd.functional, @torch.no_grad() (torch_autograd.py)
            self.torch_finish(item, values, scope)
        elif tag == "custom":  # a custom gradient's steps (custom_gradients.py)
            self.custom_finish(item, values, scope, work)
        elif tag == "object":  # after __init__: the object it set up
            values.pop()
            values.append(item[1])
        elif tag == "setattr":
            self.set_attribute(item[1], values.pop(), scope)
        elif tag == "transform":
            values.append(self.finish_transform(item[1:], values.pop(), scope))
        elif tag == "call":
            _, fn, node, call_values = item
            result = self.call_on(fn, call_values, node.pos, scope, work)
            if result is not None:
                values.append(result)
        elif tag == "loop":  # lax.fori_loop, lax.scan (function_values.py)
            self.loop_step(item, values, scope, work)
        elif tag == "gradcheck":  # torch.autograd.gradcheck (gradcheck.py)
            self.gradcheck_finish(item, values, scope)
        elif tag == "tree":  # after tree_map's calls (pytrees.py)
            self.finish_tree_map(item, values)
        elif tag == "stack":
            _, count, node = item
            rows = values[len(values) - count:]
            del values[len(values) - count:]
            if rows and isinstance(rows[0], TupleValue):
                columns = zip(*(r.items for r in rows))
                values.append(TupleValue([transforms.stack(self, [self.materialize(v, scope, node.pos) for v in c],
                                                           node.pos, scope) for c in columns], node.pos))
            else:
                values.append(transforms.stack(self, [self.materialize(r, scope, node.pos) for r in rows],
                                               node.pos, scope))
        else:
            values.append(self.finish_linearization(item, values.pop(), scope))

    def finish_transform(self, item, result, scope: Scope):
        fn, xs, node, trees, *vector = item
        if fn.kind in VECTOR_PRODUCTS:
            return self.vector_product(fn, result, xs, node, trees, vector[0], scope)
        if fn.kind in ("check_grads", "jax_check_grads"):  # (gradcheck.py)
            return self.check_grads_finish(fn, result, xs, node, scope)
        aux = None
        if fn.has_aux:
            if not isinstance(result, TupleValue) or len(result.items) != 2:
                raise self.error(f"{fn.by}(has_aux=True): the function must return (output, aux)", node.pos)
            result, aux = result.items
        if fn.kind in ("jacfwd", "jacrev", "jacobian", "hessian"):
            out = self.tree_jacobians(fn, result, xs, trees, node, scope)
            return out if aux is None else TupleValue([out, aux], node.pos)
        y = self.materialize(result, scope, node.pos)
        if fn.kind == "elementwise_grad":  # autograd: the gradient of the sum
            y = self.emit(OPS_SUM(), (y,), {"axis": None, "keepdims": False}, node.pos, "sum", scope)
        if self.graph.shapes[y] not in ((), None):
            instead = ("autograd: TypeError); use elementwise_grad or jacobian"
                       if self.spelled(fn.by).startswith("autograd") else "JAX: TypeError); use jax.jacrev or jax.vjp")
            raise self.error(f"{fn.by}: the function's output must be a scalar, it has shape "
                             f"{self.graph.shapes[y]} ({instead}", node.pos)
        found = transforms.differentiate(self, [y], xs, node.pos, fn.by)
        grads = [self.zeros_like(x, scope) if g is None else g for x, g in zip(xs, found)]
        gradient = self.in_argument_trees(fn, trees, grads, node.pos)
        if fn.kind == "value_and_grad":
            value = y if aux is None else TupleValue([y, aux], node.pos)
            return TupleValue([value, gradient], node.pos)
        return gradient if aux is None else TupleValue([gradient, aux], node.pos)


TORCH_DRAWS = {"rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm", "normal",
               "bernoulli", "multinomial", "poisson", "manual_seed", "seed"}


def unreproducible(library: str, bare: str) -> str | None:
    """Why a call cannot give the library's numbers (a random draw gradcli does not reproduce,
    random_draws.py), with what to write instead; None for any other call."""
    if bare.startswith("random.") or (library == "torch" and bare in TORCH_DRAWS):
        spelled = {"torch": "torch", "numpy": "np", "jax": "jax", "tensorflow": "tf"}.get(library, library)
        maker = {"torch": "torch.tensor", "jax": "jnp.array", "tensorflow": "tf.constant"}.get(library, "np.array")
        called = bare if library == "python" else f"{spelled}.{bare}"  # (Python's own `random` module)
        return (f"{called} draws random numbers, which gradcli does not reproduce (it reproduces NumPy's, JAX's "
                "and PyTorch's seeded draws listed in docs/language.md): write the values in the program (x = "
                f"{maker}([...])), or make x an input and give it with --set x='[...]'")
    return None


def autodiff_reach(graph, roots: list, target: int, recorded) -> bool:
    return depends_on(graph, roots, target, recorded)[target]


def OPS_SUM():
    return OPS["sum"]
