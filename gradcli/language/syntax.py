"""The abstract syntax tree that the parser builds and the graph builder lowers.

Operators are calls: `a + b` is `Call("add", [a, b])` anchored at the `+`, so operators and
named functions reach the op table through one path. Every node carries its `Pos`.
"""
from __future__ import annotations

from gradcli.errors import GradcliError, Pos
from gradcli.records import NEW, Record

# The nodes are plain classes with slots (gradcli.records), as dataclass(slots=True, eq=False)
# made them: the same fields, constructor and repr. The nodes a program makes one of per name,
# number or statement write out their `__init__` (Record's, a loop over the fields, costs a
# 100,000-term program tens of milliseconds); the rarer ones take Record's.


class Node(Record):
    __slots__ = ()
    pos: Pos


class Number(Node):
    __slots__ = _fields = ("value", "pos", "boolean")
    value: float
    pos: Pos
    boolean: bool  # written True or False (a mask, not the integers 1 and 0)

    def __init__(self, value, pos, boolean=False):
        self.value = value
        self.pos = pos
        self.boolean = boolean


class Name(Node):
    __slots__ = _fields = ("id", "pos")
    id: str
    pos: Pos

    def __init__(self, id, pos):
        self.id = id
        self.pos = pos


class Array(Node):
    """`[a, b, ...]`: a literal when every item is, else a stack of computed values."""

    __slots__ = _fields = ("items", "pos")
    items: list[Node]
    pos: Pos

    def __init__(self, items, pos):
        self.items = items
        self.pos = pos


class Str(Node):
    """A string literal: a docstring, or a text argument such as an einsum spec."""

    __slots__ = _fields = ("value", "pos")
    value: str
    pos: Pos

    def __init__(self, value, pos):
        self.value = value
        self.pos = pos


class Tuple(Node):
    """`(a, b)` or `a, b`: several values, unpacked by `x, y = ...` or read as an array."""

    __slots__ = _fields = ("items", "pos")
    items: list[Node]
    pos: Pos

    def __init__(self, items, pos):
        self.items = items
        self.pos = pos


class Attribute(Node):
    """`(expr).name`: an attribute or method of a computed value (`(a @ b).T`)."""

    __slots__ = _fields = ("target", "name", "pos")
    target: Node
    name: str
    pos: Pos

    def __init__(self, target, name, pos):
        self.target = target
        self.name = name
        self.pos = pos


class Keyword(Record):
    __slots__ = _fields = ("name", "value", "pos")
    name: str
    value: Node
    pos: Pos

    def __init__(self, name, value, pos):
        self.name = name
        self.value = value
        self.pos = pos


class Call(Node):
    """A call of a named function, or an operator (`symbol` is then its spelling)."""

    __slots__ = _fields = ("func", "args", "pos", "keywords", "symbol", "method")
    func: str
    args: list[Node]
    pos: Pos
    keywords: list[Keyword]
    symbol: str | None
    method: bool  # `x.sum(axis=0)`: args[0] is the value the method was called on

    def __init__(self, func, args, pos, keywords=NEW, symbol=None, method=False):
        self.func = func
        self.args = args
        self.pos = pos
        self.keywords = [] if keywords is NEW else keywords
        self.symbol = symbol
        self.method = method


class Slice(Record):
    __slots__ = _fields = ("start", "stop", "step", "pos")
    start: Node | None
    stop: Node | None
    step: Node | None
    pos: Pos

    def __init__(self, start, stop, step, pos):
        self.start = start
        self.stop = stop
        self.step = step
        self.pos = pos


ELLIPSIS = "..."


class NoneLiteral(Node):
    """`None`: a missing argument (`targets=None`), or a new axis in a subscript."""

    __slots__ = _fields = ("pos",)
    pos: Pos

    def __init__(self, pos):
        self.pos = pos


