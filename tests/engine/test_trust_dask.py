"""--device dask keeps the exit codes and the memory promise: what the CPU refuses it refuses
(a .npy with trailing bytes, a FIFO), what fails is one clear message (a corrupt Zarr chunk, a
scheduler that never answers, a local cluster under a small --max-memory or a full disk, a
SIGTERM), never exit 70, a hang, a traceback block or a file left behind."""
import os
import resource
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

pytest.importorskip("dask")
LOCAL_TIMEOUT = 240  # a local cluster starts worker processes: ~6 s on an idle machine, more when busy


def _gradcli(*args, cwd=None, timeout=60, preexec_fn=None):
    return subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, preexec_fn=preexec_fn)


def test_an_npy_with_trailing_bytes_is_refused_as_on_the_cpu(tmp_path):
    np.save(tmp_path / "t.npy", np.arange(10.0))
    with open(tmp_path / "t.npy", "ab") as fh:
        fh.write(b"\0" * 16)
    said = ("gradcli: error: --set x: 't.npy' is not a valid .npy file: its header announces a (10,) array of "
            "float64 (80 bytes) but 96 bytes follow it\n")
    for device in ("cpu", "dask"):
        p = _gradcli("eval", "-e", "y = sum(x)", "--set", "x=@t.npy", "--device", device, cwd=tmp_path)
        assert (p.returncode, p.stdout, p.stderr) == (2, "", said), device


def test_a_fifo_is_refused_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "f.npy")
    p = _gradcli("eval", "-e", "y = sum(x)", "--set", "x=@f.npy", "--device", "dask", cwd=tmp_path, timeout=30)
    assert (p.returncode, p.stderr) == (2, "gradcli: error: --set x: 'f.npy' is not a regular file\n")


def test_a_corrupt_zarr_chunk_is_the_users_error_naming_the_store(tmp_path):
    zarr = pytest.importorskip("zarr")
    z = zarr.open_array(str(tmp_path / "c.zarr"), mode="w", shape=(1000,), chunks=(100,), dtype="f8")
    z[:] = np.arange(1000.0)
    chunk = next(os.path.join(d, f) for d, _, fs in sorted(os.walk(tmp_path / "c.zarr")) for f in sorted(fs)
                 if not f.startswith((".z", "zarr.json")))
    with open(chunk, "wb") as fh:
        fh.write(b"not a compressed chunk")
    p = _gradcli("eval", "-e", "y = sum(x)", "--set", "x=@c.zarr", "--device", "dask", cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("gradcli: error: --set x: cannot read a chunk of 'c.zarr' (")
    assert "internal error" not in p.stderr and p.stdout == ""


def _mute_server():
    """A TCP server that accepts connections and never says anything."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held = []

    def serve():
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return
    threading.Thread(target=serve, daemon=True).start()
    return server, held


def test_a_scheduler_that_accepts_and_never_answers_is_given_up_on():
    """dask.distributed's own timeout does not bound the handshake: the client waited forever."""
    server, held = _mute_server()
    try:
        address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
        code = textwrap.dedent(f"""
            import gradcli.engine.backends as b
            b.HANDSHAKE_SECONDS = 1.0
            import gradcli
            try:
                gradcli.evaluate("y = sum(x)", feeds={{"x": [1.0, 2.0]}}, device="dask", scheduler="{address}")
            except gradcli.errors.GradcliError as err:
                print(err.message)
        """)
        started = time.monotonic()
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert p.stdout == (f"scheduler {address}: the server there accepted the connection but did not answer "
                            "as a Dask scheduler within 1 s\n"), p.stderr
        assert time.monotonic() - started < 30
    finally:
        server.close()
        for conn in held:
            conn.close()


def test_a_scheduler_that_is_not_there_is_exit_2():
    pytest.importorskip("distributed")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    p = _gradcli("eval", "-e", "y = 1.0", "--device", "dask", "--scheduler", f"tcp://127.0.0.1:{port}")
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == (f"gradcli: error: --scheduler tcp://127.0.0.1:{port}: cannot reach a Dask scheduler there "
                        "(Connection refused)\n")


def test_a_killed_worker_is_said_as_the_memory_it_went_over():
    distributed = pytest.importorskip("distributed")
    from gradcli.engine.backends import cluster_failure
    from types import SimpleNamespace
    killed = distributed.scheduler.KilledWorker("('sum', 0)", SimpleNamespace(address="tcp://127.0.0.1:1"), 3)
    err = cluster_failure(killed, "local", 64 << 20)
    assert err.exit_code == 2 and err.message.startswith(
        "scheduler local: a worker process was killed while computing: it went over its memory (its share of "
        "the 64.0 MiB of --max-memory, plus 192.0 MiB of its own)")
    assert cluster_failure(ValueError("a task's own"), "local", 64 << 20) is None
    assert cluster_failure(killed, None, 64 << 20) is None  # (threads: no cluster)


@pytest.fixture
def x4(tmp_path):
    x = np.random.default_rng(11).standard_normal(1 << 19)  # 4 MiB
    np.save(tmp_path / "x.npy", x)
    return tmp_path, x


def test_a_local_cluster_under_a_small_memory_limit_computes(x4):
    """--max-memory 64M: each worker's memory limit was its share alone, below what a worker
    process takes empty, so the workers were killed as they started (exit 70, or a hang)."""
    pytest.importorskip("distributed")
    folder, x = x4
    p = _gradcli("eval", "-e", "y = logsumexp(x)", "--set", "x=@x.npy", "--device", "dask", "--max-memory", "64M",
                 "--chunks", "1M", "--scheduler", "local", "--format", "plain", cwd=folder, timeout=LOCAL_TIMEOUT)
    assert (p.returncode, p.stderr) == (0, ""), p.stderr
    name, value = p.stdout.split()
    top = x.max()
    np.testing.assert_allclose(float(value), top + np.log(np.exp(x - top).sum()), rtol=1e-13)


def test_a_full_disk_on_a_local_cluster_is_one_message_and_exit_74(x4):
    """The workers' own logs (a traceback block per failed block) are silenced: the failure
    reaches the command and is said once."""
    pytest.importorskip("distributed")
    pytest.importorskip("zarr")
    folder, _ = x4

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 16, 1 << 16))  # (a chunk of 256 KiB does not fit)
    p = _gradcli("grad", "-e", "y = sum(sin(x) * x)", "--wrt", "x", "--set", "x=@x.npy", "--device", "dask",
                 "--max-memory", "256M", "--chunks", "256K", "--scheduler", "local", "--out", "g.zarr", cwd=folder,
                 timeout=LOCAL_TIMEOUT, preexec_fn=limit)
    assert (p.returncode, p.stdout) == (74, "")
    assert p.stderr == "gradcli: error: cannot write --out 'g.zarr': File too large; nothing was left under that name\n"
    assert sorted(os.listdir(folder)) == ["x.npy"]


