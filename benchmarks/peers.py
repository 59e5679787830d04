"""The peers' side of the benchmarks: each job here is run as its own whole process.

    python benchmarks/peers.py terms  torch|jax|autograd FILE WRT...   # value + gradient of a program
    python benchmarks/peers.py deep   torch|jax FILE X                  # y = tanh(tanh(... x)) at x = X
    python benchmarks/peers.py lines  torch|jax|autograd WRT < LINES    # one answer per line
    python benchmarks/peers.py hessian torch|jax X.npy W.npy            # the Hessian of HESSIAN_PROGRAM
    python benchmarks/peers.py memory hand|gradcli|jax|torch DTYPE X.npy W.npy   # bytes above the inputs

Each reads the same text or files as gradcli and prints its value and gradient, as a person
would write it with that library: the text is read with Python's `ast` and evaluated with the
library's scalars (eagerly), except where the library's own idiom is a compiled program (JAX's
`jit`, `fori_loop`). Imports stay inside the jobs: only the library a job names is loaded.
"""
from __future__ import annotations

import ast
import operator
import os
import re
import sys

BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
          ast.Pow: operator.pow}
FUNCTIONS = ("sin", "cos", "tanh", "exp", "log")


# --------------------------------------------------------------------------- reading text

def split_sum(text: str) -> list[str]:
    """The terms of `a + b + c` at bracket depth 0, so that a 100,000-term sum is read term by
    term (Python's own parser recurses once per `+` and gives up long before that)."""
    terms, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "+" and depth == 0:
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def read_program(text: str) -> list[tuple[str, list[ast.expr]]]:
    """Each statement as (name, terms of its right-hand side)."""
    statements = []
    for stmt in re.split(r"[;\n]", text):
        if not stmt.strip():
            continue
        name, rhs = stmt.split("=", 1)
        terms = split_sum(rhs)
        try:
            parsed = [ast.parse(t.strip(), mode="eval").body for t in terms]
        except SyntaxError:  # a `+` that was not a sum's (e.g. `2 ** +3`): read it whole
            parsed = [ast.parse(rhs.strip(), mode="eval").body]
        statements.append((name.strip(), parsed))
    return statements


def evaluate(node: ast.expr, env: dict, lib: dict):
    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.BinOp):
        return BINARY[type(node.op)](evaluate(node.left, env, lib), evaluate(node.right, env, lib))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -evaluate(node.operand, env, lib)
    if isinstance(node, ast.Call):
        return lib[node.func.id](*(evaluate(a, env, lib) for a in node.args))
    raise ValueError(f"not read by this benchmark: {ast.dump(node)}")


def run_program(statements, env: dict, lib: dict):
    """Evaluate every statement (sums term by term, in a loop); the last one's value."""
    value = None
    for name, terms in statements:
        if name in env:  # an input given by the caller
            continue
        value = evaluate(terms[0], env, lib)
        for term in terms[1:]:
            value = value + evaluate(term, env, lib)
        env[name] = value
    return value


def constants(statements) -> dict[str, float]:
    return {name: float(terms[0].value) for name, terms in statements
            if len(terms) == 1 and isinstance(terms[0], ast.Constant)}


def library(name: str) -> dict:
    if name == "torch":
        import torch
        return {f: getattr(torch, f) for f in FUNCTIONS}
    if name == "jax":
        import jax.numpy as jnp
        return {f: getattr(jnp, f) for f in FUNCTIONS}
    import autograd.numpy as anp
    return {f: getattr(anp, f) for f in FUNCTIONS}


def value_and_grad(peer: str, statements, wrt: list[str]):
    """The program's value and its gradient with respect to the `wrt` inputs, eagerly."""
    feeds = constants(statements)
    lib = library(peer)
    if peer == "torch":
        import torch
        env = {k: torch.tensor(v, dtype=torch.float64, requires_grad=k in wrt) for k, v in feeds.items()}
        y = run_program(statements, env, lib)
        grads = torch.autograd.grad(y, [env[k] for k in wrt])
        return y.item(), [g.item() for g in grads]
    if peer == "jax":
        import jax
        jax.config.update("jax_enable_x64", True)
        f = _as_function(statements, feeds, wrt, lib)
        y, grads = jax.value_and_grad(f, argnums=tuple(range(len(wrt))))(*(feeds[k] for k in wrt))
        return float(y), [float(g) for g in grads]
    from autograd import value_and_grad as vg
    f = _as_function(statements, feeds, wrt, lib)
    y, grads = vg(lambda args: f(*args))([feeds[k] for k in wrt])
    return float(y), [float(g) for g in grads]


def _as_function(statements, feeds, wrt, lib):
    def f(*args):
        env = dict(feeds)
        env.update(zip(wrt, args))
        return run_program(statements, env, lib)
    return f


# --------------------------------------------------------------------------- jobs

def terms(peer: str, path: str, *wrt: str) -> None:
    with open(path) as f:
        statements = read_program(f.read())
    y, grads = value_and_grad(peer, statements, list(wrt))
    print(y, *grads)


