"""The library API users hold: a program compiled once into a `Program`, asked many commands,
with its options in one `RunOptions`. The functions of one call (`api.grad(text, ...)`) compile a
Program and ask it once, so each answer of a reused Program is compared, value for value and
diagnostic for diagnostic, with the answer of a program compiled for that command alone; the
numbers themselves are checked against NumPy and hand-derived formulas."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gradcli
from gradcli import api
from gradcli.errors import GradcliError, OptionError
from gradcli.ir import Graph

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


def canon(value):
    """A comparable form of an answer: arrays by dtype, shape and bits; diagnostics by their
    JSON, fix and reach; a graph by its equations; records by their fields."""
    if isinstance(value, Graph):
        return ("graph", value.source.text, sorted(value.names.items()), sorted(value.inputs.items()),
                [(eq.op.name, eq.inputs, eq.label, str(eq.pos), eq.backward) for eq in value.equations])
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        return ("array", str(array.dtype), array.shape, array.tobytes())
    if isinstance(value, dict):
        return {repr(k): canon(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canon(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(map(repr, value))
    if type(value).__name__ == "Diagnostic":
        return (value.to_json(), repr(value.fix), value.suggestion, value.reaches)
    fields = getattr(value, "_fields", None) or getattr(value, "__dataclass_fields__", None)
    if fields is not None:
        return (type(value).__name__, {f: canon(getattr(value, f)) for f in fields})
    return value


# (text, feeds, inputs to differentiate, the output, a second set of feeds of the same shapes)
PROGRAMS = [
    (sample("linear_regression.expr"), {}, ["w", "b"], "loss", {"w": [0.1, -0.3], "b": 0.5}),
    (sample("em_mixture.expr"), {}, ["mu"], "nll", {"mu": [0.5, 1.5]}),
    (sample("contrastive_divergence.expr"), {}, ["W", "b"], "loss", {"b": [0.0, 0.3, -0.1]}),
    (sample("stable_softmax.expr"), {}, ["x"], "y", {"x": [0.5, -1.0, 2.0]}),
    (sample("naive_softmax.expr"), {}, ["x"], "y", {"x": [0.5, -1.0, 2.0]}),
    (sample("fgsm.expr"), {}, ["eps", "w"], "adv_loss", {"eps": 0.3}),
    ("y = sum(abs(x) * x) + sum(sqrt(x))", {"x": [0.0, 2.0, 3.0]}, ["x"], "y", {"x": [1.0, 4.0, 9.0]}),
    ("def f(a, b):\n    return sum(log(1 + exp(a * b)))\n\nz = f(u, v)", {"u": [1.0, 800.0], "v": 2.0},
     ["u", "v"], "z", {"u": [0.5, -1.0], "v": 3.0}),
]
IDS = ["linear_regression", "em_mixture", "contrastive_divergence", "stable_softmax", "naive_softmax", "fgsm",
       "kink", "overflow_in_a_function"]


def commands(text, feeds, wrt, of):
    """Each command, as (its name, the Program method's call, the one-call function's call)."""
    scalar = [of] if np.shape(api.evaluate(text, feeds=feeds, prints=[of]).outputs[of]) == () else None
    rows = [
        ("evaluate", lambda p: p.evaluate(), lambda: api.evaluate(text, feeds=feeds)),
        ("evaluate prints", lambda p: p.evaluate([of]), lambda: api.evaluate(text, feeds=feeds, prints=[of])),
        ("grad", lambda p: p.grad(wrt, [of]), lambda: api.grad(text, feeds=feeds, wrt=wrt, of=[of])),
        ("grad float32", None, lambda: api.grad(text, feeds=feeds, wrt=wrt, of=[of], dtype="float32")),
        ("jacobian", lambda p: p.jacobian(wrt, of), lambda: api.jacobian(text, feeds=feeds, wrt=wrt, of=of)),
        ("check", lambda p: p.check(wrt, [of]), lambda: api.check(text, feeds=feeds, wrt=wrt, of=[of])),
        ("derive", lambda p: p.derive(wrt[0], [of]), lambda: api.derivation(text, feeds=feeds, wrt=wrt[0], of=[of])),
        ("graph", lambda p: p.graph_view(of, wrt), lambda: api.graph_view(text, feeds=feeds, of=of, wrt=wrt)),
        ("fix", lambda p: p.fix(), lambda: api.fix(text, feeds=feeds)),
        ("fix grad", lambda p: p.fix(wrt, [of]), lambda: api.fix(text, feeds=feeds, wrt=wrt, of=[of])),
    ]
    if scalar:
        rows.append(("hessian", lambda p: p.hessian(wrt, of), lambda: api.hessian(text, feeds=feeds, wrt=wrt, of=of)))
    return rows


@pytest.mark.parametrize("text, feeds, wrt, of, other", PROGRAMS, ids=IDS)
def test_one_program_asked_every_command_twice_answers_as_a_program_compiled_for_each(text, feeds, wrt, of, other):
    """The commands in two orders on one Program (each adds its own equations, differentiated
    or not, which decide the tie and kink diagnostics of what runs next): every answer is the
    one-call function's, which compiles anew."""
    program = gradcli.compile(text, feeds=feeds)
    compiled = len(program.graph.equations)
    rows = [row for row in commands(text, feeds, wrt, of) if row[1] is not None]
    for name, ask, alone in rows + rows[::-1]:
        assert canon(ask(program)) == canon(alone()), name
    assert len(program.graph.equations) == compiled  # the program itself stays as compiled


