"""`--out PATH`: the arrays of eval, grad, jacobian and hessian written to .npz, .npy or .zarr,
exactly as computed, whole or not at all; standard output says what was written."""
import errno
import json
import os
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from gradcli import api
from gradcli.io import outputs

from cli_helpers import invoke, strict

ROOT = Path(__file__).resolve().parents[2]
VALIDATOR = jsonschema.Draft202012Validator(json.loads((ROOT / "docs" / "gradcli.schema.json").read_text()))
RNG = np.random.default_rng(20261125)




def leftovers(folder: Path) -> list[str]:
    """Temporary files of an unfinished write."""
    return [p.name for p in folder.iterdir() if p.name.endswith(".part") or ".part." in p.name]


# --------------------------------------------------------------------------- round trips

def test_grad_to_npz_holds_the_output_and_the_gradient_exactly(tmp_path):
    x = RNG.standard_normal(7)
    np.save(tmp_path / "x.npy", x)
    path = tmp_path / "r.npz"
    r = invoke("grad", "-e", "y = sum(sin(x) * x)", "--wrt", "x", "--set", f"x=@{tmp_path / 'x.npy'}", "--out", path)
    assert r.exit_code == 0, r.output
    with np.load(path, allow_pickle=False) as saved:
        assert sorted(saved.files) == ["d_y_d_x", "y"]
        assert saved["y"].dtype == np.float64 and saved["y"].shape == ()
        assert saved["y"] == np.sum(np.sin(x) * x)  # float64: the same operations, the same number
        np.testing.assert_allclose(saved["d_y_d_x"], np.cos(x) * x + np.sin(x), rtol=1e-14)  # analytic
        # bit for bit what the library computes
        lib = api.grad("y = sum(sin(x) * x)", wrt=["x"], feeds={"x": x})
        assert saved["d_y_d_x"].tobytes() == lib.gradients["x"].tobytes()


def test_float32_stays_float32_in_npy_and_npz(tmp_path):
    x = RNG.standard_normal(5).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    one = tmp_path / "y.npy"
    r = invoke("eval", "-e", "y = x * 3", "--set", f"x=@{tmp_path / 'x.npy'}", "--dtype", "float32", "--out", one)
    assert r.exit_code == 0, r.output
    saved = np.load(one, allow_pickle=False)
    assert saved.dtype == np.float32 and saved.tobytes() == (x * np.float32(3)).tobytes()
    both = tmp_path / "g.npz"
    r = invoke("grad", "-e", "y = sum(x * x)", "--wrt", "x", "--set", f"x=@{tmp_path / 'x.npy'}", "--dtype", "float32",
               "--out", both)
    assert r.exit_code == 0, r.output
    with np.load(both, allow_pickle=False) as saved:
        assert saved["d_y_d_x"].dtype == np.float32 and saved["y"].dtype == np.float32
        assert saved["d_y_d_x"].tobytes() == (2 * x).tobytes()


def test_zarr_directory_round_trip(tmp_path):
    zarr = pytest.importorskip("zarr")
    path = tmp_path / "r.zarr"
    r = invoke("grad", "-e", "y = sum(x ** 3)", "--wrt", "x", "--set", "x=[[1, 2], [3, -4]]", "--dtype", "float32",
               "--out", path)
    assert r.exit_code == 0, r.output
    group = zarr.open_group(str(path), mode="r")
    assert sorted(group.keys()) == ["d_y_d_x", "y"]
    grad = group["d_y_d_x"][...]
    assert grad.dtype == np.float32 and grad.shape == (2, 2)
    np.testing.assert_array_equal(grad, 3 * np.array([[1, 2], [3, -4]], dtype=np.float32) ** 2)
    assert float(group["y"][...]) == 1 + 8 + 27 - 64
    assert r.stdout.splitlines()[1].endswith(f"\t{path}/d_y_d_x")


