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
    for name in ("startup", "arrays", "chunks", "terms", "deep", "lines", "lines_shapes", "hessian", "dask", "half"):
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


def test_the_hand_numpy_loop_of_each_line_shape_answers_as_gradcli():
    import numpy as np

    from gradcli import api
    sys.path.insert(0, str(BENCH))
    import lines_shapes

    for shape in lines_shapes.SHAPES:
        hand = lines_shapes._numpy_job(shape)
        feeds = {"x": np.array([0.3, -1.2])} if shape == "def" else None
        for k in (0, 7, 53):
            text = lines_shapes.line(shape, k)
            result = api.grad(text, wrt=["x"], feeds=feeds)
            y, g = hand([float(v) for v in lines_shapes._NUMBER.findall(text)])
            assert not result.diagnostics, text
            np.testing.assert_allclose(float(next(iter(result.outputs.values()))), y, rtol=1e-13, err_msg=text)
            np.testing.assert_allclose(np.ravel(result.gradients["x"]), g, rtol=1e-13, atol=1e-15, err_msg=text)