def test_the_functions_of_one_call_are_a_program_asked_once():
    text, feeds = sample("stable_softmax.expr"), {"x": [1.0, 2.0, 4.0]}
    program = gradcli.compile(text, feeds=feeds, options=gradcli.RunOptions(dtype="float32"))
    assert canon(program.grad(["x"], grad_ys={"y": [1.0, 0.0, 0.0]})) == \
        canon(api.grad(text, feeds=feeds, wrt=["x"], grad_ys={"y": [1.0, 0.0, 0.0]}, dtype="float32"))
    assert api.derive(text, feeds=feeds, wrt="x") == program.derive("x").program
    kink = gradcli.compile("y = abs(x)", feeds={"x": 0.0})
    assert canon(kink.curve("x", -1.0, 1.0, points=5, order=2)) == \
        canon(api.curve("y = abs(x)", feeds={"x": 0.0}, wrt="x", low=-1.0, high=1.0, points=5, order=2))
    assert canon(kink.hessian(["x"], unconnected="zero")) == \
        canon(api.hessian("y = abs(x)", feeds={"x": 0.0}, wrt=["x"], unconnected="zero"))


def test_a_gradient_taken_first_leaves_no_kink_in_the_value_asked_next():
    """abs is differentiated at its kink only when a gradient is asked: the value alone has no
    kink diagnostic, whatever the Program was asked before."""
    program = gradcli.compile("y = sum(abs(x))", feeds={"x": [0.0, 1.0]})
    assert [d.kind for d in program.grad(["x"]).diagnostics] == ["kink"]
    assert program.evaluate().diagnostics == []
    np.testing.assert_array_equal(program.grad("x").gradients["x"], [0.0, 1.0])  # NumPy's sign, as TensorFlow


@pytest.mark.parametrize("text, feeds, wrt, of, other", PROGRAMS, ids=IDS)
def test_compiled_once_then_asked_with_other_feeds_answers_as_compiled_with_them(text, feeds, wrt, of, other):
    program = gradcli.compile(text, feeds=feeds)
    first = canon(program.grad(wrt, [of]))
    assert canon(program.evaluate([of], feeds=other)) == canon(api.evaluate(text, feeds={**feeds, **other},
                                                                            prints=[of]))
    assert canon(program.grad(wrt, [of], feeds=other)) == canon(api.grad(text, feeds={**feeds, **other}, wrt=wrt,
                                                                         of=[of]))
    assert canon(program.grad(wrt, [of])) == first  # its own feeds are kept


