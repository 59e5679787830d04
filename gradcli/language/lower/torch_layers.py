"""PyTorch's layers with seeded weights: after `torch.manual_seed(s)`, `nn.Linear(in, out)` holds
the weight and bias PyTorch 2.13 draws (its reset_parameters: kaiming_uniform_(weight,
a=sqrt(5)), then the bias uniform in +-1/sqrt(in)), bit for bit, as parameters (leaves with a
.grad) of a module object; `nn.Sequential(...)` chains modules.

A layer is an ObjectValue whose class is a `LayerClass`: the machinery of the program's own
nn.Module classes reads it as it is (attributes, `parameters()` and `named_parameters()` in
PyTorch's order, optimizers' steps rebinding its parameters). Calling a Linear is
F.linear(x, weight, bias); calling a Sequential calls each module on what the one before gave
(work items, so a module of the program's own class may stand among them).

The draws: `tensor.uniform_(low, high)` on PyTorch's CPU generator, low and high cast to the
tensor's type, the span high - low computed in it, then x * span + low with x the generator's
24 bits (float32) or 53 bits (float64, two outputs) in [0, 1), in double, one fused
multiply-add, rounded to the tensor's type (checked against PyTorch 2.13.0+cpu on hundreds of
shapes and seeds). Without a seed a layer is refused: PyTorch's own start is not reproducible."""
from __future__ import annotations

import math

import numpy as np

from gradcli.language import syntax as ast
from gradcli.language.lower import transforms
from gradcli.language.lower.random_draws import bounded, on_cpu
from gradcli.language.lower.torch_init import TENSOR_METHODS, TorchInit, uniform_between, written_data
from gradcli.language.lower.transforms import _FINISH, FUNCTION_VALUES, ClassValue, FunctionRef, ObjectValue
from gradcli.language.lower.values import NONE, Literal, Text

# the module methods a layer answers (optimizers.py's module_method), besides forward
_MODULE_METHODS = ("parameters", "named_parameters", "zero_grad", "train", "eval")


class LayerClass(ClassValue):
    """The class of a library layer (`name`: Linear, Sequential): no methods of the program."""

    __slots__ = ()


def is_layer(value) -> bool:
    return isinstance(value, ObjectValue) and isinstance(value.cls, LayerClass)


def linear_bounds(fan_in: int) -> tuple[float, float]:
    """reset_parameters' bounds, computed as PyTorch's Python does: kaiming_uniform_ with
    a = sqrt(5) (gain sqrt(2 / (1 + a**2)), std gain / sqrt(fan_in), bound sqrt(3) std) for the
    weight, 1 / sqrt(fan_in) for the bias."""
    gain = math.sqrt(2.0 / (1 + math.sqrt(5) ** 2))
    return math.sqrt(3.0) * (gain / math.sqrt(fan_in)), 1 / math.sqrt(fan_in)


