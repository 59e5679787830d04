"""Learning-rate schedules, each library's formula computed while lowering (a learning rate is a
number the program writes, so every step's rate is known before evaluation):

- PyTorch's `torch.optim.lr_scheduler.StepLR / MultiStepLR / ExponentialLR / CosineAnnealingLR /
  LambdaLR(optimizer, ...)`: `scheduler.step()` sets the optimizer's lr by PyTorch's chainable
  formulas (get_lr, from the lr it holds), `scheduler.get_last_lr()` gives [lr];
- optax's `exponential_decay`, `cosine_decay_schedule`, `piecewise_constant_schedule` as an
  optimizer's learning_rate: the update numbered `count` (from 0, the count in the state) scales
  by the schedule at count;
- Keras' `keras.optimizers.schedules.ExponentialDecay / PiecewiseConstantDecay` as an optimizer's
  learning_rate: the rate at the optimizer's `iterations` (before the step counts), computed in
  float32 (even after keras.config.set_floatx("float64"))."""
from __future__ import annotations

import math

import numpy as np

from gradcli.language import syntax as ast
from gradcli.language.lower.optimizer_values import Optimizer
from gradcli.language.lower.transforms import FUNCTION_VALUES, DictValue
from gradcli.language.lower.values import NONE, Literal, Scope, TupleValue
from gradcli.records import ValueRecord

# each scheduler's arguments after the optimizer, and PyTorch's defaults (None: required)
TORCH_SCHEDULERS = {
    "StepLR": {"step_size": None, "gamma": 0.1, "last_epoch": -1},
    "MultiStepLR": {"milestones": None, "gamma": 0.1, "last_epoch": -1},
    "ExponentialLR": {"gamma": None, "last_epoch": -1},
    "CosineAnnealingLR": {"T_max": None, "eta_min": 0.0, "last_epoch": -1},
    "LambdaLR": {"lr_lambda": None, "last_epoch": -1},
    "ConstantLR": {"factor": 1.0 / 3, "total_iters": 5, "last_epoch": -1},
    "LinearLR": {"start_factor": 1.0 / 3, "end_factor": 1.0, "total_iters": 5, "last_epoch": -1},
}
OPTAX_SCHEDULES = {
    "exponential_decay": {"init_value": None, "transition_steps": None, "decay_rate": None, "transition_begin": 0,
                          "staircase": False, "end_value": None},
    "cosine_decay_schedule": {"init_value": None, "decay_steps": None, "alpha": 0.0, "exponent": 1.0},
    "piecewise_constant_schedule": {"init_value": None, "boundaries_and_scales": None},
    "constant_schedule": {"value": None},
    "linear_schedule": {"init_value": None, "end_value": None, "transition_steps": None, "transition_begin": 0},
    "warmup_cosine_decay_schedule": {"init_value": None, "peak_value": None, "warmup_steps": None, "decay_steps": None,
                                     "end_value": 0.0, "exponent": 1.0},
}
# how many of each one's arguments are required
_OPTAX_REQUIRED = {"exponential_decay": 3, "cosine_decay_schedule": 2, "piecewise_constant_schedule": 1,
                   "constant_schedule": 1, "linear_schedule": 3, "warmup_cosine_decay_schedule": 4}
KERAS_SCHEDULES = {
    "ExponentialDecay": {"initial_learning_rate": None, "decay_steps": None, "decay_rate": None, "staircase": False,
                         "name": None},
    "PiecewiseConstantDecay": {"boundaries": None, "values": None, "name": None},
}
_LAMBDA = "<lr_lambda>"  # (the name a LambdaLR's function is called by: no program's name)


class TorchScheduler(ValueRecord):
    """A torch.optim.lr_scheduler scheduler: its kind, its optimizer, its options, the base lr (the
    optimizer's lr when it was made), last_epoch, and the lrs it set (get_last_lr)."""

    __slots__ = _fields = ("kind", "optimizer", "options", "base_lr", "last_epoch", "last_lr", "pos")


