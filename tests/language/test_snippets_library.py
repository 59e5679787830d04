"""Real code as people paste it, checked against the library it was written for: each file in
tests/snippets_library is a loss, activation, normalization, attention, numerically-stable trick
or physics/statistics formula in the form public NumPy / JAX / PyTorch / TensorFlow / Keras code
writes it (its first comment line says which library, and where the form comes from), run as
written with only its inputs given. expected.json holds, per file, the inputs, and the value and
gradient (of the sum of the outputs) that the library itself computed: PyTorch's autograd and
JAX's grad in float64, NumPy's by float64 central differences, and TensorFlow's (not installed
where they were computed) by JAX on the same formula. They are literals, so this test needs none
of those libraries."""
import json
from pathlib import Path

import numpy as np
import pytest

from gradcli import api

HERE = Path(__file__).parent / "snippets_library"
EXPECTED = json.loads((HERE / "expected.json").read_text())


def test_every_snippet_file_has_its_expected_numbers():
    assert {p.stem for p in HERE.glob("*.py")} == set(EXPECTED)
    assert len(EXPECTED) >= 150
    assert all((HERE / f"{name}.py").read_text().startswith("# ") for name in EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_snippet_agrees_with_its_library(name):
    case = EXPECTED[name]
    feeds = {k: np.asarray(v, dtype=float) for k, v in case["inputs"].items()}
    result = api.grad((HERE / f"{name}.py").read_text(), wrt=case["wrt"], feeds=feeds, name=f"{name}.py")
    (value,) = result.outputs.values()
    np.testing.assert_allclose(value, np.asarray(case["value"]), rtol=1e-9, atol=1e-12)
    by_differences = "differences" in case["reference"]
    for x, expected in case["gradients"].items():
        # (a case's own rtol, with its note, where the library itself is less exact than float64)
        np.testing.assert_allclose(result.gradients[x], np.asarray(expected),
                                   rtol=1e-5 if by_differences else case.get("rtol", 1e-9),
                                   atol=1e-7 if by_differences else 1e-12, err_msg=f"d/d{x}")
