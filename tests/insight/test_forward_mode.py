"""How `jacobian` and `hessian` (gradcli/insight/jacobians.py) choose between forward and reverse
mode: forward where the inputs have fewer elements than the output (JAX's rule: jacfwd for tall
Jacobians), reverse otherwise; the Hessian's gradient map is square, so reverse over reverse.
Both modes give the same numbers (on the samples, tall, wide and square cases, unconnected
inputs), the result says which mode ran, and the chosen mode takes fewer passes."""
from pathlib import Path

import numpy as np
import pytest

from gradcli.api import compile_program
from gradcli.insight import jacobians
from gradcli.insight.jacobians import hessian, jacobian

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def _targets(text, of, wrt, **feeds):
    graph = compile_program(text, "<test>", {k: np.asarray(v, dtype=float) for k, v in feeds.items()})
    y = graph.names[of] if of else graph.result[1]
    return graph, y, [graph.names[x] for x in wrt]


def _both(function, text, of, wrt, modes, **feeds):
    """The result of each mode, each on a graph of its own."""
    out = {}
    for mode in modes:
        graph, y, xs = _targets(text, of, wrt, **feeds)
        out[mode] = function(graph, y, xs, mode=mode)
        assert out[mode].mode == mode
    return out


def _same_blocks(a, b, what):
    assert len(a) == len(b)
    for got, want in zip(a, b):
        if want is None:
            assert got is None, what
        else:
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14 * max(1.0, float(np.max(np.abs(want),
                                                                                                   initial=0.0))),
                                       err_msg=what)


TALL = ("t = linspace(0, 1, 7)\ny = sin(x[0] * t) * exp(x[1] * t) + x[0] * x[1] * t", {"x": [0.3, 0.7]})
WIDE = ("y = [sum(x * x), sum(sin(x) * w)]", {"x": np.linspace(-1, 1, 6), "w": np.linspace(0.5, 2, 6)})
SQUARE = ("y = softmax(x)", {"x": [1.0, 2.0, 0.5]})


@pytest.mark.parametrize("text,feeds,wrt,chosen", [
    (*TALL, ["x"], "forward"),                 # 2 inputs, 7 outputs
    (*WIDE, ["x", "w"], "reverse"),            # 12 inputs, 2 outputs
    (*SQUARE, ["x"], "reverse"),               # as many: reverse (one gradient program for all)
    ("y = a * b + c", {"a": [1.0, 2.0, 3.0], "b": 2.0, "c": 1.0}, ["b", "c"], "forward"),  # 1 + 1 < 3
    ("y = a * b", {"a": [1.0, 2.0, 3.0], "b": [2.0, 1.0, 0.5]}, ["a", "b"], "reverse"),  # 6 >= 3
], ids=["tall", "wide", "square", "several inputs, fewer in all", "several inputs, more in all"])
def test_jacobian_chooses_forward_mode_where_inputs_are_fewer_and_both_modes_agree(text, feeds, wrt, chosen):
    graph, y, xs = _targets(text, None, wrt, **feeds)
    assert jacobian(graph, y, xs).mode == chosen
    both = _both(jacobian, text, None, wrt, ["forward", "reverse"], **feeds)
    _same_blocks(both["forward"], both["reverse"], text)


def test_the_tall_jacobian_is_the_analytic_one_in_both_modes():
    text, feeds = TALL
    t = np.linspace(0, 1, 7)
    a, b = feeds["x"]
    want = np.stack([t * np.cos(a * t) * np.exp(b * t) + b * t,
                     t * np.sin(a * t) * np.exp(b * t) + a * t], axis=1)
    for mode, blocks in _both(jacobian, text, None, ["x"], ["forward", "reverse"], **feeds).items():
        np.testing.assert_allclose(blocks[0], want, rtol=1e-14, atol=1e-15, err_msg=mode)


def test_inputs_the_output_does_not_depend_on_are_none_in_both_modes():
    text = "y = stop_gradient(a) * [1.0, 2.0, 3.0] + b"
    for mode, blocks in _both(jacobian, text, None, ["a", "b"], ["forward", "reverse"], a=2.0, b=1.0).items():
        assert blocks[0] is None, mode
        np.testing.assert_array_equal(blocks[1], [1.0, 1.0, 1.0])


def _sample_targets():
    """(sample, output, inputs) of every sample: its last statement, against each input it reads."""
    out = []
    for path in sorted(SAMPLES.glob("*.expr")):
        graph = compile_program(path.read_text(), path.name, None)
        wrt = sorted(name for name, i in graph.inputs.items() if graph.shapes[i] is not None)
        out.append((path.name, wrt))
    return out


@pytest.mark.parametrize("name,wrt", _sample_targets(), ids=[n for n, _ in _sample_targets()])
def test_both_modes_agree_on_the_samples(name, wrt):
    text = (SAMPLES / name).read_text()
    both = _both(jacobian, text, None, wrt, ["forward", "reverse"])
    _same_blocks(both["forward"], both["reverse"], name)
    graph, y, xs = _targets(text, None, wrt)
    if graph.shapes[y] == ():
        both = _both(hessian, text, None, wrt, ["forward-over-reverse", "reverse-over-reverse"])
        (own_f, mixed_f), (own_r, mixed_r) = both.values()
        _same_blocks(own_f, own_r, name)
        _same_blocks(list(mixed_f.values()), list(mixed_r.values()), name)


