"""The JSON shapes several clients read alike: an MCP server entry and a hook group.

Claude Code, Gemini CLI and Cursor take the same stdio server entry under ``mcpServers``;
Codex's ``hooks.json`` and Gemini's ``hooks`` take Claude Code's hook groups (Gemini adds a
``name``). Each client's module says which it uses; a client whose format drifts gets its own.
"""

from __future__ import annotations

from coord.wiring.json_merge import JsonEntry

SERVER_NAME = "coord"


def mcp_server(argv: list[str]) -> dict[str, object]:
    """The stdio MCP server entry every client takes: `<coord> mcp`."""
    return {"command": argv[0], "args": [*argv[1:], "mcp"]}


def mcp_server_entry(argv: list[str]) -> JsonEntry:
    """``mcpServers.coord`` in a client's JSON file."""
    return JsonEntry("mcp", "key", ("mcpServers", SERVER_NAME), mcp_server(argv))


def hook_group(command: str, matcher: str | None, name: str | None = None) -> dict[str, object]:
    """``{"matcher"?, "hooks": [{"type": "command", "command", "name"?}]}``; no matcher for
    events without tools (SessionStart, Stop)."""
    hook: dict[str, object] = {"type": "command", "command": command}
    if name is not None:
        hook["name"] = name
    group: dict[str, object] = {}
    if matcher is not None:
        group["matcher"] = matcher
    group["hooks"] = [hook]
    return group


def hook_entries(
    client: str, events: dict[str, str | None], shell: str, *, named: bool = False
) -> list[JsonEntry]:
    """One group a hook event, each running `<coord> hook <client> <event>` (the events and
    matchers are the hook runner's own list, coord.fast.clients.EVENTS, so what is wired is
    exactly what `coord hook` answers)."""
    out = []
    for event, matcher in events.items():
        command = f"{shell} hook {client} {event}"
        group = hook_group(command, matcher, f"coord-{event}" if named else None)
        out.append(JsonEntry(f"hook:{event}", "hook", ("hooks", event), group, command))
    return out