class Index(Node):
    """`target[i, j:k, None, ...]`; the subscripts must be constants."""

    __slots__ = _fields = ("target", "subscripts", "pos", "trailing_comma")
    target: Node
    subscripts: list  # of Node | Slice | ELLIPSIS (None is a NoneLiteral node)
    pos: Pos
    trailing_comma: bool  # `x[(0, 1),]`: the tuple is one subscript, not one per axis

    def __init__(self, target, subscripts, pos, trailing_comma=False):
        self.target = target
        self.subscripts = subscripts
        self.pos = pos
        self.trailing_comma = trailing_comma


class Assign(Record):
    __slots__ = _fields = ("name", "value", "pos")
    name: str
    value: Node
    pos: Pos  # of the name

    def __init__(self, name, value, pos):
        self.name = name
        self.value = value
        self.pos = pos


class Unpack(Record):
    """`a, b = value`: the items of a tuple, or the rows of an array, bound to names."""

    __slots__ = _fields = ("names", "value", "pos")
    names: list[tuple[str, Pos]]
    value: Node
    pos: Pos  # of the first name


class Import(Record):
    """`import numpy as onp`, `from jax import numpy as jnp`: (module, the name it is bound to)."""

    __slots__ = _fields = ("bindings", "pos")
    bindings: list[tuple[str, str]]
    pos: Pos


class ExprStmt(Record):
    __slots__ = _fields = ("value", "pos")
    value: Node
    pos: Pos


class Return(Record):
    __slots__ = _fields = ("value", "pos")
    value: Node
    pos: Pos


class FuncDef(Record):
    __slots__ = _fields = ("name", "params", "body", "pos", "defaults", "decorators", "variadic")
    name: str
    params: list[tuple[str, Pos]]
    body: list  # Assign | Unpack | ExprStmt | FuncDef | Import, ending in a Return
    pos: Pos  # of the function's name
    defaults: dict  # parameter name -> default value (a Node)
    # `def f(a, *args, b=1, **kwargs)`: (the number of positional parameters, the name of `*`'s
    # tuple or None, the name of `**`'s dict or None); those names are parameters too, bound at
    # each call (lower/python_operators.py); None for a function without them
    variadic: tuple | None

    def __init__(self, name, params, body, pos, defaults=NEW, decorators=NEW, variadic=None):
        self.name = name
        self.params = params
        self.body = body
        self.pos = pos
        self.defaults = {} if defaults is NEW else defaults
        self.decorators = [] if decorators is NEW else decorators  # the `@...` expressions, outermost first
        self.variadic = variadic


class Module(Record):
    __slots__ = _fields = ("statements",)
    statements: list  # Assign | Unpack | ExprStmt | FuncDef | Import


def children(node) -> list:
    """The sub-expressions of an expression node, for iterative walks (no recursion)."""
    if isinstance(node, Call):
        return node.args + [k.value for k in node.keywords]
    if isinstance(node, (Array, Tuple)):
        return node.items
    if isinstance(node, Attribute):
        return [node.target]
    if isinstance(node, Dict):
        return node.keys + node.values
    if isinstance(node, FString):
        return [part.value for part in node.parts if isinstance(part, Field)]
    if isinstance(node, CallValue):
        return [node.callee] + node.args + [k.value for k in node.keywords]
    if isinstance(node, Index):
        out = [node.target]
        for sub in node.subscripts:
            if isinstance(sub, Slice):
                out.extend(p for p in (sub.start, sub.stop, sub.step) if p is not None)
            elif isinstance(sub, Node):
                out.append(sub)
        return out
    return []


