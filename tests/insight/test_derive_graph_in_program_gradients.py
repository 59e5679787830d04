"""`derive` and `graph` of programs that take gradients themselves (tf.gradients, tapes,
jax.grad): derive binds each gradient a call returned to its name, with the call and its place
as a comment, and what it prints parses back and evaluates to the gradient `grad` gives; graph
labels the nodes of an in-program gradient with the call that took them (text and JSON)."""
import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from cli_helpers import invoke, strict
from gradcli import api

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
VALIDATOR = jsonschema.Draft202012Validator(json.loads((ROOT / "docs" / "gradcli.schema.json").read_text()))
JAX_PROGRAM = "import jax\nimport jax.numpy as jnp\nx = 0.7\ng = jax.grad(lambda v: jnp.sin(v) * v ** 2)(x)\ny = g * x\n"
NESTED_TAPES = ("import tensorflow as tf\nx = tf.constant(2.0)\nwith tf.GradientTape() as outer:\n"
                "    outer.watch(x)\n    with tf.GradientTape() as inner:\n        inner.watch(x)\n"
                "        y = x ** 3\n    dy = inner.gradient(y, x)\nd2y = outer.gradient(dy, x)\nz = d2y * dy\n")


def test_derive_binds_the_gradient_a_call_returned_with_the_call():
    text = api.derive(JAX_PROGRAM, wrt="x")
    (line,) = [ln for ln in text.splitlines() if ln.startswith("g = ")]
    assert line.endswith("  # jax.grad at 4:5")
    assert text.splitlines()[-1].startswith("dy_dx = g + ")
    text = api.derive(NESTED_TAPES, wrt="x")
    assert "dy = 3.0 * x ** 2.0  # inner.gradient at 8:10" in text.splitlines()
    assert any(ln.startswith("d2y = ") and ln.endswith("  # outer.gradient at 9:7") for ln in text.splitlines())


@pytest.mark.parametrize("program,of,wrt,feeds", [
    (JAX_PROGRAM, None, "x", {}),
    (NESTED_TAPES, None, "x", {}),
    ((SAMPLES / "fgsm.expr").read_text(), "train_loss", "w", {}),
    ((SAMPLES / "em_gradient.expr").read_text(), "mu", "mu0", {}),
    ((SAMPLES / "contrastive_divergence_gradient.expr").read_text(), "loss", "W", {}),
], ids=["jax.grad", "nested tapes", "fgsm", "em", "contrastive divergence"])
def test_what_derive_prints_parses_back_to_the_same_gradient(program, of, wrt, feeds):
    derived = api.derivation(program, wrt=wrt, of=[of] if of else None, feeds=feeds)
    again = api.evaluate(derived.program).outputs[derived.name]
    want = api.grad(program, wrt=[wrt], of=[of] if of else None, feeds=feeds).gradients[wrt]
    np.testing.assert_allclose(again, want, rtol=1e-13, atol=1e-15)


def test_derive_of_the_second_derivative_is_the_analytic_one():
    # z = f''(x) f'(x) for f = x^3: 6x * 3x^2 = 18 x^3, dz/dx = 54 x^2 = 216 at 2
    derived = api.derivation(NESTED_TAPES, wrt="x")
    assert api.evaluate(derived.program).outputs[derived.name] == 216.0
    # in the EM sample the gradients of the three iterations are bound apart, each with the call
    text = api.derive((SAMPLES / "em_gradient.expr").read_text(), wrt="mu0", of=["mu"])
    calls = [ln.split(" = ")[0] for ln in text.splitlines() if ln.endswith("  # tf.gradients at 17:9")]
    assert calls == ["grad_1", "grad_2", "grad_3"][:len(calls)] and len(calls) >= 2


def test_graph_labels_an_in_program_gradient_s_nodes_with_its_call():
    r = invoke("graph", "-e", JAX_PROGRAM, "--format", "plain")
    assert r.exit_code == 0, r.output
    rows = {line.split("\t")[0]: line.split("\t") for line in r.stdout.splitlines()}
    assert rows["n11"][1:3] == ["g = sin (gradient by jax.grad at 4:5)", "4:24"]
    assert rows["n12"][1] == "y = *" and rows["n2"][1] == "sin"  # the program's own equations as before
    r = invoke("graph", "-e", JAX_PROGRAM, "--format", "json")
    doc = strict(r.stdout)
    assert not list(VALIDATOR.iter_errors(doc))
    nodes = {n["id"]: n for n in doc["graph"]["nodes"]}
    assert nodes["n11"]["taken_by"] == {"call": "jax.grad", "line": 4, "column": 5}
    assert "taken_by" not in nodes["n12"] and "taken_by" not in nodes["n2"]
    r = invoke("graph", "-e", JAX_PROGRAM, "--format", "dot")
    assert 'n11 [label="g = sin (gradient by jax.grad at 4:5)\\n4:24' in r.stdout


def test_grad_on_top_keeps_the_calls():
    # the command's own gradient (a second derivative here) forks the graph: the calls stay known
    graph = api.Program(JAX_PROGRAM).graph_view("y", ["x"]).graph
    assert {by for by, _ in graph.made_by.values()} == {"jax.grad"}
    r = api.grad("import tensorflow as tf\nx = tf.constant([0.0, 1.0])\ny = tf.math.log(x)\n"
                 "g = tf.gradients(tf.reduce_sum(y), x)[0]\nz = tf.reduce_sum(g * x)\n", wrt=["x"], of=["z"], fixes=False)
    assert any(d.taken_by == {"call": "tf.gradients", "line": 4, "column": 5} for d in r.diagnostics)
