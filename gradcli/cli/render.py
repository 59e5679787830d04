"""Rendering results, diagnostics and errors: JSON, plain lines, Rich tables, plots.

The only module that knows Rich, plotext and Matplotlib (each imported only when it draws).
Each command has one `View` here (EVAL, GRAD, CHECK, JACOBIAN, HESSIAN, DERIVE, GRAPH, and
`fix_view(diff)`): its own part of the JSON document, its plain lines and its table;
`document` gives every command's JSON the same top level (`command`, `outputs`, the command's
own results, `diagnostics`; docs/gradcli.schema.json).
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable

import numpy as np

from gradcli.errors import GradcliError, Source, caret_lines
from gradcli.records import NEW, Record

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
    if type(arr) is float:  # a number of the numbers-only attempt (gradcli.ops.scalar): as a 0-d float64 array
        return {"shape": [], "dtype": dtype, "value": arr}
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


def tensors_json(arrays: dict, dtype: str) -> dict:
    return {k: tensor_json(v, dtype) for k, v in arrays.items()}


_JSON_NONFINITE = {"nan": '"NaN"', "inf": '"Infinity"', "-inf": '"-Infinity"'}


def _number_texts(chunk: np.ndarray, json_strings: bool) -> list[str]:
    texts = list(map(repr, chunk.tolist()))
    if json_strings and not np.isfinite(chunk).all():
        texts = [_JSON_NONFINITE.get(t, t) for t in texts]
    return texts


def array_json_text(arr: np.ndarray) -> str:
    """`json.dumps(arr.tolist())` with strict non-finite numbers, built chunk by chunk (an array
    of more than `CHUNK` numbers)."""
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


def error_json(err: GradcliError) -> dict:
    out = {"message": err.message}
    if err.pos is not None:
        out.update(line=err.pos.line, column=err.pos.column)
    return {"error": out}


# --------------------------------------------------------------------------- plain

def plain_line(name: str, arr: np.ndarray | None, none: str = "") -> str:
    if arr is None:
        # an unconnected gradient: the name, no numbers; a printed None is `None`, as Python prints it
        return f"{name}\t{none}"
    if type(arr) is float:  # a number of the numbers-only attempt (gradcli.ops.scalar): as a 0-d float64 array
        return f"{name}\t{arr!r}"
    arr = np.asarray(arr, dtype=np.float64)
    if arr.size <= CHUNK:
        return f"{name}\t" + " ".join(map(repr, arr.ravel().tolist()))
    return f"{name}\t" + " ".join([" ".join(_number_texts(arr.flat[start:start + CHUNK], False))
                                   for start in range(0, arr.size, CHUNK)])


PRINTED_NONE = "None"  # an output that is None (a program printed an unconnected gradient)


def plain_lines(result, *, with_gradients: bool) -> list[str]:
    if with_gradients:  # grad prints its gradients
        return [plain_line(k, v) for k, v in result.gradients.items()]
    return [plain_line(k, v, PRINTED_NONE) for k, v in result.outputs.items()]


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
        number = getattr(call, "number", None)  # (a loop's pass: errors.LoopPass)
        lines.append(f"    called from line {call.line}, column {call.column}" if number is None else
                     f"    in pass {number} of the loop at line {call.line}" + (f" ({call.binding})" if call.binding else ""))
    if diag.reaches:
        lines.append(f"    reaches: {', '.join(diag.reaches)}")
    if diag.suggestion:
        lines.append(f"    suggestion: {diag.suggestion}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- tables

def _summary(arr: np.ndarray | None, width: int = 100) -> str:
    """An array as a table cell at most `width` characters wide, as NumPy prints it. A row of a
    matrix is never split over lines: where the rows do not fit, columns (and rows) are elided
    the way NumPy elides them (`...`), and the shape, min and max are added. Up to 64 numbers
    are shown whole with 8 decimals; a vector wraps as NumPy wraps it."""
    if arr is None:
        return "null (unconnected)"
    small = arr.size <= 64
    precision = 8 if small else 6
    if arr.ndim < 2:
        text = np.array2string(arr, precision=precision, separator=", ", max_line_width=max(width, 20),
                               threshold=64 if small else 20, edgeitems=3)
        return text if small else text + "\n" + _range(arr)
    for edge in ([None, 3, 2, 1] if small else [3, 2, 1]):
        text = np.array2string(arr, precision=precision, separator=", ", max_line_width=10**9,
                               threshold=64 if edge is None else 0, edgeitems=edge or 3)
        if max(map(len, text.splitlines())) <= width:
            break
    if edge is None:
        return text
    return text + "\n" + _range(arr)


def _range(arr: np.ndarray) -> str:
    with np.errstate(all="ignore"):
        low, high = (np.nanmin(arr), np.nanmax(arr)) if arr.size and not np.isnan(arr).all() else (np.nan, np.nan)
    return f"shape {tuple(arr.shape)}  min {low:.6g}  max {high:.6g}"


def terminal_width() -> int:
    """The terminal's width ($COLUMNS first; 80 where there is no terminal)."""
    import shutil
    return shutil.get_terminal_size((80, 24)).columns


