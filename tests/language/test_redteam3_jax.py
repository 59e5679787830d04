"""JAX tutorials' training code with trees of parameters given whole to `jax.vmap` (in_axes None):
gradcli's numbers against what JAX 0.10.2 (x64) and optax 0.2.8 printed for the same code.

Before, vmap made one array of every argument, the unmapped ones too, so a list of (w, b) layers
of several shapes was refused as a ragged array, and a dict of parameters as "not a number"."""
from __future__ import annotations

import numpy as np

from gradcli import api


def outputs(program: str) -> dict:
    return api.evaluate(program, fixes=False).outputs


def test_the_mlp_tutorials_batched_predict_and_update():
    # JAX 'Training a simple neural network' (predict, batched_predict = vmap(predict, in_axes=(None, 0)),
    # loss, update), fixed small parameters for the random ones
    out = outputs("""
import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

def relu(x):
  return jnp.maximum(0, x)

def predict(params, image):
  activations = image
  for w, b in params[:-1]:
    outputs = jnp.dot(w, activations) + b
    activations = relu(outputs)
  final_w, final_b = params[-1]
  logits = jnp.dot(final_w, activations) + final_b
  return logits - logsumexp(logits)

batched_predict = jax.vmap(predict, in_axes=(None, 0))

def loss(params, images, targets):
  preds = batched_predict(params, images)
  return -jnp.mean(preds * targets)

def update(params, x, y, step_size=0.01):
  grads = jax.grad(loss)(params, x, y)
  return [(p[0] - step_size * g[0], p[1] - step_size * g[1])
          for p, g in zip(params, grads)]

params = [(jnp.array([[0.1, -0.2, 0.3, 0.0], [0.5, 0.1, -0.4, 0.2], [-0.3, 0.2, 0.1, 0.6]]), jnp.array([0.0, 0.1, -0.1])),
          (jnp.array([[0.2, -0.5, 0.3], [0.4, 0.1, -0.2]]), jnp.array([0.05, -0.05]))]
images = jnp.array([[0.1, 0.9, 0.3, 0.5], [0.7, 0.2, 0.8, 0.0]])
labels = jnp.array([[1.0, 0.0], [0.0, 1.0]])
print(batched_predict(params, images))
params = update(params, images, labels)
print(params[0][0])
print(params[1][1])
print(loss(params, images, labels))
""")
    # JAX 0.10.2 (x64)
    np.testing.assert_allclose(out["batched_predict(params, images)"],
                               [[-0.6172644401115917, -0.7752644401115916], [-0.715389161041131, -0.6713891610411311]],
                               rtol=1e-12)
    np.testing.assert_allclose(out["params[0][0]"], [
        [0.10017115062101312, -0.1999510998225677, 0.3001956007097292, 0.0],
        [0.5004443645677573, 0.09952491487475923, -0.39962045975665816, 0.19965456352359015],
        [-0.29994242725393166, 0.2005181547146148, 0.10017271823820494, 0.6002878637303415]], rtol=1e-12)
    np.testing.assert_allclose(out["params[1][1]"], [0.049928950485558274, -0.049928950485558274], rtol=1e-12)
    np.testing.assert_allclose(out["loss(params, images, labels)"], 0.3219478290709458, rtol=1e-12)


OPTAX_LOOP = """
import jax
import jax.numpy as jnp
import optax
params = {'w': jnp.array([0.5, -0.5, 1.0])}
xs = jnp.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
ys = jnp.array([1.0, -2.0])
compute_loss = lambda params, x, y: optax.l2_loss(params['w'].dot(x), y)
opt = OPTIMIZER
p = params
opt_state = opt.init(p)
for _ in range(4):
    grads = jax.grad(lambda q: jnp.sum(jax.vmap(compute_loss, in_axes=(None, 0, 0))(q, xs, ys)))(p)
    updates, opt_state = opt.update(grads, opt_state, p)
    p = optax.apply_updates(p, updates)
print(p['w'])
"""


def test_optax_getting_started_with_a_dict_of_parameters_through_vmap():
    # optax 'Getting started' loop; optax 0.2.8 with JAX 0.10.2 (x64)
    sgd = outputs(OPTAX_LOOP.replace("OPTIMIZER", "optax.sgd(0.05, momentum=0.9, nesterov=True)"))
    np.testing.assert_allclose(sgd["p['w']"], [0.18498257569213855, 1.5880330542993166, -0.6245692486523439], rtol=1e-12)
    adamw = outputs(OPTAX_LOOP.replace("OPTIMIZER", "optax.adamw(0.05, weight_decay=0.1)"))
    np.testing.assert_allclose(adamw["p['w']"], [0.2923818478800927, -0.29136793185630705, 0.7824115756919973],
                               rtol=1e-12)


