"""The commands vouch for each other, on random programs from the fuzz generator: row k of
`jacobian` is `grad` with a one-hot upstream gradient; `hessian` is symmetric and equals
finite differences of `grad`; float32 agrees with float64 within its precision; plain, JSON
and table print the same numbers. (`derive` evaluating to `grad`, and `check` passing on
smooth programs, are in test_insight.py on the same generator.)

Each property returns how a case ended ("checked" where its assertions ran); a run fails when
a property was checked fewer times than its floor (FLOORS), so that a generator or a refusal that
keeps the comparisons from running cannot pass silently.

The default run is short and replays (hypothesis is derandomized); the long run is
`GRADCLI_FUZZ_EXAMPLES=20000 pytest -m fuzz tests/ops/test_properties.py`.
"""
import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import test_fuzz
from gradcli import api
from gradcli.cli import render
from gradcli.errors import GradcliError

SHORT = settings(max_examples=40, deadline=None, derandomize=True)
LONG = settings(max_examples=test_fuzz.LONG or 20_000, deadline=None)


def used_feeds(text, data):
    feeds = test_fuzz.point(data.draw)
    return {n: feeds[n] for n in test_fuzz.INPUTS if re.search(rf"\b{n}\b", text)}


def smooth(result) -> bool:
    values = [*result.outputs.values(), *(g for g in result.gradients.values() if g is not None)]
    return (all(np.isfinite(v).all() and np.max(np.abs(v), initial=0) < 1e6 for v in values)
            and not any(d.severity == "warning" or d.kind in ("tie", "kink") for d in result.diagnostics))


def jacobian_rows_are_gradients(text, feeds) -> str:
    if not feeds:
        return "no input"
    for x in feeds:
        try:
            jac = api.jacobian(text, of="z", wrt=[x], feeds=feeds, unconnected="zero").jacobians[x]
            z_shape = api.evaluate(text, feeds=feeds, prints=["z"]).outputs["z"].shape
        except GradcliError:
            return "rejected"
        for k in range(int(np.prod(z_shape))):
            seed = np.zeros(int(np.prod(z_shape)))
            seed[k] = 1.0
            g = api.grad(text, wrt=[x], of=["z"], feeds=feeds, grad_ys={"z": seed.reshape(z_shape)},
                         unconnected="zero").gradients[x]
            row = jac.reshape((-1,) + np.shape(feeds[x]))[k]
            if not (np.isfinite(g).all() and np.isfinite(row).all()):
                # outside the domain (log of a negative): reverse mode's 0 * NaN spreads NaN to
                # rows that do not depend on it, forward mode's does not; both are diagnosed
                return "non-finite"
            # forward mode (fewer inputs than outputs) sums in another order: equal to rounding
            np.testing.assert_allclose(row, g, rtol=1e-12, atol=1e-12 * (1 + np.max(np.abs(g), initial=0)),
                                       err_msg=f"row {k} of d z/d{x}:\n{text}")
    return "checked"


def hessian_is_symmetric_and_the_derivative_of_grad(text, feeds) -> str:
    if not feeds:
        return "no input"
    for x in feeds:
        try:
            base = api.grad(text, wrt=[x], feeds=feeds, unconnected="zero")
            if not smooth(base):
                return "non-smooth"
            hes = api.hessian(text, of="y", wrt=[x], feeds=feeds, unconnected="zero").hessians[x]
        except GradcliError:
            return "rejected"
        point = np.asarray(feeds[x], dtype=np.float64)
        n = point.size
        h = hes.reshape(n, n)
        if not np.isfinite(h).all() or np.max(np.abs(h), initial=0) > 1e6:
            return "large"
        np.testing.assert_allclose(h, h.T, rtol=1e-9, atol=1e-9 * (1 + np.max(np.abs(h))), err_msg=text)
        if "stop_gradient" in text:
            return "symmetric only"  # tf.hessians holds it constant; finite differences of grad move it
        fd = np.zeros((n, n))
        eps = 1e-5
        for k in range(n):
            step = np.zeros(n)
            step[k] = eps
            plus = api.grad(text, wrt=[x], feeds={**feeds, x: point + step.reshape(point.shape)}, unconnected="zero")
            minus = api.grad(text, wrt=[x], feeds={**feeds, x: point - step.reshape(point.shape)}, unconnected="zero")
            if not (smooth(plus) and smooth(minus)):
                return "symmetric only"  # a kink within a step: finite differences say nothing here
            slope = (plus.outputs["y"] - minus.outputs["y"]) / (2 * eps)
            if abs(slope - base.gradients[x].reshape(-1)[k]) > 1e-3 * (1 + abs(slope)):
                return "symmetric only"  # the value jumps within a step (a where's condition at its threshold)
            fd[:, k] = ((plus.gradients[x] - minus.gradients[x]) / (2 * eps)).reshape(-1)
        np.testing.assert_allclose(h, fd, rtol=1e-4, atol=1e-4 * (1 + np.max(np.abs(h))), err_msg=text)
    return "checked"


