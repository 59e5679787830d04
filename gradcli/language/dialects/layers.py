"""Layers written as functionals, composed of the table's ops: an embedding lookup (PyTorch's
`F.embedding`, TensorFlow's `tf.nn.embedding_lookup`) and scaled dot-product attention
(PyTorch's `F.scaled_dot_product_attention`, JAX's `jax.nn.dot_product_attention`), and
TensorFlow's `tf.add_n`."""
from __future__ import annotations

import math

import numpy as np

from gradcli.language.dialects.spelling import composer


def embedding(lowering, node, values, scope):
    """F.embedding(input, weight, padding_idx=None, max_norm=None, ...): weight's rows at the
    integer ids (padding_idx's row passes no gradient, as in PyTorch); tf.nn.embedding_lookup(params,
    ids, max_norm=None): params' rows at ids."""
    label, pos = node.func, node.pos
    tensorflow = node.func.endswith("embedding_lookup")
    names = ("params", "ids", "max_norm", "name") if tensorflow else \
        ("input", "weight", "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse")
    given = lowering.arguments_by_name(node, values, names, required=2)
    for name in ("max_norm", "scale_grad_by_freq"):
        if name in given and not lowering.is_none(given[name]) and lowering.constant_truth(given[name]):
            raise lowering.error(f"{label}({name}=...) is not supported: leave it out", pos)
    ids, table = (given["ids"], given["params"]) if tensorflow else (given["input"], given["weight"])
    indices = lowering.static_param("indices", lowering.known_or_given(ids), label, pos)  # (`ids = torch.tensor(...)`)
    table = lowering.materialize(table, scope, pos)
    rows = lowering.graph.shapes[table][0] if lowering.graph.shapes[table] else 0
    flat = np.ravel(np.asarray(indices, dtype=np.int64))
    if flat.size and (flat.min() < 0 or flat.max() >= rows):
        raise lowering.error(f"{label}: index {int(flat.max() if flat.max() >= rows else flat.min())} is out of "
                             f"range for a table of {rows} rows", pos)
    op, number = composer(lowering, node.pos, node.func, scope)
    looked_up = op("take", table, indices=indices, axis=0)
    padding = given.get("padding_idx")
    if tensorflow or padding is None or lowering.is_none(padding):
        return looked_up
    padding = lowering.static_int(padding, "padding_idx", pos) % rows
    mask = (np.asarray(indices) == padding)[..., None] * np.ones(lowering.graph.shapes[looked_up][-1:])
    return op("where", number(mask), op("stop_gradient", looked_up), looked_up)


def _attend(lowering, node, scope, q, k, v, scale, allowed, added, masked_value=None):
    """softmax(q @ k^T * scale + added) @ v over the last two axes, the places not `allowed` left
    out: given `masked_value` (JAX's), logits set to it; else (PyTorch's) weighed 0, so that a row
    with no place allowed is 0 / 0, NaN, as PyTorch's -inf gives."""
    op, number = composer(lowering, node.pos, node.func, scope)
    logits = op("multiply", op("matmul", q, op("swapaxes", k, axis1=-1, axis2=-2)), number(scale))
    if added is not None:
        logits = op("add", logits, added)
    if masked_value is not None:  # JAX's: the softmax in float32 always, its probabilities back in the run's type
        logits = lowering.cast(logits, "float32", node, scope)
        if allowed is not None:  # (JAX masks before the cast, with float64's; float32's, after it, gives the same)
            logits = op("where", allowed, logits, number(masked_value))
        probabilities = op("softmax", logits, axis=-1)
        return op("matmul", lowering.cast(probabilities, "float64", node, scope), v)
    if allowed is None:
        return op("matmul", op("softmax", logits, axis=-1), v)
    lowest = number(-np.finfo(np.float64).max)
    top = op("stop_gradient", op("max", op("where", allowed, logits, lowest), axis=-1, keepdims=True))
    # (the places left out shifted to 0 before exp, which then overflows nowhere: no NaN gradient)
    weights = op("where", allowed, op("exp", op("subtract", op("where", allowed, logits, top), top)),
                 number(0.0))
    return op("matmul", op("divide", weights, op("sum", weights, axis=-1, keepdims=True)), v)


def torch_attention(lowering, node, values, scope):
    """F.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
    is_causal=False, scale=None): softmax(q k^T / sqrt(E) + mask) v; a boolean mask (or the
    causal one) keeps its True places, the others -inf (a row masked whole is NaN, as in PyTorch)."""
    label, pos = node.func, node.pos
    given = lowering.arguments_by_name(node, values, ("query", "key", "value", "attn_mask", "dropout_p", "is_causal",
                                                      "scale", "enable_gqa"), required=3)
    if "dropout_p" in given and float(lowering.static_param("dropout_p", given["dropout_p"], label, pos)) != 0.0:
        raise lowering.error(f"{label}(dropout_p=...) draws at random: leave it at 0", pos)
    q, k, v = (lowering.materialize(given[name], scope, pos) for name in ("query", "key", "value"))
    shapes = lowering.graph.shapes
    if len(shapes[q]) < 2 or shapes[q][-1] != shapes[k][-1]:
        raise lowering.error(f"{label}: query (..., L, E) and key (..., S, E) must end in the same E", pos)
    scale = 1.0 / math.sqrt(shapes[q][-1]) if "scale" not in given or lowering.is_none(given["scale"]) else \
        float(lowering.static_param("scale", given["scale"], label, pos))
    allowed = added = None
    mask = given.get("attn_mask")
    causal = "is_causal" in given and bool(lowering.constant_truth(given["is_causal"]))
    if mask is not None and not lowering.is_none(mask):
        if causal:
            raise lowering.error(f"{label}: give attn_mask or is_causal=True, not both (PyTorch: RuntimeError)", pos)
        boolean = _is_boolean(lowering, mask, label, pos)
        mask = lowering.materialize(mask, scope, pos)
        allowed, added = (mask, None) if boolean else (None, mask)
    if causal:
        allowed = composer(lowering, pos, label, scope)[1](np.tril(np.ones((shapes[q][-2], shapes[k][-2]))))
    return _attend(lowering, node, scope, q, k, v, scale, allowed, added)


