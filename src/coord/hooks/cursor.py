"""Cursor: its hook events, the tools that write files, its answers, and its input shape.

Hooks reference: https://cursor.com/docs/hooks (and, for Claude Code's hooks run by Cursor,
https://cursor.com/docs/reference/third-party-hooks).

Every event's input carries ``conversation_id`` (the session) and ``workspace_roots`` (the
open folders) instead of Claude Code's ``session_id`` and ``cwd``; ``adapt`` turns it into the
shape the rest of ``coord.hooks`` reads, so one guard and one session text serve every client.

- ``preToolUse`` (the guard for edits): ``tool_name`` and ``tool_input`` of every tool
  (``Write``, ``StrReplace``, ``Edit``, ``Delete``: the file in ``file_path``, ``path`` in
  some releases). A refusal is ``{"permission": "deny", "agent_message": "..."}`` on stdout,
  exit 0 (``user_message`` is what the user sees); exit 2 also blocks. An allowed call prints
  nothing: an explicit ``"allow"`` would skip the user's approval, not coord's call.
- ``beforeShellExecution`` (the shell guard): ``command`` and ``cwd``, the same answer.
- ``sessionStart``: ``additional_context`` is added to the agent's context.
- ``afterShellExecution`` (``command``, ``output``) and ``afterFileEdit`` (``file_path``,
  ``edits``): the after-tool check (``coord.hooks.aftercheck``). Cursor reads no answer from
  either, so a message for the agent (it changed a held file; coord put it back) waits for
  the ``stop`` hook.
- ``stop``: its only answer, ``followup_message``, sends the agent another turn: coord gives
  it only to deliver the after-tool check's message; otherwise it heartbeats the claims and
  answers ``{}``.
- ``beforeReadFile`` is not wired: reading a held file is allowed.

Cursor also runs Claude Code's hooks (``.claude/settings.json``, under its own names) with
this input; ``is_cursor`` tells that shape apart so the Claude hook answers it (``IN_CLAUDE``).
"""

from __future__ import annotations

from coord.fast.clients import CURSOR_GUARDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GUARD_EVENT, SHELL_EVENT = CURSOR_GUARDS
GUARD_EVENTS = CURSOR_GUARDS
# the after-tool check; postToolUse is Claude Code's PostToolUse as Cursor runs it
AFTER_EVENTS = ("afterShellExecution", "afterFileEdit", "postToolUse")
# its input names no tool call: the agent's latest snapshot is the one
AFTER_ANY_CALL = ("afterFileEdit",)
# Cursor reads no answer from its after hooks: the message waits for the stop hook
AFTER_AT_STOP = True
START_EVENT = "sessionStart"
STOP_EVENT = "stop"

EDIT_TOOLS: dict[str, tuple[str, ...]] = {
    "Write": ("file_path",),
    "StrReplace": ("file_path",),
    "Edit": ("file_path",),
    "MultiEdit": ("file_path",),
    "Delete": ("file_path",),
    "EditNotebook": ("file_path",),
}
PATCH_TOOLS: frozenset[str] = frozenset()
SHELL_TOOLS = frozenset({"Shell"})
# How Cursor's agent runs a next step's command: its terminal tool
NEXT_HOW = "run these with the Shell tool; `coord wait` returns when it is your turn"
QUIET_TOOLS = frozenset(
    {"Read", "Grep", "Glob", "LS", "SemanticSearch", "WebSearch", "WebFetch", "Task", "TodoWrite"}
)
# Claude Code's event names, as Cursor maps them when it runs .claude/settings.json
FROM_CLAUDE = {
    "PreToolUse": GUARD_EVENT,
    "PostToolUse": "postToolUse",
    "SessionStart": START_EVENT,
    "Stop": STOP_EVENT,
}


