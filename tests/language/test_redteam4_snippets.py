"""A third collection of autodiff code as users paste it, in tutorial_snippets/redteam4/ (the JSON
records of test_tutorial_snippets.py: `code`, `source`, `adapted`, `idiom`, and each printed or
shown value with its line): the JAX Autodiff Cookbook and Advanced autodiff pages, TensorFlow's
'Introduction to gradients' and 'Advanced automatic differentiation' guides, PyTorch's autograd
tutorials, 'Autograd mechanics' and torch.func, autograd's README and tutorial, d2l.ai's automatic
differentiation chapter (its JAX, TensorFlow and PyTorch tabs), Keras' 'Writing a training loop
from scratch', and the libraries' API pages for the functions the gradients go through (ties,
kinks, zeros, integers, losses, linear algebra). Recorded with JAX 0.10.2 (jax_enable_x64),
TensorFlow 2.21.0, Keras 3.15.1, PyTorch 2.13.0+cpu, autograd 1.9.1 and NumPy 2.4.6 (each record's
`versions`); the code computes in float64 where it says so (dtype=..., x64), else the library
computed in float32 and the comparison is at float32's tolerance.

Each snippet gives the library's numbers; where the library raised, gradcli refuses it at that line
naming the library's exception (`JAX: TypeError`); where REFUSED names it, gradcli refuses it with
the reason given (exit 2, at its line): a snippet that gives other numbers than its library is a bug."""
from __future__ import annotations

import json
import pathlib

import pytest

from gradcli import api
from gradcli.errors import GradcliError
from snippet_compare import mismatches, refusal_mismatches

HERE = pathlib.Path(__file__).parent / "tutorial_snippets" / "redteam4"
SNIPPETS = sorted(HERE.glob("*.json"))

# what gradcli leaves out, by snippet: (the line refused, words of the reason)
REFUSED = {
    # .at[idx].set with a repeated index: JAX leaves which update wins unspecified
    "jax_r4_21": (11, "set() with a repeated index: JAX leaves which update wins unspecified"),
    # a module with weights of its own draws them at random
    "pytorch_r4_14": (4, "nn.Linear(...) draws its initial weights from PyTorch's generator, which the program never seeded"),
    "tensorflow_r4_02": (3, "unknown function 'tf.constant_initializer'"),
    "tensorflow_r4_10": (6, "unknown function 'keras.Input'"),
    # the variables' names are not numbers
    "tensorflow_r4_24": (8, "GradientTape has no method 'watched_variables'"),
    # Keras 2 and 3 differ on the cross entropy of probabilities (log(p + 1e-7) and log(p))
    "tensorflow_r4_29": (7, "binary_crossentropy(): from probabilities Keras 2 (log(p + 1e-7)) and Keras 3"),
    # TensorFlow's mean of integers is an integer division
    "tensorflow_r4_27": (6, "tf.reduce_mean of an integer tensor is an integer division in TensorFlow"),
}


def evaluate(code: str) -> dict:
    return api.evaluate(code, fixes=False).outputs


@pytest.mark.parametrize("path", SNIPPETS, ids=[p.stem for p in SNIPPETS])
def test_a_pasted_snippet_gives_the_library_s_numbers_or_its_refusal(path):
    record = json.loads(path.read_text())
    assert record["versions"]["numpy"] == "2.4.6"
    if record["name"] in REFUSED:
        line, words = REFUSED[record["name"]]
        with pytest.raises(GradcliError) as caught:
            evaluate(record["code"])
        assert words in str(caught.value) and caught.value.pos.line == line
        return
    if record["error"]:  # the library raised: refused at its line, naming its exception, after the same prints
        assert refusal_mismatches(record, evaluate) == []
        return
    assert any(p["kind"] in ("value", "none", "shape", "sequence", "mapping") for p in record["prints"])
    assert mismatches(record, evaluate(record["code"])) == []


def test_the_collection_spans_the_libraries():
    libraries = [json.loads(p.read_text())["library"] for p in SNIPPETS]
    assert len(SNIPPETS) >= 100
    assert {lib: libraries.count(lib) >= 9 for lib in ("jax", "tensorflow", "pytorch", "autograd")} == \
        {"jax": True, "tensorflow": True, "pytorch": True, "autograd": True}
    assert set(REFUSED) <= {p.stem for p in SNIPPETS}
