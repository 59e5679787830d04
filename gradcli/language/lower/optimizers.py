"""PyTorch's optimizers in a training loop: `opt = torch.optim.SGD([w, b], lr=0.1)`, then
`opt.zero_grad()`, `loss.backward()`, `opt.step()` (a Python `for` loop unrolls the steps).

`step()` updates each parameter whose `.grad` is set in place, under no gradient, with PyTorch's
formulas in PyTorch's order (SGD with momentum, dampening, Nesterov and weight decay; Adam and
AdamW with their bias corrections): the name is bound to a new leaf holding the new value, its
`.grad` kept, as torch_autograd.py's `w -= lr * w.grad` under `torch.no_grad()` does.
`zero_grad()` sets every `.grad` to None (PyTorch's default; `set_to_none=False` makes zeros).
Options gradcli does not read (amsgrad; differentiable=True, a step that carries gradients) are
refused by name; foreach, fused and capturable change no number and are left out."""
from __future__ import annotations

import math

import numpy as np

from gradcli.language import syntax as ast
from gradcli.language.dialects.spelling import composer
from gradcli.language.lower import pytrees, transforms
from gradcli.language.lower.adagrad import OPTAX_ADAGRAD, TORCH_ADAGRAD, optax_adagrad_scaled, torch_adagrad_step
from gradcli.language.lower.clipping import GradientClipping, keras_clipped
from gradcli.language.lower.optimizer_values import KerasOptimizer, OptaxState, OptaxTransform, Optimizer
from gradcli.language.lower.optax_chain import OptaxChain, trust_ratio_scaled
from gradcli.language.lower.schedules import SCHEDULE_VALUES, KerasSchedule, OptaxSchedule, Schedules, TorchScheduler
from gradcli.language.lower.transforms import FUNCTION_VALUES, ObjectValue
from gradcli.language.lower.values import NONE, Literal, Scope, Text, TupleValue
from gradcli.ops import OPS

# each optimizer's options and PyTorch's defaults (the order is the constructor's, after params)
DEFAULTS = {
    "SGD": {"lr": 0.001, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0, "nesterov": False,
            "maximize": False, "differentiable": False},
    "Adam": {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0, "amsgrad": False,
             "maximize": False, "differentiable": False},
    "AdamW": {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01, "amsgrad": False,
              "maximize": False, "differentiable": False},
    "RMSprop": {"lr": 0.01, "alpha": 0.99, "eps": 1e-8, "weight_decay": 0.0, "momentum": 0.0, "centered": False,
                "capturable": False, "foreach": None, "maximize": False, "differentiable": False},
    "Adagrad": TORCH_ADAGRAD,
}
# (the options that are True or False)
_SWITCHES = {"nesterov", "maximize", "amsgrad", "differentiable", "centered"}
# the methods of a program's nn.Module subclass that torch.nn.Module gives it (module_method)
MODULE_METHODS = ("parameters", "named_parameters", "zero_grad", "train", "eval")
# options that change no number here
_IGNORED = {"foreach", "fused", "capturable"}


def _rmsprop_step(o: dict, state: dict, p: int, grad: int, op, number) -> int:
    """PyTorch's RMSprop step (its single-tensor order): the average of squares, centered by the
    average gradient, then a momentum buffer or the step itself."""
    squares = op("multiply", op("multiply", number(1 - o["alpha"]), grad), grad)
    square_avg = squares if state.get("square_avg") is None else \
        op("add", op("multiply", state["square_avg"], number(o["alpha"])), squares)
    state["square_avg"] = square_avg
    if o["centered"]:
        grad_avg = op("multiply", grad, number(1 - o["alpha"])) if state.get("grad_avg") is None else \
            op("add", state["grad_avg"], op("multiply", op("subtract", grad, state["grad_avg"]), number(1 - o["alpha"])))
        state["grad_avg"] = grad_avg
        avg = op("sqrt", op("subtract", square_avg, op("multiply", grad_avg, grad_avg)))
    else:
        avg = op("sqrt", square_avg)
    avg = op("add", avg, number(o["eps"]))
    if o["momentum"] > 0:
        step = op("divide", grad, avg)
        buf = step if state.get("momentum_buffer") is None else \
            op("add", op("multiply", state["momentum_buffer"], number(o["momentum"])), step)
        state["momentum_buffer"] = buf
        return op("add", p, op("multiply", buf, number(-o["lr"])))
    return op("add", p, op("divide", op("multiply", number(-o["lr"]), grad), avg))


