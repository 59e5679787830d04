"""Rendering results, diagnostics and errors: JSON, plain lines, Rich tables.

The only module that knows Rich; it is imported only when a table is drawn.
"""
from __future__ import annotations

import json
import re

import numpy as np

from .errors import GradcliError, Source, caret_lines

_NONFINITE_TOKEN = re.compile(r"(?<![\w\"])(-?Infinity|NaN)(?![\w\"])")


# --------------------------------------------------------------------------- JSON

def json_value(arr: np.ndarray):
    """A number for a scalar, else nested lists; non-finite numbers as strings."""
    return arr.item() if arr.ndim == 0 else arr.tolist()


# An array of more numbers than this is rendered as text in chunks of this many numbers, not
# through nested lists of Python floats (about 60 bytes a number for JSON, 115 for plain lines,
# against the 24 of its text): the text itself, built once, is then the only large cost.
CHUNK = 1 << 15


class _ArrayText:
    """An array in a JSON document, rendered as text by `dumps` (see `CHUNK`)."""

    __slots__ = ("arr",)

    def __init__(self, arr: np.ndarray):
        self.arr = arr


def tensor_json(arr: np.ndarray | None, dtype: str) -> dict | None:
    if arr is None:
        return None
    value = _ArrayText(arr) if arr.size > CHUNK and arr.dtype.kind == "f" else json_value(arr)
    return {"shape": list(arr.shape), "dtype": dtype, "value": value}


def dumps(doc: dict) -> str:
    """Strict JSON: NaN and infinities become the strings "NaN", "Infinity", "-Infinity"."""
    arrays: list[np.ndarray] = []
    marker = "\x00array:"

    def later(obj):
        if isinstance(obj, _ArrayText):
            arrays.append(obj.arr)
            return f"{marker}{len(arrays) - 1}"
        raise TypeError(f"{type(obj).__name__} is not JSON")

    text = json.dumps(doc, allow_nan=True, separators=(", ", ": "), default=later)
    if "NaN" in text or "Infinity" in text:
        text = _requote(text)
    if not arrays:
        return text
    pieces = re.split(r'"\\u0000array:([0-9]+)"', text)  # text, index, text, index, ..., text
    for k in range(1, len(pieces), 2):
        pieces[k] = array_json_text(arrays[int(pieces[k])])
    return "".join(pieces)


