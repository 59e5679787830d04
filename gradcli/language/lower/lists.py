"""Python's list methods as statements: `out.append(v)`, `out.extend(vs)`, `out.insert(i, v)`;
a dict's item assigned, `params[k] = params[k] - lr * g[k]`.

A list is built item by item in pasted code (`output = []`, then `output.append(jnp.dot(...))` in a
loop, then `jnp.array(output)`). The method changes the list in place, so the statement rebinds
the name to the list with the item added (a tuple value, read as one array where one is needed,
as a comprehension's list is). Read as NumPy's `np.append(out, v)` instead, the statement would
compute a new array and drop it, leaving `out` empty: a wrong number, never silently given.
"""
from __future__ import annotations

from gradcli.language import syntax as ast
from gradcli.language.lower.transforms import DictValue
from gradcli.language.lower.values import AtIndexed, Literal, Scope, Text, TupleValue

# the list methods read as statements, and how many arguments each takes after the list
LIST_METHODS = {"append": 1, "extend": 1, "insert": 2}


class ListMethods:
    """Part of the lowering (gradcli.language.lower): a list's append, extend and insert."""

    def is_list_method(self, stmt) -> bool:
        """Whether a statement is `NAME.append(...)` (or extend, insert) standing alone, NAME not a
        module (`np.append(a, v)` is NumPy's function)."""
        call = getattr(stmt, "value", None)
        if type(stmt) is not ast.ExprStmt or type(call) is not ast.Call or call.symbol is not None:
            return False
        if call.method:
            return call.func in LIST_METHODS
        base, _, method = call.func.rpartition(".")
        return method in LIST_METHODS and bool(base) and base.partition(".")[0] not in self.aliases

    def list_method(self, stmt: ast.ExprStmt, scope: Scope) -> bool:
        """The list named by the receiver rebound with the items added, where it is bound; False
        where the receiver is no value of the program (the call is then read as written)."""
        call = stmt.value
        if call.method:
            receiver, method, args = call.args[0], call.func, call.args[1:]
            base = receiver.id if type(receiver) is ast.Name else ""
        else:
            base, _, method = call.func.rpartition(".")
            args = call.args
            if not self.is_value_name(base.partition(".")[0], scope):
                return False
        if not base or "." in base:
            raise self.error(f".{method}(...) changes a list in place: gradcli follows a list bound to a name "
                             f"(items = [] ... items.{method}(v))", call.pos)
        if call.keywords or len(args) != LIST_METHODS[method]:
            usage = "insert(index, item)" if method == "insert" else f"{method}(item)"
            raise self.error(f"list.{usage} takes {LIST_METHODS[method]} argument(s)", call.pos)
        receiver = ast.Name(base, call.pos)
        items = self.list_items(self.lower(receiver, scope), base, method, call.pos, scope)
        added = [self.lower(arg, scope) for arg in args]
        if method == "append":
            items.append(added[0])
        elif method == "extend":
            items.extend(self.list_items(added[0], "the argument", method, args[0].pos, scope))
        else:
            index = self.static_int(added[0], "the index of insert()", args[0].pos)
            items.insert(index, added[1])  # (Python's insert: any index, clamped to the ends)
        self.rebind_list(base, TupleValue(items, call.pos), call.pos, scope)
        return True

    def list_items(self, value, name: str, method: str, pos, scope: Scope) -> list:
        """A list's items: a tuple value's, or an array's rows (an empty list is an empty array)."""
        if isinstance(value, TupleValue):
            return list(value.items)
        if isinstance(value, Literal) and value.value.ndim:
            return [Literal(row, value.pos, value.boolean) for row in value.value]
        if type(value) is int and self.graph.shapes[value]:
            shape = self.graph.shapes[value]
            return self.unpack(value, shape[0], pos, scope) if shape[0] else []
        raise self.error(f"{name} is not a list: .{method}(...) adds to a Python list (items = [] ... "
                         f"items.{method}(v))", pos)

    def rebind_list(self, name: str, value: TupleValue, pos, scope: Scope) -> None:
        """`name` bound to `value` where it is bound: a local of the function (or of an enclosing
        one), else the program's top level, as Python's in-place change is seen there."""
        holder = scope
        while holder is not None and holder.locals is not None:
            if name in holder.locals:
                holder.locals[name] = value
                return
            holder = holder.parent
        if scope.locals is not None and name not in self.globals:
            raise self.error(f"name '{name}' is not defined", pos)
        self.bind_global(name, value, pos, Scope(None))

    def holds_variables(self, items: list) -> bool:
        """Whether a list holds a tf.Variable or a PyTorch tensor that requires grad: Python's list of
        them (`[kernel, bias]` given to a tape and an optimizer, `[loss_a, loss_b]` each given to
        backward), never stacked into a new array, which no loss depends on and whose one graph
        every item's backward would go through."""
        variables = self.variables
        if variables and any(type(v) is int and v in variables for v in items):
            return True
        state = self._torch_state
        if state is None or not state.leaves:
            return False
        # (a value made after the first leaf may require grad: kept a list, which is Python's reading
        # anyway; asking requires_grad of each item would walk the graph at every list display)
        first = min(state.leaves)
        return any(type(v) is int and v >= first for v in items)

    def rebind_variable(self, old: int, new: int, scope: Scope) -> None:
        """A tf.Variable's assign: the variable changes in place, so every name, list and dict that
        holds it holds the new value (a value computed from it before keeps the old one)."""
        if old in self.variables:
            self.rebind_id(old, new, scope)

    def rebind_in_lists(self, old: int, new: int, scope: Scope) -> None:
        """An in-place update of `old` (a variable's assign, an optimizer's step): the lists, tuples
        and dicts the program's names hold that hold it hold `new`, as Python's hold the object."""
        tables = [self.globals]
        while scope is not None and scope.locals is not None:
            tables.append(scope.locals)
            scope = scope.parent
        pending = [v for table in tables for v in table.values() if isinstance(v, (TupleValue, DictValue))]
        seen = set()
        while pending:  # (no recursion: nested containers walked with a stack)
            holder = pending.pop()
            if id(holder) in seen:
                continue
            seen.add(id(holder))
            items = holder.items
            for k, item in enumerate(items):
                if type(item) is int and item == old:
                    items[k] = new
                elif isinstance(item, (TupleValue, DictValue)):
                    pending.append(item)

    def dict_item_at(self, mapping: DictValue, subscripts: list, node) -> AtIndexed:
        """`d[key]` as the target of `d[key] = v` (read as `d = d.at[key].set(v)`): a string key."""
        if len(subscripts) != 1 or not isinstance(subscripts[0], Text):
            raise self.error("a dict's item is assigned by a string key, as in d['w'] = v", node.pos)
        return AtIndexed(mapping, subscripts[0].value, node.pos)

    def dict_item_set(self, at: AtIndexed, node, args: list) -> DictValue:
        """`d[key] = v`: the dict changed in place (a new key added at its end), as Python's: every
        name holding it sees the change."""
        if node.func != "set" or len(args) != 1:
            raise self.error(f"a dict has no .at[...].{node.func}(): assign its item, d[key] = v", node.pos)
        mapping, key = at.target, at.index
        mapping.keys, mapping.items = list(mapping.keys), list(mapping.items)
        if key in mapping.keys:
            mapping.items[mapping.keys.index(key)] = args[0]
        else:
            mapping.keys.append(key)
            mapping.items.append(args[0])
        return mapping
