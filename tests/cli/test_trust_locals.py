"""The local values of a pasted `def` can be named wherever a command names a value: `--print
loss.probs` (function.local), or plain `probs` where it is unique among the functions' locals;
an ambiguous name lists the qualified ones, a function called twice is refused, a misspelt one
gets a did-you-mean. A local is an intermediate: `--of` differentiates it, `--wrt` gives the
gradient at it, as for a top-level intermediate."""
import subprocess
import sys

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

SOFTMAX_LOSS = """import numpy as np

def loss(w, x, t):
    z = x @ w
    probs = np.exp(z) / np.sum(np.exp(z))
    return -np.sum(t * np.log(probs))
"""
W, X, T = np.array([0.5, -0.25]), np.array([[1.0, 2.0], [0.5, -1.0], [2.0, 0.0]]), np.array([0.0, 1.0, 0.0])
FEEDS = {"w": W, "x": X, "t": T}


def _softmax():
    z = X @ W
    return z, np.exp(z - z.max()) / np.exp(z - z.max()).sum()


def test_print_a_local_by_its_qualified_name_and_by_its_own_where_unique():
    z, probs = _softmax()
    out = api.evaluate(SOFTMAX_LOSS, feeds=FEEDS, prints=["loss.probs", "z", "loss"]).outputs
    np.testing.assert_allclose(out["loss.probs"], probs, rtol=1e-15)
    np.testing.assert_array_equal(out["z"], z)
    np.testing.assert_allclose(out["loss"], -np.log(probs[1]), rtol=1e-15)


def test_a_local_is_an_intermediate_for_of_and_wrt():
    z, probs = _softmax()
    # softmax sums to 1: its sum does not change with w
    by_w = api.grad(SOFTMAX_LOSS, feeds=FEEDS, of=["loss.probs"], wrt=["w"]).gradients["w"]
    np.testing.assert_allclose(by_w, [0.0, 0.0], atol=1e-15)
    at = api.grad(SOFTMAX_LOSS, feeds=FEEDS, wrt=["loss.z", "probs"]).gradients
    np.testing.assert_allclose(at["loss.z"], probs - T, rtol=1e-13)  # d cross-entropy / d logits
    np.testing.assert_allclose(at["probs"], -T / probs, rtol=1e-13)


def test_the_command_line_names_locals_and_says_what_it_does_not_know():
    def run(*args):
        return subprocess.run([sys.executable, "-m", "gradcli", *args, "--set", f"w={W.tolist()}", "--set",
                               f"x={X.tolist()}", "--set", f"t={T.tolist()}"], capture_output=True, text=True,
                              timeout=120)

    p = run("eval", "-e", SOFTMAX_LOSS, "--print", "probs", "--format", "plain")
    assert p.returncode == 0, p.stderr
    name, *numbers = p.stdout.split()
    assert name == "probs"
    np.testing.assert_allclose([float(v) for v in numbers], _softmax()[1], rtol=1e-15)
    miss = run("eval", "-e", SOFTMAX_LOSS, "--print", "prob")
    assert (miss.returncode, miss.stderr) == (2, "gradcli: error: unknown name for --print 'prob' (did you mean "
                                                 "loss.probs?): the program's names are loss, t, w, x; its "
                                                 "functions' local names are loss.probs, loss.z\n")
    derived = run("derive", "-e", SOFTMAX_LOSS, "--wrt", "loss.z", "--format", "plain")
    assert derived.returncode == 0, derived.stderr
    assert derived.stdout.splitlines()[-1].startswith("dloss_dloss_z = ")


TWO = """def f(a):
    h = a * 2
    return h
def g(a):
    h = a + 1
    return h
"""


@pytest.mark.parametrize("program,name,message", [
    (TWO + "y = f(x) + g(x)", "h", "ambiguous name for prints 'h': it is a local name of several functions "
                                   "(f.h, g.h); give one of these"),
    (TWO + "y = f(x) + f(x * 3)", "f.h", "ambiguous name for prints 'f.h': f is called 2 times, and f.h has a "
                                         "value in each call; name the value you mean at the top level"),
])
def test_an_ambiguous_local_is_refused_naming_the_choices(program, name, message):
    with pytest.raises(GradcliError) as err:
        api.evaluate(program, feeds={"x": 1.0}, prints=[name])
    assert err.value.message == message
    assert api.evaluate(TWO + "y = f(x) + g(x)", feeds={"x": 1.5}, prints=["g.h"]).outputs["g.h"] == 2.5
