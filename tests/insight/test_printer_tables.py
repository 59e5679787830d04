"""The printer's own table of ops (gradcli/insight/printer.py) names only operators that exist,
and what it prints parses back to the same numbers."""
import numpy as np

from gradcli import api
from gradcli.insight.printer import OPPOSITES
from gradcli.language.parser import BINARY_OPS
from gradcli.ops import OPS


def test_every_opposite_is_an_operator_beside_an_operator():
    assert OPPOSITES
    for name, opposite in OPPOSITES.items():
        assert name in OPS and opposite in OPS, (name, opposite)
        assert OPS[name].symbol is not None and OPS[opposite].symbol is not None, (name, opposite)
        assert BINARY_OPS[OPS[name].symbol] == name and BINARY_OPS[OPS[opposite].symbol] == opposite
        assert OPPOSITES[opposite] == name  # a pair: each is the other with its right operand negated


def test_a_sum_with_a_negated_right_operand_prints_as_its_opposite():
    program = api.derive("y = x + cos(x)", wrt="x")
    assert program.splitlines()[-1] == "dy_dx = 1.0 - sin(x)"  # not 1.0 + -sin(x)
    x = 0.7
    value = api.evaluate(program, feeds={"x": np.float64(x)}, fixes=False).outputs["dy_dx"]
    np.testing.assert_allclose(value, 1.0 - np.sin(x), rtol=1e-15)