def test_jacobian_and_hessian_blocks_are_named_and_exact(tmp_path):
    path = tmp_path / "j.npz"
    r = invoke("jacobian", "-e", "y = x * x", "--wrt", "x", "--set", "x=[1, 2, 3]", "--out", path)
    assert r.exit_code == 0, r.output
    with np.load(path, allow_pickle=False) as saved:
        np.testing.assert_array_equal(saved["d_y_d_x"], np.diag([2.0, 4.0, 6.0]))
        np.testing.assert_array_equal(saved["y"], [1.0, 4.0, 9.0])
    path = tmp_path / "h.npz"
    r = invoke("hessian", "-e", "f = x * x * y + y ** 3", "--wrt", "x", "--wrt", "y", "--set", "x=1", "--set", "y=2",
               "--out", path)
    assert r.exit_code == 0, r.output
    with np.load(path, allow_pickle=False) as saved:  # f = x²y + y³ at (1, 2)
        assert {k: float(saved[k]) for k in saved.files} == {
            "f": 10.0, "d2_f_d_x_d_x": 4.0, "d2_f_d_y_d_y": 12.0, "d2_f_d_x_d_y": 2.0, "d2_f_d_y_d_x": 2.0}


def test_several_outputs_name_the_gradient_of_their_sum_and_unconnected_is_not_written(tmp_path):
    path = tmp_path / "r.npz"
    r = invoke("grad", "-e", "w = 5.0; z = x * 2; y = sum(x * x)", "--of", "y", "--of", "z", "--wrt", "x", "--wrt", "w",
               "--set", "x=[1, 2]", "--set", "w=5", "--out", path)
    assert r.exit_code == 0, r.output
    with np.load(path, allow_pickle=False) as saved:
        assert saved.files == ["y", "z", "d_y+z_d_x"]
        np.testing.assert_array_equal(saved["d_y+z_d_x"], [4.0, 6.0])  # 2x + 2
    assert "gradcli: --out: d_y+z_d_w not written: no gradient (unconnected; --unconnected zero writes zeros)" \
        in r.stderr
    r = invoke("grad", "-e", "w = 5.0; z = x * 2; y = sum(x * x)", "--of", "y", "--of", "z", "--wrt", "x", "--wrt", "w",
               "--set", "x=[1, 2]", "--set", "w=5", "--out", path, "--force", "--unconnected", "zero")
    with np.load(path, allow_pickle=False) as saved:
        assert saved["d_y+z_d_w"].shape == () and saved["d_y+z_d_w"] == 0.0


def test_a_value_named_like_an_argument_of_savez_is_saved(tmp_path):
    path = tmp_path / "r.npz"
    r = invoke("eval", "-e", "file = [1.0, 2.0]; allow_pickle = file * 2", "--print", "file", "--print",
               "allow_pickle", "--out", path)
    assert r.exit_code == 0, r.output
    with np.load(path, allow_pickle=False) as saved:
        assert saved["file"].tolist() == [1.0, 2.0] and saved["allow_pickle"].tolist() == [2.0, 4.0]


# --------------------------------------------------------------------------- what standard output says

def test_plain_summary_says_shape_dtype_min_max_and_where_not_the_numbers(tmp_path):
    path = tmp_path / "r.npz"
    r = invoke("grad", "-e", "y = sum(x * x)", "--wrt", "x", "--set", "x=[3, -1.5, 2]", "--out", path,
               "--format", "plain")
    assert (r.exit_code, r.stdout) == (0, f"y\t()\tfloat64\t15.25\t15.25\t{path}:y\n"
                                          f"d_y_d_x\t(3,)\tfloat64\t-3.0\t6.0\t{path}:d_y_d_x\n")


def test_json_summary_follows_the_schema(tmp_path):
    path = tmp_path / "r.npz"
    r = invoke("eval", "-e", "y = log(x)", "--set", "x=[0, 1, -1, 2]", "--out", path, "--format", "json")
    assert r.exit_code == 0, r.output
    doc = strict(r.stdout)
    errors = sorted(VALIDATOR.iter_errors(doc), key=str)
    assert not errors, errors
    assert list(doc) == ["command", "saved", "diagnostics"] and doc["diagnostics"]
    assert doc["saved"] == {"path": str(path), "format": "npz", "bytes": path.stat().st_size, "not_written": [],
                            "arrays": {"y": {"shape": [4], "dtype": "float64", "min": "-Infinity",
                                             "max": float(np.log(2.0)), "finite": False, "where": f"{path}:y"}}}
    # an answer that is not one: a summary without where it went
    del doc["saved"]["arrays"]["y"]["where"]
    assert list(VALIDATOR.iter_errors(doc))