class OptaxSchedule(ValueRecord):
    """`optax.exponential_decay(...)` and its kin: a function of the step count."""

    __slots__ = _fields = ("kind", "options", "pos")

    def value(self, count: int) -> float:
        """The schedule at `count`, by optax 0.2.8's formula (JAX computes it in float64 with x64)."""
        o = self.options
        if self.kind == "exponential_decay":
            return _exponential_decay(o, count)
        if self.kind == "cosine_decay_schedule":
            return _cosine_decay(o["init_value"], o["decay_steps"], o["alpha"], o["exponent"], count)
        if self.kind == "constant_schedule":
            return o["value"]
        if self.kind == "linear_schedule":
            return _linear(o["init_value"], o["end_value"], o["transition_steps"], o["transition_begin"], count)
        if self.kind == "warmup_cosine_decay_schedule":
            # join_schedules' where(count < warmup, the linear warmup (a float32), the cosine (a weakly
            # typed float64)) is a float32: the cosine's rate rounded to float32 too
            warmup, peak = o["warmup_steps"], o["peak_value"]
            if count < warmup:
                return _linear(o["init_value"], peak, warmup, 0, count)
            alpha = 0.0 if peak == 0.0 else o["end_value"] / peak
            cosine = _cosine_decay(peak, o["decay_steps"] - warmup, alpha, o["exponent"], count - warmup)
            return float(np.float32(cosine))
        value = o["init_value"]
        for threshold, scale in sorted(o["boundaries_and_scales"]):
            indicator = max(0.0, float(np.sign(threshold - count)))
            value = value * indicator + (1 - indicator) * scale * value
        return value


def _cosine_decay(init: float, steps: float, alpha: float, exponent: float, count: int) -> float:
    """optax.cosine_decay_schedule at `count` (in float64: optax makes the steps a Python float)."""
    count = min(float(count), float(steps))
    cosine = 0.5 * (1 + math.cos(math.pi * count / steps))
    return init * ((1 - alpha) * cosine ** exponent + alpha)


def _linear(init: float, end: float, steps: int, begin: int, count: int) -> float:
    """optax.linear_schedule (polynomial_schedule of power 1) at `count`: the int32 count divided
    in float32, so the rate is a float32's, as _exponential_decay's is."""
    if steps <= 0:
        return init
    real = np.float32
    done = min(max(count - max(int(begin), 0), 0), steps)
    fraction = real(1) - real(done) / real(steps)
    return float(real(init - end) * fraction + real(end))


def _exponential_decay(o: dict, count: int) -> float:
    """optax.exponential_decay at `count`. The count is an int32, and JAX divides int32s in float32:
    p, the power and the product are float32's, whatever x64 says (the rate at count 0 is
    float32(init_value)). XLA's float32 power is not always the correctly rounded one NumPy gives:
    the two may differ in the last of float32's bits (docs/library.md)."""
    steps, rate = o["transition_steps"], o["decay_rate"]
    if steps <= 0 or rate == 0:  # (optax: a constant schedule, init_value as given)
        return o["init_value"]
    real = np.float32
    decreased = count - max(int(o["transition_begin"]), 0)
    p = real(decreased) / real(steps)
    if o["staircase"]:
        p = np.floor(p)
    decayed = real(o["init_value"]) if decreased <= 0 else real(o["init_value"]) * np.power(real(rate), p)
    if o["end_value"] is not None:
        end = real(o["end_value"])
        decayed = max(decayed, end) if rate < 1.0 else min(decayed, end)
    return float(decayed)


# (warned where a rate of optax.exponential_decay takes a power with an exponent that is no whole number)
XLA_POWER = ("optax.exponential_decay computes its rate in float32 with XLA's power, which at an exponent that is "
             "no whole number (count / transition_steps) can differ from the correctly rounded float32 power gradcli "
             "takes in the last bit (a relative 6e-8 in the rate; more often under jax.jit); staircase=True steps "
             "by whole exponents")


def fractional_power(schedule: OptaxSchedule, count: int) -> bool:
    """Whether the schedule's rate at `count` is a float32 power with an exponent not whole."""
    o = schedule.options
    if schedule.kind != "exponential_decay" or o["staircase"] or o["transition_steps"] <= 0 or o["decay_rate"] == 0:
        return False
    decreased = count - max(int(o["transition_begin"]), 0)
    return decreased > 0 and decreased % o["transition_steps"] != 0