def statement_parts(stmt) -> list:
    """The expressions and inner statements of a statement, for iterative walks (no recursion)."""
    if isinstance(stmt, FuncDef):
        return stmt.body + list(stmt.defaults.values())
    if isinstance(stmt, (Assign, Unpack, ExprStmt, Return, SetAttribute)):
        return [stmt.value]
    if isinstance(stmt, With):
        return [node for node, _, _ in stmt.items] + stmt.body
    if isinstance(stmt, For):
        return [stmt.iterable] + stmt.body
    if isinstance(stmt, If):
        return [part for condition, body in stmt.branches for part in (condition, *body)] + stmt.orelse
    if isinstance(stmt, ClassDef):
        return list(stmt.body)
    return []


class Lambda(Node):
    """`lambda a, b=1: EXPR`: a function value, as `def <lambda>(a, b=1): return EXPR`."""

    __slots__ = _fields = ("fn", "pos")
    fn: FuncDef
    pos: Pos


class CallValue(Node):
    """`grad(f)(x)`, `(lambda v: v)(2.0)`: a call of a computed function value."""

    __slots__ = _fields = ("callee", "args", "keywords", "pos")
    callee: Node
    args: list[Node]
    keywords: list[Keyword]
    pos: Pos


class With(Record):
    """`with A as a, B:` then a block: each item entered in order, left in reverse order."""

    __slots__ = _fields = ("items", "body", "pos")
    items: list  # of (Node, name or None, Pos of the name or None)
    body: list
    pos: Pos


class For(Record):
    """`for i in range(3):` (or over a constant tuple or list, or an array's rows): unrolled."""

    __slots__ = _fields = ("names", "iterable", "body", "pos")
    names: list  # of (name, Pos): one name, or several to unpack each item into
    iterable: Node
    body: list
    pos: Pos


class If(Record):
    """`if c: ... elif d: ... else: ...`: the branch is chosen before evaluation."""

    __slots__ = _fields = ("branches", "orelse", "pos")
    branches: list  # of (condition Node, body list)
    orelse: list
    pos: Pos


class TailIf(If):
    """The if that ends a function, each branch ending with its return (`if c: return a
    else: return b`): the branch chosen before evaluation gives the function's value."""

    __slots__ = ()


class SetAttribute(Record):
    """`obj.name = value` (a tensor's or an object's attribute)."""

    __slots__ = _fields = ("target", "name", "value", "pos")


class Dict(Node):
    """`{'w': w, 'b': b}`: a mapping of sources for tape.gradient, read by constant keys."""

    __slots__ = _fields = ("keys", "values", "pos")


class Field(Record):
    """`{expr}` or `{expr=}` in an f-string."""

    __slots__ = _fields = ("value", "text", "shown")


class FString(Node):
    """An f-string: text (str parts) and fields; in a print its fields are the printed values."""

    __slots__ = _fields = ("parts", "pos")


class ClassDef(Record):
    """`class Model(nn.Module):` with methods (`__init__` sets `self.w`) and class constants."""

    __slots__ = _fields = ("name", "bases", "body", "pos")


class While(Record):
    """`while c: ...`: unrolled while its condition, known before evaluation, holds."""

    __slots__ = _fields = ("condition", "body", "pos")


class Delete(Record):
    """`del a, b`: the names are unbound (a later use is an error)."""

    __slots__ = _fields = ("names", "pos")
    names: list  # of (name, Pos)


class Assert(Record):
    """`assert c, message`: checked before evaluation where c is known then, else after it."""

    __slots__ = _fields = ("condition", "message", "pos")


class Raise(Record):
    """`raise E(...)`: an error where the lowering reaches it (`exception` None: a bare `raise`)."""

    __slots__ = _fields = ("exception", "pos")


class Global(Record):
    """`global a, b`: read by the function that holds it (without_globals), then dropped."""

    __slots__ = _fields = ("names", "pos")


class Comprehension(Node):
    """`[e for a in xs if c]`, `(e for ...)`, `{k: v for ...}`: unrolled over items known before
    evaluation. Its names are its own (children() does not walk into it: it has a scope)."""

    __slots__ = _fields = ("kind", "element", "clauses", "pos")
    kind: str  # "list", "generator" or "dict"
    element: object  # a Node, or (key Node, value Node) for a dict
    clauses: list  # of (names [(name, Pos)], iterable Node, conditions [Node])
    pos: Pos


