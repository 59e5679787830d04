"""The backends (gradcli/engine/backends.py): every op of the op table and its gradient on Dask
(small chunks, several per axis) against NumPy, and on array-api-strict (the proof that the
engine uses only standard array operations where an op record does not declare otherwise)."""
import importlib
import math
import pathlib

import numpy as np
import pytest

from gradcli import api
from test_ops import row_feeds as _feeds

dask_array = pytest.importorskip("dask.array")


def _op_table_rows():
    """(id, program, {name: generator}) for every row of the op table tests (tests/ops/test_ops*.py)."""
    rows = []
    for path in sorted((pathlib.Path(__file__).parents[1] / "ops").glob("test_ops*.py")):
        module = importlib.import_module(path.stem)
        for case in module.CASES:
            program, inputs = case[0], case[1]
            options = case[3] if len(case) > 3 else {}
            rows.append((f"{path.stem}:{program}", program, inputs, options.get("fixed") or {}))
    return rows


def _covering(rows):
    """The rows, fewest first, that together call every op the whole table calls (each op is
    tried in the program it is tested by; a second row of the same op adds little on Dask)."""
    from gradcli.language.dialects import callable_ops
    from gradcli.language.parser import BINARY_OPS

    callable = callable_ops()

    def ops_of(program):
        found = {op.name for name, op in callable.items() if f"{name}(" in program}
        return found | {name for symbol, name in BINARY_OPS.items() if f" {symbol} " in program}

    chosen, seen = [], set()
    for row in rows:
        new = ops_of(row[1]) - seen
        if new:
            chosen.append(row)
            seen |= new
    return chosen


ROWS = _covering(_op_table_rows())


@pytest.fixture(autouse=True)
def _in_this_thread():
    """The op walk runs Dask's tasks in the calling thread: thousands of tiny graphs, whose
    thread-pool hand-offs would cost more than the work (the threaded scheduler is tested by
    the command-line tests below)."""
    import dask
    with dask.config.set(scheduler="synchronous"):
        yield


def _chunked(value: np.ndarray):
    """A Dask array of `value` cut in two (or more) chunks along every axis longer than one."""
    chunks = tuple(max(1, math.ceil(n / 2)) for n in value.shape) or ()
    return dask_array.from_array(value, chunks=chunks)


def _close(got, want, what):
    if want is None:
        assert got is None, what
        return
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=what)


# Keras reads hinge labels that are all 0/1 as -1/1: decided on the labels' values
DECIDED_BY_DATA = {"y = keras.losses.hinge(t, p)", "y = keras.losses.squared_hinge(t, p)"}


def _grad_or_eval(program, wrt, feeds, **options):
    try:
        if wrt:
            return api.grad(program, wrt=wrt, feeds=feeds, fixes=False, **options)
        return api.evaluate(program, feeds=feeds, fixes=False, **options)
    except Exception as exc:  # compared with NumPy's error below
        return exc


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_every_op_and_its_gradient_agree_between_numpy_and_dask(row):
    _, program, inputs, fixed = row
    feeds = _feeds(program, inputs, fixed)
    wrt = list(inputs)
    want = _grad_or_eval(program, wrt, feeds)
    got = _grad_or_eval(program, wrt, {k: _chunked(v) for k, v in feeds.items()}, device="dask", chunks=1024)
    if program in DECIDED_BY_DATA:  # the formula depends on an input's values, unread while building
        assert "reads them only when it runs" in str(got), program
        return
    if isinstance(want, Exception):
        assert isinstance(got, Exception) and str(got) == str(want)
        return
    _assert_agrees(got, want, program, "Dask")


def _assert_agrees(got, want, program, where):
    """The same values, gradients and diagnostics as NumPy's answer."""
    assert not isinstance(got, Exception), f"{program!r} fails on {where}: {got!r}"
    for k in want.outputs:
        _close(got.outputs[k], want.outputs[k], f"value of {program!r}")
    for k in want.gradients:
        _close(got.gradients[k], want.gradients[k], f"d/d{k} of {program!r}")
    assert [d.to_json() for d in got.diagnostics] == [d.to_json() for d in want.diagnostics]


