"""Text -> AST. All Lark-specific code lives here.

The grammar is `grammar/gradcli.lark` (shipped inside the wheel as `gradcli/grammar/`).
Lark's LALR parser is built once per process and applies `_AstBuilder` during the parse, so
no parse tree is built and nothing recurses over the input's nesting depth.
"""
from __future__ import annotations

import functools
from pathlib import Path

from .errors import GradcliError, Pos, Source
from . import syntax as ast

BINARY_OPS = {
    "+": "add", "-": "subtract", "*": "multiply", "/": "divide", "@": "matmul", "**": "power",
    "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal",
    "==": "equal", "!=": "not_equal",
}
UNARY_OPS = {"-": "negative", "+": "positive"}

# How a token is named in a syntax error.
_TOKEN_WORDS = {
    "_NL": "end of line", "$END": "end of input", "_INDENT": "indentation",
    "_DEDENT": "end of indented block", "NAME": "name", "NUMBER": "number",
}
_EXPRESSION_STARTS = {"NAME", "NUMBER", "LPAR", "LSQB", "ADD_OP", "TRUE", "FALSE"}


def grammar_path() -> Path:
    """The grammar inside the installed package (the wheel ships it as gradcli/grammar/),
    or, running from a source checkout, the top-level grammar/ folder."""
    here = Path(__file__).resolve().parent
    packaged = here / "grammar" / "gradcli.lark"
    return packaged if packaged.is_file() else here.parent / "grammar" / "gradcli.lark"


def grammar_text() -> str:
    return grammar_path().read_text(encoding="utf-8")


def _pos(tok, start=None, end=None) -> Pos:
    return Pos(tok.line, tok.column, tok.start_pos if start is None else start,
               tok.end_pos if end is None else end)


def _span(first, last) -> tuple[int, int]:
    return first.pos.start, last.pos.end


class _AstBuilder:
    """Callbacks for the grammar's rules, run at each LALR reduction."""

    def start(self, items):
        return ast.Module([s for s in items if s is not None])

    def value(self, items):
        return items[0]

    def assign(self, items):
        name, _, value = items
        if "." in name:
            raise _syntax(f"cannot assign to the dotted name '{name}'", _pos(name))
        return ast.Assign(str(name), value, _pos(name))

    def expr_stmt(self, items):
        return ast.ExprStmt(items[0], items[0].pos)

    def return_stmt(self, items):
        return ast.Return(items[1], _pos(items[0]))

    def params(self, items):
        return [(str(t), _pos(t)) for t in items]

    def funcdef(self, items):
        _, name, params, *body = items
        if "." in name:
            raise _syntax(f"cannot define the dotted name '{name}'", _pos(name))
        returns = [i for i, stmt in enumerate(body) if isinstance(stmt, ast.Return)]
        if not returns:
            raise _syntax(f"the body of '{name}' must end with 'return EXPR'", body[-1].pos)
        if returns[0] != len(body) - 1:
            raise _syntax("'return' must be the last statement of a function body", body[returns[0]].pos)
        seen = set()
        for pname, ppos in params or []:
            if pname in seen:
                raise _syntax(f"duplicate parameter '{pname}' in the definition of '{name}'", ppos)
            seen.add(pname)
        return ast.FuncDef(str(name), params or [], body, _pos(name))

    def binary(self, items):
        left, op, right = items
        return ast.Call(BINARY_OPS[op.value], [left, right],
                        Pos(op.line, op.column, left.pos.start, right.pos.end), symbol=op.value)

    def unary(self, items):
        op, operand = items
        return ast.Call(UNARY_OPS[op.value], [operand],
                        Pos(op.line, op.column, op.start_pos, operand.pos.end), symbol=op.value)

    def call(self, items):
        target, lpar, arguments, rpar = items
        if not isinstance(target, ast.Name):
            raise _syntax("only a named function can be called", _pos(lpar))
        args, keywords = [], []
        for arg in arguments or []:
            if isinstance(arg, ast.Keyword):
                keywords.append(arg)
            elif keywords:
                raise _syntax("a positional argument follows a keyword argument", arg.pos)
            else:
                args.append(arg)
        return ast.Call(target.id, args, Pos(target.pos.line, target.pos.column,
                                             target.pos.start, rpar.end_pos), keywords)

    def arguments(self, items):
        return items

    def keyword(self, items):
        name, _, value = items
        return ast.Keyword(str(name), value, _pos(name))

    def index(self, items):
        target, lsqb, subscripts, rsqb = items
        return ast.Index(target, subscripts, Pos(lsqb.line, lsqb.column, target.pos.start, rsqb.end_pos))

    def subscripts(self, items):
        return items

    def slice(self, items):
        colon = next(t for t in items if getattr(t, "type", None) == "COLON")
        parts = [t for t in items if getattr(t, "type", None) != "COLON"]
        parts += [None] * (3 - len(parts))
        return ast.Slice(parts[0], parts[1], parts[2], _pos(colon))

    def newaxis(self, items):
        return ast.NEWAXIS

    def ellipsis(self, items):
        return ast.ELLIPSIS

    def number(self, items):
        tok = items[0]
        if tok.type == "TRUE":
            value = 1.0
        elif tok.type == "FALSE":
            value = 0.0
        else:
            value = float(tok.value)
        return ast.Number(value, _pos(tok))

    def name(self, items):
        return ast.Name(str(items[0]), _pos(items[0]))

    def array(self, items):
        lsqb, *elements, rsqb = items
        return ast.Array([e for e in elements if e is not None], _pos(lsqb, lsqb.start_pos, rsqb.end_pos))


