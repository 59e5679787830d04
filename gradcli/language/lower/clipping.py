"""Gradient clipping as training loops write it, by each library's formula in its order:
PyTorch's `torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type=2)` (each `.grad` scaled in
place by min(max_norm / (total + 1e-6), 1), the total norm returned) and `clip_grad_value_`;
TensorFlow's `tf.clip_by_global_norm(grads, clip_norm)` ((the clipped list, the global norm),
differentiable as TensorFlow's is); Keras' optimizer options `clipnorm=`, `global_clipnorm=` and
`clipvalue=` (keras_clipped). optax's clip transformations are in optax_chain.py.

PyTorch clips under no gradient: the new `.grad` and the norm carry none. TensorFlow's
clip_by_global_norm is made of differentiable ops, so a tape or tf.gradients sees through it."""
from __future__ import annotations

import math

import numpy as np

from gradcli.language import syntax as ast
from gradcli.language.dialects.spelling import composer
from gradcli.language.lower.values import NONE, Literal, Scope, Text, TupleValue
from gradcli.ops import OPS

# clip_grad_norm_'s options after params, and PyTorch's defaults
_NORM_NAMES = ("parameters", "max_norm", "norm_type", "error_if_nonfinite", "foreach")
_VALUE_NAMES = ("parameters", "clip_value", "foreach")


def vector_norm(op, number, x: int, p: float) -> int:
    """torch.linalg.vector_norm(x, p) of one tensor: the largest |x| for inf, else (sum |x|^p)^(1/p)."""
    whole = {"axis": None, "keepdims": False}
    if math.isinf(p):
        return op("max", op("abs", x), **whole)
    if p == 2:
        return op("sqrt", op("sum", op("square", x), **whole))
    if p == 1:
        return op("sum", op("abs", x), **whole)
    return op("power", op("sum", op("power", op("abs", x), number(p)), **whole), number(1 / p))


def global_norm(op, grads: list) -> int:
    """The L2 norm of all the tensors together, as Keras' and optax's global_norm sum it: each
    tensor's sum of squares, then their sum, then the square root."""
    whole = {"axis": None, "keepdims": False}
    squares = [op("sum", op("square", g), **whole) for g in grads]
    return op("sqrt", op("sum", op("stack", *squares), **whole))


