"""The mode `jacobian` and `hessian` chose (forward where the --wrt inputs have fewer elements
than Y, else reverse; reverse over reverse for a Hessian, whose gradient map is square) is said:
in the library's Result, in JSON's `mode`, under the table, and the rule in --help."""
import json
from pathlib import Path

import jsonschema
import numpy as np

from cli_helpers import invoke, strict
from gradcli import api

ROOT = Path(__file__).resolve().parents[2]
VALIDATOR = jsonschema.Draft202012Validator(json.loads((ROOT / "docs" / "gradcli.schema.json").read_text()))
TALL = "t = [1.0, 2.0, 3.0]\ny = sin(a * t) + b * t"          # 2 input elements, 3 output elements
WIDE = "y = [sum(x * x), sum(sin(x))]"                         # 3 input elements, 2 output elements


def test_the_library_result_says_the_mode():
    tall = api.jacobian(TALL, wrt=["a", "b"], feeds={"a": 0.5, "b": 2.0})
    assert tall.mode == "forward"
    t = np.array([1.0, 2.0, 3.0])  # dy/da = t cos(a t), dy/db = t
    np.testing.assert_allclose(tall.jacobians["a"], t * np.cos(0.5 * t), rtol=1e-15)
    np.testing.assert_allclose(tall.jacobians["b"], t, rtol=1e-15)
    assert api.jacobian(WIDE, wrt=["x"], feeds={"x": [1.0, 2.0, 3.0]}).mode == "reverse"
    assert api.hessian("y = sum(x ** 3)", wrt=["x"], feeds={"x": [1.0, 2.0]}).mode == "reverse-over-reverse"
    assert api.evaluate("y = 1.0").mode is None  # only jacobian and hessian choose one


def test_json_has_the_mode_and_follows_the_schema():
    for args, mode in ((["jacobian", "-e", TALL, "--wrt", "a", "--wrt", "b", "--set", "a=0.5", "--set", "b=2"],
                        "forward"),
                       (["jacobian", "-e", WIDE, "--wrt", "x", "--set", "x=[1, 2, 3]"], "reverse"),
                       (["hessian", "-e", "y = sum(x ** 3)", "--wrt", "x", "--set", "x=[1, 2]"],
                        "reverse-over-reverse")):
        r = invoke(*args, "--format", "json")
        assert r.exit_code == 0, r.output
        doc = strict(r.stdout)
        assert doc["mode"] == mode
        assert not list(VALIDATOR.iter_errors(doc))
    # a jacobian document without its mode is not an answer
    doc["command"] = "jacobian"
    doc["jacobians"] = doc.pop("hessians")
    del doc["mode"]
    assert list(VALIDATOR.iter_errors(doc))


def test_the_table_says_the_mode_under_it_and_plain_stays_numbers():
    r = invoke("jacobian", "-e", TALL, "--wrt", "a", "--wrt", "b", "--set", "a=0.5", "--set", "b=2",
               "--format", "table")
    assert r.exit_code == 0 and r.stdout.rstrip().splitlines()[-1].strip() == "forward mode (inputs < outputs)"
    r = invoke("jacobian", "-e", WIDE, "--wrt", "x", "--set", "x=[1, 2, 3]", "--format", "table")
    assert r.stdout.rstrip().splitlines()[-1].strip() == "reverse mode (outputs <= inputs)"
    r = invoke("hessian", "-e", "y = sum(x ** 3)", "--wrt", "x", "--set", "x=[1, 2]", "--format", "table")
    assert r.stdout.rstrip().splitlines()[-1].strip() == "reverse over reverse"
    r = invoke("jacobian", "-e", WIDE, "--wrt", "x", "--set", "x=[1, 2, 3]", "--format", "plain")
    assert r.stdout.splitlines()[0].startswith("x\t2.0 4.0 6.0 ")


def test_help_says_the_rule():
    text = " ".join(invoke("jacobian", "--help").stdout.split())
    assert "Forward mode (one pass per element of the --wrt inputs) where they have fewer elements than Y" in text
    text = " ".join(invoke("hessian", "--help").stdout.split())
    assert "so reverse over reverse" in text