class KerasSchedule(ValueRecord):
    """`keras.optimizers.schedules.ExponentialDecay(...)` / `PiecewiseConstantDecay(...)`."""

    __slots__ = _fields = ("kind", "options", "pos")

    def value(self, step: int) -> float:
        """The rate at `step` as Keras 3.15 computes it: in float32 (its convert_to_tensor of a Python
        number), whatever keras.config.set_floatx says."""
        o = self.options
        real = np.float32
        if self.kind == "ExponentialDecay":
            p = real(step) / real(o["decay_steps"])
            if o["staircase"]:
                p = np.floor(p)
            return float(real(o["initial_learning_rate"]) * np.power(real(o["decay_rate"]), p))
        boundaries, values = o["boundaries"], o["values"]
        if step <= boundaries[0]:
            return float(real(values[0]))
        for low, high, value in zip(boundaries[:-1], boundaries[1:], values[1:-1]):
            if low < step <= high:
                return float(real(value))
        return float(real(values[-1]))


SCHEDULE_VALUES = (TorchScheduler, OptaxSchedule, KerasSchedule)


def _next_lr(kind: str, o: dict, epoch: int, lr: float, base: float) -> float:
    """A scheduler's get_lr at `epoch` (0: the step made at construction) from the lr the
    optimizer holds, by PyTorch 2.13's chainable formulas (the cosine's recursive one)."""
    if kind == "StepLR":
        return lr * o["gamma"] if epoch != 0 and epoch % o["step_size"] == 0 else lr
    if kind == "MultiStepLR":
        return lr * o["gamma"] ** o["milestones"].count(epoch) if epoch in o["milestones"] else lr
    if kind == "ExponentialLR":
        return lr * o["gamma"] if epoch != 0 else lr
    if kind == "ConstantLR":
        return lr * o["factor"] if epoch == 0 else lr * (1.0 / o["factor"]) if epoch == o["total_iters"] else lr
    if kind == "LinearLR":
        start, end = o["start_factor"], o["end_factor"]
        if epoch == 0:
            return lr * start
        if epoch > o["total_iters"]:
            return lr
        return lr * (1.0 + (end - start) / (o["total_iters"] * start + (epoch - 1) * (end - start)))
    if epoch == 0:  # CosineAnnealingLR
        return lr
    t_max, eta_min = o["T_max"], o["eta_min"]
    if (epoch - 1 - t_max) % (2 * t_max) == 0:
        return lr + (base - eta_min) * (1 - math.cos(math.pi / t_max)) / 2
    return (1 + math.cos(math.pi * epoch / t_max)) / (1 + math.cos(math.pi * (epoch - 1) / t_max)) \
        * (lr - eta_min) + eta_min


