"""The default memory limit follows what this process may really use (physical memory, ulimit -v
and -d, the cgroup's limit), and running out of memory anyway is a clear error, exit 2, never
the internal-error exit 70."""
import json
import os
import resource
import subprocess
import sys

import pytest

from gradcli.limits import cgroup_memory_limit, memory_bounds

ADDRESS_SPACE = 1536 << 20  # ulimit -v for the runs below: NumPy and gradcli start in ~200 MiB of it
# A Jacobian of 50 million numbers: 381 MiB for the Jacobian, as much for y, 1.1 GiB of text
JACOBIAN = ["jacobian", "-e", "y = x * ones(50000000)", "--of", "y", "--wrt", "x", "--set", "x=2.0"]


def _limited(*args, stdin: str | None = None):
    """gradcli under an address-space limit (one BLAS thread: its buffers are address space too)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "gradcli", *args], input=stdin, capture_output=True, text=True,
                          preexec_fn=limit, env=env, timeout=120)


def test_the_default_limit_is_half_of_what_ulimit_v_leaves():
    p = _limited("eval", "-e", "1.0")  # (starts the interpreter under the limit)
    assert p.returncode == 0, p.stderr
    code = ("import resource; from gradcli.limits import default_memory_limit, memory_bounds; "
            "print(default_memory_limit(), memory_bounds()['ulimit -v'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE)),
                         env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    default, left = map(int, out.stdout.split())
    assert 0 < left < ADDRESS_SPACE and default == left // 2


def test_under_ulimit_v_the_guard_refuses_up_front_instead_of_crashing():
    """On half of physical memory the guard let it run, and NumPy's MemoryError was exit 70."""
    p = _limited(*JACOBIAN)
    assert p.returncode == 2, p.stderr
    assert "internal error" not in p.stderr and p.stdout == ""
    assert "the output would be 50,000,000 numbers" in p.stderr and "--max-memory" in p.stderr


def test_running_out_of_memory_anyway_is_exit_2_with_a_clear_message():
    """A --max-memory above what the machine gives: the guard lets it start, memory runs out."""
    p = _limited(*JACOBIAN, "--max-memory", "10G")
    assert p.returncode == 2, p.stderr
    # said at the operation that ran out where the engine knows it, else for the whole command
    assert ("<expr>:1:7: error: out of memory computing a (50000000,) array of float64 here; lower --max-memory"
            in p.stderr or p.stderr.startswith("gradcli: error: out of memory: this command needed more memory "
                                               "than the machine, its ulimit or its container gave it, though "
                                               "--max-memory allowed 10.0 GiB"))
    assert "internal error" not in p.stderr and "Traceback" not in p.stderr


def test_running_out_of_memory_on_one_line_is_that_lines_error_and_the_stream_goes_on():
    p = _limited("jacobian", "--lines", "--of", "y", "--wrt", "x", "--set", "x=2.0", "--max-memory", "10G",
                 stdin="y = x * ones(50000000)\ny = x * 3.0\n")
    assert p.returncode == 2, p.stderr
    first, second = map(json.loads, p.stdout.splitlines())
    assert first["line"] == 1 and first["error"]["message"].startswith("out of memory")
    assert "internal" not in first["error"]
    assert second["jacobians"]["x"]["value"] == 3.0


def _tree(root, files: dict) -> None:
    for path, text in files.items():
        full = root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)


def test_cgroup_v2_memory_max_of_the_group_and_its_parents(tmp_path):
    _tree(tmp_path, {"proc/cgroup": "0::/user.slice/app.scope\n",
                     "cg/user.slice/app.scope/memory.max": "max\n",
                     "cg/user.slice/memory.max": "805306368\n",  # 768 MiB on the parent
                     "cg/memory.max": "2147483648\n"})
    assert cgroup_memory_limit(str(tmp_path / "cg"), str(tmp_path / "proc")) == 768 << 20
    bounds = memory_bounds(str(tmp_path / "cg"), str(tmp_path / "proc"))
    assert bounds["cgroup memory limit"] == 768 << 20 and bounds["physical memory"] > 0


def test_cgroup_v1_limit_and_a_namespaced_path_that_is_not_under_the_root(tmp_path):
    """v1: memory.limit_in_bytes, 'no limit' being 2^63 rounded to a page; in a container the
    path in /proc/self/cgroup is the host's and the container's root holds the limit."""
    _tree(tmp_path, {"proc/cgroup": "9:pids:/docker/abc\n4:memory:/docker/abc\n0::/\n",
                     "cg/memory/memory.limit_in_bytes": "536870912\n"})
    assert cgroup_memory_limit(str(tmp_path / "cg"), str(tmp_path / "proc")) == 512 << 20
    (tmp_path / "cg/memory/memory.limit_in_bytes").write_text("9223372036854771712\n")
    assert cgroup_memory_limit(str(tmp_path / "cg"), str(tmp_path / "proc")) is None
    assert "cgroup memory limit" not in memory_bounds(str(tmp_path / "cg"), str(tmp_path / "proc"))


@pytest.mark.parametrize("cgroup", ["", "garbage", "0::/a\n"])
def test_no_cgroup_information_is_no_limit(tmp_path, cgroup):
    _tree(tmp_path, {"proc/cgroup": cgroup})
    assert cgroup_memory_limit(str(tmp_path / "cg"), str(tmp_path / "proc")) is None
    assert cgroup_memory_limit(str(tmp_path / "none"), str(tmp_path / "nothing")) is None