class TorchOptimizers(GradientClipping, Schedules):
    """Part of the lowering (gradcli.language.lower): torch.optim's optimizers (and, from its bases,
    clipping.py's gradient clipping and schedules.py's learning-rate schedules)."""

    def torch_optimizer(self, kind: str, node: ast.Call, values: list, scope: Scope) -> Optimizer:
        """`torch.optim.<kind>(params, lr, ...)`: params a list or tuple of leaves, or a program's
        module's `model.parameters()`."""
        label = node.func
        if not node.args:
            raise self.error(f"{label}() needs its parameters: {label}([w, b], lr=...)", node.pos)
        given, written = values[0], node.args[0]
        params = list(given.items) if isinstance(given, TupleValue) else None
        if params is None or not all(type(p) is int for p in params):
            raise self.error(f"{label}(params, ...): write the parameters as a list of the tensors ([w, b]), or "
                             "model.parameters() of a module the program defines", written.pos)
        for k, p in enumerate(params):
            if p not in self.torch.leaves:
                name = written.items[k].id if isinstance(written, (ast.Array, ast.Tuple)) \
                    and isinstance(written.items[k], ast.Name) else f"parameter {k}"
                raise self.error(f"{name} is not a leaf tensor with requires_grad=True: {label} can't optimize a "
                                 "non-leaf tensor (PyTorch: ValueError)", written.pos)
        if len(set(params)) != len(params):  # (PyTorch warns, then steps such a parameter once per mention)
            raise self.error(f"{label}(params, ...): a parameter is given twice; give each once", written.pos)
        given = self.arguments_by_name(node, values, ("params", *DEFAULTS[kind], *_IGNORED))  # (function_values.py)
        given = {name: value for name, value in given.items() if name != "params" and name not in _IGNORED}
        options = dict(DEFAULTS[kind])
        for name, value in given.items():
            options[name] = self._option(label, name, value, node.pos)
        for switch in ("amsgrad", "differentiable"):
            if switch in given and self.constant_truth(given[switch]):
                raise self.error(f"{label}({switch}=True) is not supported: leave it out", node.pos)
        if kind == "SGD" and options["nesterov"] and (options["momentum"] <= 0 or options["dampening"] != 0):
            raise self.error("Nesterov momentum requires a momentum and zero dampening (PyTorch: ValueError)", node.pos)
        return Optimizer(kind, params, options, {}, node.pos)

    def module_method(self, obj: ObjectValue, node: ast.Call, args: list):
        """An nn.Module's `model.parameters()` and `named_parameters()` (its leaves in PyTorch's
        order: the module's own in the order they were set, then each sub-module's, named
        `sub.w`), `model.zero_grad()` (each one's .grad set to None), and `model.train()`/`model.eval()`
        (the module itself: gradcli's functionals take no training mode)."""
        if node.func in ("train", "eval"):
            return obj
        leaves = self.torch.leaves
        found, stack = {}, [("", obj)]
        while stack:  # (no recursion: sub-modules are walked with a stack, before-order)
            prefix, module = stack.pop()
            attributes = list(module.attrs.items())
            for name, value in attributes:
                if type(value) is int and value in leaves and value not in found:
                    found[value] = prefix + name
            stack.extend(reversed([(f"{prefix}{name}.", v) for name, v in attributes if isinstance(v, ObjectValue)]))
        if node.func == "parameters":
            return TupleValue(list(found), node.pos)
        if node.func == "named_parameters":
            return TupleValue([TupleValue([Text(name, node.pos), p], node.pos) for p, name in found.items()], node.pos)
        for p in found:
            leaves[p] = None
        return NONE

    def _option(self, label: str, name: str, value, pos):
        if name == "betas":  # (a tuple of two numbers is read as a literal array of two)
            if isinstance(value, Literal) and value.value.shape == (2,):
                return tuple(float(v) for v in value.value)
            if not isinstance(value, TupleValue) or len(value.items) != 2:
                raise self.error(f"{label}(betas=...) takes two numbers: betas=(0.9, 0.999)", pos)
            return tuple(float(self.static_param("betas", v, label, pos)) for v in value.items)
        number = self.static_param(name, self.known_or_given(value), label, pos)
        if isinstance(number, (str, tuple)):
            raise self.error(f"{label}({name}=...) takes a number, not {number!r}", pos)
        return bool(number) if name in _SWITCHES else float(number)

    def optimizer_method(self, optimizer: Optimizer, node: ast.Call, values: list, scope: Scope):
        """`opt.zero_grad(set_to_none=True)` and `opt.step()` (values: the receiver's, then the arguments')."""
        leaves = self.torch.leaves
        args = values[1:len(node.args)]
        keywords = {kw.name: v for kw, v in zip(node.keywords, values[len(node.args):])}
        if node.func == "zero_grad":
            to_none = keywords.get("set_to_none", args[0] if args else None)
            to_none = to_none is None or to_none is NONE or bool(self.constant_truth(to_none))
            for p in optimizer.params:
                if leaves.get(p) is not None:
                    leaves[p] = None if to_none else self.graph.add_constant(
                        np.zeros(self.graph.shapes[p]), node.pos, scope.stack)
            return NONE
        if node.func != "step" or args or keywords:
            raise self.error(f"{optimizer.kind}.{node.func}(...) is not supported: gradcli reads zero_grad() and step()",
                             node.pos)
        for k, p in enumerate(optimizer.params):
            grad = leaves.get(p)
            if grad is None:
                continue
            new = self._updated(optimizer, k, p, grad, node, scope)
            leaf = transforms.fresh(self, self.emit(OPS["stop_gradient"], (new,), {}, node.pos, "step", scope),
                                    node.pos, scope)
            leaves[leaf] = leaves.pop(p)  # (in place: the same tensor, its .grad kept)
            self.rebind_id(p, leaf, scope)
            self._rebind_attributes(p, leaf)
            optimizer.params[k] = leaf
        return NONE

    def _updated(self, optimizer: Optimizer, k: int, p: int, grad: int, node: ast.Call, scope: Scope) -> int:
        """The parameter after one step, by PyTorch's formulas in PyTorch's order."""
        o = optimizer.options

        op, number = composer(self, node.pos, "step", scope)

        if o["maximize"]:
            grad = op("negative", grad)
        if optimizer.kind == "AdamW":  # decoupled weight decay: the parameter shrinks first
            p = op("multiply", p, number(1 - o["lr"] * o["weight_decay"]))
        elif o["weight_decay"]:
            grad = op("add", grad, op("multiply", p, number(o["weight_decay"])))
        state = optimizer.state.setdefault(k, {})
        if optimizer.kind == "RMSprop":
            return _rmsprop_step(o, state, p, grad, op, number)
        if optimizer.kind == "Adagrad":  # (adagrad.py)
            return torch_adagrad_step(o, state, p, grad, op, number)
        if optimizer.kind == "SGD":
            if o["momentum"]:
                buf = state.get("momentum_buffer")
                buf = grad if buf is None else op("add", op("multiply", buf, number(o["momentum"])),
                                                  op("multiply", grad, number(1 - o["dampening"])))
                state["momentum_buffer"] = buf
                grad = op("add", grad, op("multiply", buf, number(o["momentum"]))) if o["nesterov"] else buf
            return op("add", p, op("multiply", grad, number(-o["lr"])))
        beta1, beta2 = o["betas"]
        zeros = state.get("exp_avg")
        exp_avg = op("multiply", grad, number(1 - beta1)) if zeros is None else \
            op("add", zeros, op("multiply", op("subtract", grad, zeros), number(1 - beta1)))  # (lerp)
        squares = op("multiply", op("multiply", grad, grad), number(1 - beta2))
        exp_avg_sq = squares if state.get("exp_avg_sq") is None else \
            op("add", op("multiply", state["exp_avg_sq"], number(beta2)), squares)
        state["exp_avg"], state["exp_avg_sq"] = exp_avg, exp_avg_sq
        step = state["step"] = state.get("step", 0) + 1  # (per parameter: one without a .grad is not stepped)
        step_size = o["lr"] / (1 - beta1 ** step)
        denom = op("add", op("divide", op("sqrt", exp_avg_sq), number((1 - beta2 ** step) ** 0.5)), number(o["eps"]))
        return op("add", p, op("multiply", op("divide", exp_avg, denom), number(-step_size)))

    def _rebind_attributes(self, old: int, new: int) -> None:
        """The objects of the program's classes (a module's `self.w`) that held `old` hold `new`."""
        stack = [v for v in self.globals.values() if isinstance(v, ObjectValue)]
        seen = set()
        while stack:
            obj = stack.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            for name, value in obj.attrs.items():
                if type(value) is int and value == old:
                    obj.attrs[name] = new
                elif isinstance(value, ObjectValue):
                    stack.append(value)


