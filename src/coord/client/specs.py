"""A design document's queue as an agent sees it: the document's rules merged with the board.

One listing for ``coord spec status`` (and ``sync``) and the MCP tool ``spec_status``. The
predicate itself is the document protocol's (``coord.spec``); what is written once here is how a
face finds the board's items of a document: by its repository path, page by page, and under
the ids the document gives them. A document imported with ``--prefix P`` has items keyed
``P`` + package id; when the caller does not say the prefix, it is read off those keys, so
a package held on the board is never shown as free because its key was not recognised.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from coord.client import paths
from coord.client.flow import Session
from coord.spec.parse import parse_file
from coord.spec.protocol import working_tree
from coord.spec.status import status as merged_status

TYPE_CHECKING = False
if TYPE_CHECKING:
    from coord.spec.document import SpecDocument

PAGE = 1000


def status(
    session: Session | None,
    given: str,
    *,
    prefix: str | None = None,
    doc: SpecDocument | None = None,
    as_typed: bool = True,
) -> dict[str, Any]:
    """The document ``given`` (a path as the agent typed it) with the board's claims, done
    items and held files; the document alone when there is no board (``session`` None) or it
    was never imported. ``doc``: the document already parsed by the caller. The listing names
    the document ``as_typed``, or else by its repository path."""
    if session is None:
        return merged_status(doc or parse_file(given), None, given)
    spec = session.document_path(given)
    if doc is None:
        doc = parse_file(paths.on_disk(session.board_dir, spec, workdir=session.workdir))
    board = board_items(session, spec, doc, prefix=prefix)
    # the board's own reading of its repository's tree, so both answer alike
    tree = working_tree(session.board_dir.parent)
    return merged_status(doc, board, given if as_typed else spec, tree)


def board_items(
    session: Session, spec: str, doc: SpecDocument, *, prefix: str | None = None
) -> dict[str, dict[str, Any]] | None:
    """The board's items of the document ``spec`` (its repository path) by package id, or
    None if it was never imported."""
    found: dict[str, dict[str, Any]] = {}
    after = 0
    while True:
        page = session.get("/v1/items", {"spec": spec, "limit": PAGE, "after": after})["items"]
        found.update((item["key"], item) for item in page)
        if len(page) < PAGE:
            break
        after = page[-1]["id"]
    if not found:
        return None
    ids = {p.id for p in doc.packages}
    if not prefix:
        prefix = imported_prefix(found, ids)
    return {key.removeprefix(prefix): item for key, item in found.items()}


def imported_prefix(keys: Any, ids: set[str]) -> str:
    """The prefix the document was imported with, read off its items' keys: the string that,
    put before one of the document's package ids, gives the most keys ("" on a tie)."""
    counts: Counter[str] = Counter()
    for key in keys:
        for cut in range(len(key)):
            if key[cut:] in ids:
                counts[key[:cut]] += 1
    if not counts:
        return ""
    best = max(counts.values())
    return min((p for p, n in counts.items() if n == best), key=len)
