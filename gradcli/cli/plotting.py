"""`plot`'s drawing: the curves in the terminal (plotext) or to PNG and SVG files (Matplotlib).

- Any finite range is drawn (the points are spaced by insight.curve.evenly_spaced), and an axis whose numbers are too large or too small for the
  drawing libraries (their tick labels fail beyond about 1e±300) is drawn in units of a power of
  ten that its label names (`dy/dx (×1e+300)`).
- An image file is written as `--out` writes: checked before anything is computed (a known
  suffix, its folder, an existing file only replaced with `--force`), drawn into a temporary
  file beside it and renamed over the name in one step, so the name holds the whole new image or
  what it held before, a symbolic link there is replaced and never written through, and a
  write that fails (disk full, a file-size limit) is exit 74.
- The terminal drawing is at most MAX_COLUMNS wide: its memory follows its cells, and a
  terminal of 60,000 columns is not a reason to take hundreds of MiB.
"""
from __future__ import annotations

import math
import os

import numpy as np

from gradcli.cli import streams
from gradcli.errors import GradcliError, OptionError
from gradcli.io import outputs

MAX_COLUMNS = 1000
FORMATS = {"png": ".png", "svg": ".svg"}
# beyond 10^±PLAIN_EXPONENT an axis is drawn in units of a power of ten
PLAIN_EXPONENT = 30


def parse_range(text: str) -> tuple[float, float]:
    """--range LOW:HIGH: two finite numbers, LOW below HIGH."""
    low, _, high = text.partition(":")
    try:
        return float(low), float(high)
    except ValueError:
        raise GradcliError(f"--range: expected LOW:HIGH such as -5:5, not '{text}'") from None


def check_files(png: str | None, svg: str | None, force: bool) -> list[tuple[str, str]]:
    """[(path, format)] of the files asked for, checked before anything is computed: Matplotlib
    installed, each path ending in its format's suffix, not the same file twice, and a place
    `--out` could write (gradcli.io.outputs)."""

    files = [(path, fmt) for fmt, path in (("png", png), ("svg", svg)) if path]
    if not files:
        if force:
            raise GradcliError("--force replaces the file of --png or --svg; give one")
        return []
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise GradcliError("--png and --svg need Matplotlib: pip install 'gradcli[plot]'") from None
    if len(files) == 2 and os.path.realpath(files[0][0]) == os.path.realpath(files[1][0]):
        raise GradcliError(f"--png and --svg name the same file '{files[0][0]}'; give each its own")
    for path, fmt in files:
        suffix = FORMATS[fmt]
        if not path.lower().endswith(suffix):
            raise GradcliError(f"--{fmt} '{path}': the file would be {fmt.upper()}; end its name in {suffix}")
        try:
            outputs.check_file_destination(path, force)
        except OptionError as err:
            _name_the_option(err, f"--{fmt}")
            raise
    return files


def _name_the_option(err: OptionError, option: str) -> None:
    err.name_option(option)  # (an ExistsError says --force with it)
    err.option = None  # named: the command line does not rename it


def write_files(curve, files: list[tuple[str, str]], force: bool) -> None:
    """Each image written whole into its place (gradcli.io.outputs.write_file), said on stderr."""

    for path, fmt in files:
        figure = _figure(curve)
        try:
            outputs.write_file(path, lambda stream: _save(figure, stream, fmt), force)
        except OptionError as err:
            _name_the_option(err, f"--{fmt}")
            raise
        finally:
            import matplotlib.pyplot as plt
            plt.close(figure)
        streams.say(f"gradcli: wrote {path}")


def _save(figure, stream, fmt: str) -> None:
    figure.savefig(stream, format=fmt, metadata={"Software": "gradcli"} if fmt == "png" else None)


# --------------------------------------------------------------------------- scaled axes

def axis_exponent(values: np.ndarray) -> int:
    """0 where the finite numbers of `values` are plain for the drawing libraries, else the
    power of ten of the largest magnitude (the axis is drawn in units of 10^that)."""
    finite = np.abs(values[np.isfinite(values)])
    top = float(finite.max()) if finite.size else 0.0
    if top == 0.0:
        return 0
    exponent = math.floor(math.log10(top))
    return exponent if abs(exponent) > PLAIN_EXPONENT else 0


