"""The agent clients coord speaks to, and the hook events it answers for each.

One list for the two sides that must agree on it: ``coord hook`` answers these events, and
``coord init`` wires exactly these into each client's config.
"""

from __future__ import annotations

# clients whose hooks coord answers (`coord hook CLIENT EVENT`)
HOOK_CLIENTS = ("claude", "codex", "gemini", "cursor")
# clients `coord init` can wire
CLIENTS = HOOK_CLIENTS
# Cursor's two guards: every tool call (edits matched by name) and each shell command, whose
# event takes no tool matcher
CURSOR_GUARDS = ("preToolUse", "beforeShellExecution")

# Each event coord answers, and the tool matcher its guard needs (None: every call).
EVENTS: dict[str, dict[str, str | None]] = {
    "claude": {
        # the edit tools, the shell (Bash, Monitor, PowerShell) and every MCP server's tools
        "PreToolUse": "Edit|Write|MultiEdit|NotebookEdit|Bash|Monitor|PowerShell|mcp__.*",
        "SessionStart": None,
        "Stop": None,
    },
    "codex": {"PreToolUse": "apply_patch|Bash", "SessionStart": None, "Stop": None},
    "gemini": {
        "BeforeTool": "write_file|replace|run_shell_command",
        "SessionStart": None,
        "AfterAgent": None,
    },
    "cursor": {
        "preToolUse": "Write|StrReplace|Edit|MultiEdit|Delete|EditNotebook",
        "beforeShellExecution": None,
        "sessionStart": None,
        "stop": None,
    },
}
