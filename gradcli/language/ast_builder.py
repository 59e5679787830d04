"""The AST builder: the callbacks the parser's LALR loop applies at each reduction of the
grammar's rules (gradcli/language/parser.py drives them), with the checks of what the grammar
accepts but the language refuses."""
from __future__ import annotations

from gradcli.errors import GradcliError, Pos
from gradcli.language import syntax as ast
from gradcli.ops import OPS

# What each operator means is its op record's `symbol` (gradcli/ops/__init__.py): `a + b` calls "add".
# Operators are ops of the core (a test of gradcli/ops/_names.py checks that no family's op has a
# symbol): read from the core's records, without importing the families.
BINARY_OPS = {op.symbol: op.name for op in dict.values(OPS) if op.symbol is not None and op.arity == 2}
UNARY_OPS = {op.symbol: op.name for op in dict.values(OPS) if op.symbol is not None and op.arity == 1}
# Python's bitwise operators: calls of the names the python dialect reads (lower/python_operators.py:
# logical on booleans, Python's bitwise result on integers known before evaluation, refused on floats)
BITWISE = {"&": "bitwise_and", "|": "bitwise_or", "^": "bitwise_xor", "<<": "left_shift", ">>": "right_shift",
           "~": "invert"}
_BINARY_CALLS = {**BINARY_OPS, **BITWISE}
_UNARY_CALLS = {**UNARY_OPS, "~": BITWISE["~"]}
# `x op= v` rebinds x to `x op v`
AUGMENTED = {op + "=": op for op in ("+", "-", "*", "/", "//", "%", "@", "**", "&", "|", "^", "<<", ">>")}
# PyTorch's in-place methods read as `x op= v`
IN_PLACE = {"add_": "+", "sub_": "-", "mul_": "*", "div_": "/", "pow_": "**"}
# the symbol of the `.at[i].set(v)` call that `x[i] = v` is read as
ITEM_ASSIGNMENT = "[]="


def _pos(tok, start=None, end=None) -> Pos:
    return Pos(tok.line, tok.column, tok.start_pos if start is None else start,
               tok.end_pos if end is None else end)


class _TrailingComma(list):
    """Subscripts written with a trailing comma: `x[(0, 1),]` indexes axis 0 with an array,
    where `x[(0, 1)]` is `x[0, 1]`."""


class Token:
    """A terminal as the lexer found it (the attributes are Lark's, so `_AstBuilder` also
    runs under Lark's own parser, which the tests use as the reference)."""

    __slots__ = ("type", "value", "start_pos", "end_pos", "line", "column")

    def __init__(self, type_, value, start_pos, end_pos, line, column):
        self.type = type_
        self.value = value
        self.start_pos = start_pos
        self.end_pos = end_pos
        self.line = line
        self.column = column

    def __repr__(self) -> str:
        return f"Token({self.type}, {self.value!r}, {self.line}:{self.column})"