def test_new_feeds_give_numpy_s_numbers():
    program = gradcli.compile("y = sum(w * x ** 2)", feeds={"x": [1.0, 2.0], "w": [3.0, 0.5]})
    for x, w in ((np.array([1.0, 2.0]), np.array([3.0, 0.5])), (np.array([-4.0, 0.25]), np.array([1.0, 7.0]))):
        r = program.grad(["x", "w"], feeds={"x": x, "w": w})
        np.testing.assert_array_equal(r.outputs["y"], np.sum(w * x ** 2))
        np.testing.assert_array_equal(r.gradients["x"], 2 * w * x)
        np.testing.assert_array_equal(r.gradients["w"], x ** 2)
    hessian = program.hessian(["x"]).hessians["x"]  # still the compiled feeds: 2 diag(w)
    np.testing.assert_array_equal(hessian, np.diag([6.0, 1.0]))


def test_values_read_while_the_program_is_read_are_read_again_for_new_feeds():
    """Keras reads labels that are all 0 or 1 as -1 and 1, a decision made on the labels' values
    as the program is read: new labels are read anew, never run through the old decision."""
    text = "import tensorflow as tf\nloss = tf.keras.losses.hinge(t, p)"
    p = np.array([[0.3, -0.4]])
    program = gradcli.compile(text, feeds={"t": [[1.0, 0.0]], "p": p})
    np.testing.assert_allclose(program.evaluate().outputs["loss"], [np.mean(np.maximum(1 - [1, -1] * p, 0))])
    labels = np.array([[0.5, 2.0]])  # not all 0 or 1: used as they are
    np.testing.assert_allclose(program.evaluate(feeds={"t": labels}).outputs["loss"],
                               [np.mean(np.maximum(1 - labels * p, 0))])


def test_a_prepared_program_is_kept_and_run_again_without_differentiating_again():
    program = gradcli.compile("y = sum(exp(x) * x)", feeds={"x": [0.5, 1.5]})
    prepared = program.prepare_grad(["x"])
    assert program.prepare_grad("x").graph is prepared.graph
    size = len(prepared.graph.equations)
    assert size > len(program.graph.equations)  # the gradient's equations are the prepared command's
    x = np.array([0.5, 1.5])
    for _ in range(3):
        np.testing.assert_allclose(program.grad(["x"]).gradients["x"], np.exp(x) * (1 + x), rtol=1e-15)
    assert len(prepared.graph.equations) == size
    assert prepared.fetch == {"y": program.graph.names["y"], "\0x": size - 1}
    # what --lines does: a source equation given another value, the same equations run
    (const,) = [i for i, eq in enumerate(prepared.graph.equations) if eq.op.name == "input"]
    again = prepared.result({const: np.array([2.0, -1.0])})
    np.testing.assert_allclose(again.gradients["x"], np.exp([2.0, -1.0]) * (1 + np.array([2.0, -1.0])), rtol=1e-15)
    assert canon(prepared.result()) == canon(api.grad("y = sum(exp(x) * x)", feeds={"x": x}, wrt=["x"]))


def test_the_prepare_functions_give_what_the_one_call_functions_give():
    text = sample("em_mixture.expr")
    assert canon(api.prepare_evaluate(text, prints=["mu_new"]).result()) == \
        canon(api.evaluate(text, prints=["mu_new"]))
    assert canon(api.prepare_grad(text, wrt=["mu"], of=["nll"]).result()) == \
        canon(api.grad(text, wrt=["mu"], of=["nll"]))