CHECK_GRADS = """
import jax
import jax.numpy as jnp
from jax.test_util import check_grads

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return jnp.sin(x), x

def f_bwd(x, g):
    return (g * RULE,)

f.defvjp(f_fwd, f_bwd)
check_grads(f, (jnp.array([0.5, 1.0]),), order=1, modes=["rev"])
print(f(jnp.array([0.5, 1.0])))
"""


def test_jax_check_grads_passes_a_right_rule():
    # JAX 0.10.2: returns None; then [0.47942554 0.84147098]
    out = outputs(CHECK_GRADS.replace("RULE", "jnp.cos(x)"))
    np.testing.assert_allclose(out["f(jnp.array([0.5, 1.0]))"], np.sin([0.5, 1.0]), rtol=1e-15)


def test_jax_check_grads_refuses_a_wrong_rule_at_its_call():
    from gradcli.errors import GradcliError
    import pytest
    # JAX 0.10.2: AssertionError (Not equal to tolerance ... ACTUAL: array(1.582305) DESIRED: array(1.99968))
    with pytest.raises(GradcliError) as caught:
        outputs(CHECK_GRADS.replace("RULE", "jnp.sin(x)"))
    assert "Derivative check of f failed (order 1)" in str(caught.value) and "(JAX: AssertionError)" in str(caught.value)
    assert caught.value.pos.line == 17


def test_the_cookbooks_check_grads_of_the_logistic_loss_at_order_two():
    out = outputs("""
import jax.numpy as jnp
from jax.test_util import check_grads

def sigmoid(x):
    return 0.5 * (jnp.tanh(x / 2) + 1)

inputs = jnp.array([[0.52, 1.12,  0.77],
                    [0.88, -1.08, 0.15]])
targets = jnp.array([True, False])

def loss(W, b):
    preds = sigmoid(jnp.dot(inputs, W) + b)
    label_probs = preds * targets + (1 - preds) * (1 - targets)
    return -jnp.sum(jnp.log(label_probs))

W = jnp.array([0.3, -0.2, 0.5])
b = 0.1
check_grads(loss, (W, b), order=2)
print(loss(W, b))
""")
    # JAX 0.10.2 (x64): check_grads returns None; loss 1.579570824487352
    np.testing.assert_allclose(out["loss(W, b)"], 1.579570824487352, rtol=1e-12)


def test_a_dict_of_parameters_updated_key_by_key():
    # before: `params[k] = ...` was read as an array's item with a computed index, and refused
    out = outputs("""
import jax
import jax.numpy as jnp
params = {'w': jnp.array([0.5, -0.3]), 'b': jnp.array(0.1)}
x = jnp.array([[1.0, 2.0], [3.0, -1.0]])
y = jnp.array([1.0, 0.0])
def loss(params):
    return jnp.mean((x @ params['w'] + params['b'] - y) ** 2)
for step in range(3):
    g = jax.grad(loss)(params)
    for k in params:
        params[k] = params[k] - 0.1 * g[k]
print(params['w'], params['b'], loss(params))
""")
    # JAX 0.10.2 (x64): [0.0899 0.3253] 0.1029 0.013380424999999994
    np.testing.assert_allclose(out["params['w']"], [0.08990000000000002, 0.32530000000000003], rtol=1e-12)
    np.testing.assert_allclose(out["params['b']"], 0.10289999999999999, rtol=1e-12)
    np.testing.assert_allclose(out["loss(params)"], 0.013380424999999994, rtol=1e-12)


def test_a_dict_item_assigned_is_seen_by_every_name_holding_the_dict():
    out = outputs("""
import jax.numpy as jnp
x = jnp.array([1.0, 2.0])
d = {'a': x * 2}
e = d
d['b'] = jnp.sin(x)
d['a'] = d['a'] + 1.0
print(e['a'], e['b'])
""")
    # JAX 0.10.2: [3. 5.] [0.84147098 0.90929743]
    np.testing.assert_allclose(out["e['a']"], [3.0, 5.0])
    np.testing.assert_allclose(out["e['b']"], np.sin([1.0, 2.0]), rtol=1e-15)
