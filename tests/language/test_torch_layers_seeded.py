"""torch.nn.Linear after torch.manual_seed: PyTorch's initial weights bit for bit (its
reset_parameters on the CPU generator), the layer as a module of parameters (in a program's
nn.Module, in nn.Sequential), trained by torch.optim; the refusal without a seed.

References: PyTorch 2.13.0+cpu, each tensor printed with .reshape(-1).tolist() (a float32 value
printed as the float64 that holds it exactly), the training programs' numbers as .tolist() and
.item() of the same program run by PyTorch."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from gradcli import api

HEAD = "import torch\nimport torch.nn as nn\n"


def outputs(program: str, names: list[str]) -> dict:
    return api.evaluate(HEAD + program + "".join(f"print({name})\n" for name in names), fixes=False).outputs


def gradcli(*args: str, program: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gradcli", *args], input=HEAD + program, capture_output=True,
                          text=True)


# (seed, in_features, out_features): (weight row by row, bias), float32, as PyTorch 2.13.0+cpu drew them
FLOAT32_DRAWS = {
    (0, 3, 2): ([-0.004322517663240433, 0.3097158372402191, -0.4751853346824646, -0.4248946011066437,
                 -0.2223689705133438, 0.15482072532176971], [-0.011439144611358643, 0.45777493715286255]),
    (1, 1, 1): ([0.5152631998062134], [-0.44137823581695557]),
    (42, 5, 3): ([0.34191203117370605, 0.3711908161640167, -0.10476983338594437, 0.41081544756889343,
                  -0.09798609465360641, 0.09024354070425034, -0.21772818267345428, 0.2626407742500305,
                  0.3942379653453827, -0.3280884921550751, 0.38871634006500244, 0.08370018005371094,
                  0.3304053544998169, 0.06056639179587364, 0.2156410664319992],
                 [-0.06314253807067871, 0.34475061297416687, 0.06610215455293655]),
    (12345, 4, 7): ([0.48171818256378174, 0.37960654497146606, 0.492143452167511, -0.038932740688323975,
                     -0.41678404808044434, -0.32156890630722046, -0.13256847858428955, 0.0676497220993042,
                     -0.16239327192306519, -0.28805339336395264, -0.040556132793426514, 0.3153534531593323,
                     0.4157174825668335, -0.24686521291732788, -0.28666335344314575, -0.023032307624816895,
                     0.22009903192520142, 0.22382134199142456, -0.18611198663711548, 0.173179030418396,
                     -0.08500957489013672, -0.060006022453308105, -0.40547508001327515, 0.35817021131515503,
                     -0.3525955080986023, 0.124611496925354, -0.2502393126487732, -0.42152678966522217],
                    [-0.031850457191467285, 0.16590923070907593, -0.45873767137527466, 0.036146581172943115,
                     -0.18798691034317017, -0.07122629880905151, -0.22296571731567383]),
    (2 ** 32 + 9, 2, 2): ([0.22031253576278687, -0.27998217940330505, -0.028430746868252754, 0.39226552844047546],
                          [0.5910907983779907, 0.6095735430717468]),
    (7, 10, 1): ([0.02208695374429226, -0.19049358367919922, 0.10069431364536285, 0.09922611713409424,
                  -0.16901642084121704, -0.04739532992243767, -0.18525506556034088, 0.08205248415470123,
                  -0.08518154174089432, 0.22216160595417023], [0.22448575496673584]),
}
# torch.manual_seed(5); nn.Linear(3, 2, dtype=torch.float64): 53-bit draws, a fused multiply-add
FLOAT64_DRAW = ([0.1639848046113932, -0.2774076646872625, -0.16070242277498706, -0.2134664768990594,
                 -0.27006466577156346, 0.4057949067101207], [0.09156511008993141, 0.2540875527224693])


@pytest.mark.parametrize("seed, n_in, n_out", list(FLOAT32_DRAWS))
def test_linear_draws_pytorchs_float32_initial_weights_bit_for_bit(seed, n_in, n_out):
    out = outputs(f"torch.manual_seed({seed})\nlayer = nn.Linear({n_in}, {n_out})\n"
                  "w = layer.weight\nb = layer.bias\n", ["w", "b"])
    weight, bias = FLOAT32_DRAWS[(seed, n_in, n_out)]
    assert np.shape(out["w"]) == (n_out, n_in)
    assert np.ravel(out["w"]).tolist() == weight
    assert np.ravel(out["b"]).tolist() == bias


@pytest.mark.parametrize("how", ["nn.Linear(3, 2, dtype=torch.float64)",
                                 "nn.Linear(3, 2)  # after set_default_dtype"])
def test_a_float64_linear_draws_pytorchs_float64_weights(how):
    setting = "torch.set_default_dtype(torch.float64)\n" if "default" in how else ""
    out = outputs(f"{setting}torch.manual_seed(5)\nlayer = {how}\nw = layer.weight\nb = layer.bias\n", ["w", "b"])
    assert np.ravel(out["w"]).tolist() == FLOAT64_DRAW[0]
    assert np.ravel(out["b"]).tolist() == FLOAT64_DRAW[1]


def test_layers_draw_in_program_order_without_a_bias_and_torch_rand_follows():
    # PyTorch 2.13.0+cpu: torch.manual_seed(2); nn.Linear(2, 3, bias=False); nn.Linear(3, 1); torch.rand(2)
    out = outputs("torch.manual_seed(2)\na = nn.Linear(2, 3, bias=False)\nb = nn.Linear(3, 1)\nr = torch.rand(2)\n"
                  "wa = a.weight\nwb = b.weight\nbb = b.bias\nnone = a.bias is None\n", ["wa", "wb", "bb", "r"])
    assert np.ravel(out["wa"]).tolist() == [0.1622033268213272, -0.1682732254266739, 0.1939089596271515,
                                            -0.03611748665571213, 0.3020673096179962, 0.16834285855293274]
    assert np.ravel(out["wb"]).tolist() == [-0.0663575679063797, -0.4667661786079407, 0.13181737065315247]
    assert np.ravel(out["bb"]).tolist() == [-0.5111539363861084]
    assert np.ravel(out["r"]).tolist() == [0.5657140016555786, 0.5332289338111877]


def test_torch_rand_draws_in_the_default_dtype_pytorch_was_set_to():
    # PyTorch 2.13.0+cpu: after set_default_dtype(float64), torch.rand and torch.randn draw float64
    out = outputs("torch.set_default_dtype(torch.float64)\ntorch.manual_seed(2)\na = torch.rand(3)\n"
                  "b = torch.randn(2)\n", ["a", "b"])
    assert out["a"].tolist() == [0.9175606656465919, 0.09691521241229228, 0.7087511767056517]
    assert out["b"].tolist() == [-2.140873496500361, -0.5534339294787104]


def test_calling_a_linear_is_x_at_w_transposed_plus_b():
    # PyTorch 2.13.0+cpu printed y = [[-0.8219, 0.0526]] (float32); gradcli computes the same
    # product of the drawn float32 weights in float64
    out = outputs("torch.manual_seed(0)\nlayer = nn.Linear(3, 2)\nx = torch.tensor([[1.0, 2.0, 3.0]])\n"
                  "y = layer(x)\nz = layer.forward(x)\n", ["y", "z"])
    weight, bias = (np.array(v) for v in FLOAT32_DRAWS[(0, 3, 2)])
    expected = np.array([[1.0, 2.0, 3.0]]) @ weight.reshape(2, 3).T + bias
    np.testing.assert_allclose(out["y"], expected, rtol=1e-15)
    np.testing.assert_allclose(out["z"], expected, rtol=1e-15)
    np.testing.assert_allclose(out["y"], [[-0.8219, 0.0526]], atol=5e-5)


NET = """torch.set_default_dtype(torch.float64)
torch.manual_seed(7)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(2, 4)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(4, 1)
    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))
