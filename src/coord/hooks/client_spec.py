"""What each agent client's module of ``coord.hooks`` provides, as one typed interface.

``coord hook CLIENT EVENT`` picks a module (``claude``, ``codex``, ``gemini``, ``cursor``, or
``cursor.IN_CLAUDE`` for Cursor's input reaching a Claude Code hook) and reads everything
client-specific from it: which events are the guard, the after-tool check, start and stop;
which tools edit, patch or run a shell; and how to say a refusal, a notice or context in the
client's own JSON. ``HookClient`` names those members, and mypy holds each module to it (the
assignments at the end, which only a type checker reads). The guard's path never imports this
module: ``Protocol`` and ``typing`` cost milliseconds at every edit.

Members a client may lack are read with ``getattr`` and a default where they are used, and
listed in ``OPTIONAL`` here: ``ASKS_IN_CONTEXT`` (Claude Code: asks ride on the after-tool
hook's context), ``WORKTREE_EVENTS`` (Claude Code's ``WorktreeCreate``/``WorktreeRemove``),
``AFTER_ANY_CALL`` and ``AFTER_AT_STOP`` (Cursor's after-edit and stop checks), ``adapt``
(Cursor's input put in the others' shape), ``followup`` (Cursor's stop message) and
``named_paths`` (Claude Code's PowerShell and MCP tools).
"""

from __future__ import annotations

from typing import Any, Protocol

OPTIONAL = (
    "ASKS_IN_CONTEXT",
    "WORKTREE_EVENTS",
    "AFTER_ANY_CALL",
    "AFTER_AT_STOP",
    "adapt",
    "followup",
    "named_paths",
)


class HookClient(Protocol):
    """One agent client's hook contract, as coord answers it."""

    @property
    def GUARD_EVENTS(self) -> tuple[str, ...]: ...
    @property
    def AFTER_EVENTS(self) -> tuple[str, ...]: ...
    @property
    def START_EVENT(self) -> str: ...
    @property
    def STOP_EVENT(self) -> str: ...
    @property
    def EDIT_TOOLS(self) -> dict[str, tuple[str, ...]]: ...
    @property
    def PATCH_TOOLS(self) -> frozenset[str]: ...
    @property
    def SHELL_TOOLS(self) -> frozenset[str]: ...
    @property
    def QUIET_TOOLS(self) -> frozenset[str]: ...
    @property
    def NEXT_HOW(self) -> str: ...

    def deny(self, reason: str) -> dict[str, Any]:
        """The guard's refusal, in the client's JSON."""

    def after(self, event: str, text: str, notice: str) -> dict[str, Any]:
        """The after-tool check's report of held files a call changed."""

    def context(self, event: str, text: str) -> dict[str, Any]:
        """Text the model reads (session start's briefing)."""

    def notice(self, text: str) -> dict[str, Any]:
        """A line the person sees (the stop's reminder)."""

    def shell_cwd(self, tool_input: dict[str, Any], cwd: str) -> str:
        """Where the client runs a shell command of this call."""


TYPE_CHECKING = False
if TYPE_CHECKING:  # each client module is held to the contract by mypy, never at run time
    from coord.hooks import claude, codex, cursor, gemini

    _CLAUDE: HookClient = claude
    _CODEX: HookClient = codex
    _GEMINI: HookClient = gemini
    _CURSOR: HookClient = cursor
    _CURSOR_IN_CLAUDE: HookClient = cursor.IN_CLAUDE