# --------------------------------------------------------------------------- array-api-strict

def _nonstandard_claims(program, wrt, feeds):
    """{op name: why} for the equations of a program (and, with `wrt`, of its gradient) whose
    op record says it needs more than the standard, with these parameters."""
    prepared = (api.prepare_grad(program, wrt=wrt, feeds=feeds) if wrt
                else api.prepare_evaluate(program, feeds=feeds))
    claims = {}
    for eq in prepared.graph.equations:
        claim = eq.op.nonstandard if eq.op is not None else None
        claim = claim(**eq.params) if callable(claim) else claim
        if claim:
            claims[eq.op.name] = claim
    return claims


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_every_op_claiming_the_standard_runs_on_array_api_strict_as_on_numpy(row, monkeypatch):
    """An op record without `nonstandard` computes its value and gradient with the array API
    standard's operations only: on array-api-strict its numbers and diagnostics are NumPy's.
    A record saying `nonstandard` must fail there (else the claim is stale); a row mixing
    several such ops cannot say whose claim it proves, and is only run."""
    strict = pytest.importorskip("array_api_strict")
    from gradcli.engine import backends
    monkeypatch.setitem(backends.BACKENDS, "strict", lambda: backends.StandardBackend(strict, "strict"))
    _, program, inputs, fixed = row
    feeds = _feeds(program, inputs, fixed)
    wrt = list(inputs)
    want = _grad_or_eval(program, wrt, feeds)
    with np.errstate(all="ignore"):
        got = _grad_or_eval(program, wrt, feeds, device="strict")
    claims = {} if isinstance(want, Exception) else _nonstandard_claims(program, wrt, feeds)
    if claims:
        if len(claims) == 1 and not isinstance(got, Exception):
            (name, why), = claims.items()
            agrees = all(np.allclose(got.outputs[k], want.outputs[k], rtol=1e-10, atol=1e-12) for k in want.outputs)
            assert not agrees, f"{name} says it is not standard ({why}), but {program!r} runs on array-api-strict"
        pytest.skip("off the standard: " + "; ".join(f"{n}: {w}" for n, w in sorted(claims.items())))
    if isinstance(want, Exception):
        assert isinstance(got, Exception) and str(got) == str(want)
        return
    _assert_agrees(got, want, program, "array-api-strict")


# Programs whose every op is written with the standard's operations only: the evaluator and the
# checker run them on array-api-strict (no `out=`, no `.flags`, no NumPy attribute), which
# keeps the engine's own code, and these ops, honest for any standard namespace (CuPy's too).
STANDARD_PROGRAMS = [
    ("y = sum(tanh(x) * exp(x) / (1 + sqrt(x)))", {"x": (2, 3)}),
    ("y = logsumexp(x, axis=0) + sum(softmax(x)) + sum(log_softmax(x))", {"x": (3, 2)}),
    ("y = sum(sigmoid(x) * log1p(x) + expm1(x) * sin(x) - cos(x) * square(x))", {"x": (4,)}),
    ("y = tensordot(a, b)", {"a": (2, 3), "b": (2, 3)}),
    ("p, q = np.split(x, 2, axis=1)\ny = reshape(p * q, [-1])", {"x": (2, 4)}),
    ("y = log(x - 0.5)", {"x": (4,)}),  # NaN below the domain: the checker's careful path
]


