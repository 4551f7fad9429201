"""Codex CLI: the same wire format as Claude Code's hooks, a different edit tool.

Hooks reference: https://developers.openai.com/codex/hooks; what is read and accepted is in
openai/codex ``codex-rs/hooks/src/events/pre_tool_use.rs`` and
``codex-rs/hooks/src/engine/output_parser.rs``.

- ``PreToolUse`` fires for ``Bash`` (every shell tool: ``tool_input.command``) and for
  ``apply_patch`` (openai/codex#18391), whose patch text is ``tool_input.command``: the files
  are on its ``*** Add File:``, ``*** Update File:``, ``*** Delete File:`` and ``*** Move to:``
  lines, relative to ``cwd``. A refusal is ``hookSpecificOutput.permissionDecision: "deny"``
  with a non-empty ``permissionDecisionReason``, exit 0 (Codex rejects ``"allow"`` without
  ``updatedInput`` and ``"ask"``); an allowed call prints nothing.
- ``PostToolUse`` (the after-tool check): the same input plus ``tool_response``, for
  ``Bash`` and ``apply_patch``; ``{"decision": "block", "reason": ...}`` is fed back to the
  model (``codex-rs/hooks/src/events/post_tool_use.rs``), as in Claude Code.
- ``SessionStart``: ``hookSpecificOutput.additionalContext``. Codex 0.171.0 (the latest
  release) lets the hook set no environment for later commands: its output schema
  (``session-start.command.output``) holds ``additionalContext`` only, and it names no env
  file. openai/codex's main branch adds one (``CODEX_ENV_FILE``, with ``CLAUDE_ENV_FILE`` as an
  alias; ``codex-rs/hooks/src/events/session_start_env_file.rs``), which coord exports
  ``COORD_AGENT`` to when it is set (``coord.hooks.session``). Meanwhile every command Codex
  runs has the session's id as ``CODEX_THREAD_ID`` (the hooks' ``session_id``), and the
  agent's own ``coord`` commands take their name from it (``coord.fast.identity.of_command``).
- ``Stop``: ``decision: "block"`` would make Codex continue the turn; coord only reminds, with
  ``systemMessage`` (shown as a warning).
"""

from __future__ import annotations

from coord.hooks.claude import context, deny, notice, shell_cwd

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GUARD_EVENT = "PreToolUse"
GUARD_EVENTS = (GUARD_EVENT,)
AFTER_EVENTS = ("PostToolUse",)
START_EVENT = "SessionStart"
STOP_EVENT = "Stop"

EDIT_TOOLS: dict[str, tuple[str, ...]] = {}
PATCH_TOOLS = frozenset({"apply_patch"})
SHELL_TOOLS = frozenset({"Bash"})
# How Codex runs a next step's command: its shell tool
NEXT_HOW = "run these in the shell (the Bash tool); `coord wait` returns when it is your turn"
QUIET_TOOLS: frozenset[str] = frozenset()


def after(event: str, text: str, notice: str) -> dict[str, Any]:
    """PostToolUse: ``decision: "block"`` with ``reason`` is fed back to the model."""
    return {"decision": "block", "reason": text, "systemMessage": notice}


__all__ = [
    "AFTER_EVENTS",
    "EDIT_TOOLS",
    "GUARD_EVENT",
    "GUARD_EVENTS",
    "NEXT_HOW",
    "PATCH_TOOLS",
    "QUIET_TOOLS",
    "SHELL_TOOLS",
    "START_EVENT",
    "STOP_EVENT",
    "after",
    "context",
    "deny",
    "notice",
    "shell_cwd",
]