def test_sigterm_during_a_local_cluster_write_leaves_nothing_and_says_one_line(x4):
    """The workers are killed before the temporary store is removed (a worker could write a chunk
    into it again), and the cluster's semaphores are released (no 'leaked semaphore' warning)."""
    pytest.importorskip("distributed")
    pytest.importorskip("zarr")
    folder, x = x4
    np.save(folder / "x.npy", np.tile(x, 4))  # 16 MiB: long enough to be interrupted mid-write
    p = subprocess.Popen([sys.executable, "-m", "gradcli", "grad", "-e", "y = sum(sin(x) * x)", "--wrt", "x",
                          "--set", "x=@x.npy", "--device", "dask", "--max-memory", "256M", "--chunks", "64K",
                          "--scheduler", "local", "--out", "g.zarr"], cwd=folder, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + LOCAL_TIMEOUT
        while time.monotonic() < deadline and p.poll() is None:  # until the workers write chunks
            parts = [d for d in os.listdir(folder) if d.endswith(".part")]
            if parts and sum(len(fs) for _, _, fs in os.walk(folder / parts[0])) > 8:
                break
            time.sleep(0.2)
        assert p.poll() is None, p.stderr.read()
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert (p.returncode, out, err) == (128 + signal.SIGTERM, "", "gradcli: interrupted\n")
    for _ in range(3):  # a worker still running would write into the removed store again
        time.sleep(1)
        assert sorted(os.listdir(folder)) == ["x.npy"]


# --------------------------------------------------------------------------- the memory promise

RSS_OVERHEAD = 112 << 20  # the interpreter with NumPy, Dask, Zarr and gradcli imported (about 85 MiB here)
MEASURE = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
           "sys.stderr.write(p.stderr); print(p.returncode); print(p.stdout); "
           "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)")


def _peak(*args, cwd):
    """(exit code, standard output, peak resident memory) of a gradcli command."""
    p = subprocess.run([sys.executable, "-c", MEASURE, sys.executable, "-m", "gradcli", *args], capture_output=True,
                       text=True, cwd=cwd, timeout=300)
    lines = p.stdout.rstrip("\n").split("\n")
    return int(lines[0]), "\n".join(lines[1:-1]), int(lines[-1]), p.stderr


