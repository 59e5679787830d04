"""torch.nn.init's functions on a layer's parameters, and a tensor's in-place fills through
`.data` (`layer.weight.data.fill_(0.5)`): the parameter is replaced by a new leaf holding the
new value, every name, module attribute and optimizer that held it following, as an optimizer's
step does (the tensor is the same in PyTorch, its .grad kept).

The draws (normal_, uniform_, xavier_*, kaiming_*) are PyTorch's on its CPU generator after
torch.manual_seed, in the parameter's type; gradcli knows that type for the parameters of its
layers (torch_layers.py), so a draw into another tensor is refused, as is a constant that the
tensor's type (float32 or float64, unknown there) would round."""
from __future__ import annotations

import math

import numpy as np

from gradcli.language import syntax as ast
from gradcli.language.lower import transforms
from gradcli.language.lower.optimizer_values import Optimizer
from gradcli.language.lower.random_streams import _fma64
from gradcli.language.lower.values import NONE, Literal, Text

# nn.init's functions: their parameters after the tensor, with PyTorch's defaults
INIT_FUNCTIONS = {
    "zeros_": {}, "ones_": {}, "constant_": {"val": None},
    "uniform_": {"a": 0.0, "b": 1.0, "generator": None}, "normal_": {"mean": 0.0, "std": 1.0, "generator": None},
    "xavier_uniform_": {"gain": 1.0, "generator": None}, "xavier_normal_": {"gain": 1.0, "generator": None},
    "kaiming_uniform_": {"a": 0.0, "mode": "fan_in", "nonlinearity": "leaky_relu", "generator": None},
    "kaiming_normal_": {"a": 0.0, "mode": "fan_in", "nonlinearity": "leaky_relu", "generator": None},
}
# a tensor's in-place methods read here (on `.data`, or under torch.no_grad()), as nn.init's
TENSOR_METHODS = {"fill_": "constant_", "zero_": "zeros_", "uniform_": "uniform_", "normal_": "normal_"}
_GAINS = {"linear": 1.0, "sigmoid": 1.0, "conv1d": 1.0, "conv2d": 1.0, "conv3d": 1.0, "tanh": 5.0 / 3,
          "relu": math.sqrt(2.0), "selu": 3.0 / 4}


def _fans(shape: tuple) -> tuple[int, int]:
    """PyTorch's _calculate_fan_in_and_fan_out: (size(1), size(0)) times the receptive field."""
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def uniform_between(generator, count: int, low: float, high: float, dtype) -> np.ndarray:
    """PyTorch's `tensor.uniform_(low, high)` of `count` elements on its CPU generator."""
    dtype = np.dtype(dtype)
    low_t, high_t = dtype.type(low), dtype.type(high)
    span = float(high_t - low_t)  # (in the tensor's type, as PyTorch's uniform_real computes it)
    if dtype == np.float32:
        bits = generator.random(count) & np.uint64(0xFFFFFF)
        x = bits.astype(np.float64) * 2.0 ** -24  # (24 bits times a float32: exact in double)
        return (x * span + float(low_t)).astype(np.float32)
    pairs = generator.random(2 * count).reshape(count, 2)
    bits = ((pairs[:, 0] << np.uint64(32)) | pairs[:, 1]) & np.uint64((1 << 53) - 1)
    return _fma64(bits.astype(np.float64) * 2.0 ** -53, np.float64(span), np.float64(low_t))



def written_data(written) -> bool:
    """Whether the receiver is written `w.data` (a Name `w.data`, or `(expr).data`)."""
    return (isinstance(written, ast.Name) and written.id.endswith(".data")) or (
        isinstance(written, ast.Attribute) and written.name == "data")