class TorchLayers(TorchInit):
    """Part of the lowering (gradcli.language.lower): torch.nn's Linear and Sequential (and, from
    its base, nn.init's functions: torch_init.py)."""

    def torch_layer(self, kind: str, node: ast.Call, values: list, scope, work: list):
        """`nn.Linear(...)` or `nn.Sequential(...)` (the dialect's constructors)."""
        if kind == "Sequential":
            if node.keywords:
                raise self.error("nn.Sequential(...) takes the modules as positional arguments", node.pos)
            for k, module in enumerate(values):
                if not isinstance(module, FUNCTION_VALUES):
                    raise self.error(f"nn.Sequential(...): argument {k} is not a module (nn.Linear(2, 3), nn.ReLU(), "
                                     "an object of the program's nn.Module class)", node.args[k].pos)
            return ObjectValue(LayerClass("Sequential", {}, {}, node.pos, ("torch.nn.Module",)),
                               {str(k): module for k, module in enumerate(values)}, node.pos)
        return self._linear(node, values, scope, work)

    def _linear(self, node: ast.Call, values: list, scope, work: list):
        label = f"{node.func}(...)"
        names = ("in_features", "out_features", "bias", "device", "dtype")
        given = self.arguments_by_name(node, values, names, required=2)
        sizes = [self.known_int(given[k], f"{k} of {label}", node.pos) for k in names[:2]]
        if min(sizes) < 1:
            raise self.error(f"{label}: gradcli takes in_features and out_features of 1 or more, got {sizes}",
                             node.pos)
        bounded(self, sizes[0] * (sizes[1] + 1), node.func, node)
        with_bias = "bias" not in given or bool(self.constant_truth(given["bias"]))
        device = given.get("device", NONE)
        if not on_cpu(device):
            raise self.error(f"{label}(device=...): gradcli reproduces the CPU generator's draws; make the layer "
                             "on the CPU (device='cpu')", node.pos)
        dtype = self._torch_dtype(given.get("dtype", NONE), label, node, "weights")  # (random_draws.py)
        generator = self.torch_generator
        if generator is None:
            raise self.error(f"{label} draws its initial weights from PyTorch's generator, which the program never "
                             "seeded: call torch.manual_seed(0) first (gradcli then reproduces PyTorch's draws), or "
                             "write the weights in the program and call the functional (F.linear(x, W, b))", node.pos)
        self._refuse_replayed(work, node, scope)  # (random_draws.py)
        n_in, n_out = sizes
        weight_bound, bias_bound = linear_bounds(n_in)
        weight = uniform_between(generator, n_in * n_out, -weight_bound, weight_bound, dtype).reshape(n_out, n_in)
        attrs = {"weight": self._parameter(weight, dtype, node, scope)}
        attrs["bias"] = self._parameter(uniform_between(generator, n_out, -bias_bound, bias_bound, dtype),
                                        dtype, node, scope) if with_bias else NONE
        attrs["in_features"], attrs["out_features"] = (Literal(np.float64(n), node.pos) for n in sizes)
        return ObjectValue(LayerClass("Linear", {}, {}, node.pos, ("torch.nn.Module",)), attrs, node.pos)

    def _parameter(self, drawn: np.ndarray, dtype, node: ast.Call, scope) -> int:
        """A drawn array as a parameter: a leaf that requires grad (as nn.Parameter makes it),
        whose type nn.init's draws follow (`layer_dtypes`)."""
        leaf = transforms.fresh(self, self._placed(drawn, node, scope, "torch"), node.pos, scope)
        self.torch.leaves[leaf] = None
        if not hasattr(self, "layer_dtypes"):
            self.layer_dtypes = {}
        self.layer_dtypes[leaf] = dtype
        return leaf

    # ------------------------------------------------------------------ using a layer
    def apply_function(self, fn, node, values: list, scope, work: list):
        """`layer(x)`: a Linear's F.linear, a Sequential's chain; else the others' calls."""
        if type(fn) is ObjectValue and type(fn.cls) is LayerClass:
            return self.call_layer(fn, node, values, scope, work)
        return super().apply_function(fn, node, values, scope, work)

    def call_gradient_api(self, node: ast.Call, values: list, scope, work: list):
        """A layer's methods: forward(x), parameters(), named_parameters(), zero_grad(), and the train and evaluation mode switches."""
        if node.method and values and is_layer(values[0]):
            layer = values[0]
            if node.func == "forward":
                rest = ast.Call(node.func, node.args[1:], node.pos, node.keywords)
                return self.call_layer(layer, rest, values[1:], scope, work)
            if node.func in _MODULE_METHODS:
                return self.module_method(layer, node, values[1:])
            if node.func in ("double", "float", "to"):
                return self.layer_cast(layer, node, values[1:])
            raise self.error(f"nn.{layer.cls.name} has no method '{node.func}' that gradcli reads (it reads "
                             f"forward, {', '.join(_MODULE_METHODS)}, double, float, to)", node.pos)
        if node.method and values and type(values[0]) is int and node.func in TENSOR_METHODS \
                and self._filled_leaf(values[0], node) in getattr(self._torch_state, "leaves", ()):
            return self.tensor_fill(node, values, scope, work)  # (torch_init.py)
        return super().call_gradient_api(node, values, scope, work)

    def _filled_leaf(self, receiver: int, node: ast.Call) -> int:
        """The tensor a fill_ writes: `w.data`'s w, else the receiver."""
        written = node.args[0]
        equation = self.graph.equations[receiver]
        if written_data(written) and equation.op.name == "stop_gradient":
            return equation.inputs[0]
        return receiver

    def layer_cast(self, layer: ObjectValue, node: ast.Call, args: list):
        """`model.double()`, `model.float()`, `model.to(torch.float64)` / `.to('cpu')`: the module
        itself, its parameters now of that type (float32 to float64 is exact; float64 to float32
        would round, and is refused)."""
        name = {"double": "float64", "float": "float32"}.get(node.func)
        if node.func == "to":
            given = args[0] if len(args) == 1 and not node.keywords else None
            text = given.value if isinstance(given, Text) else None
            if text is not None and text.partition(":")[0] == "cpu":
                return layer
            if text not in ("float32", "float", "float64", "double"):
                raise self.error("model.to(...): gradcli reads a floating type (torch.float64) or 'cpu'", node.pos)
            name = "float64" if text in ("float64", "double") else "float32"
        elif args or node.keywords:
            raise self.error(f"model.{node.func}() takes no arguments", node.pos)
        types = getattr(self, "layer_dtypes", {})
        params = self.module_method(layer, ast.Call("parameters", [], node.pos, method=True), []).items
        if name == "float32" and any(types.get(p) != np.dtype(np.float32) for p in params):
            raise self.error(f"model.{node.func}() would round float64 parameters to float32, which gradcli does "
                             "not do (it computes in float64): leave it out", node.pos)
        for p in params:
            types[p] = np.dtype(np.float64 if name == "float64" else np.float32)
        return layer

    def call_layer(self, layer: ObjectValue, node, values: list, scope, work: list):
        kind = layer.cls.name
        if len(values) != 1 or node.keywords:
            raise self.error(f"nn.{kind}(...)(x) takes one input", node.pos)
        if kind == "Linear":
            return self.call_on(FunctionRef("torch.nn.functional.linear", "torch.nn.functional.linear", node.pos),
                                [values[0], layer.attrs["weight"], layer.attrs["bias"]], node.pos, scope, work)
        modules = list(layer.attrs.values())
        if not modules:
            return values[0]
        for module in reversed(modules[1:]):  # (each takes what the one before gave: finish_pipe)
            work.append((_FINISH, ("pipe", module, node.pos), scope))
        return self.call_on(modules[0], values, node.pos, scope, work)

    def finish(self, item, values: list, scope, work: list) -> None:
        """A Sequential's next module, called on the value the one before left."""
        if item[0] != "pipe":
            return super().finish(item, values, scope, work)
        _, module, pos = item
        result = self.call_on(module, [values.pop()], pos, scope, work)
        if result is not None:
            values.append(result)
        return None

    def read_index(self, node: ast.Index, values: list, scope):
        """`model[0]`: a Sequential's module (negative indices count from the end)."""
        target = values[0]
        if not (is_layer(target) and target.cls.name == "Sequential"):
            return super().read_index(node, values, scope)
        modules = list(target.attrs.values())
        if len(values) != 2 or isinstance(node.subscripts[0], ast.Slice):
            raise self.error("nn.Sequential takes one constant integer index: model[0]", node.pos)
        k = self.known_int(values[1], "the index of an nn.Sequential", node.pos)
        if not -len(modules) <= k < len(modules):
            raise self.error(f"index {k} is out of range for an nn.Sequential of {len(modules)} modules", node.pos)
        return modules[k]

