"""Limits on what a command may take: the memory policy (--max-memory's default, sizes as a
person writes and reads them) and what text, tokens and rendered output cost."""
from __future__ import annotations

import math
import os

from gradcli.errors import OptionError


MIN_MEMORY_LIMIT = 1 << 10
# the elements of an array the lowering makes itself (a constructor's `zeros`, `eye`; a random draw)
MAX_CONSTANT_ELEMENTS = 100_000_000


def default_memory_limit() -> int:
    """Half of the memory this process may have (`memory_bounds`, the smallest of them): the
    other half is room for the interpreter, the libraries and the allocator beside the arrays
    that --max-memory counts. Measured once per process."""
    if not _DEFAULT_LIMIT:
        _DEFAULT_LIMIT.append(max(MIN_MEMORY_LIMIT, min(memory_bounds().values()) // 2))
    return _DEFAULT_LIMIT[0]


_DEFAULT_LIMIT: list[int] = []
_UNLIMITED = 1 << 60  # a cgroup v1 "no limit" is 2^63 rounded down to a page


def memory_bounds(cgroup_root: str = "/sys/fs/cgroup", proc: str = "/proc/self") -> dict[str, int]:
    """What bounds this process's memory, in bytes, by what sets it: the machine's physical
    memory; the address-space and data limits (`ulimit -v`, `ulimit -d`) less what is already
    mapped; the cgroup's limit (a container's: cgroup v2 `memory.max`, v1
    `memory.limit_in_bytes`, its own and its parents'). Those not set are left out."""
    bounds = {"physical memory": physical_memory()}
    for name, what, used in (("RLIMIT_AS", "ulimit -v", "VmSize"), ("RLIMIT_DATA", "ulimit -d", "VmData")):
        left = rlimit_headroom(name, used, proc)
        if left is not None:
            bounds[what] = left
    group = cgroup_memory_limit(cgroup_root, proc)
    if group is not None:
        bounds["cgroup memory limit"] = group
    return bounds


def physical_memory() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 16 << 30


def rlimit_headroom(name: str, used_field: str, proc: str = "/proc/self") -> int | None:
    """The soft limit `resource.<name>` less this process's `used_field` (/proc/self/status,
    VmSize or VmData); None where no limit is set."""
    try:
        import resource
        soft, _ = resource.getrlimit(getattr(resource, name))
    except (ImportError, AttributeError, ValueError, OSError):
        return None
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    used = 0
    try:
        with open(os.path.join(proc, "status")) as fh:
            for line in fh:
                if line.startswith(used_field + ":"):
                    used = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return max(0, soft - used)


def cgroup_memory_limit(root: str = "/sys/fs/cgroup", proc: str = "/proc/self") -> int | None:
    """The smallest memory limit of this process's cgroup and its parents (v2 `memory.max`, v1
    `memory.limit_in_bytes`), or None where none is set. Inside a container the group's path may
    not exist under `root` (a cgroup namespace): `root` itself is then the group."""
    try:
        with open(os.path.join(proc, "cgroup")) as fh:
            entries = [line.rstrip("\n").split(":", 2) for line in fh]
    except OSError:
        entries = []
    places = []  # (folder, file with the limit)
    for entry in entries:
        if len(entry) != 3:
            continue
        _, controllers, path = entry
        if controllers == "":  # cgroup v2
            places += [(folder, "memory.max") for folder in _cgroup_folders(root, path)]
        elif "memory" in controllers.split(","):
            places += [(folder, "memory.limit_in_bytes")
                       for folder in _cgroup_folders(os.path.join(root, "memory"), path)]
    limits = [limit for limit in map(_read_limit, (os.path.join(f, name) for f, name in places))
              if limit is not None]
    return min(limits) if limits else None


def _cgroup_folders(root: str, path: str) -> list[str]:
    """The folders of the cgroup at `path` and of its parents, under `root` (and `root`)."""
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    return [os.path.join(root, *parts[:n]) for n in range(len(parts), -1, -1)]


def _read_limit(path: str) -> int | None:
    try:
        with open(path) as fh:
            text = fh.read().strip()
    except OSError:
        return None
    if not text.isdigit():
        return None  # "max": no limit
    value = int(text)
    return value if value < _UNLIMITED else None


def out_of_memory(limit: int | None) -> OptionError:
    """What a MemoryError anywhere becomes: the machine (or its ulimit, or its container) ran
    out before the guard could refuse the program; exit 2, as the guard's refusal."""
    limit = limit or default_memory_limit()
    return OptionError(f"out of memory: this command needed more memory than the machine, its ulimit or its "
                       f"container gave it, though {{option}} allowed {describe_size(limit)}; give a lower "
                       "{option} to have such programs refused before they start, or use smaller inputs",
                       "max_memory")


def parse_size(text: str) -> int:
    """'8G', '500M', '2GiB', '1e9' -> bytes: a finite number of at least 1 KiB (anything less
    cannot hold a program; a fraction of a byte is not a size)."""
    units = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().replace("IB", "").rstrip("B") or "0"
    unit = t[-1] if t[-1] in units else ""
    try:
        number = float(t[:-1] if unit else t)
    except ValueError:
        raise OptionError(f"{{option}}: '{text}' is not a size such as 8G or 500M", "max_memory") from None
    if not math.isfinite(number):
        raise OptionError(f"{{option}}: '{text}' is not a finite size; give one such as 8G or 500M", "max_memory")
    if number <= 0:
        raise OptionError(f"{{option}}: '{text}' must be positive", "max_memory")
    size = number * units[unit]
    if size < MIN_MEMORY_LIMIT:
        raise OptionError(f"{{option}}: '{text}' is {size:g} bytes; the smallest limit is 1K (1024 bytes)", "max_memory")
    return int(size)


def describe_size(n: int) -> str:
    """A size for a person: 1.5 GiB, 234.4 KiB, 900 bytes."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


# Text of one number in an output (`-0.30592180165271284, ` in JSON, plain or a table)
TEXT_BYTES_PER_NUMBER = 24


def output_text_bytes(elements: int) -> int:
    return elements * TEXT_BYTES_PER_NUMBER


# Memory that rendering the output takes at its peak, per byte of text: the pieces (chunks of
# numbers, lines) and the text they are joined into (render.CHUNK, streams.WRITE_CHUNK)
RENDER_COPIES = 2


def output_render_bytes(elements: int) -> int:
    return RENDER_COPIES * output_text_bytes(elements)


# What a program costs once parsed, at most: each token becomes an AST node with its position
# (measured 130 to 190 bytes a token: `z = 1 + 2 * 3` statements, long literals), and the text
# is held up to four times over (as read, decoded, and copies while it is compiled: measured
# 3.3). --max-memory bounds the sum; the command reads no more than a quarter of it.
TOKEN_BYTES = 256
TEXT_COPIES = 4
PARSE_ALLOWANCE = 4 << 20  # on top of --max-memory, so that any limit (1K) parses a small program
