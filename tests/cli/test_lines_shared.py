"""`--lines` shares one compiled program between lines that differ only in numbers
(gradcli.cli.lines): every answer, error and diagnostic must be exactly what the line compiled on
its own gives. Numbers that change a program's structure (a power's exponent, a shape, an
axis, an index, a condition, `x * 1`) must never be shared."""
import os
import random
import select
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from gradcli import api
from gradcli.cli import lines
from gradcli.cli import app

# Forms written with {} for numbers; each is run with several sets of numbers, so that lines of
# one shape follow each other with numbers that mean different programs.
FORMS = [
    "x = {}; y = sin(x) * x + {}",
    "x = -{}; y = exp(-x * x) * {}",
    "x = {}; y = x ** {}",
    "x = {}; y = x ** -{}",
    "x = {}; y = x * {}",
    "x = {}; y = x + {}",
    "x = {}; y = {} * x - x / {}",
    "x = {}; y = sum(zeros({}) + x)",
    "x = {}; y = round(x * 7.31, {})",
    "x = [{}, {}, {}]; y = sum(x * x[{}])",
    "x = [[{}, {}], [{}, {}]]; y = sum(sum(x * x, axis={}))",
    "x = {}; y = x if {} else -x",
    "x = {}; y = log(x - {})",
    "x = {}; y = sqrt(x) * {}",
    "x = {}; c = {}; y = x * c + c",
    "x = {}; y = x ** {} + x ** {}",
    "x = {}; y = tanh(x) * --{}",
    "def f(a): return a * {} + a\nx = {}; y = f(x) + f({})",
    "x = {}; y = exp(x * {})",
    "x = {}; y = maximum(x, {}) * {}",
    "x = {}; y = x # {} a comment",
    "x = {}; y = sum(ones({}) * x, {})",
    "x = {}; z = cos(x) * {}; y = z * z + x",
    "x = -{}; z = x * {} + {}; y = z * z - x",
]
NUMBERS = ["0", "1", "2", "3", "0.5", "1.0", "2.0", "-1", "1e400", "1e308", "1e-320", "0.0", ".5", "5.",
           "1.e2", "1E+2", "7", "12", "0.25", "3.75", "1e-3", "100"]


def _program_lines(seed: int = 7) -> str:
    rnd = random.Random(seed)
    out = []
    for form in FORMS:
        count = form.count("{}")
        for _ in range(6):
            numbers = [rnd.choice(NUMBERS) for _ in range(count)]
            out.append(form.format(*numbers).replace("\n", "; "))
        out.append("")  # a blank line: counted, not answered
    return "\n".join(out) + "\n"


def _run(args, stdin, shared: bool, monkeypatch):
    calls = []
    real = api.compile_program

    def counted(*a, **k):  # a line compiled on its own (not while a shape is being learnt)
        if lines._current is None:
            calls.append(1)
        return real(*a, **k)
    with monkeypatch.context() as m:
        m.setattr(api, "compile_program", counted)
        if not shared:
            m.setattr(lines, "MAX_SHARED_TEXT", -1)  # every line compiled on its own
        result = CliRunner().invoke(app, args, input=stdin)
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout, result.stderr, len(calls)


@pytest.mark.parametrize("args", [
    ["grad", "--lines", "--wrt", "x"],
    ["grad", "--lines", "--wrt", "x", "--format", "plain"],
    ["eval", "--lines"],
    ["eval", "--lines", "--format", "plain", "--dtype", "float32"],
])
def test_shared_programs_answer_exactly_as_each_line_compiled_alone(args, monkeypatch):
    text = _program_lines()
    shared = _run(args, text, True, monkeypatch)
    alone = _run(args, text, False, monkeypatch)
    assert shared[:3] == alone[:3]
    answered = [ln for ln in text.splitlines() if ln.strip()]
    assert len(shared[1].splitlines()) >= len(answered)
    # the sharing took place: fewer lines compiled on their own
    assert alone[3] >= len(answered) and shared[3] < alone[3] * 0.7, (shared[3], alone[3])


def test_lines_of_one_shape_whose_numbers_change_the_program_are_not_shared():
    def full(text, name):
        return api.grad(text, name=name, wrt=["x"])

    def prepare(text, name):
        return api.prepare_grad(text, name=name, wrt=["x"])
    cache = lines.LineCache(full, prepare)
    pairs = [("x = 1.5; y = x ** 2", "x = 1.5; y = x ** 3"),   # x**2 is simplified in the gradient
             ("x = 1.5; y = x ** 3", "x = 1.5; y = x ** 1"),
             ("x = 0.5; y = x * 3", "x = 0.5; y = x * 1"),     # x * 1 is folded
             ("x = 2.5; y = sum(zeros(3) + x)", "x = 2.5; y = sum(zeros(4) + x)"),   # a shape
             ("x = [1.0, 2.0]; y = sum(x * x[0])", "x = [1.0, 2.0]; y = sum(x * x[1])"),  # an index
             ("x = 1.5; y = x if 0 else -x", "x = 1.5; y = x if 1 else -x"),          # a condition
             ("x = 1.25; y = round(x, 1)", "x = 1.25; y = round(x, 2)"),              # a parameter
             # shared while the number is not 1 (g * c is then not simplified to g)
             ("x = 1.5; z = cos(x) * 2.5; y = z * z + x", "x = 1.5; z = cos(x) * 1; y = z * z + x"),
             ("x = -0.0; z = x * 2.5; y = z * z + x", "x = -0.0; z = x * 0; y = z * z + x")]
    for first, second in pairs:
        for text in (first, first, second, second):
            got, want = cache(text, "<l>"), full(text, "<l>")
            assert got.outputs["y"].tobytes() == want.outputs["y"].tobytes(), text
            g, w = got.gradients["x"], want.gradients["x"]
            assert (g is None and w is None) or g.tobytes() == w.tobytes(), text
            assert [d.to_json() for d in got.diagnostics] == [d.to_json() for d in want.diagnostics], text


