"""Training-loop pieces beside the optimizers (gradcli/language/lower/clipping.py, schedules.py,
optax_chain.py): gradient clipping, learning-rate schedules and optax's chain, each in a loop of
steps whose parameters are the real library's.

References: each program below run as Python by the library itself, float64, printing the same
values: PyTorch 2.13.0+cpu; TensorFlow 2.21.0 with Keras 3.15.1; JAX 0.10.2 (x64) with optax 0.2.8.
Before, each of these calls was an unknown function (or a refused option: Keras' clipnorm)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from gradcli import api

TORCH_HEAD = ("import torch\n"
              "w = torch.tensor([0.5, -0.5], dtype=torch.float64, requires_grad=True)\n"
              "b = torch.tensor(0.2, dtype=torch.float64, requires_grad=True)\n"
              "X = torch.tensor([[1.0, 2.0], [2.0, 1.0], [0.0, 1.0]], dtype=torch.float64)\n"
              "y = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)\n")
TORCH_LOOP = ("for t in range(6):\n"
              "    opt.zero_grad()\n"
              "    loss = ((X @ w + b - y) ** 2).mean()\n"
              "    loss.backward()\n"
              "    CLIP\n"
              "    opt.step()\n"
              "    SCHED\n"
              "print(w)\nprint(b)\nprint(loss)\n")


def torch_program(opt: str, clip: str = "pass", sched: str = "pass", extra: str = "") -> str:
    return TORCH_HEAD + opt + "\n" + TORCH_LOOP.replace("CLIP", clip).replace("SCHED", sched) + extra


def printed(program: str) -> list:
    """What the program's prints gave, in order, as floats."""
    return [np.asarray(v, dtype=np.float64) for v in api.evaluate(program, fixes=False).outputs.values()]


def assert_as_printed(program: str, expected: list, rtol: float = 1e-12) -> None:
    got = printed(program)
    assert len(got) == len(expected)
    for value, want in zip(got, expected):
        np.testing.assert_allclose(value, np.asarray(want, dtype=np.float64), rtol=rtol, atol=0)


# (the optimizer, the clip after backward): w, b, the last loss and, for clip_grad_norm_, the
# total norm it returned at the last step, as PyTorch 2.13.0 printed them
TORCH_CLIPS = {
    "SGD, clip_grad_norm_(max_norm=0.5)": (
        "opt = torch.optim.SGD([w, b], lr=0.1)", "total = torch.nn.utils.clip_grad_norm_([w, b], max_norm=0.5)",
        [[0.666444878979363, -0.298230250448049], 0.3469143624146509, 0.429669777705247, 2.6227698960817456]),
    "SGD momentum, norm_type=1": (
        "opt = torch.optim.SGD([w, b], lr=0.1, momentum=0.9)",
        "total = torch.nn.utils.clip_grad_norm_([w, b], 0.5, norm_type=1)",
        [[0.788134657018034, -0.15081134723692483], 0.45416104414924113, 0.15327997656002643, 2.6482757824267003]),
    "Adam, norm_type=inf": (
        "opt = torch.optim.Adam([w, b], lr=0.05)",
        "total = torch.nn.utils.clip_grad_norm_([w, b], 0.3, norm_type=float('inf'))",
        [[0.7994586626596655, -0.20000001475133683], 0.50018053820097, 0.09008924717277655, 0.8003964058270123]),
    "SGD, norm_type 3 by position": (
        "opt = torch.optim.SGD([w, b], lr=0.1)", "total = torch.nn.utils.clip_grad_norm_([w, b], 0.4, 3.0)",
        [[0.6586000446636004, -0.3078189753556869], 0.3398677524570057, 0.4614200111487055, 2.283781159646187]),
    "SGD, clip_grad_value_": (
        "opt = torch.optim.SGD([w, b], lr=0.1)", "torch.nn.utils.clip_grad_value_([w, b], clip_value=0.3)",
        [[0.6800000000000002, -0.31999999999999984], 0.3800000000000001, 0.4099999999999995]),
}


@pytest.mark.parametrize("case", list(TORCH_CLIPS))
def test_pytorch_s_gradient_clipping_in_a_training_loop(case):
    opt, clip, expected = TORCH_CLIPS[case]
    extra = "print(total)\n" if clip.startswith("total") else ""
    assert_as_printed(torch_program(opt, clip=clip, extra=extra), expected)


MODULE_CLIP = """import torch
import torch.nn as nn
from torch.nn.utils import clip_grad_norm_

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.tensor([0.5, -0.5], dtype=torch.float64))
        self.b = nn.Parameter(torch.tensor(0.1, dtype=torch.float64))

    def forward(self, x):
        return x @ self.w + self.b

model = Model()
X = torch.tensor([[1.0, 2.0], [2.0, 1.0]], dtype=torch.float64)
y = torch.tensor([1.0, 2.0], dtype=torch.float64)
opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.5)
for epoch in range(3):
    opt.zero_grad()
    loss = nn.MSELoss()(model(X), y)
    loss.backward()
    norm = clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
print(model.w)
print(model.b)
print(norm)
"""


