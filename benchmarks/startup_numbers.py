"""Start-up of a program of numbers: `gradcli eval -e 'exp(1)'` and `gradcli grad -e 'y = sin(x) * x'
--wrt x --set x=2`, computed on Python's floats without importing NumPy (gradcli.ops.scalar), against
`python -c 'import numpy'` (target: at most 0.6x) and against qalc where it is installed (at most
1.5x). Part of the start-up workload of benchmarks/run.py (`--only startup`)."""
from __future__ import annotations

import shutil

from harness import paired, process

EVAL = ["eval", "-e", "exp(1)", "--format", "plain"]
GRAD = ["grad", "-e", "y = sin(x) * x", "--wrt", "x", "--set", "x=2", "--format", "plain"]


def numbers_startup(table, o, gradcli: str, python: str) -> None:
    contenders = {"numpy import": process([python, "-c", "import numpy"]),
                  "gradcli eval exp(1)": process([gradcli, *EVAL]),
                  "gradcli grad sin(x) * x": process([gradcli, *GRAD])}
    qalc = shutil.which("qalc")
    if qalc:
        contenders["qalc exp(1)"] = process([qalc, "exp(1)"])
    res = paired(contenders, o.rounds or (3 if o.quick else 15), warm=True)
    table.record("start-up of numbers", res)
    for ours, command in (("gradcli eval exp(1)", "eval -e 'exp(1)'"),
                          ("gradcli grad sin(x) * x", "grad -e 'y = sin(x) * x' --wrt x --set x=2")):
        table.compare(f"start-up, numbers: `gradcli {command}` vs `python -c 'import numpy'`", res, ours,
                      ["numpy import"], 0.6, "≤ 0.6×", peers=["numpy import"])
        what = f"start-up, numbers: `gradcli {command}` vs `qalc exp(1)`"
        if qalc:
            table.compare(what, res, ours, ["qalc exp(1)"], 1.5, "≤ 1.5×", peers=["qalc exp(1)"])
        else:
            table.unavailable(what, "qalc not installed", "≤ 1.5×")
