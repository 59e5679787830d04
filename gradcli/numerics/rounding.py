"""What a run in half precision (float16, bfloat16: numerics/formats.py) loses, said in the
format's own terms and measured against a float64 run of the same program:

- `gradient_underflow` (and `value_underflow` for an output): elements that are 0 in the half run
  where float64 gives a nonzero number (below the format's smallest subnormal, they round to 0),
  and those that fell into the subnormal range, where they keep fewer significant bits;
- `precision_loss`: a sum (any op whose hint `accumulates`: sum, mean, cumsum, matmul, dot, ...)
  whose own additions, each rounded to the format, lose more than one rounding can (5/8 of the
  format's epsilon: `--accumulate same`; accumulated in float32, a sum is rounded once).

The overflow of a half run is a real infinity, found where it is made by the usual checks
(diagnostics.py), which speak of the format's largest number.

Cost: with `--accumulate same` (in float32, a sum is rounded once: nothing to measure), an
accumulating op's result is compared, when it is made, with the same op computed in
float64 on the same (rounded) inputs, which separates its own rounding from what its inputs
already lost; at the end, the program is evaluated once more in float64 for the fetched values
that hold a 0 or a subnormal and the sums that lost digits (nothing at all where there are
none). Neither happens unless the format is half.
"""
from __future__ import annotations

import numpy

from gradcli.dtypes import numpy_dtype
from gradcli.engine.evaluate import run
from gradcli.engine.memory import check_memory
from gradcli.errors import GradcliError
from gradcli.numerics.exactness import _exact_run, _wide
from gradcli.numerics.formats import Format, digits
from gradcli.ops.table import DataError
from gradcli.numerics.hints import hints_of

# a result rounded once to the format is within half its epsilon (float32's own rounding, when
# it accumulates there, adds far less): an accumulating op whose own error passes 5/8 of the
# epsilon lost digits in its additions
OWN_ERROR_IN_EPS = 0.625
# float64's rounding noise is a few of its epsilons (2**-52) of the numbers it was made from: an
# element of a value above 2**-40 of its scale is a number, one below may be noise
NOISE_BELOW = 2.0**-40


class _Accumulated:
    """One accumulating op's result, noted when it was made."""

    __slots__ = ("value", "terms", "own")

    def __init__(self, value, terms: int, own: float):
        self.value, self.terms, self.own = value, terms, own


def _relative_error(value, reference) -> float:
    """||value - reference|| / ||reference|| in float64 (0 where both are 0)."""
    v = numpy.asarray(value, dtype=numpy.float64)
    r = numpy.asarray(reference, dtype=numpy.float64)
    scale = float(numpy.linalg.norm(r.reshape(-1)))
    gap = float(numpy.linalg.norm((v - r).reshape(-1)))
    if scale == 0.0:
        return 0.0 if gap == 0.0 else float("inf")
    return gap / scale


