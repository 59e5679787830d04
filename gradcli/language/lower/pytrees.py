"""JAX's pytrees as the lowering holds them: a dict (`DictValue`) or a tuple/list (`TupleValue`)
whose items are arrays or further dicts and tuples. `grad(loss)(params)` with a dict of
parameters gives a dict of gradients; `tree_map` applies a function leaf by leaf; a printed dict
is one output per leaf, keyed `text['w']` (nested: `text['c']['a']`, tuples `text[0]`).

Every walk here keeps its own stack: a tree nested as deep as the program writes it costs no
Python recursion."""
from __future__ import annotations

from collections import Counter

from gradcli.errors import Pos
from gradcli.language import syntax as ast
from gradcli.language.lower import transforms
from gradcli.language.lower.transforms import _FINISH, FUNCTION_VALUES, NOT_MINE, DictValue
from gradcli.language.lower.values import NONE, Literal, Scope, Text, TupleValue

TREES = (DictValue, TupleValue)
TREE_CALLS = {"tree_map", "tree.map", "tree_util.tree_map", "tree_leaves", "tree.leaves", "tree_util.tree_leaves"}


def _order(node, jax_order: bool) -> list:
    """The item positions of a tree node in walk order: a dict's in sorted key order where the
    walk is JAX's flattening (JAX sorts a dict's keys), else as written."""
    if jax_order and isinstance(node, DictValue):
        return sorted(range(len(node.items)), key=lambda i: node.keys[i])
    return list(range(len(node.items)))


def walk(tree, jax_order: bool = True):
    """(path, leaf) for each leaf of `tree`, in order; a path is the keys and indices from the
    root (a leaf that is not a tree is its own only leaf, at the path ())."""
    if not isinstance(tree, TREES):
        yield (), tree
        return
    stack = [(tree, (), _order(tree, jax_order), 0)]
    while stack:
        node, path, order, at = stack.pop()
        if at == len(order):
            continue
        stack.append((node, path, order, at + 1))
        i = order[at]
        key = node.keys[i] if isinstance(node, DictValue) else i
        item = node.items[i]
        if isinstance(item, TREES):
            stack.append((item, path + (key,), _order(item, jax_order), 0))
        else:
            yield path + (key,), item


def leaves(tree) -> list:
    """The leaves in JAX's order (tree_leaves)."""
    return [leaf for _, leaf in walk(tree)]


def _shell(node):
    """An empty copy of a tree node; a dict's keys sorted, as JAX's unflattening gives them."""
    if isinstance(node, DictValue):
        return DictValue(sorted(node.keys), [None] * len(node.items), node.pos)
    return TupleValue([None] * len(node.items), node.pos)


def rebuild(tree, new_leaves: list, pos=None):
    """`tree`'s structure holding `new_leaves` (in JAX's leaf order) in place of its leaves."""
    fill = iter(new_leaves)
    if not isinstance(tree, TREES):
        return next(fill)
    root = _shell(tree)
    if pos is not None:
        root.pos = pos
    stack = [(tree, root, _order(tree, True), 0)]
    while stack:
        node, copy, order, at = stack.pop()
        if at == len(order):
            continue
        stack.append((node, copy, order, at + 1))
        item = node.items[order[at]]
        if isinstance(item, TREES):
            copy.items[at] = _shell(item)
            stack.append((item, copy.items[at], _order(item, True), 0))
        else:
            copy.items[at] = next(fill)
    return root


def path_text(text: str, path: tuple) -> str:
    """`grads` and ('w', 0) -> `grads['w'][0]`: the key of a printed leaf, as a subscript of the
    printed text (Python's repr of each key, as a library's printed dict shows it)."""
    return text + "".join(f"[{key!r}]" for key in path)


def numbered(shown: list) -> list:
    """(text, value) pairs with each text shown more than once (a print in a loop; `x.grad` printed
    before and after a step) numbered `text #k` but the last, which keeps the text as written
    (as --of names it): every printed value is an output, in print order."""
    times = Counter(text for text, _ in shown)
    if len(times) == len(shown):
        return shown
    seen: Counter = Counter()
    numbered_pairs = []
    for text, value in shown:
        seen[text] += 1
        numbered_pairs.append((text if seen[text] == times[text] else f"{text} #{seen[text]}", value))
    return numbered_pairs


