"""The files made from the code, for maintainers (not part of the package): the command
reference docs/commands.md, from each command's --help; the kept `gradcli --help`,
gradcli/cli/help.txt; the op reference docs/ops.md and the op tables' index
gradcli/ops/_names.json, from the op records.

    python tools/gen.py > docs/commands.md
    python tools/gen.py --help-text > gradcli/cli/help.txt
    python tools/gen.py --ops > docs/ops.md
    python tools/gen.py --ops-index > gradcli/ops/_names.json

It reads the gradcli of the checkout it lives in. A test fails when a file in the repository is
not what this prints (as cog keeps sqlite-utils' documentation true), so nothing made from the
code drifts from it.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the checkout, whose gradcli this reads
sys.path.insert(0, str(ROOT))

WIDTH = 100  # help is wrapped at this width whatever the terminal, so the file is the same everywhere


def _help(command, name: str, parent=None, width: int = WIDTH) -> str:
    settings = {**(command.context_settings or {}), "terminal_width": width, "max_content_width": width}
    ctx = command.context_class(command, info_name=name, parent=parent, **settings)
    return command.get_help(ctx), ctx


def command_reference() -> str:
    """docs/commands.md: `gradcli --help`, then each command's --help, in the order of `gradcli --help`."""
    import typer.main

    from gradcli.cli import app

    group = typer.main.get_command(app)
    text, ctx = _help(group, "gradcli")
    parts = ["# gradcli command reference", "",
             "Made by `python tools/gen.py > docs/commands.md` from each command's `--help`; a test fails",
             "when it is out of date. The contract behind these commands (language, JSON schema, exit codes)",
             "is in [contract.md](contract.md), the JSON schema in [gradcli.schema.json](gradcli.schema.json).",
             "", "## gradcli", "", "```", text.rstrip(), "```"]
    for name in group.list_commands(ctx):
        sub = group.get_command(ctx, name)
        text, _ = _help(sub, name, ctx)
        parts += ["", f"## gradcli {name}", "", "```", text.rstrip(), "```"]
    return "\n".join(parts) + "\n"


HELP_WIDTH = 78  # what click wraps `gradcli --help` at on any terminal of 80 columns or more


def help_text() -> str:
    """gradcli/cli/help.txt: what `gradcli --help` prints, so that the command answers it without
    importing Typer (gradcli.cli); a test fails when it is not what the Typer app prints.

        python tools/gen.py --help-text > gradcli/cli/help.txt
    """
    import typer.main

    from gradcli.cli import app

    text, _ = _help(typer.main.get_command(app), "gradcli", width=HELP_WIDTH)
    return text + "\n"


_OWNERS = """
import importlib, json, sys
from gradcli import ops
from gradcli.ops import table
table._families_started.update(ops.FAMILIES)  # imported here one by one, in order, whatever the index says
table._index = {"OPS": {}, "CALLABLE": {}}  # (the kept index is not read: it is what this makes)
tables = ("OPS", "CALLABLE")
owners = {t: {name: "ops" for name in dict.keys(getattr(ops, t))} for t in tables}
for family in ops.FAMILIES:
    before = {t: dict(dict.items(getattr(ops, t))) for t in tables}
    importlib.import_module("gradcli.ops." + family)
    for t in tables:
        after = dict(dict.items(getattr(ops, t)))
        for name, op in before[t].items():
            if after.get(name) is not op:
                sys.exit(f"{family} changes or removes {t}[{name!r}]: the tables cannot import it lazily")
        for name in after.keys() - before[t].keys():
            owners[t][name] = family
        if t == "OPS":
            for name in after.keys() - before[t].keys():
                if after[name].symbol is not None:
                    sys.exit(f"{family}: {name} has a symbol; operators belong to the core (gradcli/ops/core.py)")
print(json.dumps([[t, [[name, owners[t][name]] for name in dict.keys(getattr(ops, t))]] for t in tables]))
"""


def ops_index() -> str:
    """gradcli/ops/_names.json: which module registers each name of the op tables (gradcli.ops
    imports a family when one of its names is first looked up); a test fails when it is out of
    date. Found in a fresh process, importing the families one by one.

        python tools/gen.py --ops-index > gradcli/ops/_names.json
    """
    import json
    import subprocess

    done = subprocess.run([sys.executable, "-c", _OWNERS], capture_output=True, text=True, check=False, cwd=ROOT)
    if done.returncode:
        raise SystemExit(done.stderr)
    index = {table: dict(owners) for table, owners in json.loads(done.stdout)}
    return json.dumps(index, indent=1) + "\n"


