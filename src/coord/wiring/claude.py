"""Claude Code: its MCP server, its hooks and its ``CLAUDE.md``.

- MCP, project scope: ``.mcp.json`` ``{"mcpServers": {NAME: {"command", "args"}}}``
  https://code.claude.com/docs/en/mcp
- hooks: ``.claude/settings.json`` ``{"hooks": {EVENT: [{"matcher"?, "hooks": [{"type":
  "command", "command"}]}]}}``; the matcher is a tool-name regex (``Edit|Write``) and is left
  out for events without tools (SessionStart, Stop). Wired: PreToolUse (the guard), SessionStart
  and Stop. https://docs.claude.com/en/docs/claude-code/hooks
- a project-scoped server of ``.mcp.json`` runs once the user approves it.
  https://code.claude.com/docs/en/mcp#project-scope
- instructions: ``CLAUDE.md`` imports other files with ``@path``.
  https://docs.claude.com/en/docs/claude-code/memory
"""

from __future__ import annotations

from coord.fast.clients import EVENTS
from coord.wiring import instructions
from coord.wiring.json_merge import JsonSpec
from coord.wiring.plan import Target
from coord.wiring.shared_shapes import hook_entries, mcp_server_entry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from coord.wiring.plan import Plan

FLAG_HELP = "Claude Code: .mcp.json, .claude/settings.json hooks, CLAUDE.md"
NOTES: tuple[str, ...] = (
    "Claude Code starts coord's MCP server from .mcp.json only once you approve it (asked at "
    "start; /mcp shows it)",
)


def config(root: Path, argv: list[str], shell: str) -> list[Target]:
    return [
        Target(".mcp.json", root / ".mcp.json", JsonSpec([mcp_server_entry(argv)])),
        Target(
            ".claude/settings.json",
            root / ".claude/settings.json",
            JsonSpec(hook_entries("claude", EVENTS["claude"], shell)),
        ),
    ]


def instruction_files(root: Path, plan: Plan) -> list[Target]:
    return instructions.importing_agents_md(root, "CLAUDE.md", "@AGENTS.md", plan)
