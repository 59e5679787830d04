"""`with torch.autocast(device_type, dtype=...):` regions: each op of PyTorch's autocast tables
computes in the region's type (matrix products, convolutions, `linear`) or in float32 (on CUDA
the ops that lose range or digits in float16: exp, log, softmax, sums, norms, losses; on the CPU
the losses and a few others), its floating arguments cast to that type first; every other op
computes in its arguments' types, promoted as PyTorch promotes them. The tables are PyTorch
2.13's (aten/src/ATen/autocast_mode.cpp and .h), named by the op as the program spells it
(`torch.mv` is not PyTorch's CPU table's, `a @ b` is)."""
from __future__ import annotations

from gradcli.language import syntax as ast
from gradcli.language.dialects.spelling import Autocast
from gradcli.language.lower.values import Literal, Scope, TupleValue

# the region's type: PyTorch's lower_precision_fp tables
_LOWER_CUDA = frozenset({"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                         "prelu", "addmm", "addmv", "addr", "matmul", "einsum", "mm", "mv", "linear", "addbmm",
                         "baddbmm", "bmm", "chain_matmul", "multi_dot", "vecdot"})
# (on the CPU einsum, tensordot and multi_dot are no table's, but compute with mm and bmm, which are:
# their results are of the region's type too, as PyTorch 2.13.0+cpu gives them)
_LOWER_CPU = frozenset({"conv1d", "conv2d", "conv3d", "bmm", "mm", "vecdot", "baddbmm", "addmm", "addbmm", "linear",
                        "matmul", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu",
                        "scaled_dot_product_attention", "einsum", "tensordot", "multi_dot"})
# float32: PyTorch's fp32 and fp32_set_opt_dtype tables
_LOSSES = frozenset({"mse_loss", "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss", "poisson_nll_loss",
                     "smooth_l1_loss", "cross_entropy", "l1_loss", "huber_loss", "margin_ranking_loss",
                     "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "kl_div",
                     "multilabel_margin_loss", "binary_cross_entropy_with_logits", "cdist"})
_FLOAT32_CUDA = _LOSSES | frozenset({
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
    "sinh", "tan", "pow", "**", "softplus", "layer_norm", "group_norm", "norm", "cosine_similarity", "dist",
    "pdist", "renorm", "logsumexp", "prod", "softmax", "log_softmax", "cumprod", "cumsum", "sum",
    "vector_norm", "matrix_norm", "normalize"})
_FLOAT32_CPU = _LOSSES | frozenset({"prod", "quantile", "nanquantile", "trace", "cholesky", "inverse", "inv",
                                    "pinverse", "solve", "cond", "matrix_rank", "svdvals", "eigvalsh"})
TABLES = {"cuda": (_LOWER_CUDA, _FLOAT32_CUDA), "cpu": (_LOWER_CPU, _FLOAT32_CPU)}
_SYMBOLS = {"@": "matmul"}


class AutocastRegions:
    """Part of the lowering (gradcli.language.lower): the autocast regions open (`self.autocasts`,
    innermost last); uses `self.cast`."""

    autocasts: tuple  # (none open at first: set in _Lowering.__init__)

    def autocast_enter(self, context: Autocast) -> Autocast:
        self.autocasts = self.autocasts + (context,)
        return context

    def autocast_leave(self, context: Autocast) -> None:
        self.autocasts = self.autocasts[:-1]

    def autocast_arguments(self, op, node: ast.Call, values: list, scope: Scope, label: str) -> list:
        """`values` with the floating array arguments of an op of the innermost region's tables
        cast to the type it computes in there (unchanged outside a region, or for another op)."""
        region = self.autocasts[-1]
        if not region.enabled:
            return values
        lower, float32 = TABLES[region.device]
        name = _SYMBOLS.get(label, label)
        target = region.dtype if name in lower else "float32" if name in float32 else None
        if target is None:
            return values
        arrays = len(node.args) if op.variadic else min(len(op.args), len(node.args))
        cast = [self.cast(v, target, node, scope) if k < arrays and _a_tensor(self.graph, v) else v
                for k, v in enumerate(values)]
        if op.sequence:  # (multi_dot([a, b]): the tensors of its list)
            cast = [TupleValue([self.cast(item, target, node, scope) if _a_tensor(self.graph, item) else item
                                for item in v.items], v.pos) if isinstance(v, TupleValue) and k < op.sequence else v
                    for k, v in enumerate(cast)]
        return cast


def _a_tensor(graph, value) -> bool:
    """A floating tensor, which autocast casts: a computed value that is no comparison, or an
    array written in the program (a Python number is not cast)."""
    if isinstance(value, Literal):
        return value.value.ndim > 0 and not value.boolean
    return type(value) is int and not graph.equations[value].op.boolean