class GradientClipping:
    """Part of the lowering (gradcli.language.lower): clipping of gradients."""

    def torch_clip_grad(self, kind: str, node: ast.Call, values: list, scope: Scope):
        """`torch.nn.utils.clip_grad_norm_(parameters, max_norm, norm_type=2.0)` (kind "norm") and
        `clip_grad_value_(parameters, clip_value)` (kind "value"): each parameter's .grad replaced by
        the clipped one (PyTorch's in-place mul_ / clamp_); a parameter without a .grad is skipped."""
        label = node.func
        given = self.arguments_by_name(node, values, _NORM_NAMES if kind == "norm" else _VALUE_NAMES, required=2)
        params = self._clipped_parameters(label, given["parameters"], node)
        leaves = self.torch.leaves
        grads = [(p, leaves[p]) for p in params if leaves.get(p) is not None]
        op, number = composer(self, node.pos, label, scope)
        if kind == "value":
            bound = self._option(label, "clip_value", given["clip_value"], node.pos)
            for p, _ in grads:
                leaves[p] = op("stop_gradient", op("clip", leaves[p], number(-bound), number(bound)))
            return NONE
        if "error_if_nonfinite" in given and self.constant_truth(given["error_if_nonfinite"]):
            raise self.error(f"{label}(error_if_nonfinite=True) is not supported: the norm is known only when the "
                             "program runs; leave it out (gradcli reports a non-finite value itself)", node.pos)
        max_norm = self._option(label, "max_norm", given["max_norm"], node.pos)
        norm_type = self._norm_type(label, given.get("norm_type"), node.pos)
        if not grads:  # (PyTorch: torch.tensor(0.0))
            return Literal(np.float64(0.0), node.pos)
        norms = [vector_norm(op, number, g, norm_type) for _, g in grads]
        total = vector_norm(op, number, op("stack", *norms), norm_type)
        coefficient = op("minimum", op("divide", number(max_norm), op("add", total, number(1e-6))), number(1.0))
        for p, _ in grads:  # (a parameter given twice is scaled twice, as PyTorch's in-place mul_ does)
            leaves[p] = op("stop_gradient", op("multiply", leaves[p], coefficient))
        return op("stop_gradient", total)

    def _clipped_parameters(self, label: str, given, node: ast.Call) -> list:
        """The leaves a clip_grad_ call names: a list or tuple of them, model.parameters(), or one tensor."""
        items = given.items if isinstance(given, TupleValue) else [given]
        if not items or not all(type(p) is int and p in self.torch.leaves for p in items):
            raise self.error(f"{label}(parameters, ...): give the leaf tensors whose .grad to clip: [w, b], "
                             "model.parameters() of a module the program defines, or one leaf", node.args[0].pos)
        return list(items)

    def _norm_type(self, label: str, value, pos) -> float:
        """norm_type: a number > 0 or inf (written float('inf'), math.inf or 'inf')."""
        if value is None:
            return 2.0
        known = self.constant_value(value)
        if isinstance(known, Text) and known.value in ("inf", "Inf"):
            return math.inf
        norm_type = self._option(label, "norm_type", value, pos)
        if not norm_type > 0:
            raise self.error(f"{label}(norm_type={norm_type:g}) is not supported: gradcli reads a norm_type > 0 "
                             "or inf", pos)
        return norm_type

    def tf_clip_by_global_norm(self, node: ast.Call, values: list, scope: Scope):
        """`tf.clip_by_global_norm(t_list, clip_norm, use_norm=None)`: (the tensors times
        clip_norm * min(1 / global_norm, 1 / clip_norm), the global norm), in TensorFlow's order
        (global_norm: the square root of twice the sum of each tensor's l2_loss); a None in the
        list stays None."""
        label = node.func
        given = self.arguments_by_name(node, values, ("t_list", "clip_norm", "use_norm", "name"), required=2)
        if "use_norm" in given and given["use_norm"] is not NONE:
            raise self.error(f"{label}(use_norm=...) is not supported: leave it out (the global norm is computed)",
                             node.pos)
        tensors = given["t_list"]
        written = node.args[0] if node.args else None
        if not isinstance(tensors, TupleValue) and isinstance(written, (ast.Array, ast.Tuple)):
            # (a list display of tensors of one shape is read as one array: its rows are the tensors)
            whole = self.materialize(tensors, scope, node.pos)
            tensors = TupleValue([self.emit(OPS["index"], (whole,), {"index": (k,)}, node.pos, label, scope)
                                  for k in range(len(written.items))], node.pos)
        if not isinstance(tensors, TupleValue):
            raise self.error(f"{label}(t_list, clip_norm): t_list must be a list or tuple of tensors "
                             "(tf.clip_by_norm clips one tensor)", node.args[0].pos)
        clip_norm = self._option(label, "clip_norm", given["clip_norm"], node.pos)
        present = [self.materialize(t, scope, node.pos) for t in tensors.items if t is not NONE]
        op, number = composer(self, node.pos, label, scope)
        whole = {"axis": None, "keepdims": False}
        halves = [op("multiply", op("sum", op("square", t), **whole), number(0.5)) for t in present]  # (l2_loss)
        norm = op("sqrt", op("multiply", op("sum", op("stack", *halves), **whole), number(2.0))) if present \
            else number(0.0)
        reciprocal = op("divide", number(1.0), norm)
        # TensorFlow's minimum passes its gradient to the first argument at a tie (norm == clip_norm);
        # clip_norm 0: TensorFlow's 1 / 0 is inf, and the minimum is 1 / norm
        if clip_norm:
            bound = number(1.0 / clip_norm)
            reciprocal = op("where", op("less_equal", reciprocal, bound), reciprocal, bound)
        scale = op("multiply", number(clip_norm), reciprocal)
        scale = op("add", scale, op("subtract", norm, norm))  # (TensorFlow's: NaN where the norm is not finite)
        clipped = iter([op("multiply", t, scale) for t in present])
        return TupleValue([TupleValue([NONE if t is NONE else next(clipped) for t in tensors.items], node.pos), norm],
                          node.pos)


def keras_clipped(options: dict, grads: list, op, number) -> list:
    """The gradients as Keras 3's _clip_gradients gives them: clipnorm (each by its own norm, with
    tf.clip_by_norm's formula), global_clipnorm or clipvalue, whichever is set and positive."""
    if options.get("clipnorm", 0) > 0:
        bound = number(options["clipnorm"])
        clipped = []
        for g in grads:
            whole = {"axis": None, "keepdims": True}
            l2sum = op("sum", op("square", g), **whole)
            positive = op("greater", l2sum, number(0.0))
            l2norm = op("where", positive, op("sqrt", op("where", positive, l2sum, number(1.0))), l2sum)
            clipped.append(op("divide", op("multiply", g, bound), op("maximum", l2norm, bound)))
        return clipped
    if options.get("global_clipnorm", 0) > 0:
        bound = options["global_clipnorm"]
        norm = global_norm(op, grads)
        scale = op("multiply", number(bound), op("minimum", op("divide", number(1.0), norm), number(1.0 / bound)))
        scale = op("add", scale, op("subtract", norm, norm))
        return [op("multiply", g, scale) for g in grads]
    if options.get("clipvalue", 0) > 0:
        bound = options["clipvalue"]
        return [op("clip", g, number(-bound), number(bound)) for g in grads]
    return grads
