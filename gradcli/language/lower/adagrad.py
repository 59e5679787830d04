"""Adagrad, as PyTorch (`torch.optim.Adagrad`) and optax (`optax.adagrad`) write it: each one's
step in its order of operations, for optimizers.py."""
from __future__ import annotations

# torch.optim.Adagrad's options after params, in the constructor's order, and PyTorch's defaults
TORCH_ADAGRAD = {"lr": 0.01, "lr_decay": 0.0, "weight_decay": 0.0, "initial_accumulator_value": 0.0, "eps": 1e-10,
                 "foreach": None, "maximize": False, "differentiable": False}
# optax.adagrad's, and optax's defaults (scale_by_rss, then scale_by_learning_rate)
OPTAX_ADAGRAD = {"learning_rate": None, "initial_accumulator_value": 0.1, "eps": 1e-7}


def torch_adagrad_step(o: dict, state: dict, p: int, grad: int, op, number) -> int:
    """PyTorch's single-tensor Adagrad after the weight decay: the step's rate lr / (1 + (step - 1)
    lr_decay), the sum of squares (from initial_accumulator_value), p - clr g / (sqrt(sum) + eps)."""
    step = state["step"] = state.get("step", 0) + 1
    rate = o["lr"] / (1 + (step - 1) * o["lr_decay"])
    total = state.get("sum")
    total = op("add", number(o["initial_accumulator_value"]) if total is None else total, op("multiply", grad, grad))
    state["sum"] = total
    std = op("add", op("sqrt", total), number(o["eps"]))
    return op("add", p, op("divide", op("multiply", number(-rate), grad), std))


def optax_adagrad_scaled(o: dict, sums: list, grads: list, op, number) -> tuple[list, list]:
    """optax's scale_by_rss: (each g / sqrt(sum of squares + eps), 0 where the sum is 0; the new sums)."""
    sums = [op("add", op("multiply", g, g), t) for g, t in zip(grads, sums)]
    zero = number(0.0)
    scaled = [op("multiply", op("where", op("greater", t, zero), op("rsqrt", op("add", t, number(o["eps"]))), zero), g)
              for t, g in zip(sums, grads)]
    return scaled, sums
