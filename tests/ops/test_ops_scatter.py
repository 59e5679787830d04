"""PyTorch's writes by index (scatter, scatter_add, scatter_reduce, index_add, index_fill,
index_reduce), one_hot, masked_select, mode, and renorm, conj_physical and
multilabel_margin_loss: each forward against a NumPy loop written here from PyTorch's
documentation (and numbers PyTorch 2.13 printed, where its conventions decide), gradients and
second derivatives against float64 finite differences, a float32 run; then the refusals, with
their messages and exit code 2."""
import numpy as np
import pytest

from gradcli import api
from gradcli.errors import GradcliError

from cli_helpers import invoke
from gradcheck import check_op_case


def normal(shape):
    return lambda rng: rng.standard_normal(shape)


def const(value):
    return lambda rng: np.asarray(value, dtype=float)


def scattered(x, dim, index, src, reduce, include_self=True):
    """PyTorch's scatter_reduce by its definition: each position's list of values, reduced."""
    out = np.array(x, dtype=float)
    index = np.asarray(index, dtype=int)
    lists: dict = {}
    for p in np.ndindex(index.shape):
        q = list(p)
        q[dim] = index[p]
        lists.setdefault(tuple(q), []).append(src[p])
    for q, values in lists.items():
        values = ([x[q]] if include_self else []) + values
        out[q] = {"sum": sum, "mean": lambda v: sum(v) / len(v), "amax": max, "amin": min,
                  "set": lambda v: v[-1]}[reduce](values)
    return out


def index_reduced(x, dim, index, source, reduce, include_self=True, alpha=1.0):
    """PyTorch's index_add / index_reduce: source's slice k goes to slice index[k] along dim."""
    shape = [1] * source.ndim
    shape[dim] = len(index)
    full = np.broadcast_to(np.reshape(np.asarray(index, dtype=int), shape), source.shape)
    return scattered(x, dim, full, source * alpha, reduce, include_self)


def multilabel_margin(x, t):
    x, t = np.atleast_2d(x), np.atleast_2d(t).astype(int)
    losses = []
    for row, targets in zip(x, t):
        ys = list(targets[:list(targets).index(-1)] if -1 in targets else targets)
        losses.append(sum(max(0.0, 1 - (row[j] - row[i])) for j in ys for i in range(len(row)) if i not in ys)
                      / len(row))
    return np.array(losses)


I = [[0, 2, 1, 0], [2, 2, 0, 1]]   # repeats positions along dim 0
ROWS = [0, 2, 0]                     # index_ functions' vector index, 0 repeated

