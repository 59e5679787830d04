"""Test helpers for the command line in-process: run it, and read its JSON strictly."""
from __future__ import annotations

import json

from typer.testing import CliRunner

from gradcli.cli import app


def invoke(*args, stdin=None):
    """The command's result (exit code, output); never a traceback."""
    result = CliRunner().invoke(app, [str(a) for a in args], input=stdin)
    assert "Traceback" not in result.output, result.output
    return result


def strict(text):
    """JSON as the contract writes it: a bare NaN or Infinity (not JSON) fails the test."""
    def reject(token):
        raise AssertionError(f"bare {token} in JSON")
    return json.loads(text, parse_constant=reject)
