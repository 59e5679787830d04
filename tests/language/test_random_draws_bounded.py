"""A random draw (or a seeded layer's weights) of more numbers than the lowering makes for a
constant is refused before anything is drawn: one message with its place, exit 2, instead of the
machine running out of memory or the lowering running for minutes."""
import subprocess
import sys

import pytest

LIMIT = "is more than the 100,000,000 gradcli makes while it reads a program: draw fewer, or give the values as a file"


@pytest.mark.parametrize("program, label, count", [
    ("import numpy as np\nnp.random.seed(0)\nx = np.random.randn(100000, 100000)\n", "np.random.randn", "10,000,000,000"),
    ("import numpy as np\nnp.random.seed(0)\nx = np.random.normal(0.0, 1.0, size=(100000, 100000))\n",
     "np.random.normal", "10,000,000,000"),
    ("import numpy as np\nnp.random.seed(0)\nx = np.random.permutation(10**9)\n", "np.random.permutation",
     "1,000,000,000"),
    ("import jax\nk = jax.random.PRNGKey(0)\nx = jax.random.normal(k, (100000, 100000))\n", "jax.random.normal",
     "10,000,000,000"),
    ("import jax\nk = jax.random.PRNGKey(0)\nx = jax.random.split(k, 10**9)\n", "jax.random.split", "1,000,000,000"),
    ("import torch\ntorch.manual_seed(0)\nx = torch.randn(100000, 100000)\n", "torch.randn", "10,000,000,000"),
    ("import torch\ntorch.manual_seed(0)\nx = torch.randperm(10**9)\n", "torch.randperm", "1,000,000,000"),
    ("import torch\ntorch.manual_seed(0)\nx = torch.nn.Linear(100000, 100000)\n", "torch.nn.Linear",
     "10,000,100,000"),
])
def test_an_absurd_draw_is_refused_before_it_is_drawn(program, label, count):
    done = subprocess.run([sys.executable, "-m", "gradcli", "eval"], input=program, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == f"<stdin>:3:5: error: {label}(): a draw of {count} numbers {LIMIT}"