def on_terminal(renderable) -> str:
    """A Rich table or tree as text for standard output, sized and coloured for it when it is
    a terminal; written by the caller in one piece (Rich itself never touches the output)."""
    import io
    import sys

    from rich.console import Console
    from rich.text import Text

    terminal = sys.stdout is not None and sys.stdout.isatty()
    console = Console(file=io.StringIO(), force_terminal=True if terminal else None, width=terminal_width())
    console.print(renderable, soft_wrap=isinstance(renderable, Text))  # a program's lines as written
    return console.file.getvalue()


def _cells(*cells: str):
    """Table cells that are data, never markup: `[nan, 1.]` is shown as it is."""
    from rich.text import Text
    return [Text(cell) for cell in cells]


def array_table(rows: list[tuple[str, np.ndarray | None]], first: str = "name", width: int | None = None):
    """A Rich table of named arrays: name, shape and value, the values summarised to the room
    the terminal's width leaves them (`width`, default the terminal's)."""
    from rich.table import Table

    width = terminal_width() if width is None else width
    shapes = [str(tuple(arr.shape)) if isinstance(arr, np.ndarray) else "" for _, arr in rows]
    # borders and padding: 3 per column and 1; the first two columns as wide as their widest cell
    used = max([len(first)] + [len(n) for n, _ in rows]) + max([5] + list(map(len, shapes))) + 10
    room = max(width - used, 24)
    shown = Table(show_header=True, header_style="bold")
    shown.add_column(first)
    shown.add_column("shape")
    shown.add_column("value", no_wrap=True, overflow="ellipsis")
    for (name, arr), shape in zip(rows, shapes):
        shown.add_row(*_cells(name, shape, arr if isinstance(arr, str) else _summary(arr, room)))
    return shown


def table(result, *, with_gradients: bool):
    """The Rich table of outputs (and gradients)."""
    rows = [(name, PRINTED_NONE if arr is None else arr) for name, arr in result.outputs.items()]
    if with_gradients:
        rows += [(f"∂/∂{name}", arr) for name, arr in result.gradients.items()]
    return array_table(rows)


# --------------------------------------------------------------------------- check, jacobian, hessian

def check_json(result) -> dict:
    return {"check": {k: r.to_json() for k, r in result.reports.items()}}


def check_lines(result) -> list[str]:
    return [f"{k}\t{'passed' if r.passed else 'FAILED'}\t{r.max_abs_error:.3g}\t{r.max_rel_error:.3g}"
            + (f"\t{r.reason}" if r.reason else "") for k, r in result.reports.items()]


def check_table(result):
    from rich.table import Table
    from rich.text import Text

    shown = Table("input", "max abs error", "max rel error", "compared", "result", header_style="bold")
    for k, r in result.reports.items():
        verdict = Text("passed", style="green") if r.passed else Text("FAILED", style="bold red")
        shown.add_row(*_cells(k, f"{r.max_abs_error:.3g}", f"{r.max_rel_error:.3g}", r.method), verdict)
    reasons = [f"{k}: {r.reason}" for k, r in result.reports.items() if r.reason]
    if reasons:
        shown.caption = Text("\n".join(reasons))
    return shown


def precision_json(result) -> dict:
    scale = getattr(result, "loss_scale", None)  # (with a loss scale, float32 master gradients)
    doc = {"gradients": tensors_json(result.gradients, result.dtype if scale is None else scale.master),
           "precision": result.precision.to_json()}
    if scale is not None:
        doc["loss_scale"] = scale.to_json()
    return doc


def _error_text(value) -> str:
    return "-" if value is None else ("inf" if value == np.inf else f"{value:.3g}")


