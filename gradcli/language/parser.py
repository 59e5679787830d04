"""Text -> AST, driven by the LALR tables of `grammar/gradcli.lark`.

The grammar is the single source of truth for the syntax (shipped inside the wheel as
`gradcli/language/grammar/`). Lark compiles it into a lexer (the terminals' regular expressions) and
LALR(1) tables; those ship precomputed in `gradcli/language/_parser_tables.json`
(`python -m gradcli.language.parser --write-tables`), and are rebuilt with Lark, in-process, whenever
they were not made from this very grammar. The parse itself runs here: one compiled regular
expression for the lexer and a table-driven shift/reduce loop that applies `_AstBuilder` at
each reduction, with Lark's tree-shaping rules (`_rule` inlining, `?rule` single-child
expansion, anonymous tokens dropped, `[x]` placeholders). That is ~5x faster than Lark's own
loop, needs no Lark import at start-up, builds no parse tree and never recurses, so the
nesting depth of the input is bounded by memory only. tests/language/test_language.py checks that it
builds exactly what Lark's parser builds.
"""
from __future__ import annotations

import functools
import itertools
import os
import re

from gradcli.errors import GradcliError, Pos, Source
from gradcli.limits import PARSE_ALLOWANCE, TEXT_COPIES, TOKEN_BYTES, describe_size
from gradcli.language import syntax as ast
from gradcli.language.ast_builder import (  # noqa: F401 (the operator tables are read from here too)
    AUGMENTED, BINARY_OPS, UNARY_OPS, AstBuilder, Token, _pos, _syntax)


class _AstBuilder(AstBuilder):
    """The builder whose f-string fields this module's parser reads."""

    def parse_field(self, text: str) -> ast.Node:
        return _parser().parse(text, "value")

# Python that stays out of the language, each with what to write instead.
UNSUPPORTED = {
    "yield": "generators are not supported: return the values (return a, b)",
    "nonlocal": "'nonlocal' is not supported: return the new value instead",
    "async": "async code is not supported", "await": "async code is not supported",
}

# How a token is named in a syntax error.
_TOKEN_WORDS = {
    "_NL": "end of line", "$END": "end of input", "_INDENT": "indentation",
    "_DEDENT": "end of indented block", "NAME": "name", "NUMBER": "number",
}
_EXPRESSION_STARTS = {"NAME", "NUMBER", "LPAR", "LSQB", "LBRACE", "ADD_OP", "TRUE", "FALSE", "NONE", "STRING", "NOT",
                      "INVERT"}

# The indentation scheme (as Python's): these terminal names are the grammar's.
_NL, _INDENT, _DEDENT, _END = "_NL", "_INDENT", "_DEDENT", "$END"
_OPENERS, _CLOSERS = {"LPAR", "LSQB", "LBRACE"}, {"RPAR": "LPAR", "RSQB": "LSQB", "RBRACE": "LBRACE"}  # closer: its opener
# The loop's actions beyond the table's (a state's number, or ~rule for a reduction): a shift
# that first turns a leaf's node back into its token (+ _RETOKEN, see _Parser._leaf_states),
# the end, and no action
_RETOKEN, _ACCEPT, _ERROR = 1 << 30, 1 << 31, (1 << 31) + 1
# The characters that a STRING can start with (a prefix r, u, f, rf, or a quote): the lexer tests
# them first, so that a name does not try the string's optional prefix in full at every token
_STRING_STARTS = "rRuUfF\"'"
_INPUT_LINE_TOKENS = 4  # NAME = NUMBER _NL, counted as the loop counts them (--max-memory)
_TAB_WIDTH = 8


def grammar_path() -> str:
    """The grammar inside the installed package (the wheel ships it as gradcli/language/grammar/),
    or, running from a source checkout, the top-level grammar/ folder. (os.path: pathlib
    is not imported at start-up.)"""
    here = os.path.dirname(os.path.realpath(__file__))
    packaged = os.path.join(here, "grammar", "gradcli.lark")
    checkout = os.path.dirname(os.path.dirname(here))  # gradcli/language -> the repository
    return packaged if os.path.isfile(packaged) else os.path.join(checkout, "grammar", "gradcli.lark")


