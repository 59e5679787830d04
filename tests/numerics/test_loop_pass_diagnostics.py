"""A diagnostic inside an unrolled loop says in which pass the value went wrong (`in pass 4 of the
loop at line 2 (epoch = 3)`; JSON: a `called_from` frame with `pass` and `binding`), in the
forward values and in the gradient, for `for` and `while` loops, through a function's call."""
import json
import subprocess
import sys

import numpy as np

from gradcli import api

OVERFLOW = "w = 0.5\nfor epoch in range(10):\n    w = exp(w) + w\nprint(w)\n"


def test_the_pass_where_a_training_loop_s_value_overflows_is_named():
    # w: 0.5, 2.149, 10.73, 45380.8 (after epoch 2), then exp(45380.8) overflows in epoch 3
    d = api.evaluate(OVERFLOW).diagnostics
    assert [x.kind for x in d] == ["overflow"] and "reaches 45380.8" in d[0].message
    (frame,) = d[0].stack
    assert (frame.line, frame.column, frame.number, frame.binding) == (2, 1, 4, "epoch = 3")
    assert d[0].to_json()["called_from"] == [{"line": 2, "column": 1, "pass": 4, "binding": "epoch = 3"}]


def test_the_plain_report_names_the_pass_and_the_json_report_carries_it():
    proc = subprocess.run([sys.executable, "-m", "gradcli", "eval", "-"], input=OVERFLOW, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and "    in pass 4 of the loop at line 2 (epoch = 3)\n" in proc.stderr, proc.stderr


def test_a_while_loop_s_pass_stands_outside_the_call_it_makes():
    program = ("def f(v):\n    return log(v)\nx = 3.0\nk = 0\nwhile k < 5:\n    x = x - 1.0\n    k = k + 1\n"
               "    y = f(x)\nprint(y)\n")
    (d,) = api.evaluate(program).diagnostics
    assert d.kind == "invalid" and d.to_json()["called_from"] == [{"line": 5, "column": 1, "pass": 5},
                                                                 {"line": 8, "column": 9}]


def test_a_gradient_that_goes_wrong_in_a_pass_names_it():
    # at x = 2, relu(x - k) is 0 for k = 2 (its kink) and k = 3: sqrt's slope there is infinite
    program = "y = 0.0\nfor k in range(4):\n    y = y + sqrt(relu(x - k))\n"
    result = api.grad(program, wrt=["x"], feeds={"x": np.float64(2.0)})
    found = sorted((d.kind, d.stack[0].number, d.stack[0].binding) for d in result.diagnostics)
    assert found == [("kink", 3, "k = 2"), ("nonfinite_gradient", 3, "k = 2"), ("nonfinite_gradient", 4, "k = 3")]


def test_loops_leave_no_frame_on_what_follows_them():
    program = "x = 1.0\nfor i in range(3):\n    x = x * 2\ny = log(x - 9)\n"
    (d,) = api.evaluate(program).diagnostics
    assert d.kind == "invalid" and d.stack == () and "called_from" not in json.dumps(d.to_json())


def test_a_lax_loop_s_pass_is_named_inside_the_body_it_calls():
    program = ("from jax import lax\nimport jax.numpy as jnp\ndef body(i, w):\n    return jnp.exp(w) + w\n"
               "y = lax.fori_loop(2, 12, body, 0.5)\nprint(y)\n")
    (d,) = api.evaluate(program).diagnostics
    assert d.kind == "overflow" and (d.pos.line, d.pos.column) == (4, 12)
    assert d.to_json()["called_from"] == [{"line": 5, "column": 5, "pass": 4, "binding": "i = 5"},
                                          {"line": 5, "column": 5}]
