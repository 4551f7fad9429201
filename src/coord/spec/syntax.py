"""The shapes of a work-package document's lines, read and written by the same rules.

The parser (``coord.spec.parse``) reads an entry, a dependency list and a reservation line
with these patterns; the edits (``coord.spec.edit``) find the box to tick and the
reservation to remove with the same ones, and write a reservation line that they read back.

Every pattern runs in time linear in its line: a document is anyone's text, and a crafted
line once held the parser for minutes. Where a run of blanks or id characters could be
split two ways, the quantifier is possessive (``*+``: once taken, never given back).
"""

from __future__ import annotations

import re

from coord.errors import InvalidInput
from coord.limits import MAX_SPEC_IDS, MAX_SPEC_RANGE

ID = r"[A-Za-z][A-Za-z0-9_.-]*"
_ID = re.compile(ID)
# in running text an id does not end in "." or "-": "merge R0 → R3." is R3
TOKEN = r"[A-Za-z](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?"
ID_SHAPED = re.compile(r"[A-Za-z]+[0-9][A-Za-z0-9_.-]*")  # R3, QA1, C1b
# at most 9 digits: int() of thousands of digits is refused by Python itself (a traceback)
_RANGE = re.compile(
    r"(?P<prefix>[A-Za-z]+)(?P<first>\d{1,9})\s*[–—-]\s*(?P=prefix)?(?P<last>\d{1,9})"
)

CHECKBOX = r"(?:[-*+]|\d+[.)])[ \t]+\[(?P<mark>[ xX])\][ \t]+"
# possessive: the blanks around the dash are taken once (a title never starts with one), so a
# line with no closing ** is refused in one scan, not one per blank
ENTRY = re.compile(
    CHECKBOX
    + r"\*\*(?P<id>[A-Za-z][A-Za-z0-9_.-]*+)(?:[ \t]*+[—–][ \t]*+|[ \t]++-[ \t]++)"
    + r"(?P<title>.+?)\*\*(?P<rest>.*)"
)
# looks like a package but is not one: a bold id, an unbolded "R9 —", or a Dependencies field
NEAR_MISS = re.compile(
    CHECKBOX + r"(?:\*\*\s*[A-Za-z]+[0-9]|[A-Za-z]+[0-9]\S*\s+[—–-]\s|.*\bDependencies\s*:)",
    re.I,
)
ENTRY_SHAPE = "`- [ ] **ID — title.** Dependencies: A, B.` (or `Dependencies: none.`)"
DEPENDENCIES = re.compile(r"\bDependencies\s*:\s*(?P<value>.*)", re.I)

_USER = r"@(?P<user>[A-Za-z0-9][\w.-]*?)\.?\*\*"
PACKAGE_RESERVATION = re.compile(r"\*\*Reserved:[ \t]*(?P<ids>[^*@]+?)[ \t]+by[ \t]+" + _USER, re.I)
TRACK_RESERVATION = re.compile(r"\*\*(?:[^*@]*\s)?reserved:[ \t]*" + _USER, re.I)

CODE_SPAN = re.compile(r"`([^`\n]*)`")


def reservation_line(package_id: str, user: str) -> str:
    """The line that reserves one package, as ``coord git`` writes it."""
    return f"**Reserved: {package_id} by @{user}.**"


class IdBudget:
    """How many package ids a document may still name (``MAX_SPEC_IDS`` in all, a range
    counting each id it stands for); ``line`` is where the parser reads, for the refusal."""

    def __init__(self, path: str, limit: int = MAX_SPEC_IDS) -> None:
        self.path = path
        self.left = limit
        self.limit = limit
        self.line = 0

    def take(self, count: int) -> None:
        self.left -= count
        if self.left < 0:
            raise InvalidInput(
                f"{self.path}:{self.line}: the document names more than {self.limit} package ids "
                "(dependencies, reservations and ownership tables together; a range such as "
                f"A1–A999 counts each id); the limit is {self.limit}: split the document",
                path=self.path,
                line=self.line,
                limit=self.limit,
            )


def parse_id_list(
    text: str, *, slashes: bool = False, budget: IdBudget | None = None
) -> list[str] | None:
    """``"A, B and C1–C3"`` as ids, ``[]`` for "none", None if it is not a list of ids.
    ``budget``: what the document may still name (refused past it, before expanding)."""
    text = text.strip().strip("*").strip()
    if text.casefold() == "none":
        return []
    separators = r",|\band\b|/" if slashes else r",|\band\b"
    ids: list[str] = []
    for piece in re.split(separators, text):
        token = piece.strip().strip("`*").strip()
        if not token:
            continue
        expanded = _expand_range(token, budget)
        if expanded is not None:
            ids.extend(expanded)
        elif _ID.fullmatch(token):
            if budget is not None:
                budget.take(1)
            ids.append(token)
        else:
            return None
    return ids or None


def mask_code(text: str) -> str:
    """``text`` with each backticked span blanked out to the same length (quoted text never
    counts: a document may quote the reservation template)."""
    return CODE_SPAN.sub(lambda match: "`" + "x" * (len(match.group(0)) - 2) + "`", text)


def _expand_range(token: str, budget: IdBudget | None) -> list[str] | None:
    match = _RANGE.fullmatch(token)
    if match is None:
        return None
    first, last = int(match["first"]), int(match["last"])
    if not 0 <= last - first <= MAX_SPEC_RANGE:
        return None
    if budget is not None:
        budget.take(last - first + 1)
    return [f"{match['prefix']}{n}" for n in range(first, last + 1)]