def grammar_text() -> str:
    with open(grammar_path(), encoding="utf-8") as file:
        return file.read()


_OPTIONS = dict(parser="lalr", start=["start", "value"], maybe_placeholders=True)
_TABLES_FILE = os.path.join(os.path.dirname(os.path.realpath(__file__)), "_parser_tables.json")


def __getattr__(name):
    if name == "TABLES":  # the tables' file as a Path (pathlib is not imported at start-up)
        from pathlib import Path
        return Path(_TABLES_FILE)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_FORMAT = 2  # of the tables file; bump when its layout changes


def _fingerprint(text: str) -> str:
    """What the tables are made from: the grammar's text itself, and the options (compared as
    text: hashing it would load OpenSSL, 3 ms of every start)."""
    return f"format {_FORMAT}, {sorted(_OPTIONS.items())}\n{text}"


def build_tables(text: str) -> dict:
    """Compile the grammar with Lark into plain data: the lexer's terminals in the order
    Lark's lexer tries them, and the LALR states and rules with Lark's tree-shaping options
    resolved per rule (see `_Rule`)."""
    from lark import Lark

    lark = Lark(text, **_OPTIONS)
    terminals = sorted(lark.terminals, key=lambda t: (-t.priority, -t.pattern.max_width,
                                                      -len(t.pattern.value), t.name))
    # A string terminal that the NAME regex also matches (`def`) is a keyword: found as a
    # NAME, then retyped by its text (Lark's lexer does the same).
    keywords = {}
    for t in terminals:
        if t.pattern.type == "str":
            for r in terminals:
                if r.pattern.type == "re" and re.fullmatch(r.pattern.to_regexp(), t.pattern.value):
                    keywords.setdefault(r.name, {})[t.pattern.value] = t.name
    embedded = {name for table in keywords.values() for name in table.values()}
    table = lark.parser.parser.parser.parse_table
    rules = sorted({arg for state in table.states.values() for kind, arg in state.values()
                    if kind.name == "Reduce"},
                   key=lambda r: (str(r), r.order, str(r.alias), str(r.options.empty_indices)))
    rule_index = {rule: i for i, rule in enumerate(rules)}
    # Lark numbers states in an order that varies between runs: renumber them in the order a
    # breadth-first walk from the start states meets them, so the file is reproducible.
    number = {}
    queue = [table.start_states[s] for s in sorted(table.start_states)]
    for state in queue:
        if state not in number:
            number[state] = len(number)
            queue += [arg for _, (kind, arg) in sorted(table.states[state].items()) if kind.name == "Shift"]
    states = {}
    for state, actions in table.states.items():
        states[str(number[state])] = {sym: (number[arg] if kind.name == "Shift" else ~rule_index[arg])
                                      for sym, (kind, arg) in actions.items()}
    callbacks = set(dir(_AstBuilder))
    shaped = []
    for rule in rules:
        name = rule.alias or rule.origin.name
        inline = rule.origin.name.startswith("_")
        # Lark's maybe_create_child_filter: which children to keep or splice, Nones to add.
        empty = rule.options.empty_indices
        nones_at = ([len(ones) for ones in "".join(str(int(b)) for b in empty).split("0")]
                    if empty else [0] * (len(rule.expansion) + 1))
        include, pending = [], 0
        for i, sym in enumerate(rule.expansion):
            pending += nones_at[i]
            if not (sym.is_term and sym.filter_out):
                include.append([i, not sym.is_term and sym.name.startswith("_"), pending])
                pending = 0
        expand1 = bool(rule.options.expand1 and not rule.alias)
        single = len(include) == 1 and not include[0][1] and not include[0][2] and not pending
        if not inline and name not in callbacks and not (expand1 and single):
            raise RuntimeError(f"grammar rule '{name}' has no _AstBuilder method")
        shaped.append({"origin": rule.origin.name, "size": len(rule.expansion),
                       "callback": name if name in callbacks else None, "expand1": expand1,
                       "include": include, "append_none": pending + nones_at[len(rule.expansion)]})
    return {"grammar": _fingerprint(text),
            "terminals": [[t.name, t.pattern.to_regexp()] for t in terminals if t.name not in embedded],
            "ignore": list(lark.lexer_conf.ignore), "keywords": keywords,
            "states": states, "rules": shaped,
            "start_states": {s: number[n] for s, n in table.start_states.items()},
            "end_states": {s: number[n] for s, n in table.end_states.items()}}