def test_clip_grad_norm_of_a_module_s_parameters_imported_by_name():
    # PyTorch 2.13.0 printed: [1.0436616287382423, 0.04366162873824243] 0.462441085825495 1.0665830701236714
    assert_as_printed(MODULE_CLIP, [[1.0436616287382423, 0.04366162873824243], 0.462441085825495,
                                    1.0665830701236714])


# (the optimizer and scheduler): w, b, the last loss, scheduler.get_last_lr() after six epochs of
# step() then scheduler.step(), as PyTorch 2.13.0 printed them
TORCH_SCHEDULERS = {
    "StepLR": ("opt = torch.optim.SGD([w, b], lr=0.1, momentum=0.9)\n"
               "scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)",
               [[0.8190757341906723, -0.08088884663923186], 0.5338987167695471, 0.17908394302555494, [0.0125]]),
    "ExponentialLR": ("opt = torch.optim.Adam([w, b], lr=0.1)\n"
                      "scheduler = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.8)",
                      [[0.835956946967317, -0.1615630433439521], 0.5393581735137112, 0.010658601314347574,
                       [0.026214400000000013]]),
    "MultiStepLR": ("opt = torch.optim.SGD([w, b], lr=0.1)\n"
                    "scheduler = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[1, 3, 3], gamma=0.5)",
                    [[0.7988569896776406, -0.13336026117969824], 0.47064515807613166, 0.010987910159158317, [0.0125]]),
    "CosineAnnealingLR": ("opt = torch.optim.AdamW([w, b], lr=0.1)\n"
                          "scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2, eta_min=0.01)",
                          [[0.844480687424962, -0.1498271344772916], 0.5483138610221938, 0.01696366245116717, [0.01]]),
    "ConstantLR": ("opt = torch.optim.SGD([w, b], lr=0.1)\n"
                   "scheduler = torch.optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=3)",
                   [[0.8057026085048011, -0.11583081262002741], 0.4926192329218107, 0.006964400522385043, [0.1]]),
    "LinearLR": ("opt = torch.optim.Adam([w, b], lr=0.1)\n"
                 "scheduler = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=4)",
                 [[0.8801241422239563, -0.11788106798800131], 0.5828650480784271, 0.019892941710000535,
                  [0.10000000000000002]]),
    "LinearLR by position": ("opt = torch.optim.SGD([w, b], lr=0.2, momentum=0.5)\n"
                             "scheduler = torch.optim.lr_scheduler.LinearLR(opt, 1.0, 0.1, 3)",
                             [[0.7953304981455362, -0.11734612138412068], 0.5012434630015473, 0.006446230064935211,
                              [0.019999999999999997]]),
    "LambdaLR": ("opt = torch.optim.SGD([w, b], lr=0.1)\n"
                 "scheduler = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda=lambda epoch: 0.9 ** epoch / (1 + epoch))",
                 [[0.7944009224645208, -0.13987870027612662], 0.46493026593614944, 0.013840595144945789,
                  [0.007592014285714287]]),
}


@pytest.mark.parametrize("kind", list(TORCH_SCHEDULERS))
def test_a_pytorch_lr_scheduler_steps_the_learning_rate_as_pytorch_does(kind):
    opt, expected = TORCH_SCHEDULERS[kind]
    program = torch_program(opt, sched="scheduler.step()", extra="print(scheduler.get_last_lr())\n")
    assert_as_printed(program, expected)