def _syntax(message: str, pos: Pos) -> GradcliError:
    return GradcliError(message, pos)


def _indenter_class():
    from lark.indenter import Indenter
    from lark import Token

    class PositionedIndenter(Indenter):
        """Lark's indenter, with positioned errors instead of assertions, indentation tokens
        placed where the indented line starts, and a record of unclosed brackets."""

        NL_type = "_NL"
        OPEN_PAREN_types = ["LPAR", "LSQB"]
        CLOSE_PAREN_types = ["RPAR", "RSQB"]
        INDENT_type = "_INDENT"
        DEDENT_type = "_DEDENT"
        tab_len = 8

        def handle_NL(self, token):
            if self.paren_level > 0:
                return
            yield token
            indent_str = token.rsplit("\n", 1)[1]
            indent = indent_str.count(" ") + indent_str.count("\t") * self.tab_len
            line = token.line + token.count("\n")
            start = token.end_pos
            pos_tok = Token(self.INDENT_type, indent_str, start, line, len(indent_str) + 1,
                            line, len(indent_str) + 1, start)
            if indent > self.indent_level[-1]:
                self.indent_level.append(indent)
                yield pos_tok
            else:
                while indent < self.indent_level[-1]:
                    self.indent_level.pop()
                    yield Token.new_borrow_pos(self.DEDENT_type, indent_str, pos_tok)
                if indent != self.indent_level[-1]:
                    raise _syntax("this line's indentation matches no enclosing block",
                                  Pos(line, len(indent_str) + 1, start, start + 1))

        def _process(self, stream):
            self.open_brackets = []
            token = None
            for token in stream:
                if token.type in self.CLOSE_PAREN_types and self.paren_level == 0:
                    raise _syntax(f"unmatched '{token.value}'", _pos(token))
                if token.type == self.NL_type:
                    yield from self.handle_NL(token)
                else:
                    yield token
                if token.type in self.OPEN_PAREN_types:
                    self.paren_level += 1
                    self.open_brackets.append(token)
                elif token.type in self.CLOSE_PAREN_types:
                    self.paren_level -= 1
                    opener = self.open_brackets.pop()
                    if (opener.value, token.value) not in (("(", ")"), ("[", "]")):
                        raise _syntax(f"'{token.value}' does not match '{opener.value}' at "
                                      f"{opener.line}:{opener.column}", _pos(token))
            while len(self.indent_level) > 1:
                self.indent_level.pop()
                yield Token.new_borrow_pos(self.DEDENT_type, "", token) if token else Token(self.DEDENT_type, "")

    return PositionedIndenter


_OPTIONS = dict(parser="lalr", start=["start", "value"], maybe_placeholders=True)
TABLES = Path(__file__).resolve().parent / "_parser_tables.json"


def _fingerprint(text: str) -> str:
    import hashlib
    return hashlib.sha256((text + repr(sorted(_OPTIONS.items()))).encode()).hexdigest()


@functools.cache
def _lark():
    """The parser, built once per process. Building LALR tables from the grammar takes ~60 ms,
    so they ship precomputed (`python -m gradcli.parser --write-tables`, plain JSON data);
    they are used only when made from this very grammar by this very Lark version."""
    import lark
    from lark import Lark

    text = grammar_text()
    indenter = _indenter_class()()
    tables = _load_tables(text, lark.__version__)
    if tables is not None:
        try:
            return Lark._load_from_dict(*tables, transformer=_AstBuilder(), postlex=indenter), indenter
        except Exception:  # a Lark whose internals moved: build from the grammar instead
            pass
    return Lark(text, postlex=indenter, transformer=_AstBuilder(), **_OPTIONS), indenter


