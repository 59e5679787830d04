"""`gradcli plot`: a value and its derivatives over a range, in the terminal (plotext) or to a
PNG or SVG (Matplotlib); points that are not finite, ties and kinks marked and explained."""
import struct

import numpy as np
import pytest
from typer.testing import CliRunner

from gradcli import api
from gradcli.cli import app


def invoke(*args):
    result = CliRunner().invoke(app, ["plot", *args])
    assert "Traceback" not in result.output, result.output
    return result


def test_the_curve_and_its_derivatives_in_one_vectorised_pass():
    c = api.curve("y = sin(x) * x", wrt="x", low=-2.0, high=3.0, points=11, order=2)
    assert c.vectorised and c.marked == {} and c.diagnostics == []
    np.testing.assert_allclose(c.values, np.sin(c.xs) * c.xs, rtol=1e-14)
    np.testing.assert_allclose(c.derivatives[0], np.sin(c.xs) + c.xs * np.cos(c.xs), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(c.derivatives[1], 2 * np.cos(c.xs) - c.xs * np.sin(c.xs), rtol=1e-13, atol=1e-15)


def test_a_program_that_is_not_elementwise_is_evaluated_per_point():
    # with x broadcast over the points, x * mean(x) would mix them
    c = api.curve("y = x * mean(x)", wrt="x", low=-1.0, high=1.0, points=5)
    assert not c.vectorised
    np.testing.assert_allclose(c.values, c.xs ** 2)
    np.testing.assert_allclose(c.derivatives[0], 2 * c.xs)


def test_one_element_of_an_array_the_others_held():
    c = api.curve("y = sum(w * w) * 2 + log(w[1])", wrt="w[1]", low=0.5, high=2.0, points=4, order=2,
                  feeds={"w": [1.0, 3.0, 5.0]})
    w1 = c.xs
    np.testing.assert_allclose(c.values, 2 * (1 + w1 ** 2 + 25) + np.log(w1))
    np.testing.assert_allclose(c.derivatives[0], 4 * w1 + 1 / w1)
    np.testing.assert_allclose(c.derivatives[1], 4 - 1 / w1 ** 2)


def test_kinks_and_non_finite_points_are_marked_and_explained():
    c = api.curve("y = abs(x) + x", wrt="x", low=-1.0, high=1.0, points=5)
    assert c.marked == {2: ["kink"]}
    (kink,) = c.diagnostics
    assert kink.kind == "kink" and "(plot: at x = 0)" in kink.message
    c = api.curve("y = log(x)", wrt="x", low=-1.0, high=1.0, points=5)
    assert sorted(c.marked) == [0, 1, 2] and {d.kind for d in c.diagnostics} & {"invalid", "divide_by_zero"}


def test_plot_writes_a_png_and_an_svg(tmp_path):
    png, svg = tmp_path / "curve.png", tmp_path / "curve.svg"
    r = invoke("-e", "y = abs(x) + sin(x) * x", "--wrt", "x", "--range", "-3:3", "--order", "2", "--points", "61",
               "--png", str(png), "--svg", str(svg))
    assert r.exit_code == 0, r.output
    assert "[kink]" in r.stderr and "(plot: at x = 0)" in r.stderr and f"gradcli: wrote {png}" in r.stderr
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width >= 400 and height >= 400
    import matplotlib.image
    assert matplotlib.image.imread(str(png)).shape[:2] == (height, width)
    assert svg.read_text().lstrip().startswith(("<?xml", "<svg"))


def test_plot_draws_in_the_terminal_with_plotext():
    r = invoke("-e", "y = tanh(x)", "--wrt", "x", "--range", "-4:4", "--points", "50")
    assert r.exit_code == 0 and r.stderr == ""
    lines = r.stdout.splitlines()
    assert len(lines) > 20 and "y over x from -4 to 4" in r.stdout and "dy/dx" in r.stdout
    assert "\x1b[" not in r.stdout  # not a terminal: no colour


@pytest.mark.parametrize("args,message", [
    (["--wrt", "x", "--range", "5"], "--range: expected LOW:HIGH such as -5:5, not '5'"),
    (["--wrt", "x", "--range", "2:1"], "--range must go from a finite low to a higher finite high, not 2:1"),
    (["--wrt", "x", "--range", "0:1", "--order", "3"], "--order must be 1 or 2, not 3"),
    (["--wrt", "x", "--range", "0:1", "--points", "1"], "--points must be from 2 to 100000, not 1"),
    (["--wrt", "w", "--range", "0:1", "--set", "x=1"], "--wrt w has shape (2,): name one element, such as w[0]"),
    (["--wrt", "w[2]", "--range", "0:1", "--set", "x=1"], "--wrt w[2]: no such element of w, shaped (2,)"),
    (["--wrt", "x", "--range", "0:1", "--of", "v"], "--of v has shape (2,): plot draws a scalar"),
    (["--wrt", "y", "--range", "0:1", "--set", "x=1"], "--wrt y is computed by the program: plot varies an input"),
    (["--wrt", "x[", "--range", "0:1", "--set", "x=1"], "--wrt 'x[' is not a name or an element such as x[2]"),
])
def test_plot_errors_name_the_options(args, message):
    r = invoke("-e", "v = x * [1.0, 2.0] + sum(w); y = sum(v)", *args, "--set", "w=[1, 2]")
    assert r.exit_code == 2 and message in r.stderr, r.stderr


def test_png_and_svg_of_the_same_file_are_refused_before_anything_is_drawn(tmp_path):
    same = tmp_path / "curve.png"
    r = invoke("-e", "y = x * x", "--wrt", "x", "--range", "0:1", "--png", str(same), "--svg", str(same))
    assert r.exit_code == 2 and r.stdout == "", r.stdout
    assert f"--png and --svg name the same file '{same}'; give each its own" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_file_without_matplotlib_is_a_clear_error(monkeypatch, tmp_path):
    import builtins
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    r = invoke("-e", "y = x * x", "--wrt", "x", "--range", "0:1", "--png", str(tmp_path / "p.png"))
    assert r.exit_code == 2 and "--png and --svg need Matplotlib: pip install 'gradcli[plot]'" in r.stderr