def precision_lines(result) -> list[str]:
    """One line per operation, worst first: LINE:COL, OP, then its value's error (its own, and
    carried), its gradient's (its rule's own, and carried), and the remedy."""
    return ["\t".join([f"{op.pos.line}:{op.pos.column}" if op.pos else "-", op.label,
                       *map(_error_text, (op.value_own, op.value_error, op.gradient_own, op.gradient_error)),
                       op.remedy or ""]) for op in result.precision.ops]


def precision_table(result):
    """The errors, worst first; the remedies under the table, each by its operation's place."""
    from rich.table import Table
    from rich.text import Text

    report = result.precision
    shown = Table("operation", "at", "value: own", "carried", "gradient: own", "carried", header_style="bold")
    for op in report.ops:
        shown.add_row(*_cells(op.label, f"{op.pos.line}:{op.pos.column}" if op.pos else "",
                              *map(_error_text, (op.value_own, op.value_error, op.gradient_own, op.gradient_error))))
    said = [f"relative errors in {report.dtype} against float64, worst first (own: what the operation adds; "
            f"carried: with all before it); {report.dtype}'s unit roundoff is {report.unit_roundoff:.3g}"
            + (f"; loss scale {report.scale:g}" if report.scale != 1 else "")]
    said += [f"{op.label} at {op.pos.line}:{op.pos.column}: {op.remedy}" if op.pos else f"{op.label}: {op.remedy}"
             for op in report.ops if op.remedy]
    shown.caption = Text("\n".join(said))
    return shown


# How jacobian and hessian computed their blocks (gradcli.insight.jacobians' rule, in --help), under the table
MODE_TEXT = {"forward": "forward mode (inputs < outputs)", "reverse": "reverse mode (outputs <= inputs)",
             "forward-over-reverse": "forward over reverse", "reverse-over-reverse": "reverse over reverse"}


def mode_caption(shown, mode: str | None):
    """The table with the computing mode as its caption."""
    from rich.text import Text

    if mode is not None:
        shown.caption = Text(MODE_TEXT.get(mode, mode))
    return shown


def jacobian_json(result) -> dict:
    return {"jacobians": tensors_json(result.jacobians, result.dtype), "mode": result.mode}


def jacobian_lines(result) -> list[str]:
    return [plain_line(k, v) for k, v in result.jacobians.items()]


def jacobian_table(result):
    of = next(iter(result.outputs), "y")
    return mode_caption(array_table([(f"∂{of}/∂{k}", v) for k, v in result.jacobians.items()], first=""), result.mode)


def hessian_json(result) -> dict:
    doc = {"hessians": tensors_json(result.hessians, result.dtype)}
    if result.mixed_hessians:
        doc["mixed_hessians"] = {a: tensors_json(row, result.dtype) for a, row in result.mixed_hessians.items()}
    doc["mode"] = result.mode
    return doc


def hessian_lines(result) -> list[str]:
    """An input's own block named X, then the mixed blocks named X,Z."""
    return [plain_line(k, v) for k, v in result.hessians.items()] + [
        plain_line(f"{a},{b}", v) for a, row in result.mixed_hessians.items() for b, v in row.items()]


def hessian_table(result):
    of = next(iter(result.outputs), "y")
    rows = [(f"∂²{of}/∂{k}²", v) for k, v in result.hessians.items()]
    rows += [(f"∂²{of}/∂{a}∂{b}", v) for a, row in result.mixed_hessians.items() for b, v in row.items()]
    return mode_caption(array_table(rows, first=""), result.mode)


# --------------------------------------------------------------------------- derive

def derive_json(derived) -> dict:
    return {"derivative": {"of": derived.of, "wrt": derived.wrt, "name": derived.name, "program": derived.program}}


def derive_lines(derived) -> list[str]:
    return derived.program.rstrip("\n").split("\n")


def derive_table(derived):
    return _program_text(derived.program)


def _program_text(program: str):
    """A program as the table format shows it: as written, never wrapped."""
    from rich.text import Text
    return Text(program.rstrip("\n"), no_wrap=True, overflow="ignore")


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
    taken = _taken_by(g, i)
    if taken is not None:  # an equation of a gradient the program takes itself: the call that took it
        by, at = taken
        op += f" ({'gradient' if eq.backward is not None else 'derivative'} by {by}{f' at {at}' if at else ''})"
    where = f"{eq.pos.line}:{eq.pos.column}" if eq.pos else ""
    details = f"{tuple(g.shapes[i])} {_brief(view.values[i])}"
    if i in view.gradients:
        details += f"  ∂ {_brief(view.gradients[i])}"
    return op, where, details