def in_units(values: np.ndarray, exponent: int) -> np.ndarray:
    """`values` / 10^exponent, in two steps where 10^-exponent alone would overflow."""
    if exponent == 0:
        return values
    with np.errstate(over="ignore", under="ignore"):
        if exponent < -300:
            return values * 1e300 * 10.0 ** (-exponent - 300)
        return values / 10.0 ** exponent


def _unit(exponent: int) -> str:
    return f" (×1e{exponent:+d})" if exponent else ""


def _series(curve) -> list[tuple[str, np.ndarray, int]]:
    """(label, numbers in their unit, the unit's exponent) for the value and each derivative."""
    names = [curve.of, f"d{curve.of}/d{curve.wrt}", f"d²{curve.of}/d{curve.wrt}²"]
    out = []
    for name, ys in zip(names, [curve.values, *curve.derivatives]):
        exponent = axis_exponent(ys)
        out.append((name + _unit(exponent), in_units(ys, exponent), exponent))
    return out


def _marks_said(curve) -> str:
    kinds = sorted({why for whys in curve.marked.values() for why in whys})
    return f"marked: {len(curve.marked)} point{'s' * (len(curve.marked) != 1)} ({', '.join(kinds)})" if kinds else ""


# --------------------------------------------------------------------------- drawing

def draw_terminal(curve, width: int, height: int, colour: bool) -> str:
    """The curves drawn with plotext, one panel each on the same x axis, at most MAX_COLUMNS
    wide; a marked point is a vertical line where its value or derivative is not finite, or at
    a tie or kink."""
    import plotext as plt

    width = max(20, min(width, MAX_COLUMNS))
    x_exponent = axis_exponent(curve.xs)
    xs = in_units(curve.xs, x_exponent)
    series = _series(curve)
    plt.clear_figure()
    plt.subplots(len(series), 1)
    plt.plotsize(width, height)
    if not colour:
        plt.theme("clear")
    for row, (label, ys, _) in enumerate(series, 1):
        plt.subplot(row, 1)
        if not colour:
            plt.theme("clear")
        good = np.isfinite(ys) & np.isfinite(xs)
        if good.any():  # (plotext cannot draw a legend without a point)
            plt.plot(xs[good].tolist(), ys[good].tolist(), label=label, marker="braille")
        else:
            label += ": none finite"
        for k in curve.marked:
            plt.vline(float(xs[k]), "red")
        title = label
        if row == 1:
            title = (f"{label} over {curve.wrt} from {curve.xs[0]:g} to {curve.xs[-1]:g}"
                     + (f"; {_marks_said(curve)}" if curve.marked else ""))
        if row == len(series) and x_exponent:
            plt.xlabel(curve.wrt + _unit(x_exponent))
        # (plotext leaves out a title wider than the panel)
        plt.title(title if len(title) <= width - 4 else title[:width - 5] + "…")
    text = plt.build() if colour else plt.uncolorize(plt.build())
    plt.clear_figure()
    return text + ("" if text.endswith("\n") else "\n")


def _figure(curve):
    """The curves as a Matplotlib figure (not yet saved)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x_exponent = axis_exponent(curve.xs)
    xs = in_units(curve.xs, x_exponent)
    series = _series(curve)
    figure, axes = plt.subplots(len(series), 1, sharex=True, figsize=(7, 2.2 * len(series) + 0.6), squeeze=False)
    for ax, (label, ys, _) in zip(axes[:, 0], series):
        ax.plot(xs, np.where(np.isfinite(ys), ys, np.nan), label=label)
        for k in curve.marked:
            ax.axvline(xs[k], color="red", linestyle=":", linewidth=1)
        shown = [k for k in curve.marked if np.isfinite(ys[k])]
        ax.plot(xs[shown], ys[shown], "o", color="red", markersize=4)
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[0, 0].set_title(f"{curve.of} over {curve.wrt}" + (f" ({_marks_said(curve)})" if curve.marked else ""))
    axes[-1, 0].set_xlabel(curve.wrt + _unit(x_exponent))
    figure.tight_layout()
    return figure