class AstBuilder(ast.PythonForms):
    """Callbacks for the grammar's rules, run at each LALR reduction (the rarer forms of Python
    in syntax.PythonForms)."""

    def parse_field(self, text: str) -> ast.Node:
        """An f-string field's expression, read by the parser that runs this builder."""
        raise NotImplementedError

    # Those that return their children as they are: the loop makes the list with `list` (a
    # call into C, not a method call) where the rule keeps its children unchanged.
    RETURNING_ITEMS = frozenset({"params", "arguments", "subscripts", "lambda_params"})

    def start(self, items):
        self.spread_pending = False
        module = ast.Module(ast.without_globals(_statements(items), function=False))
        _refuse_values_of_returnless(module)
        return module

    def value(self, items):
        return items[0]

    def assign(self, items):
        *targets, value = items[0::2]
        if len(targets) > 1:  # `a = b = v`: v bound to the last target, then the others to it
            last = self._target(targets[-1], value)
            if not isinstance(last, ast.Assign):
                raise _syntax("in `a = b = value`, the last target must be a name", targets[-1].pos)
            return [last] + _statements([self._target(t, ast.Name(last.name, value.pos)) for t in targets[:-1]])
        return self._target(targets[0], value)

    def _target(self, target, value):
        if type(target) is ast.Call and (starred := ast.star_target(target, value)) is not None:
            target, value = starred  # `a, *rest = t`: (a, rest) = the tuple (t[0], t[1:])
        if isinstance(target, ast.Name) and "." in target.id:  # `self.w = w` (a dotted name is one token)
            base, _, attribute = target.id.rpartition(".")
            return ast.SetAttribute(ast.Name(base, target.pos), attribute, value, target.pos)
        if isinstance(target, ast.Name):
            return self._bind(target.id, target.pos, value)
        if isinstance(target, ast.Attribute):  # `v.grad = None`, `self.w = w`
            return ast.SetAttribute(target.target, target.name, value, target.pos)
        if isinstance(target, ast.Index):  # `x[i] = v`: a new value of x, as x.at[i].set(v)
            return self._set_item(target, value)
        if isinstance(target, ast.Array):  # `[dw, db] = tape.gradient(loss, [w, b])`
            target = ast.Tuple(target.items, target.pos)
        if isinstance(target, ast.Tuple) and target.items and all(isinstance(t, ast.Name) for t in target.items):
            names = [(t.id, t.pos) for t in target.items]
            for name, pos in names:
                self._check_target(name, pos)
            return ast.Unpack(names, value, names[0][1])
        if isinstance(target, ast.Tuple) and target.items and all(
                isinstance(t, (ast.Name, ast.Tuple, ast.Array)) for t in target.items):
            return _nested_unpack(target, value)
        raise _syntax("only a name, names separated by commas, an attribute (obj.w) or an array's item "
                      "(x[i]) can be assigned to", target.pos)

    def _set_item(self, target: ast.Index, value):
        """`x[i] = v` -> `x = x.at[i].set(v)` (a functional update, NumPy's values)."""
        if not isinstance(target.target, ast.Name) or "." in target.target.id:
            raise _syntax("an item can be assigned in an array named by a plain name (x[i] = v)", target.pos)
        name = target.target
        at = ast.Index(ast.Attribute(name, "at", name.pos), target.subscripts, target.pos, target.trailing_comma)
        call = ast.Call("set", [at, value], Pos(target.pos.line, target.pos.column, target.pos.start,
                                                value.pos.end), symbol=ITEM_ASSIGNMENT, method=True)
        return ast.Assign(name.id, call, name.pos)

    def _bind(self, name: str, pos: Pos, value):
        self._check_target(name, pos)
        return ast.Assign(name, value, pos)

    @staticmethod
    def _check_target(name: str, pos: Pos):
        if "." in name:
            raise _syntax(f"cannot assign to the dotted name '{name}'", pos)

    def annassign(self, items):
        name, _, _annotation, _, value = items
        if value is None:  # `x: float`: declares, computes nothing
            return None
        return self._bind(name.value, _pos(name), value)

    def augassign(self, items):
        target, op, value = items
        if isinstance(target, ast.Index):  # `a[i] += v`: a[i] = a[i] + v
            symbol = AUGMENTED[op.value]
            item = ast.Index(target.target, target.subscripts, target.pos, target.trailing_comma)
            call = ast.Call(_BINARY_CALLS.get(symbol, "power"), [item, value],
                            Pos(op.line, op.column, op.start_pos, value.pos.end), symbol=symbol)
            return self._set_item(target, call)
        if isinstance(target, ast.Name) and target.id.endswith(".data"):  # PyTorch's `w.data -= lr * w.grad`
            return _updated(target.id, AUGMENTED[op.value], value, target.pos,
                                 Pos(op.line, op.column, op.start_pos, value.pos.end))
        if not isinstance(target, ast.Name) or "." in target.id:
            raise _syntax(f"only a name or an array's item (x[i]) can be updated with {op.value}", target.pos)
        symbol = AUGMENTED[op.value]
        call = ast.Call(_BINARY_CALLS.get(symbol, "power"), [target, value],
                        Pos(op.line, op.column, op.start_pos, value.pos.end), symbol=symbol)
        return self._bind(target.id, target.pos, call)

    def while_stmt(self, items):
        keyword, condition, _, body = items
        loop = ast.While(condition, body, _pos(keyword))
        ast.claim_loop_exits(loop)
        return loop

    def comp_for(self, items):
        keyword, target, _, iterable, *rest = items
        targets = target.items if isinstance(target, ast.Tuple) else [target]
        if not all(isinstance(t, ast.Name) and "." not in t.id for t in targets):
            raise _syntax("a comprehension's target must be a name, or names separated by commas", target.pos)
        return ([(t.id, t.pos) for t in targets], iterable, [c for c in rest[1::2]])

    def list_comp(self, items):
        lsqb, element, *clauses, rsqb = items
        return ast.Comprehension("list", element, clauses, _pos(lsqb, lsqb.start_pos, rsqb.end_pos))

    def generator(self, items):
        if getattr(items[0], "type", None) == "LPAR":  # `(e for x in xs)`
            lpar, element, *clauses, rpar = items
            return ast.Comprehension("generator", element, clauses, _pos(lpar, lpar.start_pos, rpar.end_pos))
        element, *clauses = items  # `sum(e for x in xs)`: the call's only argument
        _, iterable, conditions = clauses[-1]
        end = (conditions[-1] if conditions else iterable).pos.end
        return ast.Comprehension("generator", element, clauses,
                                 Pos(element.pos.line, element.pos.column, element.pos.start, end))

    def dict_comp(self, items):
        lbrace, entry, *clauses, rbrace = items
        if entry[0] is None:
            raise _syntax("dict unpacking (**d) cannot be used in a dict comprehension (Python's SyntaxError)",
                          entry[1].pos)
        return ast.Comprehension("dict", entry, clauses, _pos(lbrace, lbrace.start_pos, rbrace.end_pos))

    def expr_stmt(self, items):
        value = items[0]
        if isinstance(value, ast.Call) and not value.method and len(value.args) == 1 and not value.keywords:
            receiver, _, method = value.func.rpartition(".")
            if method in IN_PLACE and receiver:  # `x.add_(v)`: x updated in place, read as `x += v`
                at = value.pos  # (the update's call starts at the method, as an augmented one at its operator)
                return _updated(receiver, IN_PLACE[method], value.args[0], at,
                                     Pos(at.line, at.column + len(receiver) + 1, at.start + len(receiver) + 1, at.end))
        return ast.ExprStmt(value, value.pos)


    def return_stmt(self, items):
        keyword, value = items
        if value is None:
            raise _syntax("a function must return a value: return EXPR", _pos(keyword))
        return ast.Return(value, _pos(keyword))

    def pass_stmt(self, items):
        return None

    def import_names(self, items):
        # IMPORT NAME [AS NAME] ("," NAME [AS NAME])*: pairs after the keyword
        keyword, *rest = items
        bindings = []
        for module, alias in zip(rest[0::3], rest[2::3]):
            bindings.append((module.value, alias.value if alias is not None else module.value.split(".")[0]))
        return ast.Import(bindings, _pos(keyword))

    def import_from(self, items):
        keyword, package, _, *rest = items
        if len(rest) == 1 and getattr(rest[0], "type", None) == "MUL_OP":
            return ast.Import([], _pos(keyword))  # `from m import *`: names resolve by themselves
        bindings = [(f"{package.value}.{name.value}", (alias or name).value)
                    for name, alias in zip(rest[0::3], rest[2::3])]
        return ast.Import(bindings, _pos(keyword))

    def params(self, items):
        return items

    def param(self, items):
        name, _, _annotation, _, default = items
        return (name.value, _pos(name), default)

    def funcdef(self, items):
        _, name_token, params, *rest = items
        # [ARROW test] placeholders come before the body
        body = ast.without_globals(_statements(rest[2:]))
        name = name_token.value
        if "." in name:
            raise _syntax(f"cannot define the dotted name '{name}'", _pos(name_token))
        if body and isinstance(body[0], ast.ExprStmt) and isinstance(body[0].value, ast.Str) and len(body) > 1:
            body = body[1:]  # the docstring
        returns = [i for i, stmt in enumerate(body) if isinstance(stmt, ast.Return)]
        if not returns and name in ("__init__", "setup_context") and body:
            # a constructor returns the object it sets up; torch.autograd.Function's setup_context, None
            body.append(ast.Return(ast.NoneLiteral(body[-1].pos), body[-1].pos))
            returns = [len(body) - 1]
        if not returns and body and isinstance(body[-1], ast.If) and _returns_somewhere(body[-1]):
            body[-1] = _tail_if(_none_where_it_falls_through(body[-1]))
        elif not returns:  # run for what it does (a training loop, called on its own line): None, as in Python
            end = body[-1].pos if body else _pos(name_token)
            body.append(ast.Return(_ImplicitNone(end), end))
            returns = [len(body) - 1]
        if returns and returns[0] != len(body) - 1:
            raise _syntax("'return' must be the last statement of a function body", body[returns[0]].pos)
        names, defaults, variadic = ast.function_parameters(name, params)
        return ast.FuncDef(name, names, body, _pos(name_token), defaults, variadic=variadic)

    def classdef(self, items):
        keyword, name, _, bases, _, _, body = items
        for stmt in body:
            if not isinstance(stmt, (ast.FuncDef, ast.Assign)) and not (
                    isinstance(stmt, ast.ExprStmt) and isinstance(stmt.value, ast.Str)):
                raise _syntax("a class body holds methods (def) and constants (NAME = value)", stmt.pos)
        return ast.ClassDef(name.value, list(bases or []), body, _pos(name))

    def block(self, items):
        return _statements(items)

    def decorator(self, items):
        at, expression = items[0], items[1]
        if at.value != "@":
            raise _syntax(f"unexpected '{at.value}' at the start of a line", _pos(at))
        return expression

    def decorated(self, items):
        *decorators, fn = items
        fn.decorators = decorators
        return fn

    def with_item(self, items):
        value, _, name = items
        return (value, name.value if name is not None else None, _pos(name) if name is not None else None)

    def with_stmt(self, items):
        keyword, *rest = items
        *with_items, _, body = rest
        return ast.With(list(with_items), body, _pos(keyword))

    def for_stmt(self, items):
        keyword, target, _, iterable, _, body = items
        if type(target) is ast.Call and target.func == ast.SPREAD_DISPLAY:  # `for a, *rest in xs`
            hidden = f"<unpacked at {target.pos.line}:{target.pos.column}>"
            names, unpacking = [(hidden, target.pos)], _statements([self._target(target, ast.Name(hidden, target.pos))])
        else:
            names, unpacking = _loop_targets(target.items if isinstance(target, ast.Tuple) else [target])
        loop = ast.For(names, iterable, unpacking + body, _pos(keyword))
        ast.claim_loop_exits(loop)
        return loop

    def elif_clause(self, items):
        _, condition, _, body = items
        return (condition, body)

    def if_stmt(self, items):
        keyword, condition, _, body, *rest = items
        orelse = rest[-1] if rest and rest[-1] is not None and not isinstance(rest[-1], tuple) else []
        branches = [(condition, body)] + [r for r in rest if isinstance(r, tuple)]
        return ast.If(branches, orelse or [], _pos(keyword))

    def lambda_params(self, items):
        return items

    def lambda_param(self, items):
        name, _, default = items
        return (name.value, _pos(name), default)

    def lambda_def(self, items):
        keyword, params, _, body = items
        pos = _pos(keyword, keyword.start_pos, body.pos.end)
        fn = self.funcdef([keyword, Token("NAME", "<lambda>", keyword.start_pos, keyword.end_pos, keyword.line,
                                          keyword.column), params, None, None, ast.Return(body, body.pos)])
        return ast.Lambda(fn, pos)

    def tuple(self, items):
        if len(items) == 2 and getattr(items[0], "type", None) == "LPAR":
            lpar, rpar = items
            return ast.Tuple([], _pos(lpar, lpar.start_pos, rpar.end_pos))
        first, last = items[0], items[-1]
        pos = Pos(first.pos.line, first.pos.column, first.pos.start, last.pos.end)
        return self.spread_pending and ast.spread_display("tuple", items, pos) or ast.Tuple(list(items), pos)

    def conditional(self, items):
        # `a if c else b` reads as where(c, a, b): both sides are computed (TensorFlow's
        # tf.where), so the diagnostics watch the discarded side's gradient
        then, keyword, condition, _, otherwise = items
        return ast.Call("where", [condition, then, otherwise],
                        Pos(keyword.line, keyword.column, then.pos.start, otherwise.pos.end), symbol="if")

    def logical(self, items):
        return self.binary(items)

    def attribute(self, items):
        target, dot, name = items
        # `(x).T.sum` lexes its tail as one dotted name: one attribute per part
        for part in name.value.split("."):
            target = ast.Attribute(target, part, Pos(dot.line, dot.column, target.pos.start, name.end_pos))
        return target

    def dict_item(self, items):
        key, _, value = items
        return (key, value)

    def dict_literal(self, items):
        lbrace, *entries, rbrace = items
        entries = [e for e in entries if e is not None]
        pos = _pos(lbrace, lbrace.start_pos, rbrace.end_pos)
        if any(k is None for k, _ in entries):  # `{**d, "k": v}`
            return ast.dict_display(entries, pos)
        return ast.Dict([k for k, _ in entries], [v for _, v in entries], pos)

    def string(self, items):
        import ast as python_ast  # the literal's escapes read as Python reads them, never evaluated

        if any(t.value[:2].lower() in ("f'", 'f"', "fr", "rf") for t in items):
            return _fstring(items, self.parse_field)

        text = "".join(python_ast.literal_eval(t.value) for t in items)
        return ast.Str(text, _pos(items[0], items[0].start_pos, items[-1].end_pos))

    def binary(self, items):
        left, op, right = items
        return ast.Call(_BINARY_CALLS[op.value], [left, right],
                        Pos(op.line, op.column, left.pos.start, right.pos.end), symbol=op.value)

    def unary(self, items):
        op, operand = items
        return ast.Call(_UNARY_CALLS[op.value], [operand],
                        Pos(op.line, op.column, op.start_pos, operand.pos.end), symbol=op.value)

    def call(self, items):
        target, lpar, arguments, rpar = items
        if self.spread_pending and any(type(a) is ast.Call and a.func == ast.STARRED for a in arguments or ()):
            return ast.spread_call(target, arguments, rpar.end_pos)  # `f(*xs, **kw)`
        if type(target) is ast.Name and arguments and len(arguments) == 1 and type(arguments[0]) is not ast.Keyword:
            # the common call, `f(x)`: what the general way below makes, made at once
            pos = target.pos
            return ast.Call(target.id, [arguments[0]], Pos(pos.line, pos.column, pos.start, rpar.end_pos), [])
        receiver = []
        if isinstance(target, ast.Attribute):  # `(a + b).sum(axis=0)`: a method of the value
            receiver, target = [target.target], ast.Name(target.name, target.pos)
        args, keywords = [], []
        for arg in arguments or []:
            if isinstance(arg, ast.Keyword):
                keywords.append(arg)
            elif keywords:
                raise _syntax("a positional argument follows a keyword argument", arg.pos)
            else:
                args.append(arg)
        if not isinstance(target, ast.Name):  # `grad(f)(x)`: a call of a computed function
            return ast.CallValue(target, args, keywords, Pos(target.pos.line, target.pos.column,
                                                             target.pos.start, rpar.end_pos))
        call = ast.Call(target.id, receiver + args, Pos(target.pos.line, target.pos.column,
                                                        target.pos.start, rpar.end_pos), keywords)
        call.method = bool(receiver)  # a method: its receiver is the first argument
        return call

    def arguments(self, items):
        return items

    def keyword(self, items):
        name, _, value = items
        return ast.Keyword(name.value, value, _pos(name))

    def index(self, items):
        target, lsqb, subscripts, rsqb = items
        return ast.Index(target, list(subscripts), Pos(lsqb.line, lsqb.column, target.pos.start, rsqb.end_pos),
                         isinstance(subscripts, _TrailingComma))

    def subscripts(self, items):
        return items

    def subscripts_trailing_comma(self, items):
        return _TrailingComma(items)

    def slice(self, items):
        colon = next(t for t in items if getattr(t, "type", None) == "COLON")
        parts = [t for t in items if getattr(t, "type", None) != "COLON"]
        parts += [None] * (3 - len(parts))
        return ast.Slice(parts[0], parts[1], parts[2], _pos(colon))

    def none(self, items):
        return ast.NoneLiteral(_pos(items[0]))

    def ellipsis(self, items):
        return ast.ELLIPSIS

    def number(self, items):
        tok = items[0]
        if tok.type in ("TRUE", "FALSE"):
            return ast.Number(1.0 if tok.type == "TRUE" else 0.0, _pos(tok), boolean=True)
        return ast.Number(float(tok.value), _pos(tok))

    def name(self, items):
        tok = items[0]
        if tok.value == "__name__":  # a script's `if __name__ == "__main__":` runs its body
            return ast.Str("__main__", _pos(tok))
        return ast.Name(tok.value, Pos(tok.line, tok.column, tok.start_pos, tok.end_pos))

    def array(self, items):
        lsqb, *elements, rsqb = items
        elements, pos = [e for e in elements if e is not None], _pos(lsqb, lsqb.start_pos, rsqb.end_pos)
        return self.spread_pending and ast.spread_display("list", elements, pos) or ast.Array(elements, pos)