def _taken_by(graph, i: int):
    """(the call as spelled, its Pos) of the in-program gradient that made equation i (Graph.made_by), or None."""
    return graph.made_by.get(i) if graph.made_by else None


def _brief(arr: np.ndarray | None) -> str:
    if arr is None:  # computed from an input given a shape but no values
        return "(no values)"
    if arr.size <= 6:
        return np.array2string(np.asarray(arr), precision=4, separator=", ", max_line_width=10**6)
    with np.errstate(all="ignore"):
        return f"min {np.nanmin(arr):.4g} max {np.nanmax(arr):.4g}"


def graph_outputs(view) -> dict:
    return {view.graph.value_names.get(view.root, "_"): view.values[view.root]}


def graph_json(view) -> dict:
    """The nodes (each operation the output needs: its value, and with --wrt its gradient) and
    the edges from each node's inputs to it."""
    g = view.graph
    nodes = []
    for i in view.nodes:
        eq = g.equations[i]
        op, where, _ = _node_label(view, i)
        nodes.append({"id": f"n{i}", "op": eq.op.name, "label": op, "name": g.value_names.get(i),
                      "line": eq.pos.line if eq.pos else None, "column": eq.pos.column if eq.pos else None,
                      "value": tensor_json(view.values[i], "float64"),
                      "gradient": tensor_json(view.gradients.get(i), "float64"),
                      "finite": i not in view.nonfinite})
        taken = _taken_by(g, i)
        if taken is not None:
            by, at = taken
            nodes[-1]["taken_by"] = {"call": by, "line": at.line if at else None, "column": at.column if at else None}
    edges = [{"from": f"n{j}", "to": f"n{i}", "stop_gradient": g.equations[i].op.stops_gradient}
             for i in view.nodes for j in dict.fromkeys(g.equations[i].inputs)]
    return {"graph": {"root": f"n{view.root}", "nodes": nodes, "edges": edges}}


def graph_lines(view) -> list[str]:
    """One line per node, output first: `ID<TAB>OPERATION<TAB>LINE:COL<TAB>INPUTS<TAB>values`,
    and `<TAB>gradient values` with --wrt (INPUTS: the ids of its inputs, by commas)."""
    g = view.graph
    out = []
    for i in sorted(view.nodes, reverse=True):
        op, where, _ = _node_label(view, i)
        inputs = ",".join(f"n{j}" for j in dict.fromkeys(g.equations[i].inputs))
        line = "\t".join([f"n{i}", op, where, inputs, plain_line("", view.values[i])[1:]])
        if i in view.gradients:
            line += "\t" + plain_line("", view.gradients[i])[1:]
        out.append(line)
    return out


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
        dashed = " [style=dashed]" if eq.op.stops_gradient else ""
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
        dashed = " (stop_gradient: no gradient passes)" if view.graph.equations[i].op.stops_gradient else ""
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


def not_fixed_text(pair, source) -> str:
    """`FILE:L:C: not fixed [kind]: why` (a diagnostic `gradcli fix` found no proven fix for)."""
    diag, why = pair
    where = f"{diag.pos.line}:{diag.pos.column}: " if diag.pos else " "
    guards = "".join(f"; {g['replacement']!r} would be {g['guard']}, not a fix: {g['reason']}" for g in diag.guards_json)
    return f"{source.name}:{where}not fixed [{diag.kind}]: {why}{guards} ({diag.message})"


def fix_json(fixed) -> dict:
    """The fixed program, each fix applied (where, what, and the diagnostic it answers), what
    is still not finite, and why each diagnostic left unfixed is; the diagnostics are those of
    the fixed program."""
    text = fixed.graph.source.text
    applied = [{**fix.to_json(text), "kind": diag.kind, "message": diag.message} for diag, fix in fixed.applied]
    not_fixed = [{"line": d.pos.line if d.pos else None, "column": d.pos.column if d.pos else None, "kind": d.kind,
                  "message": d.message, "reason": why, "guards": d.guards_json} for d, why in fixed.not_fixed]
    return {"fixed": {"program": fixed.text, "applied": applied, "not_finite": fixed.nonfinite,
                      "not_fixed": not_fixed}}