def printed_leaves(text: str, value, graph) -> list:
    """[(key, value)] for a printed value: a dict, or a tuple that is not one array (a None in
    it, items of several shapes, a dict in it), is one output per leaf (`text['w']`, `text[0]`);
    any other value is one output under its text."""
    if isinstance(value, DictValue) or (isinstance(value, TupleValue) and not _one_array(value, graph)):
        return [(path_text(text, path), leaf) for path, leaf in walk(value, jax_order=False)]
    return [(text, value)]


def _one_array(value: TupleValue, graph) -> bool:
    """Whether a tuple's items are numbers of one shape, or such tuples of one shape (printed as
    one array, as stacked)."""
    return _stacked_shape(value, graph) is not None


def _stacked_shape(value: TupleValue, graph):
    """The shape of a tuple read as one array, or None where it is not one (depth-first, with a
    stack: the items' shapes are known before their tuple's)."""
    shapes: dict[int, tuple] = {}
    stack = [(value, False)]
    while stack:
        node, ready = stack.pop()
        if not ready:
            stack.append((node, True))
            stack.extend((item, False) for item in node.items if isinstance(item, TupleValue))
            continue
        seen = set()
        for item in node.items:
            if isinstance(item, Literal):
                seen.add(item.value.shape)
            elif type(item) is int:
                seen.add(graph.shapes[item])
            elif isinstance(item, TupleValue) and shapes.get(id(item)) is not None:
                seen.add(shapes[id(item)])
            else:
                return None
        if len(seen) > 1 or None in seen:
            return None
        shapes[id(node)] = (len(node.items),) + (seen.pop() if seen else ())
    return shapes[id(value)]


