"""An index array the program binds to a name (`idx = jnp.array([0, 2, 0, 0])`, `m =
torch.tensor([True, False, True])`) is known before evaluation, as an index written in the
subscript is: subscripts, `.at[]`, `take`, `index_select`. Given from outside (--set) it is data,
refused; written with floats it is refused, as NumPy refuses float indices. Expected values
printed by JAX 0.10.2 (x64) and PyTorch 2.13.0+cpu for the same programs."""
import subprocess
import sys

import pytest

JAX = ("import jax\nimport jax.numpy as jnp\nx = jnp.array([1.0, 2.0, 3.0])\nidx = jnp.array([0, 2, 0, 0])\n"
       "w = jnp.array([1.0, 2.0, 3.0, 4.0])\n")
TORCH = ("import torch\nx = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)\n"
         "idx = torch.tensor([0, 2, 0, 0])\n")


def _run(program: str, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gradcli", "eval", *options], input=program, capture_output=True,
                          text=True)


@pytest.mark.parametrize("program, expected", [
    # JAX: jax.grad(...)(x) of each, as JAX 0.10.2 printed
    (JAX + "jax.grad(lambda x: jnp.sum(x[idx] * w))(x)", "8.0 0.0 2.0"),
    (JAX + "jax.grad(lambda x: jnp.sum(jnp.take(x, idx) ** 2))(x)", "6.0 0.0 6.0"),
    (JAX + "jax.grad(lambda w: jnp.sum(jnp.zeros(3).at[idx].add(w) ** 2))(w)", "16.0 4.0 16.0 16.0"),
    # PyTorch: x.grad after backward, as PyTorch 2.13.0 printed
    (TORCH + "(x[idx] * torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)).sum().backward()\nx.grad",
     "8.0 0.0 2.0"),
    (TORCH + "torch.index_select(x, 0, idx).sum().backward()\nx.grad", "3.0 0.0 1.0"),
    # a mask bound to a name selects (NumPy: [1. 3.]), never read as the indices 1, 0, 1
    ("import numpy as np\nx = np.array([1.0, 2.0, 3.0])\nm = np.array([True, False, True])\nx[m]", "1.0 3.0"),
    ("import torch\nx = torch.tensor([1.0, 2.0, 3.0])\nm = torch.tensor([True, False, True])\nx[m].sum()", "4.0"),
])
def test_an_index_array_bound_to_a_name_is_known_before_evaluation(program, expected):
    done = _run(program + "\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].split("\t")[1] == expected


def test_an_index_given_from_outside_is_data_and_refused():
    done = _run(JAX + "jnp.sum(x[idx])\n", "--set", "idx=[0, 1, 1, 2]")
    assert done.returncode == 2
    assert "an index must be a constant integer (or list, or mask) written in the program: 'idx' is an input" \
        in done.stderr


def test_an_index_written_with_floats_is_refused_as_numpy_refuses_it():
    done = _run("import numpy as np\nx = np.array([1.0, 2.0, 3.0])\nidx = np.array([0.0, 2.0])\nx[idx]\n")
    assert done.returncode == 2
    assert done.stderr.startswith("<stdin>:4:3: error: an index must be a constant integer")