HIMMELBLAU = "f = (x**2 + y - 11)**2 + (x + y**2 - 7)**2"


@pytest.mark.parametrize("text,wrt,feeds", [
    (HIMMELBLAU, ["x", "y"], {"x": 1.0, "y": 2.0}),
    ("y = x @ A @ x", ["x"], {"x": [1.0, 2.0, -1.0], "A": [[1.0, 2.0, 0.0], [0.5, -1.0, 3.0], [0.0, 1.0, 2.0]]}),
    ("y = sum(a * a) * sum(b ** 3) + sum(stop_gradient(c) * a)", ["a", "b", "c"],
     {"a": [0.5, -1.0], "b": [2.0, 1.0, 0.5], "c": [1.0, 3.0]}),
    ("y = logsumexp(A @ x) + sum(sigmoid(x) ** 2)", ["x"],
     {"x": np.linspace(-1, 1, 5), "A": np.arange(15.0).reshape(3, 5) / 7}),
], ids=["himmelblau", "quadratic form", "mixed, unconnected", "logsumexp"])
def test_hessian_is_reverse_over_reverse_and_forward_over_reverse_agrees(text, wrt, feeds):
    graph, y, xs = _targets(text, None, wrt, **feeds)
    assert hessian(graph, y, xs).mode == "reverse-over-reverse"
    both = _both(hessian, text, None, wrt, ["forward-over-reverse", "reverse-over-reverse"], **feeds)
    (own_f, mixed_f), (own_r, mixed_r) = both.values()
    _same_blocks(own_f, own_r, text)
    assert mixed_f.keys() == mixed_r.keys()
    _same_blocks(list(mixed_f.values()), list(mixed_r.values()), text)


def test_hessian_blocks_of_an_unconnected_input_are_none_in_both_modes():
    text = "y = sum(a * a) * sum(b) + sum(stop_gradient(c) * a)"
    feeds = {"a": [0.5, -1.0], "b": [2.0, 1.0, 0.5], "c": [1.0, 3.0]}
    for mode, (own, mixed) in _both(hessian, text, None, ["a", "b", "c"],
                                    ["forward-over-reverse", "reverse-over-reverse"], **feeds).items():
        np.testing.assert_allclose(own[0], 2 * 3.5 * np.eye(2), rtol=1e-15, err_msg=mode)
        np.testing.assert_array_equal(own[1], np.zeros((3, 3)))  # y is linear in b
        assert own[2] is None and mixed[2, 0] is None and mixed[2, 1] is None, mode
        np.testing.assert_allclose(mixed[0, 1], np.outer([1.0, -2.0], np.ones(3)), rtol=1e-15, err_msg=mode)
        np.testing.assert_array_equal(mixed[0, 2], np.zeros((2, 2)))  # c's gradient is stopped


def _passes(monkeypatch, function, text, wrt, mode=None, **feeds):
    """How many times the derivative program is evaluated (the runs that override a seed)."""
    graph, y, xs = _targets(text, None, wrt, **feeds)
    count = []
    real_run = jacobians.run

    def counting(graph, fetch, **options):
        count.append(bool(options.get("overrides")))
        return real_run(graph, fetch, **options)
    monkeypatch.setattr(jacobians, "run", counting)
    result = function(graph, y, xs, mode=mode)
    monkeypatch.setattr(jacobians, "run", real_run)
    return result.mode, sum(count)


def test_the_chosen_mode_takes_fewer_passes(monkeypatch):
    """R^2 -> R^1000: forward mode, 2 passes; reverse mode would take 1000."""
    text = "t = linspace(0, 1, 1000)\ny = sin(x[0] * t) * exp(x[1] * t)"
    assert _passes(monkeypatch, jacobian, text, ["x"], x=[0.3, 0.7]) == ("forward", 2)
    assert _passes(monkeypatch, jacobian, text, ["x"], "reverse", x=[0.3, 0.7]) == ("reverse", 1000)
    wide = "y = [sum(x * x), sum(sin(x))]"
    assert _passes(monkeypatch, jacobian, wide, ["x"], x=np.ones(50)) == ("reverse", 2)
    assert _passes(monkeypatch, jacobian, wide, ["x"], "forward", x=np.ones(50)) == ("forward", 50)


def test_an_unknown_mode_is_refused():
    graph, y, xs = _targets("y = sum(x * x)", None, ["x"], x=[1.0, 2.0])
    with pytest.raises(ValueError, match="unknown Jacobian mode 'sideways'"):
        jacobian(graph, y, xs, mode="sideways")
    with pytest.raises(ValueError, match="unknown Hessian mode 'forward'"):
        hessian(graph, y, xs, mode="forward")
