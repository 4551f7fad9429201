"""Claude Code: its hook events, the tools that edit files, and its answers.

Hooks reference: https://code.claude.com/docs/en/hooks

- ``PreToolUse`` (the guard). Input: ``session_id``, ``cwd``, ``tool_name``, ``tool_input``
  (``file_path`` for Edit, Write and MultiEdit, ``notebook_path`` for NotebookEdit, ``command``
  for Bash). A refusal is the documented JSON decision on stdout with exit 0:
  ``{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
  "permissionDecisionReason": "..."}}``; the reason is shown to Claude. An allowed call gets
  no output at all: ``"allow"`` would skip the user's permission prompts, which is not coord's
  call to make.
- Tools coord's matcher adds past the edit tools (``coord.fast.clients.EVENTS``), judged
  conservatively because their writes are not spelled out: ``Monitor`` runs a Bash command in
  the background (input ``command``, "the same permission rules as Bash"), so it meets the
  Bash guard; ``PowerShell`` (Windows; input ``command``, read like Bash's) is not parsed as
  a shell: every word of it is judged as a path, so a command naming a held path is refused
  even if it only reads it, and one naming none is allowed (``$var``, ``-f`` formatting and
  other spellings PowerShell computes are not seen: docs/security.md lists this). MCP tools
  (``mcp__SERVER__TOOL``) are judged on the path arguments they name (``PATH_FIELDS``);
  one that names none is allowed, so a server writing files under other argument names is
  not covered. coord's own MCP server (``mcp__coord__``) answers for itself.
- ``PostToolUse`` (the after-tool check, ``coord.hooks.aftercheck``): the same input plus
  ``tool_response``, for the same tools as the guard. When the call changed a file another
  agent holds, the answer is ``{"decision": "block", "reason": ...}``: Claude Code gives the
  reason to Claude (the tool already ran: nothing is undone), and ``systemMessage`` shows a
  line to the user. A call with nothing to report prints nothing. A tool that fails fires
  ``PostToolUseFailure`` instead (a shell command that exits non-zero), answered with
  ``hookSpecificOutput.additionalContext``.
- ``SessionStart``: ``hookSpecificOutput.additionalContext`` is added to Claude's context.
  Its hooks may also append ``export VAR=value`` lines to the file named by
  ``CLAUDE_ENV_FILE``, sourced before each Bash command: coord exports ``COORD_AGENT`` there
  (``coord.hooks.session``).
- ``WorktreeCreate`` / ``WorktreeRemove``: Claude Code asks the hook to make (print the path)
  and remove its worktrees; coord claims an item for each (``coord.hooks.worktree``).
- ``Stop``: ``decision: "block"`` would keep Claude working (and ``stop_hook_active`` says a
  Stop hook already did); coord never blocks a stop. Its reminder is ``systemMessage``,
  which Claude Code shows to the user.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GUARD_EVENT = "PreToolUse"
GUARD_EVENTS = (GUARD_EVENT,)
# the after-tool check; a tool that fails fires PostToolUseFailure instead (a Bash command
# that exits non-zero may still have written)
AFTER_EVENTS = ("PostToolUse", "PostToolUseFailure")
# the after-tool answer carries the asks addressed to the agent (``additionalContext``, or
# the block's reason), each once (coord.fast.asks_seen)
ASKS_IN_CONTEXT = True
START_EVENT = "SessionStart"
STOP_EVENT = "Stop"
# its worktrees, made and removed by coord (coord.hooks.worktree)
WORKTREE_EVENTS = ("WorktreeCreate", "WorktreeRemove")

# tool -> the tool_input fields naming the files it writes
EDIT_TOOLS: dict[str, tuple[str, ...]] = {
    "Edit": ("file_path",),
    "Write": ("file_path",),
    "MultiEdit": ("file_path",),
    "NotebookEdit": ("notebook_path",),
}
PATCH_TOOLS: frozenset[str] = frozenset()
# Monitor runs its `command` through Bash, in the background
SHELL_TOOLS = frozenset({"Bash", "Monitor"})
# How Claude runs a next step's command: in the background, so the line `coord wait` prints
# when the hold is granted wakes it (the Monitor tool streams a background command's output)
NEXT_HOW = "run these with Bash; `coord wait` with run_in_background, and Monitor its output"
# tools whose whole command line is judged word by word (no parser of their language here)
WORD_TOOLS = frozenset({"PowerShell"})
# the tool_input fields that name files, for tools coord has no table for (MCP servers'):
# a string each, or a list of strings for those in PATH_LISTS
PATH_LISTS = frozenset({"paths"})
PATH_FIELDS = (
    "file_path",
    "notebook_path",
    "path",
    "paths",
    "filePath",
    "source",
    "destination",
)
# coord's own MCP tools: the board answers them (a reserve of a held path says who holds it)
OWN_MCP_PREFIX = "mcp__coord__"
# what splits a PowerShell command line into words; quotes are dropped, not honoured
_WORD_BREAKS = " \t\r\n;|&(){}[],=<>'\"`"
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


def after(event: str, text: str, notice: str) -> dict[str, Any]:
    """PostToolUse: ``decision: "block"`` puts ``reason`` before Claude (the tool has run;
    nothing is undone by it); PostToolUseFailure takes ``additionalContext``;
    ``systemMessage`` tells the user."""
    if event == "PostToolUseFailure":
        return {
            "hookSpecificOutput": {"hookEventName": event, "additionalContext": text},
            "systemMessage": notice,
        }
    return {"decision": "block", "reason": text, "systemMessage": notice}


def context(event: str, text: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def notice(text: str) -> dict[str, Any]:
    return {"systemMessage": text}


def named_paths(tool: str, tool_input: dict[str, Any]) -> list[str]:
    """The paths a tool with no table of its own names, for the guard to judge as edits.

    Raises ``ValueError`` (the guard then refuses) for a path field it cannot read.
    """
    if tool.startswith(OWN_MCP_PREFIX):
        return []
    if tool in WORD_TOOLS:
        command = tool_input.get("command")
        if not isinstance(command, str):
            raise ValueError(f"the {tool} input has no command string")
        return command_words(command)
    given: list[str] = []
    for field in PATH_FIELDS:
        value = tool_input.get(field)
        if value is None:
            continue
        values = value if field in PATH_LISTS and isinstance(value, list) else [value]
        if not values or not all(isinstance(v, str) for v in values):
            raise ValueError(f"the {tool} input has no {field} string")
        given.extend(values)
    return given


def command_words(command: str) -> list[str]:
    """Every word of a command line that could name a path (Windows ``\\`` read as ``/``).

    Options (``-Path``), variables (``$x``) and bare words are kept out only when they cannot
    be a path; ``-Path:src/a.py`` gives ``src/a.py``.
    """
    words: list[str] = []
    word: list[str] = []
    for char in command + " ":
        if char in _WORD_BREAKS:
            if word:
                words.append("".join(word))
                word = []
        else:
            word.append(char)
    paths = []
    for text in words:
        if text.startswith("-") and ":" in text:
            text = text.split(":", 1)[1]
        if not text or text.startswith(("-", "$", "@")):
            continue
        paths.append(text.replace("\\", "/"))
    return paths


def shell_cwd(tool_input: dict[str, Any], cwd: str) -> str:
    return cwd