def test_table_summary_says_where_the_file_is(tmp_path):
    path = tmp_path / "r.npy"
    r = invoke("eval", "-e", "y = x", "--set", "x=[1, 2]", "--out", path, "--format", "table")
    assert r.exit_code == 0, r.output
    assert "(2,)" in r.stdout and "float64" in r.stdout and f"wrote {path}" in " ".join(r.stdout.split())


def test_strict_still_writes_and_exits_1(tmp_path):
    path = tmp_path / "r.npy"
    r = invoke("eval", "-e", "y = 1 / x", "--set", "x=[0, 1]", "--out", path, "--strict")
    assert r.exit_code == 1 and "--strict: not finite: y" in r.stderr
    assert np.load(path).tolist() == [np.inf, 1.0]


# --------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("args, message", [
    (["--out", "{d}/r.txt"], "--out '{d}/r.txt': '.txt' is not a format gradcli writes; end the path in .npz "
                              "(every array), .npy (exactly one array) or .zarr (a directory; needs zarr)"),
    (["--out", "{d}/r"], "--out '{d}/r': no suffix is not a format gradcli writes"),
    (["--out", "{d}/none/r.npz"], "--out '{d}/none/r.npz': the folder '{d}/none' does not exist"),
    (["--out", "{d}/file.npz/r.npz"], "--out '{d}/file.npz/r.npz': '{d}/file.npz' is not a folder"),
    (["--out", "{d}/file.npz"], "--out '{d}/file.npz' already exists; pass --force to replace it"),
    (["--out", "{d}/folder.npz", "--force"], "--out '{d}/folder.npz' is a directory; it is not replaced by a file"),
    (["--out", "{d}/folder.zarr", "--force"], "--out '{d}/folder.zarr' is a directory that is not a Zarr store"),
    (["--out", "{d}/r.npy", "--lines"],
     "--out writes one program's arrays to one file; it cannot be used with --lines"),
    (["--force"], "--force replaces the file of --out; give --out PATH"),
])
def test_refusals_are_exit_2_with_the_option_named(tmp_path, args, message):
    (tmp_path / "file.npz").write_bytes(b"keep")
    (tmp_path / "folder.npz").mkdir()
    (tmp_path / "folder.zarr").mkdir()
    (tmp_path / "folder.zarr" / "notes.txt").write_text("keep")
    if "folder.zarr" in " ".join(args):
        pytest.importorskip("zarr")
    r = invoke("eval", "-e", "y = x", "--set", "x=[1, 2]", *[a.format(d=tmp_path) for a in args])
    assert r.exit_code == 2 and f"gradcli: error: {message.format(d=tmp_path)}" in r.stderr, r.stderr
    assert r.stdout == ""
    assert (tmp_path / "file.npz").read_bytes() == b"keep" and (tmp_path / "folder.zarr" / "notes.txt").exists()
    assert leftovers(tmp_path) == []


def test_npy_with_several_arrays_names_the_count_and_suggests_npz(tmp_path):
    path = tmp_path / "r.npy"
    r = invoke("grad", "-e", "y = sum(x * x)", "--wrt", "x", "--set", "x=[1, 2]", "--out", path)
    assert r.exit_code == 2
    assert r.stderr == (f"gradcli: error: --out '{path}': a .npy file holds exactly one array, but there are 2: "
                        "y, d_y_d_x; use a .npz file (or a .zarr directory) for several\n")
    assert not path.exists() and leftovers(tmp_path) == []


