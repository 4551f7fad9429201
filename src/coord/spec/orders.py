"""Ownership tables and merge orders: who owns which surface, in which order packages merge.

**Ownership tables**: a table whose header has a column containing "package" (or, failing
that, "owner", but not the first column) maps the first column's text (the second's, when
the ids are in the first) to the ids of that column (``C1–C3``, ``I5/H0``, ``A, B``). Rows
whose cell is not a list of ids are skipped.

**Merge orders**: every chain ``A → B → C`` (or ``->``) on one line, bold or not; each run of
two or more tokens that are packages of the document or shaped like one (letters then digits)
is an order. ``coord spec status --json`` shows both.
"""

from __future__ import annotations

import re

from coord.spec.syntax import ID_SHAPED, TOKEN, IdBudget, parse_id_list

_CHAIN = re.compile(rf"(?<![\w.-]){TOKEN}(?:[ \t]*(?:→|->)[ \t]*{TOKEN})+")
_ARROW = re.compile(r"\s*(?:→|->)\s*")
_TABLE_SEPARATOR = re.compile(r"\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?")


def ownership(rows: list[str], budget: IdBudget | None = None) -> list[tuple[str, list[str]]]:
    """A Markdown table's (surface, package ids) rows; ``[]`` for any other table.
    ``budget``: the ids the document may still name."""
    if len(rows) < 3 or not _TABLE_SEPARATOR.fullmatch(rows[1]):
        return []
    header = [cell.casefold() for cell in _cells(rows[0])]
    column = next((i for i, cell in enumerate(header) if "package" in cell), None)
    if column is None:
        column = next((i for i, cell in enumerate(header) if "owner" in cell and i), None)
    if column is None:
        return []
    surface_column = 1 if column == 0 else 0
    found = []
    for row in rows[2:]:
        cells = _cells(row)
        if len(cells) <= max(column, surface_column):
            continue
        ids = parse_id_list(cells[column], slashes=True, budget=budget)
        if ids:
            found.append((cells[surface_column], ids))
    return found


def chains(text: str) -> list[list[str]]:
    """The arrow chains of one line, as their tokens (``id_runs`` picks the orders)."""
    if "→" not in text and "->" not in text:
        return []
    return [_ARROW.split(chain) for chain in _CHAIN.findall(text)]


def id_runs(tokens: list[str], ids: set[str]) -> list[list[str]]:
    """The runs of two or more id-like tokens in an arrow chain."""
    runs: list[list[str]] = [[]]
    for token in tokens:
        if token in ids or ID_SHAPED.fullmatch(token):
            runs[-1].append(token)
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if len(run) >= 2]


def _cells(row: str) -> list[str]:
    row = row.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", row)]