model = Net()
names = [n for n, p in model.named_parameters()]
X = torch.tensor([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.5, -0.5]])
y = torch.tensor([[1.0], [1.0], [0.0], [0.5]])
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.MSELoss()
for step in range(3):
    opt.zero_grad()
    loss = loss_fn(model(X), y)
    loss.backward()
    opt.step()
w1 = model.fc1.weight
g1 = model.fc1.weight.grad
b2 = model.fc2.bias
"""


def test_a_programs_module_of_linear_layers_trains_as_pytorch_does():
    out = outputs(NET, ["w1", "g1", "b2", "loss"])
    # PyTorch 2.13.0+cpu, the same program (float64): .tolist() and loss.item() after three SGD steps;
    # named_parameters() gave ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']
    np.testing.assert_allclose(out["w1"], [[-0.42186102859540264, -0.38853408597059685],
                                           [0.4434070487344429, 0.17726689314916028],
                                           [0.47212118626758426, 0.39770829486538234],
                                           [-0.24624954810458416, 0.12324288937410567]], rtol=1e-13)
    np.testing.assert_allclose(out["g1"], [[0.17043644403890504, 0.10763154140385175],
                                           [0.06082025052429978, 0.04649392028028485],
                                           [0.2116517404395305, 0.14304308884979505],
                                           [-0.011783891973211462, -0.011499191196323026]], rtol=1e-12)
    np.testing.assert_allclose(out["b2"], [0.12281860968273046], rtol=1e-13)
    assert float(out["loss"]) == pytest.approx(0.41947965937570936, rel=1e-13)


SEQUENTIAL = """torch.manual_seed(3)
model = nn.Sequential(nn.Linear(2, 4, dtype=torch.float64), nn.ReLU(), nn.Linear(4, 1, dtype=torch.float64))
X = torch.tensor([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.5, -0.5]], dtype=torch.float64)
y = torch.tensor([[1.0], [1.0], [0.0], [0.5]], dtype=torch.float64)
w0 = model[0].weight
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for step in range(4):
    opt.zero_grad()
    loss = ((model(X) - y) ** 2).mean()
    loss.backward()
    opt.step()
