"""The minimal text edits of the protocol: add or remove a reservation line, tick a box.

Every function takes the text and 1-based line numbers as ``coord.spec.parse`` counts them
(lines end at ``\\n``; a ``\\r`` before it stays part of the line) and changes nothing else:

* ``reserve`` inserts exactly one line, ``**Reserved: ID by @user.**``, directly above the
  entry, with the entry's line ending. ``unreserve`` of that line restores the text byte for
  byte.
* ``unreserve`` removes a reservation: the whole line when the line is that one reservation
  (with any prose after it, as in ``**Reserved: L1 by @x.** Other agents must not pick
  L1.``), and then one of two blank lines it leaves side by side; only the id when the line
  reserves several (``**Reserved: A, B by @x.**`` → ``**Reserved: B by @x.**``); only the bold
  span when the line says more before it.
* ``tick`` turns the entry's ``[ ]`` into ``[x]``.
* ``progress_*`` append to a progress file (``coord.spec.progress``), creating it.
"""

from __future__ import annotations

import re

from coord.errors import CoordError
from coord.spec import progress
from coord.spec.parse import _PACKAGE_RESERVATION, parse_id_list  # the parser's own rule

_CODE_SPAN = re.compile(r"`[^`\n]*`")
_BOX = re.compile(r"([ \t]*(?:[-*+]|\d+[.)])[ \t]+)\[ \]")
_BOM = "\ufeff"


def reservation_line(package_id: str, user: str) -> str:
    return f"**Reserved: {package_id} by @{user}.**"


def reserve(text: str, entry_line: int, package_id: str, user: str) -> str:
    lines = text.split("\n")
    index = entry_line - 1
    entry = lines[index]
    new = reservation_line(package_id, user) + ("\r" if entry.endswith("\r") else "")
    if index == 0 and entry.startswith(_BOM):
        lines[0] = entry[1:]
        new = _BOM + new
    lines.insert(index, new)
    return "\n".join(lines)


def unreserve(text: str, targets: list[tuple[int, str, str | None]]) -> str:
    """Remove the reservations of ``(line, package id, user or None for anyone)``."""
    lines = text.split("\n")
    for line_number, package_id, user in sorted(set(targets), reverse=True):
        index = line_number - 1
        replaced = _without(lines[index], package_id, user)
        if replaced is None:
            if index == 0 and lines[0].startswith(_BOM) and len(lines) > 1:
                lines[1] = _BOM + lines[1]
            del lines[index]
            if 0 < index < len(lines) and _blank(lines[index - 1]) and _blank(lines[index]):
                del lines[index]  # the line stood alone between blank lines: keep one
        else:
            lines[index] = replaced
    return "\n".join(lines)


def tick(text: str, entry_line: int, package_id: str) -> str:
    lines = text.split("\n")
    index = entry_line - 1
    line = lines[index]
    box = _BOX.match(line.removeprefix(_BOM))
    if box is None or package_id not in line:
        raise CoordError(f"line {entry_line} is not the unticked entry of {package_id}")
    offset = len(line) - len(line.removeprefix(_BOM))
    at = offset + box.end(1)
    lines[index] = line[:at] + "[x]" + line[at + 3 :]
    return "\n".join(lines)


def progress_append(text: str | None, doc_name: str, line: str) -> str:
    """``line`` at the end of a progress file (a new one starts with a short header)."""
    if text is None:
        text = progress.header(doc_name)
    elif text and not text.endswith("\n"):
        text += "\n"
    return text + line + "\n"


def progress_tick_line(package_id: str) -> str:
    return f"- [x] {package_id}"


def _without(line: str, package_id: str, user: str | None) -> str | None:
    """The line without that reservation, or None when the whole line should go."""
    masked = _CODE_SPAN.sub(lambda m: "x" * len(m.group(0)), line)
    matches = list(_PACKAGE_RESERVATION.finditer(masked))
    for match in matches:
        ids = parse_id_list(match["ids"]) or []
        if package_id not in ids or (user is not None and match["user"] != user):
            continue
        rest = [i for i in ids if i != package_id]
        if rest:
            start, end = match.span("ids")
            return line[:start] + ", ".join(rest) + line[end:]
        if len(matches) == 1 and not masked[: match.start()].strip(" \t" + _BOM):
            return None
        start, end = match.span()
        if end < len(line) and line[end] == " ":
            end += 1
        elif start > 0 and line[start - 1] == " ":
            start -= 1
        return line[:start] + line[end:]
    raise CoordError(f"no reservation of {package_id} on this line: {line.strip()!r}")


def _blank(line: str) -> bool:
    return not line.strip()
