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
* ``tick`` turns the boxes of entries into ``[x]``: the ``[ ]`` of the line that the parser
  reads as that package's unticked entry (``coord.spec.syntax.ENTRY``), nothing else. Both
  ``coord spec sync`` (in the working tree) and ``coord git done`` (on the remote's tip) tick
  with it.
* ``progress_*`` append to a progress file (``coord.spec.progress``), creating it.

The edits read a line with the parser's own patterns, so they change what the parser read.
"""

from __future__ import annotations

from coord.errors import CoordError, InvalidInput
from coord.spec import progress
from coord.spec.syntax import (
    ENTRY,
    PACKAGE_RESERVATION,
    mask_code,
    parse_id_list,
    reservation_line,
)

_BOM = "\ufeff"

__all__ = [
    "progress_append",
    "progress_tick_line",
    "reservation_line",
    "reserve",
    "tick",
    "unreserve",
]


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


def tick(text: str, entries: list[tuple[int, str]]) -> str:
    """``text`` with the boxes of these ``(line, package id)`` entries ticked, every other
    character kept (CRLF, a byte order mark, trailing blanks).

    ``InvalidInput`` (naming the line) when a line is not that package's unticked entry: the
    text changed since it was read; nothing is ticked then."""
    lines = text.split("\n")
    for number, package_id in entries:
        line = lines[number - 1] if 0 < number <= len(lines) else ""
        offset = len(line) - len(line.removeprefix(_BOM).lstrip(" \t"))
        entry = ENTRY.fullmatch(line[offset:].rstrip())
        if entry is None or entry["id"] != package_id or entry["mark"] != " ":
            raise InvalidInput(
                f"line {number} no longer holds the unticked entry of {package_id}",
                line=number,
                package=package_id,
            )
        at = offset + entry.start("mark")
        lines[number - 1] = line[:at] + "x" + line[at + 1 :]
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
    masked = mask_code(line)
    matches = list(PACKAGE_RESERVATION.finditer(masked))
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