class _Rule:
    """One grammar rule as the LALR loop applies it, shaped as Lark shapes trees: keep the
    children in `include` (anonymous tokens such as "(" are dropped), splice those of `_rule`s,
    put None where an omitted `[x]` stood, hand a `?rule`'s single child through, else call
    the `_AstBuilder` method (a `_rule` yields its children as a list to splice)."""

    __slots__ = ("origin", "size", "callback", "expand1", "include", "append_none", "passthrough", "apply")

    def __init__(self, spec: dict, builder: _AstBuilder):
        self.origin = spec["origin"]
        self.size = spec["size"]
        self.callback = getattr(builder, spec["callback"]) if spec["callback"] else None
        self.expand1 = spec["expand1"]
        self.include = [tuple(i) for i in spec["include"]]
        self.append_none = spec["append_none"]
        # `?expr: arith` and the like: the value passes unchanged, only the state moves.
        self.passthrough = (self.expand1 and self.size == 1 and self.include == [(0, False, 0)]
                            and not self.append_none)
        identity = self.include == [(i, False, 0) for i in range(self.size)] and not self.append_none
        if identity and not self.expand1:  # most rules: the children as they stand
            self.apply = list if self.callback is None or spec["callback"] in builder.RETURNING_ITEMS else self.callback
        else:
            self.apply = self._shape

    def _shape(self, children: list):
        filtered = []
        for i, splice, nones in self.include:
            if nones:
                filtered += [None] * nones
            if splice:
                if filtered:
                    filtered += children[i]
                else:  # left recursion: extend the list in place
                    filtered = children[i]
            else:
                filtered.append(children[i])
        if self.append_none:
            filtered += [None] * self.append_none
        if self.expand1 and len(filtered) == 1:
            return filtered[0]
        if self.callback is None:
            return filtered
        return self.callback(filtered)