def test_numbers_that_only_become_values_are_shared_and_given_anew():
    def full(text, name):
        return api.grad(text, name=name, wrt=["x"])
    cache = lines.LineCache(full, lambda text, name: api.prepare_grad(text, name=name, wrt=["x"]))
    for k, x in enumerate([2.5, -1.25, 3.0, 0.125, 7.0]):
        c = 17 + k
        result = cache(f"x = {x}; y = sin(x) * x + {c}", "<l>")
        assert float(result.outputs["y"]) == np.sin(x) * x + c
        assert float(result.gradients["x"]) == np.sin(x) + x * np.cos(x)
    templates = [t for t in cache.templates.values() if t is not None]
    assert len(templates) == 1 and len(templates[0].free) == 2  # both numbers free, one program


def test_a_coprocess_gets_each_answer_before_it_writes_the_next_line():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen([sys.executable, "-m", "gradcli", "grad", "--lines", "--wrt", "x", "--format", "plain"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    sent = [1.5, 2.5, -3.0, 4.0, -3.0, 0.75]  # -3: log gives -inf (a diagnostic, said on stderr)
    try:
        for k, x in enumerate(sent, 1):  # the next line is not written until this one is answered
            proc.stdin.write(f"x = {x}; y = log(x + 3) + x * 2\n".encode())
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], 30)
            assert ready, f"no answer to line {k} before the next line"
            number, name, value = proc.stdout.readline().decode().rstrip("\n").split("\t")
            assert (int(number), name) == (k, "x")
            with np.errstate(all="ignore"):
                assert float(value) == 1 / (np.float64(x) + 3) + 2
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    stderr = proc.stderr.read().decode()
    assert proc.returncode == 0 and stderr.count("<line 3>:1:") == 2 and stderr.count("<line 5>:1:") == 2


def _same_answer(got, want, text):
    assert list(got.outputs) == list(want.outputs), text
    for name in want.outputs:
        assert np.asarray(got.outputs[name]).tobytes() == np.asarray(want.outputs[name]).tobytes(), text
    assert list(got.gradients) == list(want.gradients), text
    for name, w in want.gradients.items():
        g = got.gradients[name]
        assert (g is None and w is None) or g.tobytes() == w.tobytes(), text
    assert [d.to_json() for d in got.diagnostics] == [d.to_json() for d in want.diagnostics], text


def _grad_cache(wrt="x", feeds=None):
    def full(text, name):
        return api.grad(text, name=name, wrt=[wrt], feeds=feeds)
    return lines.LineCache(full, lambda text, name: api.prepare_grad(text, name=name, wrt=[wrt], feeds=feeds)), full


# shapes whose every number only becomes a value: one program for all their lines
SHARED_FORMS = [
    ("x = [{a}, 1.5, -2]; sum(exp(x - stop_gradient(max(x)))) * {k}",
     lambda a, k: (k * np.exp(np.array([a, 1.5, -2]) - max(a, 1.5)).sum())),
    ("import torch; x = torch.tensor([{a}, 0.5, -1.25], requires_grad=True); "
     "loss = torch.nn.functional.softplus(x * {k}).sum()",
     lambda a, k: np.logaddexp(0, np.array([a, 0.5, -1.25]) * k).sum()),
    ("x = [[{a}, 0.5], [-0.25, {k}]]; y = sum(tanh(x @ [1.5, -0.5]) ** 2)",
     lambda a, k: (np.tanh(np.array([[a, 0.5], [-0.25, k]]) @ np.array([1.5, -0.5])) ** 2).sum()),
]


@pytest.mark.parametrize("form, formula", SHARED_FORMS)
def test_array_literals_and_folded_gradient_constants_share_one_program(form, formula):
    cache, full = _grad_cache()
    # (all positive: a minus sign is part of a line's shape, its text without the numbers)
    for a, k in [(0.25, 3.5), (1.75, 0.125), (2.5, 7.25), (0.75, 2.5), (3.0, 1.5)]:
        text = form.format(a=a, k=k)
        got = cache(text, "<l>")
        _same_answer(got, full(text, "<l>"), text)
        np.testing.assert_allclose(float(next(iter(got.outputs.values()))), formula(a, k), rtol=1e-14)
    templates = [t for t in cache.templates.values() if t is not None]
    assert len(templates) == 1 and len(templates[0].numbers) >= 2, form