def _fstring(items, parse_field) -> ast.FString:
    """An f-string: its text and its fields, each field's expression parsed (never evaluated)
    and placed where it stands in the program. A field is `{expr}`, `{expr=}` or `{expr:spec}`."""
    import ast as python_ast

    parts = []
    for tok in items:
        raw = tok.value
        prefix = len(raw) - len(raw.lstrip("fFrRuU"))
        quote = 3 if raw[prefix:prefix + 3] in ('"""', "\'\'\'") else 1
        body_start = prefix + quote
        body = raw[body_start:len(raw) - quote]
        if "f" not in raw[:prefix].lower():
            parts.append(python_ast.literal_eval(raw[prefix:]))
            continue
        k = 0
        while k < len(body):
            if body.startswith("{{", k) or body.startswith("}}", k):
                parts.append(body[k])
                k += 2
                continue
            if body[k] != "{":
                parts.append(body[k])
                k += 1
                continue
            end = body.find("}", k)
            if end < 0:
                raise _syntax("an f-string field is not closed with '}'", _pos(tok))
            field = body[k + 1:end]
            text = _field_expression(field)
            shown = text.rstrip().endswith("=")
            text = text.rstrip()[:-1] if shown else text
            offset = tok.start_pos + body_start + k + 1
            at = Pos(tok.line, tok.column + body_start + k + 1, offset, offset + len(text))
            try:
                expression = parse_field(text.strip() + "\n") if text.strip() else None
            except GradcliError:
                expression = None
            if expression is None:
                raise _syntax("an f-string field holds an expression gradcli reads: {name}, {expr=} or "
                              "{expr:.3f}", at)
            _shift(expression, at)
            parts.append(ast.Field(expression, text.strip(), shown))
            k = end + 1
    return ast.FString(parts, _pos(items[0], items[0].start_pos, items[-1].end_pos))