# ---------------------------------------------------------------------------------------- optax
# optax's optimizers: their options in the constructor's order, and optax's defaults
OPTAX_DEFAULTS = {
    "sgd": {"learning_rate": None, "momentum": None, "nesterov": False},
    "adam": {"learning_rate": None, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "eps_root": 0.0, "nesterov": False},
    "adamw": {"learning_rate": None, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "eps_root": 0.0, "weight_decay": 1e-4,
              "nesterov": False},
    "rmsprop": {"learning_rate": None, "decay": 0.9, "eps": 1e-8, "initial_scale": 0.0, "eps_in_sqrt": True,
                "centered": False, "momentum": None, "nesterov": False, "bias_correction": False},
    "adagrad": OPTAX_ADAGRAD,
    # (the transformation adam is made of, before scale_by_learning_rate: in a chain, with optax.scale)
    "scale_by_adam": {"b1": 0.9, "b2": 0.999, "eps": 1e-8, "eps_root": 0.0, "mu_dtype": None, "nesterov": False},
    # (scale_by_adam, add_decayed_weights, scale_by_trust_ratio, scale_by_learning_rate)
    "lamb": {"learning_rate": None, "b1": 0.9, "b2": 0.999, "eps": 1e-6, "eps_root": 0.0, "weight_decay": 0.0,
             "mask": None},
}
_OPTAX_SWITCHES = {"nesterov", "eps_in_sqrt", "centered", "bias_correction"}


