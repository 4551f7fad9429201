"""Claude Code: its hook events, the tools that edit files, and its answers.

Hooks reference: https://code.claude.com/docs/en/hooks

- ``PreToolUse`` (the guard). Input: ``session_id``, ``cwd``, ``tool_name``, ``tool_input``
  (``file_path`` for Edit, Write and MultiEdit, ``notebook_path`` for NotebookEdit, ``command``
  for Bash). A refusal is the documented JSON decision on stdout with exit 0:
  ``{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
  "permissionDecisionReason": "..."}}``; the reason is shown to Claude. An allowed call gets
  no output at all: ``"allow"`` would skip the user's permission prompts, which is not coord's
  call to make.
- ``SessionStart``: ``hookSpecificOutput.additionalContext`` is added to Claude's context.
- ``Stop``: ``decision: "block"`` would keep Claude working (and ``stop_hook_active`` says a
  Stop hook already did); coord never blocks a stop. Its reminder is ``systemMessage``,
  which Claude Code shows to the user.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GUARD_EVENT = "PreToolUse"
START_EVENT = "SessionStart"
STOP_EVENT = "Stop"

# tool -> the tool_input fields naming the files it writes
EDIT_TOOLS: dict[str, tuple[str, ...]] = {
    "Edit": ("file_path",),
    "Write": ("file_path",),
    "MultiEdit": ("file_path",),
    "NotebookEdit": ("notebook_path",),
}
PATCH_TOOLS: frozenset[str] = frozenset()
SHELL_TOOLS = frozenset({"Bash"})
# tools that read or talk but never write files (some name a file_path: Read)
QUIET_TOOLS = frozenset(
    {
        "Read",
        "NotebookRead",
        "Glob",
        "Grep",
        "LS",
        "WebFetch",
        "WebSearch",
        "TodoWrite",
        "Task",
        "Agent",
        "BashOutput",
        "KillShell",
        "KillBash",
        "ExitPlanMode",
        "SlashCommand",
        "Skill",
        "AskUserQuestion",
        "ListMcpResourcesTool",
        "ReadMcpResourceTool",
    }
)


def deny(reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def context(event: str, text: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def notice(text: str) -> dict[str, Any]:
    return {"systemMessage": text}


def shell_cwd(tool_input: dict[str, Any], cwd: str) -> str:
    return cwd
