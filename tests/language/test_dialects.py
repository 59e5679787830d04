"""The dialect layer (gradcli/language/dialects): a library's spelling of a call is an entry of that
library's module, resolved to an op of the table and the parameters the spelling presets, or
refused naming both readings; the op table itself names no library."""
import math
import re
from pathlib import Path

import numpy as np
import pytest

from gradcli import api, ops
from gradcli.language import dialects
from gradcli.language.dialects import ReadingError, Spelling

ROOT = Path(__file__).resolve().parents[2]
LIBRARY_PREFIX = r"(?:torch|tf|keras|optax|lax|jax)_"


def test_every_library_name_calls_a_public_op_and_hides_none():
    for name, target in dialects.NAMES.items():
        if callable(target):  # a transformation: it lowers the call itself (x.to(dtype), F.dropout)
            assert dialects.meaning(name) is target
            continue
        op = ops.OPS.get(target)
        assert op is not None and op.public, (name, target)
        assert ops.CALLABLE.get(name) is None, f"{name} is an op's own name: a library's entry would hide it"
        assert dialects.meaning(name) is op


def test_every_reading_and_left_out_argument_belongs_to_an_op():
    assert set(dialects.READINGS) <= set(ops.OPS)
    for name, absent in dialects.ABSENT.items():
        assert set(absent) <= set(ops.OPS[name].args), name


def test_the_op_table_names_no_library():
    """Readings, library names and library tests live in the dialects: the op records hold meanings."""
    code = re.compile(r"\.library\b|library ==|\baliases=|\breading=|\babsent=|\bSpelling\b|\bReadingError\b")
    quoted = re.compile(rf"[\"']{LIBRARY_PREFIX}\w+[\"']")
    for path in sorted((ROOT / "gradcli" / "ops").glob("*.py")):
        text = path.read_text()
        assert not code.search(text), f"{path.name}: {code.search(text).group(0)}"
        assert not quoted.search(text), f"{path.name}: {quoted.search(text).group(0)}"
    assert not [op.name for op in ops.OPS.values() if re.match(LIBRARY_PREFIX, op.name)]
    assert not {"aliases", "reading", "absent", "fails_on_data"} & set(ops.Op.__annotations__)


def spelling(library, name, positional=1, keywords=(), kinds=(), method=False, spelled=None):
    prefix = {"python": "", "numpy": "np.", "tensorflow": "tf.", "torch": "torch.", "scipy": "scipy.special.",
              "jax": "jax.nn.", "optax": "optax.", "keras": "keras.losses."}[library]
    return Spelling(library, name, positional, tuple(keywords), False, method, spelled or prefix + name,
                    kinds or ("array",) * positional)


@pytest.mark.parametrize("written,op,preset", [
    (spelling("tensorflow", "reduce_max", 2), "max", {}),
    (spelling("numpy", "amax", 2), "max", {}),
    (spelling("python", "max", 2), "maximum", {}),
    (spelling("torch", "max", 2, kinds=("array", "constant")), "max_values_indices", {}),
    (spelling("torch", "max", 2, kinds=("array", "array")), "maximum", {}),
    (spelling("numpy", "identity", 1), "eye", {}),
    (spelling("tensorflow", "identity", 1), "identity", {}),
    (spelling("scipy", "softmax", 1), "softmax", {"axis": None}),
    (spelling("tensorflow", "cumsum", 1), "cumsum", {"axis": 0}),
    (spelling("torch", "var", 1), "var", {"ddof": 1}),
    (spelling("torch", "split", 2), "split_size", {}),
    (spelling("tensorflow", "split", 2), "split_parts", {}),
    (spelling("torch", "gather", 3), "gather_elements", {}),
    (spelling("tensorflow", "gather", 2), "take_batched", {}),
    (spelling("optax", "l2_loss", 2), "half_squared_error", {}),
    (spelling("keras", "mse", 2), "mean_squared_error", {}),
])
def test_a_spelling_reads_as_its_library_means_it(written, op, preset):
    found, given = dialects.resolve(written)
    assert (found.name, given) == (op, preset)


@pytest.mark.parametrize("written,words", [
    (spelling("python", "split", 2), "np.split"),
    (spelling("torch", "softmax", 1), "dim="),
    (spelling("python", "mean_squared_error", 2), "scikit-learn"),
    (spelling("torch", "mse_loss", 3), "by keyword"),
])
def test_a_spelling_that_reads_two_ways_is_refused_naming_them(written, words):
    with pytest.raises(ReadingError, match=re.escape(words)):
        dialects.resolve(written)


def test_a_new_spelling_is_one_entry(monkeypatch):
    monkeypatch.setitem(dialects.NAMES, "exponential", "exp")
    out = api.evaluate("y = tf.exponential(x) + exponential(x)", feeds={"x": 1.0}).outputs["y"]
    assert float(out) == pytest.approx(2 * math.e, rel=1e-15)


def test_the_names_library_functions_had_as_ops_still_call_them():
    x = np.arange(6.0).reshape(2, 3)
    for old, new, args in (("torch_gather", "gather_elements", "axis=1, index=[[0, 0], [2, 1]]"),
                           ("tf_slice", "slice_begin_size", "begin=[0, 1], size=[2, -1]"),
                           ("lax_slice", "slice_start_limit", "[0, 1], [2, 3]")):
        a = api.evaluate(f"y = {old}(x, {args})", feeds={"x": x}).outputs["y"]
        b = api.evaluate(f"y = {new}(x, {args})", feeds={"x": x}).outputs["y"]
        np.testing.assert_array_equal(a, b)


def test_whose_methods_a_program_uses_follows_the_libraries_it_spells():
    from gradcli.language.parser import parse_program
    from gradcli.errors import Source

    def libraries(text):
        return dialects.spelled_libraries(parse_program(Source("t", text), 1 << 30), text)
    assert libraries("y = torch.exp(x).std()\n") == ("torch", False)
    assert libraries("import torch\ny = np.exp(x)\n") == ("numpy", True)
    assert libraries("y = x.std()\n") == ("numpy", False)


def test_a_library_name_may_mean_a_transformation_that_lowers_the_call_itself(monkeypatch):
    """What `tf.gradients` or `jax.grad` mean is not an op: an entry may name a callable that builds
    the call's value with the lowering at hand."""
    def doubled(lowering, node, values, scope):
        x = lowering.materialize(values[0], scope)
        two = lowering.graph.add_constant(2.0, node.pos, scope.stack)
        return lowering.emit(ops.OPS["multiply"], (x, two), {}, node.pos, "doubled", scope)

    monkeypatch.setitem(dialects.NAMES, "doubled", doubled)
    result = api.grad("y = tf.doubled(x) + x", wrt=["x"], feeds={"x": 1.5})
    assert float(result.outputs["y"]) == 4.5 and float(result.gradients["x"]) == 3.0