def _is_boolean(lowering, mask, label: str, pos) -> bool:
    """Whether attn_mask is a boolean mask (True: takes part) or a float one (added). A mask of
    zeros and ones bound at the top level (an input: its type is not kept) could be either: refused."""
    if not isinstance(mask, int):
        return bool(getattr(mask, "boolean", False))
    eq = lowering.graph.equations[mask]
    if eq.op.boolean:
        return True
    known = lowering.known_literal(mask) if eq.op.name == "input" else None
    if known is not None and np.isin(known.value, (0.0, 1.0)).all():
        raise lowering.error(f"{label}: attn_mask holds only 0 and 1, and gradcli does not keep a top-level "
                             "name's type: write the boolean mask as a comparison (m = scores_index >= 0) or in "
                             "the call, or a float mask with its -inf", pos)
    return False


def jax_attention(lowering, node, values, scope):
    """jax.nn.dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
    is_causal=False): (B, T, N, H) or (T, N, H) layouts, as many key heads as query heads; the
    softmax in float32, as JAX computes it whatever the inputs' type; a masked logit is JAX's
    large negative number (-0.7 of float32's largest), so a row masked whole is uniform, as in
    JAX's float32 (under x64 JAX masks with float64's, and such a row is NaN)."""
    label, pos = node.func, node.pos
    given = lowering.arguments_by_name(node, values, ("query", "key", "value", "bias", "mask", "scale", "is_causal",
                                                      "query_seq_lengths", "key_value_seq_lengths",
                                                      "local_window_size", "implementation"), required=3)
    for name in ("query_seq_lengths", "key_value_seq_lengths", "local_window_size"):
        if name in given and not lowering.is_none(given[name]):
            raise lowering.error(f"{label}({name}=...) is not supported: leave it out", pos)
    q, k, v = (lowering.materialize(given[name], scope, pos) for name in ("query", "key", "value"))
    shapes = lowering.graph.shapes
    rank = len(shapes[q])
    if rank not in (3, 4) or shapes[k] is None or len(shapes[k]) != rank or shapes[q][-2:] != shapes[k][-2:]:
        raise lowering.error(f"{label}: query and key must be (B, T, N, H) and (B, S, N, H), or without B, with "
                             "as many key heads as query heads", pos)
    op, number = composer(lowering, node.pos, node.func, scope)
    heads_first = (0, 2, 1, 3) if rank == 4 else (1, 0, 2)  # (B, N, T, H): the last two axes attend
    q, k, v = (op("transpose", x, axes=heads_first) for x in (q, k, v))
    scale = 1.0 / math.sqrt(shapes[q][-1]) if "scale" not in given or lowering.is_none(given["scale"]) else \
        float(lowering.static_param("scale", given["scale"], label, pos))
    added = lowering.materialize(given["bias"], scope, pos) if "bias" in given and not lowering.is_none(given["bias"]) \
        else None
    allowed = lowering.materialize(given["mask"], scope, pos) if "mask" in given and not lowering.is_none(given["mask"]) \
        else None
    if "is_causal" in given and lowering.constant_truth(given["is_causal"]):
        causal = number(np.tril(np.ones((shapes[q][-2], shapes[k][-2]))))
        allowed = causal if allowed is None else op("logical_and", allowed, causal)
    out = _attend(lowering, node, scope, q, k, v, scale, allowed, added, -0.7 * float(np.finfo(np.float32).max))
    return op("transpose", out, axes=heads_first)


def add_n(lowering, node, values, scope):
    """tf.add_n(inputs): the sum of a list of tensors of one shape."""
    if len(values) != 1 or node.keywords:
        raise lowering.error(f"{node.func}(inputs) takes one list of tensors", node.pos)
    items = lowering.items_of(values[0], node.pos, scope)
    if not items:
        raise lowering.error(f"{node.func}: inputs must not be empty (TensorFlow: ValueError)", node.pos)
    ids = [lowering.materialize(item, scope, node.pos) for item in items]
    if len({lowering.graph.shapes[i] for i in ids}) != 1:
        raise lowering.error(f"{node.func}: the inputs must all have one shape (TensorFlow: InvalidArgumentError)",
                             node.pos)
    op, number = composer(lowering, node.pos, node.func, scope)
    total = ids[0]
    for i in ids[1:]:
        total = op("add", total, i)
    return total if len(ids) > 1 else op("identity", total)
