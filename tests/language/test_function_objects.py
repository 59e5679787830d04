"""Function objects of pasted code: PyTorch's modules (`criterion = nn.MSELoss(); criterion(x, t)`),
Keras' loss objects (`keras.losses.BinaryCrossentropy(from_logits=True)(t, x)`), and
`functools.partial`; and the settings lines that change no number (`jax.config.update(...)`).

References: what the libraries printed for the same programs, value and gradient with respect to x
(flattened), PyTorch 2.13.0+cpu in float64 and Keras 3.15.1 on TensorFlow 2.21.0 with
keras.config.set_floatx("float64"), for
x = [[0.3, -1.2, 2.0], [1.5, 0.2, -0.7]], t = [[0.1, 0.0, 1.0], [1.0, 0.5, 0.0]], lab = [2, 0]."""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

TORCH_HEAD = ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
              "x = torch.tensor([[0.3, -1.2, 2.0], [1.5, 0.2, -0.7]], dtype=torch.float64, requires_grad=True)\n"
              "t = torch.tensor([[0.1, 0.0, 1.0], [1.0, 0.5, 0.0]], dtype=torch.float64)\n"
              "lab = torch.tensor([2, 0])\n")
KERAS_HEAD = ("import tensorflow as tf\nimport keras\n"
              "x = tf.Variable([[0.3, -1.2, 2.0], [1.5, 0.2, -0.7]], dtype=tf.float64)\n"
              "t = tf.constant([[0.1, 0.0, 1.0], [1.0, 0.5, 0.0]], dtype=tf.float64)\n"
              "lab = tf.constant([2, 0])\n")

