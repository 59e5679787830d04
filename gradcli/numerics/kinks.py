"""Ties and kinks of a differentiated equation (the op record's `kink`), where its derivative is a
convention: how many there are (a reduction, lazy on a lazy backend) and the note that says so."""
from __future__ import annotations

from gradcli.ops.shapes import normalize_axes


def kink_count(eq, value, args, xp):
    """The number of ties (groups of tied extremes, equal pairs) or kinks (zeros) the op's
    `kink` names: a reduction, lazy on a lazy backend."""
    kink = eq.op.kink
    if kink == "extremes":
        axis = eq.params.get("axis")
        keep = value if eq.params.get("keepdims") else xp.expand_dims(value, normalize_axes(axis, args[0].ndim))
        counts = xp.count_nonzero(args[0] == keep, axis=axis, keepdims=True)
        return xp.count_nonzero(counts > 1)
    if kink == "pair":
        return xp.count_nonzero(xp.broadcast_to(args[0] == args[1], value.shape))
    if kink == "zero":
        return xp.count_nonzero(args[0] == 0)
    return None


def kink_note(kink: str, label: str, count: int) -> tuple[str, str]:
    """(the diagnostic's kind, its message) for `count` ties or kinks of this `kink`."""
    plural = "s" * (count != 1)
    if kink == "extremes":
        return "tie", (f"{label} has tied extremes in {count} group{plural}; its gradient is "
                       f"split evenly among the tied elements")
    if kink == "pair":
        return "tie", (f"{label} has {count} equal pair{plural}; the gradient is "
                       "split evenly between the two arguments there")
    return "kink", (f"{label} is evaluated exactly at 0 for {count} element{plural}, where it has no "
                    f"derivative; gradcli uses 0 there")
