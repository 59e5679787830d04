"""Subscripts: NumPy's indexing (`x[0, :, [1, 2]]`, masks, `None`, `...`) lowered to the `index`
op with a constant index, PyTorch's reading of integers beside lists, JAX's functional updates
(`x.at[i].set(v)`) and NumPy's `np.c_` / `np.r_`."""
from __future__ import annotations

import numpy as np

from gradcli.errors import Pos, ShapeError
from gradcli.language import syntax as ast
from gradcli.language.dialects import ReadingError, torch as torch_dialect
from gradcli.language.lower.integers import written_boolean, written_integer
from gradcli.language.lower.transforms import DictValue
from gradcli.language.lower.values import NONE, AtIndexed, AtRef, IndexTrick, Literal, Scope, Text, TupleValue
from gradcli.ops import OPS
from gradcli.ops import index as ops_index


class Subscripts:
    """Part of the lowering (gradcli.language.lower): reads `self.graph`, `self.method_library`,
    `self.torch_beside_others`; uses `self.error`, `self.emit`, `self.materialize`,
    `self.static_int`, `self.constant_value`, `self.shape_of`."""

    def index(self, node: ast.Index, values: list, scope: Scope):
        found = self.read_index(node, values, scope)
        if self.torch_beside_others:  # `x[0]` of a tensor is a tensor
            self.mark_made_by(ast.Call("[]", [], node.pos, method=True), values[:1], found)
        return found

    def read_index(self, node: ast.Index, values: list, scope: Scope):
        target, rest = values[0], iter(values[1:])
        if isinstance(target, AtRef) and isinstance(target.target, DictValue):  # `d[key] = v` (lists.py)
            return self.dict_item_at(target.target, values[1:], node)
        if isinstance(target, IndexTrick):
            return self.index_trick(target, node, values[1:], scope)
        index = []
        subscripts = node.subscripts
        if len(subscripts) == 1 and not isinstance(subscripts[0], ast.Slice) and subscripts[0] is not ast.ELLIPSIS \
                and not node.trailing_comma:
            whole = values[1]
            # a tuple as the whole subscript is one index per axis, as in NumPy: x[(0, 1)] is x[0, 1]
            if isinstance(whole, TupleValue):
                subscripts, rest = [whole.pos] * len(whole.items), iter(whole.items)
            elif isinstance(whole, Literal) and whole.from_tuple:
                items = [Literal(row, whole.pos, whole.boolean) for row in whole.value]
                subscripts, rest = [whole.pos] * len(items), iter(items)
        for sub in subscripts:
            if isinstance(sub, ast.Slice):
                parts = [self.static_int(next(rest), "a slice bound", sub.pos) if p is not None else None
                         for p in (sub.start, sub.stop, sub.step)]
                if parts[2] == 0:
                    raise self.error("slice step cannot be zero", sub.pos)
                index.append(tuple(parts))
            elif sub is ast.ELLIPSIS:
                index.append(Ellipsis)
            else:
                value = next(rest)
                index.append(None if value is NONE else self.static_index(value, getattr(sub, "pos", node.pos), sub))
        if isinstance(target, AtRef):  # JAX's `x.at[idx]`: the update follows
            return AtIndexed(target.target, self.checked_index(target.target, tuple(index), node.pos), node.pos)
        if isinstance(target, TupleValue) and len(index) == 1 and isinstance(index[0], tuple):
            return TupleValue(target.items[slice(*index[0])], node.pos)  # `x.shape[-1:]`
        if isinstance(target, Literal) and target.from_tuple and target.value.ndim >= 1 and len(index) == 1 \
                and isinstance(index[0], tuple):  # `(2, 3, 4)[:2]`: still a tuple
            return Literal(target.value[slice(*index[0])], node.pos, target.boolean, from_tuple=True)
        if isinstance(target, TupleValue) and not ops_index.is_advanced(index):  # `x.shape[0]`, `pair[1]`
            if len(index) != 1 or not isinstance(index[0], int):
                raise self.error("a tuple takes one constant integer index", node.pos)
            k = index[0]
            if not -len(target.items) <= k < len(target.items):
                raise self.error(f"index {k} is out of range for a tuple of {len(target.items)}", node.pos)
            return target.items[k]
        library = self.receiver_library(target, "[]")  # (whose subscripts: the value's library's)
        value = self.materialize(target, scope)
        if library == "torch":
            try:
                selects, rest = torch_dialect.subscript_steps(index)
            except ReadingError as exc:
                raise self.error(str(exc), node.pos) from None
            if selects is not None:
                value = self.emit(OPS["index"], (value,), {"index": selects}, node.pos, "[]", scope)
                index = rest
        elif library is None and torch_dialect.reads_apart_from_numpy(index):
            raise self.error(torch_dialect.MIXED_SUBSCRIPT, node.pos)
        return self.emit(OPS["index"], (value,), {"index": tuple(index)}, node.pos, "[]", scope)

    def index_trick(self, trick: IndexTrick, node: ast.Index, items: list, scope: Scope):
        """`np.c_[a, b, ...]`, `np.r_[...]`: the arrays joined as NumPy's AxisConcatenator joins
        them. Its other forms (a range `1:5`, a directive string 'r' or '0,2,1') are refused."""
        for sub in node.subscripts:
            if isinstance(sub, ast.Slice) or sub is ast.ELLIPSIS:
                raise self.error(f"{trick.spelled}[...] with a range or '...' is not supported: join arrays, "
                                 f"as in {trick.spelled}[a, b], or write np.arange", getattr(sub, "pos", node.pos))
        if len(items) == 1 and isinstance(items[0], TupleValue) and not node.trailing_comma:
            items = items[0].items
        for item in items:
            if isinstance(item, Text):
                raise self.error(f"{trick.spelled}[...] with the directive '{item.value}' is not supported: join "
                                 "arrays, or write np.concatenate(..., axis=...)", item.pos)
        arrays = tuple(self.materialize(item, scope) for item in items)
        return self.emit(trick.op, arrays, {}, node.pos, trick.spelled, scope)

    def static_index(self, value, pos: Pos | None, written=None):
        """One subscript: an int, or an IndexArray (a constant integer array, a boolean mask); a
        mask computed from values the program writes (`mask = div != 0`) is known before evaluation,
        and so is an array the program binds to a name and writes with integers or True/False
        (`idx = jnp.array([0, 2])`, `m = torch.tensor([True, False])`), unless given from outside."""
        value = self.constant_value(value)
        if type(value) is int and self.graph.equations[value].op.boolean and self.graph.shapes[value]:
            value = self.known_or_given(value)
        elif type(value) is int and isinstance(written, ast.Name) and self.graph.shapes[value]:
            boolean = written_boolean(self, written)
            if boolean or written_integer(self, written):
                known = self.known_or_given(value)
                value = known if type(known) is int else Literal(known.value, known.pos, boolean)
        if isinstance(value, Literal) and value.value.ndim > 0:
            arr = value.value
            if value.boolean:
                return ops_index.IndexArray(arr != 0)
            if arr.size and not (np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
                bad = arr.reshape(-1)[~(np.isfinite(arr) & (arr == np.round(arr))).reshape(-1)][0]
                raise self.error(f"an index array must hold integers, not {float(bad):g}", value.pos)
            if arr.size and np.max(np.abs(arr)) >= 2 ** 62:
                raise self.error("an index is out of range", value.pos)
            return ops_index.IndexArray(arr.astype(np.intp))
        if isinstance(value, Literal) and value.boolean:
            raise self.error("a boolean scalar index (x[True]) adds an axis in NumPy: write x[None] for that, "
                             "or a mask with one entry per element", value.pos)
        if not isinstance(value, Literal):
            where = value.pos if isinstance(value, (Text, TupleValue)) else pos
            eq = self.graph.equations[value] if type(value) is int else None
            if eq is not None and eq.op.name == "input":
                raise self.error(f"an index must be a constant integer (or list, or mask) written in the program: "
                                 f"'{eq.params['name']}' is an input (a "
                                 "top-level NAME = literal can be changed with --set); write the index in the "
                                 "subscript, or bind it inside the function that uses it", where)
            raise self.error("an index must be a constant integer (or list, or mask) written in the program: a "
                             "computed index would make the shape depend on the data", where)
        return self.static_int(value, "an index", pos)

    def checked_index(self, target, index: tuple, pos: Pos) -> tuple:
        """The index, checked against the target's shape (a positioned error where NumPy raises)."""
        try:
            ops_index.indexed_shape(self.shape_of(target), index)
        except ShapeError as exc:
            raise self.error(f"[]: {exc}", pos) from None
        return index

    def at_update(self, node: ast.Call, values: list, scope: Scope):
        """JAX's functional updates, `x.at[idx].set(v)`: x with the indexed elements replaced,
        lowered to indexing, scatters and where (gradcli.ops.index.update)."""
        at, args = values[0], values[1:]
        if isinstance(at.target, DictValue):
            return self.dict_item_set(at, node, args)
        method = node.func
        if method not in ops_index.UPDATES:
            raise self.error(f"unknown update '.{method}' of x.at[...]: JAX's are "
                             ".set, .add, .multiply, .divide, .power, .min, .max and .get", node.pos)
        if node.keywords:
            raise self.error(f".at[...].{method}(): its keyword '{node.keywords[0].name}' is not supported "
                             "(gradcli checks indices itself: out of range is an error)", node.keywords[0].pos)
        want = 0 if method == "get" else 1
        if len(args) != want:
            raise self.error(f".at[...].{method}() takes {want} argument{'s' * (want != 1)}, got {len(args)}",
                             node.pos)
        x = self.materialize(at.target, scope)
        v = self.materialize(args[0], scope) if args else None
        label = f".at[].{method}"
        shape = self.graph.shapes[x]
        if shape is None or (v is not None and self.graph.shapes[v] is None):
            return x  # a missing input: lowering goes on to list them all

        def emit(name, ids, params):
            return self.emit(OPS[name], ids, params, node.pos, label, scope)

        def constant(value):
            return self.graph.add_constant(value, node.pos, scope.stack)

        try:
            return ops_index.update(emit, constant, x, v, method, at.index, shape,
                                    self.graph.shapes[v] if v is not None else None)
        except ShapeError as exc:
            where = self.node_pos(node.args[1], node.pos) if "broadcast" in str(exc) else at.pos
            raise self.error(f"{label}: {exc}", where) from None

    @staticmethod
    def node_pos(node, default: Pos) -> Pos:
        return getattr(node, "pos", None) or default