class Rounding:
    """What the half format loses (the module's doc), for the checker of a half run
    (diagnostics.HalfPrecisionChecker): `see` each equation, then `diagnostics` at the end, as
    the keyword arguments of each Diagnostic."""

    def __init__(self, graph, fmt: Format, xp, to_host, sums: bool = True):
        self.graph, self.format, self.dtype, self.xp, self._host = graph, fmt, fmt.name, xp, to_host
        self.sums = sums  # whether the sums' own rounding is measured (--accumulate same)
        self.accumulated: dict[int, _Accumulated] = {}

    def see(self, i, eq, value, args) -> None:
        """Called with each equation's result (args None: not noted)."""
        if self.sums and args is not None and eq.backward is None and value.size:
            terms_of = hints_of(eq.op).accumulates
            if terms_of is not None:
                self._note_accumulation(i, eq, value, args, terms_of)

    def _note_accumulation(self, i, eq, value, args, terms_of) -> None:
        terms = int(terms_of(args, eq.params))
        if terms < 2:
            return
        host = self._host(value)
        if not bool(numpy.all(numpy.isfinite(host))):
            return  # (an overflow: said where it was made)
        wide = [numpy.asarray(self._host(a), dtype=numpy.float64) for a in args]
        with numpy.errstate(all="ignore"):
            exact = eq.op.forward(numpy, *wide, **eq.params)
        own = _relative_error(host, exact)
        if own > OWN_ERROR_IN_EPS * self.format.eps:
            self.accumulated[i] = _Accumulated(numpy.asarray(host, dtype=numpy.float64), terms, own)

    def diagnostics(self, outputs: dict[str, int], values: dict, overrides: dict | None, carrying) -> list[dict]:
        """Given the fetched `values` (host arrays by name), the underflows of the values fetched
        and the sums that lost digits, against float64; `carrying`: the values that carry an
        overflow's infinity or NaN (its zeros are the overflow's, said there)."""
        found: list[dict] = []
        # only the values that hold a 0 or a subnormal can have underflowed: the float64 run computes
        # those and the sums that lost digits, and nothing at all where there are none (the usual case)
        looked_at = {name: j for name, j in outputs.items() if j not in carrying and j not in self.accumulated
                     and values.get(name) is not None and self._may_have_underflowed(values[name])}
        wanted = list(dict.fromkeys([*looked_at.values(), *self.accumulated]))
        if not wanted:
            return found
        try:
            # (within the default memory limit: a float64 run holds four times a float16 one's bytes)
            check_memory(self.graph, wanted, "float64", text=False)
            with numpy.errstate(all="ignore"):
                reference = run(self.graph, wanted, dtype="float64", xp=self.xp, overrides=overrides)
        except (GradcliError, MemoryError) as err:
            why = "it needs more memory than is allowed" if isinstance(err, MemoryError) or \
                getattr(err, "option", None) == "max_memory" else err.message
            return [dict(severity="info", kind="precision_unmeasured", op="program",
                         message=f"what {self.dtype} loses was not measured: the float64 run of the program that "
                                 f"measures it failed ({why})")]
        reference = {j: numpy.asarray(self._host(v), dtype=numpy.float64) for j, v in reference.items()}
        found += self._precision_losses(reference)
        ys = [k for k in outputs if not k.startswith("\0")]
        for name, j in looked_at.items():  # (not one carrying an overflow's NaN, nor a sum that lost digits)
            found += self._underflows(name, j, numpy.asarray(values[name]), reference[j], ys)
        return found

    def _may_have_underflowed(self, value) -> bool:
        """Whether a fetched value holds a 0 or a subnormal number (one pass, in its own type)."""
        value = numpy.asarray(value)
        # (only a value held in the format: a gradient given back in float32, as a loss scale
        # divides it back, is float32's to judge)
        if value.dtype != numpy_dtype(self.dtype) or not value.size:
            return False
        with numpy.errstate(all="ignore"):
            return bool(numpy.any(numpy.abs(value) < self.format.smallest_normal))

    def _precision_losses(self, reference: dict) -> list[dict]:
        found = []
        for i, noted in self.accumulated.items():
            eq = self.graph.equations[i]
            total = _relative_error(noted.value, reference[i])
            found.append(dict(
                severity="warning", kind="precision_loss", op=eq.label,
                message=f"this {eq.label} of {noted.terms} {self.dtype} terms has a relative error of {digits(total)} "
                f"against float64; {digits(noted.own)} of it is its own rounding (each addition rounded to {self.dtype}, "
                f"whose epsilon is {digits(self.format.eps)})",
                suggestion="accumulate in float32 (--accumulate float32, as PyTorch's autocast and XLA do), or "
                           "compute it in float32", pos=eq.pos, stack=eq.stack, count=noted.terms, value_id=i))
        return found

    def _real_in_float64(self, j: int, reference):
        """Which elements of float64's value j are numbers and not its rounding noise (a gradient
        that is 0 in exact arithmetic comes out of float64 as 1e-17): those a wider float
        (exactness.py's long double) agrees with to six digits. None where there is no wider
        float, or value j cannot be computed in it."""
        wide = _wide("float64")
        if wide is None:
            return None
        try:
            with numpy.errstate(all="ignore"):
                env, inexact = _exact_run(self.graph, [j], "float64", wide)
        except (GradcliError, DataError, ArithmeticError, ValueError, TypeError, MemoryError):
            return None
        if j in inexact:
            return None
        exact = numpy.asarray(env[j], dtype=wide)
        if exact.shape != reference.shape:
            return None
        with numpy.errstate(all="ignore"):
            return numpy.abs(exact - reference) <= 1e-6 * numpy.abs(exact)

    def _underflows(self, name: str, j: int, value, reference, ys: list[str]) -> list[dict]:
        """Elements of a fetched value that are 0 where float64 gives a nonzero number, and those
        that are subnormal in the format."""
        fmt, dtype = self.format, self.dtype
        v = numpy.asarray(value, dtype=numpy.float64)
        if v.shape != reference.shape:
            return []
        gradient = name.startswith("\0")
        label = (f"d {ys[0]}/d {name[1:]}" if len(ys) == 1 else f"d/d {name[1:]}") if gradient else name
        kind = "gradient_underflow" if gradient else "value_underflow"
        size = v.size
        lost = (v == 0) & (reference != 0) & numpy.isfinite(reference)
        magnitude = numpy.abs(v)
        # (subnormal where float64 gives 0: the format's rounding noise, not a number it lost)
        subnormal = (magnitude > 0) & (magnitude < fmt.smallest_normal) & numpy.isfinite(v) & (reference != 0)
        # float64's own rounding noise is no number: an element far below the value's scale (or 1)
        # may be noise, and is asked of a wider float (the rare path: an evaluation of its own)
        suspect = (lost | subnormal) & (numpy.abs(reference) < NOISE_BELOW * max(1.0, float(
            numpy.max(numpy.abs(reference[numpy.isfinite(reference)]), initial=0.0))))
        if suspect.any():
            real = self._real_in_float64(j, reference)
            if real is not None:
                lost &= real | ~suspect
                subnormal &= real | ~suspect
        zeros, smalls = int(numpy.count_nonzero(lost)), int(numpy.count_nonzero(subnormal))
        if not zeros and not smalls:
            return []
        eq = self.graph.equations[j]
        of = f"{size} element{'s' * (size != 1)}"
        if zeros:
            below = float(numpy.max(numpy.abs(reference[lost])))
            if below < fmt.smallest_subnormal:
                said = (f"{zeros} of {of} {'are' if zeros != 1 else 'is'} below {dtype}'s smallest subnormal "
                        f"({fmt.smallest_subnormal:.3g}) and became 0 (float64 gives "
                        f"{'them, up to ' if zeros != 1 else ''}{below:.3g})")
            else:
                said = (f"{zeros} of {of} became 0 in {dtype} where float64 gives "
                        f"{'them nonzero (up to ' if zeros != 1 else 'it nonzero ('}{below:.3g}): a value "
                        f"{'they are' if zeros != 1 else 'it is'} made from underflowed or lost its digits")
        else:
            said = ""
        if smalls:
            error = _relative_error(v[subnormal], reference[subnormal])
            said += ("; " if said else f"{smalls} of {of} ") + (f"{smalls} more " if zeros else "") + (
                f"{'are' if smalls != 1 else 'is'} subnormal in {dtype} (below {fmt.smallest_normal:.3g}), with fewer "
                f"significant bits: a relative error of {digits(error)} against float64")
        if gradient:
            remedy = ("scale the loss so that the gradients stay in the normal range: --loss-scale auto finds the "
                      "power of two (the output's gradient multiplied by it, the gradients divided back in float32)")
        else:
            remedy = f"rescale the value, or compute it in a format with a wider range than {dtype}"
        return [dict(severity="warning" if zeros else "info", kind=kind, op=label, message=f"{label}: {said}",
                     suggestion=remedy, pos=eq.pos, stack=eq.stack, count=zeros or smalls, value_id=j)]