@pytest.mark.parametrize("program,shapes", STANDARD_PROGRAMS, ids=[p for p, _ in STANDARD_PROGRAMS])
def test_the_engine_runs_standard_programs_on_array_api_strict(program, shapes):
    strict = pytest.importorskip("array_api_strict")
    from gradcli.autodiff import gradients
    from gradcli.engine.backends import Backend, StandardBackend
    from gradcli.numerics.diagnostics import NumericsChecker
    from gradcli.engine.evaluate import run

    rng = np.random.default_rng(7)
    feeds = {k: rng.uniform(0.1, 1.0, s) for k, s in shapes.items()}
    answers = []
    for chosen in (Backend(), StandardBackend(strict)):
        graph = api.compile_program(program, feeds=feeds)
        y = graph.result[1]
        grads = [g for g in gradients(graph, [y], [graph.inputs[k] for k in shapes]) if g is not None]
        checker = NumericsChecker(graph, chosen, "float64")
        with np.errstate(all="ignore"):
            values = run(graph, [y, *grads], backend=chosen, check=checker)
        answers.append(([chosen.to_host(values[i]) for i in [y, *grads]],
                        [d.to_json() for d in checker.finish({"y": y})]))
    (want, want_diagnostics), (got, got_diagnostics) = answers
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15)
    assert got_diagnostics == want_diagnostics


# --------------------------------------------------------------------------- the command line