KERAS_HEAD = """import tensorflow as tf
w = tf.Variable([0.5, -0.5], dtype=tf.float64)
b = tf.Variable(0.2, dtype=tf.float64)
X = tf.constant([[1.0, 2.0], [2.0, 1.0], [0.0, 1.0]], dtype=tf.float64)
y = tf.constant([1.0, 2.0, 0.5], dtype=tf.float64)
"""
KERAS_LOOP = """for step in range(5):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((tf.linalg.matvec(X, w) + b - y) ** 2)
    grads = tape.gradient(loss, [w, b])
    CLIP
    optimizer.apply_gradients(zip(grads, [w, b]))
print(w)
print(b)
"""
# (the optimizer, a clip of the gradients before apply_gradients): w and b after five steps as
# Keras 3.15.1 (TensorFlow 2.21.0) printed them; Keras holds the learning rate (and a schedule's
# value) in float32, and so does gradcli
KERAS = {
    "clipnorm": ("optimizer = tf.keras.optimizers.SGD(learning_rate=0.1, clipnorm=0.5)", "pass",
                 [[0.6596392662773363, -0.30760637612546704], 0.4500000037252903]),
    "global_clipnorm": ("optimizer = tf.keras.optimizers.Adam(learning_rate=0.1, global_clipnorm=0.5)", "pass",
                        [[0.9393826424595184, -0.04715786345901757], 0.6571864115530488]),
    "clipvalue": ("optimizer = tf.keras.optimizers.SGD(0.1, momentum=0.9, clipvalue=0.3)", "pass",
                  [[0.8943229935906382, -0.10567700640936195], 0.5943229935906381]),
    "tf.clip_by_global_norm": ("optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)",
                               "grads, norm = tf.clip_by_global_norm(grads, 0.5)",
                               [[0.6389131141119995, -0.3318680564153932], 0.322206246330685]),
    "ExponentialDecay": ("schedule = tf.keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5)\n"
                         "optimizer = tf.keras.optimizers.SGD(learning_rate=schedule)", "pass",
                         [[0.8038190184970996, -0.12534619977940584], 0.4782859970290511]),
    "ExponentialDecay staircase": (
        "schedule = tf.keras.optimizers.schedules.ExponentialDecay(initial_learning_rate=0.2, decay_steps=3, "
        "decay_rate=0.7, staircase=True)\noptimizer = tf.keras.optimizers.Adam(learning_rate=schedule)", "pass",
        [[1.001173056968027, 0.022732637861222385], 0.7314701348950658]),
    "PiecewiseConstantDecay": (
        "schedule = tf.keras.optimizers.schedules.PiecewiseConstantDecay([1, 3], [0.1, 0.05, 0.01])\n"
        "optimizer = tf.keras.optimizers.Adam(schedule)", "pass",
        [[0.7930303334321084, -0.20576465750860276], 0.4946817335779745]),
}


@pytest.mark.parametrize("case", list(KERAS))
def test_keras_clipping_options_and_schedules_in_a_custom_training_loop(case):
    opt, clip, expected = KERAS[case]
    assert_as_printed(KERAS_HEAD + opt + "\n" + KERAS_LOOP.replace("CLIP", clip), expected)


TF_TAPE = """import tensorflow as tf
x = tf.Variable([3.0, 4.0], dtype=tf.float64)
v = tf.Variable(2.0, dtype=tf.float64)
with tf.GradientTape() as tape:
    clipped, norm = tf.clip_by_global_norm([x * x, v], 5.0)
    loss = tf.reduce_sum(clipped[0] * tf.constant([1.0, 2.0], dtype=tf.float64)) + clipped[1] * 3.0
g = tape.gradient(loss, [x, v])
print(clipped[0])
print(clipped[1])
print(norm)
print(g[0])
print(g[1])
"""


def test_tf_clip_by_global_norm_under_a_tape_is_differentiated_as_tensorflow_does():
    # TensorFlow 2.21.0: the norm is differentiated too (the clipped values' gradient is not the scale's)
    assert_as_printed(TF_TAPE, [[2.4368866248324705, 4.332242888591058], 0.5415303610738823, 18.466185312619388,
                                [-0.39066413144919376, -0.4446583609990826], 0.7376564595859776])