TORCH = {  # program: (the loss, d loss / dx) as PyTorch printed them
    "y = nn.MSELoss()(x, t)": (0.5516666666666666, [0.06666666666666665, -0.39999999999999997, 0.3333333333333333, 0.16666666666666666, -0.09999999999999999, -0.2333333333333333]),
    "crit = nn.MSELoss(reduction='sum')\ny = crit(x, t)": (3.31, [0.39999999999999997, -2.4, 2.0, 1.0, -0.6, -1.4]),
    "y = nn.L1Loss()(x, t)": (0.65, [0.16666666666666666, -0.16666666666666666, 0.16666666666666666, 0.16666666666666666, -0.16666666666666666, -0.16666666666666666]),
    "y = nn.SmoothL1Loss(beta=0.5)(x, t)": (0.42166666666666663, [0.06666666666666665, -0.16666666666666666, 0.16666666666666666, 0.16666666666666666, -0.09999999999999999, -0.16666666666666666]),
    "y = nn.HuberLoss(delta=0.5)(x, t)": (0.21083333333333332, [0.033333333333333326, -0.08333333333333333, 0.08333333333333333, 0.08333333333333333, -0.049999999999999996, -0.08333333333333333]),
    "y = nn.HuberLoss('sum', 0.5)(x, t)": (1.265, [0.19999999999999998, -0.5, 0.5, 0.5, -0.3, -0.5]),
    "y = nn.BCEWithLogitsLoss()(x, t)": (0.4195506531832222, [0.07907375280194318, 0.03857920275016373, -0.01986715367035295, -0.030404253967726058, 0.008305666218746325, 0.05530203797197231]),
    "y = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64))(x, t)": (0.45881822471144035, [0.07907375280194318, 0.03857920275016373, -0.009933576835176474, -0.030404253967726058, -0.02920816733854718, 0.05530203797197231]),
    "y = nn.BCELoss()(torch.sigmoid(x), t)": (0.4195506531832222, [0.07907375280194318, 0.03857920275016374, -0.01986715367035295, -0.030404253967726058, 0.008305666218746325, 0.05530203797197232]),
    "y = nn.CrossEntropyLoss()(x, lab)": (0.2630842301053548, [0.0746594310916956, 0.016658770816080696, -0.09131820190777629, -0.13855463964436304, 0.09850535214154654, 0.04004928750281647]),
    "y = nn.CrossEntropyLoss(label_smoothing=0.1)(x, lab)": (0.40308423010535477, [0.05799276442502893, -7.895850585970532e-06, -0.05798486857444296, -0.10522130631102972, 0.08183868547487988, 0.023382620836149805]),
    "y = nn.CrossEntropyLoss(torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64))(x, lab)": (0.2835552251562095, [0.049772954061130394, 0.011105847210720464, -0.06087880127185086, -0.18473951952581738, 0.13134046952206205, 0.05339905000375529]),
    "y = nn.NLLLoss()(F.log_softmax(x, dim=1), lab)": (0.2630842301053548, [0.0746594310916956, 0.016658770816080696, -0.09131820190777629, -0.13855463964436304, 0.09850535214154654, 0.04004928750281647]),
    "y = nn.KLDivLoss(reduction='batchmean')(F.log_softmax(x, dim=1), torch.softmax(t, dim=1))": (0.1905791603454564, [-0.03990278980594191, -0.08700141334540287, 0.12690420315134476, 0.10820516482780991, -0.05509259071770266, -0.05311257411010733]),
    "y = (nn.Softmax(dim=1)(x) * t).sum()": (1.653691555255607, [-0.10934552821442167, -0.027730039385214688, 0.13707556759963638, 0.1291111216172885, -0.06331846666655447, -0.06579265495073398]),
    "y = (nn.LogSoftmax(1)(x) * t).sum()": (-1.5285841923349484, [-0.06425074840173031, -0.03664929579537753, 0.10090004419710775, -0.08433608106691087, 0.20448394357536037, -0.12014786250844942]),
    "y = (nn.ReLU()(x) * t).sum()": (3.63, [0.1, 0.0, 1.0, 1.0, 0.5, 0.0]),
    "y = (nn.LeakyReLU(0.2)(x) * t).sum()": (3.63, [0.1, 0.0, 1.0, 1.0, 0.5, 0.0]),
    "y = (nn.ELU(alpha=0.5)(x) * t).sum()": (3.63, [0.1, 0.0, 1.0, 1.0, 0.5, 0.0]),
    "y = (nn.GELU(approximate='tanh')(x) * t).sum()": (3.430632078313337, [0.07322954516388018, -0.0, 1.0860992566236183, 1.127710793151433, 0.3287290745978498, 0.0]),
    "y = (nn.Softplus(beta=2.0)(x) * t).sum()": (3.813496850370058, [0.06456563062257954, 0.0, 0.9820137900379085, 0.9525741268224333, 0.299343830056226, 0.0]),
    "y = (nn.Hardtanh(-0.5, 0.5)(x) * t).sum()": (1.13, [0.1, 0.0, 0.0, 0.0, 0.5, 0.0]),
    "y = (nn.Tanh()(x) + nn.Sigmoid()(x)).sum()": (4.305776894896338, [1.1595952735173751, 0.48291443685421476, 0.17564441025667105, 0.32985309099398147, 1.2085595556779765, 0.8564524632755677]),
    "y = (nn.SiLU()(x) * nn.Mish()(x)).sum()": (5.3439462894467695, [0.2696459163809115, -0.005001653156505015, 4.004144037229395, 2.796209576347213, 0.1591561708526544, -0.09014347945971643]),
    "loss_fn = nn.MSELoss(reduction='sum')\ndef f(z):\n    return loss_fn(z, t) + nn.Softplus()(z).sum()\ny = f(x)": (9.457303919099333, [0.974442516811659, -2.1685247834990173, 2.880797077977882, 1.8175744761936437, -0.05016600268752203, -1.0681877721681658]),
    "from functools import partial\nf = partial(F.mse_loss, reduction='sum')\ny = f(x, t)": (3.31, [0.39999999999999997, -2.4, 2.0, 1.0, -0.6, -1.4]),
    "import functools\nf = functools.partial(torch.pow, x)\ny = f(2.0).sum()": (8.309999999999999, [0.6, -2.4, 4.0, 3.0, 0.4, -1.4]),
}

