"""PyTorch's autograd inside a program, over transforms.py's API: tensors made with
`requires_grad=True` (or `.requires_grad_()`) are leaves; `y.backward()` adds d y / d leaf to each
leaf's `.grad` (accumulating, as PyTorch does; `.grad.zero_()` clears it); `torch.autograd.grad`
returns the gradients as a tuple; `with torch.no_grad():` / `torch.enable_grad()` say which
equations carry gradients; `torch.autograd.functional.jacobian/hessian/vjp/jvp/hvp/vhp` apply to
a function. A second backward through equations whose saved values a first backward freed
(no `retain_graph=True`) is refused as PyTorch refuses it; one through equations that saved
nothing (`y = x + 2`) succeeds and accumulates, as in PyTorch."""
from __future__ import annotations

import numpy as np

from gradcli.errors import Pos
from gradcli.language import syntax as ast
from gradcli.language.dialects import split_spelling
from gradcli.language.lower import transforms
from gradcli.language.lower.values import NONE, Literal, Scope, Text, TupleValue
from gradcli.language.lower.custom_gradients import DEFVJP
from gradcli.language.lower.gradcheck import GradCheck
from gradcli.language.lower.integers import written_integer
from gradcli.language.lower.transforms import WITH_AUX, ClassValue, FunctionRef, ObjectValue
from gradcli.records import ValueRecord
from gradcli.autodiff import depends_on
from gradcli.language.lower.transforms import FUNCTION_VALUES, JAX_TRANSFORMS, NOT_MINE, Transform, _FINISH
from gradcli.ops import OPS

CTX = "<ctx of torch.autograd.Function>"

# ops whose PyTorch backward saves no tensor: a second backward through them needs no retain_graph
SAVES_NOTHING = {"add", "subtract", "negative", "positive", "sum", "mean", "identity", "reshape", "transpose",
                 "broadcast_to", "sum_to", "stack", "concatenate", "index", "squeeze", "expand_dims",
                 "stop_gradient", "take_slice", "input", "zeros_like"}
ATTRIBUTES = {"grad", "requires_grad", "data", "grad_fn", "is_leaf"}
FUNCTIONAL = {"jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"}
NON_LEAF_GRAD = ("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed: it is None, "
                 "as PyTorch's is (PyTorch: UserWarning); take the gradient of the leaf it was computed from")


class GradMode(ValueRecord):
    """`torch.no_grad()` (enabled False) or `torch.enable_grad()` (enabled True): a context."""

    __slots__ = _fields = ("enabled", "pos")


class GradModeSet(GradMode):
    """`torch.set_grad_enabled(flag)`: in force from the call on, as PyTorch's constructor sets
    the mode (a statement of its own sets it for what follows); `with` it, restored at the end."""


class TorchState:
    """What the program's PyTorch autograd holds: the leaves and their .grad, the equation windows
    made with gradients off, the equations a backward without retain_graph freed."""

    def __init__(self):
        self.leaves: dict[int, int | None] = {}  # leaf id -> its .grad id (None: no backward yet)
        self.off_windows: list = []  # [start, end) equation ids made under no_grad
        self.modes: list = []  # (enabled, first equation id, the context) of the contexts entered
        self.freed: set = set()
        self.retained: dict[int, int | None] = {}  # a non-leaf after .retain_grad() -> its .grad
        self.written_tuples: dict = {}  # id of a top-level tuple kept as one array -> the tuple

    def off_at(self, i: int, now: int) -> bool:
        if self.modes and not self.modes[-1][0] and i >= self.modes[-1][1]:
            return True
        return any(start <= i < end for start, end in self.off_windows)


def _apply_as_function(cls: ClassValue, pos: Pos) -> FunctionRef:
    """`Exp.apply` as a value: the function of forward's arguments (ctx left out) that calls it."""
    params = [p for p, _ in cls.methods["forward"].params]
    if "setup_context" not in cls.methods:
        params = params[1:]
    params = [(f"{p}_", pos) for p in params]  # (never the class's own name)
    call = ast.Call("apply", [ast.Name(cls.name, pos)] + [ast.Name(p, pos) for p, _ in params], pos, method=True)
    fn = ast.FuncDef(f"{cls.name}.apply", params, [ast.Return(call, pos)], pos)
    return FunctionRef(fn, f"{cls.name}.apply", pos)


