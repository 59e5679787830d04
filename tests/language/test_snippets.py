"""Real code as people paste it: each file in tests/snippets is a function or formula written
the way a library's source, its documentation or a tutorial writes it (the first comment line
says where from), run exactly as written with only `--set` values. Its value is compared with
an independent NumPy implementation, and its gradient with float64 central finite differences
of that implementation. A snippet gradcli cannot read must be refused with a clear, positioned
message, and at least 85% must run."""
from pathlib import Path

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError
from gradcheck import central_differences

HERE = Path(__file__).parent / "snippets"
RNG = np.random.default_rng(7)


def normal(*shape):
    return RNG.normal(size=shape)


def uniform(lo, hi, *shape):
    return RNG.uniform(lo, hi, size=shape)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def log_softmax(x):
    z = x - x.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def log_sigmoid(x):
    return -np.logaddexp(0, -x)


def softplus(x):
    return np.logaddexp(0, x)


X8, W8 = normal(6, 3), normal(3)
LABELS = (RNG.uniform(size=6) > 0.5).astype(float)
PM1 = np.where(LABELS > 0, 1.0, -1.0)
ONEHOT = np.eye(4)[[0, 2, 1]]

# name: (inputs, wrt, reference(**inputs) -> value)
SNIPPETS = {
    "rosen": ({"x": uniform(-1.5, 1.5, 5)}, ["x"],
              lambda x: np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)),
    "sum_logistic": ({"x": normal(4)}, ["x"], lambda x: np.sum(sigmoid(x))),
    "jax_cookbook_logistic": ({"W": W8, "b": 0.3, "inputs": X8, "targets": LABELS}, ["W", "b"],
                              lambda W, b, inputs, targets: -np.sum(np.log(
                                  sigmoid(inputs @ W + b) * targets + (1 - sigmoid(inputs @ W + b)) * (1 - targets)))),
    "autograd_tanh": ({"x": normal(5)}, ["x"], lambda x: np.tanh(x)),
    "autograd_logistic": ({"weights": W8, "inputs": X8, "targets": LABELS}, ["weights"],
                          lambda weights, inputs, targets: -np.sum(np.log(
                              sigmoid(2 * inputs @ weights) * targets
                              + (1 - sigmoid(2 * inputs @ weights)) * (1 - targets)))),
    "tf_sigmoid_ce_formula": ({"x": normal(6), "z": LABELS}, ["x"],
                              lambda x, z: -z * log_sigmoid(x) - (1 - z) * log_sigmoid(-x)),
    "optax_sigmoid_bce": ({"logits": normal(6), "labels": LABELS}, ["logits"],
                          lambda logits, labels: -labels * log_sigmoid(logits) - (1 - labels) * log_sigmoid(-logits)),
    "optax_log_cosh": ({"predictions": normal(5), "targets": normal(5)}, ["predictions"],
                       lambda predictions, targets: np.log(np.cosh(predictions - targets))),
    "optax_huber": ({"predictions": np.array([0.3, 2.5, -1.7, -0.2]), "targets": np.array([0.0, 0.1, 0.2, 0.4])},
                    ["predictions"],
                    lambda predictions, targets: np.where(np.abs(predictions - targets) <= 1,
                                                          0.5 * (predictions - targets) ** 2,
                                                          np.abs(predictions - targets) - 0.5)),
    "gelu_tanh": ({"x": normal(5)}, ["x"],
                  lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    "mish": ({"x": normal(5)}, ["x"], lambda x: x * np.tanh(softplus(x))),
    "swish": ({"x": normal(5)}, ["x"], lambda x: x * sigmoid(x)),
    "himmelblau": ({"x": 1.3, "y": -0.7}, ["x", "y"], lambda x, y: (x ** 2 + y - 11) ** 2 + (x + y ** 2 - 7) ** 2),
    "rastrigin": ({"x": uniform(-2, 2, 4)}, ["x"],
                  lambda x: 10 * len(x) + np.sum(x ** 2 - 10 * np.cos(2 * np.pi * x))),
    "ackley": ({"x": 0.4, "y": -1.1}, ["x", "y"],
               lambda x, y: (-20 * np.exp(-0.2 * np.sqrt(0.5 * (x ** 2 + y ** 2)))
                             - np.exp(0.5 * (np.cos(2 * np.pi * x) + np.cos(2 * np.pi * y))) + np.e + 20)),
    "beale": ({"x": 1.2, "y": 0.4}, ["x", "y"],
              lambda x, y: (1.5 - x + x * y) ** 2 + (2.25 - x + x * y ** 2) ** 2 + (2.625 - x + x * y ** 3) ** 2),
    "styblinski_tang": ({"x": uniform(-3, 3, 4)}, ["x"], lambda x: 0.5 * np.sum(x ** 4 - 16 * x ** 2 + 5 * x)),
    "booth": ({"x": 0.5, "y": 2.0}, ["x", "y"], lambda x, y: (x + 2 * y - 7) ** 2 + (2 * x + y - 5) ** 2),
    "gaussian_nll": ({"mu": 0.2, "sigma": 1.3, "x": normal(7)}, ["mu", "sigma"],
                     lambda mu, sigma, x: np.sum(0.5 * np.log(2 * np.pi * sigma ** 2) + (x - mu) ** 2 / (2 * sigma ** 2))),
    "logreg_sklearn": ({"w": W8, "X": X8, "y": PM1}, ["w"],
                       lambda w, X, y: np.mean(np.log(1 + np.exp(-y * (X @ w)))) + 0.05 * w @ w),
    "linear_mse": ({"w": W8, "b": 0.1, "X": X8, "y": normal(6)}, ["w", "b"],
                   lambda w, b, X, y: np.mean((X @ w + b - y) ** 2)),
    "ridge": ({"w": W8, "X": X8, "y": normal(6)}, ["w"], lambda w, X, y: (X @ w - y) @ (X @ w - y) + w @ w),
    "kl_divergence": ({"p": np.array([0.2, 0.5, 0.3]), "q": np.array([0.3, 0.3, 0.4])}, ["p", "q"],
                      lambda p, q: np.sum(p * np.log(p / q))),
    "entropy": ({"logits": normal(5)}, ["logits"],
                lambda logits: -np.sum(np.exp(logits) / np.exp(logits).sum() * np.log(np.exp(logits) / np.exp(logits).sum()))),
    "softmax_ce": ({"logits": normal(3, 4), "labels": ONEHOT}, ["logits"],
                   lambda logits, labels: -np.sum(labels * (logits - np.log(np.exp(logits).sum(-1, keepdims=True))), -1)),
    "logsumexp_trick": ({"x": normal(6)}, ["x"], lambda x: np.log(np.sum(np.exp(x)))),
    "stable_softplus": ({"x": normal(6)}, ["x"], softplus),
    "focal_loss": ({"p": uniform(0.05, 0.95, 5)}, ["p"], lambda p: np.sum(-0.25 * (1 - p) ** 2 * np.log(p))),
    "smooth_l1": ({"x": np.array([0.1, 2.0, -1.6, 0.4]), "y": np.array([0.0, 0.3, 0.2, -0.1])}, ["x"],
                  lambda x, y: np.mean(np.where(np.abs(x - y) < 1, 0.5 * (x - y) ** 2, np.abs(x - y) - 0.5))),
    "pytorch_poly_fit": ({"a": 0.1, "b": 0.8, "c": -0.2, "d": -0.1, "x": np.linspace(-np.pi, np.pi, 9),
                          "y": np.sin(np.linspace(-np.pi, np.pi, 9))}, ["a", "b", "c", "d"],
                         lambda a, b, c, d, x, y: np.sum((a + b * x + c * x ** 2 + d * x ** 3 - y) ** 2)),
    "numpy_poly_fit": ({"a": 0.1, "b": 0.8, "c": -0.2, "d": -0.1, "x": np.linspace(-np.pi, np.pi, 9),
                        "y": np.sin(np.linspace(-np.pi, np.pi, 9))}, ["a", "b", "c", "d"],
                       lambda a, b, c, d, x, y: np.sum((a + b * x + c * x ** 2 + d * x ** 3 - y) ** 2)),
    "keras_mse": ({"y_true": normal(3, 4), "y_pred": normal(3, 4)}, ["y_pred"],
                  lambda y_true, y_pred: np.mean((y_true - y_pred) ** 2, axis=-1)),
    "keras_hinge": ({"y_true": np.sign(normal(3, 4)), "y_pred": normal(3, 4)}, ["y_pred"],
                    lambda y_true, y_pred: np.mean(np.maximum(1 - y_true * y_pred, 0), axis=-1)),
    "keras_log_cosh": ({"y_true": normal(3, 4), "y_pred": normal(3, 4)}, ["y_pred"],
                       lambda y_true, y_pred: np.mean(np.log(np.cosh(y_pred - y_true)), axis=-1)),
    "keras_msle": ({"y_true": uniform(0.1, 3, 3, 4), "y_pred": uniform(0.1, 3, 3, 4)}, ["y_pred"],
                   lambda y_true, y_pred: np.mean((np.log(y_pred + 1) - np.log(y_true + 1)) ** 2, axis=-1)),
    "cosine_similarity": ({"a": normal(5), "b": normal(5)}, ["a", "b"],
                          lambda a, b: a @ b / (np.linalg.norm(a) * np.linalg.norm(b))),
    "layer_norm": ({"x": normal(2, 5)}, ["x"],
                   lambda x: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)),
    "elastic_net": ({"w": W8, "X": X8, "y": normal(6)}, ["w"],
                    lambda w, X, y: (np.sum((y - X @ w) ** 2) / 12 + 0.5 * np.sum(np.abs(w)) + 0.25 * np.sum(w ** 2))),
    "l2_loss_tf": ({"t": normal(2, 3)}, ["t"], lambda t: np.sum(t ** 2) / 2),
    "vae_kl": ({"mean": normal(4), "logvar": normal(4)}, ["mean", "logvar"],
               lambda mean, logvar: -0.5 * np.sum(1 + logvar - mean ** 2 - np.exp(logvar))),
    "bce_probs": ({"y_true": LABELS, "y_pred": uniform(0.05, 0.95, 6)}, ["y_pred"],
                  lambda y_true, y_pred: -np.mean(y_true * np.log(y_pred) + (1 - y_true) * np.log(1 - y_pred))),
    "matyas": ({"x": 0.7, "y": -1.2}, ["x", "y"], lambda x, y: 0.26 * (x ** 2 + y ** 2) - 0.48 * x * y),
    "three_hump_camel": ({"x": 0.6, "y": -0.4}, ["x", "y"],
                         lambda x, y: 2 * x ** 2 - 1.05 * x ** 4 + x ** 6 / 6 + x * y + y ** 2),
    "softmax_def": ({"z": normal(3, 4), "y": ONEHOT}, ["z"],
                    lambda z, y: -np.sum(y * (z - np.log(np.exp(z).sum(-1, keepdims=True))))),
    "jax_mlp": ({"W1": normal(3, 5), "b1": normal(5), "W2": normal(5, 2), "b2": normal(2), "x": X8, "y": normal(6, 2)},
                ["W1", "b2"],
                lambda W1, b1, W2, b2, x, y: np.mean((np.maximum(x @ W1 + b1, 0) @ W2 + b2 - y) ** 2)),
    # PyTorch's functional API, Keras' and Optax's losses, JAX's .at updates, NumPy's integer-array indexing
    "torch_cross_entropy": ({"input": normal(3, 5), "target": np.array([1.0, 0.0, 4.0])}, ["input"],
                            lambda input, target: -np.mean(log_softmax(input)[np.arange(3), target.astype(int)])),
    "torch_cross_entropy_probs": ({"input": normal(3, 5), "target_logits": normal(3, 5)}, ["input", "target_logits"],
                                  lambda input, target_logits: -np.mean(
                                      np.sum(np.exp(log_softmax(target_logits)) * log_softmax(input), axis=1))),
    "torch_bce_with_logits": ({"output": normal(4, 3), "target": uniform(0, 1, 4, 3), "pos_weight": uniform(0.5, 3, 3)},
                              ["output", "pos_weight"],
                              lambda output, target, pos_weight: np.mean(
                                  -(pos_weight * target * log_sigmoid(output) + (1 - target) * log_sigmoid(-output)))),
    "torch_kl_div": ({"logits": normal(3, 5), "target_logits": normal(3, 5)}, ["logits", "target_logits"],
                     lambda logits, target_logits: np.sum(np.exp(log_softmax(target_logits))
                                                          * (log_softmax(target_logits) - log_softmax(logits))) / 3),
    "torch_gaussian_nll": ({"input": normal(5, 2), "target": normal(5, 2), "var": uniform(0.2, 2, 5, 1)},
                           ["input", "var"],
                           lambda input, target, var: np.mean(0.5 * (np.log(var) + (input - target) ** 2 / var))),
    "torch_linear_mse": ({"x": X8, "weight": normal(2, 3), "bias": normal(2), "y": normal(6, 2)}, ["weight", "bias"],
                         lambda x, weight, bias, y: np.mean((x @ weight.T + bias - y) ** 2)),
    "torch_layer_norm": ({"x": normal(3, 4), "weight": normal(4), "bias": normal(4)}, ["x", "weight", "bias"],
                         lambda x, weight, bias: (x - x.mean(-1, keepdims=True))
                         / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * weight + bias),
    "torch_cosine_similarity": ({"input1": normal(4, 6), "input2": normal(4, 6)}, ["input1", "input2"],
                                lambda input1, input2: np.sum(input1 * input2, 1)
                                / (np.linalg.norm(input1, axis=1) * np.linalg.norm(input2, axis=1))),
    "keras_categorical_crossentropy": ({"y_true": np.array([[0.0, 1, 0], [0, 0, 1]]),
                                        "y_pred": np.array([[0.05, 0.95, 0.01], [0.1, 0.8, 0.1]])}, ["y_pred"],
                                       lambda y_true, y_pred: -np.sum(y_true * np.log(np.clip(
                                           y_pred / y_pred.sum(-1, keepdims=True), 1e-7, 1 - 1e-7)), -1)),
    "keras_bce_logits": ({"y_true": np.array([[0.0, 1.0], [0.0, 0.0]]), "y_pred": normal(2, 2)}, ["y_pred"],
                         lambda y_true, y_pred: np.mean(-(y_true * log_sigmoid(y_pred)
                                                          + (1 - y_true) * log_sigmoid(-y_pred)), -1)),
    "keras_huber_fn": ({"y_true": normal(3, 4), "y_pred": 2 * normal(3, 4)}, ["y_pred"],
                       lambda y_true, y_pred: np.mean(np.where(np.abs(y_pred - y_true) <= 1,
                                                               0.5 * (y_pred - y_true) ** 2,
                                                               np.abs(y_pred - y_true) - 0.5), -1)),
    "optax_l2_getting_started": ({"params": W8, "x": X8, "y": normal(6)}, ["params"],
                                 lambda params, x, y: np.mean(0.5 * (x @ params - y) ** 2)),
    "optax_softmax_ce": ({"logits": normal(3, 4), "labels": ONEHOT}, ["logits"],
                         lambda logits, labels: np.mean(-np.sum(labels * log_softmax(logits), -1))),
    "optax_kl_divergence": ({"log_predictions": log_softmax(normal(3, 4)), "targets": np.array(
        [[0.5, 0.5, 0.0, 0.0], [0.1, 0.2, 0.3, 0.4], [0.0, 0.0, 1.0, 0.0]])}, ["log_predictions"],
                            lambda log_predictions, targets: np.sum(
                                np.where(targets == 0, 0, targets * (np.log(np.where(targets == 0, 1, targets))
                                                                     - log_predictions)), -1)),
    "jax_at_add": ({"jax_array": normal(5, 6)}, ["jax_array"],
                   lambda jax_array: np.where((np.arange(5)[:, None] % 2 == 0) & (np.arange(6) >= 3),
                                              jax_array + 7.0, jax_array)),
    "jax_at_set": ({"x": normal(4), "y": normal(3)}, ["x", "y"],
                   lambda x, y: np.array([y[0], x[1] + y[0] + y[1], x[2] + y[2], x[3]])),
    "numpy_integer_array_indexing": ({"x": normal(9)}, ["x"],
                                     lambda x: np.array([x[3] ** 2, x[3] ** 2, x[1] * x[6], x[8] ** 2])),
    "numpy_mixed_indexing": ({"y": normal(5, 7)}, ["y"], lambda y: np.stack([y[0, 1:3], y[2, 1:3], y[4, 1:3]])),
}