def test_a_matrix_in_a_def_is_shared():
    x = np.array([0.3, -1.2])
    cache, full = _grad_cache(feeds={"x": x})
    for b, c, a in [(0.5, 1.5, 2.25), (1.25, 0.75, 0.5), (0.5, 2.5, 1.5), (0.125, 0.25, 3.0)]:
        text = f"def loss(x): W = [[{b}, 0.5], [-0.25, {c}]]; return sum(tanh(W @ x) ** 2) + {a} * sum(x)"
        got = cache(text, "<l>")
        _same_answer(got, full(text, "<l>"), text)
        t = np.tanh(np.array([[b, 0.5], [-0.25, c]]) @ x)
        np.testing.assert_allclose(got.gradients["x"], np.array([[b, 0.5], [-0.25, c]]).T @ (2 * t * (1 - t * t)) + a,
                                   rtol=1e-13)
    assert len([t for t in cache.templates.values() if t is not None]) == 1


def test_array_literals_and_folds_whose_numbers_change_the_program_are_not_shared():
    cache, full = _grad_cache()
    pairs = [("x = [1.5, 2.5, 3.5]; y = sum(x[[0, 2]] * x[0])", "x = [1.5, 2.5, 3.5]; y = sum(x[[1, 2]] * x[0])"),
             ("x = [1.5, 2.5]; y = sum(zeros([2, 2]) + x)", "x = [1.5, 2.5]; y = sum(zeros([3, 2]) + x)"),
             ("x = [1.5, 2.5]; y = sum(reshape(x, [2, 1]) * x)", "x = [1.5, 2.5]; y = sum(reshape(x, [1, 2]) * x)"),
             ("x = [0.5, 2.0]; y = sum(x ** 3)", "x = [0.5, 2.0]; y = sum(x ** 2)"),  # p - 1 folded, then x ** 1
             ("x = [0.5, 2.0]; y = sum(x ** 2.5)", "x = [0.5, 2.0]; y = sum(x ** 1)"),
             ("x = [0.5, -1.5]; sum(exp(x)) * 2.5", "x = [0.5, -1.5]; sum(exp(x)) * 1"),  # the seed times 1
             ("x = [0.5, -1.5]; sum(exp(x)) * 2.5", "x = [0.5, -1.5]; sum(exp(x)) * 0"),
             ("x = [0.5, 1.5]; y = sum(sum([[1.0, 2.0], [3.0, 4.0]] * x, axis=0))",
              "x = [0.5, 1.5]; y = sum(sum([[1.0, 2.0], [3.0, 4.0]] * x, axis=1))"),
             ("x = [1.5, 1.5]; y = max(x) * 2.5", "x = [1.5, 2.5]; y = max(x) * 2.5"),  # a tie: its diagnostic
             ("x = [0.5, -1.5]; y = sum(abs(x * 2.5))", "x = [0.0, -1.5]; y = sum(abs(x * 2.5))")]  # a kink
    for first, second in pairs:
        for text in (first, first, second, second, first):
            _same_answer(cache(text, "<l>"), full(text, "<l>"), text)


def test_a_number_in_a_printed_expression_is_not_shared_into_its_name():
    def full(text, name):
        return api.evaluate(text, name=name)
    cache = lines.LineCache(full, lambda text, name: api.prepare_evaluate(text, name=name))
    for v in ("2.0", "2.5", "2.5", "3.25", "2.0"):
        text = f"import jax; import jax.numpy as jnp; g = jax.grad(jnp.tanh); print(g({v}))"
        got, want = cache(text, "<l>"), full(text, "<l>")
        assert list(got.outputs) == [f"g({v})"]
        _same_answer(got, want, text)


def test_a_shared_program_runs_unchecked_only_where_the_checks_would_say_nothing():
    cache, full = _grad_cache()
    texts = ["x = [0.5, 1.5, 2.5]; y = log(sum(exp(x * 2.5)))",
             "x = [0.5, 1.5, 2.5]; y = log(sum(exp(x * 3.5)))",
             "x = [0.5, 1.5, 2.5]; y = log(sum(exp(x * 300.5)))",   # exp overflows: a diagnostic
             "x = [0.5, 1.5, 2.5]; y = log(sum(exp(x * 0.0)))",     # x * 0: another program
             "x = [0.5, 1.5, 2.5]; y = log(sum(exp(x * 40.5)))",    # exp(101): past float32's range
             "x = [0.5, 1.5, 2.5]; y = log(sum(exp(x * 1.5)))"]
    for text in texts:
        _same_answer(cache(text, "<l>"), full(text, "<l>"), text)
    (template,) = [t for t in cache.templates.values() if t is not None]
    assert template.replay  # the clean lines ran without the checks
    overflow = full(texts[2], "<l>")
    assert [d.kind for d in overflow.diagnostics] and not full(texts[1], "<l>").diagnostics
    assert {d.kind for d in full(texts[4], "<l>").diagnostics} == {"float32_overflow"}