class _ImplicitNone(ast.NoneLiteral):
    """The None a function without a return gives (its body's end)."""

    __slots__ = ()


def _refuse_values_of_returnless(module: ast.Module) -> None:
    """A function whose body ends without a return may run for what it does, called on its own
    line (`train(3, 0.05)`); its value used anywhere else is the error of a return left out."""
    returnless, stack = {}, list(module.statements)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.FuncDef) and isinstance(getattr(stmt.body[-1], "value", None), _ImplicitNone):
            returnless[stmt.name] = stmt
        stack.extend(s for s in ast.statement_parts(stmt) if not isinstance(s, ast.Node))
    if not returnless:
        return
    stack = list(module.statements)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.ExprStmt) and isinstance(node.value, ast.Call) and node.value.func in returnless:
            stack.extend(ast.children(node.value))  # (a call on its own line: its value is not used)
            continue
        name = node.func if isinstance(node, ast.Call) else node.id if isinstance(node, ast.Name) else None
        if name in returnless:
            fn = returnless[name]
            raise _syntax(f"the body of '{name}' must end with 'return EXPR': its value is used at line "
                          f"{node.pos.line} (a function run for what it does returns None, called on its own "
                          "line)", fn.body[-2].pos if len(fn.body) > 1 else fn.pos)
        stack.extend(ast.statement_parts(node) if not isinstance(node, ast.Node) else ast.children(node))


