"""Coord's entries in a JSON file it does not own: added beside the user's, taken out alone.

Used for ``.mcp.json``, ``.claude/settings.json``, ``.codex/hooks.json``,
``.gemini/settings.json``, ``.cursor/mcp.json`` and ``.cursor/hooks.json``. The file is parsed
and coord's entries added only where no equal entry is there yet; it is written back with
two-space indentation and a final newline, the user's keys in their order, and not rewritten
at all when nothing changes. Two kinds of entry:

- a **key**: an object member (``mcpServers.coord``). A member of that name that is not
  coord's is left alone, with a warning; one coord wrote with another ``--command`` is
  replaced.
- a **hook**: a hook group appended to a list (``hooks.PreToolUse``). It counts as there when
  some group of that event already runs the same command.

What was added is recorded (``entries`` and the objects and lists init had to create,
``created_keys``) so that ``coord uninstall`` takes out exactly that, even from a file edited
since.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

from coord.errors import InvalidInput

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from coord.wiring.plan import Plan

FIX_AND_INIT = "fix it (or move it away) and run `coord init` again: nothing was written"
FIX_AND_UNINSTALL = (
    "fix it (or take coord's entries out by hand) and run `coord uninstall` again: "
    "nothing was removed"
)


@dataclass
class JsonEntry:
    id: str  # stable across runs: the record finds the entry an earlier init added by it
    kind: str  # "key": an object member at `path`; "hook": a hook group in the list at `path`
    path: tuple[str, ...]
    value: Any
    command: str = ""  # for a hook: the command that makes a group ours


@dataclass
class JsonSpec:
    entries: list[JsonEntry] = field(default_factory=list)


def parse(key: str, raw: bytes | None, doing: str) -> dict[str, Any]:
    """The file's top-level object ({} for a missing or blank file); ``doing`` ends a refusal."""
    if raw is None:
        return {}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{key}: not UTF-8 text; {doing}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as err:
        where = ""
        if isinstance(err, json.JSONDecodeError):
            where = f" at line {err.lineno}, column {err.colno}: {err.msg}"
        if "//" in text or "/*" in text:
            where += " (comments are not JSON: coord reads plain JSON only)"
        raise InvalidInput(f"{key}: not valid JSON{where}; {doing}") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{key}: holds a JSON {type(data).__name__}, not an object; {doing}")
    return data


def dump(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _walk(
    data: dict[str, Any], path: tuple[str, ...], key: str, created: list[list[str]] | None
) -> dict[str, Any]:
    """The object at ``path``, made (and noted in ``created``) where missing when asked."""
    node = data
    for depth, name in enumerate(path):
        if name not in node and created is not None:
            node[name] = {}
            created.append(list(path[: depth + 1]))
        child = node.get(name)
        if not isinstance(child, dict):
            shown = ".".join(path[: depth + 1])
            raise InvalidInput(
                f"{key}: `{shown}` is a {type(child).__name__}, not an object; fix it (or "
                "move the file away) and run `coord init` again: nothing was written"
            )
        node = child
    return node


def _hooks_of(group: Any) -> list[Any] | None:
    if isinstance(group, dict) and "hooks" not in group and "command" in group:
        return [group]  # Cursor's hooks.json: the entry is the hook itself
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return hooks if isinstance(hooks, list) else None


def _runs(groups: list[Any], command: str) -> bool:
    """Whether some group already runs ``command``: the user's own wiring counts."""
    return any(
        isinstance(hook, dict) and hook.get("command") == command
        for group in groups
        for hook in _hooks_of(group) or ()
    )


def merge(
    key: str, raw: bytes | None, spec: JsonSpec, rec: dict[str, Any] | None, plan: Plan
) -> tuple[bytes | None, dict[str, Any] | None]:
    """(the new bytes, what to record of coord's entries in them, or None when none are).

    ``rec`` is the record of an earlier init, whose entries may be replaced by new values."""
    data = parse(key, raw, FIX_AND_INIT)
    original = copy.deepcopy(data)
    prev = (rec or {}).get("entries", {})
    created: list[list[str]] = [list(k) for k in (rec or {}).get("created_keys", [])]
    ours: dict[str, Any] = {}
    for entry in spec.entries:
        before = prev.get(entry.id)
        mine = {"kind": entry.kind, "path": list(entry.path), "value": entry.value}
        if entry.kind == "hook":
            mine["command"] = entry.command
        parent = _walk(data, entry.path[:-1], key, created)
        name = entry.path[-1]
        if entry.kind == "key":
            if name not in parent:
                parent[name] = copy.deepcopy(entry.value)
                ours[entry.id] = mine
            elif parent[name] == entry.value:
                if before is not None:
                    ours[entry.id] = mine
            elif before is not None and parent[name] == before.get("value"):
                parent[name] = copy.deepcopy(entry.value)  # ours, from an earlier --command
                ours[entry.id] = mine
            else:
                shown = ".".join(entry.path)
                plan.warnings.append(
                    f"{key}: left `{shown}` as it is (it is not coord's); remove it and run "
                    "`coord init` again to have coord's"
                )
            continue
        if name not in parent:
            parent[name] = []
            created.append(list(entry.path))
        groups = parent[name]
        if not isinstance(groups, list):
            raise InvalidInput(
                f"{key}: `{'.'.join(entry.path)}` is a {type(groups).__name__}, not a list; "
                f"{FIX_AND_INIT}"
            )
        if _runs(groups, entry.command):
            if before is not None:
                ours[entry.id] = before if before.get("value") in groups else mine
            continue
        old = before.get("value") if before is not None else None
        if old is not None and old in groups:
            groups[groups.index(old)] = copy.deepcopy(entry.value)
        else:
            groups.append(copy.deepcopy(entry.value))
        ours[entry.id] = mine
    after = raw if data == original else dump(data)
    if not ours:
        return after, None
    unique = [list(k) for k in dict.fromkeys(tuple(k) for k in created)]
    return after, {"kind": "json", "entries": ours, "created_keys": unique}


def remove(key: str, raw: bytes, rec: dict[str, Any]) -> tuple[bytes, bool]:
    """Coord's recorded entries taken out; (the bytes, whether nothing else is left)."""
    data = parse(key, raw, FIX_AND_UNINSTALL)
    original = copy.deepcopy(data)
    for entry in rec.get("entries", {}).values():
        path = tuple(entry.get("path", ()))
        if not path:
            continue
        try:
            parent = _walk(data, path[:-1], key, None)
        except InvalidInput:
            continue
        name = path[-1]
        if entry.get("kind") == "key":
            if name in parent and parent[name] == entry.get("value"):
                del parent[name]
            continue
        groups = parent.get(name)
        if not isinstance(groups, list):
            continue
        if entry.get("value") in groups:
            groups.remove(entry["value"])
            continue
        command = entry.get("command")
        for group in list(groups):  # changed since: take out just the hook running coord
            hooks = _hooks_of(group)
            if hooks is None:
                continue
            kept = [h for h in hooks if not (isinstance(h, dict) and h.get("command") == command)]
            if len(kept) != len(hooks):
                if kept:
                    group["hooks"] = kept
                else:
                    groups.remove(group)
    for path in sorted((tuple(k) for k in rec.get("created_keys", [])), key=len, reverse=True):
        try:
            parent = _walk(data, path[:-1], key, None)
        except InvalidInput:
            continue
        if path[-1] in parent and parent[path[-1]] in ({}, []):
            del parent[path[-1]]
    if data == original:
        return raw, not data
    return dump(data), not data