def test_returned_arrays_are_the_caller_s():
    """A result never shares memory with the program (its inputs, constants, prepared seeds):
    changing it changes nothing the Program answers next. Nor does changing a fed array."""
    x = np.array([1.0, -2.0])
    program = gradcli.compile("c = [3.0, 4.0]\ny = x\nz = sum(c * x)", feeds={"x": x})
    x[:] = 100.0
    for _ in range(2):
        r = program.evaluate(["y", "c"])
        np.testing.assert_array_equal(r.outputs["y"], [1.0, -2.0])
        np.testing.assert_array_equal(r.outputs["c"], [3.0, 4.0])
        r.outputs["y"][:] = r.outputs["c"][:] = np.nan
    for _ in range(2):
        r = program.grad(["x", "c"], ["z"], grad_ys={"z": 2.0})
        np.testing.assert_array_equal(r.gradients["x"], [6.0, 8.0])
        np.testing.assert_array_equal(r.gradients["c"], [2.0, -4.0])
        r.gradients["x"][:] = r.gradients["c"][:] = np.nan
    for _ in range(2):
        r = program.grad(["x"], ["y"], unconnected="zero")
        np.testing.assert_array_equal(r.gradients["x"], [1.0, 1.0])
        r.gradients["x"][:] = np.nan
    for _ in range(2):
        r = program.jacobian(["x"], "y")
        np.testing.assert_array_equal(r.jacobians["x"], np.eye(2))
        r.jacobians["x"][:] = np.nan


def test_run_options_refuse_what_the_functions_refuse_with_the_same_words():
    cases = [({"dtype": "int8"}, GradcliError, "unknown dtype 'int8': use float64, float32, float16, bfloat16, "
                                                "float8_e4m3fn, float8_e5m2", None),
             ({"dtype": "bfloat16", "device": "dask"}, OptionError,
              "--dtype bfloat16 runs on --device cpu only (this is --device dask)", "device"),
             ({"device": "tpu"}, GradcliError, "unknown device 'tpu': use cpu, cuda, dask", None),
             ({"chunks": 1 << 20}, OptionError, "chunks applies to --device dask only (this is --device cpu)",
              "chunks"),
             ({"scheduler": "local"}, OptionError,
              "scheduler applies to --device dask only (this is --device cpu)", "scheduler")]
    for given, kind, message, option in cases:
        for make in (lambda: gradcli.RunOptions(**given), lambda: api.evaluate("y = 1", **given),
                     lambda: api.grad("y = x", wrt=["x"], feeds={"x": 1.0}, **given)):
            with pytest.raises(kind) as raised:
                make()
            assert type(raised.value) is kind
            assert (raised.value.message, getattr(raised.value, "option", None)) == (message, option)


def test_run_options_are_fixed_once_made():
    options = gradcli.RunOptions(dtype="float32", max_memory=1 << 30)
    with pytest.raises(AttributeError, match=r"use \.replace\(dtype=\.\.\.\)"):
        options.dtype = "float64"
    assert options.replace(dtype="float64") == gradcli.RunOptions(max_memory=1 << 30)
    assert options.dtype == "float32"
    with pytest.raises(GradcliError, match="unknown dtype 'half'"):
        options.replace(dtype="half")


def test_a_program_s_options_decide_its_runs():
    program = gradcli.compile("y = x / 3", feeds={"x": 1.0}, options=gradcli.RunOptions(dtype="float32"))
    r = program.evaluate()
    assert (r.dtype, r.outputs["y"].dtype, r.outputs["y"]) == ("float32", np.float32, np.float32(1) / np.float32(3))
    tiny = gradcli.compile("y = sum(x * x)", feeds={"x": np.ones(10_000)},
                           options=gradcli.RunOptions(max_memory=50_000))
    with pytest.raises(GradcliError, match=r"78.1 KiB\), more than the 48.8 KiB allowed"):
        tiny.evaluate()


def test_an_error_in_the_program_is_raised_by_compile_and_an_unknown_name_by_the_command():
    with pytest.raises(GradcliError) as raised:
        gradcli.compile("y = (x +")
    assert raised.value.pos is not None
    program = gradcli.compile("y = x * 2", feeds={"x": 1.0})
    with pytest.raises(OptionError) as raised:
        program.grad(["q"])
    assert (raised.value.option, raised.value.message) == ("wrt", "unknown name for wrt 'q': the program's names "
                                                                  "are x, y")
    with pytest.raises(OptionError, match="grad needs at least one"):
        program.grad([])


