"""What `coord uninstall` changes: every file `coord init` wired given back, from its record.

- a file whose content is still exactly what init wrote is restored byte for byte (or
  deleted, when init created it);
- a file changed since loses only coord's entries or block, structurally (JSON entries equal
  to what init added; hooks running coord's command; the marked block), and a file init
  created is deleted when nothing else is left in it;
- directories init created (``.claude/``, ``.codex/``, ...) are removed when empty;
- the board (``.coord/board.db`` etc.) stays.

As for init, all or nothing: a file that cannot be read refuses the run, and nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from coord.errors import InvalidInput
from coord.wiring import json_merge, text_blocks
from coord.wiring.plan import Change, b64, key_of, path_of, read, unb64

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@dataclass
class Undo:
    changes: list[tuple[Change, str]] = field(default_factory=list)  # with "restore" etc.
    removable_dirs: list[str] = field(default_factory=list)  # deepest first
    notes: list[str] = field(default_factory=list)


def plan_uninstall(root: Path, record: dict[str, Any]) -> Undo:
    undo = Undo()
    problems: list[str] = []
    for key, rec in record["files"].items():
        try:
            change = _undo_file(root, key, rec, undo.notes)
        except InvalidInput as err:
            problems.append(err.message)
            continue
        if change is not None:
            undo.changes.append(change)
    if problems:
        raise InvalidInput("\n".join(problems))
    deleted = {c.path for c, action in undo.changes if action == "delete"}
    for key in sorted(record.get("dirs", []), key=lambda k: k.count("/"), reverse=True):
        path = path_of(root, key)
        if path.is_dir() and all(
            p in deleted or key_of(root, p) in undo.removable_dirs for p in path.iterdir()
        ):
            undo.removable_dirs.append(key)
    return undo


def _undo_file(
    root: Path, key: str, rec: dict[str, Any], notes: list[str]
) -> tuple[Change, str] | None:
    path = path_of(root, key)
    current = read(key, path)
    if current is None:
        notes.append(f"{key}: already gone")
        return None
    written = rec.get("written")
    if rec.get("restorable", True) and written is not None and b64(current) == written:
        if rec.get("created"):
            return Change(key, path, current, None), "delete"
        return Change(key, path, current, unb64(rec.get("original"))), "restore"
    if rec.get("kind") == "json":
        after, empty = json_merge.remove(key, current, rec)
    else:
        after, empty = text_blocks.remove_block(key, current, rec.get("style", "hash"))
    if rec.get("created") and empty:
        return Change(key, path, current, None), "delete"
    if after != current:
        notes.append(f"{key}: changed since `coord init`; took out only coord's part")
        return Change(key, path, current, after), "modify"
    notes.append(f"{key}: no coord entries left in it")
    return None