def test_force_replaces_an_existing_file_and_zarr_store(tmp_path):
    path = tmp_path / "r.npy"
    path.write_bytes(b"old")
    r = invoke("eval", "-e", "y = x", "--set", "x=[1, 2]", "--out", path, "--force")
    assert r.exit_code == 0 and np.load(path).tolist() == [1.0, 2.0]
    pytest.importorskip("zarr")
    store = tmp_path / "r.zarr"
    for value in ("[1, 2]", "[3, 4, 5]"):
        again = ["--force"] if store.exists() else []
        r = invoke("eval", "-e", "y = x", "--set", f"x={value}", "--out", store, *again)
        assert r.exit_code == 0, r.output
    import zarr
    assert zarr.open_group(str(store), mode="r")["y"][...].tolist() == [3.0, 4.0, 5.0]
    assert leftovers(tmp_path) == []


def test_zarr_without_zarr_installed_is_a_clear_error(tmp_path, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "zarr", None)  # import zarr raises ImportError
    r = invoke("eval", "-e", "y = x", "--set", "x=[1, 2]", "--out", tmp_path / "r.zarr")
    assert r.exit_code == 2
    assert r.stderr == ("gradcli: error: --out: writing a .zarr directory needs zarr: pip install 'gradcli[dask]' "
                        "(or use .npz)\n")
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_folder_is_refused_before_anything_runs(tmp_path, monkeypatch):
    import tempfile

    def refused(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")
    monkeypatch.setattr(tempfile, "mkstemp", refused)  # (root may write anywhere: the refusal is simulated)
    r = invoke("eval", "-e", "y = x", "--set", "x=[1, 2]", "--out", tmp_path / "r.npz")
    assert r.exit_code == 2
    assert r.stderr == (f"gradcli: error: --out '{tmp_path}/r.npz': cannot write in the folder '{tmp_path}': "
                        "Permission denied\n")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only folder")
def test_a_read_only_folder_is_refused(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        r = invoke("eval", "-e", "y = x", "--set", "x=[1, 2]", "--out", folder / "r.npz")
        assert r.exit_code == 2 and "cannot write in the folder" in r.stderr
    finally:
        folder.chmod(0o700)


# --------------------------------------------------------------------------- whole or not at all

def _failing_after(monkeypatch, exc):
    """np.lib.format.write_array writes part of the array, then fails with `exc`."""
    real = np.lib.format.write_array

    def partial(stream, arr, *args, **kwargs):
        real(stream, arr[: max(1, arr.size // 2)].copy() if arr.ndim else arr, *args, **kwargs)
        raise exc
    monkeypatch.setattr(np.lib.format, "write_array", partial)


@pytest.mark.parametrize("suffix", [".npz", ".npy"])
def test_a_full_disk_leaves_no_file_and_exit_74(tmp_path, monkeypatch, suffix):
    _failing_after(monkeypatch, OSError(errno.ENOSPC, "No space left on device"))
    path = tmp_path / f"r{suffix}"
    r = invoke("eval", "-e", "y = x * 2", "--set", "x=[1, 2, 3, 4]", "--out", path)
    assert r.exit_code == 74 and r.stdout == ""
    assert r.stderr == (f"gradcli: error: cannot write --out '{path}': No space left on device; nothing was left "
                        "under that name\n")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_replacement_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "r.npz"
    path.write_bytes(b"old")
    _failing_after(monkeypatch, OSError(errno.EFBIG, "File too large"))
    r = invoke("eval", "-e", "y = x * 2", "--set", "x=[1, 2, 3, 4]", "--out", path, "--force")
    assert r.exit_code == 74 and path.read_bytes() == b"old" and leftovers(tmp_path) == []


def test_an_interrupted_write_leaves_nothing_under_the_name(tmp_path, monkeypatch):
    _failing_after(monkeypatch, KeyboardInterrupt())
    path = tmp_path / "r.npz"
    with pytest.raises(KeyboardInterrupt):
        outputs.save_arrays(str(path), {"y": np.arange(10.0)})
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_appears_meanwhile_is_not_replaced(tmp_path, monkeypatch):
    path = tmp_path / "r.npy"
    real = np.lib.format.write_array

    def racing(stream, arr, *args, **kwargs):
        path.write_bytes(b"theirs")  # another program creates the name while gradcli writes
        real(stream, arr, *args, **kwargs)
    monkeypatch.setattr(np.lib.format, "write_array", racing)
    with pytest.raises(outputs.ExistsError, match="already exists; pass force=True to replace it"):
        outputs.save_arrays(str(path), {"y": np.arange(3.0)})
    assert path.read_bytes() == b"theirs" and leftovers(tmp_path) == []


def test_the_written_file_has_the_permissions_of_a_new_file(tmp_path):
    path = tmp_path / "r.npy"
    mask = os.umask(0o022)
    try:
        outputs.save_arrays(str(path), {"y": np.zeros(2)})
    finally:
        os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o644


# --------------------------------------------------------------------------- the library

def test_save_arrays_reports_what_it_wrote(tmp_path):
    arr = np.array([[1.0, np.nan], [-2.5, np.inf]], dtype=np.float32)
    saved = outputs.save_arrays(str(tmp_path / "a.npz"), {"a": arr, "empty": np.zeros((0, 3)), "b": None})
    assert saved.format == "npz" and saved.not_written == ["b"]
    a = saved.arrays["a"]
    assert (a.shape, a.dtype, a.min, a.max, a.finite) == ((2, 2), "float32", -2.5, np.inf, False)
    e = saved.arrays["empty"]
    assert (e.shape, e.min, e.max, e.finite) == ((0, 3), None, None, True)
    with np.load(tmp_path / "a.npz", allow_pickle=False) as back:
        assert back["a"].tobytes() == arr.tobytes() and back["empty"].shape == (0, 3)


def test_min_and_max_of_a_broadcast_view_are_found_block_by_block(tmp_path, monkeypatch):
    monkeypatch.setattr(outputs, "_STATS_BLOCK", 4)
    base = RNG.standard_normal((1, 9))
    wide = np.broadcast_to(base, (50, 9))  # a view: never made whole
    saved = outputs.save_arrays(str(tmp_path / "w.npy"), {"w": wide})
    assert (saved.arrays["w"].min, saved.arrays["w"].max) == (base.min(), base.max())
    np.testing.assert_array_equal(np.load(tmp_path / "w.npy"), wide)


def test_cupy_like_arrays_are_copied_to_the_host(tmp_path):
    class DeviceArray:  # what CuPy offers: the CUDA interface and .get()
        __cuda_array_interface__ = {}

        def __init__(self, host):
            self.host = host

        def get(self):
            return self.host

    saved = outputs.save_arrays(str(tmp_path / "g.npy"), {"g": DeviceArray(np.arange(4, dtype=np.float32))})
    assert saved.arrays["g"].dtype == "float32"
    assert np.load(tmp_path / "g.npy").tolist() == [0.0, 1.0, 2.0, 3.0]


def test_dask_arrays_are_stored_chunk_by_chunk(tmp_path):
    da = pytest.importorskip("dask.array")
    zarr = pytest.importorskip("zarr")
    values = RNG.standard_normal((30, 4))
    lazy = da.from_array(values, chunks=(7, 4))
    saved = outputs.save_arrays(str(tmp_path / "d.zarr"), {"d": lazy, "n": np.arange(3.0)})
    assert (saved.arrays["d"].min, saved.arrays["d"].max) == (values.min(), values.max())
    assert zarr.open_group(str(tmp_path / "d.zarr"), mode="r")["d"][...].tobytes() == values.tobytes()


def test_two_arrays_under_one_name_are_refused():
    # the blocks d²f/da d(b_d_c) and d²f/d(a_d_b) dc would both be d2_f_d_a_d_b_d_c
    result = api.hessian("f = a * b_d_c + a_d_b * c", wrt=["a", "b_d_c", "a_d_b", "c"],
                         feeds={"a": 1.0, "b_d_c": 2.0, "a_d_b": 3.0, "c": 4.0})
    with pytest.raises(outputs.OptionError, match="two arrays would be saved under the name 'd2_f_d_a_d_b_d_c'"):
        outputs.result_arrays(result)


# --------------------------------------------------------------------------- memory

def test_with_out_the_text_of_the_numbers_is_not_counted_against_max_memory(tmp_path):
    program = "y = ones((100000,)) * x"
    r = invoke("eval", "-e", program, "--set", "x=2", "--max-memory", "4M", "--format", "plain")
    assert r.exit_code == 2 and "of text" in r.stderr
    path = tmp_path / "y.npy"
    r = invoke("eval", "-e", program, "--set", "x=2", "--max-memory", "4M", "--out", path)
    assert r.exit_code == 0, r.output
    saved = np.load(path)
    assert saved.shape == (100000,) and (saved == 2.0).all()


# --------------------------------------------------------------------------- a signal mid-write

# The command run in a process of its own, which sends itself the signal from inside the write
# (deterministic timing): the npz writer after its first bytes; a Zarr block after it is stored
# (on a Dask thread: Python runs the handler in the main thread meanwhile); the swap of a new
# store for an old one (--force) between moving the old one aside and renaming the new one in.
_SIGNAL_IN = {
    "npz": "import gradcli.io.outputs as o\nreal = o._write_npz\n"
           "def write(stream, arrays):\n    stream.write(b'PK partial'); stream.flush()\n"
           "    os.kill(os.getpid(), SIGNUM); time.sleep(30)\no._write_npz = write\n",
    "zarr": "import zarr\nreal = zarr.Array.__setitem__\n"
            "def write(self, key, value):\n    real(self, key, value)\n"
            "    os.kill(os.getpid(), SIGNUM); time.sleep(0.5)\nzarr.Array.__setitem__ = write\n",
    "swap": "real = os.rename\n"
            "def rename(src, dst):\n    if src.endswith('.part') and os.path.lexists(src + '.old'):\n"
            "        os.kill(os.getpid(), SIGNUM); time.sleep(30)\n    real(src, dst)\nos.rename = rename\n",
}


@pytest.mark.parametrize("where, signum, code", [("npz", "SIGINT", 130), ("zarr", "SIGTERM", 143),
                                                 ("swap", "SIGINT", 130)])
def test_a_signal_during_out_leaves_no_temporary(tmp_path, where, signum, code):
    import subprocess
    import sys

    np.save(tmp_path / "x.npy", RNG.standard_normal((4000, 3)))
    target = tmp_path / ("r.npz" if where == "npz" else "r.zarr")
    args = ["grad", "-e", "y = sum(x * x)", "--wrt", "x", "--set", "x=@x.npy", "--out", target.name]
    if where != "npz":
        args += ["--device", "dask", "--chunks", "16K"]
    if where == "swap":  # an old store, to be replaced
        subprocess.run([sys.executable, "-m", "gradcli", *args], cwd=tmp_path, check=True, capture_output=True)
        old = sorted(p.relative_to(target).as_posix() for p in target.rglob("*"))
        args.append("--force")
    script = (f"import os, sys, time\nfrom signal import {signum} as SIGNUM\n" + _SIGNAL_IN[where]
              + f"sys.argv = ['gradcli', *{args!r}]\nfrom gradcli.cli import main\nsys.exit(main())\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr, proc.stdout) == (code, "gradcli: interrupted\n", "")
    assert leftovers(tmp_path) == []
    if where == "swap":  # the old store is back under its name, whole
        assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*")) == old
        assert sorted(p.name for p in tmp_path.iterdir()) == ["r.zarr", "x.npy"]
    else:
        assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npy"]


def test_an_array_of_more_dimensions_than_zarr_writes_is_refused_and_leaves_nothing(tmp_path):
    # found by the hostile fuzz: zarr compares each chunk with its fill value through
    # np.broadcast, which takes 32 dimensions: a 40-dimensional gradient was exit 70
    pytest.importorskip("zarr")
    deep = "[" * 40 + "1.0" + "]" * 40
    r = invoke("grad", "-e", "y = sum(z * z)", "--set", f"z={deep}", "--wrt", "z", "--out", tmp_path / "o.zarr")
    assert r.exit_code == 2
    assert r.stderr == ("gradcli: error: --out: Zarr writes arrays of at most 32 dimensions, and 'd_y_d_z' has 40; "
                        "write it to .npz or .npy\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    ok = invoke("grad", "-e", "y = sum(z * z)", "--set", f"z={deep}", "--wrt", "z", "--out", tmp_path / "o.npz")
    assert ok.exit_code == 0 and np.load(tmp_path / "o.npz")["d_y_d_z"].shape == (1,) * 40
