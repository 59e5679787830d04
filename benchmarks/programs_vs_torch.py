"""Large text programs, whole process: gradcli against PyTorch reading the same text.

    python benchmarks/programs_vs_torch.py --torch-python /path/to/venv-with-torch/bin/python
        [--gradcli .venv/bin/gradcli] [--baseline /other/checkout/.venv/bin/gradcli] [--rounds 5]

Two programs (as benchmarks/run.py writes them): the 100,000-term `y = sin(x0)*x1 + ...` with
its inputs `x0 = 0.5 ...`, differentiated with respect to x0 and the last input, and the
100,000-deep `tanh(tanh(... x))`. PyTorch reads the file with a Python loop (Python's own `ast`
for each term: `ast.parse` of the whole sum recurses past Python's limit), builds the value
from torch scalars and calls backward. The commands run interleaved, round after round; the
figure is the median of the per-round ratios (the machine may be shared and noisy). PyTorch
is needed only here: gradcli never imports it.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TORCH_TERMS = r'''
import ast, sys, torch
lines = open(sys.argv[1]).read().splitlines()
env = {}
for line in lines[:-1]:
    name, value = line.split(" = ")
    env[name] = torch.tensor(float(value), dtype=torch.float64, requires_grad=True)
y = None
for term in lines[-1].split(" = ", 1)[1].split(" + "):
    node = ast.parse(term, mode="eval").body   # sin(a) * b
    v = torch.sin(env[node.left.args[0].id]) * env[node.right.id]
    y = v if y is None else y + v
y.backward()
print(y.item(), env["x0"].grad.item(), env[f"x{len(lines) - 2}"].grad.item())
'''

TORCH_TANH = r'''
import sys, torch
lines = open(sys.argv[1]).read().splitlines()
x = torch.tensor(float(lines[0].split(" = ")[1]), dtype=torch.float64, requires_grad=True)
rhs = lines[1].split(" = ", 1)[1]
depth = rhs.count("tanh(")
assert rhs == "tanh(" * depth + "x" + ")" * depth
y = x
for _ in range(depth):
    y = torch.tanh(y)
y.backward()
print(y.item(), x.grad.item())
'''


def term_program(n: int) -> str:
    inputs = "".join(f"x{i} = {0.5 + 1e-4 * i}\n" for i in range(n + 1))
    return inputs + "y = " + " + ".join(f"sin(x{i}) * x{i + 1}" for i in range(n)) + "\n"


def once(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(argv)}")
    return time.perf_counter() - start


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--torch-python", required=True)
    cli.add_argument("--gradcli", default=str(Path(sys.executable).with_name("gradcli")))
    cli.add_argument("--baseline", help="another gradcli to compare with (e.g. main's)")
    cli.add_argument("--rounds", type=int, default=5)
    cli.add_argument("--size", type=int, default=100_000)
    args = cli.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="gradcli-programs-"))
    n = args.size
    (folder / "terms.py").write_text(TORCH_TERMS)
    (folder / "tanh.py").write_text(TORCH_TANH)
    (folder / "terms.gc").write_text(term_program(n))
    (folder / "tanh.gc").write_text("x = 0.5\ny = " + "tanh(" * n + "x" + ")" * n + "\n")
    cases = {
        f"{n:,}-term program": (["grad", str(folder / "terms.gc"), "--wrt", "x0", "--wrt", f"x{n}"],
                                [args.torch_python, str(folder / "terms.py"), str(folder / "terms.gc")]),
        f"{n:,}-deep tanh chain": (["grad", str(folder / "tanh.gc"), "--wrt", "x"],
                                   [args.torch_python, str(folder / "tanh.py"), str(folder / "tanh.gc")]),
    }
    for what, (ours, torch) in cases.items():
        commands = {"gradcli": [args.gradcli] + ours, "torch": torch}
        if args.baseline:
            commands["baseline"] = [args.baseline] + ours
        times: dict[str, list[float]] = {k: [] for k in commands}
        for _ in range(args.rounds):
            for k, argv in commands.items():
                times[k].append(once(argv))
        line = f"{what}: " + ", ".join(f"{k} {statistics.median(v):.2f} s" for k, v in times.items())
        line += f"; gradcli / torch {statistics.median(a / b for a, b in zip(times['gradcli'], times['torch'])):.2f}"
        if args.baseline:
            line += f", gradcli / baseline {statistics.median(a / b for a, b in zip(times['gradcli'], times['baseline'])):.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