# The op families in table order, each with its heading in docs/ops.md; a family is named by its
# module in gradcli/ops/ (the core, gradcli.ops itself, is "ops").
OP_FAMILIES = {
    "ops": "Operators, elementwise basics, reductions and shapes (the core)",
    "elementwise": "Elementwise functions",
    "reduce": "Reductions, scans, sorting and statistics",
    "norms": "Norms, differences, integrals and grouped reductions",
    "array": "Joining, splitting, reshaping and reordering",
    "selection": "Selection, padding, diagonals and triangles",
    "creation": "Constructors and floating-point parts",
    "linalg": "Products and einsum",
    "solves": "Inverses, solves and decompositions",
    "nn": "Neural-network functions and losses",
    "convolution": "Convolution",
    "objectives": "Losses per sample and distributions",
    "scatter": "Writes by index",
    "factor": "Factorizations",
    "losses": "More norms and losses",
    "composed": "Library functions composed of the table's ops",
}


def _op_family(name: str) -> str:
    from gradcli.ops import table

    return table._names()["OPS"].get(name, "ops")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _op_arrays(op) -> str:
    """The array arguments as a call takes them: named, a list per sequence, or any number."""
    if op.variadic:
        return ", ".join(["[a, b, ...]"] * op.sequence) if op.sequence else "a, b, ..."
    return ", ".join(op.args)


def _op_operator(op) -> str:
    """How the op's operator writes it: `x + y`, `-x`, `not x`."""
    if len(op.args) == 1:
        return f"{op.symbol} {op.args[0]}" if op.symbol.isalpha() else f"{op.symbol}{op.args[0]}"
    return f" {op.symbol} ".join(op.args)


def _op_parameters(op) -> str:
    from gradcli.ops import REQUIRED

    return ", ".join(name if default is REQUIRED else f"{name}={default!r}" for name, default in op.params.items())


def _op_gradient(op) -> str:
    """Which array arguments the op's gradient reaches, as its record says."""
    from gradcli.ops import NO_GRADIENT

    if op.expand is not None:
        return "its expansion's"
    if op.parts is not None:
        return "its parts'"
    if not op.args and not op.variadic:
        return ""
    if op.vjp is None:
        return "no rule"
    if op.variadic:
        return "every array" if op.vjp[0] is not None else "no rule"
    reached, kinds = [], {"none": [], "no rule": []}
    for arg, rule in zip(op.args, op.vjp):
        if rule is NO_GRADIENT:
            kinds["none"].append(arg)
        elif rule is None:
            kinds["no rule"].append(arg)
        else:
            reached.append(arg)
    if not reached and not all(kinds.values()):  # one kind for every argument: said without names
        return "none" if kinds["none"] else "no rule"
    return "; ".join([", ".join(reached)] * bool(reached) +
                     [f"{kind} in {', '.join(args)}" for kind, args in kinds.items() if args])


def ops_reference() -> str:
    """docs/ops.md: every operation a program may call, by family, from the op records (name,
    arguments, parameters with their defaults, the libraries' other names for it, what it computes: the record's
    `doc`, and where its gradient goes).

        python tools/gen.py --ops > docs/ops.md
    """
    from gradcli.language import dialects
    from gradcli.ops import OPS

    public = [op for op in OPS.values() if op.public]
    parts = ["# gradcli operations", "",
             "Made by `python tools/gen.py --ops > docs/ops.md` from the op records; a test fails when it",
             "is out of date. Every operation a program may call, by family: its array arguments, its",
             "parameters (constants written in the program; a name without a default must be given), the",
             "other names it is called by, what it computes (the record's `doc`), and which arguments its",
             "gradient reaches (\"none\": on purpose, as `stop_gradient`; \"no rule\": differentiating through",
             "it is an error). How spellings of other libraries read is in [language.md](language.md).", "",
             f"{len(public)} operations.", ""]
    for family, heading in OP_FAMILIES.items():
        members = sorted((op for op in public if _op_family(op.name) == family), key=lambda op: op.name)
        if not members:
            continue
        parts += [f"## {heading}", "", "| op | arrays | parameters | also | what it computes | gradient in |",
                  "|---|---|---|---|---|---|"]
        for op in members:
            also = [f"`{_op_operator(op)}`"] if getattr(op, "symbol", None) else []
            also += [f"`{name}`" for name in dialects.names_of(op.name)]
            doc = op.doc or ("elementwise" if op.elementwise else "")
            parts.append(f"| `{op.name}` | {_cell(_op_arrays(op))} | {_cell(_op_parameters(op))} | "
                         f"{', '.join(also)} | {_cell(doc)} | {_cell(_op_gradient(op))} |")
        parts.append("")
    missing = [op.name for op in public if _op_family(op.name) not in OP_FAMILIES]
    if missing:
        raise SystemExit(f"ops of no family in OP_FAMILIES: {missing}")
    return "\n".join(parts)


def main() -> None:
    made = {"--help-text": help_text, "--ops-index": ops_index, "--ops": ops_reference}
    sys.stdout.write(made[sys.argv[1]]() if sys.argv[1:2] and sys.argv[1] in made else command_reference())


if __name__ == "__main__":
    main()