OPTIMIZER_VALUES = (Optimizer, OptaxTransform, OptaxState)  # (and KerasOptimizer, below)


def _optax_rmsprop(o: dict, state: OptaxState, grads: list, op, number, count: int):
    """optax.rmsprop's update (scale_by_rms, then scale_by_learning_rate, then trace where a
    momentum is given) and its new state, leaf by leaf."""
    decay = o["decay"]
    nu = [op("add", op("multiply", number(1 - decay), op("square", g)), op("multiply", number(decay), v))
          for g, v in zip(grads, state.moments["nu"])]
    if o["eps_in_sqrt"]:
        scaling = [op("rsqrt", op("add", v, number(o["eps"]))) for v in nu]
    else:
        scaling = [op("divide", number(1.0), op("add", op("sqrt", v), number(o["eps"]))) for v in nu]
    updates = [op("multiply", op("multiply", s, g), number(-o["learning_rate"])) for s, g in zip(scaling, grads)]
    moments = {"nu": nu}
    if o["momentum"]:
        trace = [op("add", u, op("multiply", number(o["momentum"]), t)) for u, t in zip(updates, state.moments["trace"])]
        moments["trace"] = updates = trace
    return updates, OptaxState("rmsprop", count, moments, state.pos)


class OptaxOptimizers(OptaxChain):
    """Part of the lowering (gradcli.language.lower): optax's sgd, adam and adamw, their init and
    update, and optax.apply_updates, by optax's formulas (optax 0.2.8's `trace`, `scale_by_adam`,
    `add_decayed_weights`, `scale_by_learning_rate`), leaf by leaf over JAX's trees (and, from
    optax_chain.py, clip, clip_by_global_norm and chain)."""

    def optax_transform(self, kind: str, node: ast.Call, values: list) -> OptaxTransform:
        label = node.func
        required = int("learning_rate" in OPTAX_DEFAULTS[kind])  # (scale_by_adam has none)
        given = self.arguments_by_name(node, values, tuple(OPTAX_DEFAULTS[kind]), required)  # (function_values.py)
        options = dict(OPTAX_DEFAULTS[kind])
        for name, value in given.items():
            if value is NONE:
                options[name] = None
                continue
            if name == "mu_dtype":
                raise self.error(f"{label}(mu_dtype=...) is not supported: leave it out (gradcli keeps the moments "
                                 "in float64)", node.pos)
            if name == "mask":
                raise self.error(f"{label}(mask=...) is not supported: leave it out (every leaf is decayed)", node.pos)
            if name == "learning_rate" and isinstance(value, OptaxSchedule):  # (schedules.py)
                options[name] = value
                continue
            if isinstance(value, FUNCTION_VALUES):
                raise self.error(f"{label}({name}=...): a schedule is not supported; give a number", node.pos)
            number = self.static_param(name, self.known_or_given(value), label, node.pos)
            if isinstance(number, (str, tuple)):
                raise self.error(f"{label}({name}=...) takes a number, not {number!r}", node.pos)
            options[name] = bool(number) if name in _OPTAX_SWITCHES else float(number)
        for switch in ("nesterov", "centered", "bias_correction"):
            if (kind != "sgd" or switch != "nesterov") and options.get(switch):
                raise self.error(f"{label}({switch}=True) is not supported: leave it out", node.pos)
        return OptaxTransform(kind, options, node.pos)

    def optax_method(self, transform: OptaxTransform, node: ast.Call, values: list, scope: Scope):
        """`opt.init(params)` and `opt.update(grads, state, params=None)`."""
        args = values[1:len(node.args)]
        keywords = {kw.name: v for kw, v in zip(node.keywords, values[len(node.args):])}
        if node.func == "init" and len(args) + len(keywords) == 1:
            params = self._tree_leaves(args[0] if args else keywords.get("params"), node, scope)
            return self.optax_initial_state(transform, params, node, scope)  # (optax_chain.py)
        if node.func != "update" or not 2 <= len(args) + len(keywords) <= 3:
            raise self.error(f"{transform.kind}.{node.func}(...) is not supported: gradcli reads init(params) and "
                             "update(grads, state, params)", node.pos)
        given = dict(zip(("updates", "state", "params"), args)) | keywords
        grads, state = given.get("updates"), given.get("state")
        if not isinstance(state, OptaxState) or not self.optax_state_matches(transform, state):
            raise self.error(f"{transform.kind}.update(grads, state): state must be what this optimizer's init "
                             "or update gave", node.pos)
        leaves = self._tree_leaves(grads, node, scope)
        params = given.get("params")
        params = None if params is None or params is NONE else self._tree_leaves(params, node, scope)
        updates, state = self.optax_updated(transform, state, leaves, params, node, scope)
        return TupleValue([pytrees.rebuild(grads, updates, node.pos), state], node.pos)

    def optax_moments(self, transform: OptaxTransform, params: list, node: ast.Call, scope: Scope) -> OptaxState:
        """An optimizer's state from init(params): its moments at their starting values, count 0."""
        zeros = [self.graph.add_constant(np.zeros(self.graph.shapes[p]), node.pos, scope.stack) for p in params]
        if transform.kind == "rmsprop":
            scale = transform.options["initial_scale"]
            moments = {"nu": [self.graph.add_constant(np.full(self.graph.shapes[p], scale), node.pos, scope.stack)
                              for p in params]}
            moments.update({"trace": zeros} if transform.options["momentum"] else {})
        elif transform.kind == "sgd":
            moments = {"trace": zeros} if transform.options["momentum"] else {}
        elif transform.kind == "adagrad":  # (optax: full_like(params, initial_accumulator_value))
            moments = {"sum_of_squares": [self.graph.add_constant(
                np.full(self.graph.shapes[p], transform.options["initial_accumulator_value"]), node.pos, scope.stack)
                for p in params]}
        else:
            moments = {"mu": zeros, "nu": zeros}
        return OptaxState(transform.kind, 0, moments, node.pos)

    def apply_updates(self, node: ast.Call, values: list, scope: Scope):
        """`optax.apply_updates(params, updates)`: p + u leaf by leaf, in params' tree."""
        if len(values) != 2:
            raise self.error(f"{node.func}(params, updates) takes two trees", node.pos)
        params, updates = (self._tree_leaves(v, node, scope) for v in values)
        if len(params) != len(updates):
            raise self.error(f"{node.func}: params and updates are different trees", node.pos)
        summed = [self.emit(OPS["add"], (p, u), {}, node.pos, "apply_updates", scope) for p, u in zip(params, updates)]
        return pytrees.rebuild(values[0], summed, node.pos)

    def _tree_leaves(self, tree, node: ast.Call, scope: Scope) -> list:
        if tree is None or tree is NONE:
            raise self.error(f"{node.func}(...) needs a tree of arrays", node.pos)
        return [self.materialize(leaf, scope, node.pos) for leaf in pytrees.leaves(tree)]

    def _optax_step(self, transform: OptaxTransform, state: OptaxState, grads: list, params, node, scope):
        """(the updates, the new state) of one update, leaf by leaf, in optax's order of operations."""
        o = transform.options

        op, number = composer(self, node.pos, "update", scope)

        count = state.count + 1
        if transform.kind == "rmsprop":
            return _optax_rmsprop(o, state, grads, op, number, count)
        if transform.kind == "sgd":
            moments = {}
            if o["momentum"]:  # optax.trace: t = g + decay t; the update t (Nesterov: g + decay t again)
                decay = number(o["momentum"])
                trace = [op("add", g, op("multiply", decay, t)) for g, t in zip(grads, state.moments["trace"])]
                moments["trace"] = trace
                grads = [op("add", g, op("multiply", decay, t)) for g, t in zip(grads, trace)] if o["nesterov"] \
                    else trace
        elif transform.kind == "adagrad":  # (adagrad.py)
            grads, sums = optax_adagrad_scaled(o, state.moments["sum_of_squares"], grads, op, number)
            moments = {"sum_of_squares": sums}
        else:
            b1, b2 = o["b1"], o["b2"]
            mu = [op("add", op("multiply", number(1 - b1), g), op("multiply", number(b1), m))
                  for g, m in zip(grads, state.moments["mu"])]
            nu = [op("add", op("multiply", number(1 - b2), op("square", g)), op("multiply", number(b2), v))
                  for g, v in zip(grads, state.moments["nu"])]
            moments = {"mu": mu, "nu": nu}
            first, second = number(1 - b1 ** count), number(1 - b2 ** count)
            grads = [op("divide", op("divide", m, first),
                        op("add", op("sqrt", op("add", op("divide", v, second), number(o["eps_root"]))), number(o["eps"])))
                     for m, v in zip(mu, nu)]
            if transform.kind in ("adamw", "lamb"):
                if params is None:
                    raise self.error(f"{transform.kind}.update(grads, state, params): the decayed weights need the "
                                     "params", node.pos)
                if transform.kind == "adamw" or o["weight_decay"] != 0:  # (optax skips a decay of 0.0)
                    grads = [op("add", u, op("multiply", number(o["weight_decay"]), p)) for u, p in zip(grads, params)]
            if transform.kind == "lamb":
                grads = trust_ratio_scaled(grads, params, {"min_norm": 0.0, "trust_coefficient": 1.0, "eps": 0.0},
                                           op, number)
        if transform.kind == "scale_by_adam":  # (no learning rate of its own)
            return grads, OptaxState(transform.kind, count, moments, node.pos)
        updates = [op("multiply", u, number(-o["learning_rate"])) for u in grads]
        return updates, OptaxState(transform.kind, count, moments, node.pos)