def fix_view(diff: bool) -> View:
    """`fix` shows its program (or with `diff` a unified diff) and says each fix on stderr."""
    def shown(fixed) -> str:
        return fixed_program(fixed, fixed.graph.source.name, diff)

    return View("fix", fix_json, lambda r: shown(r).rstrip("\n").split("\n") if shown(r) else [],
                lambda r: _program_text(shown(r)),
                passed=lambda r: not r.nonfinite, multiline=True,
                notes=lambda r: [applied_fix_text(a, r.graph.source) for a in r.applied]
                + [not_fixed_text(p, r.graph.source) for p in r.not_fixed])


def on_raw(raw: str, normal: str, fixes: list) -> str:
    """The fixes (placed in `normal`, the program as gradcli.language.parser.normalise made it:
    no BOM, `\\n` line ends, one final newline) applied to `raw`, the text as given: its line
    ends and its last line kept, so that a diff of the two is a patch of the file itself."""
    from gradcli.numerics.fixes import Fix, apply_all  # only `gradcli fix` writes a program

    if "\r" not in raw and not raw.startswith("\ufeff"):
        return apply_all(raw, fixes)  # the same offsets: normalise only trimmed the end
    wanted = sorted({at for f in fixes for at in (f.start, f.end)})
    where: dict[int, int] = {}
    i = 1 if raw.startswith("\ufeff") else 0
    j, k = 0, 0
    while k < len(wanted) and j < len(normal) and i < len(raw):
        if wanted[k] == j:
            where[j] = i
            k += 1
            continue
        i += 2 if raw.startswith("\r\n", i) else 1
        j += 1
    for at in wanted[k:]:
        where[at] = i if at == j else len(raw)
    moved = [Fix(where[f.start], where[f.end], f.replacement) for f in fixes]
    return apply_all(raw, moved)


def fixed_program(fixed, name: str, diff: bool) -> str:
    """The fixed program as given (its line ends, and no last newline where it had none), or
    with `diff` a unified diff of the file that `patch` applies."""
    if fixed.raw is None or name == "<expr>":  # (-e PROGRAM is no file to patch: its text as read)
        before, after = fixed.original, fixed.text
    else:
        before = fixed.raw
        after = on_raw(before, fixed.original, [f for _, f in fixed.applied])
    if not diff:
        return after
    return patch_text(before, after, name)


def patch_text(before: str, after: str, name: str) -> str:
    """A unified diff of two texts, line ends as they are (a CRLF file gets CRLF lines) and a
    last line without a newline marked as `patch` wants it."""
    import difflib

    def lines(text: str) -> list[str]:
        parts = text.split("\n")
        return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])

    diff = difflib.unified_diff(lines(before), lines(after), fromfile=name, tofile=f"{name} (fixed)")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff)


# --------------------------------------------------------------------------- one view per command

class View(Record):
    """How one command's result is shown. `own`: the command's own keys of its JSON document;
    `lines`: its plain lines (`multiline`: they make one answer that `--lines` cannot give as
    one line); `table`: the Rich renderable; `outputs`: the values it reports; `passed`: False
    where the command's verdict is exit 1 (a failed check); `formats`: the command's own formats,
    {name: result -> text}; `notes`: said on stderr before the diagnostics. (A plain class,
    gradcli/records.py: `dataclasses` is not imported at start-up.)"""

    __slots__ = _fields = ("command", "own", "lines", "table", "outputs", "passed", "multiline", "formats", "notes")
    command: str
    own: Callable[[object], dict]
    lines: Callable[[object], list[str]]
    table: Callable[[object], object]
    outputs: Callable[[object], dict]
    passed: Callable[[object], bool]
    multiline: bool
    formats: dict
    notes: Callable[[object], list[str]]

    def __init__(self, command, own, lines, table, outputs=lambda result: result.outputs, passed=lambda result: True,
                 multiline=False, formats=NEW, notes=lambda result: []):
        self.command, self.own, self.lines, self.table = command, own, lines, table
        self.outputs, self.passed, self.multiline = outputs, passed, multiline
        self.formats = {} if formats is NEW else formats
        self.notes = notes