def deep(peer: str, path: str, x: str) -> None:
    with open(path) as f:
        text = f.read()
    # the text nests as deep as the chain is long: count the calls, as a loop would be written
    m = re.fullmatch(r"\s*(\w+)\s*=\s*((?:tanh\()*)(\w+)(\)*)\s*", text)
    depth = m.group(2).count("tanh(")
    if depth != len(m.group(4)):
        raise SystemExit("unbalanced brackets")
    x0 = float(x)
    if peer == "torch":
        import torch
        xt = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
        y = xt
        for _ in range(depth):
            y = torch.tanh(y)
        y.backward()
        print(y.item(), xt.grad.item())
        return
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    chain = jax.jit(jax.value_and_grad(lambda v: jax.lax.fori_loop(0, depth, lambda i, u: jnp.tanh(u), v)))
    y, g = chain(x0)
    print(float(y), float(g))


def lines(peer: str, wrt: str) -> None:
    out = sys.stdout
    if peer == "jax":
        # one compiled program; each line's numbers are its inputs
        import jax
        jax.config.update("jax_enable_x64", True)
        lib = library("jax")
        compiled = {}
        for line in sys.stdin:
            if not line.strip():
                continue
            statements = read_program(line)
            feeds = constants(statements)
            # the literal numbers of the formula become inputs too, so that every line reuses one program
            formula, numbers = _lift_numbers(statements, feeds)
            key = (tuple(sorted(feeds)), repr([(n, [ast.dump(t) for t in ts]) for n, ts in formula]))
            fn = compiled.get(key)
            if fn is None:
                names = sorted(feeds)
                argnum = names.index(wrt)

                def f(values, consts, formula=formula, names=names):
                    env = dict(zip(names, values))
                    env.update(consts)
                    return run_program(formula, env, lib)

                grad = jax.value_and_grad(lambda *v, f=f, argnum=argnum: f(v[:-1], v[-1]), argnums=argnum)
                fn = compiled[key] = (jax.jit(grad), names)
            jitted, names = fn
            y, g = jitted(*(feeds[k] for k in names), numbers)
            out.write(f"{float(y)!r}\t{float(g)!r}\n")
        return
    lib = library(peer)
    if peer == "torch":
        import torch
        for line in sys.stdin:
            if not line.strip():
                continue
            statements = read_program(line)
            env = {k: torch.tensor(v, dtype=torch.float64, requires_grad=k == wrt)
                   for k, v in constants(statements).items()}
            y = run_program(statements, env, lib)
            (g,) = torch.autograd.grad(y, [env[wrt]])
            out.write(f"{y.item()!r}\t{g.item()!r}\n")
        return
    from autograd import value_and_grad as vg
    for line in sys.stdin:
        if not line.strip():
            continue
        statements = read_program(line)
        feeds = constants(statements)

        def f(v, statements=statements, feeds=feeds):
            env = dict(feeds)
            env[wrt] = v
            return run_program(statements, env, lib)

        y, g = vg(f)(feeds[wrt])
        out.write(f"{float(y)!r}\t{float(g)!r}\n")


def _lift_numbers(statements, feeds):
    """The formula with its literal numbers replaced by names `_c0, _c1, ...`, and their values."""
    numbers = {}

    class Lift(ast.NodeTransformer):
        def visit_Constant(self, node):
            name = f"_c{len(numbers)}"
            numbers[name] = float(node.value)
            return ast.Name(id=name, ctx=ast.Load())

    formula = [(name, [Lift().visit(t) for t in terms]) for name, terms in statements if name not in feeds]
    return formula, numbers


HESSIAN_PROGRAM = "y = sum(tanh(W @ x) ** 2) + sum(x ** 4) / 4\n"


def hessian(peer: str, x_path: str, w_path: str) -> None:
    import numpy as np
    x, w = np.load(x_path), np.load(w_path)
    if peer == "torch":
        import torch
        wt = torch.from_numpy(w)
        h = torch.autograd.functional.hessian(
            lambda v: (torch.tanh(wt @ v) ** 2).sum() + (v ** 4).sum() / 4, torch.from_numpy(x),
            vectorize=True).numpy()
    else:
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        h = np.asarray(jax.jit(jax.hessian(lambda v: jnp.sum(jnp.tanh(w @ v) ** 2) + jnp.sum(v ** 4) / 4))(x))
    sys.stdout.write(" ".join(map(repr, h.ravel().tolist())) + "\n")


def memory(contender: str, dtype: str, x_path: str, w_path: str) -> None:
    """Peak resident memory above the loaded inputs of one value + gradient (after one warm-up
    run), in bytes: the kernel's high-water mark, reset once the inputs are in memory."""
    import gc

    import numpy as np
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import arrays
    fn = arrays.contender(contender, dtype)
    x, w = np.load(x_path), np.load(w_path)
    fn(x, w)
    gc.collect()

    def status(key):
        with open("/proc/self/status") as f:
            return int(re.search(key + r":\s+(\d+)", f.read()).group(1)) * 1024

    base = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current resident size
    fn(x, w)
    print(status("VmHWM") - base)


if __name__ == "__main__":
    job, *args = sys.argv[1:]
    {"terms": terms, "deep": deep, "lines": lines, "hessian": hessian, "memory": memory}[job](*args)
    sys.stdout.flush()
