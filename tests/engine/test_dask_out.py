"""`--device dask --out DIR.zarr`: the outputs and gradients are written chunk by chunk as they
are computed, never gathered, in the one pass that also computes the numerical checks and
each array's min, max and finiteness; the answer is NumPy's, and so are the summary, the
diagnostics and the exit code."""
import errno
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from typer.testing import CliRunner

da = pytest.importorskip("dask.array")
zarr = pytest.importorskip("zarr")

from gradcli import api
from gradcli.io import outputs  # noqa: E402
from gradcli.cli import app  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
VALIDATOR = jsonschema.Draft202012Validator(json.loads((ROOT / "docs" / "gradcli.schema.json").read_text()))
RNG = np.random.default_rng(20261125)
PROGRAM = "h = tanh(x @ w); y = sum(h * h); z = sum(exp(h) * x[:, 0])"


def invoke(*args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    return result


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".part") or ".part." in p.name]


def read_zarr(path: Path) -> dict[str, np.ndarray]:
    group = zarr.open_group(str(path), mode="r")
    return {k: group[k][...] for k in sorted(group.array_keys())}


@pytest.fixture
def inputs(tmp_path):
    """x as a Zarr array in chunks of 37 rows, w as a literal."""
    x = RNG.standard_normal((500, 3))
    stored = zarr.create_array(str(tmp_path / "x.zarr"), shape=x.shape, chunks=(37, 3), dtype="f8")
    stored[:] = x
    return tmp_path, x


class Computes:
    """Counts dask.compute calls and what each brought back (bytes of its results)."""

    def __init__(self, monkeypatch):
        import dask
        self.calls, self.returned = 0, []
        real = dask.compute

        def counted(*args, **kwargs):
            self.calls += 1
            results = real(*args, **kwargs)
            self.returned.append(sum(np.asarray(r).nbytes for r in results))
            return results
        monkeypatch.setattr(dask, "compute", counted)


# --------------------------------------------------------------------------- the answer

def test_zarr_from_dask_holds_numpys_answer_and_the_same_summary(inputs, monkeypatch):
    folder, x = inputs
    common = ["grad", "-e", PROGRAM, "--of", "y", "--of", "z", "--wrt", "x", "--wrt", "w",
              "--set", "w=[0.5, -1, 0.25]", "--format", "json"]
    computes = Computes(monkeypatch)
    r = invoke(*common, "--set", f"x=@{folder / 'x.zarr'}", "--device", "dask", "--chunks", "4K",
               "--out", folder / "g.zarr")
    assert r.exit_code == 0, r.output
    # ONE pass: the writes, each array's statistics and the checks; nothing but numbers came back
    assert computes.calls == 1 and computes.returned[0] < 4096
    on_dask = json.loads(r.stdout)
    VALIDATOR.validate(on_dask)
    np.save(folder / "x.npy", x)
    r = invoke(*common, "--set", f"x=@{folder / 'x.npy'}", "--out", folder / "g.npz")
    assert r.exit_code == 0, r.output
    on_numpy = json.loads(r.stdout)

    written, reference = read_zarr(folder / "g.zarr"), dict(np.load(folder / "g.npz"))
    assert sorted(written) == sorted(reference) == ["d_y+z_d_w", "d_y+z_d_x", "y", "z"]
    for name, value in reference.items():
        assert written[name].shape == value.shape and written[name].dtype == value.dtype
        # a sum of chunks adds in another order than NumPy's one sum: the last bits may differ
        np.testing.assert_allclose(written[name], value, rtol=1e-12, atol=1e-12)
    # the same summary, array by array (where: the store's member for the file's)
    dask_arrays, numpy_arrays = on_dask["saved"].pop("arrays"), on_numpy["saved"].pop("arrays")
    assert list(dask_arrays) == list(numpy_arrays)
    for name in numpy_arrays:
        got, want = dask_arrays[name], numpy_arrays[name]
        assert got.pop("where") == f"{folder / 'g.zarr'}/{name}" and want.pop("where") == f"{folder / 'g.npz'}:{name}"
        assert got.pop("finite") is want.pop("finite") is True
        assert (got.pop("shape"), got.pop("dtype")) == (want.pop("shape"), want.pop("dtype"))
        np.testing.assert_allclose([got["min"], got["max"]], [want["min"], want["max"]], rtol=1e-12)
        assert (got["min"], got["max"]) == (float(written[name].min()), float(written[name].max()))
    assert on_dask["saved"]["format"] == "zarr" and on_dask["diagnostics"] == on_numpy["diagnostics"] == []
    assert leftovers(folder) == []