def _gradcli(*args, cwd=None, python_prefix=()):
    import subprocess
    import sys
    return subprocess.run([sys.executable, *python_prefix, "-m", "gradcli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def _json(p):
    import json
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_a_seeded_overflow_is_diagnosed_the_same_on_dask_as_on_numpy(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((400, 3))
    x[rng.integers(0, 400, 5), 1] = 900.0  # exp overflows float64 above 709.78
    np.save(tmp_path / "x.npy", x)
    program = "z = exp(x); y = sum(z / sum(z, axis=1, keepdims=True))"
    common = ["grad", "-e", program, "--wrt", "x", "--set", "x=@x.npy", "--format", "json"]
    numpy_answer = _json(_gradcli(*common, cwd=tmp_path))
    dask_answer = _json(_gradcli(*common, "--device", "dask", "--chunks", "2K", cwd=tmp_path))
    assert [d["kind"] for d in numpy_answer["diagnostics"]][:1] == ["overflow"]
    assert dask_answer["diagnostics"] == numpy_answer["diagnostics"]
    assert dask_answer["outputs"] == numpy_answer["outputs"]
    np.testing.assert_allclose(np.array(dask_answer["gradients"]["x"]["value"], dtype=float),
                               np.array(numpy_answer["gradients"]["x"]["value"], dtype=float), rtol=1e-12)


def test_zarr_arrays_and_group_members_are_read_lazily(tmp_path):
    zarr = pytest.importorskip("zarr")
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((300, 3)), rng.standard_normal(3)
    stored = zarr.create_array(str(tmp_path / "x.zarr"), shape=x.shape, chunks=(50, 3), dtype="f8")
    stored[:] = x
    group = zarr.open_group(str(tmp_path / "g.zarr"), mode="w")
    group.create_array("w", shape=(3,), dtype="f8")[:] = w
    got = _json(_gradcli("grad", "-e", "y = sum(tanh(x @ w))", "--wrt", "w", "--set", "x=@x.zarr",
                         "--set", "w=@g.zarr:w", "--device", "dask", "--format", "json", cwd=tmp_path))
    t = np.tanh(x @ w)
    np.testing.assert_allclose(got["outputs"]["y"]["value"], t.sum(), rtol=1e-12)
    np.testing.assert_allclose(got["gradients"]["w"]["value"], x.T @ (1 - t * t), rtol=1e-12)
    p = _gradcli("eval", "-e", "y = w", "--set", "w=@g.zarr", "--device", "dask", cwd=tmp_path)
    assert p.returncode == 2
    assert "'g.zarr' is a Zarr group; name one of its arrays as @g.zarr:NAME (w)" in p.stderr
    p = _gradcli("eval", "-e", "y = w", "--set", "w=@g.zarr:w", cwd=tmp_path)
    assert p.returncode == 2 and "a Zarr array is read by --device dask" in p.stderr


def test_dask_options_are_refused_without_dask_or_off_dask():
    blocked = ("-c", "import sys; sys.modules['dask'] = None; sys.argv[0] = 'gradcli'; "
                     "from gradcli.cli import main; main()")
    import subprocess
    import sys
    p = subprocess.run([sys.executable, *blocked, "eval", "-e", "y = 1.0", "--device", "dask"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert "--device dask needs Dask" in p.stderr and "install gradcli[dask]" in p.stderr
    p = _gradcli("eval", "-e", "y = 1.0", "--scheduler", "local")
    assert p.returncode == 2 and "--scheduler applies to --device dask only" in p.stderr
    p = _gradcli("eval", "-e", "y = 1.0", "--device", "dask", "--chunks", "lots")
    assert p.returncode == 2 and "--chunks: 'lots' is not a size" in p.stderr


def test_an_op_without_a_chunked_form_is_refused_when_its_whole_arrays_exceed_the_limit(tmp_path):
    """sort has no chunked form in dask.array: it runs as one task on whole arrays, which the
    memory limit must cover, so a program that would need more is refused before it runs."""
    path = tmp_path / "x.npy"
    x = np.random.default_rng(3).standard_normal(1_000_000)
    np.save(path, x)
    p = _gradcli("eval", "-e", "y = sum(sort(x))", "--set", f"x=@{path}", "--device", "dask",
                 "--max-memory", "4M")
    assert p.returncode == 2, p.stderr
    assert p.stdout == ""
    assert ("<expr>:1:9: error: sort has no chunked form on --device dask: it would be computed on whole "
            "arrays, 15.3 MiB here, more than the 4.0 MiB allowed") in p.stderr
    p = _gradcli("eval", "-e", "y = sum(sort(x))", "--set", f"x=@{path}", "--device", "dask",
                 "--max-memory", "64M", "--format", "plain")
    assert p.returncode == 0, p.stderr
    assert float(p.stdout.split("\t")[1]) == pytest.approx(float(np.sum(np.sort(x))), rel=1e-12)


@pytest.mark.slow
def test_a_local_cluster_gives_the_numbers_of_the_threads(tmp_path):
    """`--scheduler local`: worker processes on the loopback interface, started and stopped by
    the command; the same chunks make the same values (a gradient's matrix product may add its
    partial sums in another order on the cluster: a last-bit difference)."""
    pytest.importorskip("distributed")
    rng = np.random.default_rng(5)
    np.save(tmp_path / "x.npy", rng.standard_normal((20_000, 4)))
    common = ["grad", "-e", "y = sum(tanh(x @ w) ** 2)", "--wrt", "w", "--wrt", "x", "--set", "x=@x.npy",
              "--set", "w=[0.5, -1, 0.25, 2]", "--device", "dask", "--chunks", "64K", "--format", "json"]
    threads = _json(_gradcli(*common, cwd=tmp_path))
    cluster = _json(_gradcli(*common, "--scheduler", "local", cwd=tmp_path))
    assert cluster["outputs"] == threads["outputs"] and cluster["diagnostics"] == threads["diagnostics"]
    for name in ("w", "x"):
        np.testing.assert_allclose(np.array(cluster["gradients"][name]["value"]),
                                   np.array(threads["gradients"][name]["value"]), rtol=1e-14, atol=0)


RSS_OVERHEAD = 128 << 20  # the interpreter with NumPy, Dask and gradcli imported (about 90 MiB)


@pytest.mark.slow
def test_an_input_four_times_the_memory_limit_runs_within_it(tmp_path):
    """A 256 MiB .npy under --max-memory 64M: read a chunk at a time, evaluated and
    differentiated, the peak resident memory of the process under the limit plus the
    interpreter's own; the numbers are NumPy's, computed here a block at a time."""
    import subprocess
    import sys

    limit = 64 << 20
    rows = 4 * limit // (4 * 8)
    path = tmp_path / "x.npy"
    x = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(rows, 4))
    rng = np.random.default_rng(6)
    block = 1 << 20
    for start in range(0, rows, block):
        x[start:start + block] = rng.standard_normal((min(block, rows - start), 4))
    x.flush()
    del x
    w = np.array([0.3, -0.2, 0.1, 0.4])
    measure = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
               "sys.stderr.write(p.stderr); print(p.returncode); print(p.stdout); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)")
    p = subprocess.run([sys.executable, "-c", measure, sys.executable, "-m", "gradcli", "grad",
                        "-e", "y = sum(tanh(x @ w))", "--wrt", "w", "--set", f"x=@{path}",
                        "--set", "w=[0.3, -0.2, 0.1, 0.4]", "--device", "dask", "--max-memory", "64M",
                        "--format", "json"], capture_output=True, text=True, timeout=600)
    lines = p.stdout.strip().split("\n")
    code, answer, peak = lines[0], "\n".join(lines[1:-1]), lines[-1]
    assert code == "0", p.stderr
    import json
    answer = json.loads(answer)
    assert int(peak) < limit + RSS_OVERHEAD, f"peak RSS {int(peak) >> 20} MiB"
    x = np.load(path, mmap_mode="r")
    total, grad = 0.0, np.zeros(4)
    for start in range(0, rows, block):
        piece = np.array(x[start:start + block])
        t = np.tanh(piece @ w)
        total += t.sum()
        grad += piece.T @ (1 - t * t)
    np.testing.assert_allclose(answer["outputs"]["y"]["value"], total, rtol=1e-11)
    np.testing.assert_allclose(answer["gradients"]["w"]["value"], grad, rtol=1e-11)
    # NumPy itself refuses it: the whole input is over the limit
    p = _gradcli("grad", "-e", "y = sum(tanh(x @ w))", "--wrt", "w", "--set", f"x=@{path}",
                 "--set", "w=[0.3, -0.2, 0.1, 0.4]", "--max-memory", "64M")
    assert p.returncode == 2


@pytest.mark.parametrize("order", ["C", "F"])
def test_npy_blocks_are_read_from_the_file_whatever_cuts_the_rows(tmp_path, order):
    """A .npy read in blocks (not memory-mapped): rows longer than a chunk are cut, and a
    Fortran-ordered file is read as its transpose; every block holds the file's numbers."""
    from gradcli.engine.backends import DaskBackend
    x = np.asarray(np.random.default_rng(8).standard_normal((6, 5000)), order=order)
    np.save(tmp_path / "x.npy", x)
    chunked = DaskBackend(chunk_bytes=8 << 10).load(str(tmp_path / "x.npy"), "x")
    assert len(chunked.chunks[1]) > 1  # a row (40 KB) is cut into 8 KiB chunks
    assert chunked.compute(scheduler="synchronous").tobytes() == np.ascontiguousarray(x).tobytes()
    assert chunked[2:5, 1234:4321].compute(scheduler="synchronous").tobytes() == x[2:5, 1234:4321].tobytes()


def test_an_npy_cut_short_while_it_is_read_is_an_error_not_a_crash(tmp_path, monkeypatch):
    """The file is opened, then truncated before its blocks are read (another program
    rewriting it): a clear error and exit 2, never SIGBUS (a memory map's) or exit 70."""
    from typer.testing import CliRunner
    from gradcli.engine import backends
    from gradcli.cli import app
    path = tmp_path / "x.npy"
    np.save(path, np.arange(100_000.0))
    opened = backends.DaskBackend._npy

    def then_cut(self, spec, label):
        value = opened(self, spec, label)
        with open(spec, "r+b") as f:
            f.truncate(path.stat().st_size - 4000)
        return value
    monkeypatch.setattr(backends.DaskBackend, "_npy", then_cut)
    r = CliRunner().invoke(app, ["eval", "-e", "y = sum(x)", "--set", f"x=@{path}", "--device", "dask",
                                 "--chunks", "64K"])
    assert r.exit_code == 2, r.output
    assert r.output == (f"gradcli: error: --set x: cannot read '{path}': it ended early (was it changed while "
                        "it was read?)\n")