def _loop_targets(targets: list) -> tuple[list, list]:
    """A for loop's names, and the statements that unpack its nested targets (`for i, (w, b) in
    ...`: (w, b) bound from a hidden name, first in the body)."""
    names, unpacking = [], []
    for t in targets:
        if isinstance(t, (ast.Tuple, ast.Array)) and t.items:
            hidden = f"<unpacked at {t.pos.line}:{t.pos.column}>"
            unpacking += _nested_unpack(ast.Tuple(t.items, t.pos), ast.Name(hidden, t.pos))
            names.append((hidden, t.pos))
        elif isinstance(t, ast.Name) and "." not in t.id:
            names.append((t.id, t.pos))
        else:
            raise _syntax("a for loop's target must be a name, or names separated by commas (nested in "
                          "brackets: for i, (w, b) in ...)", t.pos)
    return names, unpacking


def _updated(target: str, symbol: str, value, at: Pos, operator: Pos):
    """`x = x <symbol> value`, as `x op= value` is read (`operator`: where its call stands); through
    PyTorch's `.data` (`w.data -= ...`, `w.data.sub_(...)`) the update is one autograd does not
    record, so it stands under no_grad."""
    name = target[:-len(".data")] if target.endswith(".data") else target
    if "." in name:
        raise _syntax(f"only a name or an array's item (x[i]) can be updated with {symbol}=", at)
    AstBuilder._check_target(name, at)
    named = ast.Name(name, Pos(at.line, at.column, at.start, at.start + len(name)))
    update = ast.Assign(name, ast.Call(_BINARY_CALLS.get(symbol, "power"), [named, value], operator, symbol=symbol), at)
    if name == target:
        return update
    return ast.With([(ast.Call("torch.no_grad", [], at), None, None)], [update], at)