def _requote(text: str) -> str:
    # bare NaN/Infinity tokens only occur outside strings; strings are left untouched
    out, pos = [], 0
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"', text):
        out.append(_NONFINITE_TOKEN.sub(r'"\1"', text[pos:m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(_NONFINITE_TOKEN.sub(r'"\1"', text[pos:]))
    return "".join(out)


_JSON_NONFINITE = {"nan": '"NaN"', "inf": '"Infinity"', "-inf": '"-Infinity"'}


def _number_texts(chunk: np.ndarray, json_strings: bool) -> list[str]:
    texts = list(map(repr, chunk.tolist()))
    if json_strings and not np.isfinite(chunk).all():
        texts = [_JSON_NONFINITE.get(t, t) for t in texts]
    return texts


def array_json_text(arr: np.ndarray) -> str:
    """`json.dumps(arr.tolist())` with strict non-finite numbers, built chunk by chunk."""
    if arr.ndim == 0 or arr.size == 0:
        return dumps({"v": json_value(arr)})[6:-1]
    n, ndim = arr.size, arr.ndim
    strides = [int(np.prod(arr.shape[k:])) for k in range(1, ndim)]  # numbers per sub-array
    separators = ["]" * c + ", " + "[" * c for c in range(ndim)]  # after a number that ends c of them
    chunks = ["[" * ndim]
    for start in range(0, n, CHUNK):
        stop = min(n, start + CHUNK)
        ends = np.zeros(stop - start, dtype=np.intp)
        after = np.arange(start + 1, stop + 1)
        for stride in strides:
            ends += after % stride == 0
        texts = _number_texts(arr.flat[start:stop], True)
        seps = [separators[c] for c in ends.tolist()]
        if stop == n:
            seps[-1] = ""
        chunks.append("".join([x for pair in zip(texts, seps) for x in pair]))
    chunks.append("]" * ndim)
    return "".join(chunks)


def result_json(result, *, with_gradients: bool) -> dict:
    doc = {"outputs": {k: tensor_json(v, result.dtype) for k, v in result.outputs.items()}}
    if with_gradients:
        doc["gradients"] = {k: tensor_json(v, result.dtype) for k, v in result.gradients.items()}
    doc["diagnostics"] = [d.to_json() for d in result.diagnostics]
    return doc


def error_json(err: GradcliError) -> dict:
    out = {"message": err.message}
    if err.pos is not None:
        out.update(line=err.pos.line, column=err.pos.column)
    return {"error": out}


# --------------------------------------------------------------------------- plain

def plain_line(name: str, arr: np.ndarray | None) -> str:
    if arr is None:
        return f"{name}\t"  # unconnected gradient: the name, no numbers
    arr = np.asarray(arr, dtype=np.float64)
    if arr.size <= CHUNK:
        return f"{name}\t" + " ".join(map(repr, arr.ravel().tolist()))
    return f"{name}\t" + " ".join([" ".join(_number_texts(arr.flat[start:start + CHUNK], False))
                                   for start in range(0, arr.size, CHUNK)])


def plain_lines(result, *, with_gradients: bool) -> list[str]:
    shown = result.gradients if with_gradients else result.outputs  # grad prints its gradients
    return [plain_line(k, v) for k, v in shown.items()]


# --------------------------------------------------------------------------- diagnostics, compiler-style

def diagnostic_text(diag, source: Source | None) -> str:
    where = f"{source.name}:{diag.pos.line}:{diag.pos.column}: " if source and diag.pos else (
        f"{source.name}: " if source else "")
    lines = [f"{where}{diag.severity}: {diag.message} [{diag.kind}]"]
    if source is not None and diag.pos is not None:
        lines += ["    " + ln for ln in caret_lines(source, diag.pos)]
    if diag.also:
        lines.append("    the same computation also stands at " + ", ".join(str(p) for p in diag.also))
    for call in reversed(diag.stack):
        lines.append(f"    called from line {call.line}, column {call.column}")
    if diag.reaches:
        lines.append(f"    reaches: {', '.join(diag.reaches)}")
    if diag.suggestion:
        lines.append(f"    suggestion: {diag.suggestion}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- tables

def _summary(arr: np.ndarray | None) -> str:
    if arr is None:
        return "null (unconnected)"
    if arr.size <= 64:
        return np.array2string(arr, precision=8, separator=", ", max_line_width=100)
    return (np.array2string(arr, precision=6, separator=", ", threshold=20, edgeitems=3, max_line_width=100)
            + f"\nmin {np.nanmin(arr):.6g}  max {np.nanmax(arr):.6g}")


def on_terminal(renderable) -> str:
    """A Rich table or tree as text for standard output, sized and coloured for it when it is
    a terminal; written by the caller in one piece (Rich itself never touches the output)."""
    import io
    import sys

    from rich.console import Console

    terminal = sys.stdout is not None and sys.stdout.isatty()
    console = Console(file=io.StringIO(), force_terminal=True if terminal else None)
    console.print(renderable)
    return console.file.getvalue()


def _cells(*cells: str):
    """Table cells that are data, never markup: `[nan, 1.]` is shown as it is."""
    from rich.text import Text
    return [Text(cell) for cell in cells]


def table(result, *, with_gradients: bool):
    """The Rich table of outputs (and gradients)."""
    from rich.table import Table

    shown = Table(show_header=True, header_style="bold")
    shown.add_column("name")
    shown.add_column("shape")
    shown.add_column("value")
    for name, arr in result.outputs.items():
        shown.add_row(*_cells(name, str(tuple(arr.shape)), _summary(arr)))
    if with_gradients:
        for name, arr in result.gradients.items():
            shape = str(tuple(arr.shape)) if arr is not None else ""
            shown.add_row(*_cells(f"∂/∂{name}", shape, _summary(arr)))
    return shown


# --------------------------------------------------------------------------- check, jacobian, hessian

def insight_json(command: str, result) -> dict:
    if command == "check":
        doc = {"check": {k: r.to_json() for k, r in result.reports.items()}}
    else:
        key = "jacobians" if command == "jacobian" else "hessians"
        blocks = result.jacobians if command == "jacobian" else result.hessians
        doc = {"outputs": {k: tensor_json(v, result.dtype) for k, v in result.outputs.items()},
               key: {k: tensor_json(v, result.dtype) for k, v in blocks.items()}}
    doc["diagnostics"] = [d.to_json() for d in result.diagnostics]
    return doc


def insight_lines(command: str, result) -> list[str]:
    if command == "check":
        return [f"{k}\t{'passed' if r.passed else 'FAILED'}\t{r.max_abs_error:.3g}\t{r.max_rel_error:.3g}"
                + (f"\t{r.reason}" if r.reason else "") for k, r in result.reports.items()]
    blocks = result.jacobians if command == "jacobian" else result.hessians
    return [plain_line(k, v) for k, v in blocks.items()]


def insight_table(command: str, result):
    """The Rich table of `check`, `jacobian` or `hessian`."""
    from rich.table import Table
    from rich.text import Text

    if command == "check":
        shown = Table("input", "max abs error", "max rel error", "compared", "result", header_style="bold")
        for k, r in result.reports.items():
            verdict = Text("passed", style="green") if r.passed else Text("FAILED", style="bold red")
            shown.add_row(*_cells(k, f"{r.max_abs_error:.3g}", f"{r.max_rel_error:.3g}", r.method), verdict)
        reasons = [f"{k}: {r.reason}" for k, r in result.reports.items() if r.reason]
        if reasons:
            shown.caption = Text("\n".join(reasons))
    else:
        blocks = result.jacobians if command == "jacobian" else result.hessians
        shown = Table("", "shape", "value", header_style="bold")
        symbol = "∂" if command == "jacobian" else "∂²"
        of = next(iter(result.outputs), "y")
        for k, v in blocks.items():
            shown.add_row(*_cells(f"{symbol}{of}/∂{k}{'²' if command == 'hessian' else ''}",
                                  str(tuple(v.shape)) if v is not None else "", _summary(v)))
    return shown


# --------------------------------------------------------------------------- the graph

def _node_label(view, i: int) -> tuple[str, str, str]:
    """(operation, where, details) of a node."""
    g = view.graph
    eq = g.equations[i]
    name = g.value_names.get(i)
    op = eq.op.name if eq.op.name in ("input", "const") else eq.label
    if eq.op.name == "input":
        op = f"input {eq.params['name']}"
    elif eq.op.name == "const":
        op = "constant"
    elif name:
        op = f"{name} = {op}"
    where = f"{eq.pos.line}:{eq.pos.column}" if eq.pos else ""
    details = f"{tuple(g.shapes[i])} {_brief(view.values[i])}"
    if i in view.gradients:
        details += f"  ∂ {_brief(view.gradients[i])}"
    return op, where, details


def _brief(arr: np.ndarray) -> str:
    if arr.size <= 6:
        return np.array2string(np.asarray(arr), precision=4, separator=", ", max_line_width=10**6)
    with np.errstate(all="ignore"):
        return f"min {np.nanmin(arr):.4g} max {np.nanmax(arr):.4g}"


def graph_dot(view) -> str:
    """Graphviz DOT: one box per equation, edges from inputs to their consumer;
    stop_gradient edges dashed, nodes with non-finite values red."""
    g = view.graph
    lines = ["digraph gradcli {", "  rankdir=BT;", '  node [shape=box, fontname="monospace"];']
    for i in view.nodes:
        op, where, details = _node_label(view, i)
        label = "\\n".join(p for p in (op, where, details) if p).replace('"', '\\"')
        style = ', color=red, fontcolor=red' if i in view.nonfinite else ""
        lines.append(f'  n{i} [label="{label}"{style}];')
    for i in view.nodes:
        eq = g.equations[i]
        dashed = " [style=dashed]" if eq.op.name == "stop_gradient" else ""
        for j in dict.fromkeys(eq.inputs):
            lines.append(f"  n{j} -> n{i}{dashed};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def graph_tree(view, max_depth: int = 200):
    """The graph as a Rich tree from the output down to the inputs; a node shared by several
    consumers is expanded once and referred to after. Built without recursion; labels are
    Text, never markup."""
    from rich.text import Text
    from rich.tree import Tree

    def label(i):
        op, where, details = _node_label(view, i)
        colour = "red" if i in view.nonfinite else "bold"
        dashed = " (stop_gradient: no gradient passes)" if view.graph.equations[i].op.name == "stop_gradient" else ""
        return Text.assemble((op, colour), " ", (where, "dim"), f" {details}{dashed}")

    root = Tree(label(view.root))
    shown = {view.root}
    stack = [(view.root, root, 0)]
    while stack:
        i, branch, depth = stack.pop()
        inputs = list(dict.fromkeys(view.graph.equations[i].inputs))
        children = []
        for j in inputs:
            if j in shown:
                children.append((j, branch.add(Text(f"↑ {_node_label(view, j)[0]} (shown above)", style="dim")), None))
            elif depth >= max_depth:
                children.append((j, branch.add(Text("… (deeper nodes not shown)", style="dim")), None))
            else:
                shown.add(j)
                children.append((j, branch.add(label(j)), depth + 1))
        stack.extend((j, node, d) for j, node, d in reversed(children) if d is not None)
    return root


# --------------------------------------------------------------------------- fix

def applied_fix_text(applied, source) -> str:
    """`FILE:L:C: fixed: replaced 'old' with 'new'` (what `gradcli fix` changed, and why)."""
    diag, fix = applied
    line, column = fix.to_json(source.text)["start"]
    return (f"{source.name}:{line}:{column}: fixed [{diag.kind}]: replaced "
            f"{source.text[fix.start:fix.end]!r} with {fix.replacement!r} ({diag.message})")


def fixed_program(fixed, name: str, diff: bool) -> str:
    if not diff:
        return fixed.text
    import difflib

    return "".join(difflib.unified_diff(fixed.original.splitlines(keepends=True), fixed.text.splitlines(keepends=True),
                                        fromfile=name, tofile=f"{name} (fixed)"))
