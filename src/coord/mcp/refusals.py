"""A refusal as a model reads it over MCP: the board's error object, in the tools' words.

Every refusal is a tool result with ``isError`` whose content is the object the HTTP API
answers with (``{"error": code, "message": …, **facts}``), for the board's own refusals and
for arguments the tool's schema refuses alike, so a model (or a script) reads one shape.

The board words its messages once for every face, naming CLI commands (``pick another
(`coord next`)``): the CLI is the face a person and most agents use, and a structured hint
the faces render would change every refusal in the core and each face's rendering of it for
the one face that differs. So this face says those commands in its own words instead, from
one table: each command the board's messages name is either a tool here (``TOOL_WORDS``) or
a person's command with no tool (``PERSONS_COMMANDS``), left as it is. A test reads the
messages' source and fails when a new command is in neither.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from mcp_types import CallToolResult, TextContent

from coord.errors import CoordError, InvalidInput, said_without_fields
from coord.fast import next_options

# the CLI command → (the tool that does it, the argument the command's first word fills)
TOOL_WORDS: dict[str, tuple[str, str | None]] = {
    "next": ("claim", None),  # a claim with no item takes the best ready one
    "claim": ("claim", "item"),
    "start": ("claim", "item"),  # the claim tool's worktree argument does what start does
    "show": ("thread", "item"),
    "log": ("board", None),
    "ls": ("board", None),
    "queue": ("board", None),  # the board tool lists what waits to land
    "reply": ("reply", "item"),
    "heartbeat": ("heartbeat", "item"),
    "done": ("done", "item"),
    "release": ("release", "item"),
    "escalate": ("escalate", "item"),
    "add": ("post", None),
    "send": ("post", "to"),  # a direct message: a note addressed to the agent
    "inbox": ("inbox", None),
    "reserve": ("reserve_files", "patterns"),
    "unreserve": ("release_files", "patterns"),
    "who": ("who_holds", "path"),
    "wait": ("claim", "item"),  # claim and reserve_files wait in line with wait_seconds
    "ask": ("claim", "item"),  # and ask the holder with ask
    "answer-ask": ("release", "answer_ask"),
    "asks": ("inbox", None),
}
# what a person does at a shell, which no tool does: said as it is
PERSONS_COMMANDS = {
    "serve",
    "stop",
    "init",
    "uninstall",
    "answer",
    "guard",
    "git",
    "spec",
    "open",
    "mcp",
    "land",  # the daemon lands the queue; a person runs a runner of their own
    "abandon",  # giving up an item's work for good: its last holder at a shell, or a human
    "token",  # people's and machines' tokens: the board's owner issues them
}

_COMMAND = re.compile(r"`coord ([a-z][a-z-]*)((?: [^`]*)?)`")


def in_tool_words(message: str) -> str:
    """``message`` with each CLI command it names said as the tool call that does it."""

    def said(match: re.Match[str]) -> str:
        verb, rest = match.group(1), match.group(2).strip()
        if verb not in TOOL_WORDS:
            return match.group(0)
        tool, argument = TOOL_WORDS[verb]
        if verb == "next":
            return f"`{tool}` with no item"
        if verb == "send" and rest:  # a direct message is a note addressed to the agent
            return f"`{tool}` with kind note, to {rest.split()[0]}"
        words = rest.split()
        given = []
        if words and argument and not words[0].startswith("-"):
            given.append(f"{argument} {words[0]}")
        # a flag with its value is the tool's argument of that name (--kind note: kind note)
        for flag, value in itertools.pairwise(words):
            if flag.startswith("--") and not value.startswith("-"):
                given.append(f"{flag[2:].replace('-', '_')} {value}")
        return f"`{tool}` with {', '.join(given)}" if given else f"`{tool}`"

    return _COMMAND.sub(said, message)


def refusal(err: CoordError) -> CallToolResult:
    """The error result a model reads: the board's error object, as structured content and as
    its JSON text for clients that show only text."""
    shown = {**err.to_dict(), "message": _message(err)}
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(shown))],
        structured_content=shown,
        is_error=True,
    )


def _message(err: CoordError) -> str:
    if err.code == "checks_required":
        # Only the daemon's /mcp meets it (over stdio, done runs the checks where the agent
        # works), and there the board's words (send `evidence`) name no argument of `done`.
        checks = ", ".join(f"`{c}`" for c in err.details.get("checks") or [])
        return (
            f"item {err.details.get('id')} has checks ({checks}), and this MCP server runs in "
            "the coord daemon, not where you work, so it cannot run them: run them yourself, "
            "then call `done` with skip_checks_reason saying how they passed (recorded for "
            "everyone), or work through `coord mcp` (stdio), whose `done` runs them"
        )
    if err.code == "checks_failed":
        # the board's advice names the HTTP API's fields (`evidence`, `skip_checks`); here
        # done runs the checks itself and takes the reason as skip_checks_reason
        facts, _, output = said_without_fields(err).partition("\n")
        advice = (
            " Fix it and call `done` again (it runs the checks where you work), or close it "
            "anyway with skip_checks_reason (recorded for everyone)"
        )
        return in_tool_words(facts + advice + (f"\n{output}" if output else ""))
    said = in_tool_words(err.message)
    if err.details.get("next"):  # the options of the structured ``next``, as one line
        speakable = {k: v for k, v in err.details["next"].items() if _has_tool_words(v)}
        if speakable:
            said += "\n" + next_options.said(speakable, words=_option_words)
    return said


def _option_words(option: dict[str, Any]) -> str:
    """A ``next`` option's command as the tool call that does it. Waiting and asking are the
    claim's or the reservation's (``claim`` for an item, ``reserve_files`` for paths): read
    off the option's ``item`` or ``paths``, since a path and a package id can look alike."""
    verb = str(option["command"]).split()[1]
    if verb in ("wait", "ask") and ("item" in option or "paths" in option):
        if option.get("item") is not None:
            call = f"`claim` with item {option['item']}"
        else:
            call = f"`reserve_files` with patterns {' '.join(option.get('paths') or [])}"
        return call + (", ask TEXT" if verb == "ask" else "")
    return in_tool_words(f"`{option['command']}`")