class TorchInit:
    """Part of the lowering (through TorchLayers): nn.init's functions and in-place fills."""

    def torch_init(self, name: str, node: ast.Call, values: list, scope, work: list):
        """`nn.init.<name>(tensor, ...)`: the tensor, its parameter replaced by the new value."""
        label = f"{node.func}()"
        names = ("tensor", *INIT_FUNCTIONS[name])
        given = self.arguments_by_name(node, values, names, required=1 + (name == "constant_"))
        return self._initialized(name, given["tensor"], given, label, node, scope, work)

    def tensor_fill(self, node: ast.Call, values: list, scope, work: list):
        """`w.data.fill_(v)`, `w.data.normal_(0, 0.02)`: on a leaf through .data (or under no_grad)."""
        name = TENSOR_METHODS[node.func]
        receiver, written = values[0], node.args[0]
        through_data = written_data(written)
        if through_data:
            equation = self.graph.equations[receiver]
            receiver = equation.inputs[0] if equation.op.name == "stop_gradient" else receiver
        state = self._torch_state
        if not through_data and not (state is not None and state.modes and not state.modes[-1][0]):
            raise self.error(f"a leaf Variable that requires grad is being used in an in-place operation (PyTorch: "
                             f"RuntimeError): write {written.id if isinstance(written, ast.Name) else 'w'}"
                             f".data.{node.func}(...) or call it inside `with torch.no_grad():`", node.pos)
        params = ("val",) if name == "constant_" else () if name == "zeros_" else \
            ("a", "b") if name == "uniform_" else ("mean", "std")
        call = ast.Call(node.func, node.args[1:], node.pos, node.keywords)
        given = self.arguments_by_name(call, values[1:], (*params, "generator"), required=len(params[:1]) * (
            name == "constant_"))
        self._initialized(name, receiver, given, f"{written.id if isinstance(written, ast.Name) else ''}"
                          f".{node.func}()", node, scope, work)
        return NONE

    def _initialized(self, name: str, tensor, given: dict, label: str, node: ast.Call, scope, work: list):
        leaves = self.torch.leaves
        if type(tensor) is not int or tensor not in leaves:
            raise self.error(f"{label}: gradcli fills a parameter (a leaf tensor that requires grad, as "
                             "layer.weight)", node.pos)
        if given.get("generator", NONE) is not NONE:
            raise self.error(f"{label.removesuffix('()')}(generator=...): gradcli reproduces the default generator's draws", node.pos)
        shape = self.graph.shapes[tensor]
        dtype = getattr(self, "layer_dtypes", {}).get(tensor)
        options = {**INIT_FUNCTIONS.get(name, {}), **{k: self._init_option(k, v, label, node)
                                                      for k, v in given.items() if k not in ("tensor", "generator")}}
        if name in ("zeros_", "ones_", "constant_"):
            fill = {"zeros_": 0.0, "ones_": 1.0}.get(name, options.get("val"))
            if dtype is None and float(np.float32(fill)) != fill:
                raise self.error(f"{label}: {fill!r} is rounded by the tensor's type, which gradcli knows for a "
                                 "layer's parameters only (nn.Linear's weight and bias)", node.pos)
            value = np.full(shape, dtype.type(fill) if dtype is not None else fill, dtype=np.float64)
        else:
            value = self._drawn(name, options, shape, dtype, label, node, scope, work)
        return self._replaced(tensor, value, dtype, node, scope)

    def _drawn(self, name: str, options: dict, shape: tuple, dtype, label: str, node, scope, work) -> np.ndarray:
        if dtype is None:
            raise self.error(f"{label} draws in the tensor's type, which gradcli knows for a layer's parameters "
                             "only (nn.Linear's weight and bias): draw into those, or write the values", node.pos)
        generator = self.torch_generator
        if generator is None:
            raise self.error(f"{label} draws from PyTorch's generator, which the program never seeded: call "
                             "torch.manual_seed(0) first (gradcli then reproduces PyTorch's draws)", node.pos)
        self._refuse_replayed(work, node, scope)  # (random_draws.py)
        count = math.prod(shape)
        if name.startswith(("xavier", "kaiming")):
            if len(shape) < 2:
                raise self.error(f"{label}: Fan in and fan out can not be computed for tensor with fewer than 2 "
                                 "dimensions (PyTorch: ValueError)", node.pos)
            fan_in, fan_out = _fans(shape)
            if name.startswith("xavier"):
                std = options["gain"] * math.sqrt(2.0 / float(fan_in + fan_out))
            else:
                std = self._kaiming_gain(options, label, node) / math.sqrt(fan_in if options["mode"] == "fan_in"
                                                                           else fan_out)
            if name.endswith("uniform_"):
                bound = math.sqrt(3.0) * std
                options = {"a": -bound, "b": bound}
            else:
                options = {"mean": 0.0, "std": std}
        if "a" in options:
            drawn = uniform_between(generator, count, options["a"], options["b"], dtype)
        else:
            drawn = generator.normal(count, options["mean"], options["std"], dtype)
        return np.asarray(drawn, dtype=np.float64).reshape(shape)

    def _kaiming_gain(self, options: dict, label: str, node) -> float:
        if options["mode"] not in ("fan_in", "fan_out"):
            raise self.error(f"{label}: mode is 'fan_in' or 'fan_out', got {options['mode']!r}", node.pos)
        nonlinearity = options["nonlinearity"]
        if nonlinearity == "leaky_relu":
            return math.sqrt(2.0 / (1 + options["a"] ** 2))
        if nonlinearity not in _GAINS:
            raise self.error(f"{label}: unsupported nonlinearity {nonlinearity} (PyTorch: ValueError)", node.pos)
        return _GAINS[nonlinearity]

    def _init_option(self, key: str, value, label: str, node):
        if key in ("mode", "nonlinearity"):
            if not isinstance(value, Text):
                raise self.error(f"{label}: {key} is a string, as '{INIT_FUNCTIONS['kaiming_uniform_'][key]}'",
                                 node.pos)
            return value.value
        known = self.constant_value(value)
        if not isinstance(known, Literal) or known.value.ndim:
            raise self.error(f"{label}: {key} must be a number written in the program", node.pos)
        return float(known.value)

    def _replaced(self, old: int, value: np.ndarray, dtype, node, scope) -> int:
        """The parameter `old` now holds `value`: a new leaf, its .grad kept, in every holder."""
        leaves = self.torch.leaves
        placed = self.graph.add_constant(value if value.ndim else float(value), node.pos, scope.stack)
        self.made_by[placed] = "torch"
        new = transforms.fresh(self, placed, node.pos, scope)
        leaves[new] = leaves.pop(old)
        self.rebind_id(old, new, scope)
        self._rebind_attributes(old, new)  # (optimizers.py: the modules' attributes)
        for held in list(self.globals.values()):
            if isinstance(held, Optimizer):
                held.params[:] = [new if p == old else p for p in held.params]
        if dtype is not None:
            self.layer_dtypes[new] = dtype
        return new
