"""The official autodiff tutorials' snippets run as written, giving the values the libraries printed.

Each file in tutorial_snippets/ holds a snippet's code as the guide wrote it (its `source` and
`adapted` fields say where from and what changed) and what each `print` (or, for a notebook,
each bare expression shown) printed when it ran with the real library: TensorFlow 2.21.0,
JAX 0.10.2, PyTorch 2.13.0, autograd 1.9.1 (each file's `versions`). The libraries computed in
float32, so values are compared at float32's tolerance; gradcli computes in float64. A printed
tuple of values of different shapes (a value and its gradient) is compared item by item
(snippet_compare.py).
"""
from __future__ import annotations

import json
import pathlib

import pytest

from gradcli import api
from snippet_compare import expected_by_expression, mismatches

SNIPPETS = sorted((pathlib.Path(__file__).parent / "tutorial_snippets").glob("*.json"))


@pytest.mark.parametrize("path", SNIPPETS, ids=[p.stem for p in SNIPPETS])
def test_a_tutorial_snippet_prints_what_the_library_printed(path):
    record = json.loads(path.read_text())
    assert record["versions"][{"pytorch": "torch", "tensorflow": "tensorflow-cpu"}.get(
        record["library"], record["library"])]
    assert expected_by_expression(record), "a snippet with nothing to compare"
    outputs = api.evaluate(record["code"], fixes=False).outputs
    assert mismatches(record, outputs) == []


def test_the_snippets_cover_both_libraries():
    libraries = [json.loads(p.read_text())["library"] for p in SNIPPETS]
    assert libraries.count("tensorflow") >= 20 and libraries.count("jax") >= 15