def document(view: View, result, line: int | None = None) -> dict:
    """The command's JSON document (with `line`, the answer to that input line of --lines)."""
    doc: dict = {"command": view.command}
    if line is not None:
        doc["line"] = line
    doc["outputs"] = tensors_json(view.outputs(result), getattr(result, "dtype", "float64"))
    doc.update(view.own(result))
    doc["diagnostics"] = [d.to_json() for d in result.diagnostics]
    return doc


def error_document(view: View, err: GradcliError, line: int | None = None) -> dict:
    doc: dict = {"command": view.command}
    if line is not None:
        doc["line"] = line
    return doc | error_json(err)


EVAL = View("eval", lambda r: {}, lambda r: plain_lines(r, with_gradients=False),
            lambda r: table(r, with_gradients=False))
GRAD = View("grad", lambda r: {"gradients": tensors_json(r.gradients, r.dtype)},
            lambda r: plain_lines(r, with_gradients=True), lambda r: table(r, with_gradients=True))
# grad --loss-scale: the gradients are float32 (float64 in a float64 run), divided back, the scale explained
GRAD_SCALED = View("grad", lambda r: {"gradients": tensors_json(r.gradients, r.loss_scale.master),
                                      "loss_scale": r.loss_scale.to_json()},
                   lambda r: plain_lines(r, with_gradients=True), lambda r: table(r, with_gradients=True),
                   notes=lambda r: ["gradcli: " + line for line in r.loss_scale.lines()])
CHECK = View("check", check_json, check_lines, check_table, passed=lambda r: r.passed)
CHECK_PRECISION = View("check", precision_json, precision_lines, precision_table, multiline=True,
                       passed=lambda r: not r.precision.broken,
                       notes=lambda r: ["gradcli: " + line for line in r.loss_scale.lines()] if getattr(
                           r, "loss_scale", None) is not None else [])
JACOBIAN = View("jacobian", jacobian_json, jacobian_lines, jacobian_table)
HESSIAN = View("hessian", hessian_json, hessian_lines, hessian_table)
DERIVE = View("derive", derive_json, derive_lines, derive_table, multiline=True)
GRAPH = View("graph", graph_json, graph_lines, graph_tree, outputs=graph_outputs, formats={"dot": graph_dot})


# --------------------------------------------------------------------------- arrays written with --out

def saved_json(saved) -> dict:
    """What `--out` wrote (gradcli.io.outputs.Saved), without the numbers themselves."""
    arrays = {name: {"shape": list(a.shape), "dtype": a.dtype, "min": a.min, "max": a.max, "finite": a.finite,
                     "where": a.where} for name, a in saved.arrays.items()}
    return {"saved": {"path": saved.path, "format": saved.format, "bytes": saved.bytes, "arrays": arrays,
                      "not_written": list(saved.not_written)}}


def saved_document(view: View, result, saved) -> dict:
    """The command's JSON document when its arrays went to a file: `saved` in place of the
    numbers (`outputs` and the command's own arrays)."""
    return {"command": view.command, **saved_json(saved), "diagnostics": [d.to_json() for d in result.diagnostics]}


def _extreme(value: float | None) -> str:
    return "nan" if value is None else repr(value)


def saved_lines(saved) -> list[str]:
    """One line per array written: NAME<TAB>SHAPE<TAB>DTYPE<TAB>MIN<TAB>MAX<TAB>WHERE (min and max
    ignore NaN; nan where there is no number)."""
    return [f"{name}\t{a.shape}\t{a.dtype}\t{_extreme(a.min)}\t{_extreme(a.max)}\t{a.where}"
            for name, a in saved.arrays.items()]


def saved_table(saved):
    from rich.table import Table
    from rich.text import Text

    shown = Table("name", "shape", "dtype", "min", "max", "finite", "written to", header_style="bold")
    for name, a in saved.arrays.items():
        low, high = (f"{v:.6g}" if v is not None else "nan" for v in (a.min, a.max))
        shown.add_row(*_cells(name, str(a.shape), a.dtype, low, high, "yes" if a.finite else "no", a.where))
    caption = f"wrote {saved.path} ({saved.format}, {saved.bytes:,} bytes)"
    if saved.not_written:
        caption += f"; not written (unconnected): {', '.join(saved.not_written)}"
    shown.caption = Text(caption)
    return shown


def saved_notes(saved) -> list[str]:
    """Said on stderr beside the summary: the arrays that were not written, and why."""
    return [f"gradcli: --out: {name} not written: no gradient (unconnected; --unconnected zero writes zeros)"
            for name in saved.not_written]
