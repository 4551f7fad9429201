"""Cursor: its MCP server. It has no hooks coord answers, and reads ``AGENTS.md`` itself.

- MCP, project scope: ``.cursor/mcp.json`` ``{"mcpServers": {NAME: {"command", "args"}}}``
  https://cursor.com/docs/mcp
- instructions: Cursor reads ``AGENTS.md`` as project rules. https://cursor.com/docs/rules
"""

from __future__ import annotations

from coord.wiring.json_merge import JsonSpec
from coord.wiring.plan import Target
from coord.wiring.shared_shapes import mcp_server_entry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from coord.wiring.plan import Plan

FLAG_HELP = "Cursor: .cursor/mcp.json"
NOTES: tuple[str, ...] = ()
MCP_JSON = ".cursor/mcp.json"


def config(root: Path, argv: list[str], shell: str) -> list[Target]:
    return [Target(MCP_JSON, root / MCP_JSON, JsonSpec([mcp_server_entry(argv)]))]


def instruction_files(root: Path, plan: Plan) -> list[Target]:
    return []  # AGENTS.md is Cursor's own
