"""AST -> a straight-line program of equations (a `gradcli.ir.Graph`).

Lowering walks the AST with an explicit work stack: no recursion over the nesting depth, and
user functions are expanded where they are called, with recursion detected and rejected. Its
parts, one module each: `interpret` (statements, scopes, user functions, the work stack, inputs),
`calls` (which op a call means, and binding its arguments to the op's signature), `subscripts`
(indexing), `fold` (constants: the one place the lowering runs the engine), `values` (what the
lowering holds before a value is in the graph).
"""
from __future__ import annotations

from gradcli.errors import Source
from gradcli.language import syntax as ast
from gradcli.language.lower.calls import Binding, Resolution
from gradcli.language.lower.fold import Constants
from gradcli.language.lower.interpret import Interpreter
from gradcli.language.lower.subscripts import Subscripts
from gradcli.ir import Graph

MAX_LOWERING_STEPS = 1_000_000           # expansion steps of a short program (seconds of work)
LOWERING_STEPS_PER_CHARACTER = 8         # ... and more for a longer text (a 50 MB program)


class _Lowering(Interpreter, Resolution, Binding, Subscripts, Constants):
    """One program's lowering: its parts' methods on one object, which holds the graph being built."""

    def __init__(self, module: ast.Module, source: Source, feeds: dict, call: ast.Node | None = None,
                 symbols: bool = False):
        super().__init__(module, source, feeds, call, symbols, MAX_LOWERING_STEPS, LOWERING_STEPS_PER_CHARACTER)


def lower(module: ast.Module, source: Source, feeds: dict | None = None, call: ast.Node | None = None,
          symbols: bool = False) -> Graph:
    """The program as a graph, with `feeds` (name -> array) as its input values; `call` (an
    assignment or expression statement) is run after the program, e.g. `f(a, b)`. With
    `symbols`, an input that has no value is a scalar without one (nothing is evaluated)."""
    return _Lowering(module, source, dict(feeds or {}), call, symbols).run()