class Schedules:
    """Part of the lowering (gradcli.language.lower): the learning-rate schedules."""

    def torch_scheduler(self, kind: str, node: ast.Call, values: list, scope: Scope) -> TorchScheduler:
        """`torch.optim.lr_scheduler.<kind>(optimizer, ...)`, and PyTorch's first step (made at
        construction: last_epoch 0; LambdaLR sets lr = base lr * lr_lambda(0) there)."""
        label = node.func
        names = ("optimizer", *TORCH_SCHEDULERS[kind])
        required = 1 + sum(default is None for default in TORCH_SCHEDULERS[kind].values())
        given = self.arguments_by_name(node, values, names, required=required)
        optimizer = given.pop("optimizer")
        if not isinstance(optimizer, Optimizer):
            raise self.error(f"{label}(optimizer, ...): the optimizer must be a torch.optim optimizer the program "
                             "made (PyTorch: TypeError)", node.args[0].pos if node.args else node.pos)
        options = dict(TORCH_SCHEDULERS[kind])
        for name, value in given.items():
            if name == "lr_lambda":
                if isinstance(value, TupleValue):  # (one per param group: gradcli's optimizers have one)
                    if len(value.items) != 1:
                        raise self.error(f"{label}: Expected 1 lr_lambdas, but got {len(value.items)} (PyTorch: "
                                         "ValueError; the optimizer has one param group)", node.pos)
                    value = value.items[0]
                if not isinstance(value, FUNCTION_VALUES):
                    raise self.error(f"{label}(lr_lambda=...) takes a function of the epoch: a lambda or a def",
                                     node.pos)
                options[name] = value
            elif name == "milestones":
                options[name] = self.schedule_integers(label, name, value, node.pos)
            else:
                options[name] = self.schedule_number(label, name, value, node.pos)
        if options["last_epoch"] != -1:
            raise self.error(f"{label}(last_epoch={options['last_epoch']:g}) is not supported: gradcli starts a "
                             "schedule at its beginning; leave last_epoch out", node.pos)
        if kind == "StepLR" and not (options["step_size"] >= 1 and float(options["step_size"]).is_integer()):
            raise self.error(f"{label}(step_size={options['step_size']:g}): step_size must be a positive integer",
                             node.pos)
        if kind == "CosineAnnealingLR" and options["T_max"] == 0:
            raise self.error(f"{label}(T_max=0): T_max must not be 0 (PyTorch: ZeroDivisionError)", node.pos)
        self._check_factors(label, kind, options, node.pos)
        # (base_lrs: the optimizer's initial_lr, which the first scheduler on it sets)
        base = optimizer.options.setdefault("initial_lr", optimizer.options["lr"])
        scheduler = TorchScheduler(kind, optimizer, options, base, -1, None, node.pos)
        self._scheduler_step(scheduler, node, scope)
        return scheduler

    def scheduler_method(self, scheduler: TorchScheduler, node: ast.Call, values: list, scope: Scope):
        """`scheduler.step()` and `scheduler.get_last_lr()` (values: the receiver's, then the arguments')."""
        if node.func == "get_last_lr" and len(values) == 1:
            return TupleValue([Literal(np.float64(scheduler.last_lr), node.pos)], node.pos)
        if node.func == "step" and len(values) == 1:
            self._scheduler_step(scheduler, node, scope)
            return NONE
        if node.func == "step":
            raise self.error(f"{scheduler.kind}.step(epoch) is not supported (PyTorch deprecates the epoch): call "
                             "step() once per epoch", node.pos)
        raise self.error(f"{scheduler.kind}.{node.func}(...) is not supported: gradcli reads step() and "
                         "get_last_lr()", node.pos)

    def _scheduler_step(self, scheduler: TorchScheduler, node: ast.Call, scope: Scope) -> None:
        """One step: last_epoch + 1, the optimizer's lr by the scheduler's get_lr."""
        scheduler.last_epoch = epoch = scheduler.last_epoch + 1
        lr = scheduler.optimizer.options["lr"]
        o = scheduler.options
        if scheduler.kind == "ConstantLR" and epoch == o["total_iters"] and not o["factor"]:
            raise self.error("ConstantLR(factor=0): at total_iters PyTorch divides the lr by the factor "
                             "(ZeroDivisionError)", node.pos)
        if scheduler.kind == "LambdaLR":
            lr = scheduler.base_lr * self._lambda_at(scheduler, epoch, node, scope)
        else:
            lr = _next_lr(scheduler.kind, scheduler.options, epoch, lr, scheduler.base_lr)
        scheduler.optimizer.options["lr"] = scheduler.last_lr = lr

    def _check_factors(self, label: str, kind: str, o: dict, pos) -> None:
        """ConstantLR's and LinearLR's factors, refused where PyTorch raises ValueError."""
        if kind == "ConstantLR" and not 0 <= o["factor"] <= 1.0:
            raise self.error(f"{label}: Constant multiplicative factor expected to be between 0 and 1 (PyTorch: "
                             "ValueError)", pos)
        if kind == "LinearLR" and not 0 < o["start_factor"] <= 1.0:
            raise self.error(f"{label}: Starting multiplicative factor expected to be greater than 0 and less or "
                             "equal to 1 (PyTorch: ValueError)", pos)
        if kind == "LinearLR" and not 0 <= o["end_factor"] <= 1.0:
            raise self.error(f"{label}: Ending multiplicative factor expected to be between 0 and 1 (PyTorch: "
                             "ValueError)", pos)

    def _lambda_at(self, scheduler: TorchScheduler, epoch: int, node: ast.Call, scope: Scope) -> float:
        """LambdaLR's lr_lambda(epoch), called now: its value must be a number known before evaluation."""
        inner = Scope({_LAMBDA: scheduler.options["lr_lambda"]}, scope.stack, scope.active, None)
        result = self.lower(ast.Call(_LAMBDA, [ast.Number(epoch, node.pos)], node.pos), inner)
        known = self.known_or_given(result) if type(result) is int else result
        if not isinstance(known, Literal) or known.value.size != 1:
            raise self.error(f"LambdaLR: lr_lambda({epoch}) must give a number known before evaluation (a number "
                             "computed from the epoch and the program's constants)", scheduler.pos)
        return float(known.value.reshape(()))

    def schedule_number(self, label: str, name: str, value, pos, nullable: bool = False) -> float | None:
        """A schedule's number option: a constant the program writes (True/False read as 1/0); None
        only where `nullable` (optax's end_value)."""
        if value is NONE:
            if nullable:
                return None
            raise self.error(f"{label}({name}=None) is not supported: give a number", pos)
        number = self.static_param(name, self.known_or_given(value), label, pos)
        if isinstance(number, (str, tuple)):
            raise self.error(f"{label}({name}=...) takes a number, not {number!r}", pos)
        return number

    def schedule_integers(self, label: str, name: str, value, pos) -> list:
        """A list of integers (milestones, boundaries), as written."""
        items = value.items if isinstance(value, TupleValue) else None
        if items is None:
            known = self.constant_value(value)
            items = [Literal(v, pos) for v in np.atleast_1d(known.value)] if isinstance(known, Literal) else None
        numbers = [self.schedule_number(label, name, item, pos) for item in items or []]
        if not numbers or not all(isinstance(n, (int, float)) and float(n).is_integer() for n in numbers):
            raise self.error(f"{label}({name}=...) takes a list of integers: {name}=[30, 80]", pos)
        return [int(n) for n in numbers]

    def optax_schedule(self, kind: str, node: ast.Call, values: list) -> OptaxSchedule:
        label = node.func
        names = tuple(OPTAX_SCHEDULES[kind])
        given = self.arguments_by_name(node, values, names, required=_OPTAX_REQUIRED[kind])
        options = dict(OPTAX_SCHEDULES[kind])
        for name, value in given.items():
            if name == "boundaries_and_scales":
                options[name] = self._boundaries_and_scales(label, value, node.pos)
            else:
                options[name] = self.schedule_number(label, name, value, node.pos, nullable=name == "end_value")
        cosine_steps = options["decay_steps"] - options["warmup_steps"] if kind == "warmup_cosine_decay_schedule" \
            else options.get("decay_steps")
        if kind in ("cosine_decay_schedule", "warmup_cosine_decay_schedule") and not cosine_steps > 0:
            raise self.error(f"{label}: the cosine_decay_schedule requires positive decay_steps, got "
                             f"decay_steps={cosine_steps:g} (optax: ValueError)", node.pos)
        return OptaxSchedule(kind, options, node.pos)

    def _boundaries_and_scales(self, label: str, value, pos) -> list:
        """optax's {step: scale} as [(step, scale)]; None: no boundaries."""
        if value is NONE:
            return []
        if not isinstance(value, DictValue):
            raise self.error(f"{label}(boundaries_and_scales=...) takes a dict of steps to scales: {{100: 0.1}}", pos)
        pairs = []
        for key, item in zip(value.keys, value.items):
            scale = self.schedule_number(label, "boundaries_and_scales", item, pos)
            if not isinstance(key, (int, float)) or isinstance(key, bool):
                raise self.error(f"{label}: boundaries_and_scales' keys are steps (integers), not {key!r}", pos)
            if scale < 0:
                raise self.error(f"{label}: `piecewise_constant_schedule` expects non-negative scale factors "
                                 "(optax: ValueError)", pos)
            pairs.append((key, scale))
        return pairs

    def keras_schedule(self, kind: str, node: ast.Call, values: list) -> KerasSchedule:
        label = node.func
        names = tuple(KERAS_SCHEDULES[kind])
        given = self.arguments_by_name(node, values, names, required=3 if kind == "ExponentialDecay" else 2)
        options = dict(KERAS_SCHEDULES[kind])
        for name, value in given.items():
            if name == "name":
                continue
            if name == "boundaries":
                options[name] = self.schedule_integers(label, name, value, node.pos)
            elif name == "values":
                items = value.items if isinstance(value, TupleValue) else None
                known = self.constant_value(value)
                options[name] = [self.schedule_number(label, name, v, node.pos) for v in items] if items is not None \
                    else [float(v) for v in np.atleast_1d(known.value)] if isinstance(known, Literal) else []
            else:
                options[name] = self.schedule_number(label, name, value, node.pos)
        if kind == "ExponentialDecay" and not options["decay_steps"] > 0:
            raise self.error(f"{label}: Argument `decay_steps` must be > 0. Received: decay_steps="
                             f"{options['decay_steps']:g} (Keras: ValueError)", node.pos)
        if kind == "PiecewiseConstantDecay" and len(options["boundaries"]) != len(options["values"]) - 1:
            raise self.error(f"{label}: the length of boundaries should be 1 less than the length of values "
                             f"(boundaries has {len(options['boundaries'])}, values {len(options['values'])}; "
                             "Keras: ValueError)", node.pos)
        return KerasSchedule(kind, options, node.pos)