OPTAX_HEAD = '''import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import optax

params = {"w": jnp.array([0.5, -0.5]), "b": jnp.array(0.1)}
X = jnp.array([[1.0, 2.0], [2.0, 1.0], [0.0, 1.0]])
y = jnp.array([1.0, 2.0, 0.5])

def loss_fn(p):
    return jnp.mean((X @ p["w"] + p["b"] - y) ** 2)

'''
OPTAX_LOOP = '''state = opt.init(params)
for i in range(5):
    grads = jax.grad(loss_fn)(params)
    updates, state = opt.update(grads, state, params)
    params = optax.apply_updates(params, updates)
print(params["w"])
print(params["b"])
print(loss_fn(params))
'''
# the transformation: params' w and b and the loss after five updates, as optax 0.2.8 printed them
OPTAX = {
    "opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-2))":
        [[0.5499957936062205, -0.44999884649091015], 0.15000315974527945, 1.1733333042741438],
    "opt = optax.chain(optax.clip(0.3), optax.sgd(0.1, momentum=0.9))":
        [[0.8943230000000001, -0.10567699999999991], 0.49432300000000007, 0.025088206614666764],
    "opt = optax.chain(optax.clip_by_global_norm(0.2), optax.adamw(0.05, weight_decay=0.1))":
        [[0.7349947771416725, -0.2400863237375049], 0.3451559562045384, 0.16552074058274718],
    "opt = optax.chain(optax.chain(optax.clip_by_global_norm(0.5)), optax.clip(0.1), optax.sgd(0.5))":
        [[0.7500000000000002, -0.25000000000000006], 0.35, 0.15999999999999984],
    "opt = optax.adam(optax.exponential_decay(0.1, transition_steps=2, decay_rate=0.5))":
        [[0.7697953847282277, -0.22927545831578505], 0.37106228106352107, 0.110255306911978],
    "schedule = optax.exponential_decay(init_value=0.2, transition_steps=2, decay_rate=0.5, transition_begin=1, "
    "staircase=True, end_value=0.06)\nopt = optax.sgd(learning_rate=schedule, momentum=0.5)":
        [[0.791956448605662, -0.0812871468180443], 0.46608964275185805, 0.007788018576434736],
    "opt = optax.sgd(optax.cosine_decay_schedule(0.1, decay_steps=3, alpha=0.1))":
        [[0.8222087231753087, -0.09966571017613168], 0.3967366300954733, 0.0149961763962243],
    "opt = optax.adamw(optax.piecewise_constant_schedule(0.1, {2: 0.5, 3: 0.1}), weight_decay=0.01)":
        [[0.7510809051424483, -0.24574682166242331], 0.3529132035078688, 0.15236620079650737],
    "opt = optax.rmsprop(optax.cosine_decay_schedule(0.05, 4, exponent=2.0), momentum=0.9)":
        [[1.339961266503899, 0.3490674951840592], 0.9524993092165628, 2.843760014637267],
    "opt = optax.chain(optax.clip_by_global_norm(1.0), optax.scale_by_adam(), optax.scale(-0.05))":
        [[0.7498111486359625, -0.24995268867530168], 0.35012858131772095, 0.15999777490591952],
    "opt = optax.chain(optax.scale_by_adam(0.8, b2=0.99, eps=1e-6, eps_root=1e-9), optax.add_decayed_weights(0.01), "
    "optax.scale(-0.1))": [[0.919680901442254, -0.06928219277878532], 0.5300649542010957, 0.06281955286977867],
    "opt = optax.chain(optax.add_decayed_weights(weight_decay=0.05), optax.sgd(0.1, momentum=0.9))":
        [[0.5985185176936535, -0.23537296129216181], 0.3332620257380621, 0.31643536303790676],
    "opt = optax.chain(optax.add_decayed_weights(), optax.sgd(0.1))":
        [[0.8228926419753086, -0.08142590946502058], 0.424845695473251, 0.010613204984832161],
    # (linear_schedule's rate is a float32, its int32 count divided in float32; warmup_cosine's too,
    # jnp.where joining the float32 warmup and the weakly typed float64 cosine)
    "opt = optax.sgd(optax.linear_schedule(0.1, 0.01, transition_steps=3, transition_begin=1))":
        [[0.828781118690898, -0.08541585387103529], 0.4118962132702855, 0.011747371871421062],
    "opt = optax.adam(optax.constant_schedule(0.05))":
        [[0.7427176883476123, -0.2567711398610737], 0.34341628234122895, 0.17888506097839119],
    "opt = optax.adamw(optax.warmup_cosine_decay_schedule(0.0, 0.1, warmup_steps=2, decay_steps=4, end_value=0.01))":
        [[0.7110784899726031, -0.28865279728930954], 0.3114256245582776, 0.28121779185843626],
    "opt = optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(optax.warmup_cosine_decay_schedule(0.01, 0.3, 3, "
    "10, exponent=1.5), momentum=0.9))":
        [[1.163395699980122, 0.36672880166980976], 0.7715849932033014, 1.7792213606525698],
}


@pytest.mark.parametrize("constructor", list(OPTAX))
def test_optax_chain_clipping_and_schedules_give_optax_s_parameters(constructor):
    assert_as_printed(OPTAX_HEAD + constructor + "\n" + OPTAX_LOOP, OPTAX[constructor])


def refused(program: str) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-m", "gradcli", "eval"], input=program, capture_output=True, text=True)
    return done.returncode, done.stdout, done.stderr.splitlines()[0] if done.stderr else ""


