"""`plot` draws any finite range (extreme ones in units of a power of ten), and its image files
keep the `--out` promises: a known suffix, whole or nothing (exit 74 when a write fails, the old
file kept), no file replaced without --force, no symbolic link written through; the terminal
drawing's memory does not follow an absurd $COLUMNS."""
import os
import resource
import subprocess
import sys

import numpy as np
import pytest

from gradcli import api

pytest.importorskip("matplotlib")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _plot(*args, cwd=None, env=None, preexec_fn=None):
    return subprocess.run([sys.executable, "-m", "gradcli", "plot", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env={**os.environ, **(env or {})}, preexec_fn=preexec_fn)


def test_the_points_of_a_range_wider_than_the_largest_float_are_evenly_spaced_and_finite():
    """HIGH - LOW overflows: NumPy's linspace gave NaN and infinities for the points."""
    c = api.curve("y = x / 4", wrt="x", low=-1e308, high=1e308, points=5)
    np.testing.assert_allclose(c.xs, [-1e308, -5e307, 0.0, 5e307, 1e308], rtol=1e-15, atol=0)
    assert c.xs[0] == -1e308 and c.xs[-1] == 1e308
    np.testing.assert_array_equal(c.values, c.xs / 4)
    np.testing.assert_array_equal(c.derivatives[0], [0.25] * 5)


@pytest.mark.parametrize("low_high,x_unit", [("0:1e-320", "×1e-321"), ("-1e308:1e308", "×1e+308"),
                                             ("-1e-300:1e-300", "×1e-300")])
def test_extreme_finite_ranges_are_drawn_in_units_of_a_power_of_ten(low_high, x_unit, tmp_path):
    p = _plot("-e", "y = 3 * x", "--wrt", "x", "--range", low_high, "--order", "2")
    assert p.returncode == 0, p.stderr
    assert "internal error" not in p.stderr
    assert f"x ({x_unit})" in p.stdout and "y (×1e" in p.stdout and "dy/dx over" not in p.stdout
    images = _plot("-e", "y = 3 * x", "--wrt", "x", "--range", low_high, "--png", "c.png", "--svg", "c.svg",
                   cwd=tmp_path)
    assert images.returncode == 0, images.stderr
    assert (tmp_path / "c.png").read_bytes()[:8] == PNG_SIGNATURE
    assert x_unit in (tmp_path / "c.svg").read_text()


def test_a_curve_with_no_finite_value_is_drawn_and_said():
    p = _plot("-e", "y = log(x)", "--wrt", "x", "--range", "-2:-1")
    assert p.returncode == 0, p.stderr
    assert "y: none finite over x from -2 to -1" in p.stdout
    assert "[invalid]" in p.stderr


@pytest.mark.parametrize("option,path,said", [("--png", "p.txt", "--png 'p.txt': the file would be PNG; end its "
                                                                  "name in .png"),
                                              ("--svg", "p.png", "--svg 'p.png': the file would be SVG; end its "
                                                                 "name in .svg")])
def test_a_file_suffix_that_is_not_its_format_is_refused_before_anything_runs(option, path, said, tmp_path):
    p = _plot("-e", "y = x * x", "--wrt", "x", "--range", "0:1", option, path, cwd=tmp_path)
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == f"gradcli: error: {said}\n"
    assert os.listdir(tmp_path) == []


def test_an_existing_image_is_replaced_only_with_force(tmp_path):
    (tmp_path / "c.png").write_bytes(b"mine")
    p = _plot("-e", "y = x * x", "--wrt", "x", "--range", "0:1", "--png", "c.png", cwd=tmp_path)
    assert (p.returncode, p.stderr) == (2, "gradcli: error: --png 'c.png' already exists; pass --force to replace it\n")
    assert (tmp_path / "c.png").read_bytes() == b"mine"
    p = _plot("-e", "y = x * x", "--wrt", "x", "--range", "0:1", "--png", "c.png", "--force", cwd=tmp_path)
    assert p.returncode == 0 and p.stderr == "gradcli: wrote c.png\n"
    assert (tmp_path / "c.png").read_bytes()[:8] == PNG_SIGNATURE
    assert sorted(os.listdir(tmp_path)) == ["c.png"]


def test_a_symbolic_link_is_replaced_never_written_through(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "theirs.png").write_bytes(b"theirs")
    work = tmp_path / "work"
    work.mkdir()
    (work / "c.png").symlink_to(outside / "theirs.png")
    p = _plot("-e", "y = x * x", "--wrt", "x", "--range", "0:1", "--png", "c.png", cwd=work)
    assert p.returncode == 2 and "already exists; pass --force" in p.stderr
    p = _plot("-e", "y = x * x", "--wrt", "x", "--range", "0:1", "--png", "c.png", "--force", cwd=work)
    assert p.returncode == 0, p.stderr
    assert not (work / "c.png").is_symlink() and (work / "c.png").read_bytes()[:8] == PNG_SIGNATURE
    assert (outside / "theirs.png").read_bytes() == b"theirs"


def test_a_write_that_fails_part_way_is_exit_74_and_keeps_the_old_image(tmp_path):
    """A file-size limit (as a full disk) cuts the image: nothing cut is left, the old file stays."""
    (tmp_path / "c.png").write_bytes(b"old image")

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
    p = _plot("-e", "y = sin(x) * x", "--wrt", "x", "--range", "-5:5", "--png", "c.png", "--force", cwd=tmp_path,
              preexec_fn=limit)
    assert (p.returncode, p.stdout) == (74, "")
    assert p.stderr == "gradcli: error: cannot write --png 'c.png': File too large; nothing was left under that name\n"
    assert (tmp_path / "c.png").read_bytes() == b"old image"
    assert os.listdir(tmp_path) == ["c.png"]  # no temporary left


def test_force_without_a_file_is_refused():
    p = _plot("-e", "y = x * x", "--wrt", "x", "--range", "0:1", "--force")
    assert (p.returncode, p.stderr) == (2, "gradcli: error: --force replaces the file of --png or --svg; give one\n")


def test_an_absurd_terminal_width_is_capped():
    """COLUMNS=60000: 141 MiB and 20 s before; now at most 1,000 columns."""
    measure = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
               "print(p.returncode, max(map(len, p.stdout.splitlines())), "
               "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss >> 10)")
    p = subprocess.run([sys.executable, "-c", measure, sys.executable, "-m", "gradcli", "plot", "-e", "y = sin(x)",
                        "--wrt", "x", "--range", "-1:1", "--order", "2", "--max-memory", "16M"],
                       capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "60000"})
    code, widest, peak_mib = map(int, p.stdout.split())
    assert code == 0 and widest <= 1000
    assert peak_mib < 16 + 64, peak_mib  # the limit and the interpreter with NumPy (about 35 MiB)