class TorchAutograd(GradCheck):
    """Part of the lowering (gradcli.language.lower): PyTorch's autograd."""

    # (made on first use, by `self.torch`; a default here, so that reading it costs no AttributeError)
    _torch_state: TorchState | None = None

    @property
    def torch(self) -> TorchState:
        state = self._torch_state
        if state is None:
            state = self._torch_state = TorchState()
        return state

    @property
    def torch_leaves(self) -> bool:
        """Whether the program has made a PyTorch leaf (`requires_grad=True`) so far."""
        state = self._torch_state
        return state is not None and bool(state.leaves)

    def remember_tuple(self, written, value: int) -> None:
        """A top-level `name = (a, b)` became the array `value`: remembered as the tuple it was."""
        if isinstance(written, Literal) and written.from_tuple and written.value.ndim:
            written = TupleValue([Literal(row, written.pos) for row in written.value], written.pos)
        if isinstance(written, TupleValue):
            self.torch.written_tuples[value] = written

    def torch_recorded(self):
        state = self._torch_state
        if state is None or not (state.off_windows or state.modes):
            return None
        now = len(self.graph.equations)
        return lambda i: not state.off_at(i, now)

    def requires_grad(self, x) -> bool:
        if type(x) is not int:
            return False
        state = self._torch_state
        if state is None or not state.leaves:
            return False
        if x in state.leaves:
            return True
        recorded = self.torch_recorded()
        if recorded is not None and not recorded(x):
            return False

        return depends_on(self.graph, sorted(state.leaves), x, recorded)[x]

    # ------------------------------------------------------------------ calls
    def torch_call(self, node: ast.Call, values: list, scope: Scope, work: list):
        """A call of PyTorch's autograd, or NOT_MINE."""
        keywords = {kw.name: v for kw, v in zip(node.keywords, values[len(node.args):])}
        args = values[:len(node.args)]
        if node.method and values:
            given = self.custom_rule_given(node, values)  # jax's f.defvjp(fwd, bwd) (custom_gradients.py)
            if given is not None:
                return given
            return self.torch_method(node, args, keywords, scope, work)
        spelled = self.spelled(node.func)
        if "requires_grad" in keywords and split_spelling(spelled)[0] == "torch":
            return self.torch_leaf_constructor(node, values, keywords, scope, work)
        holomorphic = keywords.get("holomorphic")
        if spelled.rpartition(".")[2] == "holomorphic_grad" or (
                holomorphic is not None and holomorphic is not NONE and self.constant_truth(holomorphic)):
            raise self.error(f"{node.func}: holomorphic differentiation is of complex functions, and gradcli "
                             "computes in real numbers only; differentiate the real and imaginary parts as "
                             "real functions", node.pos)
        if spelled in DEFVJP:
            return self.autograd_defvjp(node, args)
        if spelled.rpartition(".")[2] == "check_grads" and spelled.startswith("autograd."):
            return self.autograd_check_grads(node, args, keywords)
        if spelled == "jax.test_util.check_grads":  # (gradcheck.py)
            return self.jax_check_grads(node, args, keywords, scope, work)
        if spelled.startswith("autograd.") and keywords and args and isinstance(args[0], FUNCTION_VALUES):
            return self.autograd_transform(spelled.rpartition(".")[2], node, args, keywords)
        if not spelled.startswith("torch."):
            return NOT_MINE
        bare = spelled.rpartition(".")[2]
        if bare in ("gradcheck", "gradgradcheck"):  # (gradcheck.py)
            return self.torch_gradcheck(bare, node, args, keywords, scope, work)
        if bare in ("no_grad", "enable_grad", "inference_mode") and not args and not keywords:
            return GradMode(bare == "enable_grad", node.pos)  # (inference mode records no gradient either)
        if bare == "set_grad_enabled" and len(args) == 1:
            return self.torch_enter(GradModeSet(bool(self.constant_truth(args[0])), node.pos))
        if spelled in ("torch.nn.Parameter", "torch.nn.parameter.Parameter") and len(args) == 1:
            flag = keywords.get("requires_grad")  # a Parameter is a leaf, made so even under no_grad
            value = self.materialize(args[0], scope, node.pos)
            if flag is not None and not self.constant_truth(flag):
                return value
            leaf = transforms.fresh(self, value, node.pos, scope)
            self.torch.leaves[leaf] = None
            return leaf
        if spelled in ("torch.autograd.grad",):
            return self.autograd_grad(node, args, keywords, scope)
        if spelled.startswith("torch.autograd.functional.") and bare in FUNCTIONAL and args \
                and isinstance(args[0], FUNCTION_VALUES):
            return self.functional(bare, node, args, keywords, scope, work)
        return NOT_MINE

    def autograd_transform(self, bare: str, node: ast.Call, args: list, keywords: dict):
        """HIPS autograd's `grad(fun, argnum=0)` and its kin, with their keyword spelled `argnum`."""

        unknown = set(keywords) - {"argnum"}
        if bare not in JAX_TRANSFORMS or unknown:
            raise self.error(f"autograd.{bare}: gradcli knows no keyword {', '.join(sorted(unknown))} here "
                             "(autograd's transforms take argnum)", node.pos)
        if len(args) > 1:
            raise self.error(f"autograd.{bare}: give argnum once", node.pos)
        return Transform(WITH_AUX.get(bare, bare), args[0], self.static_int(keywords["argnum"], "argnum", node.pos),
                         bare in WITH_AUX, node.pos, node.func)

    def torch_leaf_constructor(self, node, values, keywords, scope, work):
        """`torch.tensor(..., requires_grad=True)`: the tensor, made a leaf when the flag is true."""
        flag = bool(self.constant_truth(keywords["requires_grad"]))
        kept = [(kw, v) for kw, v in zip(node.keywords, values[len(node.args):]) if kw.name != "requires_grad"]
        inner = ast.Call(node.func, node.args, node.pos, [kw for kw, _ in kept], node.symbol, node.method)
        value = self.call(inner, values[:len(node.args)] + [v for _, v in kept], scope, work)
        value = self.materialize(value, scope, node.pos)
        if not flag:
            return value
        if written_integer(self, inner):
            raise self.error("Only Tensors of floating point and complex dtype can require gradients (PyTorch: "
                             "RuntimeError): write the values as floats (2.0), or give dtype=torch.float64", node.pos)
        leaf = transforms.fresh(self, value, node.pos, scope)
        self.torch.leaves[leaf] = None
        return leaf

    def torch_method(self, node: ast.Call, args: list, keywords: dict, scope: Scope, work: list):
        receiver = args[0]
        if isinstance(receiver, ObjectValue) and receiver.cls.name == CTX and node.func == "save_for_backward":
            receiver.attrs["saved_tensors"] = TupleValue(list(args[1:]), node.pos)
            return NONE
        if isinstance(receiver, ClassValue) and node.func == "apply" and "backward" in receiver.methods \
                and "forward" in receiver.methods:
            return self.function_apply(receiver, node, args[1:], scope, work)
        if node.func == "backward" and type(receiver) is int:
            gradient = keywords.get("gradient", args[1] if len(args) > 1 else None)
            retain = keywords.get("retain_graph", args[2] if len(args) > 2 else None)
            create = keywords.get("create_graph", args[3] if len(args) > 3 else None)
            create = create is not None and create is not NONE and bool(self.constant_truth(create))
            retain = create if retain is None or retain is NONE else bool(self.constant_truth(retain))
            only = _backward_inputs(self, node, keywords, args, scope)
            self.backward(receiver, gradient, retain, create, node, scope, only)
            return NONE
        if node.func == "requires_grad_" and type(receiver) is int:
            flag = args[1] if len(args) > 1 else keywords.get("requires_grad")
            if flag is not None and not self.constant_truth(flag):
                return receiver
            if self.requires_grad(receiver) and receiver not in self.torch.leaves:
                raise self.error("you can only change requires_grad flags of leaf variables (PyTorch: "
                                 "RuntimeError); use .detach().requires_grad_()", node.pos)
            leaf = transforms.fresh(self, receiver, node.pos, scope)
            self.torch.leaves[leaf] = None
            self.rebind(node.args[0], leaf, scope)
            return leaf
        held = node.args[0].id.removesuffix(".data") if isinstance(node.args[0], ast.Name) else ""  # (w.grad.data)
        if node.func == "zero_" and held.endswith(".grad"):
            owner = self.resolve(ast.Name(held[:-len(".grad")], node.pos), scope)
            if owner in self.torch.leaves and self.torch.leaves[owner] is not None:
                zeros = self.graph.add_constant(np.zeros(self.graph.shapes[owner]), node.pos, scope.stack)
                self.rebind_id(self.torch.leaves[owner], zeros, scope)  # in place: every name holding it
                self.torch.leaves[owner] = zeros
                return zeros
        if node.func == "retain_grad" and type(receiver) is int:
            if receiver not in self.torch.leaves:
                self.torch.retained.setdefault(receiver, None)
            return NONE
        if node.func in ("expand_as", "view_as", "reshape_as") and type(receiver) is int and len(args) == 2:
            shape = self.shape_of(args[1])  # x.expand_as(y): x broadcast to y's shape (view_as: reshaped)
            op = "broadcast_to" if node.func == "expand_as" else "reshape"
            return self.emit(OPS[op], (receiver,), {"shape": shape}, node.pos, node.func, scope)
        if node.func == "register_hook":
            raise self.error("Tensor.register_hook is not supported: gradcli's gradients are equations of the "
                             "program; multiply the gradient where it is used", node.pos)
        return NOT_MINE

    def in_place_update(self, stmt: ast.Assign, value, scope: Scope):
        """`w -= lr * w.grad` where w is a leaf: PyTorch updates the leaf in place, so w stays the
        leaf (its .grad kept) under torch.no_grad(), and refuses it where gradients are recorded."""
        state = self._torch_state
        old = self.globals.get(stmt.name)
        node = stmt.value
        if state is None or type(old) is not int or old not in state.leaves or not isinstance(node, ast.Call) \
                or not node.args or not isinstance(node.args[0], ast.Name) or node.args[0].id != stmt.name \
                or node.pos.start <= node.args[0].pos.start:  # (an augmented call starts at its operator)
            return value
        if not (state.modes and not state.modes[-1][0]):
            raise self.error("a leaf Variable that requires grad is being used in an in-place operation "
                             "(PyTorch: RuntimeError): update it inside `with torch.no_grad():`", node.pos)
        leaf = transforms.fresh(self, self.materialize(value, scope, node.pos), node.pos, scope)
        state.leaves[leaf] = state.leaves.pop(old)
        self.rebind_id(old, leaf, scope)
        return leaf

    def function_apply(self, cls: ClassValue, node: ast.Call, args: list, scope: Scope, work: list):
        """`Exp.apply(x)` of a torch.autograd.Function subclass: forward(ctx, *args) gives the value,
        backward(ctx, grad_output) the gradient of the call (custom_gradients.py builds it)."""
        if any(a is NONE for a in args):
            raise self.error(f"{cls.name}.apply: None as an argument is not supported: leave it out", node.pos)
        xs = [self.materialize(a, scope, node.pos) for a in args]
        needs = [Literal(np.float64(self.requires_grad(x)), node.pos, boolean=True) for x in xs]
        ctx = ObjectValue(ClassValue(CTX, {}, {}, node.pos, ()), {"needs_input_grad": TupleValue(needs, node.pos)},
                          node.pos)
        named = ast.Call(f"{cls.name}.apply", node.args, node.pos)  # (how check names a wrong rule)
        work.append((_FINISH, ("custom", "function_forward", cls, ctx, xs, named), scope))
        forward = cls.methods["forward"]
        if "setup_context" in cls.methods:  # PyTorch 2's style: forward(*args), then setup_context(ctx, inputs, output)
            work.append((_FINISH, ("custom", "function_setup", cls, ctx, xs, named), scope))
            call = ast.Call(forward.name, list(node.args[1:]), node.pos)
            return self.call_user(forward, call, xs, scope, work, None)
        call = ast.Call(forward.name, [ast.Name("ctx", node.pos)] + list(node.args[1:]), node.pos)
        return self.call_user(forward, call, [ctx] + xs, scope, work, None)

    def rebind_id(self, old: int, new: int, scope: Scope) -> None:
        """An in-place update of the tensor `old` (a .grad): every name bound to it now holds `new`."""
        self.rebind_in_lists(old, new, scope)  # (lists.py)
        for table in (self.globals, self.graph.names):
            for name, value in list(table.items()):
                if type(value) is int and value == old:
                    table[name] = new
        while scope is not None and scope.locals is not None:
            for name, value in list(scope.locals.items()):
                if type(value) is int and value == old:
                    scope.locals[name] = new
            scope = scope.parent

    def rebind(self, target, value: int, scope: Scope) -> None:
        if not isinstance(target, ast.Name) or "." in target.id:
            return
        if scope.locals is not None and target.id in scope.locals:
            scope.locals[target.id] = value
        else:
            self.globals[target.id] = value
            self.graph.names[target.id] = value

    # ------------------------------------------------------------------ backward
    def backward_path(self, ys: list, leaves: list, recorded) -> list:
        """The equations a backward from `ys` to `leaves` runs through."""

        upto = max(ys)
        reach = depends_on(self.graph, leaves, upto, recorded)
        ancestor = bytearray(upto + 1)
        for y in ys:
            ancestor[y] = 1
        stop = min(leaves)
        path = []
        for i in range(upto, stop - 1, -1):
            if ancestor[i] and reach[i] and (recorded is None or recorded(i)):
                path.append(i)
                for j in self.graph.equations[i].inputs:
                    ancestor[j] = 1
        return path

    def check_not_freed(self, path: list, pos: Pos) -> None:
        state = self.torch
        if any(i in state.freed for i in path):
            raise self.error("Trying to backward through the graph a second time (PyTorch: RuntimeError): the "
                             "first backward() freed the values it saved; call the first one with "
                             "retain_graph=True", pos)

    def free(self, path: list) -> None:
        equations = self.graph.equations
        self.torch.freed.update(i for i in path if equations[i].op.name not in SAVES_NOTHING)

    def backward(self, y: int, gradient, retain: bool, create: bool, node: ast.Call, scope: Scope,
                 only: list | None = None) -> None:
        """y.backward(...): the gradient of y accumulated into the .grad of every leaf (and retained
        tensor) it depends on; with `inputs=` (`only`), into those tensors' .grad alone, as PyTorch."""
        state = self.torch
        if not self.requires_grad(y):
            raise self.error("element 0 of tensors does not require grad and does not have a grad_fn "
                             "(PyTorch: RuntimeError): make a leaf with requires_grad=True", node.pos)
        shape = self.graph.shapes[y]
        grad_ys = None
        if gradient is not None and gradient is not NONE:
            seed = self.materialize(gradient, scope, node.pos)
            if self.graph.shapes[seed] != shape:
                raise self.error(f"Mismatch in shape: gradient has shape {self.graph.shapes[seed]} and output "
                                 f"has shape {shape} (PyTorch: RuntimeError)", node.pos)
            grad_ys = [seed]
        elif shape is not None and int(np.prod(shape)) != 1:
            raise self.error("grad can be implicitly created only for scalar outputs (PyTorch: RuntimeError): "
                             f"this output has shape {shape}; pass gradient=torch.ones_like(out)", node.pos)
        recorded = self.torch_recorded()
        leaves = [leaf for leaf in state.leaves if leaf <= y]
        path = self.backward_path([y], leaves, recorded)
        self.check_not_freed(path, node.pos)
        receiver = node.args[0]
        by = f"{receiver.id if isinstance(receiver, ast.Name) else 'tensor'}.backward"
        held = [(state.leaves, leaf) for leaf in leaves] + [(state.retained, i) for i in state.retained if i <= y]
        if only is not None:
            for i in only:  # a non-leaf named in inputs= gets a .grad, as retain_grad() gives it
                if i not in state.leaves:
                    state.retained.setdefault(i, None)
            held = [(grads, i) for grads, i in held if i in only]
            held += [(state.retained, i) for i in only if i not in state.leaves and (state.retained, i) not in held]
        found = transforms.differentiate(self, [y], [i for _, i in held], node.pos, by, grad_ys, recorded)
        for (grads, leaf), g in zip(held, found):
            if g is None:
                continue
            if not create:
                g = self.emit(OPS["stop_gradient"], (g,), {}, node.pos, "backward", scope)
            previous = grads[leaf]
            if previous is None:
                grads[leaf] = g
                continue
            grads[leaf] = self.emit(OPS["add"], (previous, g), {}, node.pos, "backward", scope)
            if not create:  # PyTorch accumulates in place: a name holding the old .grad sees the sum
                self.rebind_id(previous, grads[leaf], scope)
        if not retain:
            self.free(path)

    def autograd_grad(self, node: ast.Call, args: list, keywords: dict, scope: Scope):
        """torch.autograd.grad(outputs, inputs, grad_outputs=None, retain_graph=None,
        create_graph=False, allow_unused=None): a tuple, one gradient per input."""

        names = ["outputs", "inputs", "grad_outputs", "retain_graph", "create_graph"]
        given = dict(zip(names, args))
        given.update(keywords)
        if "outputs" not in given or "inputs" not in given:
            raise self.error("torch.autograd.grad(outputs, inputs, ...): give both", node.pos)
        ys, _ = self.sources(given["outputs"], node.pos, scope)
        xs, _ = self.sources(given["inputs"], node.pos, scope)
        upstream = given.get("grad_outputs")
        grad_ys = None if upstream is None or upstream is NONE else self.sources(upstream, node.pos, scope)[0]

        def flag(name, default):
            value = given.get(name)
            return default if value is None or value is NONE else bool(self.constant_truth(value))

        create = flag("create_graph", False)
        retain = flag("retain_graph", create)
        allow_unused = flag("allow_unused", False) or flag("materialize_grads", False)
        for k, y in enumerate(ys):
            if not self.requires_grad(y):
                raise self.error(f"element {k} of tensors does not require grad and does not have a grad_fn "
                                 "(PyTorch: RuntimeError)", node.pos)
            if grad_ys is None and self.graph.shapes[y] is not None and int(np.prod(self.graph.shapes[y])) != 1:
                raise self.error("grad can be implicitly created only for scalar outputs (PyTorch: RuntimeError): "
                                 "pass grad_outputs", node.pos)
        recorded = self.torch_recorded()
        path = self.backward_path(ys, xs, recorded)
        self.check_not_freed(path, node.pos)
        found = transforms.differentiate(self, ys, xs, node.pos, "torch.autograd.grad", grad_ys, recorded)
        out = []
        for k, (x, g) in enumerate(zip(xs, found)):
            if g is None:
                if not allow_unused:
                    raise self.error(f"The differentiated Tensor at index {k} appears to not have been used in the "
                                     "graph (PyTorch: RuntimeError). Set allow_unused=True if this is the desired "
                                     "behavior", node.pos)
                out.append(self.zeros_like(x, scope) if flag("materialize_grads", False) else NONE)
                continue
            out.append(g if create else self.emit(OPS["stop_gradient"], (g,), {}, node.pos, "grad", scope))
        if not retain:
            self.free(path)
        return TupleValue(out, node.pos)

    # ------------------------------------------------------------------ attributes and contexts
    def torch_attribute(self, target, name: str, pos: Pos, scope: Scope):
        """`.grad`, `.requires_grad`, `.data`, `.grad_fn`, `.is_leaf` of a value, or None."""
        if isinstance(target, ClassValue) and name == "apply" and "forward" in target.methods:
            return _apply_as_function(target, pos)  # `gradcheck(Exp.apply, (x,))`
        if name not in ATTRIBUTES or type(target) is not int:
            return None
        state = self.torch
        if name == "requires_grad":
            return Literal(np.float64(self.requires_grad(target)), pos, boolean=True)
        if name == "is_leaf":
            return Literal(np.float64(target in state.leaves or not self.requires_grad(target)), pos, boolean=True)
        if name == "data":

            return self.emit(OPS["stop_gradient"], (target,), {}, pos, "data", scope)
        if name == "grad_fn":
            if target in state.leaves or not self.requires_grad(target):
                return NONE
            return Text(f"<{self.graph.equations[target].label} backward>", pos)
        for grads in (state.leaves, state.retained):
            if target in grads:
                return NONE if grads[target] is None else grads[target]
        if self.requires_grad(target):
            self.graph.warnings.append((NON_LEAF_GRAD, pos))
        return NONE

    def torch_enter(self, context: GradMode) -> GradMode:
        return enter_mode(self.torch, context, len(self.graph.equations))

    def torch_leave(self, context: GradMode) -> None:
        leave_mode(self.torch, context, len(self.graph.equations))