TORCH_SGD = TORCH_HEAD + "opt = torch.optim.SGD([w, b], lr=0.1)\n"
OPTAX_REFUSALS = OPTAX_HEAD.replace('jax.config.update("jax_enable_x64", True)\n', "")
REFUSALS = [
    (TORCH_SGD + "n = torch.nn.utils.clip_grad_norm_(w * 2, 1.0)\n",
     "<stdin>:7:38: error: torch.nn.utils.clip_grad_norm_(parameters, ...): give the leaf tensors whose .grad to "
     "clip: [w, b], model.parameters() of a module the program defines, or one leaf"),
    (TORCH_SGD + "n = torch.nn.utils.clip_grad_norm_([w, b], 1.0, norm_type=0)\n",
     "<stdin>:7:5: error: torch.nn.utils.clip_grad_norm_(norm_type=0) is not supported: gradcli reads a norm_type > 0 "
     "or inf"),
    (TORCH_SGD + "n = torch.nn.utils.clip_grad_norm_([w, b], 1.0, error_if_nonfinite=True)\n",
     "<stdin>:7:5: error: torch.nn.utils.clip_grad_norm_(error_if_nonfinite=True) is not supported: the norm is known "
     "only when the program runs; leave it out (gradcli reports a non-finite value itself)"),
    (TORCH_SGD + "s = torch.optim.lr_scheduler.StepLR(opt, step_size=0)\n",
     "<stdin>:7:5: error: torch.optim.lr_scheduler.StepLR(step_size=0): step_size must be a positive integer"),
    (TORCH_SGD + "s = torch.optim.lr_scheduler.StepLR(w, 2)\n",
     "<stdin>:7:37: error: torch.optim.lr_scheduler.StepLR(optimizer, ...): the optimizer must be a torch.optim "
     "optimizer the program made (PyTorch: TypeError)"),
    (TORCH_SGD + "s = torch.optim.lr_scheduler.ExponentialLR(opt, 0.9, last_epoch=3)\n",
     "<stdin>:7:5: error: torch.optim.lr_scheduler.ExponentialLR(last_epoch=3) is not supported: gradcli starts a "
     "schedule at its beginning; leave last_epoch out"),
    (TORCH_SGD + "s = torch.optim.lr_scheduler.ExponentialLR(opt, 0.9)\ns.step(3)\n",
     "<stdin>:8:1: error: ExponentialLR.step(epoch) is not supported (PyTorch deprecates the epoch): call step() "
     "once per epoch"),
    (TORCH_SGD + "s = torch.optim.lr_scheduler.ExponentialLR(opt, 0.9)\nd = s.state_dict()\n",
     "<stdin>:8:5: error: ExponentialLR.state_dict(...) is not supported: gradcli reads step() and get_last_lr()"),
    (TORCH_SGD + "s = torch.optim.lr_scheduler.LambdaLR(opt, 0.5)\n",
     "<stdin>:7:5: error: torch.optim.lr_scheduler.LambdaLR(lr_lambda=...) takes a function of the epoch: a lambda "
     "or a def"),
    (TORCH_SGD + "s = torch.optim.lr_scheduler.LambdaLR(opt, [lambda e: 0.5 ** e, lambda e: 1.0])\n",
     "<stdin>:7:5: error: torch.optim.lr_scheduler.LambdaLR: Expected 1 lr_lambdas, but got 2 (PyTorch: ValueError; "
     "the optimizer has one param group)"),
    (TORCH_SGD + "s = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=0)\n",
     "<stdin>:7:5: error: torch.optim.lr_scheduler.CosineAnnealingLR(T_max=0): T_max must not be 0 (PyTorch: "
     "ZeroDivisionError)"),
    (TORCH_SGD + "s = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[1.5, 3])\n",
     "<stdin>:7:5: error: torch.optim.lr_scheduler.MultiStepLR(milestones=...) takes a list of integers: "
     "milestones=[30, 80]"),
    (TORCH_SGD + "a = torch.optim.Adagrad([w], differentiable=True)\n",
     "<stdin>:7:5: error: torch.optim.Adagrad(differentiable=True) is not supported: leave it out"),
    (OPTAX_REFUSALS + "opt = optax.adagrad(0.1)\nu, s = opt.update(params, optax.adam(0.1).init(params))\n",
     "<stdin>:13:8: error: adagrad.update(grads, state): state must be what this optimizer's init or update gave"),
    (OPTAX_REFUSALS + "opt = optax.scale_by_adam(mu_dtype=jnp.float32)\n",
     "<stdin>:12:7: error: optax.scale_by_adam(mu_dtype=...) is not supported: leave it out (gradcli keeps the "
     "moments in float64)"),
    (OPTAX_REFUSALS + "opt = optax.add_decayed_weights(0.1, mask={'w': True, 'b': False})\n",
     "<stdin>:12:7: error: optax.add_decayed_weights(mask=...) is not supported: leave it out (every leaf is "
     "decayed)"),
    (OPTAX_REFUSALS + "opt = optax.chain(optax.add_decayed_weights(0.1), optax.sgd(0.1))\ns = opt.init(params)\n"
     "u, s = opt.update(params, s)\n",
     "<stdin>:14:8: error: add_decayed_weights.update(grads, state, params): the decayed weights need the params"),
    (OPTAX_REFUSALS + "opt = optax.lamb(0.1)\ns = opt.init(params)\nu, s = opt.update(params, s)\n",
     "<stdin>:14:8: error: lamb.update(grads, state, params): the decayed weights need the params"),
    (OPTAX_REFUSALS + "opt = optax.lamb(0.1, mask={'w': True, 'b': False})\n",
     "<stdin>:12:7: error: optax.lamb(mask=...) is not supported: leave it out (every leaf is decayed)"),
    (KERAS_HEAD + "c, n = tf.clip_by_global_norm(w, 1.0)\n",
     "<stdin>:6:31: error: tf.clip_by_global_norm(t_list, clip_norm): t_list must be a list or tuple of tensors "
     "(tf.clip_by_norm clips one tensor)"),
    (KERAS_HEAD + "o = tf.keras.optimizers.SGD(0.1, clipnorm=1.0, clipvalue=0.5)\n",
     "<stdin>:6:5: error: tf.keras.optimizers.SGD: only one of clipnorm, clipvalue and global_clipnorm can be set "
     "(Keras: ValueError)"),
    (KERAS_HEAD + "o = tf.keras.optimizers.Adam(0.1, clipnorm=-1.0, global_clipnorm=0.5)\n",
     "<stdin>:6:5: error: tf.keras.optimizers.Adam: only one of clipnorm, clipvalue and global_clipnorm can be set "
     "(Keras: ValueError)"),
    (KERAS_HEAD + "s = tf.keras.optimizers.schedules.ExponentialDecay(0.1, 0, 0.5)\n",
     "<stdin>:6:5: error: tf.keras.optimizers.schedules.ExponentialDecay: Argument `decay_steps` must be > 0. "
     "Received: decay_steps=0 (Keras: ValueError)"),
    (KERAS_HEAD + "s = tf.keras.optimizers.schedules.PiecewiseConstantDecay([1, 2], [0.1, 0.2])\n",
     "<stdin>:6:5: error: tf.keras.optimizers.schedules.PiecewiseConstantDecay: the length of boundaries should be "
     "1 less than the length of values (boundaries has 2, values 2; Keras: ValueError)"),
    (OPTAX_REFUSALS + "s = optax.cosine_decay_schedule(0.1, 0)\n",
     "<stdin>:12:5: error: optax.cosine_decay_schedule: the cosine_decay_schedule requires positive decay_steps, got "
     "decay_steps=0 (optax: ValueError)"),
    (TORCH_SGD + "s = torch.optim.lr_scheduler.StepLR(opt, 2, gamma=None)\n",
     "<stdin>:7:5: error: torch.optim.lr_scheduler.StepLR(gamma=None) is not supported: give a number"),
    (OPTAX_REFUSALS + "s = optax.cosine_decay_schedule(0.1, None)\n",
     "<stdin>:12:5: error: optax.cosine_decay_schedule(decay_steps=None) is not supported: give a number"),
    (TORCH_SGD + "s = torch.optim.lr_scheduler.ConstantLR(opt, factor=0.0, total_iters=2)\ns.step()\ns.step()\n",
     "<stdin>:9:1: error: ConstantLR(factor=0): at total_iters PyTorch divides the lr by the factor "
     "(ZeroDivisionError)"),
    (TORCH_SGD + "s = torch.optim.lr_scheduler.ConstantLR(opt, factor=2.0)\n",
     "<stdin>:7:5: error: torch.optim.lr_scheduler.ConstantLR: Constant multiplicative factor expected to be between "
     "0 and 1 (PyTorch: ValueError)"),
    (TORCH_SGD + "s = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.0)\n",
     "<stdin>:7:5: error: torch.optim.lr_scheduler.LinearLR: Starting multiplicative factor expected to be greater "
     "than 0 and less or equal to 1 (PyTorch: ValueError)"),
    (OPTAX_REFUSALS + "s = optax.warmup_cosine_decay_schedule(0.0, 0.1, 5, 5)\n",
     "<stdin>:12:5: error: optax.warmup_cosine_decay_schedule: the cosine_decay_schedule requires positive "
     "decay_steps, got decay_steps=0 (optax: ValueError)"),
    (OPTAX_REFUSALS + "s = optax.piecewise_constant_schedule(0.1, {2: -0.5})\n",
     "<stdin>:12:5: error: optax.piecewise_constant_schedule: `piecewise_constant_schedule` expects non-negative "
     "scale factors (optax: ValueError)"),
    (OPTAX_REFUSALS + "s = optax.piecewise_constant_schedule(0.1, {2: 0.5, 'x': 0.1})\n",
     "<stdin>:12:44: error: a dict's keys must be all strings or all integers"),
    (OPTAX_REFUSALS + "opt = optax.chain(optax.clip(1.0), 0.1)\n",
     "<stdin>:12:7: error: optax.chain(...): each argument must be an optax transformation (optax.adam(1e-3), "
     "optax.clip_by_global_norm(1.0))"),
    (OPTAX_REFUSALS + "opt = optax.chain(optax.clip(1.0), optax.sgd(0.1))\ns = optax.sgd(0.1).init(params)\n"
     "u, s = opt.update(params, s)\n",
     "<stdin>:14:8: error: chain.update(grads, state): state must be what this optimizer's init or update gave"),
]