# The names of the calls that spread `*x` and `**x` (lower/python_operators.py): `*x` where nothing
# spreads it; a call with them; a tuple or list display with them; `a, *rest = t`'s right side
STARRED, SPREAD_CALL, SPREAD_DISPLAY, STAR_TARGET = "<starred>", "<spread call>", "<spread display>", "<star target>"
# The name of the call `a == "text"` (or `!=`) is read as: Python's comparison of strings
TEXT_COMPARISON = "<compare text>"
# The name of the call `a < b <= c` is read as, its operators (space-separated) as its symbol:
# Python's `a < b and b <= c`, b computed once (lower/python_operators.py)
CHAINED_COMPARISON = "<chained comparison>"
# The name of the call `{**d, "k": v}` is read as (lower/python_operators.py): the letters of its
# entries (* a dict spread, k a key and its value), then their expressions
DICT_DISPLAY = "<dict display>"
# The name of the call `x in c` is read as (lower/python_operators.py); `x in range(...)` calls
# MEMBERSHIP_IN_RANGE with range's arguments after x, a range being no value of its own.
MEMBERSHIP, MEMBERSHIP_IN_RANGE = "<in>", "<in range>"


def _token_pos(tok) -> Pos:
    return Pos(tok.line, tok.column, tok.start_pos, tok.end_pos)