CASES = [
    ("y = torch.scatter_add(x, 0, i, s)", {"x": normal((3, 4)), "s": normal((2, 4))},
     lambda x, s, i: scattered(x, 0, i, s, "sum"), {"fixed": {"i": const(I)}}),
    ("y = torch.scatter_add(x, 1, [[0, 2], [1, 1]], s)", {"x": normal((2, 3)), "s": normal((3, 3))},
     lambda x, s: scattered(x, 1, [[0, 2], [1, 1]], s, "sum"), {}),
    ("y = x.scatter_add(0, i, s)", {"x": normal((3, 4)), "s": normal((2, 4))},
     lambda x, s, i: scattered(x, 0, i, s, "sum"), {"fixed": {"i": const(I)}}),
    ("y = torch.scatter_reduce(x, 0, i, s, 'sum', include_self=False)", {"x": normal((3, 4)), "s": normal((2, 4))},
     lambda x, s, i: scattered(x, 0, i, s, "sum", False), {"fixed": {"i": const(I)}}),
    ("y = torch.scatter_reduce(x, 0, i, s, 'mean')", {"x": normal((3, 4)), "s": normal((2, 4))},
     lambda x, s, i: scattered(x, 0, i, s, "mean"), {"fixed": {"i": const(I)}}),
    ("y = torch.scatter_reduce(x, 0, i, s, reduce='mean', include_self=False)",
     {"x": normal((3, 4)), "s": normal((2, 4))},
     lambda x, s, i: scattered(x, 0, i, s, "mean", False), {"fixed": {"i": const(I)}}),
    ("y = torch.scatter_reduce(x, 0, i, s, 'amax')", {"x": normal((3, 4)), "s": normal((2, 4))},
     lambda x, s, i: scattered(x, 0, i, s, "amax"), {"fixed": {"i": const(I)}}),
    ("y = torch.scatter_reduce(x, 0, i, s, 'amin', include_self=False)", {"x": normal((3, 4)), "s": normal((2, 4))},
     lambda x, s, i: scattered(x, 0, i, s, "amin", False), {"fixed": {"i": const(I)}}),
    ("y = torch.scatter(x, 1, [[2, 0], [1, 2]], s)", {"x": normal((2, 3)), "s": normal((2, 2))},
     lambda x, s: scattered(x, 1, [[2, 0], [1, 2]], s, "set", False), {}),
    ("y = torch.scatter(x, 0, [[1, 0, 2]], 2.5)", {"x": normal((3, 3))},
     lambda x: scattered(x, 0, [[1, 0, 2]], np.full((1, 3), 2.5), "set", False), {}),
    ("y = torch.scatter(x, 0, i, s, reduce='add')", {"x": normal((3, 4)), "s": normal((2, 4))},
     lambda x, s, i: scattered(x, 0, i, s, "sum"), {"fixed": {"i": const(I)}}),
    ("y = torch.index_add(x, 0, i, s, alpha=-2)", {"x": normal((3, 2)), "s": normal((3, 2))},
     lambda x, s, i: index_reduced(x, 0, i, s, "sum", alpha=-2.0), {"fixed": {"i": const(ROWS)}}),
    ("y = x.index_add(1, [1], s)", {"x": normal((2, 3)), "s": normal((2, 1))},
     lambda x, s: index_reduced(x, 1, [1], s, "sum"), {}),
    ("y = torch.index_fill(x, 1, [2, -3, 2], v)", {"x": normal((2, 3)), "v": normal(())},
     lambda x, v: np.where(np.isin(np.arange(3), [0, 2]), v, x), {}),
    ("y = torch.index_reduce(x, 0, i, s, 'mean')", {"x": normal((3, 2)), "s": normal((3, 2))},
     lambda x, s, i: index_reduced(x, 0, i, s, "mean"), {"fixed": {"i": const(ROWS)}}),
    ("y = torch.index_reduce(x, 0, i, s, 'amax', include_self=False)", {"x": normal((3, 2)), "s": normal((3, 2))},
     lambda x, s, i: index_reduced(x, 0, i, s, "amax", False), {"fixed": {"i": const(ROWS)}}),
    ("y = torch.index_reduce(x, 0, i, s, 'amin')", {"x": normal((3, 2)), "s": normal((3, 2))},
     lambda x, s, i: index_reduced(x, 0, i, s, "amin"), {"fixed": {"i": const(ROWS)}}),
    ("y = torch.masked_select(x, [[1, 0, 1], [0, 0, 1]])", {"x": normal((2, 3))},
     lambda x: x[np.array([[1, 0, 1], [0, 0, 1]], dtype=bool)], {}),
    ("y = torch.masked_select(x, m)", {"x": normal((2, 3))},
     lambda x, m: np.broadcast_to(x, (2, 3))[np.broadcast_to(m, (2, 3)) == 1], {"fixed": {"m": const([0, 1, 1])}}),
    ("y = torch.renorm(x, 2, 0, 1.5)", {"x": normal((3, 4))},
     lambda x: x * np.where(np.linalg.norm(x, axis=1, keepdims=True) > 1.5,
                            1.5 / (np.linalg.norm(x, axis=1, keepdims=True) + 1e-7), 1.0), {}),
    ("y = torch.renorm(x, 1, 1, 1.0)", {"x": normal((3, 4))},
     lambda x: x * np.where(np.abs(x).sum(0) > 1.0, 1.0 / (np.abs(x).sum(0) + 1e-7), 1.0), {}),
    ("y = torch.conj_physical(x) * x", {"x": normal((3,))}, lambda x: x * x, {}),
    ("y = F.multilabel_margin_loss(x, t)", {"x": normal((3, 4))},
     lambda x, t: np.mean(multilabel_margin(x, t)), {"fixed": {"t": const([[3, 0, -1, 1], [1, 2, 3, 0], [2, -1, 0, 0]])}}),
    ("y = F.multilabel_margin_loss(x, [2, 0, -1, 3], reduction='sum')", {"x": normal((4,))},
     lambda x: np.sum(multilabel_margin(x, [2, 0, -1, 3])), {}),
    ("y = F.multilabel_margin_loss(x, t, reduction='none')", {"x": normal((2, 3))},
     lambda x, t: multilabel_margin(x, t), {"fixed": {"t": const([[0, 1, 2], [-1, 1, 0]])}}),
]


@pytest.mark.parametrize("program,inputs,reference,options", CASES, ids=[c[0] for c in CASES])
def test_op(program, inputs, reference, options):
    rng = np.random.default_rng(sum(map(ord, program)))
    check_op_case(program, inputs, reference, rng, **options)


