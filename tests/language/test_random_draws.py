"""Seeded random draws: the numbers NumPy 2.4.6 and JAX 0.10.2 print for the same programs, bit
for bit (recorded below as exact float reprs); a gradient through data the program draws; the
refusals of what gradcli cannot reproduce (unseeded generators, computed sizes, draws in a body
JAX traces once but gradcli expands at each use)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError


def outputs(program: str) -> dict:
    """What the program prints, with a print of each name it binds at the top level added."""
    generators = ("RandomState(", "default_rng(", "PRNGKey(0)\n", "split(")  # (not numbers: never printed)
    names = [line.split(" = ")[0] for line in program.splitlines() if " = " in line and not line.startswith(" ")
             and "," not in line.split(" = ")[0] and not any(g in line + "\n" for g in generators)]
    return api.evaluate(program + "".join(f"print({name})\n" for name in names), fixes=False).outputs


def numbers(program: str, name: str) -> list[float]:
    return np.asarray(outputs(program)[name], dtype=np.float64).ravel().tolist()


def refusal(program: str) -> GradcliError:
    with pytest.raises(GradcliError) as caught:
        api.evaluate(program, fixes=False)
    return caught.value


def gradcli(*args: str, program: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gradcli", *args], input=program, capture_output=True, text=True)


NP = "import numpy as np\n"
# --------------------------------------------------------------------------- NumPy's global generator
# NumPy 2.4.6: np.random.seed(0), then these calls in this order, printed with .tolist()
GLOBAL_STREAM = [
    ("np.random.randn(2, 3)", [1.764052345967664, 0.4001572083672233, 0.9787379841057392, 2.240893199201458,
                               1.8675579901499675, -0.977277879876411]),
    ("np.random.rand(2)", [0.4375872112626925, 0.8917730007820798]),
    ("np.random.normal(1.0, 2.0, (2,))", [0.7935622964128843, 1.8211970038767447]),
    ("np.random.uniform(-1.0, 1.0, 3)", [0.5834500761653292, 0.05778983950580896, 0.13608912218786462]),
    ("np.random.randint(0, 10, size=4)", [5.0, 9.0, 8.0, 9.0]),
    ("np.random.choice(5, 3)", [4.0, 3.0, 0.0]),
    ("np.random.permutation(4)", [2.0, 0.0, 1.0, 3.0]),
    ("np.random.standard_normal(2)", [1.4143771877719702, -0.12405066439134643]),
    ("np.random.random(2)", [0.5204774795512048, 0.6788795301189603]),
    ("np.random.random_sample((1,))", [0.7206326547259168]),
]


def test_numpy_global_draws_after_a_seed_are_numpys_in_program_order():
    program = NP + "np.random.seed(0)\n" + "".join(f"d{k} = {call}\n" for k, (call, _) in enumerate(GLOBAL_STREAM))
    out = outputs(program)
    for k, (call, expected) in enumerate(GLOBAL_STREAM):
        assert np.asarray(out[f"d{k}"]).ravel().tolist() == expected, call


def test_randomstate_and_generator_objects_keep_their_own_streams():
    program = NP + ("rs = np.random.RandomState(1)\nrng = np.random.default_rng(42)\n"
                    "a = rs.normal(1.0, 2.0, size=(3,))\nb = rng.normal(size=3)\nc = rs.randn(2)\n"
                    "d = rng.integers(0, 10, size=4)\ne = rng.random(2)\nf = rng.uniform(0.0, 2.0, 3)\n"
                    "g = rng.standard_normal(2)\n")
    out = outputs(program)
    # NumPy 2.4.6: RandomState(1) and default_rng(42), each drawn in turn
    assert out["a"].tolist() == [4.248690727326483, -0.22351282730015076, -0.05634350452691139]
    assert out["c"].tolist() == [-1.0729686221561705, 0.8654076293246785]
    assert out["b"].tolist() == [0.30471707975443135, -1.0399841062404955, 0.7504511958064572]
    assert out["d"].tolist() == [0.0, 6.0, 2.0, 0.0]
    assert out["e"].tolist() == [0.9756223516367559, 0.761139701990353]
    assert out["f"].tolist() == [1.5721286105539076, 0.25622726535109175, 0.9007718757911343]
    assert out["g"].tolist() == [0.8793979748628286, 0.7777919354289483]


def test_autograd_npr_is_numpys_stream():
    program = "import autograd.numpy.random as npr\nrs = npr.RandomState(0)\nx = rs.randn(3)\n"
    assert numbers(program, "x") == [1.764052345967664, 0.4001572083672233, 0.9787379841057392]  # NumPy 2.4.6


def test_permutation_and_choice_of_an_array_pick_its_rows():
    # NumPy 2.4.6: np.random.seed(3); permutation(x) -> [40, 20, 10, 30], then choice(x, 2) -> [40, 10]
    program = NP + "np.random.seed(3)\nx = np.array([10.0, 20.0, 30.0, 40.0])\np = np.random.permutation(x)\n" \
                   "c = np.random.choice(x, 2)\n"
    out = outputs(program)
    assert out["p"].tolist() == [40.0, 20.0, 10.0, 30.0] and out["c"].tolist() == [40.0, 10.0]


def test_shuffle_rebinds_the_name_to_the_rows_numpy_shuffled_in_place():
    program = NP + ("np.random.seed(0)\nidx = np.arange(6.0)\nnp.random.shuffle(idx)\n"
                    "X = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])\nrng = np.random.default_rng(3)\n"
                    "rng.shuffle(X)\ndef first_two(data):\n    np.random.shuffle(data)\n    return data[:2]\n"
                    "b = first_two(np.array([10.0, 20.0, 30.0, 40.0]))\n")
    out = api.evaluate(program + "print(idx)\nprint(X)\nprint(b)\n", fixes=False).outputs
    # NumPy 2.4.6: the arrays after shuffle, in this order
    assert out["idx"].tolist() == [5.0, 2.0, 1.0, 3.0, 0.0, 4.0]
    assert out["X"].ravel().tolist() == [5.0, 6.0, 3.0, 4.0, 1.0, 2.0]
    assert out["b"].tolist() == [40.0, 10.0]


def test_a_loop_and_a_function_draw_anew_at_each_pass_and_call():
    # NumPy 2.4.6: np.random.seed(5); three np.random.randn(2) in a row
    first, second, third = ([0.44122748688504143, -0.33087015189408764], [2.43077118700778, -0.2520921296030769],
                            [0.10960984157818278, 1.5824811170615634])
    program = NP + "np.random.seed(5)\ndef batch():\n    return np.random.randn(2)\na = batch()\nb = batch()\n" \
                   "for i in range(1):\n    c = np.random.randn(2)\nc = c\n"
    out = outputs(program)
    assert [out["a"].tolist(), out["b"].tolist(), out["c"].tolist()] == [first, second, third]
    looped = NP + "np.random.seed(5)\ntotal = np.zeros(2)\nfor i in range(3):\n    total = total + np.random.randn(2)\n"
    np.testing.assert_array_equal(outputs(looped)["total"], (np.array(first) + second) + third)


def test_the_gradient_of_a_least_squares_loss_over_drawn_data_is_the_analytic_one():
    program = NP + ("rs = np.random.RandomState(0)\nX = rs.randn(5, 3)\nw_true = np.array([1.0, -2.0, 0.5])\n"
                    "y = X @ w_true + 0.1 * rs.randn(5)\nw = np.array([0.5, 0.25, -1.0])\n"
                    "loss = np.sum((X @ w - y) ** 2)\n")
    # NumPy 2.4.6: X and y as the program draws them
    X = np.array([1.764052345967664, 0.4001572083672233, 0.9787379841057392, 2.240893199201458, 1.8675579901499675,
                  -0.977277879876411, 0.9500884175255894, -0.1513572082976979, -0.10321885179355784,
                  0.41059850193837233, 0.144043571160878, 1.454273506962975, 0.7610377251469934, 0.12167501649282841,
                  0.44386323274542566]).reshape(5, 3)
    y = np.array([1.4864743540235137, -1.833453813720922, 1.180677581847626, 0.880954883263194, 0.654209734603877])
    w = np.array([0.5, 0.25, -1.0])
    done = gradcli("grad", "--of", "loss", "--wrt", "w", program=program)
    assert done.returncode == 0, done.stderr
    found = [float(v) for v in done.stdout.split("\t")[1].split()]
    np.testing.assert_allclose(found, 2 * X.T @ (X @ w - y), rtol=1e-13)
    out = outputs(program)
    assert out["y"].tolist() == y.tolist()


def test_minibatch_sgd_over_drawn_data_and_batches_is_numpys_run():
    program = NP + ("np.random.seed(0)\nX = np.random.randn(10, 2)\ny = np.random.randn(10)\nw = np.zeros(2)\n"
                    "for step in range(3):\n    idx = np.random.randint(0, 10, 4)\n    Xb = X[idx]\n    yb = y[idx]\n"
                    "    grad = 2 * Xb.T @ (Xb @ w - yb) / 4\n    w = w - 0.1 * grad\n"
                    "perm = np.random.permutation(10)\nXs = X[perm[:3]]\n")
    out = api.evaluate(program + "print(w)\nprint(Xs)\n", fixes=False).outputs
    # NumPy 2.4.6 runs the same program (float64 throughout: the same operations, the same numbers)
    assert out["w"].tolist() == [0.20053108624209948, -0.06029332879857505]
    assert out["Xs"].ravel().tolist() == [0.44386323274542566, 0.33367432737426683, 0.7610377251469934,
                                          0.12167501649282841, 1.4940790731576061, -0.20515826376580087]


# --------------------------------------------------------------------------- NumPy's refusals
JITTED = ("np.random.randn() draws from a generator's state inside a function jax.jit compiles: JAX runs its Python "
          "once per compilation, not at each call, so gradcli cannot tell which draws happen; draw outside it and "
          "pass the values in")


@pytest.mark.parametrize("program, line, message", [
    (NP + "x = np.random.randn(3)\n", 2,
     "np.random.randn draws from a generator the program never seeded, whose numbers gradcli cannot reproduce: seed it "
     "first (np.random.seed(0); the library then draws the numbers gradcli reproduces), or write the values in the "
     "program, or make the value an input and give it with --set"),
    (NP + "np.random.seed()\nx = np.random.randn(3)\n", 2,
     "np.random.seed() without a seed draws from the operating system's entropy, which gradcli cannot reproduce: "
     "give a seed, as in np.random.seed(0)"),
    (NP + "rng = np.random.default_rng()\n", 2,
     "np.random.default_rng() without a seed draws from the operating system's entropy, which gradcli cannot "
     "reproduce: give a seed, as in np.random.default_rng(0)"),
    (NP + "np.random.seed(0)\nx = np.array([1.0, 2.0])\ny = np.random.normal(x, 1.0)\n", 4,
     "np.random.normal(): loc must be known before evaluation (the draw is made as the program is read, as the "
     "library makes it): write it in the program"),
    (NP + "np.random.seed(0)\ny = np.random.poisson(3.0, 4)\n", 3,
     "np.random.poisson draws random numbers, which gradcli does not reproduce (it reproduces NumPy's, JAX's and "
     "PyTorch's seeded draws listed in docs/language.md): write the values in the program (x = np.array([...])), or make x an "
     "input and give it with --set x='[...]'"),
    (NP + "np.random.seed(0)\ny = np.random.uniform(2.0, 1.0, -1)\n", 3,
     "np.random.uniform(): NumPy's ValueError: negative dimensions are not allowed"),
    ("import jax\nimport numpy as np\nnp.random.seed(0)\ndef f(x):\n    return x * np.random.randn(2)\n"
     "y = jax.vmap(f)(np.array([[1.0, 2.0], [3.0, 4.0]]))\n", 5,
     "np.random.randn() draws from a generator's state inside a function that JAX traces once but gradcli expands at "
     "each use (a lax loop's body, vmap, a custom rule): the draws would come in another order; draw before the call "
     "and pass the values in"),
    ("import jax\nimport numpy as np\nnp.random.seed(0)\n@jax.jit\ndef f(w):\n    return w * np.random.randn(2)\n"
     "y = f(np.array([1.0, 2.0]))\n", 6, JITTED),
    ("import jax\nimport numpy as np\nnp.random.seed(0)\ndef f(w):\n    return w * np.random.randn(2)\n"
     "y = jax.jit(f)(np.array([1.0, 2.0]))\n", 5, JITTED),
    ("import random\nrandom.seed(0)\n", 2,
     "random.seed draws random numbers, which gradcli does not reproduce (it reproduces NumPy's, JAX's and PyTorch's "
     "seeded draws listed in docs/language.md): write the values in the program (x = np.array([...])), or make x an input and "
     "give it with --set x='[...]'"),
])
def test_what_cannot_be_reproduced_is_refused_with_what_to_write(program, line, message):
    given = ["--set", "x=[1, 2]"] if "np.array([1.0, 2.0])" in program else []  # (x given from outside)
    done = gradcli("eval", *given, program=program + "print(1.0)\n")
    assert done.returncode == 2, done.stdout
    first = done.stderr.splitlines()[0]
    assert first.startswith(f"<stdin>:{line}:") and first.endswith(f"error: {message}"), done.stderr


# --------------------------------------------------------------------------- JAX
JAX = "import jax\nimport jax.numpy as jnp\nimport numpy as np\n"


def test_jax_keys_split_fold_in_and_samplers_are_jaxs():
    program = JAX + ("key = jax.random.PRNGKey(0)\nkey, sub = jax.random.split(key)\nkd = jax.random.key_data(key)\n"
                     "sd = jax.random.key_data(sub)\nu = jax.random.uniform(sub, (2, 3))\n"
                     "keys = jax.random.split(key, 3)\nr = jax.random.randint(keys[1], (4,), 0, 10)\n"
                     "b = jax.random.bernoulli(jax.random.fold_in(key, 5), 0.6, (8,))\n"
                     "f = jax.random.key_data(jax.random.fold_in(key, 5))\n"
                     "w = jax.random.uniform(keys[2], (3,), minval=-1.0, maxval=2.0)\n"
                     "s = jax.random.uniform(jax.random.key(7))\n"
                     "h = jax.random.bernoulli(jax.random.PRNGKey(1), 0.5, (6,), mode='high')\n"
                     "big = jax.random.randint(jax.random.PRNGKey(2), (2, 2), -1000, 100000)\n")
    out = outputs(program)
    # JAX 0.10.2 (float32, threefry2x32 partitionable), printed as float(...) of each element
    assert out["kd"].tolist() == [1797259609.0, 2579123966.0] and out["sd"].tolist() == [928981903.0, 3453687069.0]
    assert out["u"].ravel().tolist() == [0.007293820381164551, 0.020891189575195312, 0.5814265012741089,
                                         0.3618379831314087, 0.2230377197265625, 0.11928832530975342]
    assert out["r"].tolist() == [8.0, 9.0, 4.0, 8.0]
    assert out["b"].tolist() == [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    assert out["f"].tolist() == [1526812653.0, 3822367991.0]
    assert out["w"].tolist() == [-0.31454503536224365, 1.2142797708511353, -0.9680041074752808]
    assert float(out["s"]) == 0.6740899085998535
    assert out["h"].tolist() == [1.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    assert out["big"].ravel().tolist() == [84807.0, 59028.0, 30369.0, 59383.0]


def test_jax_normal_is_xlas_float32_erf_inv_bit_for_bit():
    program = JAX + ("n = jax.random.normal(jax.random.PRNGKey(0), (2, 3))\nk1, k2 = jax.random.split(jax.random.PRNGKey(42))\n"
                     "m = jax.random.normal(k2, (4,))\ns = jax.random.normal(jax.random.key(1))\n"
                     "X = jax.random.normal(k1, (4, 2))\n")
    out = outputs(program)
    # JAX 0.10.2 on CPU (float32), printed as float(...) of each element
    assert out["n"].ravel().tolist() == [1.622642159461975, 2.0252647399902344, -0.4335944354534149,
                                         -0.07861734926700592, 0.17609089612960815, -0.9720892310142517]
    assert out["m"].tolist() == [0.6057640314102173, 0.7990440726280212, -0.9089270234107971, -0.6352575421333313]
    assert float(out["s"]) == -0.15443718433380127
    assert out["X"].ravel().tolist() == [0.07592553645372391, -0.4863426387310028, 1.290320634841919,
                                         0.5196118950843811, 0.3004043698310852, 0.31034865975379944,
                                         0.5761609077453613, -0.8074620962142944]


def test_a_jax_least_squares_gradient_over_drawn_data_is_the_analytic_one():
    program = JAX + ("k1, k2 = jax.random.split(jax.random.PRNGKey(42))\nX = jax.random.normal(k1, (4, 2))\n"
                     "y = jax.random.uniform(k2, (4,))\ndef loss(w):\n    return jnp.mean((X @ w - y) ** 2)\n"
                     "g = jax.grad(loss)(jnp.array([0.5, -1.0]))\n")
    X = np.array([0.07592553645372391, -0.4863426387310028, 1.290320634841919, 0.5196118950843811,
                  0.3004043698310852, 0.31034865975379944, 0.5761609077453613, -0.8074620962142944]).reshape(4, 2)
    y = np.array([0.7276642322540283, 0.787867546081543, 0.18169426918029785, 0.2626302242279053])  # (JAX 0.10.2)
    w = np.array([0.5, -1.0])
    out = outputs(program)
    assert out["y"].tolist() == y.tolist()
    np.testing.assert_allclose(out["g"], 2 * X.T @ (X @ w - y) / 4, rtol=1e-13)


def test_jax_permutation_and_choice_are_jaxs_sorts_and_randint():
    program = JAX + ("p = jax.random.permutation(jax.random.PRNGKey(7), 10)\n"
                     "x = jnp.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])\n"
                     "q = jax.random.permutation(jax.random.PRNGKey(1), x)\n"
                     "c = jax.random.choice(jax.random.PRNGKey(2), 5, (3,))\n"
                     "d = jax.random.choice(jax.random.PRNGKey(3), x, (2,), replace=False)\n"
                     "e = jax.random.choice(jax.random.PRNGKey(4), jnp.array([10.0, 20.0, 30.0]))\n"
                     "big = jax.random.permutation(jax.random.PRNGKey(5), 3000)\nhead = big[:5]\ntail = big[-3:]\n")
    out = api.evaluate(program + "".join(f"print({n})\n" for n in ("p", "q", "c", "d", "e", "head", "tail")),
                       fixes=False).outputs
    # JAX 0.10.2 (3000 elements: two rounds of sorting)
    assert out["p"].tolist() == [9.0, 4.0, 2.0, 3.0, 5.0, 0.0, 7.0, 6.0, 1.0, 8.0]
    assert out["q"].ravel().tolist() == [7.0, 8.0, 5.0, 6.0, 1.0, 2.0, 3.0, 4.0]
    assert out["c"].tolist() == [4.0, 2.0, 3.0]
    assert out["d"].ravel().tolist() == [1.0, 2.0, 5.0, 6.0]
    assert float(out["e"]) == 20.0
    assert out["head"].tolist() == [36.0, 227.0, 1919.0, 2001.0, 1010.0]
    assert out["tail"].tolist() == [1619.0, 2182.0, 2500.0]


def test_vmap_maps_a_function_over_split_keys():
    program = JAX + ("def init(key):\n    k1, k2 = jax.random.split(key)\n"
                     "    return jax.random.normal(k1, (3,)) + jax.random.uniform(k2, (3,))\n"
                     "ws = jax.vmap(init)(jax.random.split(jax.random.PRNGKey(0), 4))\nx = jnp.array([1.0, 2.0, 3.0, 4.0])\n"
                     "ys = jax.vmap(lambda k, s: s * jax.random.uniform(k, (2,)))(jax.random.split(jax.random.PRNGKey(1), 4), x)\n")
    out = api.evaluate(program + "print(ws)\nprint(ys)\n", fixes=False).outputs
    # JAX 0.10.2, printed as float(...) of each element
    assert out["ws"].ravel().tolist() == [-0.4704897999763489, 1.1438242197036743, -0.12853959202766418,
                                          0.2897433638572693, -0.40796905755996704, -0.6371259689331055,
                                          -0.7387160062789917, -0.5154209733009338, 0.07541030645370483,
                                          2.5308401584625244, 1.2254979610443115, 0.16663764417171478]
    assert out["ys"].ravel().tolist() == [0.7026152610778809, 0.2348346710205078, 0.8072926998138428,
                                          1.097790002822876, 1.6733522415161133, 0.6721655130386353,
                                          0.6224493980407715, 0.9690322875976562]


def test_jax_draws_follow_jax_enable_x64():
    program = JAX + ('jax.config.update("jax_enable_x64", True)\nk = jax.random.PRNGKey(0)\n'
                     "u = jax.random.uniform(k, (3,))\nv = jax.random.uniform(k, (2,), minval=-2.0, maxval=3.5)\n"
                     "r = jax.random.randint(k, (3,), 0, 100)\nn = jax.random.normal(k, (3,))\n"
                     "m = jax.random.normal(jax.random.PRNGKey(1), (2, 2))\n")
    out = outputs(program)
    # JAX 0.10.2 with jax_enable_x64: float64 (and int64) draws
    assert out["u"].tolist() == [0.41845711171638644, 0.21629545460551136, 0.9653214611189975]
    assert out["v"].tolist() == [0.30151411444012544, -0.8103749996696875]
    assert out["r"].tolist() == [35.0, 11.0, 75.0]
    assert out["n"].tolist() == [-0.2058421394796434, -0.7847657764467411, 1.8160866726679836]
    assert out["m"].ravel().tolist() == [-1.184284421837855, -0.11617040844628398, 0.17269028009903425,
                                         0.9573071790540392]


@pytest.mark.parametrize("line, message", [
    ("x = jax.random.uniform(jnp.array([0, 1]), (3,))",
     "jax.random.uniform(): the key must be one made by jax.random.PRNGKey, key, split or fold_in (gradcli follows "
     "keys from their seed)"),
    ("x = jax.random.uniform(jax.random.PRNGKey(0), 3)",
     "jax.random.uniform(): the shape must be a tuple of integers written in the program (JAX: shapes are sequences "
     "of concrete integers)"),
    ("x = jax.random.uniform(jax.random.PRNGKey(0), (3,), dtype=jnp.float64)",
     "jax.random.uniform(dtype=...): gradcli reproduces float32 draws (and float64 ones after "
     "jax.config.update('jax_enable_x64', True)); leave it out"),
    ("x = jax.random.gamma(jax.random.PRNGKey(0), 1.0)",
     "jax.random.gamma draws random numbers, which gradcli does not reproduce (it reproduces NumPy's, JAX's and PyTorch's "
     "seeded draws listed in docs/language.md): write the values in the program (x = jnp.array([...])), or make x an input "
     "and give it with --set x='[...]'"),
    ("x = jax.random.PRNGKey(0) * 2.0", "this JAX key (made here) is not a number: gradcli follows keys apart from "
     "arrays, given to jax.random's functions (or split keys mapped over by jax.vmap) only; "
     "jax.random.key_data(key) gives its two words"),
    ("rs = np.random.RandomState(0); x = rs + 1.0", "this np.random.RandomState (made here) is not a number: call its "
     "methods, as in rs.normal(0.0, 1.0, 3)"),
])
def test_jax_draws_gradcli_cannot_match_are_refused(line, message):
    done = gradcli("eval", program=JAX + line + "\nprint(1.0)\n")
    assert done.returncode == 2, done.stdout
    assert done.stderr.splitlines()[0].endswith(f"error: {message}"), done.stderr
    assert done.stderr.startswith("<stdin>:4:")
