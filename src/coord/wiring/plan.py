"""What `coord init` changes, computed whole before a byte is written, and the record it keeps.

**All or nothing**: every change is computed first; a file that cannot be read (malformed JSON
or TOML, a marker without its end) refuses the whole run with one line naming it, and nothing
is written. ``--dry-run`` prints the diffs of the same plan and writes nothing.

``.coord/wiring.json`` records, per file: whether init created it, its bytes before init
(base64), the bytes init last wrote, and coord's entries in it; and the directories init
created. ``coord uninstall`` reads it (``wiring.uninstall``).
"""

from __future__ import annotations

import base64
import copy
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from coord.errors import InvalidInput
from coord.fast import board_files, files
from coord.wiring import json_merge, text_blocks
from coord.wiring.json_merge import JsonSpec
from coord.wiring.text_blocks import BlockSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RECORD_NAME = "wiring.json"


@dataclass
class Target:
    """A file coord wants its part in, and how that part is written."""

    key: str  # the path as shown and recorded: relative to the root, or absolute outside it
    path: Path
    spec: JsonSpec | BlockSpec


@dataclass
class Change:
    key: str
    path: Path
    before: bytes | None
    after: bytes | None
    mode: int = 0o644  # for a file created; one that exists keeps its own

    @property
    def action(self) -> str:
        if self.before is None:
            return "create"
        if self.after is None:
            return "delete"
        return "modify"


@dataclass
class Plan:
    changes: list[Change] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def key_of(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def path_of(root: Path, key: str) -> Path:
    return Path(key) if os.path.isabs(key) else root / key


def read(key: str, path: Path) -> bytes | None:
    """The file's bytes, None when there is none; a refusal when it cannot be read."""
    if path.is_dir():
        raise InvalidInput(f"{key}: is a directory, not a file; nothing was written")
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise InvalidInput(f"{key}: cannot read it ({err}); nothing was written") from None


def b64(raw: bytes | None) -> str | None:
    return None if raw is None else base64.b64encode(raw).decode("ascii")


def unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def load_record(board_dir: Path) -> dict[str, Any]:
    path = board_dir / RECORD_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"version": 1, "files": {}, "dirs": []}
    except (OSError, ValueError) as err:
        raise InvalidInput(f"cannot read {path}: {err}; fix or delete it") from None
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        raise InvalidInput(f"{path} is not coord's wiring record; fix or delete it")
    data.setdefault("dirs", [])
    return data


def save_record(board_dir: Path, record: dict[str, Any]) -> None:
    """Written only when it changes: a second `coord init` touches nothing."""
    path = board_dir / RECORD_NAME
    new = json.dumps(record, indent=2) + "\n"
    try:
        old = path.read_text(encoding="utf-8")
    except OSError:
        old = None
    if new != old:
        files.write_atomic(path, new.encode("utf-8"), board_files.PRIVATE_FILE)


def plan_init(
    plan: Plan,
    root: Path,
    targets: list[Target],
    record: dict[str, Any],
    clients: list[str],
    shell: str,
) -> None:
    """Fill ``plan`` with the changes ``targets`` need and the record that will follow them;
    refuse (InvalidInput, one line a file) when any file cannot be read."""
    records: dict[str, Any] = copy.deepcopy(record.get("files", {}))
    dirs: list[str] = list(record.get("dirs", []))
    problems: list[str] = []
    for target in targets:
        rec = records.get(target.key)
        try:
            before = read(target.key, target.path)
            if isinstance(target.spec, JsonSpec):
                after, meta = json_merge.merge(target.key, before, target.spec, rec, plan)
                mode = 0o644
            else:
                after, has_block = text_blocks.apply_block(target.key, before, target.spec, plan)
                meta = {"kind": "block", "style": target.spec.style} if has_block else None
                mode = target.spec.mode
        except InvalidInput as err:
            problems.append(err.message)
            continue
        if after == before:
            plan.unchanged.append(target.key)
            if rec is not None and meta is not None:
                rec.update(meta)
            continue
        if before is None:
            rec = {"created": True, "original": None}
        elif rec is None:
            rec = {"created": False, "original": b64(before)}
        elif rec.get("written") != b64(before):
            rec["restorable"] = False  # changed by someone since init wrote it
        rec["written"] = b64(after)
        rec.update(meta or {})
        records[target.key] = rec
        plan.changes.append(Change(target.key, target.path, before, after, mode))
        for parent in _missing_dirs(root, target.path):
            key = key_of(root, parent)
            if key not in dirs:
                dirs.append(key)
    if problems:
        raise InvalidInput("\n".join(problems))
    plan.record = {
        "version": 1,
        "command": shell,
        "clients": sorted(set(record.get("clients", [])) | set(clients)),
        "files": records,
        "dirs": dirs,
    }


def _missing_dirs(root: Path, path: Path) -> list[Path]:
    out = []
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        out.append(parent)
        if parent == root:
            break
        parent = parent.parent
    return out


# --- carrying it out, or showing it ----------------------------------------------------------


def write(change: Change) -> None:
    """Carry out one change; a symlink is written through (or its target deleted)."""
    target = change.path.resolve() if change.path.is_symlink() else change.path
    if change.after is None:
        target.unlink(missing_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(target, change.after, None if target.exists() else change.mode)


def _diff(change: Change) -> str:
    import difflib

    def lines(raw: bytes | None) -> list[str]:
        if raw is None:
            return []
        out = raw.decode("utf-8", errors="replace").splitlines(keepends=True)
        if out and not out[-1].endswith("\n"):
            out[-1] += "\n\\ No newline at end of file\n"
        return out

    old = "/dev/null" if change.before is None else f"a/{change.key}"
    new = "/dev/null" if change.after is None else f"b/{change.key}"
    return "".join(difflib.unified_diff(lines(change.before), lines(change.after), old, new))


_DONE = {"create": "created", "modify": "modified", "delete": "deleted", "restore": "restored"}


def report(
    changes: list[tuple[Change, str]], warnings: list[str], notes: list[str], dry_run: bool
) -> tuple[list[dict[str, Any]], list[str]]:
    """(a JSON document a change, the lines to print); a dry run shows each change's diff."""
    docs = []
    text = []
    for change, action in changes:
        doc: dict[str, Any] = {"path": change.key, "action": action}
        if dry_run:
            doc["diff"] = _diff(change)
        docs.append(doc)
        text.append(f"{'would ' + action if dry_run else _DONE[action]} {change.key}")
        if dry_run:
            text.append(doc["diff"].rstrip("\n"))
    text += [f"warning: {w}" for w in warnings]
    text += [f"note: {n}" for n in notes]
    return docs, text