def float32_agrees_with_float64(text, feeds) -> str:
    x = list(feeds)
    if not x:
        return "no input"
    try:
        wide = api.grad(text, wrt=x, feeds=feeds, unconnected="zero")
        narrow = api.grad(text, wrt=x, feeds=feeds, unconnected="zero", dtype="float32")
    except GradcliError:
        return "rejected"
    if not smooth(wide) or not smooth(narrow):
        return "non-smooth"
    checked = test_fuzz.smooth_gradient_check(text, {**test_fuzz.point(lambda _: 0), **feeds})
    if checked != "checked":
        return "ill-conditioned"  # ill-conditioned programs amplify float32's rounding without bound
    for name in x:
        a, b = wide.gradients[name], narrow.gradients[name]
        assert b.dtype == np.float32
        scale = 1 + np.max(np.abs(a), initial=0)
        np.testing.assert_allclose(b, a, rtol=2e-3, atol=2e-3 * scale, err_msg=f"d/d{name} float32:\n{text}")
    return "checked"


def formats_print_the_same_numbers(text, feeds) -> str:
    if not feeds:
        return "no input"
    try:
        result = api.grad(text, wrt=list(feeds), feeds=feeds, unconnected="zero")
    except GradcliError:
        return "rejected"
    doc = json.loads(render.dumps(render.document(render.GRAD, result)))
    for line in render.plain_lines(result, with_gradients=True):
        name, _, numbers = line.partition("\t")
        plain = [float(v) for v in numbers.split()] if numbers else []
        value = doc["gradients"][name]["value"]
        flat = np.ravel(np.asarray(value, dtype=object)).tolist()
        from_json = [float(v) if not isinstance(v, str) else float(v.replace("Infinity", "inf")) for v in flat]
        np.testing.assert_array_equal(plain, from_json)
        # the table's cell shows the same numbers to its 8 digits, and the table holds the cell
        arr = result.gradients[name]
        cell = render._summary(arr)
        shown = [float(t) for t in re.findall(r"[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan)", cell)]
        # 8 decimals, positional or scientific
        np.testing.assert_allclose(shown, np.ravel(arr), rtol=1e-7, atol=6e-9, equal_nan=True, err_msg=cell)
        table = render.on_terminal(render.table(result, with_gradients=True))
        assert re.sub(r"\s", "", cell) in re.sub(r"[\s│]", "", table), (cell, table)
    return "checked"


PROPERTIES = [jacobian_rows_are_gradients, hessian_is_symmetric_and_the_derivative_of_grad,
              float32_agrees_with_float64, formats_print_the_same_numbers]


# How many of the short run's 40 cases must reach each property's whole check (the long run: the
# same share); the replayed (derandomized) run reaches it 40, 36, 39 and 40 times.
FLOORS = {jacobian_rows_are_gradients: 20, hessian_is_symmetric_and_the_derivative_of_grad: 18,
          float32_agrees_with_float64: 20, formats_print_the_same_numbers: 20}


@pytest.mark.parametrize("prop", PROPERTIES, ids=lambda p: p.__name__)
def test_commands_agree_on_random_programs(prop):
    tally = test_fuzz.Tally()

    @SHORT
    @given(test_fuzz.program(), st.data())
    def run(text, data):
        tally.note(prop(text, used_feeds(text, data)))
    run()
    tally.require(checked=FLOORS[prop])


@pytest.mark.fuzz
@test_fuzz.needs_long
@pytest.mark.parametrize("prop", PROPERTIES, ids=lambda p: p.__name__)
def test_commands_agree_long(prop):
    tally = test_fuzz.Tally()

    @LONG
    @given(test_fuzz.program(), st.data())
    def run(text, data):
        tally.note(prop(text, used_feeds(text, data)))
    run()
    tally.require(checked=FLOORS[prop] * (test_fuzz.LONG or 20_000) // 40)