def is_cursor(data: dict[str, Any]) -> bool:
    """Cursor's input shape: Claude Code sends neither ``conversation_id`` nor
    ``workspace_roots``; Cursor sends both with every event."""
    return "conversation_id" in data or "workspace_roots" in data


def adapt(event: str, data: dict[str, Any]) -> dict[str, Any]:
    """Cursor's input in the shape ``coord.hooks`` reads (``session_id``, ``cwd``, a tool)."""
    out = dict(data)
    conversation = data.get("conversation_id")
    if isinstance(conversation, str) and conversation:
        # every event names the conversation (sessionStart also a session_id): one name for all
        out["session_id"] = conversation
    roots = data.get("workspace_roots")
    no_cwd = not isinstance(out.get("cwd"), str) or not out.get("cwd")
    if no_cwd and isinstance(roots, list) and roots and isinstance(roots[0], str):
        out["cwd"] = roots[0]  # the first open folder: Cursor's agent works from there
    if event == "afterFileEdit" and "tool_name" not in data:
        out["tool_name"] = "Edit"
        out["tool_input"] = {"file_path": data.get("file_path")}
    shell = event in (SHELL_EVENT, "afterShellExecution")
    if shell or ("tool_name" not in data and isinstance(data.get("command"), str)):
        out["tool_name"] = "Shell"
        out["tool_input"] = {"command": data.get("command")}
    tool_input = out.get("tool_input")
    # some tools name the file `path`
    if isinstance(tool_input, dict) and isinstance(tool_input.get("path"), str):
        out["tool_input"] = {"file_path": tool_input["path"], **tool_input}
    return out


def deny(reason: str) -> dict[str, Any]:
    return {"permission": "deny", "agent_message": reason, "user_message": reason}


def after(event: str, text: str, notice: str) -> dict[str, Any]:
    return {}  # read by no after hook of Cursor's: the stop hook delivers it (followup)


def followup(text: str) -> dict[str, Any]:
    """The stop hook's answer that sends the agent one more turn, with this message."""
    return {"followup_message": text}


def context(event: str, text: str) -> dict[str, Any]:
    return {"additional_context": text}


def notice(text: str) -> dict[str, Any]:
    return {}  # followup_message would make the agent go on: the claims were heartbeaten


def shell_cwd(tool_input: dict[str, Any], cwd: str) -> str:
    return cwd


class IN_CLAUDE:
    """Cursor's input reaching the Claude hook: Cursor's tools, both clients' answers (the
    docs do not say which format Cursor reads back from a Claude hook, so each is there)."""

    GUARD_EVENT = GUARD_EVENT
    GUARD_EVENTS = GUARD_EVENTS
    AFTER_EVENTS = AFTER_EVENTS
    AFTER_ANY_CALL = AFTER_ANY_CALL
    AFTER_AT_STOP = AFTER_AT_STOP
    START_EVENT = START_EVENT
    STOP_EVENT = STOP_EVENT
    EDIT_TOOLS = EDIT_TOOLS
    PATCH_TOOLS = PATCH_TOOLS
    SHELL_TOOLS = SHELL_TOOLS
    NEXT_HOW = NEXT_HOW
    QUIET_TOOLS = QUIET_TOOLS
    adapt = staticmethod(adapt)
    shell_cwd = staticmethod(shell_cwd)
    followup = staticmethod(followup)

    @staticmethod
    def after(event: str, text: str, notice: str) -> dict[str, Any]:
        from coord.hooks import claude

        return claude.after("PostToolUse", text, notice)

    @staticmethod
    def deny(reason: str) -> dict[str, Any]:
        from coord.hooks import claude

        return {**claude.deny(reason), **deny(reason)}

    @staticmethod
    def context(event: str, text: str) -> dict[str, Any]:
        from coord.hooks import claude

        return {**claude.context("SessionStart", text), **context(event, text)}

    @staticmethod
    def notice(text: str) -> dict[str, Any]:
        from coord.hooks import claude

        return claude.notice(text)
