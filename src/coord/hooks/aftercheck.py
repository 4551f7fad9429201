"""The after-tool check: did an allowed call change a file another agent holds?

``snapshot`` runs in the guard, once it has allowed a call (``coord.hooks.run_hook``): it
records the held files of the agent's working tree (``coord.fast.tripwire.before``).
``answer`` runs in the client's after-tool hook (Claude Code and Codex ``PostToolUse``,
Gemini ``AfterTool``, Cursor ``afterShellExecution`` and ``afterFileEdit``) and compares.
On a change to a file another agent holds:

1. coord puts the file back from the snapshot, where that is safe (the file is as the call
   left it, its holder has no call of its own running, the snapshot has its content), and
   keeps what it overwrote in the snapshot store (``.coord/snapshots/SHA256``), so that not
   even a misjudged restore loses work. It restores by itself rather than asking the agent
   to: the agent's own next command could change the file again or restore it wrongly, and
   the holder's work should not wait on an agent that just showed it does not know the
   file is held.
2. One ``held_files_changed`` event on the board (``POST /v1/held-files:changed``, through
   the daemon, started as the CLI starts it) names the agent, the command (or tool and
   path) and each file; it reaches each holder's inbox. When the daemon cannot be reached
   the restore still stands and the agent is told the event could not be recorded.
3. The agent is told, in its client's own words (``spec.after``), which files it changed,
   who holds them, what coord put back and what it must still do.

The call is matched to its snapshot by the client's tool-use id where it sends one (Claude
Code, Codex, Cursor's ``preToolUse``), else by the tool and its input (Gemini, Cursor's
shell); Cursor's ``afterFileEdit`` names neither, so it takes the agent's latest snapshot.
"""

from __future__ import annotations

from coord.fast import board_files, identity, jsontext, tripwire

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

REQUEST_SECONDS = 5.0  # the report is one small write; the daemon answers in milliseconds
SHOWN_FILES = 10  # files named in the message to the agent; the event lists them all
MAX_COMMAND_SHOWN = 200


def call_id(client: str, data: dict[str, Any]) -> str:
    """What names one tool call in both its before and after hooks."""
    session = data.get("session_id") or ""
    tool_use = data.get("tool_use_id")
    if isinstance(tool_use, str) and tool_use:
        return f"{client}\0{session}\0{tool_use}"
    tool_input = data.get("tool_input", data.get("args"))
    shown = jsontext.dumps(tool_input, sort_keys=True, default=str)
    return f"{client}\0{session}\0{data.get('tool_name')}\0{shown}"


def what_of(data: dict[str, Any]) -> dict[str, Any]:
    """The call as the report names it: the tool and its command, or the path it edits."""
    tool_input = data.get("tool_input", data.get("args"))
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    what: dict[str, Any] = {"tool": str(data.get("tool_name") or "tool")}
    command = tool_input.get("command")
    if isinstance(command, str):
        what["command"] = command
    for field in ("file_path", "notebook_path", "path"):
        value = tool_input.get(field)
        if isinstance(value, str):
            what["path"] = value
            break
    return what


def _agent(home: str | None, client: str, data: dict[str, Any]) -> str | None:
    session_id = data.get("session_id")
    if isinstance(session_id, str) and session_id:
        return identity.agent_name(home, client, session_id)
    return identity.agent_name(home)


def snapshot(client: str, data: dict[str, Any]) -> None:
    """Before an allowed call: record the held files of the agent's working tree. Errors
    propagate: the guard refuses a call it could not snapshot (fail closed)."""
    cwd = data.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        return
    home = board_files.locate(cwd)
    if home is None or not board_files.has_board(home):
        return
    agent = _agent(home, client, data)
    where = tripwire.place(home, cwd, agent, call_id(client, data))
    tripwire.before(where, what_of(data))