# Snippets gradcli refuses, with the start of the message it must give (none today).
REFUSED: dict[str, str] = {}


def _finite_differences(reference, inputs, name, upstream):
    return central_differences(lambda moved: upstream * reference(**{**inputs, name: moved}), inputs[name],
                               relative=True)


def run(name):
    text = (HERE / f"{name}.py").read_text()
    inputs, wrt, _ = SNIPPETS[name]
    return api.grad(text, wrt=wrt, feeds=inputs, name=f"{name}.py")


def test_every_snippet_file_is_listed():
    assert {p.stem for p in HERE.glob("*.py")} == set(SNIPPETS) | set(REFUSED)
    assert len(SNIPPETS) + len(REFUSED) >= 40


def test_at_least_85_percent_run_as_written():
    assert len(SNIPPETS) / (len(SNIPPETS) + len(REFUSED)) >= 0.85


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippet_runs_as_written_and_agrees_with_numpy(name):
    inputs, wrt, reference = SNIPPETS[name]
    result = run(name)
    (value,) = result.outputs.values()
    expected = reference(**inputs)
    np.testing.assert_allclose(value, expected, rtol=1e-10, atol=1e-12)
    upstream = np.ones(np.shape(expected))  # the gradient of the sum of the outputs, as grad gives
    for x in wrt:
        numeric = _finite_differences(reference, inputs, x, upstream)
        np.testing.assert_allclose(result.gradients[x], numeric, rtol=1e-6, atol=1e-7, err_msg=f"d/d{x}")


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_snippet_is_refused_with_a_positioned_message(name):
    with pytest.raises(GradcliError) as info:
        api.evaluate((HERE / f"{name}.py").read_text(), name=f"{name}.py")
    assert str(info.value).startswith(REFUSED[name]) and info.value.pos is not None
