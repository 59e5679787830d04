"""The official autodiff tutorials' snippets run as written, giving the values the libraries printed.

Each file in tutorial_snippets/ holds a snippet's code as the guide wrote it (its `source` and
`adapted` fields say where from and what changed) and what each `print` (or, for a notebook,
each bare expression shown) printed when it ran with the real library: TensorFlow 2.21.0,
JAX 0.10.2, PyTorch 2.13.0, autograd 1.9.1 (each file's `versions`). Those in refused/ are
snippets the library raised in: gradcli refuses them at the same line, naming the library's
exception, after printing what the library printed before it raised. The libraries computed in
float32, so values are compared at float32's tolerance; gradcli computes in float64.
"""
from __future__ import annotations

import json
import pathlib

import pytest

from gradcli import api
from snippet_compare import COMPARED_KINDS, mismatches, refusal_mismatches

HERE = pathlib.Path(__file__).parent / "tutorial_snippets"
SNIPPETS = sorted(HERE.glob("*.json"))
REFUSED = sorted((HERE / "refused").glob("*.json"))  # the library raised: its `error` says what and where


def expected_values(record: dict) -> list[dict]:
    """The entries that are numbers (or None): values printed or shown, not labels or text."""
    return [p for p in record["prints"]
            if p.get("kind") in COMPARED_KINDS]


@pytest.mark.parametrize("path", SNIPPETS, ids=[p.stem for p in SNIPPETS])
def test_a_tutorial_snippet_prints_what_the_library_printed(path):
    record = json.loads(path.read_text())
    assert record["versions"][{"pytorch": "torch", "tensorflow": "tensorflow-cpu"}.get(
        record["library"], record["library"])]
    wanted = expected_values(record)
    assert wanted, "a snippet with nothing to compare"
    outputs = api.evaluate(record["code"], fixes=False).outputs
    # an expression printed twice (before and after a change) is compared at its last print:
    # gradcli's outputs are keyed by the printed text
    assert mismatches(record, outputs) == []


@pytest.mark.parametrize("path", REFUSED, ids=[p.stem for p in REFUSED])
def test_a_snippet_the_library_raised_in_is_refused_at_its_line_after_the_same_prints(path):
    record = json.loads(path.read_text())
    assert record["error"] and record["error"]["line"]
    assert refusal_mismatches(record, lambda code: api.evaluate(code, fixes=False).outputs) == []


def test_the_snippets_cover_both_libraries():
    libraries = [json.loads(p.read_text())["library"] for p in SNIPPETS]
    assert libraries.count("tensorflow") >= 20 and libraries.count("jax") >= 15