def _has_tool_words(option: dict[str, Any]) -> bool:
    """Can this face say the option's command as a tool call? One it cannot (a command with no
    tool yet) stays in the structured ``next`` only, never as a CLI line in a model's text."""
    words = str(option.get("command", "")).split()
    return len(words) > 1 and (words[1] in TOOL_WORDS or words[1] in PERSONS_COMMANDS)


def bad_arguments(tool: str, errors: list[Any], described: dict[str, str]) -> InvalidInput:
    """The schema's refusal of a call's arguments (pydantic's ``errors()``) as the board says
    one of its own: the argument, what was wrong and what the argument is, no validator URL."""
    problems: dict[str, str] = {}
    for error in errors:
        field = str(error["loc"][0]) if error.get("loc") else "arguments"
        problems.setdefault(field, "missing" if error["type"] == "missing" else error["msg"])
    said = [
        f"{tool} needs the argument {field} ({described.get(field, '')})"
        if problem == "missing"
        else f"argument {field} of {tool}: {problem[:1].lower()}{problem[1:]} "
        f"({described.get(field, 'see the input schema')})"
        for field, problem in problems.items()
    ]
    return InvalidInput("; ".join(said), field=next(iter(problems)), tool=tool)


def unknown_arguments(tool: str, unknown: list[str], known: list[str]) -> InvalidInput:
    """Typos must not pass silently (the schema's model would drop them): name the known
    arguments, as the board does for an unknown field."""
    return InvalidInput(
        f"{tool} has no argument {', '.join(unknown)}; its arguments are "
        f"{', '.join(known) or 'none'}",
        field=unknown[0],
        tool=tool,
    )