# --------------------------------------------------------------------------- PyTorch's conventions

def test_mode_is_the_smallest_most_frequent_value_at_its_last_occurrence():
    # torch.mode(tensor([[1., 2, 2, 3, 3, 0], [5, 5, 1, 1, 7, 7]]), 1) in PyTorch 2.13: values [2, 1], indices [2, 3]
    x = np.array([[1.0, 2, 2, 3, 3, 0], [5, 5, 1, 1, 7, 7]])
    r = api.evaluate("v, i = torch.mode(x, 1)\ny = v + 10 * i", feeds={"x": x})
    np.testing.assert_array_equal(r.outputs["y"], [22.0, 31.0])
    # torch.mode(tensor([4., 1, 4, 1, 1, 4])): value 1, index 4
    r = api.evaluate("v, i = torch.mode(x)\ny = v + 10 * i", feeds={"x": [4.0, 1, 4, 1, 1, 4]})
    assert float(r.outputs["y"]) == 41.0
    g = api.grad("y = sum(torch.mode(x, 0, keepdim=True)[0] * [[1, 2]])", wrt=["x"],
                 feeds={"x": [[3.0, 1.0], [3.0, 2.0], [0.0, 1.0]]}).gradients["x"]
    np.testing.assert_array_equal(g, [[0, 0], [1, 0], [0, 2]])


def test_amax_splits_the_gradient_between_ties():
    r = api.grad("y = torch.scatter_reduce(x, 0, [0, 0, 1], s, 'amax')", wrt=["x", "s"],
                 feeds={"x": [2.0, 0.0], "s": [2.0, 1.0, 2.0]})
    np.testing.assert_array_equal(r.outputs["y"], [2.0, 2.0])
    np.testing.assert_array_equal(r.gradients["x"], [0.5, 0.0])
    np.testing.assert_array_equal(r.gradients["s"], [0.5, 0.0, 1.0])


def test_one_hot_counts_classes_from_the_values_as_pytorch():
    # F.one_hot(tensor([[0, 3], [1, 1]])) in PyTorch: num_classes 4 from the largest index
    r = api.evaluate("y = F.one_hot(t)", feeds={"t": [[0.0, 3.0], [1.0, 1.0]]})
    np.testing.assert_array_equal(r.outputs["y"], np.eye(4)[[[0, 3], [1, 1]]])
    r = api.evaluate("y = F.one_hot([2, 0], num_classes=5)")
    np.testing.assert_array_equal(r.outputs["y"], np.eye(5)[[2, 0]])


def test_scatter_and_index_writes_match_numbers_pytorch_printed():
    x = np.arange(1.0, 10.0).reshape(3, 3)
    r = api.evaluate("y = torch.scatter_add(x, 0, [[0, 1, 0], [2, 0, 1]], [[1., 2, 3], [4, 5, 6]])", feeds={"x": x})
    np.testing.assert_array_equal(r.outputs["y"], [[2, 7, 6], [4, 7, 12], [11, 8, 9]])
    r = api.evaluate("y = torch.index_fill(x, 1, [-1], 7.0)", feeds={"x": x})
    np.testing.assert_array_equal(r.outputs["y"], [[1, 2, 7], [4, 5, 7], [7, 8, 7]])
    r = api.evaluate("y = torch.renorm(x, 2, 0, 3)", feeds={"x": [[1.0, 2.0], [3.0, 4.0]]})
    np.testing.assert_allclose(r.outputs["y"], [[1.0, 2.0], [1.8 * 5 / (5 + 1e-7), 2.4 * 5 / (5 + 1e-7)]], rtol=1e-15)
    r = api.evaluate("y = F.multilabel_margin_loss([[0.1, 0.2, 0.4, 0.8]], [[3, 0, -1, 1]])")
    np.testing.assert_allclose(r.outputs["y"], 0.85, rtol=1e-15)


# --------------------------------------------------------------------------- refusals

X = np.arange(6.0).reshape(2, 3)


