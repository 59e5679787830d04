"""Source positions and the one exception type for user errors.

Every AST node, equation, error and diagnostic carries a `Pos`, so whatever goes wrong is
reported as `FILE:LINE:COL:` with the source line and a caret (docs/contract.md §6).
"""
from __future__ import annotations

import re


class Source:
    """A program's text and the name it is reported under (a path, `<expr>` or `<stdin>`).

    A line ends at `\\n` and nowhere else, as for the lexer (not at `\\x0c`, `\\x85` or `\\u2028`,
    where `str.splitlines` would split); where lines start is indexed once, on first use, so
    quoting any number of lines costs time linear in their length. (Frozen, equal by name and
    text: what `dataclass(frozen=True, slots=True)` makes, written out, see gradcli/records.py.)"""

    __slots__ = ("name", "text", "_starts")

    def __init__(self, name: str, text: str):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "_starts", None)

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field '{name}'")

    def __delattr__(self, name):
        raise AttributeError(f"cannot delete field '{name}'")

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return (self.name, self.text) == (other.name, other.text)
        return NotImplemented

    def __hash__(self):
        return hash((self.name, self.text))

    def __repr__(self):
        return f"Source(name={self.name!r}, text={self.text!r})"

    def __reduce__(self):  # (pickled and copied by its constructor: the frozen fields are not set again)
        return Source, (self.name, self.text)

    def _line_starts(self) -> list[int]:
        starts = self._starts
        if starts is None:
            starts, find = [0], self.text.find
            newline = find("\n")
            while newline >= 0:
                starts.append(newline + 1)
                newline = find("\n", newline + 1)
            object.__setattr__(self, "_starts", starts)
        return starts

    def line_text(self, line: int) -> str:
        """The text of 1-based `line`, without its line end."""
        starts = self._line_starts()
        if not 0 < line <= len(starts):
            return ""
        end = starts[line] - 1 if line < len(starts) else len(self.text)
        return self.text[starts[line - 1]:end].removesuffix("\r")

    def line_start(self, line: int) -> int:
        """Character offset at which 1-based `line` starts."""
        starts = self._line_starts()
        return starts[line - 1] if 0 < line <= len(starts) else len(self.text)


class Pos:
    """Where something stands: the anchor (1-based line and column, e.g. an operator or a
    function's name) and the character span [start, end) of the whole expression.

    A plain class rather than a dataclass: one is made per token and per equation, and this
    is four times cheaper to make. Treat it as immutable."""

    __slots__ = ("line", "column", "start", "end")

    def __init__(self, line: int, column: int, start: int = -1, end: int = -1):
        self.line = line
        self.column = column
        self.start = start
        self.end = end

    def _key(self) -> tuple:
        return self.line, self.column, self.start, self.end

    def __eq__(self, other) -> bool:
        return isinstance(other, Pos) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Pos(line={self.line}, column={self.column}, start={self.start}, end={self.end})"

    def __str__(self) -> str:
        return f"{self.line}:{self.column}"


class LoopPass(Pos):
    """A pass of an unrolled loop, as a frame of an equation's stack (beside the call sites of the
    functions being expanded): the loop's place, the pass (from 1) and what its names are bound
    to (`epoch = 3`), so that a diagnostic says in which pass a value first went wrong."""

    __slots__ = ("number", "binding")

    def __init__(self, pos: Pos, number: int, binding: str = ""):
        super().__init__(pos.line, pos.column, pos.start, pos.end)
        self.number = number
        self.binding = binding


class GradcliError(Exception):
    """A user error: bad syntax, unknown name, shape mismatch, unreadable value, ...

    Rendered as `FILE:LINE:COL: error: message`, the source line and a caret; exit code 2.
    `source` may be filled in by the caller that knows which text `pos` refers to.
    """

    exit_code = 2

    def __init__(self, message: str, pos: Pos | None = None, source: Source | None = None,
                 note: str | None = None):
        super().__init__(message)
        self.message = message
        self.pos = pos
        self.source = source
        self.note = note

    def at(self, source: Source) -> GradcliError:
        """Attach the source text, unless a more specific one is already attached."""
        if self.source is None:
            self.source = source
        return self


class OptionError(GradcliError):
    """An error about one argument of a library function, named in the message as `{option}`
    (the library writes the argument's own name, `wrt`; a caller may name it its own way, as
    the command line does with `--wrt`, through `name_option`)."""

    def __init__(self, template: str, option: str, pos=None, source=None, note=None):
        self.template, self.option = template, option
        super().__init__(template.replace("{option}", option), pos, source, note)

    def name_option(self, spelled: str) -> None:
        self.message = self.template.replace("{option}", spelled)
        self.args = (self.message,)


class ShapeError(Exception):
    """Raised by an op's shape rule; the graph builder re-raises it as a GradcliError at the
    equation's position."""


_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


CARET_WINDOW = 100  # characters shown on each side of the anchor of a long line


def caret_lines(source: Source, pos: Pos) -> list[str]:
    """The source line of `pos` and, under it, `~` along the span and `^` at the anchor. A
    long line is shown as a window around the anchor (`…` where it is cut), so the cost of a
    message does not grow with the line: 14,000 messages on one 300 KB line stay small."""
    text = source.line_text(pos.line)
    if not text.strip():
        return []
    col = max(1, min(pos.column, len(text) + 1))
    begin = max(0, col - 1 - CARET_WINDOW)
    end = min(len(text), col - 1 + CARET_WINDOW)
    shown = text[begin:end]
    # one column per character, so the caret lines up; control characters (a form feed, U+2028)
    # would move the terminal's cursor, so they are shown as U+FFFD
    expanded = _UNPRINTABLE.sub("\ufffd", shown.expandtabs(1))
    lead = "…" if begin else ""
    tail = "…" if end < len(text) else ""
    anchor = col - 1 - begin + len(lead)
    under = [" "] * (len(lead) + len(expanded))
    if pos.start >= 0 and pos.end > pos.start:
        line_start = source.line_start(pos.line)
        first = max(pos.start - line_start - begin, 0) + len(lead)
        last = min(pos.end - line_start - begin, len(expanded)) + len(lead)
        for i in range(first, max(first, last)):
            under[i] = "~"
    while len(under) <= anchor:
        under.append(" ")
    under[anchor] = "^"
    return [lead + expanded + tail, "".join(under).rstrip()]


def format_error(err: GradcliError) -> str:
    """Plain-text rendering of a user error (no colour): header, source line, caret, note."""
    if err.pos is not None and err.source is not None:
        head = f"{err.source.name}:{err.pos.line}:{err.pos.column}: error: {err.message}"
        lines = [head] + ["    " + ln for ln in caret_lines(err.source, err.pos)]
    elif err.source is not None:
        lines = [f"{err.source.name}: error: {err.message}"]
    else:
        lines = [f"gradcli: error: {err.message}"]
    if err.note:
        lines.append(f"note: {err.note}")
    return "\n".join(lines)
