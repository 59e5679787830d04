"""`--strict` (and `gradcli fix`, which reports what stays not finite) on a program that prints a
None, as PyTorch's tutorials do with `print(x.grad)` before the first backward (PyTorch 2.13.0
printed None there): a None is no number, neither finite nor not. Before, the check of the
outputs was an internal error (exit 70)."""
from __future__ import annotations

import subprocess
import sys

from gradcli import api

PROGRAM = """
import torch
x = torch.arange(4.0, dtype=torch.float64)
x.requires_grad_(True)
print(x.grad)
y = 2 * torch.dot(x, x)
y.backward()
print(x.grad)
print(torch.log(x))
"""


def test_a_printed_none_is_not_counted_among_the_values_that_are_not_finite():
    result = api.evaluate(PROGRAM, fixes=False)
    assert result.outputs["x.grad #1"] is None
    assert result.nonfinite() == ["torch.log(x)"]  # log(0) is -inf; the None is left out


def test_strict_on_a_program_printing_none_exits_by_its_numbers(tmp_path):
    path = tmp_path / "blitz.py"
    path.write_text(PROGRAM.replace("print(torch.log(x))\n", ""))
    proc = subprocess.run([sys.executable, "-m", "gradcli", "eval", "--strict", str(path)], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert "x.grad #1\tNone\nx.grad\t0.0 4.0 8.0 12.0\n" in proc.stdout
    fixed = subprocess.run([sys.executable, "-m", "gradcli", "fix", str(path)], capture_output=True, text=True,
                           timeout=60, stdin=subprocess.DEVNULL)
    assert fixed.returncode == 0 and "internal error" not in fixed.stderr
