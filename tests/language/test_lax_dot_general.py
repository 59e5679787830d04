"""lax.dot_general(lhs, rhs, ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))) and
lax.batch_matmul: values and gradients as JAX 0.10.2 (x64) prints them for the same programs."""
import subprocess
import sys

import pytest

HEAD = ("from jax import lax\nimport jax.numpy as jnp\nx = jnp.array([[1.0, 2.0], [3.0, 4.0]])\n"
        "y = jnp.array([[1.0, 0.5], [2.0, 1.0]])\n")


def _gradcli(*args: str, program: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gradcli", *args], input=program, capture_output=True, text=True)


def _numbers(line: str) -> list[float]:
    return [float(v) for v in line.split("\t")[1].split()]


@pytest.mark.parametrize("call, expected", [
    ("lax.dot_general(x, y, (((1,), (0,)), ((), ())))", [5.0, 2.5, 11.0, 5.5]),  # x @ y
    ("lax.dot_general(x, y, (((0,), (0,)), ((), ())))", [7.0, 3.5, 10.0, 5.0]),  # x.T @ y
    ("lax.dot_general(x, y, (((1,), (1,)), ((0,), (0,))))", [2.0, 10.0]),  # row by row
    ("lax.dot_general(x, y, ((1, 0), ((), ())))", [5.0, 2.5, 11.0, 5.5]),  # one axis written bare
    ("lax.dot_general(jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0, 5.0]), (((), ()), ((), ())))",
     [3.0, 4.0, 5.0, 6.0, 8.0, 10.0]),  # no contraction: the outer product
    # the batch axis first in the result, then lhs's free axis, then rhs's
    ("lax.dot_general(jnp.arange(6.0).reshape(3, 2), jnp.arange(12.0).reshape(2, 3, 2), (((0,), (1,)), ((1,), (0,))))",
     [20.0, 26.0, 80.0, 89.0]),
    ("lax.batch_matmul(x[None], y[None])", [5.0, 2.5, 11.0, 5.5]),
])
def test_dot_general_gives_jax_s_values(call, expected):
    done = _gradcli("eval", program=HEAD + call + "\n")
    assert done.returncode == 0, done.stderr
    assert _numbers(done.stdout) == expected


def test_a_batched_dot_general_gives_jax_s_gradients():
    program = ("from jax import lax\nimport jax.numpy as jnp\na = jnp.arange(24.0).reshape(2, 3, 4) / 10\n"
               "b = jnp.arange(40.0).reshape(2, 4, 5) / 7 - 1\n"
               "jnp.sum(jnp.sin(lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,))))))\n")
    done = _gradcli("grad", "--wrt", "a", "--wrt", "b", program=program)
    assert done.returncode == 0, done.stderr
    a, b = done.stdout.splitlines()
    # JAX 0.10.2: jax.grad(f, argnums=(0, 1))(a, b), first and last elements of each
    assert _numbers(a)[:3] == pytest.approx([-3.047957632754485, -0.06594927396954589, 2.916059084815393], rel=1e-12)
    assert _numbers(a)[-1] == pytest.approx(-0.6725805938719525, rel=1e-12)
    assert _numbers(b)[:2] == pytest.approx([0.9953523794457818, 0.581440446410814], rel=1e-12)
    assert _numbers(b)[-1] == pytest.approx(4.526805569276625, rel=1e-12)


@pytest.mark.parametrize("call, message", [
    ("lax.dot_general(x, y, (((1,), (0, 1)), ((), ())))",
     "lax.dot_general(): lhs and rhs must name as many contracting and batch axes"),
    ("lax.dot_general(x, y, (((2,), (0,)), ((), ())))",
     "lax.dot_general(): dimension_numbers name axes (2,) of an operand with 2 axes"),
    ("lax.dot_general(x, jnp.ones((3, 2)), (((1,), (0,)), ((), ())))",
     "lax.dot_general(): lhs axis 1 (length 2) and rhs axis 0 (length 3) are paired but differ in length"),
    ("lax.dot_general(x, y, x)", "lax.dot_general(): dimension_numbers must be ((lhs_contracting, rhs_contracting), "
     "(lhs_batch, rhs_batch)), tuples of integer axes written in the program"),
    ("lax.dot_general(x, y, (((1,), (0,)), ((), ())), preferred_element_type=jnp.float32)",
     "lax.dot_general(preferred_element_type=...) is not supported: cast the operands"),
])
def test_dot_general_refusals_name_what_is_wrong(call, message):
    done = _gradcli("eval", program=HEAD + call + "\n")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == f"<stdin>:5:1: error: {message}"