@pytest.fixture(scope="module")
def x64(tmp_path_factory):
    """64 MiB of numbers: four times the 16M limit below."""
    folder = tmp_path_factory.mktemp("x64")
    x = np.lib.format.open_memmap(folder / "x.npy", mode="w+", dtype=np.float64, shape=(8 << 20,))
    x[:] = np.random.default_rng(12).standard_normal(8 << 20)
    x.flush()
    return folder


def _blocks(folder):
    x = np.load(folder / "x.npy", mmap_mode="r")
    for start in range(0, len(x), 1 << 20):
        yield start, np.array(x[start:start + (1 << 20)])


def test_a_reduction_then_a_second_pass_over_the_input_stays_within_the_limit(x64):
    """logsumexp reads x for its max, then again for exp(x - max): Dask held every block of x
    between the two (152 MiB here under 16M); now a block is read again where it is needed."""
    code, out, peak, err = _peak("eval", "-e", "y = logsumexp(x)", "--set", "x=@x.npy", "--device", "dask",
                                 "--max-memory", "16M", "--format", "plain", cwd=x64)
    assert code == 0, err
    assert peak < (16 << 20) + RSS_OVERHEAD, f"peak RSS {peak >> 20} MiB"
    top = max(block.max() for _, block in _blocks(x64))
    want = top + np.log(sum(np.exp(block - top).sum() for _, block in _blocks(x64)))
    np.testing.assert_allclose(float(out.split()[1]), want, rtol=1e-12)


def test_a_gradient_that_reads_its_input_after_a_reduction_is_written_within_the_limit(x64):
    """d/dx sum((x - mean(x))**2) = 2 (x - mean(x)): x is read after mean(x) is known (172 MiB)."""
    zarr = pytest.importorskip("zarr")
    code, out, peak, err = _peak("grad", "-e", "y = sum((x - mean(x)) ** 2)", "--wrt", "x", "--set", "x=@x.npy",
                                 "--device", "dask", "--max-memory", "16M", "--out", "g.zarr", "--format", "plain",
                                 cwd=x64)
    assert code == 0, err
    assert peak < (16 << 20) + RSS_OVERHEAD, f"peak RSS {peak >> 20} MiB"
    mean = sum(block.sum() for _, block in _blocks(x64)) / (8 << 20)
    stored = zarr.open_group(str(x64 / "g.zarr"), mode="r")["d_y_d_x"]
    for start, block in _blocks(x64):
        np.testing.assert_allclose(stored[start:start + len(block)], 2 * (block - mean), rtol=1e-9, atol=1e-12)


def test_the_task_graph_is_counted_against_the_limit(tmp_path):
    """4 MiB cut into 1 KiB blocks: 8,194 blocks of tasks took 179 MiB under 16M, exit 0."""
    np.save(tmp_path / "x.npy", np.random.default_rng(13).standard_normal(1 << 19))
    p = _gradcli("eval", "-e", "y = sum(x * 2)", "--set", "x=@x.npy", "--device", "dask", "--chunks", "1K",
                 "--max-memory", "16M", cwd=tmp_path)
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == ("gradcli: error: on --device dask, --chunks of 1.0 KiB cuts the values into 8,194 blocks: "
                        "the task graph alone would take about 64.0 MiB, more than the 16.0 MiB allowed by "
                        "--max-memory; give larger --chunks\n")
    p = _gradcli("eval", "-e", "y = sum(x * 2)", "--set", "x=@x.npy", "--device", "dask", "--chunks", "64K",
                 "--max-memory", "16M", "--format", "plain", cwd=tmp_path)
    assert p.returncode == 0, p.stderr


