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
            import gradcli.backends as b
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
    from gradcli.backends import cluster_failure
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
