"""Gemini CLI: its MCP server and hooks (one settings file) and its ``GEMINI.md``.

- MCP: ``.gemini/settings.json`` ``{"mcpServers": {NAME: {"command", "args"}}}``
  https://geminicli.com/docs/tools/mcp-server
- hooks: the same file, ``{"hooks": {EVENT: [{"matcher"?, "hooks": [{"type": "command",
  "command", "name"?}]}]}}``; BeforeTool's matcher is a regex over tool names (``write_file``,
  ``replace``, ``run_shell_command``); SessionStart (startup, resume, clear) and AfterAgent
  (the end of a turn, its Stop) take no matcher. https://geminicli.com/docs/hooks/reference
- instructions: ``GEMINI.md``, which imports other files with ``@./file.md``.
  https://geminicli.com/docs/cli/gemini-md https://geminicli.com/docs/reference/memport
- trust: with folder trust on, an untrusted folder's ``.gemini/settings.json`` is ignored (no
  hooks, no MCP server). https://geminicli.com/docs/cli/trusted-folders
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

FLAG_HELP = "Gemini CLI: .gemini/settings.json (MCP and hooks), GEMINI.md"
# Gemini drops project settings in a folder it does not trust, without a word
NOTES: tuple[str, ...] = (
    "Gemini CLI ignores .gemini/settings.json (coord's guard, hooks and MCP server) in a "
    "folder it does not trust: trust this folder when gemini asks (or /permissions in "
    "gemini), and do not run it with --skip-trust, which drops them too",
)
SETTINGS = ".gemini/settings.json"


def config(root: Path, argv: list[str], shell: str) -> list[Target]:
    # a Gemini hook may carry a name: `coord-BeforeTool` says whose hook it is
    # Gemini counts a hook's timeout in milliseconds
    hooks = hook_entries("gemini", EVENTS["gemini"], shell, named=True, timeout_unit=1000)
    return [Target(SETTINGS, root / SETTINGS, JsonSpec([mcp_server_entry(argv), *hooks]))]


def instruction_files(root: Path, plan: Plan) -> list[Target]:
    return instructions.importing_agents_md(root, "GEMINI.md", "@./AGENTS.md", plan)
