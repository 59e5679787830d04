"""gradcli's speed goals, each measured against its peers in the same run.

    python benchmarks/run.py                 # everything (about 15 minutes on 2 cores)
    python benchmarks/run.py --quick         # smaller sizes: a smoke test (under a minute)
    python benchmarks/run.py --only terms    # one workload; --rounds N to change the rounds
    python benchmarks/run.py --only regression --baseline DIR   # this code against DIR's (a source tree)

The peers are the libraries installed beside this Python (`pip install -e '.[bench]'`: JAX and
autograd; PyTorch's CPU wheel by hand, see benchmarks/README.md); a missing one gives "not installed".
Contenders alternate round by round and each comparison is the median of the ratios paired
within a round (see harness.py); processes are timed through the console script installed
beside this Python (never a version-manager shim). Prints a Markdown table on stdout and the
progress on stderr.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

# BLAS on one thread in this process, unless the caller says otherwise: the hand-written VJP the
# big-array goals divide by is single-threaded, and OpenBLAS's own threads (its float64 dot's)
# keep spinning after each call, taking a core from whichever contender runs next (measured: the
# checks' cost on 2 threads read 1.10-1.38x with them, 1.00-1.02x without). The processes this
# starts get the caller's setting back.
_CALLERS_BLAS_THREADS = os.environ.get("OPENBLAS_NUM_THREADS")
os.environ["OPENBLAS_NUM_THREADS"] = _CALLERS_BLAS_THREADS or "1"
import numpy as np  # noqa: E402
if _CALLERS_BLAS_THREADS is None:
    del os.environ["OPENBLAS_NUM_THREADS"]

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import arrays  # noqa: E402
import chunks  # noqa: E402
import half  # noqa: E402
import lines_shapes  # noqa: E402
import regression  # noqa: E402
from harness import Failed, Rounds, Table, call, environment, installed, mib, paired, process, seconds  # noqa: E402
from peers import HESSIAN_PROGRAM  # noqa: E402
from startup_numbers import numbers_startup  # noqa: E402

GRADCLI = os.path.join(os.path.dirname(sys.executable), "gradcli")
PEERS_PY = os.path.join(HERE, "peers.py")
PY = sys.executable
# a fixed threshold: every big buffer is its own mapping, returned to the system when freed, so
# that the peak resident size counts each run's buffers (glibc's moving threshold would have the
# measured run reuse heap pages that the warm-up run left resident)
MALLOC_ENV = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "131072"}
WORKLOADS = ("startup", "arrays", "chunks", "terms", "deep", "lines", "lines_shapes", "hessian", "dask", "half",
             "regression")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def peer_processes(job: str, peers: tuple[str, ...], *args: str, stdin=None, timeout=None) -> dict:
    return {p: process([PY, PEERS_PY, job, p, *args], stdin=stdin, timeout=timeout) for p in peers if installed(p)}


def not_installed(peers) -> str:
    missing = [p for p in peers if not installed(p)]
    return f" ({', '.join(missing)} not installed)" if missing else ""


# --------------------------------------------------------------------------- 1. start-up

def compile_bytecode() -> None:
    """pip compiles an installed wheel's bytecode (as it did the peers'); an editable install where
    PYTHONDONTWRITEBYTECODE is set would recompile gradcli's modules at every start instead (over
    100 ms a process), in every workload."""
    import compileall

    import gradcli
    compileall.compile_dir(os.path.dirname(gradcli.__file__), quiet=1)


def startup(table: Table, o) -> None:
    res = paired({"numpy import": process([PY, "-c", "import numpy"]),
                  "gradcli eval": process([GRADCLI, "eval", "-e", "exp(1)", "--format", "plain"]),
                  "gradcli --help": process([GRADCLI, "--help"])}, o.rounds or (3 if o.quick else 15), warm=True)
    table.record("start-up", res)
    table.compare("start-up: `gradcli eval -e 'exp(1)' --format plain` vs `python -c 'import numpy'`", res,
                  "gradcli eval", ["numpy import"], 1.25, "≤ 1.25×", peers=["numpy import"])
    table.compare("start-up: `gradcli --help` vs `python -c 'import numpy'`", res, "gradcli --help",
                  ["numpy import"], 1.0, "≤ 1.0×", peers=["numpy import"])
    numbers_startup(table, o, GRADCLI, PY)


# --------------------------------------------------------------------------- 2. big arrays

def big_arrays(table: Table, o, tmp: str) -> None:
    from gradcli.engine.backends import Backend

    load_file = Backend().load  # (as the command reads them: on the threads the chunks may use)
    n = 1_000_000 if o.quick else 10_000_000
    rng = np.random.default_rng(0)
    x64, w64 = rng.standard_normal(n), rng.standard_normal(n)
    grads = {}
    for dtype in ("float64", "float32"):
        xs, ws = os.path.join(tmp, f"x_{dtype}.npy"), os.path.join(tmp, f"w_{dtype}.npy")
        np.save(xs, x64.astype(dtype))
        np.save(ws, w64.astype(dtype))
        ours = arrays.contender("gradcli", dtype)
        contenders = {"gradcli": call(lambda: ours(load_file(xs, "x"), load_file(ws, "w"))),
                      "hand VJP": call(lambda: arrays.hand_vjp(np.load(xs), np.load(ws)))}
        for peer in ("jax", "torch"):
            if installed(peer):
                fn = arrays.contender(peer, dtype)
                contenders[peer] = call(lambda fn=fn: fn(np.load(xs), np.load(ws)))
        log(f"  big arrays, n = {n:.0e}, {dtype}")
        res = paired(contenders, o.rounds or (3 if o.quick else 7), warm=True, log=log)  # warm: JAX compiles
        what = f"n = {n:.0e} {dtype}: value + gradient of sum(w * softmax(x)) from .npy, checks on"
        table.record(what, res)
        table.compare(f"{what}, vs hand-written NumPy VJP", res, "gradcli", ["hand VJP"], 1.10, "≤ 1.10×")
        table.compare(f"{what}, vs `jax.jit(jax.value_and_grad)` warm{not_installed(['jax'])}", res, "gradcli",
                      ["jax"], 1.0, "≤ 1.0×")
        grads[dtype] = ours(np.load(xs), np.load(ws))[1]

        # memory above the loaded inputs, each contender in its own process (the kernel's peak)
        mem = Rounds()
        for name, key in (("gradcli", "gradcli"), ("hand VJP", "hand"), ("jax", "jax"), ("torch", "torch")):
            if key in ("jax", "torch") and not installed(key):
                continue
            done = subprocess.run([PY, PEERS_PY, "memory", key, dtype, xs, ws], capture_output=True, text=True,
                                  env=MALLOC_ENV)
            if done.returncode == 0:
                mem.times[name] = [float(done.stdout.split()[-1])]
            else:
                mem.times[name] = [None]
                mem.failed[name] = f"exit {done.returncode}"
        table.record(f"n = {n:.0e} {dtype}: peak memory above the inputs", mem, fmt=mib)
        table.compare(f"n = {n:.0e} {dtype}: peak memory above the inputs, vs hand VJP", mem, "gradcli",
                      ["hand VJP"], 1.0, "≤ 1.0×", fmt=mib)
    g64, g32 = grads["float64"], grads["float32"].astype(np.float64)
    rel = float(np.linalg.norm(g32 - g64) / np.linalg.norm(g64))
    table.add("float32 gradient vs float64 (relative, 2-norm)", f"{rel:.2e}", "—", "—", "≤ 1e-6",
              "yes" if rel <= 1e-6 else "**no**")


# --------------------------------------------------------------------------- 3. big programs

def term_program(n: int) -> str:
    inputs = "".join(f"x{i} = {0.5 + 1e-4 * i}\n" for i in range(n + 1))
    return inputs + "y = " + " + ".join(f"sin(x{i}) * x{i + 1}" for i in range(n)) + "\n"


def terms(table: Table, o, tmp: str) -> None:
    sizes = (500, 5_000) if o.quick else (10_000, 100_000)
    peers = ("torch", "jax", "autograd")
    res = {}
    for n in sizes:
        path = os.path.join(tmp, f"terms_{n}.gc")
        with open(path, "w") as f:
            f.write(term_program(n))
        wrt = ["x0", f"x{n}"]
        contenders = {"gradcli": process([GRADCLI, "grad", path, "--wrt", wrt[0], "--wrt", wrt[1], "--format", "json"],
                                         timeout=o.timeout)}
        contenders.update(peer_processes("terms", peers, path, *wrt, timeout=o.timeout))
        log(f"  {n:,}-term program")
        res[n] = paired(contenders, o.rounds or (1 if o.quick else 3), log=log)
        table.record(f"{n:,}-term program (whole process)", res[n])
    small, large = sizes
    table.compare(f"{large:,}-term program, text -> value + gradient (whole process), vs torch eager"
                  f"{not_installed(peers)}", res[large], "gradcli", ["torch"], 1.0, "≤ 1.0×")
    a, b = res[large].median("gradcli"), res[small].median("gradcli")
    if a and b:
        table.add(f"growth of gradcli's time from {small:,} to {large:,} terms", f"{a / b:.1f}×", "—", "—",
                  "≤ 11×", "yes" if a / b <= 11 else "**no**")


def deep(table: Table, o, tmp: str) -> None:
    depth = 5_000 if o.quick else 100_000
    path = os.path.join(tmp, f"deep_{depth}.gc")
    with open(path, "w") as f:
        f.write("y = " + "tanh(" * depth + "x" + ")" * depth + "\n")
    contenders = {"gradcli": process([GRADCLI, "grad", path, "--wrt", "x", "--set", "x=0.5", "--format", "json"],
                                     timeout=o.timeout)}
    contenders.update(peer_processes("deep", ("torch", "jax"), path, "0.5", timeout=o.timeout))
    log(f"  {depth:,}-deep chain")
    res = paired(contenders, o.rounds or (1 if o.quick else 3), log=log)
    table.record(f"{depth:,}-deep tanh chain (whole process; jax: fori_loop)", res)
    table.compare(f"{depth:,}-deep `tanh(tanh(... x))`, value + gradient (whole process), vs torch"
                  f"{not_installed(['torch', 'jax'])}", res, "gradcli", ["torch"], 1.0, "≤ 1.0×")


def lines(table: Table, o, tmp: str) -> None:
    count = 500 if o.quick else 10_000
    stdin = "".join(f"x = {k % 7}.{k % 10}; y = sin(x) * x + {k}\n" for k in range(count)).encode()
    peers = ("autograd", "torch", "jax")
    contenders = {"gradcli": process([GRADCLI, "grad", "--lines", "--wrt", "x"], stdin=stdin, timeout=o.timeout)}
    contenders.update(peer_processes("lines", peers, "x", stdin=stdin, timeout=o.timeout))
    log(f"  {count:,} lines")
    res = paired(contenders, o.rounds or (1 if o.quick else 3), warm=not o.quick, log=log)
    table.record(f"{count:,} small programs, one per line (whole process; jax: one jit, numbers as inputs)", res)
    table.compare(f"{count:,} small programs through `gradcli grad --lines` (whole process), vs autograd and torch"
                  f"{not_installed(peers)}", res, "gradcli", ["autograd", "torch"], 0.9999, "< 1.0× both")


def hessian(table: Table, o, tmp: str) -> None:
    n = 50 if o.quick else 200
    rng = np.random.default_rng(1)
    xs, ws = os.path.join(tmp, "h_x.npy"), os.path.join(tmp, "h_w.npy")
    np.save(xs, rng.standard_normal(n))
    np.save(ws, rng.standard_normal((n, n)) / np.sqrt(n))
    path = os.path.join(tmp, "hessian.gc")
    with open(path, "w") as f:
        f.write(HESSIAN_PROGRAM)
    contenders = {"gradcli": process([GRADCLI, "hessian", path, "--wrt", "x", "--set", f"x=@{xs}", "--set", f"W=@{ws}",
                                      "--format", "plain"], timeout=o.timeout)}
    contenders.update(peer_processes("hessian", ("jax", "torch"), xs, ws, timeout=o.timeout))
    log(f"  Hessian {n}x{n}")
    res = paired(contenders, o.rounds or (1 if o.quick else 5), warm=not o.quick, log=log)
    table.record(f"Hessian {n}×{n} (whole process)", res)
    table.compare(f"Hessian {n}×{n} of `{HESSIAN_PROGRAM.strip()}` (whole process), vs `jax.hessian` (jit)"
                  f"{not_installed(['jax', 'torch'])}", res, "gradcli", ["jax"], 0.5, "≤ 0.5× (2× ahead)")


# --------------------------------------------------------------------------- 7. Dask

DASK_PROGRAM = "y = sum(log(1 + exp(a * x)))\n"


def dask(table: Table, o, tmp: str) -> None:
    help_text = subprocess.run([GRADCLI, "grad", "--help"], capture_output=True, text=True).stdout
    n = 1_000_000 if o.quick else 10_000_000
    big = 20_000_000 if o.quick else 200_000_000
    limit = "32M" if o.quick else "256M"
    rows = [f"`--device dask` vs NumPy, n = {n:.0e} in memory (overhead; whole process)",
            f"`--device dask` out of core: {big:.0e} float64 .npy ({big * 8 / 1e9:.1f} GB), --max-memory {limit}, "
            "throughput vs reading the file once"]
    if "dask" not in help_text:
        for what in rows:
            table.unavailable(what, "not available (no `--device dask` in this gradcli)", "—")
        return
    path = os.path.join(tmp, "dask.gc")
    with open(path, "w") as f:
        f.write(DASK_PROGRAM)
    xs = os.path.join(tmp, "dask_x.npy")
    np.save(xs, np.random.default_rng(2).standard_normal(n))

    def ours(device, x, *extra):
        return process([GRADCLI, "grad", path, "--wrt", "a", "--set", "a=0.5", "--set", f"x=@{x}", "--device", device,
                        "--format", "json", *extra], timeout=o.timeout)

    log("  dask in memory")
    res = paired({"gradcli --device dask": ours("dask", xs), "gradcli --device cpu": ours("cpu", xs)},
                 o.rounds or (1 if o.quick else 3), warm=not o.quick, log=log)
    table.record(rows[0], res)
    table.compare(rows[0], res, "gradcli --device dask", ["gradcli --device cpu"], float("inf"), "(reported)")

    big_path = os.path.join(tmp, "dask_big.npy")
    out = np.lib.format.open_memmap(big_path, mode="w+", dtype=np.float64, shape=(big,))
    rng = np.random.default_rng(3)
    for start in range(0, big, 10_000_000):
        stop = min(big, start + 10_000_000)
        out[start:stop] = rng.standard_normal(stop - start)
    out.flush()
    del out
    size = os.path.getsize(big_path)

    def read_once():
        buf = bytearray(64 << 20)
        with open(big_path, "rb", buffering=0) as f:
            while f.readinto(buf):
                pass

    log("  dask out of core")
    res = paired({"gradcli --device dask": ours("dask", big_path, "--max-memory", limit), "read the file once":
                  call(read_once)}, o.rounds or (1 if o.quick else 3), warm=True, log=log)
    table.record(rows[1], res)
    mine, floor = res.median("gradcli --device dask"), res.median("read the file once")
    if mine is None:
        table.add(rows[1], res.failed.get("gradcli --device dask", "failed"), "—", "—", "(reported)", "**no**")
    else:
        table.add(rows[1], f"{seconds(mine)}, {size / mine / 1e9:.2f} GB/s",
                  f"read once {seconds(floor)}, {size / floor / 1e9:.2f} GB/s",
                  f"{res.ratio('gradcli --device dask', 'read the file once'):.2f}× the read", "(reported)", "—")
    os.remove(big_path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke test, not the goals)")
    ap.add_argument("--only", choices=WORKLOADS, action="append", help="run this workload only (repeatable)")
    ap.add_argument("--rounds", type=int, help="rounds for every workload (default: per workload)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds before a process is given up [300]")
    ap.add_argument("--baseline", metavar="DIR", help="another version's source tree, for the workload 'regression' "
                    "(this code against it on start-up, arrays, terms, deep and lines)")
    o = ap.parse_args()
    if not os.path.exists(GRADCLI):
        sys.exit(f"no gradcli console script beside {sys.executable}: pip install -e '.[bench]' first")
    header = environment(GRADCLI)
    for line in header:
        log(line)
    compile_bytecode()
    table = Table()
    with tempfile.TemporaryDirectory() as tmp:
        for name, fn in (("startup", startup), ("arrays", big_arrays),
                         ("chunks", lambda table, o, tmp: chunks.workload(table, o, tmp, log)), ("terms", terms), ("deep", deep),
                         ("lines", lines), ("lines_shapes", lambda table, o, tmp: lines_shapes.run(
                             table, o, tmp, GRADCLI, paired, process, log)), ("hessian", hessian), ("dask", dask),
                         ("half", lambda table, o, tmp: half.half_arrays(table, o, log)),
                         ("regression", lambda table, o, tmp: regression.run(
                             table, o, tmp, PY, os.path.dirname(HERE), log))):
            if (o.only and name not in o.only) or (name == "regression" and not o.only and not o.baseline):
                continue
            log(f"{name} ...")
            try:
                fn(table, o) if name == "startup" else fn(table, o, tmp)
            except Failed as e:
                table.unavailable(name, f"failed: {e}", "—")
    print("\n".join(f"- {line}" for line in header))
    print("- figures: medians over alternating rounds; ratio: median of the ratios paired within a round"
          + (" (--quick: smaller sizes, not the goals)" if o.quick else ""))
    print()
    print(table.markdown())


if __name__ == "__main__":
    main()