class PyTrees:
    """Part of the lowering (gradcli.language.lower): JAX's pytrees through the transforms
    (GradientCalls applies a transform leaf by leaf and places the results here), tree_map,
    dicts' methods, and a tree shown by a bare expression."""

    last_tree = None  # (name, value, place) of the last top-level binding of a tuple or dict (bind_global)

    def settle_outputs(self, scope: Scope) -> None:
        """What the program outputs, once it has run: what it prints and shows, where it prints,
        takes its own gradients (an unconnected one shown as None) or shows only trees; a tuple or
        dict of arrays bound last (`g = jax.grad(loss)(params, x)`) shown as print(g) shows it,
        where nothing else would be."""
        graph = self.graph
        if graph.result is None and not self.shown and self.last_in_loop is not None:
            node, value = self.last_in_loop  # (a program that shows nothing else: the loop's last)
            self.in_loops.discard(id(node))
            self.show_expression(node, value, scope)
        trees_only = graph.result is None
        if trees_only and not self.shown and self.last_tree is not None:
            name, value, pos = self.last_tree
            self.show_tree(ast.Name(name, pos), value, scope)
        if any(printed or value is None for _, value, printed in self.shown) or graph.made_by or (
                trees_only and self.shown):
            graph.printed = numbered([(text, value) for text, value, _ in self.shown])
        if trees_only:  # what a command differentiates unless told: the last leaf shown, as after print
            graph.result = next(((text, value) for text, value, _ in reversed(self.shown) if value is not None), None)

    def show_tree(self, node, value, scope: Scope) -> bool:
        """A bare expression (a notebook's display) that is a dict or a tuple that is not one
        array: each leaf shown under its key, as print shows it. False where `value` is one array."""
        text = transforms.printed_text(self.source.text, node.pos.start, node.pos.end)
        fields = printed_leaves(text, value, self.graph)
        if fields == [(text, value)]:
            return False
        for key, leaf in fields:
            if leaf is NONE:
                self.shown.append((key, None, False))
            elif not isinstance(leaf, FUNCTION_VALUES + (Text,)):
                self.shown.append((key, self.materialize(leaf, scope, node.pos), False))
        return True

    def dict_or_text_method(self, mapping, node: ast.Call, args: list):
        """`d.items()`, `d.keys()`, `d.values()`, `d.get(key)` of a dict of the program, and a
        label's `"... {} ...".format(k)` (strings fill its fields; a label is never an output)."""
        if isinstance(mapping, Text):
            if node.func != "format":
                raise self.error(f"a string's .{node.func}() is not supported: gradcli reads .format() of a "
                                 "label", node.pos)
            filled = mapping.value
            for arg in args:
                if isinstance(arg, Text) and "{}" in filled:
                    filled = filled.replace("{}", arg.value, 1)
            return Text(filled, node.pos)
        if node.func in ("items", "keys", "values") and not args:
            keys = [Text(k, node.pos) for k in mapping.keys]
            items = {"keys": keys, "values": list(mapping.items),
                     "items": [TupleValue([k, v], node.pos) for k, v in zip(keys, mapping.items)]}[node.func]
            return TupleValue(items, node.pos)
        if node.func == "get" and args and isinstance(args[0], Text):
            if args[0].value in mapping.keys:
                return mapping.items[mapping.keys.index(args[0].value)]
            return args[1] if len(args) > 1 else NONE
        raise self.error(f"a dict's .{node.func}() is not supported: gradcli reads d[key], d.items(), d.keys(), "
                         "d.values() and d.get(key)", node.pos)

    def tree_call(self, name: str, args: list, node: ast.Call, scope: Scope, work: list):
        """jax.tree_util.tree_leaves(tree) (jax.tree.leaves), and tree_map(f, tree, *rest)
        (jax.tree.map): f of the leaves in the same places, in the first tree's structure (work
        items: the calls, then the rebuild)."""
        if name in ("tree_leaves", "leaves") and len(args) == 1:
            return TupleValue(leaves(args[0]), node.pos)
        if name in ("tree_leaves", "leaves") or not args or not isinstance(args[0], FUNCTION_VALUES):
            return NOT_MINE
        fn, trees = args[0], args[1:]
        if not trees:
            raise self.error("tree_map(f, tree, *rest) takes a tree to map over", node.pos)
        columns = [leaves(tree) for tree in trees]
        if any(len(column) != len(columns[0]) for column in columns):
            raise self.error("tree_map: the trees have different structures (JAX: ValueError); give trees "
                             "with the same keys and lengths", node.pos)
        work.append((_FINISH, ("tree", trees[0], len(columns[0]), node), scope))
        for i in reversed(range(len(columns[0]))):
            work.append((_FINISH, ("call", fn, node, [column[i] for column in columns]), scope))
        return None

    def finish_tree_map(self, item, values: list) -> None:
        _, tree, count, node = item
        mapped = values[len(values) - count:]
        del values[len(values) - count:]
        values.append(rebuild(tree, mapped, node.pos))

    def tree_jacobians(self, fn, result, xs: list, trees: list, node, scope: Scope):
        """jacfwd/jacrev/hessian of a function of pytrees: for each leaf of the output, the
        arguments' trees of d leaf / d x (hessian: each of those again in the arguments' trees,
        as JAX's jacfwd(jacrev(f)) nests them)."""
        outputs = [self.materialize(leaf, scope, node.pos) for leaf in leaves(result)]
        per_output = []
        for y in outputs:
            firsts = []
            for x in xs:
                if fn.kind == "hessian" and self.graph.shapes[y] in ((), None):
                    (g,) = transforms.differentiate(self, [y], [x], node.pos, fn.by)
                    firsts.append(self.zeros_like(x, scope) if g is None else g)
                else:
                    firsts.append(transforms.jacobian(self, y, x, node.pos, fn.by, scope))
            if fn.kind == "hessian":
                firsts = [self.in_argument_trees(fn, trees, [transforms.jacobian(self, g, x, node.pos, fn.by, scope)
                                                             for x in xs], node.pos) for g in firsts]
            per_output.append(self.in_argument_trees(fn, trees, firsts, node.pos))
        return rebuild(result, per_output, node.pos)

    @staticmethod
    def in_argument_trees(fn, trees: list, flat: list, pos: Pos):
        """One result per variable, placed in the differentiated arguments' trees: the tree of
        argument argnums=k, or a tuple of trees for argnums=(j, k)."""
        out, at = [], 0
        for tree in trees:
            count = len(leaves(tree))
            out.append(rebuild(tree, flat[at:at + count], pos))
            at += count
        return out[0] if not isinstance(fn.argnums, tuple) else TupleValue(out, pos)