def test_plain_and_table_summaries_have_numpys_form(inputs, monkeypatch):
    folder, x = inputs
    np.save(folder / "x.npy", x)
    monkeypatch.chdir(folder)  # short paths: a table does not wrap them
    common = ["grad", "-e", PROGRAM, "--wrt", "x", "--set", "w=[0.5, -1, 0.25]", "--set", "x=@x.npy"]
    for fmt in ("plain", "table"):
        on_dask = invoke(*common, "--device", "dask", "--chunks", "4K", "--out", f"{fmt}-d.zarr", "--format", fmt)
        on_numpy = invoke(*common, "--out", f"{fmt}-n.zarr", "--format", fmt)
        assert on_dask.exit_code == on_numpy.exit_code == 0 and on_dask.stderr == on_numpy.stderr == ""
        d_lines, n_lines = on_dask.stdout.splitlines(), on_numpy.stdout.splitlines()
        assert len(d_lines) == len(n_lines)
        for d, n in zip(d_lines, n_lines):
            d, n = d.replace(f"{fmt}-d.zarr", "OUT"), n.replace(f"{fmt}-n.zarr", "OUT")
            if fmt == "plain":  # NAME SHAPE DTYPE MIN MAX WHERE; min and max from blocks: the last bits may differ
                d, n = d.split("\t"), n.split("\t")
                assert d[:3] + d[5:] == n[:3] + n[5:]
                np.testing.assert_allclose(np.array(d[3:5], float), np.array(n[3:5], float), rtol=1e-12)
            elif "bytes" not in d:  # (a store's size depends on its chunks)
                assert d == n


def test_eval_prints_go_to_the_store_and_a_scalar_too(inputs, monkeypatch):
    folder, x = inputs
    computes = Computes(monkeypatch)
    r = invoke("eval", "-e", "y = x * 2; s = sum(x); c = 3.0", "--print", "y", "--print", "s", "--print", "c",
               "--set", f"x=@{folder / 'x.zarr'}", "--device", "dask", "--out", folder / "e.zarr", "--format", "plain")
    assert r.exit_code == 0, r.output
    assert computes.calls == 1
    written = read_zarr(folder / "e.zarr")
    assert written["y"].tobytes() == (x * 2).tobytes()
    np.testing.assert_allclose(written["s"], x.sum(), rtol=1e-13)
    assert written["c"].shape == () and written["c"] == 3.0
    assert [line.split("\t")[0] for line in r.stdout.splitlines()] == ["y", "s", "c"]


def test_unconnected_gradients_are_written_as_zeros_or_not_at_all(inputs):
    folder, x = inputs
    common = ["grad", "-e", "u = q * 2; y = sum(x * x)", "--wrt", "x", "--wrt", "q", "--set", f"x=@{folder / 'x.zarr'}",
              "--set", "q=[1, 2]", "--device", "dask", "--format", "json"]
    r = invoke(*common, "--out", folder / "none.zarr")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["saved"]["not_written"] == ["d_y_d_q"]
    assert sorted(read_zarr(folder / "none.zarr")) == ["d_y_d_x", "y"]
    r = invoke(*common, "--out", folder / "zero.zarr", "--unconnected", "zero")
    assert r.exit_code == 0, r.output
    written = read_zarr(folder / "zero.zarr")
    assert written["d_y_d_q"].tolist() == [0.0, 0.0] and written["d_y_d_x"].tobytes() == (2 * x).tobytes()


def test_npz_on_dask_gathers_the_arrays_into_one_file(inputs):
    folder, x = inputs
    r = invoke("eval", "-e", "y = x * 2", "--set", f"x=@{folder / 'x.zarr'}", "--device", "dask",
               "--out", folder / "y.npz")
    assert r.exit_code == 0, r.output
    assert np.load(folder / "y.npz")["y"].tobytes() == (x * 2).tobytes()


