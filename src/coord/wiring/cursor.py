"""Cursor: its MCP server and its hooks. It reads ``AGENTS.md`` itself.

- MCP, project scope: ``.cursor/mcp.json`` ``{"mcpServers": {NAME: {"command", "args"}}}``
  https://cursor.com/docs/mcp
- hooks, project scope: ``.cursor/hooks.json`` ``{"version": 1, "hooks": {EVENT: [{"command",
  "matcher"?}]}}``: one flat entry a hook, no inner ``hooks`` list as Claude Code's; the
  command runs from the project root. Wired: ``preToolUse`` on the file-writing tools and
  ``beforeShellExecution`` (the guards), ``sessionStart`` and ``stop``. Exit 2 blocks the
  action, as in the other clients, so ``hook_line`` refuses the same way when coord is missing.
  https://cursor.com/docs/hooks
- instructions: Cursor reads ``AGENTS.md`` as project rules. https://cursor.com/docs/rules
"""

from __future__ import annotations

from coord.fast.clients import CURSOR_GUARDS, EVENTS
from coord.wiring.json_merge import JsonEntry, JsonSpec
from coord.wiring.plan import Target
from coord.wiring.shared_shapes import hook_line, hook_timeout, mcp_server_entry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from coord.wiring.plan import Plan

FLAG_HELP = "Cursor: .cursor/mcp.json, .cursor/hooks.json"
NOTES: tuple[str, ...] = ()
MCP_JSON = ".cursor/mcp.json"
HOOKS_JSON = ".cursor/hooks.json"
HOOKS_VERSION = 1  # the format version Cursor's hooks.json declares


def hook_entries(shell: str) -> list[JsonEntry]:
    """``version`` and one flat entry an event, running `<coord> hook cursor EVENT`."""
    out = [JsonEntry("version", "key", ("version",), HOOKS_VERSION)]
    for event, matcher in EVENTS["cursor"].items():
        command = hook_line(shell, "cursor", event, guard=event in CURSOR_GUARDS)
        entry: dict[str, object] = {"command": command, "timeout": hook_timeout("cursor", event)}
        if event in CURSOR_GUARDS:
            entry["failClosed"] = True  # Cursor lets a failed or timed-out hook's call through
        if matcher is not None:
            entry["matcher"] = matcher
        out.append(JsonEntry(f"hook:{event}", "hook", ("hooks", event), entry, command))
    return out


def config(root: Path, argv: list[str], shell: str) -> list[Target]:
    return [
        Target(MCP_JSON, root / MCP_JSON, JsonSpec([mcp_server_entry(argv)])),
        Target(HOOKS_JSON, root / HOOKS_JSON, JsonSpec(hook_entries(shell))),
    ]


def instruction_files(root: Path, plan: Plan) -> list[Target]:
    return []  # AGENTS.md is Cursor's own
