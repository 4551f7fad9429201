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

# Cursor's after-tool checks: each shell command, each file edit (neither takes a matcher)
CURSOR_AFTER = ("afterShellExecution", "afterFileEdit")
_CLAUDE_TOOLS = "Edit|Write|MultiEdit|NotebookEdit|Bash|Monitor|PowerShell|mcp__.*"
_CURSOR_EDITS = "Write|StrReplace|Edit|MultiEdit|Delete|EditNotebook"

# Each event coord answers, and the tool matcher it needs (None: every call). The after-tool
# check runs for the same tools as the guard: it compares what the guard snapshot.
EVENTS: dict[str, dict[str, str | None]] = {
    "claude": {
        # the edit tools, the shell (Bash, Monitor, PowerShell) and every MCP server's tools
        "PreToolUse": _CLAUDE_TOOLS,
        "PostToolUse": _CLAUDE_TOOLS,
        "PostToolUseFailure": _CLAUDE_TOOLS,
        "SessionStart": None,
        "Stop": None,
        # its worktrees are coord's: `claude --worktree` and isolated subagents claim one
        "WorktreeCreate": None,
        "WorktreeRemove": None,
    },
    "codex": {
        "PreToolUse": "apply_patch|Bash",
        "PostToolUse": "apply_patch|Bash",
        "SessionStart": None,
        "Stop": None,
    },
    "gemini": {
        "BeforeTool": "write_file|replace|run_shell_command",
        "AfterTool": "write_file|replace|run_shell_command",
        "SessionStart": None,
        "AfterAgent": None,
    },
    "cursor": {
        "preToolUse": _CURSOR_EDITS,
        "beforeShellExecution": None,
        "afterShellExecution": None,
        "afterFileEdit": None,
        "sessionStart": None,
        "stop": None,
    },
}
# the guards among them: a failure of coord itself refuses the call (coord.wiring)
GUARD_EVENTS: dict[str, tuple[str, ...]] = {
    "claude": ("PreToolUse",),
    "codex": ("PreToolUse",),
    "gemini": ("BeforeTool",),
    "cursor": CURSOR_GUARDS,
}

# How long each client waits for a hook, as `coord init` writes it. Every client lets the
# call through when a guard times out (Claude Code and Codex run it as a failed hook, Gemini
# CLI likewise; Cursor unless the hook has failClosed), so the guard refuses on its own first,
# at coord.hooks.GUARD_DEADLINE_SECONDS, well inside this. The other hooks may start the
# daemon (up to coord.client.http.START_TIMEOUT_SECONDS) before they answer.
GUARD_TIMEOUT_SECONDS = 30
HOOK_TIMEOUT_SECONDS = 60
# Claude Code's worktree hooks make or remove a worktree, and the project's setup command
# (`worktree_setup`: installing dependencies, say) runs inside the making
WORKTREE_EVENTS: dict[str, tuple[str, ...]] = {"claude": ("WorktreeCreate", "WorktreeRemove")}
WORKTREE_TIMEOUT_SECONDS = 600