# --------------------------------------------------------------------------- numerics

def test_an_overflow_gives_numpys_diagnostics_and_strict_exit_1(inputs, monkeypatch):
    folder, x = inputs
    x = x.copy()
    x[123, 1] = 800.0  # exp overflows there, and so does the gradient
    np.save(folder / "big.npy", x)
    common = ["grad", "-e", "y = sum(exp(x) * w)", "--wrt", "x", "--wrt", "w", "--set", f"x=@{folder / 'big.npy'}",
              "--set", "w=[1, 2, 3]", "--strict"]
    computes = Computes(monkeypatch)
    on_dask = invoke(*common, "--device", "dask", "--chunks", "4K", "--out", folder / "d.zarr", "--format", "json")
    assert on_dask.exit_code == 1, on_dask.output
    on_numpy = invoke(*common, "--out", folder / "n.zarr", "--format", "json")
    assert on_numpy.exit_code == 1
    assert on_dask.stderr == on_numpy.stderr == "gradcli: --strict: not finite: y, d/dx, d/dw\n"
    d, n = json.loads(on_dask.stdout), json.loads(on_numpy.stdout)
    VALIDATOR.validate(d)
    assert d["diagnostics"] == n["diagnostics"] and [g["kind"] for g in d["diagnostics"]][:1] == ["overflow"]
    for name, want in n["saved"]["arrays"].items():
        got = d["saved"]["arrays"][name]
        assert (got["finite"], got["shape"]) == (want["finite"], want["shape"])
        assert got["max"] == want["max"]
    assert [name for name, a in d["saved"]["arrays"].items() if not a["finite"]] == ["y", "d_y_d_x", "d_y_d_w"]
    written, reference = read_zarr(folder / "d.zarr"), read_zarr(folder / "n.zarr")
    for name in reference:
        np.testing.assert_allclose(written[name], reference[name], rtol=1e-12)
    assert computes.calls == 1  # the closer look at the equation found not finite reads its own arrays
    # as text, the same diagnostics on stderr
    text_dask = invoke(*common, "--device", "dask", "--out", folder / "d2.zarr", "--format", "plain")
    text_numpy = invoke(*common, "--out", folder / "n2.zarr", "--format", "plain")
    assert text_dask.exit_code == text_numpy.exit_code == 1 and text_dask.stderr == text_numpy.stderr


# --------------------------------------------------------------------------- whole or not at all

def test_force_is_needed_to_replace_a_store_and_the_old_one_is_kept_without_it(inputs):
    folder, x = inputs
    def times(k, *more):
        return invoke("eval", "-e", f"y = x * {k}", "--set", f"x=@{folder / 'x.zarr'}", "--device", "dask",
                      "--out", folder / "y.zarr", *more)
    assert times(3).exit_code == 0
    r = times(4)
    assert r.exit_code == 2 and "already exists; pass --force to replace it" in r.stderr
    assert read_zarr(folder / "y.zarr")["y"].tobytes() == (x * 3).tobytes()
    r = times(4, "--force")
    assert r.exit_code == 0, r.output
    assert read_zarr(folder / "y.zarr")["y"].tobytes() == (x * 4).tobytes()
    assert leftovers(folder) == []


def test_a_full_disk_while_writing_leaves_nothing_and_exit_74(inputs, monkeypatch):
    folder, _ = inputs
    real = zarr.Array.__setitem__
    written = []

    def full(self, key, value):
        if written:
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(key)
        real(self, key, value)
    monkeypatch.setattr(zarr.Array, "__setitem__", full)
    path = folder / "g.zarr"
    r = invoke("grad", "-e", "y = sum(x * x)", "--wrt", "x", "--set", f"x=@{folder / 'x.zarr'}",
               "--device", "dask", "--chunks", "4K", "--out", path)
    assert r.exit_code == 74 and r.stdout == "", r.output
    assert r.stderr == (f"gradcli: error: cannot write --out '{path}': No space left on device; nothing was left "
                        "under that name\n")
    assert sorted(p.name for p in folder.iterdir()) == ["x.zarr"]


