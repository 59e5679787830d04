"""The wheel is complete on its own: it ships the grammar and the kept `--help` text (and not the
maintainers' generator, tools/gen.py), declares every runtime dependency, and runs a sample and
answers `--help` from a fresh virtual environment that sees nothing of this one."""
import os
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNTIME = ("lark", "numpy", "rich", "typer", "scipy")


def _run(*args, **kwargs):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=600, **kwargs)


@pytest.mark.slow
def test_wheel_installs_what_it_declares_and_runs_a_sample(tmp_path):
    built = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp_path / "dist", ROOT)
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("gradcli-*.whl")
    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    assert {"gradcli/language/grammar/gradcli.lark", "gradcli/cli/help.txt"} <= set(names)
    assert not [n for n in names if n.startswith("tools/") or n.endswith(("/gen.py", "gradcli/docs.py"))], names
    (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
    declared = {line.split(":", 1)[1].split(";")[0].strip().split(">")[0].split("<")[0].split("=")[0].strip().lower()
                for line in archive.read(metadata).decode().splitlines() if line.startswith("Requires-Dist:")
                and "extra ==" not in line}
    assert set(RUNTIME) <= declared, declared

    # -I: the venv is made without this interpreter's environment; no --system-site-packages,
    # so only what the wheel declares can be imported there (a fresh machine)
    venv = tmp_path / "venv"
    made = _run(sys.executable, "-I", "-m", "venv", venv)
    assert made.returncode == 0, made.stderr
    python = venv / ("Scripts" if os.name == "nt" else "bin") / "python"
    empty = _run(python, "-c", "import importlib.util as u; print([m for m in %r if u.find_spec(m)])" % (RUNTIME,))
    assert empty.stdout.strip() == "[]", "the fresh venv already sees " + empty.stdout
    # (--no-compile: compiling every module of NumPy and SciPy up front was half this test's time)
    installed = _run(python, "-m", "pip", "install", "-q", "--no-compile", wheel)
    assert installed.returncode == 0, installed.stderr[-3000:]

    where = _run(python, "-c", "import gradcli.language.parser as p; print(p.grammar_path())", cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    path = where.stdout.strip()
    assert path.startswith(str(venv)) and path.endswith(os.path.join("gradcli", "language", "grammar", "gradcli.lark")), path
    gradcli = python.parent / "gradcli"
    sample = _run(gradcli, "grad", os.path.join(ROOT, "samples", "stable_softmax.expr"), "--wrt", "x",
                  "--grad-ys", "y=[1, 0, 0]", "--format", "plain", cwd=tmp_path)
    assert sample.returncode == 0, sample.stderr
    # d y[0] / dx of softmax([1000, 1001, 1002]) = s0 * (e0 - s): independent of gradcli
    import numpy as np
    s = np.exp(np.array([-2.0, -1.0, 0.0])) / np.exp(np.array([-2.0, -1.0, 0.0])).sum()
    expected = s[0] * (np.eye(3)[0] - s)
    name, numbers = sample.stdout.strip().split("\t")
    assert name == "x"
    np.testing.assert_allclose([float(v) for v in numbers.split()], expected, rtol=1e-12)

    # the installed command answers --help from its kept text, the file of this checkout
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    helped = _run(gradcli, "--help", cwd=tmp_path, env=env)
    with open(os.path.join(ROOT, "gradcli", "cli", "help.txt"), encoding="utf-8") as kept:
        assert (helped.returncode, helped.stdout, helped.stderr) == (0, kept.read(), "")


def test_no_file_keeps_an_unresolved_merge():
    """A merge left half-done in a text file (conflict markers at a line's start) is caught here,
    not by a reader of the README."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout (an sdist): its files were checked before it was made")
    suffixes = (".py", ".md", ".lark", ".toml", ".json", ".expr", ".txt", ".cfg", "run")
    marked = []
    for name in listed.stdout.splitlines():
        if not name.endswith(suffixes) or not os.path.isfile(os.path.join(ROOT, name)):
            continue
        with open(os.path.join(ROOT, name), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                if line.startswith(("<<<<<<< ", ">>>>>>> ")):  # (a lone ======= may underline a heading)
                    marked.append(f"{name}:{number}")
    assert marked == []