@pytest.mark.parametrize("program, message", REFUSALS)
def test_a_clip_or_schedule_gradcli_does_not_read_is_refused_with_its_place_and_exit_2(program, message):
    code, out, first_line = refused(program)
    assert (code, out, first_line) == (2, "", message)


EXPONENTIAL_DECAY = """import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import optax
params = jnp.array([0.5, -0.5])
opt = optax.sgd(optax.exponential_decay(0.1, 3, 0.96))
state = opt.init(params)
for i in range(3):
    updates, state = opt.update(2 * params, state)
    params = optax.apply_updates(params, updates)
print(params)
"""


def test_optax_exponential_decay_at_a_fractional_exponent_warns_that_xla_s_float32_power_may_differ():
    # optax 0.2.8 (JAX 0.10.2): [0.2585890299160192, -0.2585890299160192]; the rates are float32's
    # (0.1 * 0.96 ** (count / 3) in float32), whose power XLA takes its own way
    result = api.evaluate(EXPONENTIAL_DECAY, fixes=False)
    np.testing.assert_allclose(result.outputs["params"], [0.2585890299160192, -0.2585890299160192], rtol=1e-12)
    assert [(d.kind, d.op, d.pos.line, d.pos.column) for d in result.diagnostics] == \
        [("library_rounding", "optax.exponential_decay", 6, 17)]
    staircase = api.evaluate(EXPONENTIAL_DECAY.replace("0.96)", "0.96, staircase=True)"), fixes=False)
    assert staircase.diagnostics == []


