"""`--set NAME=VALUE` and `--grad-ys NAME=VALUE`: a literal of the language, or `@PATH` to a
file (gradcli.io.files reads those), or a dtype and a shape without values (`float64[3, 4]`)."""
from __future__ import annotations

import math
import re

import numpy as np

from gradcli.errors import GradcliError, Source
from gradcli.io.files import load_file, max_dims, too_large
from gradcli.language import syntax as ast
from gradcli.language.lower import _Lowering
from gradcli.ir import ShapeOnly
from gradcli.language.lower.values import Literal, Scope
from gradcli.language.parser import normalise, parse_value as parse
from gradcli.limits import default_memory_limit


def split_assignment(text: str, option: str) -> tuple[str, str]:
    name, eq, value = text.partition("=")
    name = name.strip()
    if not eq or not name:
        raise GradcliError(f"{option} expects NAME=VALUE, got '{text}'")
    if not name.replace("_", "a").isalnum() or name[0].isdigit():
        raise GradcliError(f"{option} {text}: '{name}' is not a valid name")
    return name, value.strip()


# `float64[3, 4]`, `float32[]`: a dtype and a shape, no values (no literal of the language reads so)
_SHAPE_ONLY = re.compile(r"(float64|float32)\s*\[\s*(\d+(?:\s*,\s*\d+)*)?\s*,?\s*\]")


def parse_value(text: str, label: str, max_bytes: int | None = None) -> np.ndarray | ShapeOnly:
    """A VALUE as an array, or a ShapeOnly without values for `float64[3, 4]`; `label` (e.g. `--set x`) names
    it in errors. Reading it never allocates an array larger than `max_bytes` (default:
    limits.default_memory_limit())."""
    if text.startswith("@"):
        return load_file(text[1:], label, max_bytes)
    shaped = _SHAPE_ONLY.fullmatch(text.strip())
    if shaped is not None:
        shape = tuple(int(d) for d in (shaped.group(2) or "").replace(" ", "").split(",") if d)
        if len(shape) > max_dims():
            raise GradcliError(f"{label}: {len(shape)} dimensions; arrays have at most {max_dims()} (as in NumPy)")
        if math.prod(shape) > np.iinfo(np.intp).max:
            raise GradcliError(f"{label}: {math.prod(shape):.3g} elements, more than any array can hold")
        return ShapeOnly(shape, shaped.group(1), later=False)
    return literal(text, label, default_memory_limit() if max_bytes is None else max_bytes)


def literal(text: str, label: str, max_bytes: int) -> np.ndarray:
    """A literal of the language, read by the program's own parser whatever its length, so
    `[1, 2]`, `-inf`, `nan`, `pi`, `True` and `np.array([1, 2])` mean what they mean in a program."""
    if not text.strip():
        raise GradcliError(f"{label}: the value is empty")
    source = Source(label, normalise(text))
    node = parse(source)
    # Before lowering: numbers that overflow and arrays deeper than NumPy allows (no recursion).
    deepest = None  # (asked of NumPy at the first list: a number needs no NumPy)
    work = [(node, 0)]
    while work:
        item, depth = work.pop()
        if isinstance(item, ast.Number) and math.isinf(item.value):
            raise GradcliError("number too large for float64", item.pos, source)
        if isinstance(item, ast.Array):
            depth += 1
            deepest = max_dims() if deepest is None else deepest
            if depth > deepest:
                raise GradcliError(f"lists nested deeper than {deepest} levels (NumPy's limit on dimensions)",
                                   item.pos, source)
        work.extend((kid, depth) for kid in reversed(ast.children(item)))
    value = _Lowering(ast.Module([]), source, {}).lower(node, Scope(None))
    if not isinstance(value, Literal):
        raise GradcliError(f"{label}: the value must be a literal, such as 3, [1, 2] or [[1, 0], [0, 1]] "
                           "(or @file.npy)")
    if type(value.value) is float:  # a number of the numbers-only attempt (gradcli.ops.scalar)
        return value.value
    if value.value.nbytes > max_bytes:
        raise too_large(label, f"a {value.value.shape} array", value.value.nbytes, max_bytes)
    return value.value
