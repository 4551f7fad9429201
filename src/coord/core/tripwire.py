"""What got past the guard: an agent's tool call changed files another agent holds.

The after-tool hooks (``coord.hooks.aftercheck``) compare the held files of a working tree
with the snapshot taken just before the call (``coord.fast.tripwire``) and report what
changed here: one event, ``held_files_changed``, made by the agent whose call it was, naming
the command (or the tool and its path) and each file with its holder, whether coord put it
back, and where the overwritten version is kept. Every holder is in the event's
``mentions``, so the event reaches each holder's inbox the way an ``@name`` reply does.
"""

from __future__ import annotations

from typing import Any

from coord import model
from coord.core.context import BoardContext
from coord.errors import InvalidInput, TooLarge
from coord.limits import MAX_BODY, MAX_EVENT_TEXT, MAX_PATTERN, MAX_REPORTED_FILES

KIND = "held_files_changed"
# what happened to a held file, as the after-tool check saw it
CHANGES = ("modified", "deleted")
# the fields of one changed file in a report
FIELDS = ("path", "holder", "change", "restored", "kept", "why")
# a kept version is named by its SHA-256 (the snapshot store's file name)
_SHA_LENGTH = 64


class Tripwire:
    def __init__(self, ctx: BoardContext) -> None:
        self.ctx = ctx

    def report(
        self,
        agent: str,
        files: list[dict[str, Any]],
        command: str | None,
        tool: str | None,
        more: int,
    ) -> dict[str, Any]:
        """Record one report (already checked): the event's sequence number and details."""
        holders = sorted({f["holder"] for f in files} - {agent})
        restored = sum(1 for f in files if f["restored"])
        names = ", ".join(f"{f['path']} ({f['holder']})" for f in files[:5])
        extra = len(files) - 5 + more
        names += f" and {extra} more" if extra > 0 else ""
        done = f"; coord put back {restored} of them" if restored else ""
        text = f"{agent}'s {tool or 'tool call'} changed held files: {names}{done}"
        details: dict[str, Any] = {
            "mentions": holders,
            "files": files,
            "text": text[:MAX_EVENT_TEXT],
        }
        if more:
            details["more_files"] = more
        if command is not None:
            details["command"] = command[:MAX_EVENT_TEXT]
            if len(command) > MAX_EVENT_TEXT:
                details["command_chars"] = len(command)
        if tool is not None:
            details["tool"] = tool
        with self.ctx.storage.write() as tx:
            now = self.ctx.now(tx)
            self.ctx.changes.record(tx, agent, None, KIND, now, details, worked=True)
            seq = tx.last_seq()
        return {"seq": seq, "kind": KIND, "agent": agent, "details": details}


def check_report(
    agent: Any, files: Any, command: Any, tool: Any, more: Any
) -> tuple[str, list[dict[str, Any]], str | None, str | None, int]:
    """The report's fields, each checked; ``InvalidInput`` names the first wrong one."""
    agent = model.check_agent(agent)
    if not isinstance(files, list) or not files:
        raise InvalidInput(
            "changed must be a non-empty list of the held files the call changed", field="changed"
        )
    if len(files) > MAX_REPORTED_FILES:
        raise InvalidInput(
            f"at most {MAX_REPORTED_FILES} files in one report; give the rest as more_files",
            field="changed",
        )
    checked = [_check_file(f) for f in files]
    for name, value in (("command", command), ("tool", tool)):
        if value is not None and not isinstance(value, str):
            raise InvalidInput(f"{name} must be a string", field=name)
    if command is not None and len(command.encode()) > MAX_BODY:
        raise TooLarge(
            f"command is {len(command.encode())} bytes; the limit is {MAX_BODY}", field="command"
        )
    if tool is not None and len(tool) > MAX_PATTERN:
        raise InvalidInput(f"tool must be at most {MAX_PATTERN} characters", field="tool")
    if isinstance(more, bool) or not isinstance(more, int) or not 0 <= more <= model.MAX_INTEGER:
        raise InvalidInput("more_files must be a count of files (0 or more)", field="more_files")
    return agent, checked, command, tool, more


def _check_file(entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise InvalidInput("each file must be an object {path, holder, change}", field="changed")
    unknown = sorted(set(entry) - set(FIELDS))
    if unknown:
        raise InvalidInput(
            f"a changed file has no field {', '.join(unknown)}; its fields are {', '.join(FIELDS)}",
            field="changed",
        )
    path, change = entry.get("path"), entry.get("change")
    if not isinstance(path, str) or not path or len(path) > MAX_PATTERN:
        raise InvalidInput(
            f"a file's path must be a repository path of 1 to {MAX_PATTERN} characters",
            field="changed",
        )
    if change not in CHANGES:
        raise InvalidInput(f"a file's change must be one of {', '.join(CHANGES)}", field="changed")
    restored = entry.get("restored", False)
    if not isinstance(restored, bool):
        raise InvalidInput("a file's restored must be true or false", field="changed")
    kept = entry.get("kept")
    if kept is not None and not (
        isinstance(kept, str)
        and len(kept) == _SHA_LENGTH
        and all(c in "0123456789abcdef" for c in kept)
    ):
        raise InvalidInput("a file's kept must be the SHA-256 of the kept version", field="changed")
    checked: dict[str, Any] = {
        "path": path,
        "holder": model.check_agent(entry.get("holder")),
        "change": change,
        "restored": restored,
    }
    if kept is not None:
        checked["kept"] = kept
    why = entry.get("why")
    if why is not None:
        if not isinstance(why, str) or len(why) > MAX_PATTERN:
            raise InvalidInput(
                f"a file's why must be a string of at most {MAX_PATTERN} characters",
                field="changed",
            )
        checked["why"] = why
    return checked