def enter_mode(state: TorchState, context: GradMode, now: int) -> GradMode:
    """Enter a grad mode at equation `now`: an off mode it covers keeps its window up to now."""
    if state.modes and not state.modes[-1][0]:
        state.off_windows.append((state.modes[-1][1], now))
    state.modes.append((context.enabled, now, context))
    return context


def leave_mode(state: TorchState, context: GradMode, now: int) -> None:
    """Leave `context` at equation `now`: the mode is again the one before it was entered, as
    PyTorch's __exit__ restores it (a `torch.set_grad_enabled(flag)` statement inside the block ends
    with it)."""
    top = True  # (an entry under the top was shut at the entry above it: its window is kept)
    while state.modes:
        enabled, start, owner = state.modes.pop()
        if top and not enabled:
            state.off_windows.append((start, now))
        top = False
        if owner is context:
            break
    if state.modes:
        state.modes[-1] = (state.modes[-1][0], now, state.modes[-1][2])


class TorchFunctional:
    """Part of the lowering (gradcli.language.lower): torch.autograd.functional, and the work
    items after a function's body that PyTorch's spellings push."""

    def functional(self, kind: str, node: ast.Call, args: list, keywords: dict, scope: Scope, work: list):
        """jacobian(f, inputs), hessian(f, inputs), vjp(f, inputs, v), jvp(f, inputs, v),
        hvp(f, inputs, v), vhp(f, inputs, v): f applied to fresh copies of the inputs, the
        derivative taken when its body is done (torch_finish)."""

        inputs = _written_tuple(self, self.as_tuple(keywords.get("inputs", args[1] if len(args) > 1 else None)))
        if inputs is None:
            raise self.error(f"torch.autograd.functional.{kind}(func, inputs, ...): give the inputs", node.pos)
        listed = isinstance(inputs, TupleValue)
        primals = inputs.items if listed else [inputs]
        v = keywords.get("v", args[2] if len(args) > 2 else None)
        v = None if v is None or v is NONE else _written_tuple(self, self.as_tuple(v))
        if v is not None:
            v = [self.materialize(t, scope, node.pos) for t in (v.items if isinstance(v, TupleValue) else [v])]
        if kind in ("jvp", "hvp", "vhp") and v is None and not all(
                self.graph.shapes[self.materialize(p, scope, node.pos)] == () for p in primals):
            raise self.error(f"torch.autograd.functional.{kind}: give v, the vector to multiply", node.pos)
        xs = [transforms.fresh(self, self.materialize(p, scope, node.pos), node.pos, scope) for p in primals]
        create = keywords.get("create_graph")
        create = create is not None and bool(self.constant_truth(create))
        work.append((_FINISH, ("torch", kind, xs, listed, v, create, node), scope))
        return self.call_on(args[0], xs, node.pos, scope, work)

    def decorated_call(self, fn: ast.FuncDef, node, values: list, work: list, scope: Scope) -> None:
        """A call of a user function, before its body: @torch.no_grad() or @torch.enable_grad() run
        the body in that mode (entered now, left by a work item after its result); a custom
        gradient's decorator makes the call's gradient the user's rule (custom_gradients.py)."""

        if fn.decorators:
            self.custom_call(fn, node, values, work, scope)

        for decorator in fn.decorators:
            spelled = self.spelled(decorator.func if isinstance(decorator, ast.Call) else
                                   getattr(decorator, "id", ""))
            if spelled in ("torch.no_grad", "torch.enable_grad", "torch.inference_mode"):
                mode = GradMode(spelled == "torch.enable_grad", decorator.pos)
                work.append((_FINISH, ("torch_mode", mode), scope))
                self.torch_enter(mode)

    def torch_finish(self, item, values: list, scope: Scope) -> None:
        """A work item after a function's body: leave a decorator's grad mode, or take the
        derivative torch.autograd.functional asked for."""
        if item[0] == "torch_mode":
            self.torch_leave(item[1])
        else:
            values.append(self.functional_result(item, values.pop(), scope))

    def functional_result(self, item, result, scope: Scope):
        _, kind, xs, listed, v, create, node = item
        pos, by = node.pos, f"torch.autograd.functional.{kind}"
        y = self.materialize(result, scope, pos)
        shapes = self.graph.shapes
        if kind == "jacobian":
            parts = [transforms.jacobian(self, y, x, pos, by, scope) for x in xs]
            return TupleValue(parts, pos) if listed else parts[0]
        if kind in ("hessian", "hvp", "vhp"):
            if shapes[y] != ():
                raise self.error(f"{by}: the function must return a single-element tensor, it has shape "
                                 f"{shapes[y]} (PyTorch: RuntimeError)", pos)
            grads = transforms.differentiate(self, [y], xs, pos, by)
            grads = [self.zeros_like(x, scope) if g is None else g for x, g in zip(xs, grads)]
            if kind == "hessian":
                rows = [TupleValue([transforms.jacobian(self, g, x, pos, by, scope) for x in xs], pos)
                        for g in grads]
                return TupleValue(rows, pos) if listed else rows[0].items[0]
            # the Hessian is symmetric: H v = v^T H, one reverse pass over the gradient
            seeds = v if v is not None else [self.graph.add_constant(np.ones(()), pos, scope.stack)]
            dot = None

            for g, t in zip(grads, seeds):
                term = self.emit(OPS["sum"], (self.emit(OPS["multiply"], (g, t), {}, pos, "*", scope),),
                                 {"axis": None, "keepdims": False}, pos, "sum", scope)
                dot = term if dot is None else self.emit(OPS["add"], (dot, term), {}, pos, "+", scope)
            products = transforms.differentiate(self, [dot], xs, pos, by)
            products = [self.zeros_like(x, scope) if p is None else p for x, p in zip(xs, products)]
            return TupleValue([y, TupleValue(products, pos) if listed else products[0]], pos)
        if kind == "vjp":
            seeds = None if v is None else v[:1]
            if seeds is None and shapes[y] != ():
                raise self.error(f"{by}: give v for a function whose output is not a single number", pos)
            found = transforms.differentiate(self, [y], xs, pos, by, seeds)
            found = [self.zeros_like(x, scope) if g is None else g for x, g in zip(xs, found)]
            return TupleValue([y, TupleValue(found, pos) if listed else found[0]], pos)
        tangents = v if v is not None else [self.graph.add_constant(np.ones(()), pos, scope.stack)]
        if len(tangents) != len(xs):
            raise self.error(f"{by}: v must have one tensor per input", pos)
        (out,) = transforms.pushforward(self, [y], xs, tangents, pos, by, scope)
        return TupleValue([y, out], pos)