class PythonForms:
    """The AST builder's callbacks for the rarer forms of Python (gradcli/language/ast_builder.py
    holds the rest): `del`, `assert`, `is`, membership tests."""

    def del_stmt(self, items):
        keyword, target = items
        targets = target.items if isinstance(target, Tuple) else [target]
        for t in targets:
            if not isinstance(t, Name) or "." in t.id:
                raise GradcliError("del takes names (del a, b): an item or an attribute cannot be deleted", t.pos)
        return Delete([(t.id, t.pos) for t in targets], _token_pos(keyword))

    def assert_stmt(self, items):
        keyword, condition, message = items
        return Assert(condition, message, _token_pos(keyword))

    spread_pending = False  # a `*x` or `**x` was built, and the call, display or target that holds it may not be

    def starred(self, items):
        """`*x` (or, among a call's arguments, `**x`): spread by what holds it (spread_call,
        spread_display, star_target); anywhere else Python's SyntaxError."""
        op, value = items
        if op.value not in ("*", "**"):
            raise GradcliError(f"unexpected '{op.value}'", _token_pos(op))
        self.spread_pending = True
        return Call(STARRED, [value], Pos(op.line, op.column, op.start_pos, value.pos.end), symbol=op.value)

    def star_param(self, items):
        """`*args`, `**kwargs`, a bare `*` (the parameters after it are given by name): (name or None,
        its place, the kind) as `param` gives (name, place, default)."""
        op, name = items[0], items[1] if len(items) > 1 else None
        if op.value not in ("*", "**"):
            raise GradcliError(f"unexpected '{op.value}' in a function's parameters", _token_pos(op))
        return (name.value if name is not None else None, _token_pos(name if name is not None else op),
                VariadicParameter(op.value))

    def raise_stmt(self, items):
        keyword, exception = items[0], items[1]
        return Raise(exception, _token_pos(keyword))

    def global_stmt(self, items):
        return Global([(t.value, _token_pos(t)) for t in items[1:]], _token_pos(items[0]))

    def except_clause(self, items):
        keyword, exception = items[0], items[1]
        names = exception.items if isinstance(exception, Tuple) else [exception] if exception is not None else []
        for name in names:
            if isinstance(name, Name) and name.id.rpartition(".")[2] in NEVER_RAISED:
                raise GradcliError(f"except {name.id}: gradcli computes as NumPy does (1 / 0 is inf, reported "
                                   "by its diagnostics), never raising it, so this handler would never run: "
                                   "choose the value with where(...)", name.pos)
        return ("except", keyword)

    def try_stmt(self, items):
        """The statements a `try` runs: its body, its else and its finally (a handler is skipped)."""
        run, clause = [], "TRY"
        for item in items:
            if hasattr(item, "type"):  # a token: which block follows
                clause = item.type if item.type != "COLON" else clause
            elif isinstance(item, list) and clause in ("TRY", "ELSE", "FINALLY"):
                run += item
            elif isinstance(item, tuple):
                clause = "EXCEPT"
        return run

    def dict_spread(self, items):
        """`**d` among a dict display's items: (no key, d)."""
        return (None, items[1])

    def comparison(self, items):
        """`a < b`; `mode == "relu"` with a string written in the program compares strings;
        `a < b < c` chains (CHAINED_COMPARISON)."""
        if len(items) > 3:
            operands, ops = items[0::2], items[1::2]
            return Call(CHAINED_COMPARISON, operands, Pos(ops[0].line, ops[0].column, operands[0].pos.start,
                                                          operands[-1].pos.end), symbol=" ".join(o.value for o in ops))
        left, op, right = items
        if (type(left) is Str or type(right) is Str) and op.value in ("==", "!="):
            return text_comparison(left, op, right)
        return self.binary(items)

    def break_stmt(self, items):
        return LoopExit("break", _token_pos(items[0]))

    def continue_stmt(self, items):
        return LoopExit("continue", _token_pos(items[0]))

    def identity(self, items):
        left, keyword, negated, right = items
        symbol = "is not" if negated is not None else "is"
        return Call(symbol, [left, right], Pos(keyword.line, keyword.column, left.pos.start, right.pos.end),
                    symbol=symbol)

    def membership(self, items):
        """`x in c`, `x not in c`: known before evaluation (a dict's keys, a tuple's items, a range)."""
        item, negated, keyword, container = items
        symbol = "not in" if negated is not None else "in"
        pos = Pos(keyword.line, keyword.column, item.pos.start, container.pos.end)
        if isinstance(container, Call) and container.func == "range" and not container.method \
                and not container.keywords and 1 <= len(container.args) <= 3:
            return Call(MEMBERSHIP_IN_RANGE, [item, *container.args], pos, symbol=symbol)
        if isinstance(container, Array):  # `k in ["w", "b"]`: Python's list of its items (strings too)
            container = Tuple(container.items, container.pos)
        return Call(MEMBERSHIP, [item, container], pos, symbol=symbol)


def text_comparison(left, op, right) -> Call:
    """`mode == "relu"`, `__name__ == "__main__"`: a comparison with a string written in the program,
    Python's equality of strings (lower/python_operators.py)."""
    return Call(TEXT_COMPARISON, [left, right], Pos(op.line, op.column, left.pos.start, right.pos.end),
                symbol=op.value)


class LoopExit(Record):
    """`break` or `continue`: reached where the ifs around it are chosen before evaluation, it leaves
    the unrolled loop `loop` (the innermost around it in its function), or the rest of its pass."""

    _fields = ("kind", "pos")  # (not the loop: it holds this statement, and a repr would not end)
    __slots__ = ("kind", "pos", "loop")
    kind: str  # "break" or "continue"
    pos: Pos
    loop: object  # the For or While statement it leaves; None outside a loop (Python's SyntaxError)

    def __init__(self, kind, pos, loop=None):
        self.kind = kind
        self.pos = pos
        self.loop = loop


def claim_loop_exits(loop) -> None:
    """The loop that each `break`/`continue` of its body leaves (not those of the loops and
    functions inside it: those leave, or are, their own)."""
    pending = list(loop.body)
    while pending:
        stmt = pending.pop()
        if isinstance(stmt, LoopExit):
            if stmt.loop is None:
                stmt.loop = loop
        elif isinstance(stmt, If):
            pending.extend(part for _, body in stmt.branches for part in body)
            pending.extend(stmt.orelse)
        elif isinstance(stmt, With):
            pending.extend(stmt.body)