def test_a_zarr_store_whose_chunks_cannot_fit_is_refused_up_front(tmp_path):
    """A Zarr chunk is read whole: one 16 MiB chunk under 16M (a 64 MiB one peaked at 394 MiB)."""
    zarr = pytest.importorskip("zarr")
    x = np.random.default_rng(14).standard_normal(2 << 20)
    zarr.open_array(str(tmp_path / "one.zarr"), mode="w", shape=x.shape, chunks=x.shape, dtype="f8")[:] = x
    p = _gradcli("eval", "-e", "y = sum(x)", "--set", "x=@one.zarr", "--device", "dask", "--max-memory", "16M",
                 cwd=tmp_path)
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr.startswith("gradcli: error: --set x: 'one.zarr' is stored in chunks of 16.0 MiB, each read "
                               "whole: computing on one per core (")
    assert p.stderr.endswith("more than the 16.0 MiB allowed by --max-memory; store it in smaller chunks, or raise "
                             "--max-memory\n")
    p = _gradcli("eval", "-e", "y = sum(x)", "--set", "x=@one.zarr", "--device", "dask", "--max-memory", "8G",
                 "--format", "plain", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    np.testing.assert_allclose(float(p.stdout.split()[1]), x.sum(), rtol=1e-12)


@pytest.mark.parametrize("program", ["y = sum(softmax(x) * x)", "y = logsumexp(x) + sum(x * mean(x))",
                                     "y = sum(((x - mean(x)) / std(x)) ** 4)"])
def test_blocks_read_again_give_numpys_numbers(program, tmp_path):
    """The graph with cheap blocks made again where they are read computes what NumPy does."""
    import gradcli
    from gradcli.engine.backends import FileRef
    x = np.random.default_rng(15).standard_normal(1 << 14)
    np.save(tmp_path / "x.npy", x)
    on_dask = gradcli.grad(program, wrt=["x"], feeds={"x": FileRef(str(tmp_path / "x.npy"), "x")}, device="dask",
                           chunks=1 << 12)
    on_cpu = gradcli.grad(program, wrt=["x"], feeds={"x": x})
    np.testing.assert_allclose(on_dask.outputs["y"], on_cpu.outputs["y"], rtol=1e-12)
    np.testing.assert_allclose(on_dask.gradients["x"], on_cpu.gradients["x"], rtol=1e-10, atol=1e-14)


def test_reading_again_copies_cheap_blocks_into_their_readers_and_nothing_else():
    from dask._task_spec import DataNode, List, Task, TaskRef
    from gradcli.engine.backends import reading_again

    def read(array, i):
        return array[i]
    graph = {"file": DataNode("file", [10.0, 20.0]),
             ("x", 0): Task(("x", 0), read, TaskRef("file"), 0),
             ("x", 1): Task(("x", 1), read, TaskRef("file"), 1),
             "total": Task("total", sum, List(TaskRef(("x", 0)), TaskRef(("x", 1)))),
             ("d", 0): Task(("d", 0), float.__sub__, TaskRef(("x", 0)), TaskRef("total")),
             ("d", 1): Task(("d", 1), float.__sub__, TaskRef(("x", 1)), TaskRef("total"))}
    again = reading_again(graph, {("d", 0), ("d", 1)})
    assert set(again) == {"file", "total", ("d", 0), ("d", 1)}  # the blocks of x are made where read
    assert again["total"].dependencies == {"file"} and again[("d", 1)].dependencies == {"file", "total"}
    import dask.threaded
    assert dask.threaded.get(again, [("d", 0), ("d", 1)]) == (10.0 - 30.0, 20.0 - 30.0)


# Labels and class targets decide a loss's formula while the program is built (Keras reads
# labels that are all 0/1 as -1/1; class indices become one-hot rows). A lazily read input has
# no values then: it was once read as zeros, giving hinge 1.6 where Keras gives 1.325.
HINGE_T, HINGE_P = [[0.0, 1.0, 1.0, 0.0]], [[0.3, 0.8, -0.2, 0.5]]
HINGE_KERAS = np.mean(np.maximum(1 - (2 * np.array(HINGE_T) - 1) * np.array(HINGE_P), 0.0))  # 1.05


@pytest.mark.parametrize("program,what", [
    ("y = keras.losses.hinge(t, p)", "hinge()"),
    ("y = torch.nn.functional.cross_entropy(p, c)", "cross_entropy()"),
])
def test_a_lazily_read_input_is_never_read_as_zeros_while_building(tmp_path, program, what):
    np.save(tmp_path / "t.npy", np.array(HINGE_T))
    np.save(tmp_path / "p.npy", np.array(HINGE_P))
    np.save(tmp_path / "c.npy", np.array([1.0]))
    inputs = ["--set", "t=@t.npy", "--set", "p=@p.npy", "--set", "c=@c.npy"]
    cpu = _gradcli("eval", "-e", program, *inputs, cwd=tmp_path)
    assert cpu.returncode == 0, cpu.stderr
    p = np.array(HINGE_P[0])
    want = HINGE_KERAS if what == "hinge()" else np.log(np.sum(np.exp(p))) - p[1]
    assert float(cpu.stdout.split()[1]) == pytest.approx(want, rel=1e-12)
    lazy = _gradcli("eval", "-e", program, *inputs, "--device", "dask", cwd=tmp_path)
    assert lazy.returncode == 2 and lazy.stdout == "", lazy.stdout
    name = "t" if what == "hinge()" else "c"
    assert (f"error: {what}: this needs the values of '{name}' while the program is built, but --device dask reads "
            "them only when it runs: evaluate it on the CPU, or write them in the program") in lazy.stderr
