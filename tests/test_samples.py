"""Layer 2: every sample runs, and its numbers match an independent NumPy reference."""
from pathlib import Path

import numpy as np
import pytest

from gradcli import api

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def read(name):
    return (SAMPLES / name).read_text()


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def softplus(x):
    return np.logaddexp(0, x)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def check_stable_softmax():
    text = read("stable_softmax.expr")
    x = np.array([1000.0, 1001.0, 1002.0])
    s = softmax(x)
    r = api.grad(text, wrt=["x"], grad_ys={"y": [1.0, 0.0, 0.0]})
    np.testing.assert_allclose(r.outputs["y"], s, rtol=1e-14)
    np.testing.assert_allclose(r.gradients["x"], s[0] * (np.eye(3)[0] - s), rtol=1e-12)
    assert r.diagnostics == []
    for big in (1e4, -1e4):  # no warning at +-1e4 either
        r = api.grad(text, wrt=["x"], feeds={"x": x + big}, grad_ys={"y": [0.0, 1.0, 0.0]})
        assert np.isfinite(r.gradients["x"]).all() and r.diagnostics == []


def check_naive_softmax():
    text = read("naive_softmax.expr")
    r = api.evaluate(text)
    assert np.isnan(r.outputs["y"]).all()
    (d,) = [d for d in r.diagnostics if d.kind == "overflow"]
    assert (d.op, d.pos.line, d.pos.column) == ("exp", 7, 5)
    assert d.fix.alternatives == ("softmax(x)",) and "stop_gradient(max(x))" in d.fix.replacement
    np.testing.assert_allclose(api.evaluate(d.fix.apply(text)).outputs["y"], softmax(np.array([0.0, 1.0, 2.0])),
                               rtol=1e-14)
    small = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(api.evaluate(text, feeds={"x": small}).outputs["y"], softmax(small), rtol=1e-14)


def check_em_mixture():
    text = read("em_mixture.expr")
    d = np.array([-1.2, 0.3, 2.5, 1.9, -0.7])[:, None]
    mu = np.array([-1.0, 2.0])
    logits = -0.5 * (d - mu) ** 2
    q = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    mu_new = (q * d).sum(axis=0) / q.sum(axis=0)
    r = api.grad(text, of=["nll"], wrt=["mu"])
    np.testing.assert_allclose(r.gradients["mu"], (q * (mu - d)).sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(api.evaluate(text, prints=["mu_new"]).outputs["mu_new"], mu_new, rtol=1e-14)
    # the M-step's fixed point: with the responsibilities held, d nll/d mu vanishes at mu_new
    # (only when q is recomputed at mu_new does it move: q depends on mu, but not through the gradient)
    grad_at_update = (q * (mu_new - d)).sum(axis=0)
    np.testing.assert_allclose(grad_at_update, 0.0, atol=1e-12)


def check_contrastive_divergence():
    text = read("contrastive_divergence.expr")
    W = np.array([[0.2, -0.5], [0.8, 0.1], [-0.3, 0.4]])
    b = np.array([0.1, -0.2, 0.05])
    pos = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    neg = sigmoid(pos @ W @ W.T + b)  # held fixed

    def loss(W, b):
        energy = lambda v: -(v * b).sum(axis=1) - softplus(v @ W).sum(axis=1)
        return energy(pos).mean() - energy(neg).mean()

    r = api.grad(text, of=["loss"], wrt=["W", "b"])
    np.testing.assert_allclose(r.outputs["loss"], loss(W, b), rtol=1e-13)
    for name, value in (("W", W), ("b", b)):
        fd = np.zeros_like(value)
        for k in range(value.size):
            step = np.zeros(value.size)
            step[k] = 1e-6
            step = step.reshape(value.shape)
            args = (W + step, b) if name == "W" else (W, b + step)
            args_m = (W - step, b) if name == "W" else (W, b - step)
            fd.reshape(-1)[k] = (loss(*args) - loss(*args_m)) / 2e-6
        np.testing.assert_allclose(r.gradients[name], fd, rtol=1e-6, atol=1e-9)


def check_fgsm():
    text = read("fgsm.expr")
    x = np.array([0.5, -1.2, 0.3, 2.0])
    w = np.array([1.5, -0.4, 0.7, -1.1])
    b, eps = 0.2, 0.1
    g = -sigmoid(-(w @ x + b)) * w
    s = np.sign(g)
    x_adv = x + eps * s
    r = api.evaluate(text, prints=["x_adv", "adv_loss"])
    np.testing.assert_allclose(r.outputs["x_adv"], x_adv, rtol=1e-15)
    np.testing.assert_allclose(r.outputs["adv_loss"], softplus(-(w @ x_adv + b)), rtol=1e-14)
    r = api.grad(text, of=["adv_loss"], wrt=["eps", "x"])
    np.testing.assert_allclose(r.gradients["eps"], -sigmoid(-(w @ x_adv + b)) * (w @ s), rtol=1e-13)
    np.testing.assert_allclose(r.gradients["x"], -sigmoid(-(w @ x_adv + b)) * w, rtol=1e-13)


def check_linear_regression():
    text = read("linear_regression.expr")
    X = np.array([[1.0, 2.0], [2.0, 0.5], [3.0, -1.0], [4.0, 1.5]])
    t = np.array([3.0, 2.5, 1.0, 5.0])
    w, b = np.array([0.5, 0.5]), 0.0
    res = X @ w + b - t
    r = api.grad(text, of=["loss"], wrt=["w", "b"], grad_ys={"loss": 2.0})
    np.testing.assert_allclose(r.outputs["loss"], np.mean(res ** 2), rtol=1e-15)
    np.testing.assert_allclose(r.gradients["w"], 2 * (2 / 4) * X.T @ res, rtol=1e-14)
    np.testing.assert_allclose(r.gradients["b"], 2 * (2 / 4) * res.sum(), rtol=1e-14)


CHECKS = {
    "stable_softmax.expr": check_stable_softmax,
    "naive_softmax.expr": check_naive_softmax,
    "em_mixture.expr": check_em_mixture,
    "contrastive_divergence.expr": check_contrastive_divergence,
    "fgsm.expr": check_fgsm,
    "linear_regression.expr": check_linear_regression,
}


def test_every_sample_has_a_check():
    assert sorted(p.name for p in SAMPLES.glob("*.expr")) == sorted(CHECKS)


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_sample(name):
    CHECKS[name]()


@pytest.mark.parametrize("name", sorted(set(CHECKS) - {"naive_softmax.expr"}))
def test_clean_samples_raise_no_warning(name):
    r = api.evaluate(read(name))
    assert [d for d in r.diagnostics if d.severity == "warning"] == []
