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


# TensorFlow 2.21.0 (float64, the same programs with GradientTape) printed, for fgsm.expr:
# g [-0.9546788104223496, 0.25458101611262657, -0.44551677819709645, 0.7000977943097231],
# adv_loss 1.2625744432071544, train_loss 1.1372099352757306, d adv_loss/d eps 2.653178556323999,
# d train_loss/d w [-0.30252819216898613, 0.7762629311900747, -0.1671754095915322, -1.3893815900491877]
TF_FGSM = {"g": [-0.9546788104223496, 0.25458101611262657, -0.44551677819709645, 0.7000977943097231],
           "adv_loss": 1.2625744432071544, "train_loss": 1.1372099352757306, "eps": 2.653178556323999,
           "w": [-0.30252819216898613, 0.7762629311900747, -0.1671754095915322, -1.3893815900491877]}


def check_fgsm():
    text = read("fgsm.expr")
    assert "tf.gradients(loss(x), x)" in text and "written out" not in text  # the gradient is the program's
    x = np.array([0.5, -1.2, 0.3, 2.0])
    w = np.array([1.5, -0.4, 0.7, -1.1])
    b, eps = 0.2, 0.1
    g = -sigmoid(-(w @ x + b)) * w  # d softplus(-(w.x + b)) / dx, by hand
    s = np.sign(g)
    x_adv = x + eps * s
    r = api.evaluate(text, prints=["g", "x_adv", "adv_loss", "train_loss"])
    np.testing.assert_allclose(r.outputs["g"], g, rtol=1e-15)
    np.testing.assert_allclose(r.outputs["g"], TF_FGSM["g"], rtol=1e-15)
    np.testing.assert_allclose(r.outputs["x_adv"], x_adv, rtol=1e-15)
    np.testing.assert_allclose(r.outputs["adv_loss"], softplus(-(w @ x_adv + b)), rtol=1e-14)
    np.testing.assert_allclose(r.outputs["adv_loss"], TF_FGSM["adv_loss"], rtol=1e-15)
    np.testing.assert_allclose(r.outputs["train_loss"], TF_FGSM["train_loss"], rtol=1e-15)
    r = api.grad(text, of=["adv_loss"], wrt=["eps", "x"])
    np.testing.assert_allclose(r.gradients["eps"], -sigmoid(-(w @ x_adv + b)) * (w @ s), rtol=1e-13)
    np.testing.assert_allclose(r.gradients["eps"], TF_FGSM["eps"], rtol=1e-14)
    np.testing.assert_allclose(r.gradients["x"], -sigmoid(-(w @ x_adv + b)) * w, rtol=1e-13)
    # adversarial training: x_adv is data to d train_loss / d w (its making held by stop_gradient)
    r = api.grad(text, of=["train_loss"], wrt=["w"])
    want = 0.5 * -sigmoid(-(w @ x + b)) * x + 0.5 * -sigmoid(-(w @ x_adv + b)) * x_adv
    np.testing.assert_allclose(r.gradients["w"], want, rtol=1e-13)
    np.testing.assert_allclose(r.gradients["w"], TF_FGSM["w"], rtol=1e-14)


# TensorFlow 2.21.0 printed the three EM iterations' means for em_gradient.expr
TF_EM = [[-0.6258582386714935, 1.8762122752803012], [-0.5776175460680784, 1.8913926894820057],
         [-0.5671861090828606, 1.902451537845134]]


def check_em_gradient():
    text = read("em_gradient.expr")
    d = np.array([-1.2, 0.3, 2.5, 1.9, -0.7])[:, None]
    mu = np.array([-1.0, 2.0])
    closed_form = []
    for _ in range(3):  # EM by hand: responsibilities, then the weighted means
        logits = -0.5 * (d - mu) ** 2
        q = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        mu = (q * d).sum(axis=0) / q.sum(axis=0)
        closed_form.append(mu)
    r = api.evaluate(text, prints=["mu_1", "mu"])
    np.testing.assert_allclose(r.outputs["mu_1"], closed_form[0], rtol=1e-14)
    np.testing.assert_allclose(r.outputs["mu"], closed_form[2], rtol=1e-14)
    np.testing.assert_allclose(r.outputs["mu_1"], TF_EM[0], rtol=1e-15)
    np.testing.assert_allclose(r.outputs["mu"], TF_EM[2], rtol=1e-15)
    # without stop_gradient the in-program gradient runs through the responsibilities too, and the
    # Newton step is no M-step any more
    loose = api.evaluate(text.replace("stop_gradient(softmax(log_lik(m), axis=1))", "softmax(log_lik(m), axis=1)"),
                         prints=["mu_1"])
    assert np.abs(loose.outputs["mu_1"] - closed_form[0]).max() > 1e-3


# TensorFlow 2.21.0 printed, for contrastive_divergence_gradient.expr: loss and d loss/d W, d loss/d b
TF_CD = {"loss": 0.024166780453618086,
         "W": [[0.00070812365043088, -0.0050748364493744], [0.0434857972202381, 0.03322208845371238],
               [0.01472224624209978, 0.01476732703063416]],
         "b": [-0.00991484851493663, 0.06103696406438519, 0.0180895464183829]}


def check_contrastive_divergence_gradient():
    text = read("contrastive_divergence_gradient.expr")
    W = np.array([[0.2, -0.5], [0.8, 0.1], [-0.3, 0.4]])
    b = np.array([0.1, -0.2, 0.05])
    pos = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    energy = lambda v: -(v * b).sum(axis=1) - softplus(v @ W).sum(axis=1)
    neg = pos
    for _ in range(2):  # dE/dv = -b - sigmoid(v W) W^T, by hand
        neg = neg - 0.1 * (-b - sigmoid(neg @ W) @ W.T)
    loss = energy(pos).mean() - energy(neg).mean()
    # with neg held: dE/dW = -v^T sigmoid(v W), dE/db = -v, averaged over each batch
    dW = -(pos.T @ sigmoid(pos @ W)) / 4 + (neg.T @ sigmoid(neg @ W)) / 4
    db = -pos.mean(axis=0) + neg.mean(axis=0)
    r = api.evaluate(text, prints=["neg", "loss", "W_new", "b_new"])
    np.testing.assert_allclose(r.outputs["neg"], neg, rtol=1e-14)
    np.testing.assert_allclose(r.outputs["loss"], loss, rtol=1e-12)
    np.testing.assert_allclose(r.outputs["loss"], TF_CD["loss"], rtol=1e-13)
    np.testing.assert_allclose(r.outputs["W_new"], W - 0.5 * dW, rtol=1e-14)
    np.testing.assert_allclose(r.outputs["b_new"], b - 0.5 * db, rtol=1e-14)
    r = api.grad(text, of=["loss"], wrt=["W", "b"])
    np.testing.assert_allclose(r.gradients["W"], dW, rtol=1e-11, atol=1e-16)
    np.testing.assert_allclose(r.gradients["W"], TF_CD["W"], rtol=1e-11, atol=1e-16)
    np.testing.assert_allclose(r.gradients["b"], TF_CD["b"], rtol=1e-12, atol=1e-16)
    # the negatives depend on W and b: without stop_gradient the training gradient changes
    loose = api.grad(text.replace("energy(stop_gradient(neg))", "energy(neg)"), of=["loss"], wrt=["W"])
    assert np.abs(loose.gradients["W"] - dW).max() > 1e-4


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
    "em_gradient.expr": check_em_gradient,
    "contrastive_divergence_gradient.expr": check_contrastive_divergence_gradient,
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