# Adagrad: w, b and the last loss after six steps (PyTorch 2.13.0) or five updates (optax 0.2.8)
TORCH_ADAGRAD = {
    "opt = torch.optim.Adagrad([w, b])":
        [[0.535616478546384, -0.46435735285204416], 0.23565265794690698, 1.098219224130329],
    "opt = torch.optim.Adagrad([w, b], lr=0.1, lr_decay=0.1, weight_decay=0.01, initial_accumulator_value=0.5, "
    "eps=1e-6)": [[0.73549847609935, -0.2590812157876905], 0.4380211562138883, 0.14971748141363508],
    "opt = torch.optim.Adagrad([w, b], 0.2, 0.0, 0.0, 0.1, maximize=False)":
        [[0.8137751475602285, -0.16431314130536304], 0.5436704580459181, 0.005782281965268554],
}
OPTAX_ADAGRAD = {
    "opt = optax.adagrad(0.1)":
        [[0.7518344088752118, -0.24392763693614564], 0.35683975364573095, 0.1468751748051525],
    "opt = optax.adagrad(0.2, initial_accumulator_value=0.0, eps=1e-6)":
        [[0.8353299191826703, -0.14511083812998574], 0.4629111482663436, 0.011131401931351037],
    "opt = optax.chain(optax.clip_by_global_norm(0.5), optax.adagrad(optax.cosine_decay_schedule(0.3, 4)))":
        [[0.8344387265228551, -0.09930845988812562], 0.4635802437120634, 0.009800596068921131],
    # LAMB: Adam's step, the decayed weights, each leaf's trust ratio |p| / |u|
    "opt = optax.lamb(0.05)": [[0.625890442149049, -0.37402106253589984], 0.12762815625, 0.8451441633140604],
    "opt = optax.lamb(0.02, b1=0.8, weight_decay=0.1, eps=1e-5)":
        [[0.5473832468481442, -0.4475901831305596], 0.11040808032, 1.2585340177015105],
    "opt = optax.chain(optax.scale_by_adam(), optax.scale_by_trust_ratio(min_norm=0.3, trust_coefficient=0.5, "
    "eps=1e-3), optax.scale(-0.1))": [[0.6258037866350173, -0.37411613841155283], 0.17492450660154385,
                                      0.7615160949682009],
    "opt = optax.lamb(optax.exponential_decay(0.05, 2, 0.5, staircase=True), weight_decay=0.01)":
        [[0.5810622586704011, -0.4180920979169067], 0.11727929910138683, 1.077532670035514],
}


@pytest.mark.parametrize("constructor", list(TORCH_ADAGRAD))
def test_torch_adagrad_steps_as_pytorch_does(constructor):
    assert_as_printed(torch_program(constructor), TORCH_ADAGRAD[constructor])


@pytest.mark.parametrize("constructor", list(OPTAX_ADAGRAD))
def test_optax_adagrad_and_lamb_update_as_optax_does(constructor):
    assert_as_printed(OPTAX_HEAD + constructor + "\n" + OPTAX_LOOP, OPTAX_ADAGRAD[constructor])


TWO_SCHEDULERS = """import torch
w = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
v = torch.tensor([0.5, -1.5], dtype=torch.float64, requires_grad=True)
opt = torch.optim.SGD([w, v], lr=0.3, momentum=0.5)
first = torch.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0 / (e + 2))
second = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=3)
for epoch in range(5):
    opt.zero_grad()
    loss = (w * w).sum() + (w * v).sum() ** 2
    loss.backward()
    n = torch.nn.utils.clip_grad_norm_([w, w, v], 2.0)
    opt.step()
    first.step()
    second.step()
print(w)
print(v)
print(n)
print(second.get_last_lr())
print(first.get_last_lr())
"""


def test_two_schedulers_on_one_optimizer_and_a_parameter_clipped_twice_are_pytorch_s():
    # PyTorch 2.13.0: LambdaLR's base is the lr before any scheduler (initial_lr), each scheduler's
    # last lr is its own; w given twice counts twice in the norm and is scaled twice (in-place mul_)
    assert_as_printed(TWO_SCHEDULERS, [[1.0027760056183375, 1.9193871317987383],
                                       [0.7768786372899751, -0.9522612613838506], 13.420510457715668,
                                       [0.12857142857142867], [0.04285714285714285]])