def test_an_interrupted_pass_leaves_nothing(inputs, monkeypatch):
    folder, _ = inputs
    calls = []

    def interrupted(self, key, value):
        calls.append(key)
        raise KeyboardInterrupt
    monkeypatch.setattr(zarr.Array, "__setitem__", interrupted)
    store = outputs.ZarrStore(str(folder / "g.zarr"))
    with pytest.raises(KeyboardInterrupt):
        api.grad("y = sum(x * x)", wrt=["x"], feeds={"x": np.arange(10.0)}, device="dask", store=store)
    assert calls and sorted(p.name for p in folder.iterdir()) == ["x.zarr"]


def test_the_library_writes_with_a_store_and_save_arrays(tmp_path):
    store = outputs.ZarrStore(str(tmp_path / "r.zarr"))
    try:
        r = api.grad("y = sum(x * x)", wrt=["x"], feeds={"x": np.arange(1000.0)}, device="dask", store=store)
        saved = outputs.save_arrays(str(tmp_path / "r.zarr"), outputs.result_arrays(r))
    finally:
        store.discard()  # nothing to remove once saved
    assert isinstance(r.gradients["x"], outputs.Stored) and r.nonfinite() == []
    assert (saved.arrays["d_y_d_x"].min, saved.arrays["d_y_d_x"].max) == (0.0, 1998.0)
    assert read_zarr(tmp_path / "r.zarr")["d_y_d_x"].tobytes() == (2 * np.arange(1000.0)).tobytes()


def test_names_are_made_in_one_place():
    names = outputs.array_names(["y", "z"], ["x"], hessians=["w"], mixed=[("w", "v")])
    assert names == {("output", "y"): "y", ("output", "z"): "z", ("gradient", "x"): "d_y+z_d_x",
                     ("hessian", "w"): "d2_y+z_d_w_d_w", ("mixed", "w", "v"): "d2_y+z_d_w_d_v"}
    with pytest.raises(outputs.OptionError, match="two arrays would be saved under the name 'd_y_d_x'"):
        outputs.array_names(["y"], ["x"], jacobians=["x"])


# --------------------------------------------------------------------------- memory

def test_outputs_written_as_computed_are_not_counted_as_held_whole(tmp_path):
    """The memory guard: gathered for a .npz file, the gradient is refused under the limit;
    written to a store as it is computed, it is not held."""
    path = tmp_path / "x.npy"
    np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(4 << 20,)).flush()  # 32 MiB of zeros
    common = ["grad", "-e", "y = sum(x * x)", "--wrt", "x", "--set", f"x=@{path}", "--device", "dask",
              "--max-memory", "8M"]
    r = invoke(*common, "--out", tmp_path / "g.npz")
    assert r.exit_code == 2 and "the outputs are 32.0 MiB of values, gathered whole" in r.stderr, r.output
    r = invoke(*common, "--out", tmp_path / "g.zarr", "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["saved"]["arrays"]["d_y_d_x"] == {
        "shape": [4 << 20], "dtype": "float64", "min": 0.0, "max": 0.0, "finite": True,
        "where": f"{tmp_path / 'g.zarr'}/d_y_d_x"}


RSS_OVERHEAD = 128 << 20  # the interpreter with NumPy, Dask, Zarr and gradcli imported (about 100 MiB)