def _written_tuple(lowering, value):
    """`inputs = (a, b)` bound at the top level is kept as one array; PyTorch's functional API
    reads it as the tuple it was written as."""
    state = getattr(lowering, "_torch_state", None)
    if type(value) is int and state is not None and value in state.written_tuples:
        return state.written_tuples[value]
    return value


def _backward_inputs(lowering, node: ast.Call, keywords: dict, args: list, scope: Scope) -> list | None:
    """The tensors of `y.backward(inputs=...)` (None when not given): a tensor, or a list or
    tuple written with the tensors' names (a list display is otherwise stacked into one array)."""
    written = next((kw.value for kw in node.keywords if kw.name == "inputs"),
                   node.args[4] if len(node.args) > 4 else None)
    value = keywords.get("inputs", args[4] if len(args) > 4 else None)
    if written is None or value is NONE:
        return None
    if isinstance(written, (ast.Array, ast.Tuple)):
        if not all(isinstance(item, ast.Name) for item in written.items):
            raise lowering.error("backward(inputs=[...]): name the tensors (a leaf or a tensor the program "
                                 "named), as in inputs=[w, b]", written.pos)
        return [lowering.materialize(lowering.resolve(item, scope), scope, item.pos) for item in written.items]
    return lowering.sources(value, node.pos, scope)[0]