def test_symbols_derive_and_refuse_to_run_as_a_program_without_them_does():
    program = gradcli.compile("y = sin(x) * a", feeds={"a": 2.0}, symbols=True)
    assert program.derive("x").program.splitlines()[1:] == ["a = 2.0", "dy_dx = a * cos(x)"]
    with pytest.raises(GradcliError) as raised:
        program.evaluate()
    with pytest.raises(GradcliError) as alone:
        api.evaluate("y = sin(x) * a", feeds={"a": 2.0})
    assert (raised.value.message, raised.value.pos) == (alone.value.message, alone.value.pos)


def test_the_library_names_load_with_their_first_use():
    code = ("import sys, gradcli\nassert 'gradcli.api' not in sys.modules\n"
            "p = gradcli.compile('y = x', feeds={'x': 2.0}, options=gradcli.RunOptions())\n"
            "assert isinstance(p, gradcli.Program) and 'gradcli.api' in sys.modules\n"
            "print(p.grad('x').gradients['x'])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "1.0\n", "")


def test_a_program_on_dask_computes_its_jacobian_from_the_values_it_reads_lazily():
    da = pytest.importorskip("dask.array")
    x = np.array([0.5, 1.0, 2.0])
    program = gradcli.compile("y = exp(x) * x", feeds={"x": da.from_array(x, chunks=2)},
                              options=gradcli.RunOptions(device="dask"))
    np.testing.assert_allclose(program.evaluate().outputs["y"], np.exp(x) * x, rtol=1e-15)
    np.testing.assert_allclose(program.jacobian(["x"]).jacobians["x"], np.diag(np.exp(x) * (1 + x)), rtol=1e-15)
    np.testing.assert_allclose(program.grad(["x"]).gradients["x"], np.exp(x) * (1 + x), rtol=1e-15)


def test_a_program_and_its_graphs_are_freed_with_their_last_reference():
    """No reference cycle: a large program's equations go as soon as the Program and its answers
    do, not at some later pass of the cyclic collector (which would scan all of them)."""
    import gc
    import weakref

    gc.disable()
    try:
        program = gradcli.compile("y = sum(exp(x) * x)", feeds={"x": [0.5, 1.5]})
        answers = [program.evaluate(), program.grad(["x"]), program.prepare_grad(["x"], grad_ys={"y": 2.0}).result(),
                   program.jacobian(["x"]), program.derive("x"), program.fix(["x"])]
        graphs = [weakref.ref(program.graph)] + [weakref.ref(a.graph) for a in answers]
        del program, answers
        assert [g() for g in graphs] == [None] * len(graphs)
    finally:
        gc.enable()


def test_a_fork_of_a_graph_holds_what_the_program_knows_beside_its_equations():
    from gradcli.errors import Source

    graph = Graph(Source("t.gc", "y = x\n"))
    graph.made_by, graph.printed, graph.unshaped = {1: "torch"}, [("y", 1)], {2: "z"}
    graph.assertions, graph.zero_dims_promote, graph.dtypes = ((1, "x > 0", None),), False, {1: "float16"}
    graph.accumulates_in_type, graph.local_values = frozenset({1}), {"f.a": [[0, 1]]}
    forked = graph.fork()
    for name in ("made_by", "printed", "unshaped", "assertions", "zero_dims_promote", "dtypes",
                 "accumulates_in_type", "local_values", "unread_inputs", "numbers"):
        assert getattr(forked, name) == getattr(graph, name), name
    assert forked.made_by is not graph.made_by and forked.dtypes is not graph.dtypes  # (its own, to add to)
    assert graph.fork(casts=False).dtypes is None
    assert Graph(Source("t.gc", "")).fork().assertions == () and Graph(Source("t.gc", "")).fork().zero_dims_promote
