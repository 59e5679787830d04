"""AST -> a straight-line program of equations (a `gradcli.ir.Graph`).

Lowering walks the AST with an explicit work stack: no recursion over the nesting depth, and
user functions are expanded where they are called, with recursion detected and rejected. Its
parts, one module each: `interpret` (statements, scopes, user functions, the work stack, inputs),
`calls` (which op a call means, and binding its arguments to the op's signature), `subscripts`
(indexing), `fold` (constants: the one place the lowering runs the engine), `values` (what the
lowering holds before a value is in the graph).
"""
from __future__ import annotations

import contextlib
import contextvars

from gradcli.errors import GradcliError, Source
from gradcli.language import syntax as ast
from gradcli.language.lower.autocast import AutocastRegions
from gradcli.language.lower.calls import Binding, Resolution
from gradcli.language.lower.flow import Flow
from gradcli.language.lower.fold import Constants
from gradcli.language.lower.function_values import FunctionValues
from gradcli.language.lower.settings import LibrarySettings
from gradcli.language.lower.optimizers import KerasOptimizers, OptaxOptimizers, TorchOptimizers
from gradcli.language.lower.interpret import Interpreter
from gradcli.language.lower.lists import ListMethods
from gradcli.language.lower.python_operators import PythonArguments, PythonOperators
from gradcli.language.lower.random_draws import RandomDraws
from gradcli.language.lower.gradient_calls import GradientCalls
from gradcli.language.lower.statements import Statements
from gradcli.language.lower.subscripts import Subscripts
from gradcli.language.lower.torch_autograd import TorchAutograd, TorchFunctional
from gradcli.language.lower.torch_layers import TorchLayers
from gradcli.language.lower.custom_gradients import CustomGradients
from gradcli.language.lower.values import NumberPolicy
from gradcli.ir import Graph

__all__ = ["lower", "NumberPolicy", "numbers_read_by", "MAX_LOWERING_STEPS", "LOWERING_STEPS_PER_CHARACTER"]

MAX_LOWERING_STEPS = 1_000_000           # expansion steps of a short program (seconds of work)
LOWERING_STEPS_PER_CHARACTER = 8         # ... and more for a longer text (a 50 MB program)


class _Lowering(TorchLayers, RandomDraws, PythonArguments, Interpreter, Statements, Flow, GradientCalls, TorchAutograd, TorchFunctional, CustomGradients, Resolution,
                Binding, Subscripts, Constants, AutocastRegions, FunctionValues,
                LibrarySettings, TorchOptimizers, OptaxOptimizers, KerasOptimizers, ListMethods, PythonOperators):
    """One program's lowering: its parts' methods on one object, which holds the graph being built."""

    def __init__(self, module: ast.Module, source: Source, feeds: dict, call: ast.Node | None = None,
                 symbols: bool = False, numbers: NumberPolicy | None = None):
        super().__init__(module, source, feeds, call, symbols, MAX_LOWERING_STEPS, LOWERING_STEPS_PER_CHARACTER,
                         numbers)
        # (the parts' state read at every call, on the instance: a class's default is read slowly)
        self.pasted, self.autocasts, self._torch_state = False, (), None


# the policy of the programs lowered inside `numbers_read_by` (None: the plain reading)
_NUMBERS: contextvars.ContextVar = contextvars.ContextVar("numbers", default=None)


@contextlib.contextmanager
def numbers_read_by(numbers: NumberPolicy):
    """Every program lowered inside the block (without a `numbers` of its own) reads its numbers
    through `numbers`: for a caller whose programs are lowered by the library API (gradcli.api)."""
    token = _NUMBERS.set(numbers)
    try:
        yield numbers
    finally:
        _NUMBERS.reset(token)


def lower(module: ast.Module, source: Source, feeds: dict | None = None, call: ast.Node | None = None,
          symbols: bool = False, numbers: NumberPolicy | None = None) -> Graph:
    """The program as a graph, with `feeds` (name -> array) as its input values; `call` (an
    assignment or expression statement) is run after the program, e.g. `f(a, b)`. With
    `symbols`, an input that has no value is a scalar without one (nothing is evaluated).
    `numbers` says how its number literals become values and is told of its constants as the
    graph is built and differentiated (None: as `numbers_read_by` says, else the plain reading)."""
    if numbers is None:
        numbers = _NUMBERS.get()
    lowering = _Lowering(module, source, dict(feeds or {}), call, symbols, numbers)
    try:
        return lowering.run()
    except (TypeError, ValueError, IndexError, KeyError) as exc:
        # after a missing input the lowering goes on, with unknown shapes, to find the others: a
        # rule that met an unknown shape (an in-program gradient, a transform) fails on it, and
        # the user's error is the missing input
        if lowering.missing and not isinstance(exc, GradcliError):
            raise lowering.missing_inputs_error() from None
        raise
