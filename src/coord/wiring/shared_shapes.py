"""The JSON shapes several clients read alike: an MCP server entry and a hook group.

Claude Code, Gemini CLI and Cursor take the same stdio server entry under ``mcpServers``;
Codex's ``hooks.json`` and Gemini's ``hooks`` take Claude Code's hook groups (Gemini adds a
``name``). Each client's module says which it uses; a client whose format drifts gets its own.

A hook is not a bare ``coord hook ...``: when ``coord`` is not on the PATH the client's shell
exits 127, which Claude Code, Codex and Gemini CLI all take for a non-blocking error, so the
edit would go through. The wired line first looks for the command and, when it is missing,
says so and exits with the code each of them reads as a refusal (``hook_line``). It names no
absolute path, so a config a team commits works on every machine that has coord on its PATH.
(coord runs on POSIX systems only: the line needs ``sh``.)
"""

from __future__ import annotations

import re
import shlex

from coord.fast.clients import (
    GUARD_EVENTS,
    GUARD_TIMEOUT_SECONDS,
    HOOK_TIMEOUT_SECONDS,
    WORKTREE_EVENTS,
    WORKTREE_TIMEOUT_SECONDS,
)
from coord.wiring.json_merge import JsonEntry

SERVER_NAME = "coord"
# exit 2 refuses the tool call in all three clients (Claude Code and Codex PreToolUse, Gemini
# BeforeTool: "blocking error", reason on stderr); any other code lets it through
EXIT_BLOCKS = 2
# for the other events a refusal would do harm (a Stop hook's 2 keeps the agent working), so
# they report a non-blocking error instead
EXIT_WARNS = 1
FIX = "install coord on the PATH or re-run `coord init --command /path/to/coord`"
_PLAIN_WORD = re.compile(r"[\w@%+=:,./-]+")


def mcp_server(argv: list[str]) -> dict[str, object]:
    """The stdio MCP server entry every client takes: `<coord> mcp`."""
    return {"command": argv[0], "args": [*argv[1:], "mcp"]}


def mcp_server_entry(argv: list[str]) -> JsonEntry:
    """``mcpServers.coord`` in a client's JSON file."""
    return JsonEntry("mcp", "key", ("mcpServers", SERVER_NAME), mcp_server(argv))


def hook_timeout(client: str, event: str) -> int:
    """The seconds ``client`` waits for coord's hook of ``event`` before it gives up on it."""
    if event in GUARD_EVENTS[client]:
        return GUARD_TIMEOUT_SECONDS
    if event in WORKTREE_EVENTS.get(client, ()):
        return WORKTREE_TIMEOUT_SECONDS
    return HOOK_TIMEOUT_SECONDS


def hook_group(
    command: str,
    matcher: str | None,
    name: str | None = None,
    *,
    timeout: int | None = None,
) -> dict[str, object]:
    """``{"matcher"?, "hooks": [{"type": "command", "command", "name"?, "timeout"?}]}``; no
    matcher for events without tools (SessionStart, Stop); ``timeout`` in the client's unit."""
    hook: dict[str, object] = {"type": "command", "command": command}
    if name is not None:
        hook["name"] = name
    if timeout is not None:
        hook["timeout"] = timeout
    group: dict[str, object] = {}
    if matcher is not None:
        group["matcher"] = matcher
    group["hooks"] = [hook]
    return group


def hook_line(shell: str, client: str, event: str, *, guard: bool) -> str:
    """The line a client runs for one event: ``sh -c SCRIPT REASON``.

    The script runs ``<coord> hook CLIENT EVENT`` when the command is found, else prints the
    reason and exits with a refusal (``guard``) or a non-blocking error. The guard also turns
    any failure of coord itself (a broken install's 126 or 127, a crash, a signal) into a
    refusal; the other events ``exec`` coord and keep its answer. ``sh -c`` because Codex runs
    hooks with the user's ``$SHELL -lc``, which need not be a POSIX shell (fish); the reason
    is ``$0``, so the script holds no text to quote twice."""
    program = shlex.split(shell)[0]
    shown = program if _PLAIN_WORD.fullmatch(program) else "the coord command"
    missing = f"{shown} is not found" if "/" in program else f"{shown} is not on PATH"
    effect = "this call is refused" if guard else "coord is not running here"
    reason = f"coord: {missing}, so {effect}: {FIX}"
    run = f"{shell} hook {client} {event}"
    found = f"command -v {shlex.quote(program)} >/dev/null 2>&1"
    if guard:
        failed = "the coord hook exited $s, so this call is refused"
        script = (
            f'{found} || {{ echo "$0" >&2; exit {EXIT_BLOCKS}; }}; '
            f'{run} || {{ s=$?; [ $s = {EXIT_BLOCKS} ] || echo "{failed}" >&2; '
            f"exit {EXIT_BLOCKS}; }}"
        )
    else:
        script = f'{found} || {{ echo "$0" >&2; exit {EXIT_WARNS}; }}; exec {run}'
    return f"sh -c {shlex.quote(script)} {shlex.quote(reason)}"


def hook_entries(
    client: str,
    events: dict[str, str | None],
    shell: str,
    *,
    named: bool = False,
    timeout_unit: int = 1,
) -> list[JsonEntry]:
    """One group a hook event, each running `<coord> hook <client> <event>` through
    ``hook_line`` (the events and matchers are the hook runner's own list,
    coord.fast.clients.EVENTS, so what is wired is exactly what `coord hook` answers; the
    guards are coord.fast.clients.GUARD_EVENTS), with the client's hook timeout
    (``hook_timeout`` seconds, times ``timeout_unit``: 1000 for a client counting in ms)."""
    out = []
    for event, matcher in events.items():
        command = hook_line(shell, client, event, guard=event in GUARD_EVENTS[client])
        group = hook_group(
            command,
            matcher,
            f"coord-{event}" if named else None,
            timeout=hook_timeout(client, event) * timeout_unit,
        )
        out.append(JsonEntry(f"hook:{event}", "hook", ("hooks", event), group, command))
    return out