def _field_expression(field: str) -> str:
    """An f-string field's expression: up to its format spec's `:` or its `!r` conversion, those at
    no bracket's depth and outside quotes (`{w[:, 0]}`, `{d['a:b']:.3f}`)."""
    depth, quote = 0, None
    for k, char in enumerate(field):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0 and (char == ":" or char == "!" and field[k + 1:k + 2] in ("r", "s", "a")):
            return field[:k]
    return field


def _shift(node, at: Pos) -> None:
    """Place a field's expression (parsed alone, from 1:1) where the field stands."""
    work = [node]
    while work:
        n = work.pop()
        p = getattr(n, "pos", None)
        if isinstance(p, Pos):
            n.pos = Pos(at.line, at.column + p.column - 1, at.start + max(p.start, 0), at.start + max(p.end, 0))
        work.extend(k for k in ast.children(n) if isinstance(k, ast.Node))
        if isinstance(n, ast.Call):
            work.extend(k.value for k in n.keywords if False)


def _returns_somewhere(stmt: ast.If) -> bool:
    """Whether a branch of an if (or of the ifs that end its branches) ends in a return."""
    pending = [stmt]
    while pending:
        stmt = pending.pop()
        for body in [body for _, body in stmt.branches] + [stmt.orelse]:
            if body and isinstance(body[-1], ast.Return):
                return True
            if body and isinstance(body[-1], ast.If):
                pending.append(body[-1])
    return False


