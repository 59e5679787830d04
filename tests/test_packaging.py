"""The wheel ships the grammar and runs from a fresh virtual environment; the public
acceptance suite (../shared/acceptance) passes against this checkout."""
import os
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ACCEPTANCE = os.path.join(ROOT, "..", "shared", "acceptance", "run.py")


@pytest.mark.slow
def test_wheel_ships_the_grammar_and_runs_a_sample(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), ROOT],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = (tmp_path / "dist").glob("gradcli-*.whl")
    assert "gradcli/grammar/gradcli.lark" in zipfile.ZipFile(wheel).namelist()
    venv = tmp_path / "venv"
    # the runtime dependencies come from this environment; gradcli itself only from the wheel
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    subprocess.run([str(bindir / "python"), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    where = subprocess.run([str(bindir / "python"), "-c", "import gradcli.parser as p; print(p.grammar_path())"],
                           capture_output=True, text=True, cwd=tmp_path, check=True).stdout.strip()
    assert where.startswith(str(venv)) and where.endswith("gradcli/grammar/gradcli.lark"), where
    p = subprocess.run([str(bindir / "gradcli"), "grad", os.path.join(ROOT, "samples", "stable_softmax.expr"),
                        "--wrt", "x", "--grad-ys", "y=[1, 0, 0]", "--format", "plain"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("x\t0.0819250690649"), p.stderr


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(ACCEPTANCE), reason="../shared/acceptance is not beside this checkout")
def test_public_acceptance_suite_passes():
    p = subprocess.run([sys.executable, ACCEPTANCE, "-j", "2", "--gradcli", f"{sys.executable} -m gradcli"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:]
    assert p.stdout.rstrip().splitlines()[-1].endswith(" 0 failed")
