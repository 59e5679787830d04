"""What a non-finite origin is (diagnostics.py): its kind (overflow, divide_by_zero, invalid) and
why, in words, from the values at its non-finite elements and its op's entry in
gradcli/numerics/hints.py (an overflow limit, a pole, a domain)."""
from __future__ import annotations

import numpy

from gradcli.numerics.hints import hints_of


def fmt_number(x: float) -> str:
    return f"{x:.6g}"


def classify(eq, value, args, mask, has_inf, xp, dtype) -> tuple[str | None, str | None, int | None]:
    """(kind, why in words, the argument that is 0 at the op's pole or None) of equation eq's
    non-finite elements `mask` (a gradient equation's are said by the caller: None, None, None)."""
    op = eq.op
    hints = hints_of(op)
    largest = float(numpy.finfo(dtype).max)

    def at_bad(a):
        return xp.broadcast_to(a, value.shape)[mask] if value.ndim else a

    if eq.backward is not None:
        return None, None, None
    if hints.overflows_above is not None and has_inf:
        top = float(xp.max(at_bad(args[0])))
        return "overflow", (f"its argument reaches {fmt_number(top)}, and {op.name} overflows {dtype} "
                            f"above {hints.overflows_above(largest):.2f}"), None
    if hints.pole is not None and has_inf:
        k, what = hints.pole
        if bool(xp.any(at_bad(args[k]) == 0)):
            if hints.domain is not None:  # NaNs beside the infinities: arguments below the domain too
                bad_args = xp.reshape(xp.asarray(at_bad(args[0])), (-1,))
                below = bad_args[bad_args < hints.domain]
                if below.size:
                    zeros = int(xp.count_nonzero(bad_args == 0))
                    what = (f"{what} at {zeros}, and it reaches {fmt_number(float(xp.min(below)))}, below its "
                            f"domain's start {float(hints.domain):g}, at {below.size}")
            return "divide_by_zero", what, k
    if has_inf:
        finite_args = [a for a in args if a.size]
        if finite_args:
            low = min(float(xp.min(a)) for a in finite_args)
            high = max(float(xp.max(a)) for a in finite_args)
            return "overflow", (f"inputs range over [{fmt_number(low)}, {fmt_number(high)}], and the result "
                                f"exceeds the largest {dtype} ({largest:.4g})"), None
        return "overflow", None, None
    if hints.domain is not None and args:
        limit = float(hints.domain)
        low = float(xp.min(at_bad(args[0])))
        if low < limit:
            return "invalid", f"its argument reaches {fmt_number(low)}, below its domain's start {limit:g}", None
    return "invalid", hints.invalid_reason, None
