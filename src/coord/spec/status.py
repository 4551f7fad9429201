"""What a work-package document's queue looks like now: the document alone, or with the board.

Shared by ``coord spec status``, the MCP tool ``spec_status`` and ``coord git status``. The
rules are ``coord.spec.protocol``'s; this module only lays them out as JSON.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from coord.spec.document import SpecDocument
from coord.spec.protocol import IsDir, Rules


def status(
    doc: SpecDocument,
    board: dict[str, dict[str, Any]] | None,
    shown_path: str,
    is_dir: IsDir | None = None,
) -> dict[str, Any]:
    """``board``: the board's items for this document by package id (as the HTTP API shows
    them), or None when it was never imported: then the predicate is the document's alone.

    Each package says why it cannot be claimed now (``blocked_by``: the protocol's reasons,
    then ``board`` when the board's own rules hold it back: a claim, held files, a
    dependency open on the board); ``claimable`` lists those with no reason. The document's
    tracks, ownership tables and merge orders come along as parsed."""
    rules = Rules(doc, is_dir)
    reserved = rules.reserved_by()  # by the document's own boxes
    done = {p.id for p in doc.packages if p.done}
    if board is not None:
        done |= {pid for pid, item in board.items() if item["state"] == "done"}
        # the document's rules (reservation lines, overlapping files) with the boxes as the
        # board has them
        rules = Rules(_with_boxes(doc, done), is_dir)
    verdicts = rules.verdicts()  # one per id (lint reports an id used twice)
    blocked_by = {v.package.id: v.reasons() for v in verdicts}
    for v in verdicts:
        item = board.get(v.package.id) if board is not None else None
        if item is not None and not item["ready"] and not v.package.done:
            blocked_by[v.package.id].append({"reason": "board", "state": item["state"]})
    packages = []
    for p in doc.packages:
        entry: dict[str, Any] = {
            "id": p.id,
            "title": p.title,
            "done": p.id in done,
            "dependencies": p.dependencies,
            "waiting_on": [d for d in p.dependencies if d not in done],
            "files": p.files,
            "reserved_by": reserved.get(p.id),
            "line": p.line,
            "blocked_by": blocked_by[p.id],
        }
        if board is not None:
            item = board.get(p.id)
            entry["board"] = None if item is None else _board_view(item)
        packages.append(entry)
    return {
        "spec": shown_path,
        "imported": board is not None,
        "packages": packages,
        "claimable": [pid for pid, reasons in blocked_by.items() if not reasons],
        "tracks": [
            {
                "id": t.id,
                "title": t.title,
                "line": t.line,
                "files": t.files,
                "merge_order": t.merge_order,
            }
            for t in doc.tracks
        ],
        "ownership": [{"surface": surface, "packages": ids} for surface, ids in doc.ownership],
        "merge_orders": doc.merge_orders,
    }


def _with_boxes(doc: SpecDocument, done: set[str]) -> SpecDocument:
    return replace(doc, packages=[replace(p, done=p.id in done) for p in doc.packages])


def _board_view(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "item": item["id"],
        "state": item["state"],
        "claimed_by": item["claimed_by"] if item["state"] != "pending" else None,
        "ready": item["ready"],
    }
