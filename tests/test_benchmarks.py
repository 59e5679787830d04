"""The benchmark scripts compile and answer --help; nothing here is timed."""
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def test_benchmark_scripts_compile():
    for path in sorted(BENCH.glob("*.py")):
        compile(path.read_text(), str(path), "exec")


def test_benchmark_help_names_every_workload():
    done = subprocess.run([sys.executable, str(BENCH / "run.py"), "--help"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    for name in ("startup", "arrays", "terms", "deep", "lines", "hessian", "dask", "half"):
        assert name in done.stdout
    assert "--quick" in done.stdout and "--rounds" in done.stdout


def test_peer_reader_splits_a_long_sum_and_evaluates_it():
    sys.path.insert(0, str(BENCH))
    import peers

    n = 3000  # deeper than Python's own parser goes for one expression
    text = "".join(f"x{i} = {i + 1}\n" for i in range(n + 1)) + "y = " + " + ".join(
        f"x{i} * x{i + 1}" for i in range(n)) + "\n"
    statements = peers.read_program(text)
    env = {k: v for k, v in peers.constants(statements).items()}
    assert peers.run_program(statements, env, {}) == sum(float((i + 1) * (i + 2)) for i in range(n))
