"""Test helpers: reverse-mode gradients against float64 central finite differences.

Built on the library's lower layers only (graph, autodiff, evaluate), so the reference
(finite differences of the forward pass) is independent of every gradient rule.
"""
from __future__ import annotations

import numpy as np

from gradcli.api import compile_program
from gradcli.autodiff import gradients
from gradcli.engine.evaluate import run


def forward(graph, y, overrides):
    with np.errstate(all="ignore"):
        return run(graph, [y], overrides=overrides)[y]


def finite_difference(graph, y, x, point, seed, overrides=None, eps=1e-6):
    """d(sum(seed * y))/dx at `point` by central differences, element by element."""
    grad = np.zeros(point.shape)  # C order: a transposed point's zeros_like would not flatten to a view
    flat = grad.reshape(-1)
    base = dict(overrides or {})
    for k in range(point.size):
        step = np.zeros(point.size)
        step[k] = eps * max(1.0, abs(point.reshape(-1)[k]))
        plus = forward(graph, y, {**base, x: point + step.reshape(point.shape)})
        minus = forward(graph, y, {**base, x: point - step.reshape(point.shape)})
        flat[k] = np.sum(seed * (plus - minus)) / (2 * step[k])
    return grad


def seed_input(graph, value, name="seed"):
    return graph.add_input(name, np.asarray(value, dtype=np.float64))


def check_program(text, feeds, wrt, rng, *, of=None, rtol=1e-6, atol=1e-7, second_order=True):
    """Compare first (and second) derivatives of `of` (default: last statement) w.r.t. each
    name in `wrt` with finite differences. Returns the graph for further checks."""
    graph = compile_program(text, "<test>", feeds)
    y = graph.names[of] if of else graph.result[1]
    x_ids = [graph.names[x] for x in wrt]
    seed_value = rng.standard_normal(graph.shapes[y])
    seed = seed_input(graph, seed_value)
    grads = gradients(graph, [y], x_ids, [seed])
    values = {x: np.asarray(graph.equations[x].params["value"], dtype=np.float64) for x in x_ids}
    for name, x, g in zip(wrt, x_ids, grads):
        assert g is not None, f"gradient w.r.t. {name} is unconnected"
        with np.errstate(all="ignore"):
            got = run(graph, [g])[g]
        want = finite_difference(graph, y, x, values[x], seed_value)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"d/d{name} of {text!r}")
        if second_order:
            # reverse over reverse: d(sum(v * g))/dx against finite differences of g
            v_value = rng.standard_normal(graph.shapes[g])
            v = seed_input(graph, v_value, "v")
            (h,) = gradients(graph, [g], [x], [v])
            if h is None:
                continue  # g does not depend on x (a linear function)
            with np.errstate(all="ignore"):
                got2 = run(graph, [h])[h]
            want2 = finite_difference(graph, g, x, values[x], v_value)
            np.testing.assert_allclose(got2, want2, rtol=1e-4, atol=1e-5,
                                       err_msg=f"second derivative d/d{name} of {text!r}")
    return graph


def check_op_case(program, inputs, reference, rng, *, fixed=None, rtol=1e-6, atol=1e-7, forward_rtol=1e-12,
                  second_order=True, float32=True):
    """One row of an op table: the forward against `reference(**feeds)` (NumPy/SciPy), first
    and second derivatives in `inputs` against finite differences (`fixed` inputs are held), and
    a float32 run close to float64."""
    from gradcli import api

    feeds = {name: np.asarray(make(rng), dtype=np.float64) for name, make in {**inputs, **(fixed or {})}.items()}
    with np.errstate(all="ignore"):
        want = np.asarray(reference(**feeds), dtype=np.float64)
    got = api.evaluate(program, feeds=feeds).outputs["y"]
    np.testing.assert_allclose(got, want, rtol=forward_rtol, atol=1e-300, err_msg=f"forward of {program!r}")
    check_program(program, feeds, list(inputs), rng, rtol=rtol, atol=atol, second_order=second_order)
    if float32:
        r64 = api.grad(program, wrt=list(inputs), feeds=feeds)
        r32 = api.grad(program, wrt=list(inputs), feeds={k: v.astype(np.float32) for k, v in feeds.items()},
                       dtype="float32")
        assert r32.outputs["y"].dtype == np.float32
        np.testing.assert_allclose(r32.outputs["y"], want, rtol=2e-4, atol=2e-5, err_msg=f"float32 {program!r}")
        for name in inputs:
            g32, g64 = r32.gradients[name], r64.gradients[name]
            np.testing.assert_allclose(g32, g64, rtol=2e-3, atol=2e-4 * max(1.0, float(np.max(np.abs(g64)))),
                                       err_msg=f"float32 d/d{name} of {program!r}")


def central_differences(f, point, eps=1e-6, relative=False):
    """d sum(f(x)) / dx at point by float64 central differences, one element at a time (the step
    eps, times max(1, |x|) where relative)."""
    point = np.asarray(point, dtype=float)
    grad = np.zeros(point.shape)
    for k in np.ndindex(point.shape):
        step = eps * max(1.0, abs(point[k])) if relative else eps
        sums = []
        for sign in (1, -1):
            moved = point.copy()
            moved[k] += sign * step
            sums.append(np.sum(f(moved)))
        grad[k] = (sums[0] - sums[1]) / (2 * step)
    return grad
