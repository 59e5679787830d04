"""The libraries' gradient-API idioms around the gradient calls themselves: pytrees of parameters
(JAX), custom rules in their several spellings, gradcheck, what each library says of integer and
NumPy-computed values, and the keys under which printed values come out. Expected numbers were
printed by TensorFlow 2.21.0 (tensorflow-cpu), JAX 0.10.2, PyTorch 2.13.0 (cpu) and autograd
1.9.1, in float32 unless a test says otherwise: compared at float32's tolerance."""
from __future__ import annotations

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

F32 = dict(rtol=2e-6, atol=1e-6)


def outputs(program: str) -> dict:
    return api.evaluate(program, fixes=False).outputs


def refusal(program: str) -> GradcliError:
    with pytest.raises(GradcliError) as info:
        api.evaluate(program, fixes=False)
    return info.value


# --------------------------------------------------------------------------- printed keys
def test_a_printed_expression_that_starts_with_a_bracket_is_keyed_as_written():
    out = outputs("import torch\nx = torch.tensor(2.0, requires_grad=True)\n"
                  "print((x ** 2).requires_grad)\nprint((x + 1) * 2, [x, 3.0][0])\n(x - 1) / 2\n")
    # PyTorch 2.13.0 printed True, then tensor(6., grad_fn=...) and tensor(2., ...); 0.5 shown
    assert list(out) == ["(x ** 2).requires_grad", "(x + 1) * 2", "[x, 3.0][0]", "(x - 1) / 2"]
    np.testing.assert_allclose([out[k] for k in out], [1.0, 6.0, 2.0, 0.5])


def test_brackets_inside_strings_do_not_widen_a_printed_key():
    out = outputs("x = 2.0\nprint('(', (x + 1) * 2, ')')\n")
    assert list(out) == ["(x + 1) * 2"]