KERAS_FLOAT64 = """import keras
keras.config.set_floatx("float64")
import tensorflow as tf
w = tf.Variable([0.5, -0.5], dtype=tf.float64)
X = tf.constant([[1.0, 2.0], [2.0, 1.0], [0.0, 1.0]], dtype=tf.float64)
y = tf.constant([1.0, 2.0, 0.5], dtype=tf.float64)
schedule = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=3, decay_rate=0.9)
optimizer = keras.optimizers.Adam(learning_rate=schedule, clipnorm=0.3)
for step in range(4):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((tf.linalg.matvec(X, w) - y) ** 2)
    grads = tape.gradient(loss, [w])
    optimizer.apply_gradients(zip(grads, [w]))
print(w)
"""


def test_a_keras_schedule_is_float32_even_when_keras_floatx_is_float64():
    # Keras 3.15.1 (TensorFlow 2.21.0): [0.8792788125680826, -0.11999110906908263]; a float64 schedule
    # would end at [0.8792788133153883, -0.11999110831870917]
    assert_as_printed(KERAS_FLOAT64, [[0.8792788125680826, -0.11999110906908263]], rtol=1e-14)


def test_tf_clip_by_global_norm_of_a_list_of_one_shape_and_of_a_zero_clip_norm():
    # TensorFlow 2.21.0: [1.0954451150103321, 1.4605934866804429] [0.3651483716701107, 0.7302967433402214]
    # 5.477225575051661; with clip_norm 0 (1 / 0 is inf to TensorFlow): [0. 0.] 5.0
    head = ("import tensorflow as tf\nx = tf.constant([3.0, 4.0], dtype=tf.float64)\n"
            "y = tf.constant([1.0, 2.0], dtype=tf.float64)\n")
    assert_as_printed(head + "c, n = tf.clip_by_global_norm([x, y], 2.0)\nprint(c[0])\nprint(c[1])\nprint(n)\n",
                      [[1.0954451150103321, 1.4605934866804429], [0.3651483716701107, 0.7302967433402214],
                       5.477225575051661])
    result = api.evaluate(head + "c, n = tf.clip_by_global_norm([x], 0.0)\nprint(c[0])\nprint(n)\n", fixes=False)
    assert [np.asarray(v).tolist() for v in result.outputs.values()] == [[0.0, 0.0], 5.0]
    assert result.diagnostics == []


def test_a_dict_literal_with_integer_keys_is_indexed_by_them_and_a_mixed_one_is_refused():
    # (optax's boundaries_and_scales is written {step: scale}); Python: {1: 2.0, 3: 4.0}[3] is 4.0
    assert float(api.evaluate("d = {1: 2.0, 3: 4.0}\ny = d[3]\n", fixes=False).outputs["y"]) == 4.0
    assert refused("d = {1: 2.0, 3: 4.0}\ny = d[2]\n") == (2, "", "<stdin>:2:6: error: this dict's keys are 1, 3")
    assert refused("d = {1: 2.0, 'a': 4.0}\n") == (2, "", "<stdin>:1:5: error: a dict's keys must be all strings or "
                                                         "all integers")


def test_lambda_lr_takes_a_list_of_one_lambda_for_the_one_param_group():
    program = ("import torch\nw = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)\n"
               "opt = torch.optim.SGD([w], lr=0.3)\n"
               "s = torch.optim.lr_scheduler.LambdaLR(opt, [lambda e: 0.5 ** e])\n"
               "for i in range(3):\n    opt.zero_grad()\n    (w * w).sum().backward()\n    opt.step()\n    s.step()\n"
               "print(w)\nprint(s.get_last_lr())\n")
    # PyTorch 2.13.0: [0.23800000000000002, 0.47600000000000003] [0.0375]
    assert_as_printed(program, [[0.23800000000000002, 0.47600000000000003], [0.0375]])


TIE = """import tensorflow as tf
x = tf.Variable([3.0, 4.0], dtype=tf.float64)
with tf.GradientTape() as tape:
    clipped, norm = tf.clip_by_global_norm([x], 5.0)
    loss = tf.reduce_sum(clipped[0] * tf.constant([1.0, 2.0], dtype=tf.float64))
g = tape.gradient(loss, x)
print(g)
"""


def test_tf_clip_by_global_norm_at_its_bound_passes_the_gradient_as_tensorflow_s_minimum_does():
    # the norm is clip_norm exactly: TensorFlow 2.21.0's minimum gives its gradient to 1 / norm, and
    # the tape's gradient is [-0.3200000000000003, 0.23999999999999977] (split evenly it would be
    # [0.34, 1.12])
    result = api.evaluate(TIE, fixes=False)
    np.testing.assert_allclose(result.outputs["g"], [-0.3200000000000003, 0.23999999999999977], rtol=1e-12)
    assert result.diagnostics == []