def answer(spec: Any, client: str, event: str, data: dict[str, Any]) -> dict[str, Any] | None:
    """After the call: the client's answer telling the agent what it changed, or None."""
    cwd = data.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        return None
    home = board_files.locate(cwd)
    if home is None or not board_files.has_board(home):
        return None
    agent = _agent(home, client, data)
    where = tripwire.place(home, cwd, agent, call_id(client, data))
    record = tripwire.load(where)
    if record is None and event in getattr(spec, "AFTER_ANY_CALL", ()):
        record = tripwire.load_latest(where)
    tripwire.sweep_calls(home)
    if record is None:
        return None
    changes = tripwire.after(where, record)
    if not changes:
        return None
    recorded_what = record.get("what")
    what = recorded_what if isinstance(recorded_what, dict) else what_of(data)
    name = agent or "unknown"
    recorded = report(home, name, what, changes)
    text = message(name, what, changes, recorded)
    if getattr(spec, "AFTER_AT_STOP", False):
        tripwire.leave_notice(home, agent, text)
    return dict(spec.after(event, text, short_notice(name, changes)))


def pending_notice(data: dict[str, Any], client: str) -> str | None:
    """The after-tool message waiting for the agent's stop hook (Cursor), taken."""
    cwd = data.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        return None
    home = board_files.locate(cwd)
    if home is None:
        return None
    return tripwire.take_notice(home, _agent(home, client, data))


def report(home: str, agent: str, what: dict[str, Any], changes: list[Any]) -> str | None:
    """Record the change on the board: None once recorded, else why it could not be."""
    from pathlib import Path

    from coord.client.http import Client
    from coord.errors import CoordError
    from coord.limits import MAX_BODY, MAX_REPORTED_FILES

    listed = changes[:MAX_REPORTED_FILES]
    body: dict[str, Any] = {
        "agent": agent,
        "changed": [c.to_dict() for c in listed],
        "tool": what.get("tool"),
        "more_files": len(changes) - len(listed),
    }
    command = what.get("command")
    if isinstance(command, str):  # a command past the board's text limit is sent cut to it
        body["command"] = command.encode()[:MAX_BODY].decode(errors="ignore")
    try:
        Client(Path(home), timeout=REQUEST_SECONDS).post("/v1/held-files:changed", body)
    except CoordError as err:
        return err.message
    except OSError as err:
        return str(err)
    return None


def call_text(what: dict[str, Any]) -> str:
    command = what.get("command")
    if isinstance(command, str):
        flat = " ".join(command.split())
        if len(flat) > MAX_COMMAND_SHOWN:
            flat = flat[: MAX_COMMAND_SHOWN - 1] + "…"
        return f"command `{flat}`"
    path = what.get("path")
    tool = what.get("tool") or "tool call"
    return f"{tool} of {path}" if isinstance(path, str) else str(tool)


def message(agent: str, what: dict[str, Any], changes: list[Any], recorded: str | None) -> str:
    """What the agent is told: which held files it changed, what coord did, what to do."""
    lines = [
        f"coord: your {call_text(what)} changed {_count(len(changes))} that another agent "
        "holds. Files held by another agent are not yours to write (the guard could not "
        "tell this call would write them):"
    ]
    for change in changes[:SHOWN_FILES]:
        done = "deleted" if change.change == "deleted" else "changed"
        if change.restored:
            fate = "coord put it back as it was before your call"
        else:
            fate = (
                f"NOT put back ({change.why}): put it back as it was, or ask {change.holder} "
                "what to do"
            )
        lines.append(f"  - {change.path} (held by {change.holder}): {done}; {fate}")
    if len(changes) > SHOWN_FILES:
        lines.append(f"  - and {len(changes) - SHOWN_FILES} more")
    holders = sorted({c.holder for c in changes})
    if recorded is None:
        lines.append(
            f"{', '.join(holders)} {'was' if len(holders) == 1 else 'were'} told (a "
            "held_files_changed event in their inbox)."
        )
    else:
        lines.append(
            f"The board could not record this ({recorded}): tell {', '.join(holders)} "
            f"yourself (`coord send {holders[0]} TEXT --as {agent}`)."
        )
    lines.append(
        "Do not write these files again: redo your work without them, pick other work, or "
        "ask the holder to release them (`coord who PATH` says who holds a file)."
    )
    return "\n".join(lines)


def short_notice(agent: str, changes: list[Any]) -> str:
    """One line for the user: what the agent did, and what coord did about it."""
    restored = sum(1 for c in changes if c.restored)
    return (
        f"coord: {agent} changed {_count(len(changes))} another agent holds; "
        f"{restored} put back from the snapshot"
    )


def _count(n: int) -> str:
    return "1 file" if n == 1 else f"{n} files"