@pytest.mark.parametrize("program,message", [
    ("y = torch.scatter(x, 1, [[0, 0], [2, 1]], x[:, :2])",
     "scatter: the index writes one position twice along dim 1: PyTorch leaves which value lands there "
     "unspecified; give each position once, or use scatter_add / scatter_reduce"),
    ("y = torch.scatter_add(x, 1, [[0, 3]], x)", "scatter_add: index 3 is out of bounds for dim 1 with size 3"),
    ("y = torch.scatter_add(x, 1, [[0, -1]], x)",
     "scatter_add: index -1 is out of bounds for dim 1 with size 3 (PyTorch takes no negative index here)"),
    ("y = torch.index_add(x, 0, [0.5], x[:1])", "index_add: the index must hold integers"),
    ("y = torch.scatter_reduce(x, 0, [[0, 1, 1]], x, 'prod')",
     "scatter_reduce(): reduce='prod' is not supported: its gradient where a value is 0 needs the product of the "
     "others at that position; write the product out, or use 'sum', 'mean', 'amax' or 'amin'"),
    ("y = torch.scatter_add(x, 0, [0, 1], x)", "scatter_add(): the index (rank 1) must have the input's rank 2"),
    ("y = torch.scatter_add(x, 0, [[0, 1, 0, 1]], x)",
     "scatter_add(): index of shape (1, 4) is larger than src (2, 3)"),
    ("y = torch.index_add(x, 0, [0, 1], x[:1])",
     "index_add(): source of shape (1, 3) must have shape (2, 3) (the input's, with the index's length 2 along dim 0)"),
    ("y = torch.scatter(x, 0, [[0]])", "scatter(): give the values to write as src (a tensor) or value (a number), "
                                        "one of them"),
    ("y = torch.index_fill(x, 0, [2], 1.0)", "index_fill: index 2 is out of bounds for dim 0 with size 2"),
    ("y = F.one_hot(argmax(x, axis=1))",
     "one_hot(): the class indices (with num_classes=-1) must be written in the program or given as an input "
     "(its values decide the result's shape)"),
    ("y = F.one_hot([0, 3], num_classes=3) + x[0]", "one_hot: index 3 is out of bounds for dim 0 with size 3"),
    ("y = torch.masked_select(x, x > 2)",
     "masked_select(): the mask must be written in the program or given as an input (its values decide the "
     "result's shape)"),
    ("y = torch.masked_select(x, [0, 2, 1])", "masked_select(): the mask must hold 0 and 1 (True and False) only"),
    ("y = F.multilabel_margin_loss(x, [[0, 5, -1], [0, 1, 2]])",
     "multilabel_margin_loss: target 5 is not a class index from 0 to 2 (or -1, which ends the targets)"),
    ("y = F.multilabel_margin_loss(x, [[0, -1, 7], [0, 1, 2.5]])",
     "multilabel_margin_loss: target 2.5 is not a class index from 0 to 2 (or -1, which ends the targets)"),
    ("y = torch.renorm(x, 0, 0, 1.0)", "renorm(): p must be a positive number, not 0"),
    ("y = torch.mode(x, 2)", "dim 2 is out of range for an input of rank 2"),
])
def test_refusals_name_the_reason_at_the_call(program, message):
    with pytest.raises(GradcliError) as info:
        api.grad(program, wrt=["x"], feeds={"x": X})
    assert message in str(info.value), str(info.value)
    assert info.value.pos is not None and info.value.pos.line == 1


def test_cli_refuses_an_index_out_of_range_given_as_an_input_with_exit_2():
    result = invoke("grad", "-e", "y = sum(torch.scatter_add(x, 0, i, s))", "--wrt", "x", "--set", "x=[1, 2, 3]",
                    "--set", "s=[1, 1]", "--set", "i=[0, 3]")
    assert result.exit_code == 2
    assert "scatter_add: index 3 is out of bounds for dim 0 with size 3" in result.output


def test_a_shape_decided_by_a_lazily_read_input_is_refused_never_guessed():
    # on Dask an input's values are not read with the program: masked_select's mask (and one_hot's
    # largest class) would be guessed from a placeholder, so building the program refuses, naming it
    dask_array = pytest.importorskip("dask.array")
    x = np.arange(6.0).reshape(2, 3)
    for program, feeds in [("y = torch.masked_select(x, m)", {"x": x, "m": np.array([1.0, 0.0, 1.0])}),
                           ("y = F.one_hot(t) + 0 * x[0, 0]", {"x": x, "t": np.array([0.0, 2.0, 1.0])})]:
        with pytest.raises(GradcliError) as info:
            api.evaluate(program, feeds={k: dask_array.from_array(v) for k, v in feeds.items()}, device="dask")
        name = "m" if "masked_select" in program else "t"
        assert (f"this needs the values of '{name}' while the program is built, but --device dask reads them only "
                "when it runs") in str(info.value)
        np.testing.assert_array_equal(api.evaluate(program, feeds=feeds).outputs["y"].shape[-1], 4 if "mask" in
                                      program else 3)