def exits_loop(body: list) -> str | None:
    """"break" or "continue" where an if's branch `body` leaves a loop (directly or in an if inside it)."""
    pending = list(body)
    while pending:
        stmt = pending.pop()
        if isinstance(stmt, LoopExit):
            return stmt.kind
        if isinstance(stmt, If):
            pending.extend(part for _, inner in stmt.branches for part in inner)
            pending.extend(stmt.orelse)
    return None


class VariadicParameter:
    """`*` or `**` of a parameter (the place of its default in what `param` gives)."""

    __slots__ = ("kind",)

    def __init__(self, kind: str):
        self.kind = kind


def function_parameters(name: str, params: list) -> tuple[list, dict, tuple | None]:
    """(the parameters [(name, place)], their defaults, FuncDef.variadic) from what the
    `param`s of `def name(...)` or a lambda give; Python's SyntaxErrors of their order."""
    seen, defaults, names = set(), {}, []
    positional, star, double, bare = None, None, None, None
    for pname, ppos, default in params or []:
        if double is not None:
            raise GradcliError(f"no parameter may follow **{double}", ppos)
        variadic = isinstance(default, VariadicParameter)
        if variadic and default.kind == "*":
            if positional is not None:
                raise GradcliError("* may appear only once in a function's parameters", ppos)
            positional, star, bare = len(names), pname, (ppos if pname is None else None)
        elif variadic:
            double = pname
        if pname is None:
            continue
        if pname in seen:
            raise GradcliError(f"duplicate parameter '{pname}' in the definition of '{name}'", ppos)
        seen.add(pname)
        names.append((pname, ppos))
        if not variadic and default is not None:
            defaults[pname] = default
        elif not variadic and defaults and positional is None:
            raise GradcliError(f"parameter '{pname}' without a default follows one with a default", ppos)
    if positional is None and double is None:
        return names, defaults, None
    if bare is not None and len(names) == positional + (double is not None):
        raise GradcliError("named arguments must follow bare * (Python's SyntaxError)", bare)
    if positional is None:
        positional = len(names) - (double is not None)
    return names, defaults, (positional, star, double)


def spread_call(target, arguments: list, end: int):
    """`f(a, *xs, k=v, **d)`: the call `<spread call>` of (what it calls, as text: "name:KINDS:f",
    "method:KINDS:f" with the receiver first, "value:KINDS:" with the function value first; KINDS
    one letter per argument after the text: p positional, * spread, d a dict spread by name, c the
    function value), then those arguments; its keywords are the plain ones."""
    kinds, args, keywords = [], [], []
    if isinstance(target, Attribute):  # `(a + b).sum(*axes)`: a method of the value
        callee, name = "method", target.name
        kinds.append("p")
        args.append(target.target)
    elif isinstance(target, Name):
        callee, name = "name", target.id
    else:  # `grad(f)(*xs)`
        callee, name = "value", ""
        kinds.append("c")
        args.append(target)
    for arg in arguments:
        if isinstance(arg, Keyword):
            keywords.append(arg)
        elif type(arg) is Call and arg.func == STARRED:
            kinds.append("*" if arg.symbol == "*" else "d")
            args.append(arg.args[0])
        elif keywords:
            raise GradcliError("a positional argument follows a keyword argument", arg.pos)
        else:
            kinds.append("p")
            args.append(arg)
    pos = Pos(target.pos.line, target.pos.column, target.pos.start, end)
    spec = Str(f"{callee}:{''.join(kinds)}:{name}", pos)
    return Call(SPREAD_CALL, [spec] + args, pos, keywords, symbol="*")