def _none_where_it_falls_through(stmt: ast.If) -> ast.If:
    """The if that ends a function, each branch that ends without a return (an else left out
    too) ending in `return None`, as Python's function then returns None."""
    pending = [stmt]
    while pending:
        node = pending.pop()
        if not node.orelse:
            node.orelse = [ast.Return(ast.NoneLiteral(node.pos), node.pos)]
        for body in [body for _, body in node.branches] + [node.orelse]:
            if isinstance(body[-1], ast.If):
                pending.append(body[-1])
            elif not isinstance(body[-1], ast.Return):
                body.append(ast.Return(ast.NoneLiteral(body[-1].pos), body[-1].pos))
    return stmt


def _tail_if(stmt: ast.If) -> ast.TailIf:
    """The if that ends a function, and the ifs that end its branches, as TailIfs."""
    top = ast.TailIf(stmt.branches, stmt.orelse, stmt.pos)
    pending = [top]
    while pending:
        node = pending.pop()
        for body in [body for _, body in node.branches] + [node.orelse]:
            if isinstance(body[-1], ast.If):
                body[-1] = ast.TailIf(body[-1].branches, body[-1].orelse, body[-1].pos)
                pending.append(body[-1])
    return top


def _nested_unpack(target: ast.Tuple, value) -> list:
    """`(v, aux), g = value` as Python unpacks it: the outer tuple first, each inner one bound
    to a name of its own (one no program can write), then unpacked in turn (no recursion)."""
    statements, pending = [], [(target, value)]
    while pending:
        outer, source = pending.pop(0)
        if not outer.items:
            raise _syntax("an empty tuple cannot be unpacked into", outer.pos)
        names = []
        for item in outer.items:
            if isinstance(item, (ast.Tuple, ast.Array)):
                hidden = f"<unpacked at {item.pos.line}:{item.pos.column}>"
                pending.append((ast.Tuple(item.items, item.pos), ast.Name(hidden, item.pos)))
                item = ast.Name(hidden, item.pos)
            elif "." in item.id:
                raise _syntax("only names can be unpacked into (a, (b, c) = ...)", item.pos)
            else:
                AstBuilder._check_target(item.id, item.pos)
            names.append((item.id, item.pos))
        statements.append(ast.Unpack(names, source, names[0][1]))
    last = target.items[-1]
    if isinstance(last, ast.Name):  # (the last name written is the last bound, the program's value, as in Python)
        statements.append(ast.Assign(last.id, ast.Name(last.id, last.pos), last.pos))
    return statements


def _statements(items) -> list:
    """The statements of a block, `a = b = v` (a list of assignments) spread out."""
    out = []
    for item in items:
        if isinstance(item, list):
            out.extend(item)
        elif item is not None:
            out.append(item)
    return out


def _syntax(message: str, pos: Pos) -> GradcliError:
    return GradcliError(message, pos)


# --------------------------------------------------------------------------- tables