# ---------------------------------------------------------------------------------------- Keras
# Keras 3's optimizers: their options in the constructor's order, and Keras' defaults; the options
# after them that would change the numbers (weight decay, clipping, EMA) are refused unless left at
# their defaults
KERAS_DEFAULTS = {
    "SGD": {"learning_rate": 0.01, "momentum": 0.0, "nesterov": False},
    "Adam": {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7, "amsgrad": False},
}
_KERAS_CLIPS = ("clipnorm", "clipvalue", "global_clipnorm")  # (clipping.py's keras_clipped)
_KERAS_UNREAD = ("weight_decay", "use_ema", "ema_momentum",
                 "ema_overwrite_frequency", "loss_scale_factor", "gradient_accumulation_steps")
_KERAS_IGNORED = ("name", "jit_compile")


class KerasOptimizers:
    """Part of the lowering (gradcli.language.lower): Keras' SGD and Adam in a custom training loop,
    `optimizer.apply_gradients(zip(grads, variables))`, by Keras 3.15's `update_step` formulas."""

    def keras_optimizer(self, kind: str, node: ast.Call, values: list) -> KerasOptimizer:
        label = node.func
        names = (*KERAS_DEFAULTS[kind], *_KERAS_UNREAD[:1], *_KERAS_CLIPS, *_KERAS_UNREAD[1:], *_KERAS_IGNORED)
        given = self.arguments_by_name(node, values, names, required=0)  # (function_values.py)
        options = dict(KERAS_DEFAULTS[kind])
        for name, value in given.items():
            if name in _KERAS_IGNORED or value is NONE:
                continue
            if name == "learning_rate" and isinstance(value, KerasSchedule):  # (schedules.py)
                options[name] = value
                continue
            number = self.static_param(name, self.known_or_given(value), label, node.pos)
            if isinstance(number, (str, tuple)):  # (a function is no constant: static_param said so)
                raise self.error(f"{label}({name}=...) takes a number (a schedule is not supported)", node.pos)
            if name in _KERAS_UNREAD or name == "amsgrad":
                if number:
                    raise self.error(f"{label}({name}=...) is not supported: leave it out", node.pos)
                continue
            if name in _KERAS_CLIPS and number and any(options.get(clip) for clip in _KERAS_CLIPS):
                raise self.error(f"{label}: only one of clipnorm, clipvalue and global_clipnorm can be set "
                                 "(Keras: ValueError)", node.pos)
            options[name] = bool(number) if name == "nesterov" else float(number)
        options["floatx"] = getattr(self, "keras_floatx", "float32")  # (keras.config.set_floatx before it)
        return KerasOptimizer(kind, options, 0, {}, node.pos)

    def keras_apply_gradients(self, optimizer: KerasOptimizer, node: ast.Call, values: list, scope: Scope):
        """`optimizer.apply_gradients(zip(grads, variables))`: each variable updated in place (its
        name, every name holding it, bound to a new variable), one step counted."""
        args = values[1:]
        if node.func != "apply_gradients" or len(args) != 1 or not isinstance(args[0], TupleValue):
            raise self.error(f"{optimizer.kind}.{node.func}(...) is not supported: gradcli reads "
                             "apply_gradients(zip(grads, variables))", node.pos)
        pairs = []
        for pair in args[0].items:
            if not isinstance(pair, TupleValue) or len(pair.items) != 2:
                raise self.error("apply_gradients takes (gradient, variable) pairs: zip(grads, variables)", node.pos)
            grad, variable = pair.items
            if type(variable) is not int or variable not in self.variables:
                raise self.error("apply_gradients: each variable must be a tf.Variable of the program", node.pos)
            if grad is not NONE:
                grad = self.materialize(grad, scope, node.pos)
                if self.graph.shapes[grad] != self.graph.shapes[variable]:
                    raise self.error(f"apply_gradients: a gradient of shape {self.graph.shapes[grad]} for a variable of "
                                     f"shape {self.graph.shapes[variable]}", node.pos)
                pairs.append((grad, variable))
        step = optimizer.iterations + 1
        if pairs:  # (Keras clips the gradients that are not None, together)
            op, number = composer(self, node.pos, "apply_gradients", scope)
            clipped = keras_clipped(optimizer.options, [grad for grad, _ in pairs], op, number)
            pairs = [(grad, variable) for grad, (_, variable) in zip(clipped, pairs)]
        for grad, variable in pairs:
            new = self._keras_updated(optimizer, step, grad, variable, node, scope)
            cut = self.emit(OPS["stop_gradient"], (new,), {}, node.pos, "apply_gradients", scope)
            fresh = transforms.fresh(self, cut, node.pos, scope)
            self.variables.add(fresh)
            optimizer.state[fresh] = optimizer.state.pop(variable, {})
            self.rebind_id(variable, fresh, scope)
            self._rebind_attributes(variable, fresh)
        optimizer.iterations = step
        return NONE

    def _keras_updated(self, optimizer: KerasOptimizer, step: int, grad: int, variable: int, node, scope) -> int:
        """The variable after one step, by Keras' update_step in its order of operations."""
        o = optimizer.options
        state = optimizer.state.setdefault(variable, {})

        op, number = composer(self, node.pos, "apply_gradients", scope)

        # Keras holds the learning rate in a variable of its floatx (float32 unless set_floatx says
        # float64), and `ops.cast(0.9, float64)` of a Python number makes a float32 tensor first: the
        # momentum and the betas are float32's
        def as_float32(value):
            return float(np.float32(value))

        rate = o["learning_rate"]
        if isinstance(rate, KerasSchedule):  # (at the iterations before this step's, a float32)
            rate = rate.value(step - 1)
        elif o["floatx"] != "float64":
            rate = as_float32(rate)
        lr = number(rate)
        if optimizer.kind == "SGD":
            if not o["momentum"]:
                return op("subtract", variable, op("multiply", grad, lr))
            momentum = number(as_float32(o["momentum"]))
            zeros = state.get("m")
            m = op("subtract", op("multiply", number(0.0) if zeros is None else zeros, momentum), op("multiply", grad, lr))
            state["m"] = m
            if o["nesterov"]:
                return op("add", variable, op("subtract", op("multiply", m, momentum), op("multiply", grad, lr)))
            return op("add", variable, m)
        beta_1, beta_2 = o["beta_1"], o["beta_2"]  # (1 - beta: Python's numbers, in the variable's type)
        alpha = rate * math.sqrt(1 - as_float32(beta_2) ** step) / (1 - as_float32(beta_1) ** step)
        zero = number(0.0)
        m_old, v_old = state.get("m", zero), state.get("v", zero)
        m = op("add", m_old, op("multiply", op("subtract", grad, m_old), number(1 - beta_1)))
        v = op("add", v_old, op("multiply", op("subtract", op("square", grad), v_old), number(1 - beta_2)))
        state["m"], state["v"] = m, v
        return op("subtract", variable, op("divide", op("multiply", m, number(alpha)),
                                           op("add", op("sqrt", v), number(o["epsilon"]))))


OPTIMIZER_VALUES = OPTIMIZER_VALUES + (KerasOptimizer,) + SCHEDULE_VALUES
# the optimizers' methods, by the value they are called on (GradientCalls.call_gradient_api)
OPTIMIZER_METHODS = {Optimizer: "optimizer_method", OptaxTransform: "optax_method",
                     KerasOptimizer: "keras_apply_gradients", TorchScheduler: "scheduler_method"}
