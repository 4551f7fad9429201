"""Gemini CLI: its hook events, the tools that edit files, and its answers.

Hooks reference: https://geminicli.com/docs/hooks/reference (the tools' arguments:
https://geminicli.com/docs/tools/file-system and .../tools/shell).

- ``BeforeTool`` (the guard). Input: ``session_id``, ``cwd``, ``tool_name``, ``tool_input``
  (``file_path`` for ``write_file`` and ``replace``; ``command`` and an optional
  ``directory``, ``dir_path`` in newer releases, for ``run_shell_command``). A refusal is
  ``{"decision": "deny", "reason": "..."}`` on stdout with exit 0 ("preferred for all
  logic"); the reason goes to the agent as the tool's error. An allowed call prints nothing.
- ``AfterTool`` (the after-tool check): the same input plus ``tool_response``; coord's
  message goes in ``hookSpecificOutput.additionalContext``, which Gemini adds to what the
  agent reads of the tool's result.
- ``SessionStart``: ``hookSpecificOutput.additionalContext`` (advisory: it never blocks).
- ``AfterAgent`` (the end of a turn, Gemini's Stop): ``decision: "deny"`` would force a retry
  (``stop_hook_active`` marks one); coord only reminds, with ``systemMessage``.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GUARD_EVENT = "BeforeTool"
GUARD_EVENTS = (GUARD_EVENT,)
AFTER_EVENTS = ("AfterTool",)
START_EVENT = "SessionStart"
STOP_EVENT = "AfterAgent"

EDIT_TOOLS: dict[str, tuple[str, ...]] = {
    "write_file": ("file_path",),
    "replace": ("file_path",),
}
PATCH_TOOLS: frozenset[str] = frozenset()
SHELL_TOOLS = frozenset({"run_shell_command"})
# How Gemini CLI runs a next step's command: its shell tool
NEXT_HOW = "run these with run_shell_command; `coord wait` returns when it is your turn"
QUIET_TOOLS = frozenset(
    {
        "read_file",
        "read_many_files",
        "list_directory",
        "glob",
        "search_file_content",
        "grep_search",
        "web_fetch",
        "google_web_search",
        "save_memory",
        "write_todos",
        "activate_skill",
        "ask_user",
    }
)


def deny(reason: str) -> dict[str, Any]:
    return {"decision": "deny", "reason": reason}


def after(event: str, text: str, notice: str) -> dict[str, Any]:
    """AfterTool: ``additionalContext`` is added to the tool's result for the agent
    (``decision: "deny"`` would hide the result itself), ``systemMessage`` tells the user."""
    return {
        "hookSpecificOutput": {"hookEventName": "AfterTool", "additionalContext": text},
        "systemMessage": notice,
    }


def context(event: str, text: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def notice(text: str) -> dict[str, Any]:
    return {"systemMessage": text}


def shell_cwd(tool_input: dict[str, Any], cwd: str) -> str:
    """run_shell_command may run in a directory of the project (relative to its root)."""
    where = tool_input.get("dir_path", tool_input.get("directory"))
    return os.path.join(cwd, where) if isinstance(where, str) and where else cwd