KERAS = {  # program: (the loss, d loss / dx) as Keras printed them (the object's default reduction: the mean)
    "y = keras.losses.MeanSquaredError()(t, x)": (0.5516666666666666, [0.06666666666666665, -0.39999999999999997, 0.3333333333333333, 0.16666666666666666, -0.09999999999999999, -0.2333333333333333]),
    "y = keras.losses.MeanSquaredError(reduction='sum')(t, x)": (1.1033333333333333, [0.1333333333333333, -0.7999999999999999, 0.6666666666666666, 0.3333333333333333, -0.19999999999999998, -0.4666666666666666]),
    "y = tf.keras.losses.MeanSquaredError(name='m')(t, x)": (0.5516666666666666, [0.06666666666666665, -0.39999999999999997, 0.3333333333333333, 0.16666666666666666, -0.09999999999999999, -0.2333333333333333]),
    "y = keras.losses.MeanAbsoluteError()(t, x)": (0.6499999999999999, [0.16666666666666666, -0.16666666666666666, 0.16666666666666666, 0.16666666666666666, -0.16666666666666666, -0.16666666666666666]),
    "y = keras.losses.BinaryCrossentropy(from_logits=True)(t, x)": (0.41955065318322216, [0.07907375280194315, 0.03857920275016372, -0.019867153670352924, -0.03040425396772605, 0.008305666218746316, 0.05530203797197231]),
    "y = keras.losses.BinaryCrossentropy(True, 0.1)(t, x)": (0.4625506531832221, [0.07240708613527647, 0.03024586941683039, -0.011533820337019593, -0.02207092063439272, 0.008305666218746316, 0.04696870463863898]),
    "tn = t / tf.reduce_sum(t, axis=1, keepdims=True)\n"
    "y = keras.losses.CategoricalCrossentropy(from_logits=True)(tn, x)": (0.5570236240447487, [0.029204885637150138, 0.016658770816080696, -0.04586365645323082, 0.028112027022303643, -0.0681613145251201, 0.04004928750281648]),
    "tn = t / tf.reduce_sum(t, axis=1, keepdims=True)\n"
    "y = tf.reduce_sum(keras.losses.CategoricalCrossentropy(from_logits=True, reduction=None)(tn, x) "
    "* tf.constant([1.0, 3.0], dtype=tf.float64))": (2.629708345272002, [0.058409771274300276, 0.03331754163216139, -0.09172731290646163, 0.16867216213382186, -0.40896788715072063, 0.2402957250168989]),
    "y = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(lab, x)": (0.2630842301053548, [0.0746594310916956, 0.016658770816080696, -0.09131820190777629, -0.13855463964436304, 0.09850535214154656, 0.04004928750281648]),
    "y = keras.losses.Huber(delta=0.5)(t, x)": (0.21083333333333332, [0.033333333333333326, -0.08333333333333333, 0.08333333333333333, 0.08333333333333333, -0.049999999999999996, -0.08333333333333333]),
    "y = keras.losses.SquaredHinge()(t, x)": (0.6251500000000001, [-0.03233333333333333, -0.0, -0.0, -0.0, -0.15, -0.0]),
    "y = keras.losses.Poisson()(t, tf.exp(x))": (1.9349643610862066, [0.20830980249736414, 0.050199035318700354, 1.0648426854106965, 0.5802815154418466, 0.12023379984945069, 0.08276421729856825]),
}


def loss_and_gradient(program: str):
    result = api.grad(program, wrt=["x"], of=["y"], fixes=False)
    return float(result.outputs["y"]), np.ravel(result.gradients["x"])


@pytest.mark.parametrize("head, table, program", [(TORCH_HEAD, TORCH, p) for p in TORCH]
                         + [(KERAS_HEAD, KERAS, p) for p in KERAS])
def test_a_module_or_loss_object_is_its_library_s_function_with_the_constructor_s_arguments(head, table, program):
    # a PyTorch module is its functional; a Keras loss object reduces its function's per-sample losses
    value, gradient = loss_and_gradient(head + program)
    expected_value, expected_gradient = table[program]
    assert value == pytest.approx(expected_value, rel=1e-12)
    np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-11, atol=1e-15)


