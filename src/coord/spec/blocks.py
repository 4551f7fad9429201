"""Which lines of a Markdown document are text a reader sees: code and comments are not.

A document may show the package template in an example, or comment a package out; neither is
a package, a reservation or a tick. ``lines`` walks the document once and says of each line:

* ``TEXT`` — Markdown text, with HTML comments (``<!-- … -->``, on one line or across
  several) taken out; a line wholly inside a comment is not given at all. ``<!--`` inside
  backticks is text;
* ``FENCE`` — a line of a fenced code block (```` ``` ```` or ``~~~``, three or more; closed
  by the same character at least as long, alone on its line; an unclosed fence runs to the
  end), its fence lines included; ``opens`` marks the first;
* ``CODE`` — an indented code block: after a blank line (or a heading, or the start), four
  or more columns deeper than the text of the list item it stands in (than the margin,
  outside lists). Lines indented under a list item (a package entry is one) less than that
  are the item's own text.

Lines are numbered from 1 at each ``\\n`` (a ``\\r`` before it is dropped with the trailing
blanks), so the numbers are those every message and edit uses.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

TEXT, FENCE, CODE = "text", "fence", "code"

BULLET = re.compile(r"(?:[-*+]|\d+[.)])(?:[ \t]+|$)")
_FENCE = re.compile(r"(`{3,}|~{3,})")
_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_SPAN_OR_COMMENT = re.compile(r"`[^`\n]*`|<!--")
_CODE_INDENT = 4
_MARKER_STARTS = frozenset("-*+0123456789")


@dataclass(slots=True)
class Line:
    number: int
    text: str  # without trailing blanks; TEXT: without its HTML comments
    kind: str  # TEXT, FENCE or CODE
    indent: int  # columns of leading blanks (``indent_width``)
    opens: bool = False  # FENCE: the opening fence line


def lines(text: str) -> Iterator[Line]:
    """Every line of ``text`` a reader needs, in order (see the module docstring)."""
    return _Scanner().scan(text)


def indent_width(line: str) -> int:
    """Columns of leading blanks, a tab reaching the next multiple of four."""
    lead = line[: len(line) - len(line.lstrip(" \t"))]
    if "\t" not in lead:
        return len(lead)
    width = 0
    for char in lead:
        width = width + 4 - width % 4 if char == "\t" else width + 1
    return width


class _Scanner:
    def __init__(self) -> None:
        self.fence: str | None = None  # the open fence's marker
        self.comment = False  # inside <!-- … --> spanning lines
        self.items: list[int] = []  # content columns of the open list items, outermost first
        self.after_break = True  # the last line ends no paragraph: start, blank, heading, code

    def scan(self, text: str) -> Iterator[Line]:
        for number, raw in enumerate(text.removeprefix("\ufeff").split("\n"), start=1):
            line = raw.rstrip()
            if self.fence is not None:
                stripped = line.lstrip()
                if stripped.startswith(self.fence) and not stripped.strip(self.fence[0]):
                    self.fence = None
                    self.after_break = True
                yield Line(number, line, FENCE, indent_width(line))
                continue
            if self.comment or "<!--" in line:
                visible = self._uncomment(line)
                if not visible.strip() and line.strip():
                    continue  # all comment: as if the line were not there
                line = visible.rstrip()
            yield self._classify(number, line)

    def _classify(self, number: int, line: str) -> Line:
        stripped = line.lstrip()
        if not stripped:
            self.after_break = True
            return Line(number, line, TEXT, 0)
        indent = indent_width(line)
        if self.after_break:
            self._close_items(indent)  # less indented than an item's text: out of it
            if indent >= self._margin() + _CODE_INDENT:
                return Line(number, line, CODE, indent)  # after_break stays: the code runs on
        first = stripped[0]
        if first in "`~" and indent < self._margin() + _CODE_INDENT:
            fence = _FENCE.match(stripped)
            if fence is not None:
                self._close_items(indent)  # a fence is never a lazy continuation
                self.fence = fence.group(1)
                return Line(number, line, FENCE, indent, opens=True)
        marker = BULLET.match(stripped) if first in _MARKER_STARTS else None
        if marker is not None:
            self._close_items(indent)  # a sibling or an outer item ends the inner ones
            self.items.append(indent + marker.end())
        elif first == "#" and _HEADING.match(line):
            self.items.clear()
            self.after_break = True
            return Line(number, line, TEXT, indent)
        self.after_break = False
        return Line(number, line, TEXT, indent)

    def _margin(self) -> int:
        """Where the text of the innermost open item starts (0 outside lists)."""
        return self.items[-1] if self.items else 0

    def _close_items(self, indent: int) -> None:
        while self.items and indent < self.items[-1]:
            self.items.pop()

    def _uncomment(self, line: str) -> str:
        """The line without its HTML comments; remembers a comment left open."""
        visible: list[str] = []
        position = 0
        while True:
            if self.comment:
                end = line.find("-->", position)
                if end < 0:
                    return "".join(visible)
                position = end + 3
                self.comment = False
            found = _SPAN_OR_COMMENT.search(line, position)
            if found is None:
                visible.append(line[position:])
                return "".join(visible)
            if found.group() == "<!--":
                visible.append(line[position : found.start()])
                position = found.start() + 2  # so that `<!-->` and `<!--->` close at once
                self.comment = True
            else:  # a code span: `<!--` inside it is text
                visible.append(line[position : found.end()])
                position = found.end()