w2 = model[-1].weight
b0 = model[0].bias
"""


def test_a_sequential_of_linear_layers_trains_as_pytorch_does():
    out = outputs(SEQUENTIAL, ["w0", "w2", "b0", "loss"])
    # PyTorch 2.13.0+cpu, the same program: w0 is the first layer's weight, stepped in place
    np.testing.assert_allclose(out["w0"], [[-0.6588705083095063, -0.301594863679339],
                                           [0.3394410072883339, -0.4579781813968343],
                                           [0.383940569313384, 0.17588253813692845],
                                           [-0.4260641500712474, -0.17964682905234847]], rtol=1e-13)
    np.testing.assert_allclose(out["w2"], [[-0.052982227527135654, 0.22443179495032292, 0.4734511612595146,
                                            -0.4073083549400695]], rtol=1e-13)
    np.testing.assert_allclose(out["b0"], [-0.13457381268450896, 0.33764350448395525, -0.42058632009742103,
                                           0.048076440807857806], rtol=1e-13)
    assert float(out["loss"]) == pytest.approx(0.3582173085927763, rel=1e-13)


def test_named_parameters_come_in_pytorchs_order_and_names():
    # PyTorch 2.13.0+cpu: ['0.weight', '0.bias', '2.weight', '2.bias'] for the Sequential,
    # ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias'] for Net
    program = ("torch.manual_seed(3)\nmodel = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 1))\n"
               "names = [n for n, p in model.named_parameters()]\nfirst = names[0] == '0.weight'\n"
               "last = names[3] == '2.bias'\ncount = len(names)\n")
    out = outputs(program, ["first", "last", "count"])
    assert bool(out["first"]) and bool(out["last"]) and float(out["count"]) == 4


UNSEEDED = ("nn.Linear(...) draws its initial weights from PyTorch's generator, which the program never seeded: "
            "call torch.manual_seed(0) first (gradcli then reproduces PyTorch's draws), or write the weights in the "
            "program and call the functional (F.linear(x, W, b))")


def test_a_linear_without_a_seed_is_refused_naming_torch_manual_seed():
    run = gradcli("eval", "-", program="layer = nn.Linear(3, 2)\ny = layer(torch.ones(3))\n")
    assert run.returncode == 2
    assert f"<stdin>:3:9: error: {UNSEEDED}" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("program, message", [
    ("torch.manual_seed(1)\nm = nn.Sequential(nn.Linear(3, 2), nn.ReLU())\nz = m[2]\n",
     "index 2 is out of range for an nn.Sequential of 2 modules"),
    ("torch.manual_seed(1)\nlayer = nn.Linear(3, 2)\nz = layer.frobnicate(2)\n",
     "nn.Linear has no method 'frobnicate' that gradcli reads (it reads forward, parameters, named_parameters, "
     "zero_grad, train, eval, double, float, to)"),
    ("torch.manual_seed(1)\nlayer = nn.Linear(0, 2)\n",
     "nn.Linear(...): gradcli takes in_features and out_features of 1 or more, got [0, 2]"),
])
def test_what_a_layer_cannot_do_is_refused_with_one_message(program, message):
    run = gradcli("eval", "-", program=program)
    assert run.returncode == 2
    assert message in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


INIT_PROGRAM = """torch.manual_seed(11)
a = nn.Linear(5, 4)
nn.init.xavier_uniform_(a.weight)
nn.init.zeros_(a.bias)
b = nn.Linear(4, 3, dtype=torch.float64)
nn.init.normal_(b.weight, mean=0.1, std=0.02)
nn.init.constant_(b.bias, 0.1)
c = nn.Linear(6, 5)
nn.init.kaiming_normal_(c.weight, nonlinearity='relu')
nn.init.uniform_(c.bias, -0.3, 0.2)
d = nn.Linear(20, 3)
nn.init.normal_(d.weight)
d.bias.data.fill_(0.1)
e = nn.Linear(3, 2)
e.weight.data.normal_(0, 0.5)
nn.init.kaiming_uniform_(e.weight, a=0.1, mode='fan_out')
nn.init.xavier_normal_(e.weight, gain=2.0)
r = torch.rand(2)
aw = a.weight
ab = a.bias
bw = b.weight
bb = b.bias
cw = c.weight
cb = c.bias
dw = d.weight
db = d.bias
ew = e.weight
"""
# PyTorch 2.13.0+cpu, the same program: each tensor's .reshape(-1).tolist()
INIT_DRAWS = {
    'aw': [0.5543467998504639, -0.7193147540092468, -0.11188064515590668, -0.09396632015705109, -0.3883684277534485, 0.21240465342998505, 0.6164677739143372, -0.5509360432624817, -0.41836559772491455, -0.2642608880996704, 0.6282763481140137, -0.6919770836830139, 0.8002172112464905, -0.49901166558265686, -0.12157384306192398, -0.10089718550443649, -0.32859981060028076, 0.5672296285629272, -0.03512432798743248, -0.5004408359527588],
    'ab': [0.0, 0.0, 0.0, 0.0],
    'bw': [0.09206616237026125, 0.11347432729473596, 0.11711836414179758, 0.11250608886955223, 0.09780135368401527, 0.07968241902324752, 0.11021686302769017, 0.10442668957083989, 0.0898997625288047, 0.10259436455594173, 0.09897996668964161, 0.11647326853772927],
    'bb': [0.1, 0.1, 0.1],
    'cw': [0.36304667592048645, 0.7887089848518372, -0.4316219091415405, 0.32458916306495667, -0.3112110495567322, -0.22352363169193268, -0.19295024871826172, -0.5759850144386292, -0.6919373273849487, -0.036347925662994385, -0.20371870696544647, 0.4929712116718292, 0.4763887822628021, -0.15651552379131317, -0.791122555732727, 0.07135406136512756, -0.6891903281211853, -0.017194056883454323, -0.09795702248811722, 0.26946207880973816, 0.31739625334739685, 0.40880343317985535, -0.2707616984844208, 0.6056731343269348, -0.20720118284225464, 0.3609018921852112, -0.4751817286014557, -0.07185211777687073, 0.9693331122398376, 0.2096271514892578],
    'cb': [-0.02890843152999878, 0.15122467279434204, 0.1929628849029541, -0.20352929830551147, 0.16717329621315002],
    'dw': [1.172045350074768, -0.6841049194335938, -0.0007380637689493597, -0.12506403028964996, -1.2794996500015259, 0.30329886078834534, 2.018378496170044, -2.5452020168304443, 0.12814214825630188, -0.6493532657623291, 1.1176958084106445, -0.36838772892951965, 0.2820141017436981, 1.3759950399398804, -0.7509093880653381, -0.39252668619155884, 1.4879910945892334, -0.18363729119300842, -0.2055925577878952, 1.799381971359253, -0.5468938946723938, -0.760280430316925, 1.9238914251327515, 0.0023316608276218176, 1.5272647142410278, 1.110756516456604, -0.06776305288076401, 0.18837851285934448, -0.646559476852417, -0.7142850756645203, 0.21098686754703522, -0.8477486371994019, -0.5204331874847412, -1.0771592855453491, -0.617609441280365, -1.3957699537277222, 1.3867062330245972, -1.962687611579895, 0.5862203240394592, 0.905278205871582, -1.3986575603485107, -0.12583208084106445, 2.267113208770752, -0.20145663619041443, -0.41847914457321167, -1.3343123197555542, -0.3079227805137634, -0.31654664874076843, -0.8314025402069092, 1.722014307975769, 0.37193313241004944, -0.3664848506450653, -0.6174049377441406, -1.2219007015228271, -0.08131760358810425, -1.1256470680236816, 0.2396416813135147, 1.2797569036483765, 1.1450761556625366, -1.2109113931655884],
    'db': [0.10000000149011612, 0.10000000149011612, 0.10000000149011612],
    'ew': [1.6921519041061401, 1.3797764778137207, 1.037164568901062, -2.064352512359619, -0.9730926156044006, 0.4976264238357544],
    'r': [0.44422173500061035, 0.7569231390953064],
}


def test_nn_init_and_in_place_fills_draw_pytorchs_numbers_into_the_layers():
    # xavier, kaiming (fan_out, relu's gain), normal_ (16 or more: PyTorch's AVX2 path; float64),
    # uniform_ of an asymmetric range, constant_, zeros_, .data.fill_ and .data.normal_; then torch.rand
    out = outputs(INIT_PROGRAM, list(INIT_DRAWS))
    for name, expected in INIT_DRAWS.items():
        assert np.ravel(out[name]).tolist() == expected, name


def test_parameters_filled_after_the_optimizer_was_made_are_still_stepped():
    # PyTorch 2.13.0+cpu, the same program (float64): Adam made before nn.init and .data.fill_
    program = ("torch.set_default_dtype(torch.float64)\ntorch.manual_seed(4)\n"
               "model = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))\n"
               "opt = torch.optim.Adam(model.parameters(), lr=0.01)\nnn.init.xavier_uniform_(model[0].weight)\n"
               "model[2].bias.data.fill_(0.25)\nX = torch.tensor([[0.1, 0.2, 0.3], [1.0, -1.0, 0.5]])\n"
               "y = torch.tensor([[1.0, 0.0], [0.0, 1.0]])\nfor step in range(3):\n    opt.zero_grad()\n"
               "    loss = nn.functional.mse_loss(model(X), y)\n    loss.backward()\n    opt.step()\n"
               "w = model[0].weight\nb = model[2].bias\n")
    out = outputs(program, ["w", "b", "loss"])
    np.testing.assert_allclose(np.ravel(out["w"]), [
        -0.08486473839490778, 0.10865214962470499, -0.8240249827169581, 0.10013064434439112, 0.860588451554249,
        0.5349493616859121, -0.4406810712136925, 0.5507863451751598, 0.5787671032096801, 0.5151983338552686,
        0.22187114712740375, 0.09616318386808562, -0.5856943169257092, -0.5109418621708495, -0.32902811962715106],
        rtol=1e-13)
    np.testing.assert_allclose(np.ravel(out["b"]), [0.2799024054810026, 0.2793903797605371], rtol=1e-13)
    assert float(out["loss"]) == pytest.approx(0.1904593804584603, rel=1e-13)


@pytest.mark.parametrize("program, message", [
    ("w = torch.zeros(3, 2, requires_grad=True)\nnn.init.normal_(w)\n",
     "nn.init.normal_() draws in the tensor's type, which gradcli knows for a layer's parameters only "
     "(nn.Linear's weight and bias): draw into those, or write the values"),
    ("w = torch.zeros(3, requires_grad=True)\nnn.init.constant_(w, 0.1)\n",
     "nn.init.constant_(): 0.1 is rounded by the tensor's type, which gradcli knows for a layer's parameters only"),
    ("torch.manual_seed(0)\nlayer = nn.Linear(3, 2)\nlayer.weight.fill_(1.0)\n",
     "a leaf Variable that requires grad is being used in an in-place operation (PyTorch: RuntimeError): write "
     "layer.weight.data.fill_(...) or call it inside `with torch.no_grad():`"),
    ("torch.manual_seed(0)\nlayer = nn.Linear(3, 2)\nnn.init.xavier_uniform_(layer.bias)\n",
     "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions (PyTorch: ValueError)"),
])
def test_what_nn_init_cannot_do_is_refused(program, message):
    run = gradcli("eval", "-", program=program)
    assert run.returncode == 2
    assert message in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


def test_double_and_to_float64_make_the_layers_later_draws_float64():
    # PyTorch 2.13.0+cpu: the float32 weight held exactly; the later init draws in float64
    out = outputs("torch.manual_seed(9)\nlayer = nn.Linear(4, 3).double()\nnn.init.uniform_(layer.bias, -0.3, 0.2)\n"
                  "m = nn.Sequential(nn.Linear(2, 2)).to(torch.float64)\nnn.init.normal_(m[0].weight, 0.0, 0.5)\n"
                  "w = layer.weight\nb = layer.bias\nv = m[0].weight\n", ["w", "b", "v"])
    assert np.ravel(out["w"]).tolist() == [
        0.1557844877243042, -0.19797730445861816, -0.0201035737991333, 0.27737361192703247, 0.4179643392562866,
        0.4310336112976074, -0.23963958024978638, 0.4534238576889038, -0.11956042051315308, -0.0895652174949646,
        0.45102059841156006, 0.06862950325012207]
    assert np.ravel(out["b"]).tolist() == [0.1399988851689467, 0.08711293828455036, -0.273777492814934]
    assert np.ravel(out["v"]).tolist() == [-0.09452047943062204, 0.8535639645926191, -0.3696453513595574,
                                           0.5041093925617911]


def test_float_of_a_float64_layer_is_refused():
    run = gradcli("eval", "-", program="torch.manual_seed(9)\nlayer = nn.Linear(4, 3, dtype=torch.float64).float()\n")
    assert run.returncode == 2
    assert ("model.float() would round float64 parameters to float32, which gradcli does not do (it computes in "
            "float64): leave it out") in run.stderr, run.stderr