def spread_display(kind: str, items: list, pos: Pos):
    """`(*a, b)`, `[*a, b]` (kind "tuple" or "list"): the call `<spread display>` of (the letters
    of its items, p an item, * spread), then the items; or None where no item is spread."""
    if not any(type(item) is Call and item.func == STARRED for item in items):
        return None
    kinds, args = [], []
    for item in items:
        starred = type(item) is Call and item.func == STARRED
        if starred and item.symbol != "*":
            raise GradcliError("** spreads a dict among a call's arguments only", item.pos)
        kinds.append("*" if starred else "p")
        args.append(item.args[0] if starred else item)
    return Call(SPREAD_DISPLAY, [Str("".join(kinds), pos)] + args, pos, symbol="*")


# Python's arithmetic exceptions, which gradcli never raises (it computes NumPy's inf and nan)
NEVER_RAISED = frozenset({"ZeroDivisionError", "ArithmeticError", "FloatingPointError", "OverflowError"})


def without_globals(body: list, function: bool = True) -> list:
    """A block with its `global` statements dropped (not those of the defs inside it, already
    read): a function that declares a name global and only reads it sees the program's name as
    it stands at the call; one that assigns it would write the program's name, which gradcli's
    functions never do: refused."""
    declared: dict = {}
    blocks, pending = [], [body]
    while pending:
        block = pending.pop()
        blocks.append(block)
        kept = []
        for stmt in block:
            if isinstance(stmt, Global):
                for name, pos in stmt.names:
                    declared.setdefault(name, pos)
                continue
            kept.append(stmt)
            if isinstance(stmt, If):
                pending += [b for _, b in stmt.branches] + [stmt.orelse]
            elif isinstance(stmt, (For, While, With)):
                pending.append(stmt.body)
        block[:] = kept
    if function and declared:
        for block in blocks:
            for stmt in block:
                for name, pos in _bound(stmt):
                    if name in declared:
                        raise GradcliError(f"'global {name}' in a function that assigns {name}: gradcli's functions "
                                           f"do not write the program's names; return the new value and assign it "
                                           f"where the function is called ({name} = f(...))", pos)
    return body


def _bound(stmt) -> list:
    """The names a statement binds, with their places."""
    if isinstance(stmt, Assign):
        return [(stmt.name, stmt.pos)]
    if isinstance(stmt, (Unpack, For, Delete)):
        return list(stmt.names)
    if isinstance(stmt, FuncDef):
        return [(stmt.name, stmt.pos)]
    if isinstance(stmt, With):
        return [(name, pos) for _, name, pos in stmt.items if name is not None]
    return []


def dict_display(entries: list, pos: Pos) -> Call:
    """`{**d, "k": v}`: the call DICT_DISPLAY of its entries' letters, then their expressions."""
    kinds = "".join("*" if key is None else "k" for key, _ in entries)
    args = [part for key, value in entries for part in ((value,) if key is None else (key, value))]
    return Call(DICT_DISPLAY, [Str(kinds, pos)] + args, pos, symbol="**")


def star_target(target, value):
    """`a, *rest, z = value`: the names, and the value as the tuple (a, rest, z) they unpack
    (`<star target>` of "BEFORE:AFTER" and the value); None where `target` spreads nothing."""
    if not (type(target) is Call and target.func == SPREAD_DISPLAY):
        return None
    kinds, items = target.args[0].value, target.args[1:]
    if kinds.count("*") != 1:
        raise GradcliError("multiple starred names in an assignment (Python's SyntaxError)", target.pos)
    for item in items:
        if not isinstance(item, Name) or "." in item.id:
            raise GradcliError("a starred assignment unpacks into names (a, *rest = t)", item.pos)
    before = kinds.index("*")
    spec = Str(f"{before}:{len(kinds) - before - 1}", target.pos)
    return Tuple(list(items), target.pos), Call(STAR_TARGET, [spec, value], value.pos, symbol="*")