class _Parser:
    """The compiled grammar: the lexer's regular expression and the LALR tables."""

    def __init__(self, tables: dict):
        # One regular expression: what is ignored (blanks, `\\` line continuations), then one
        # terminal, tried in Lark's order. The terminal is optional so that trailing blanks match.
        ignore = set(tables["ignore"])
        skip = "|".join(f"(?:{regex})" for name, regex in tables["terminals"] if name in ignore)
        first = {"STRING": f"(?=[{_STRING_STARTS}])"}  # (the same matches: see _STRING_STARTS)
        terminals = "|".join(f"{first.get(name, '')}(?P<{name}>{regex})" for name, regex in tables["terminals"]
                             if name not in ignore)
        self.lexer = re.compile(f"(?:{skip})*(?:{terminals})?")
        self.keywords = tables["keywords"].get("NAME", {})
        # (and `__name__`, the text "__main__": built by _AstBuilder.name, never shifted as a Name)
        self.special_names = frozenset(self.keywords) | frozenset(UNSUPPORTED) | {"__name__"}
        self.states = {int(s): actions for s, actions in tables["states"].items()}
        builder = _AstBuilder()
        self.rules = [_Rule(spec, builder) for spec in tables["rules"]]
        self.start_states, self.end_states = tables["start_states"], tables["end_states"]
        # What the loop needs of a reduction, by its action (a negative number, as in the table)
        self.reductions = {~i: (rule.size, rule.apply, rule.origin) for i, rule in enumerate(self.rules)}
        self.leaf_shifts = self._leaf_states()
        self.chains: dict[tuple, tuple] = {}  # (state, nonterminal, lookahead) -> (state, action); see parse
        # `x0 = 0.5` lines: a generated program's inputs, often half its text; see _input_lines
        regex = dict(tables["terminals"])
        self.input_line = re.compile(f"(?>(?P<name>{regex['NAME']}))[ \t]*=[ \t]*(?>(?P<number>{regex['NUMBER']}))"
                                     "[ \t]*\n")

    def _leaf_states(self) -> dict[str, dict[int, int]]:
        """Where a NAME or a NUMBER is read as a variable or a constant whatever follows it
        (`x` in `y = x * 2`), or else as the token that a few rules keep (`f(x=1)`, `x += 1`),
        the loop shifts it as its AST node at once, with no Token, into a copy of the state
        after it: the copy's reduction keeps the node as it is, and its shifts are marked
        (+ _RETOKEN) so that the loop turns the node back into the token first. Names and
        numbers are a third of a program's tokens, and the costliest. For each terminal:
        state -> the copy of the state after it."""
        leaves: dict[str, dict[int, int]] = {"NAME": {}, "NUMBER": {}}
        builds = {"NAME": "name", "NUMBER": "number"}  # the callbacks that the loop's leaves copy
        copies: dict[int, int | None] = {}  # the state after a leaf -> its copy (None: none), decided once
        for state, actions in list(self.states.items()):
            for kind, leaves_of_kind in leaves.items():
                after = actions.get(kind, -1)
                if after < 0:
                    continue
                if after not in copies:
                    copies[after] = self._leaf_copy(after, builds[kind])
                if copies[after] is not None:
                    leaves_of_kind[state] = copies[after]
        return leaves

    def _leaf_copy(self, after: int, build: str) -> int | None:
        """The copy of state `after` that _leaf_states shifts a leaf into (made here), or None
        where the leaf is not read as its node whatever follows (its rule's callback is not `build`)."""
        reductions = {action for action in self.states[after].values() if action < 0}
        if len(reductions) != 1:
            return None
        rule = self.rules[~reductions.pop()]
        if rule.size != 1 or rule.callback is None or rule.callback.__name__ != build:
            return None
        kept = ~len(self.reductions)
        self.reductions[kept] = (1, None, rule.origin)  # no callback: the node stays
        copy = len(self.states)
        self.states[copy] = {sym: kept if action < 0 else action + _RETOKEN for sym, action in self.states[after].items()}
        return copy

    def parse(self, text: str, start: str, max_memory: int | None = None):
        """Shift/reduce over the tokens of `text`, building the AST bottom-up (no recursion).
        With `max_memory`, a program whose text and tokens would take more is refused as soon
        as that is known (see TOKEN_BYTES), not after its whole AST is built.

        The lexer runs inside the loop, so that it sees the parser's state and can shift a
        variable or a constant as its AST node without making a Token (see _leaf_states): each
        match of `self.lexer` is what is ignored, then one terminal. A newline is an _NL token
        followed by _INDENT/_DEDENTs where the indentation changes (Python's rule), and no
        token at all inside brackets; `brackets` holds the open ones (for error messages).
        One function on purpose: the hot loop of `benchmarks/run.py --only terms`."""
        table, reductions, chains = self.states, self.reductions, self.chains
        state = self.start_states[start]
        states, values, brackets = [], [], []
        allowed = -1 if max_memory is None else (
            (max_memory + PARSE_ALLOWANCE - TEXT_COPIES * len(text)) // TOKEN_BYTES)
        if max_memory is not None and allowed < 0:
            raise _too_large(text, max_memory, 0)
        lines, offset = [], 0
        if start == "start":
            lines, offset = self._input_lines(text, (allowed - 1) // _INPUT_LINE_TOKENS if allowed > 0 else
                                              (-1 if allowed == 0 else len(text)))
            if offset == len(text):
                return ast.Module(lines)
        count = _INPUT_LINE_TOKENS * len(lines)
        keywords, special = self.keywords, self.special_names
        name_leaves, number_leaves = self.leaf_shifts["NAME"], self.leaf_shifts["NUMBER"]
        # The lexer's place: `pos` in the text, the current line and where it starts, the
        # last token (whose place the closing _DEDENTs and $END borrow), the open indents.
        line, line_start, pos, last = len(lines) + 1, offset, offset, None
        indents = [0]
        for match in itertools.chain(self.lexer.finditer(text, offset), (None,)):
            # ---- the next token, or the tokens that a newline or the end of the text make
            if match is None:
                if not isinstance(last, (Token, type(None))):  # a leaf's node (see _leaf_states)
                    last = _leaf_token(last, text)
                batch = [_borrow(_DEDENT, "", last) for _ in indents[1:]] + [_borrow(_END, "", last)]
            else:
                skipped = match.start()
                if skipped != pos:  # nothing matched at pos
                    raise _unexpected_character(text, pos, line, line_start)
                kind = match.lastgroup
                if kind is None:  # only what is ignored, up to the end of the text or a character it cannot read
                    token_start = pos = match.end()
                else:
                    token_start, pos = match.span(kind)
                    value = text[token_start:pos]
                if token_start != skipped:  # blanks, a comment, or a `\\` line continuation were skipped
                    newlines = text.count("\n", skipped, token_start)
                    if newlines:
                        line += newlines
                        line_start = text.rindex("\n", skipped, token_start) + 1
                if kind is None:
                    continue
                if kind == "NAME":
                    if value in special:  # (one lookup for the common name, neither keyword nor refused)
                        kind = keywords.get(value, kind)
                        if value in UNSUPPORTED:
                            raise _syntax(UNSUPPORTED[value], Pos(line, token_start - line_start + 1, token_start, pos))
                    elif state in name_leaves and count + 1 != allowed:
                        # Shifted as its node, as _AstBuilder.name builds it (see _leaf_states);
                        # the token over --max-memory goes the common way, to be named in the error.
                        count += 1
                        last = ast.Name(value, Pos(line, token_start - line_start + 1, token_start, pos))
                        states.append(state)
                        values.append(last)
                        state = name_leaves[state]
                        continue
                    last = Token(kind, value, token_start, pos, line, token_start - line_start + 1)
                    batch = (last,)
                elif kind == _NL:
                    last = Token(kind, value, token_start, pos, line, token_start - line_start + 1)
                    newlines = value.count("\n")
                    if newlines:
                        line += newlines
                        line_start = token_start + value.rindex("\n") + 1
                    if brackets:
                        continue
                    batch = self._newline(last, pos, line, indents)
                else:
                    if kind == "NUMBER" and state in number_leaves and count + 1 != allowed:
                        # Shifted as its node, as _AstBuilder.number builds it (as a NAME above)
                        count += 1
                        last = ast.Number(float(value), Pos(line, token_start - line_start + 1, token_start, pos))
                        states.append(state)
                        values.append(last)
                        state = number_leaves[state]
                        continue
                    last = Token(kind, value, token_start, pos, line, token_start - line_start + 1)
                    if kind == "STRING" and "\n" in value:  # a triple-quoted string spans lines
                        line += value.count("\n")
                        line_start = token_start + value.rindex("\n") + 1
                    if kind in _OPENERS:
                        brackets.append(last)
                    elif kind in _CLOSERS:
                        if not brackets:
                            raise _syntax(f"unmatched '{value}'", _pos(last))
                        opener = brackets.pop()
                        if opener.type != _CLOSERS[kind]:
                            raise _syntax(f"'{value}' does not match '{opener.value}' at "
                                          f"{opener.line}:{opener.column}", _pos(last))
                    batch = (last,)
            # ---- shift/reduce. `states` holds the states below the current one.
            for token in batch:
                count += 1
                if count == allowed:
                    raise _too_large(text, max_memory, count, token)
                kind = token.type
                action = table[state].get(kind, _ERROR)
                while action < 0:  # reduce
                    size, apply, origin = reductions[action]
                    if size == 1:
                        if apply is not None:  # (None: a leaf shifted as its node, see _leaf_states)
                            values[-1] = apply([values[-1]])
                        below = states[-1]
                    elif size:
                        children = values[-size:]
                        del values[-size:]
                        below = states[-size]
                        del states[1 - size:]
                        values.append(apply(children))
                    else:
                        values.append(apply([]))
                        below = state
                        states.append(state)
                    # The state after the goto, past any `?expr: arith`-style reductions that
                    # follow it on this lookahead, and its action there: one lookup for what
                    # would be a chain of reductions.
                    key = (below, origin, kind)
                    goto = chains.get(key)
                    if goto is None:
                        goto = chains[key] = self._goto(below, origin, kind)
                    state, action = goto
                if action >= _RETOKEN:
                    if action == _ACCEPT:
                        if lines:
                            values[-1].statements[:0] = lines
                        return values[-1]
                    if action == _ERROR:
                        raise _unexpected(token, table[state], text, brackets)
                    values[-1] = _leaf_token(values[-1], text)  # read as a token here: see _leaf_states
                    action -= _RETOKEN
                states.append(state)
                values.append(token)
                state = action
        raise AssertionError("the token stream ends with $END")

    def _newline(self, newline: Token, pos: int, line: int, indents: list):
        """An _NL token, then _INDENT or _DEDENTs for the indentation that ends it (Python's
        rule)."""
        yield newline
        text = newline.value.rsplit("\n", 1)[1]
        width = text.count(" ") + text.count("\t") * _TAB_WIDTH
        token = Token(_INDENT, text, pos, pos, line, len(text) + 1)
        if width > indents[-1]:
            indents.append(width)
            yield token
            return
        while width < indents[-1]:
            indents.pop()
            yield _borrow(_DEDENT, text, token)
        if width != indents[-1]:
            raise _syntax("this line's indentation matches no enclosing block",
                          Pos(line, len(text) + 1, pos, pos + 1))

    def _input_lines(self, text: str, most: int) -> tuple[list, int]:
        """The program's leading `NAME = NUMBER` lines (at most `most`) as assignments, read
        without the LALR loop, and the offset where the rest begins. They are exactly what the
        loop builds: the terminals are the grammar's own regular expressions, and a line is
        taken only whole; the rest starts at a line whose first character is not blank (a
        program's first line), or it would be read differently (an indented line, a comment)."""
        lines: list = []
        starts: list[int] = []
        match = self.input_line.match
        keywords = self.keywords
        offset = 0
        for _ in range(most):  # (a `for`: CPython 3.11 specializes the code of this loop, not of a `while`)
            m = match(text, offset)
            if m is None:
                break
            name, number = m.group("name"), m.group("number")
            if "." in name or name in keywords or name in UNSUPPORTED:
                break  # an error or another statement: the loop reports it
            line = len(lines) + 1
            value_start = m.start("number")
            lines.append(ast.Assign(name, ast.Number(float(number), Pos(line, value_start - offset + 1, value_start,
                                                                        m.end("number"))),
                                    Pos(line, 1, offset, offset + len(name))))
            starts.append(offset)
            offset = m.end()
        if lines and offset < len(text) and text[offset] in " \t\n#\\":
            lines.pop()  # the next line is blank, indented or a comment: read from the line before it
            offset = starts.pop()
        return lines, offset

    def _goto(self, below: int, origin: str, kind: str) -> tuple[int, int]:
        """The state that a reduction to `origin` over state `below` leads to on lookahead
        `kind`, past the `?rule` pass-throughs that follow, and that state's action on `kind`
        (_ACCEPT once the start rule is reduced at the end, _ERROR where the grammar has none)."""
        table = self.states
        target = table[below][origin]
        while True:
            action = table[target].get(kind, _ERROR)
            if action >= 0 or not self.rules[~action].passthrough:
                break
            target = table[below][self.rules[~action].origin]
        if kind == _END and target in self.end_states.values():
            action = _ACCEPT
        return target, action


def _borrow(kind: str, value: str, token: Token | None) -> Token:
    if token is None:
        return Token(kind, value, 0, 0, 1, 1)
    return Token(kind, value, token.start_pos, token.end_pos, token.line, token.column)


def _leaf_token(node, text: str) -> Token:
    """The NAME or NUMBER token that a leaf's node was made from (see _Parser._leaf_states)."""
    pos = node.pos
    return Token("NAME" if isinstance(node, ast.Name) else "NUMBER", text[pos.start:pos.end], pos.start, pos.end,
                 pos.line, pos.column)


def _unexpected_character(text: str, pos: int, line: int, line_start: int) -> GradcliError:
    char = text[pos]
    what = "tab or space" if char in "\t " else repr(char)
    hint = {"'": "; a string is not closed on its line", '"': "; a string is not closed on its line"}.get(char, "")
    return _syntax(f"unexpected character {what}{hint}", Pos(line, pos - line_start + 1, pos, pos + 1))


def _describe(token) -> str:
    if token.type in _TOKEN_WORDS:
        return _TOKEN_WORDS[token.type]
    return f"'{token.value}'"


def _unexpected(tok: Token, actions: dict, text: str, brackets: list) -> GradcliError:
    """A token the grammar does not allow here, as a positioned, readable error."""
    expected = {sym for sym in actions if sym.isupper()}
    if tok.type == _END or (tok.type == _DEDENT and not tok.value):
        message = "unexpected end of input"
        if brackets:
            opener = brackets[-1]
            return _syntax(f"{message}: '{opener.value}' at {opener.line}:{opener.column} is never closed",
                           _pos(opener))
        lines = text.rstrip().split("\n")  # the lexer's lines, not str.splitlines
        return _syntax(message, Pos(len(lines), len(lines[-1]) + 1))
    message = f"unexpected {_describe(tok)}"
    if tok.type == "IF" and "IF" not in expected:
        message = ("if statements are not supported: gradcli programs are straight-line; write "
                   "where(condition, a, b) or `a if condition else b`")
    elif tok.type == _INDENT:
        message = "unexpected indentation"
    elif tok.type == "COMPARE" and "COMPARE" not in expected:
        message = "'is' and 'in' do not chain with comparisons here: write each in brackets, as in (a is b) and (b < c)"
    elif expected and expected <= _EXPRESSION_STARTS | {"NONE", "ELLIPSIS", "COLON", "RETURN", "DEF"}:
        message += "; expected an expression"
    elif "RETURN" in expected and tok.type == _DEDENT:
        message = "a function body must end with 'return EXPR'"
    return _syntax(message, Pos(tok.line, tok.column, tok.start_pos,
                                tok.start_pos + max(1, len(tok.value.rstrip()))))


@functools.cache
def _parser() -> _Parser:
    """The parser, made once per process from the shipped tables, or, when those were not
    made from this grammar (it was edited), from the grammar itself with Lark."""
    import json

    text = grammar_text()
    try:
        with open(globals().get("TABLES", _TABLES_FILE), encoding="utf-8") as file:  # (a test's own TABLES)
            tables = json.loads(file.read())
    except (OSError, ValueError):
        tables = None
    if tables is None or tables.get("grammar") != _fingerprint(text):
        tables = build_tables(text)
    return _Parser(tables)


def table_document() -> str:
    """The precomputed tables for the current grammar, as the JSON file holds them."""
    import json
    return json.dumps(build_tables(grammar_text()), sort_keys=True, separators=(",", ":")) + "\n"


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--write-tables"]:
        with open(_TABLES_FILE, "w", encoding="utf-8") as out:
            out.write(table_document())
        print(f"wrote {_TABLES_FILE}")
    else:
        sys.exit("usage: python -m gradcli.language.parser --write-tables")


def normalise(text: str) -> str:
    """Program text as the grammar wants it: no BOM, `\\n` line ends, one final newline."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" not in text and text.endswith("\n") and not text[-2:-1].isspace():
        return text  # already so: not copied (a program may be hundreds of megabytes)
    return text.replace("\r\n", "\n").replace("\r", "\n").rstrip() + "\n"


def _too_large(text: str, max_memory: int, count: int, token=None) -> GradcliError:
    pos = Pos(token.line, token.column, token.start_pos, token.end_pos) if token is not None else None
    what = (f"its text ({describe_size(len(text))}, held up to {TEXT_COPIES} times)" if token is None else
            f"its text and its first {count:,} tokens (about {TOKEN_BYTES} bytes each, parsed)")
    return GradcliError(f"the program is too large to parse within --max-memory: {what} already take more than "
                        f"the {describe_size(max_memory)} allowed (and {describe_size(PARSE_ALLOWANCE)} more that any program may "
                        "take); raise the limit with --max-memory if the machine has it", pos)


def parse_program(source: Source, max_memory: int | None = None) -> ast.Module:
    try:
        module = _parser().parse(source.text, "start", max_memory)
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
        return _parser().parse(source.text, "value")
    except GradcliError as err:
        raise err.at(source)
