"""The command reference, docs/commands.md, made from each command's --help.

    python -m gradcli.docs > docs/commands.md

A test fails when the file in the repository is not what this prints (as cog keeps
sqlite-utils' documentation true), so the reference never drifts from the commands.
"""
from __future__ import annotations

import sys

WIDTH = 100  # help is wrapped at this width whatever the terminal, so the file is the same everywhere


def _help(command, name: str, parent=None, width: int = WIDTH) -> str:
    settings = {**(command.context_settings or {}), "terminal_width": width, "max_content_width": width}
    ctx = command.context_class(command, info_name=name, parent=parent, **settings)
    return command.get_help(ctx), ctx


def command_reference() -> str:
    """docs/commands.md: `gradcli --help`, then each command's --help, in the order of `gradcli --help`."""
    import typer.main

    from .cli import app

    group = typer.main.get_command(app)
    text, ctx = _help(group, "gradcli")
    parts = ["# gradcli command reference", "",
             "Made by `python -m gradcli.docs > docs/commands.md` from each command's `--help`; a test fails",
             "when it is out of date. The contract behind these commands (language, JSON schema, exit codes)",
             "is in [contract.md](contract.md), the JSON schema in [gradcli.schema.json](gradcli.schema.json).",
             "", "## gradcli", "", "```", text.rstrip(), "```"]
    for name in group.list_commands(ctx):
        sub = group.get_command(ctx, name)
        text, _ = _help(sub, name, ctx)
        parts += ["", f"## gradcli {name}", "", "```", text.rstrip(), "```"]
    return "\n".join(parts) + "\n"


HELP_WIDTH = 78  # what click wraps `gradcli --help` at on any terminal of 80 columns or more


def help_module() -> str:
    """gradcli/_help.py: what `gradcli --help` prints, so that it is answered without importing
    Typer (gradcli/__init__.py); a test fails when it is not what the Typer app prints.

        python -m gradcli.docs --help-module > gradcli/_help.py
    """
    import typer.main

    from .cli import app

    text, _ = _help(typer.main.get_command(app), "gradcli", width=HELP_WIDTH)
    return ('"""What `gradcli --help` prints on a terminal of 80 columns or more (or not a terminal).\n\n'
            "Made from the Typer app by `python -m gradcli.docs --help-module > gradcli/_help.py`; a test\n"
            'fails when it is out of date."""\n'
            "TEXT = (\n" + "".join(f"    {line!r}\n" for line in (text + "\n").splitlines(keepends=True)) + ")\n")


def main() -> None:
    sys.stdout.write(help_module() if sys.argv[1:] == ["--help-module"] else command_reference())


if __name__ == "__main__":
    main()
