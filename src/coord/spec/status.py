"""What a work-package document's queue looks like now: the document alone, or with the board.

Shared by ``coord spec status`` and the MCP tool ``spec_status``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from coord.spec.document import SpecDocument
from coord.spec.lint import claimable


def status(
    doc: SpecDocument, board: dict[str, dict[str, Any]] | None, shown_path: str
) -> dict[str, Any]:
    """``board``: the board's items for this document by package id (as the HTTP API shows
    them), or None when it was never imported: then the predicate is the document's alone."""
    reserved = reserved_by(doc)
    done = {p.id for p in doc.packages if p.done}
    if board is not None:
        done |= {pid for pid, item in board.items() if item["state"] == "done"}
    packages = []
    for p in doc.packages:
        item = board.get(p.id) if board is not None else None
        entry: dict[str, Any] = {
            "id": p.id,
            "title": p.title,
            "done": p.id in done,
            "dependencies": p.dependencies,
            "waiting_on": [d for d in p.dependencies if d not in done],
            "files": p.files,
            "reserved_by": reserved.get(p.id),
            "line": p.line,
        }
        if board is not None:
            entry["board"] = (
                None
                if item is None
                else {
                    "item": item["id"],
                    "state": item["state"],
                    "claimed_by": item["claimed_by"] if item["state"] != "pending" else None,
                    "ready": item["ready"],
                }
            )
        packages.append(entry)
    if board is None:
        ready = claimable(doc)
    else:
        # the document's rules (reservation lines, overlapping files) with the boxes as the
        # board has them, and the board's own (claims, held files)
        merged = replace(doc, packages=[replace(p, done=p.id in done) for p in doc.packages])
        board_ready = {e["id"] for e in packages if e["board"] is None or e["board"]["ready"]}
        ready = [pid for pid in claimable(merged) if pid in board_ready]
    return {
        "spec": shown_path,
        "imported": board is not None,
        "packages": packages,
        "claimable": ready,
    }


def reserved_by(doc: SpecDocument) -> dict[str, str]:
    """Who each package is reserved for by the document's own lines (a track marker counts
    for the track's open packages)."""
    by_track = {r.track: r.user for r in doc.reservations if r.package is None and r.track}
    found = {p.id: by_track[p.track] for p in doc.packages if p.track in by_track and not p.done}
    found.update({r.package: r.user for r in doc.reservations if r.package is not None})
    return found