@pytest.mark.slow
def test_a_gradient_four_times_the_memory_limit_is_written_within_it(tmp_path):
    """A 256 MiB gradient under --max-memory 64M, written to a store: the peak resident memory
    of the process stays under the limit plus the interpreter's own, and the store holds
    NumPy's numbers (checked here a block at a time)."""
    limit = 64 << 20
    n = 4 * limit // 8
    path = tmp_path / "x.npy"
    x = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(n,))
    rng = np.random.default_rng(7)
    block = 1 << 22
    for start in range(0, n, block):
        x[start:start + block] = rng.standard_normal(min(block, n - start))
    x.flush()
    del x
    measure = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
               "sys.stderr.write(p.stderr); print(p.returncode); print(p.stdout); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)")
    out = tmp_path / "g.zarr"
    p = subprocess.run([sys.executable, "-c", measure, sys.executable, "-m", "gradcli", "grad",
                        "-e", "y = sum(sin(x) * x)", "--wrt", "x", "--set", f"x=@{path}", "--device", "dask",
                        "--max-memory", "64M", "--out", str(out), "--format", "json"],
                       capture_output=True, text=True, timeout=600)
    lines = p.stdout.strip().split("\n")
    code, answer, peak = lines[0], "\n".join(lines[1:-1]), int(lines[-1])
    assert code == "0", p.stderr
    assert peak < limit + RSS_OVERHEAD, f"peak RSS {peak >> 20} MiB"
    saved = json.loads(answer)["saved"]["arrays"]["d_y_d_x"]
    stored = zarr.open_group(str(out), mode="r")["d_y_d_x"]
    x = np.load(path, mmap_mode="r")
    low, high = np.inf, -np.inf
    for start in range(0, n, block):
        piece = np.array(x[start:start + block])
        want = np.cos(piece) * piece + np.sin(piece)
        got = stored[start:start + block]
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)
        low, high = min(low, got.min()), max(high, got.max())
    assert (saved["min"], saved["max"], saved["finite"]) == (low, high, True)


@pytest.mark.slow
def test_a_local_cluster_writes_the_store_the_threads_write(inputs):
    """`--scheduler local --out g.zarr`: two worker processes on the loopback interface (started
    and stopped by the command) write the chunks; the store, the summary, the diagnostics and
    the exit code are those of Dask's threads, for clean numbers and for an overflow whose
    closer look reads the equation's arrays back (a relative --out: the workers share the cwd)."""
    pytest.importorskip("distributed")
    folder, x = inputs
    bad = x.copy()
    bad[123, 1] = 800.0  # exp overflows there
    np.save(folder / "bad.npy", bad)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "gradcli", *args, "--device", "dask", "--chunks", "4K",
                               "--format", "json"], capture_output=True, text=True, cwd=folder, timeout=300)
    cases = ((["grad", "-e", PROGRAM, "--of", "y", "--of", "z", "--wrt", "x", "--wrt", "w", "--set", "x=@x.zarr",
               "--set", "w=[0.5, -1, 0.25]"], 0),
             (["grad", "-e", "y = sum(exp(x) * w)", "--wrt", "x", "--wrt", "w", "--set", "x=@bad.npy",
               "--set", "w=[1, 2, 3]", "--strict"], 1))
    for k, (args, code) in enumerate(cases):
        threads = run(*args, "--out", f"t{k}.zarr")
        cluster = run(*args, "--out", f"c{k}.zarr", "--scheduler", "local")
        assert threads.returncode == cluster.returncode == code, cluster.stderr
        assert cluster.stderr == threads.stderr
        on_cluster, on_threads = json.loads(cluster.stdout), json.loads(threads.stdout)
        VALIDATOR.validate(on_cluster)
        assert on_cluster["diagnostics"] == on_threads["diagnostics"]
        assert on_cluster["diagnostics"] if code else not on_cluster["diagnostics"]
        got, want = on_cluster["saved"]["arrays"], on_threads["saved"]["arrays"]
        assert list(got) == list(want)
        for name in want:
            assert got[name].pop("where") == f"c{k}.zarr/{name}" and want[name].pop("where") == f"t{k}.zarr/{name}"
            assert {k: v for k, v in got[name].items() if k not in ("min", "max")} == \
                {k: v for k, v in want[name].items() if k not in ("min", "max")}
            for end in ("min", "max"):  # (a number, or a non-finite one's text)
                assert got[name][end] == want[name][end] or got[name][end] == pytest.approx(want[name][end], rel=1e-14)
        written, reference = read_zarr(folder / f"c{k}.zarr"), read_zarr(folder / f"t{k}.zarr")
        assert sorted(written) == sorted(reference) == sorted(want)
        for name, value in reference.items():
            assert written[name].shape == value.shape and written[name].dtype == value.dtype
            # a matrix product's partial sums may be added in another order: the last bits
            np.testing.assert_allclose(written[name], value, rtol=1e-14, atol=0)
    assert leftovers(folder) == []
