"""Limits on what a command may take: the memory policy (--max-memory's default, sizes as a
person writes and reads them) and what text, tokens and rendered output cost."""
from __future__ import annotations

import math
import os

from gradcli.errors import OptionError


def default_memory_limit() -> int:
    """Half of this machine's physical memory."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError, AttributeError):
        return 8 << 30


MIN_MEMORY_LIMIT = 1 << 10


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
