"""Every program of the tutorial snippets and samples/ that fits on one line runs through `--lines`
with its numbers changed twice, and every answer, diagnostic and error (with its place) is the
one the line gets compiled on its own (gradcli.cli.lines shares compiled programs between lines
whose numbers differ)."""
import glob
import io
import json
import os
import re
import tokenize

import pytest

from gradcli.cli import lines
from test_lines_shared import _run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def one_line(code: str) -> str | None:
    """The program's statements joined with `; ` (comments dropped), or None where it has a
    block that only a def alone on the line could hold (Python's rule: a def takes the rest of
    its line)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    statements, current = [], []
    for tok in tokens:
        if tok.type in (tokenize.INDENT, tokenize.DEDENT):
            return None
        if tok.type == tokenize.NEWLINE:
            if current:
                statements.append(_joined(current))
            current = []
        elif tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.ENDMARKER):
            current.append(tok)
    if current:
        statements.append(_joined(current))
    compound = ("def ", "for ", "with ", "if ", "while ", "class ", "@", "try ", "async ")
    if len(statements) > 1 and any(s.startswith(compound) for s in statements):
        return None
    return "; ".join(statements) or None


def _joined(tokens) -> str:
    """A statement's tokens as written, its line breaks (inside brackets) made spaces."""
    out, previous = [], None
    for tok in tokens:
        if previous is not None:
            out.append(" " * (tok.start[1] - previous.end[1]) if tok.start[0] == previous.end[0] else " ")
        out.append(tok.string)
        previous = tok
    return "".join(out)


def _scaled(text: str, factor: float, integers: int) -> str:
    """The line with each number that has a point or an exponent scaled, and each integer moved."""
    def change(m):
        literal = m.group(0)
        if re.fullmatch(r"\d+", literal):
            return str(int(literal) + integers)
        return repr(round(float(literal) * factor, 6))
    return lines._LITERAL.sub(change, text)


def _programs():
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/language/tutorial_snippets/**/*.json"), recursive=True)):
        with open(path) as f:
            code = json.load(f).get("code") or ""
        line = one_line(code)
        if line and lines._LITERAL.search(line):
            found.append((os.path.relpath(path, ROOT), ["eval", "--lines"], line))
    for path in sorted(glob.glob(os.path.join(ROOT, "samples/*.expr"))):
        with open(path) as f:
            code = f.read()
        line = one_line(code)
        name = os.path.basename(path)
        told = re.search(rf"gradcli (grad|eval) samples/{re.escape(name)}((?: --(?:of|wrt) \w+)*)\n", code)
        args = [told.group(1), "--lines", *told.group(2).split()] if told else ["eval", "--lines"]
        if line and lines._LITERAL.search(line):
            found.append((os.path.relpath(path, ROOT), args, line))
    return found


PROGRAMS = _programs()


def test_the_programs_that_fit_on_a_line_are_found():
    # the snippet set and the samples have these; a change to either shows here
    assert len(PROGRAMS) >= 25, [p for p, _, _ in PROGRAMS]
    assert any(p.startswith("samples/") for p, _, _ in PROGRAMS)


GROUPS = {}
for _path, _args, _line in PROGRAMS:
    GROUPS.setdefault(tuple(_args), []).append((_path, _line))


@pytest.mark.parametrize("args", sorted(GROUPS), ids=" ".join)
def test_each_program_answers_through_lines_as_compiled_alone(args, monkeypatch):
    chosen = GROUPS[args]
    stdin = []
    for _, line in chosen:  # the line, two others of its shape, then the first again: shared from the second on
        b, c = _scaled(line, 1.25, 0), _scaled(line, 0.75, 1)
        stdin += [line, b, c, b, line]
    text = "\n".join(stdin) + "\n"
    shared = _run(list(args), text, True, monkeypatch)
    alone = _run(list(args), text, False, monkeypatch)
    for k, (got, want) in enumerate(zip(shared[1].splitlines(), alone[1].splitlines())):
        assert got == want, (chosen[k // 5][0], stdin[k])
    assert shared[:3] == alone[:3]
    assert shared[3] < alone[3]  # some lines were answered by a shared program