def _load_tables(text: str, lark_version: str):
    import json

    try:
        doc = json.loads(TABLES.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if doc.get("grammar") != _fingerprint(text) or doc.get("lark") != lark_version:
        return None
    return _decode(doc["data"]), _decode(doc["memo"])


def _encode(o):
    """Lark's serialized parser as JSON: tuples and integer-keyed dicts are tagged."""
    if isinstance(o, dict):
        if all(isinstance(k, str) for k in o):
            return {k: _encode(v) for k, v in o.items()}
        return {"__intkeys__": [[k, _encode(v)] for k, v in o.items()]}
    if isinstance(o, tuple):
        return {"__tuple__": [_encode(v) for v in o]}
    if isinstance(o, list):
        return [_encode(v) for v in o]
    return o


def _decode(o):
    if isinstance(o, dict):
        if "__intkeys__" in o:
            return {k: _decode(v) for k, v in o["__intkeys__"]}
        if "__tuple__" in o:
            return tuple(_decode(v) for v in o["__tuple__"])
        return {k: _decode(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_decode(v) for v in o]
    return o


def table_document() -> str:
    """The precomputed tables for the current grammar and Lark, as the JSON file holds them."""
    import json
    import lark
    from lark import Lark

    text = grammar_text()
    built = Lark(text, **_OPTIONS)
    data, memo = built.memo_serialize([lark.lexer.TerminalDef, lark.grammar.Rule])
    return json.dumps({"grammar": _fingerprint(text), "lark": lark.__version__,
                       "data": _encode(data), "memo": _encode(memo)}, sort_keys=True) + "\n"


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--write-tables"]:
        TABLES.write_text(table_document(), encoding="utf-8")
        print(f"wrote {TABLES}")
    else:
        sys.exit("usage: python -m gradcli.parser --write-tables")


def _describe(token) -> str:
    if token.type in _TOKEN_WORDS:
        return _TOKEN_WORDS[token.type]
    return f"'{token.value}'"


def _convert(exc, text: str, indenter) -> GradcliError:
    """A Lark exception as a positioned, readable GradcliError."""
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

    if isinstance(exc, UnexpectedCharacters):
        char = text[exc.pos_in_stream] if exc.pos_in_stream < len(text) else "?"
        what = "tab or space" if char in "\t " else repr(char)
        hint = {"%": "; gradcli has no % operator"}.get(char, "")
        return _syntax(f"unexpected character {what}{hint}",
                       Pos(exc.line, exc.column, exc.pos_in_stream, exc.pos_in_stream + 1))
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        expected = set(exc.expected) | set(getattr(exc, "accepts", None) or ())
        if tok.type == "$END" or (tok.type == "_DEDENT" and not tok.value):
            message = "unexpected end of input"
            if indenter.open_brackets:
                opener = indenter.open_brackets[-1]
                message += f": '{opener.value}' at {opener.line}:{opener.column} is never closed"
                return _syntax(message, _pos(opener))
            lines = text.rstrip().splitlines() or [""]
            return _syntax(message, Pos(len(lines), len(lines[-1]) + 1))
        message = f"unexpected {_describe(tok)}"
        if tok.value == "/" and text[max(tok.start_pos - 1, 0):tok.start_pos] == "/":
            message = "gradcli has no // (floor division): write floor(a / b)"
        elif tok.type == "_INDENT":
            message = "unexpected indentation"
        elif tok.type == "COMPARE" and "COMPARE" not in expected:
            message = "comparisons do not chain: write (a < b) * (b < c) for 'a < b < c'"
        elif expected and expected <= _EXPRESSION_STARTS | {"NONE", "ELLIPSIS", "COLON", "RETURN", "DEF"}:
            message += "; expected an expression"
        elif "RETURN" in expected and tok.type == "_DEDENT":
            message = "a function body must end with 'return EXPR'"
        line = tok.line if tok.line is not None else 1
        column = tok.column if tok.column is not None else 1
        start = tok.start_pos if tok.start_pos is not None else -1
        return _syntax(message, Pos(line, column, start, start + max(1, len(tok.value.rstrip()))))
    if isinstance(exc, UnexpectedEOF):
        return _syntax("unexpected end of input", Pos(text.count("\n") or 1, 1))
    return _syntax(str(exc), None)


def _parse(text: str, start: str):
    from lark.exceptions import UnexpectedInput

    parser, indenter = _lark()
    try:
        return parser.parse(text, start=start)
    except UnexpectedInput as exc:
        raise _convert(exc, text, indenter) from None


def normalise(text: str) -> str:
    """Program text as the grammar wants it: no BOM, `\\n` line ends, one final newline."""
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n").rstrip() + "\n"


def parse_program(source: Source) -> ast.Module:
    try:
        module = _parse(source.text, "start")
    except GradcliError as err:
        raise err.at(source)
    if not module.statements:
        raise GradcliError("the program is empty: write at least one statement, e.g. 'y = exp(1)'",
                           source=source)
    for stmt in module.statements:
        if isinstance(stmt, ast.Return):
            raise GradcliError("'return' outside a function", stmt.pos, source)
    return module


def parse_value(source: Source) -> ast.Node:
    try:
        return _parse(source.text, "value")
    except GradcliError as err:
        raise err.at(source)