def test_keras_log_cosh_object_agrees_within_keras_own_float32_log_2():
    # Keras' log_cosh subtracts ops.log(2.0) computed in float32 (0.23984389478863938 printed);
    # the exact value is gradcli's; the gradients agree to the last bits
    value, gradient = loss_and_gradient(KERAS_HEAD + "y = keras.losses.LogCosh()(t, x)")
    assert value == pytest.approx(0.23984389478863938, rel=1e-7)
    assert value == pytest.approx(float(np.mean(np.log(np.cosh(
        np.array([[0.2, -1.2, 1.0], [0.5, -0.3, -0.7]]))))), rel=1e-14)
    np.testing.assert_allclose(gradient, [0.03289588670415067, -0.1389424345020259, 0.1269323593259608,
                                          0.07701952621000163, -0.04855210207526514, -0.10072796285286054], rtol=1e-12)


@pytest.mark.parametrize("program, message", [
    ("y = nn.MSELoss('mean')(x, t)", "MSELoss() takes none positional arguments; give the others by name"),
    ("y = nn.Softmax(1, 2)(x)", "Softmax() takes at most 1 (dim) positional arguments; give the others by name"),
    ("from functools import partial\nf = partial(2.0, x)", "partial(f, ...) needs a function first: a def, a lambda"),
])
def test_a_function_object_built_wrong_is_refused_with_its_reason(program, message):
    with pytest.raises(GradcliError, match=message.replace("(", r"\(").replace(")", r"\)")):
        api.evaluate(TORCH_HEAD + program, fixes=False)


def test_a_keras_reduction_it_does_not_know_is_refused_naming_keras_reductions():
    with pytest.raises(GradcliError, match="Keras' reductions are 'sum_over_batch_size', 'mean', 'sum', 'none'"):
        api.evaluate(KERAS_HEAD + "y = keras.losses.MeanSquaredError(reduction='average')(t, x)", fixes=False)


@pytest.mark.parametrize("line", [
    'jax.config.update("jax_enable_x64", True)',
    'keras.config.set_floatx("float64")',
    'tf.keras.backend.set_floatx("float32")',
    "torch.set_default_dtype(torch.float64)",
    "np.set_printoptions(precision=3)",
    "tf.config.run_functions_eagerly(True)",
])
def test_a_library_setting_that_changes_no_number_is_read_as_nothing(line):
    program = f"import jax\nimport keras\nimport numpy as np\nimport tensorflow as tf\nimport torch\n{line}\ny = np.sin(x)\n"
    result = api.grad(program, wrt=["x"], feeds={"x": 0.5}, fixes=False)
    assert float(result.outputs["y"]) == np.sin(0.5) and float(result.gradients["x"]) == np.cos(0.5)


def test_a_half_type_setting_is_refused_naming_dtype_with_exit_2():
    program = 'import keras\nkeras.config.set_floatx("float16")\ny = keras.ops.sin(1.0)\n'
    done = subprocess.run([sys.executable, "-m", "gradcli", "eval"], input=program, capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith('<stdin>:2:1: error: keras.config.set_floatx(float16): gradcli computes in '
                                  'float64 unless --dtype says otherwise; leave this line out and give --dtype float16')


@pytest.mark.parametrize("module", ["nn.Bilinear(2, 3, 4)", "nn.Conv2d(1, 4, 3)", "nn.Embedding(10, 3)", "nn.LSTM(4, 8)"])
def test_a_module_with_weights_of_its_own_is_refused_naming_the_functional(module):
    with pytest.raises(GradcliError, match=r"draws its weights at random \(a new draw at each run\), so it has no one "
                                           r"value or gradient: write the weights in the program"):
        api.evaluate(TORCH_HEAD + f"model = {module}\n", fixes=False)


def test_a_function_object_printed_is_refused_as_no_number():
    with pytest.raises(GradcliError, match=re.escape("this is not a number: a function, an optimizer")):
        api.evaluate(TORCH_HEAD + "crit = nn.MSELoss()\nprint(crit)\n", fixes=False)
