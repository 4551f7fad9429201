"""What the session-start and stop hooks say, read from (and for stop, written to) the board.

Both reach the board through the daemon's HTTP API, as the CLI does (``coord.client.http``,
which starts the daemon when none runs): a hook is never a second writer beside it.

- ``start_context``: the text a new session starts with. It records the session's agent name
  for this client process (``coord.fast.identity.remember``, so the MCP server and later hooks
  started by the same client find it), then asks the daemon for the agent's claims and files,
  its inbox (peeked: not marked read) and a few ready items, and ends with how to use coord.
  Where the client reads environment for later shell commands from a file a SessionStart hook
  appends to (``ENV_FILE_VARS``), it also exports ``COORD_AGENT`` there, so the agent's own
  ``coord`` commands carry the hooks' name even where the client process cannot be found
  (no ``/proc``, a wrapper that does not ``exec``).
  With no board it says so in one line; when the daemon cannot be reached it says that, and
  the rest of the text still stands (a session start is no guard: it never stops a session).
- ``stop_notice``: at the end of a turn, heartbeats every live claim the agent holds (the
  item's fencing token on the board is the agent's own, since it holds the item) and returns
  a reminder of what it still holds, or None. Never a block: a stop hook that blocks makes
  the agent continue (``stop_hook_active`` marks that), and a claim held across turns is
  normal work, not a reason to keep going.

Every request is bounded (``REQUEST_SECONDS``; starting the daemon, by the client's own
bound), so a hook never hangs the agent. Errors propagate; ``coord.hooks.run_hook`` turns
them into one line on stderr and exit 0.
"""

from __future__ import annotations

import os

from coord.fast import board_files, identity
from coord.times import clock_of_iso

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from coord.client.http import Client

    Item = dict[str, Any]  # an item as the HTTP API answers it

# Claude Code sources CLAUDE_ENV_FILE before each Bash command. openai/codex's main branch
# does the same with CODEX_ENV_FILE (codex-rs/hooks/src/events/session_start_env_file.rs);
# no release has it yet (0.171.0 does not), and there a command's CODEX_THREAD_ID names the
# agent (coord.fast.identity.of_command).
ENV_FILE_VARS = ("CLAUDE_ENV_FILE", "CODEX_ENV_FILE")
REQUEST_SECONDS = 5.0  # the daemon answers in milliseconds; a session must not wait long
SHOWN_INBOX = 5
SHOWN_READY = 5

HOW_TO = (
    "How to use coord: claim an item before working on it (`coord next --as {name}` claims "
    "the best ready one, `coord claim ID --as {name}` a given one; `coord ls --ready` lists "
    "them). Claiming an item reserves its files; `coord reserve PATH --as {name}` holds other "
    "files you are about to edit, `coord who PATH` says who holds one. An edit to a file "
    "another agent holds is refused, and the refusal says what to do next: wait your turn "
    "(`coord wait PATH --as {name}`), pick other work, or ask the holder (`coord ask PATH "
    "--reason TEXT --as {name}`; `coord send AGENT TEXT --as {name}` writes to anyone). "
    "Your lease is renewed at the end of each turn (or `coord heartbeat ID --as {name}`); "
    "finish with `coord done ID --summary TEXT --as {name}` (it runs the item's checks "
    "first) or give the item back with `coord release ID --as {name}`. `coord inbox --as "
    "{name}` reads your messages."
)


def start_context(client: str, data: dict[str, Any]) -> str:
    cwd = _cwd(data)
    board_dir = board_files.find_board_dir(cwd)
    if board_dir is None or not board_files.has_board(board_dir):
        return (
            f"coord: there is no coord board here (no .coord/ with a board in {cwd} or above), "
            "so coord is not in use in this repository."
        )
    session_id = data.get("session_id")
    sid = session_id if isinstance(session_id, str) and session_id else None
    root = board_files.repo_root(board_dir)
    lines = [
        f"coord is in use in this repository ({root}): a shared board where parallel coding "
        "agents claim work and reserve files so they do not collide."
    ]
    try:
        name = identity.remember(board_dir, client, sid) if sid else identity.agent_name(board_dir)
    except OSError as err:  # the name still holds for this session's hooks
        name = identity.agent_name(board_dir, client, sid)
        lines.append(f"(coord could not record this session in {board_dir}: {err.strerror})")
    if name is None:
        lines.append("coord could not tell your agent name: pass `--as NAME` to coord commands.")
        lines.append(HOW_TO.format(name="NAME"))
        return "\n".join(lines)
    lines.append(
        f"You are coord agent `{name}`: pass `--as {name}` to every coord command "
        f"(or set COORD_AGENT={name})."
    )
    try:
        _export_name(name)
    except OSError as err:  # the agent still has `--as NAME`, said just above
        lines.append(f"(coord could not set COORD_AGENT for your shell: {err.strerror})")
    try:
        lines += _summary(board_dir, name)
    except Exception as err:  # the context still helps without the board's news
        lines.append(f"(coord could not read the board just now: {' '.join(str(err).split())})")
    lines.append(HOW_TO.format(name=name))
    return "\n".join(lines)


def stop_notice(client: str, data: dict[str, Any]) -> str | None:
    board_dir = board_files.find_board_dir(_cwd(data))
    if board_dir is None or not board_files.has_board(board_dir):
        return None
    session_id = data.get("session_id")
    name = identity.agent_name(
        board_dir, client, session_id if isinstance(session_id, str) and session_id else None
    )
    if name is None:
        return None
    from coord.errors import CoordError, DaemonUnavailable

    daemon = _daemon(board_dir)
    renewed: list[tuple[Item, str]] = []
    waiting: list[Item] = []
    lost: list[Item] = []
    for item in _claimed_by(daemon, name):
        if item["question"] is not None:
            waiting.append(item)  # needs_human: held until answered, up to the escalation bound
        elif item["lease_expired"]:  # on the board's clock, not this process's
            lost.append(item)
        else:
            try:
                claim = daemon.post(
                    f"/v1/items/{item['id']}/heartbeat",
                    {"agent": name, "token": item["fencing_token"]},
                )
            except DaemonUnavailable:
                raise  # not a lost lease: nobody could say
            except CoordError:  # lease_lost, not_claimed: the claim is no longer this agent's
                lost.append(item)
            else:
                renewed.append((item, claim["lease_expires_at"]))
    files = [r for r in _reservations(daemon, name) if r["item"] is None]
    parts: list[str] = []
    if renewed:
        held = ", ".join(f"{_item(i)} (until {clock_of_iso(until)})" for i, until in renewed)
        parts.append(
            f"coord: {name} still holds {held}; lease renewed. When one is finished: "
            f"`coord done ID --as {name}`; to stop working on it: `coord release ID --as {name}`."
        )
    if waiting:
        parts.append(f"coord: waiting for a human answer: {', '.join(_item(i) for i in waiting)}.")
    if lost:
        ids = ", ".join(_item(i) for i in lost)
        parts.append(
            f"coord: the lease on {ids} ran out; claim it again (`coord claim ID --as {name}`) "
            "before going on, or leave it."
        )
    if files:
        held_files = ", ".join(
            f"{r['pattern']} (until {clock_of_iso(r['expires_at'])})" for r in files
        )
        parts.append(
            f"coord: {name} also holds files {held_files}; free them when done: "
            f"`coord unreserve --all --as {name}`."
        )
    return "\n".join(parts) or None


def _export_name(name: str) -> None:
    """Append ``export COORD_AGENT=<name>`` to the client's env file, once.

    Nothing when COORD_AGENT is already set (the name came from it) or no env file is named.
    A file that already exports COORD_AGENT (a resumed session) is left as it is: a second,
    different line would rename the agent halfway through its work.
    """
    if identity.from_env() is not None:
        return
    path = next((os.environ[v] for v in ENV_FILE_VARS if os.environ.get(v)), None)
    if path is None:
        return
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        text = ""
    if any(_exports_agent(line) for line in text.splitlines()):
        return
    from shlex import quote

    with open(path, "a", encoding="utf-8") as f:
        gap = "\n" if text and not text.endswith("\n") else ""
        f.write(f"{gap}export COORD_AGENT={quote(name)}\n")


def _exports_agent(line: str) -> bool:
    words = line.split()
    return len(words) >= 2 and words[0] == "export" and words[1].startswith("COORD_AGENT=")


def _summary(board_dir: Path, name: str) -> list[str]:
    """The agent's claims, files, inbox (peeked) and ready items, from the daemon."""
    from coord.model import WORK_KINDS

    daemon = _daemon(board_dir)
    mine = _claimed_by(daemon, name)
    files = _reservations(daemon, name)
    inbox = daemon.post("/v1/inbox", {"agent": name, "peek": True, "limit": 200})["events"]
    listed = daemon.get("/v1/items?ready=true&limit=50")["items"]
    ready = [i for i in listed if i["kind"] in WORK_KINDS]
    lines: list[str] = []
    if mine:
        lines.append("Your claims: " + "; ".join(_claim(i) for i in mine) + ".")
    else:
        lines.append("You hold no claims.")
    if files:
        lines.append("Files you hold: " + ", ".join(_reservation(r) for r in files) + ".")
    if inbox:
        more = f" (the first {SHOWN_INBOX})" if len(inbox) > SHOWN_INBOX else ""
        lines.append(
            f"Your inbox: {len(inbox)}{'+' if len(inbox) == 200 else ''} unread{more}; "
            f"`coord inbox --as {name}` reads and marks them:"
        )
        lines += [f"  - {_event(e)}" for e in inbox[:SHOWN_INBOX]]
    else:
        lines.append("Your inbox is empty.")
    if ready:
        more = f" (the first {SHOWN_READY} of {len(ready)})" if len(ready) > SHOWN_READY else ""
        lines.append(f"Ready to claim{more}:")
        lines += [f"  - {_ready(i)}" for i in ready[:SHOWN_READY]]
    else:
        lines.append("Nothing is ready to claim right now.")
    return lines


def _daemon(board_dir: Path) -> Client:
    from coord.client.http import Client

    return Client(board_dir, timeout=REQUEST_SECONDS)


def _claimed_by(daemon: Client, name: str) -> list[Item]:
    """The items ``name`` holds: claimed (live or lapsed) and needs_human, oldest first,
    read as ``name`` (a read shows a claim's token to its holder alone)."""
    from urllib.parse import quote

    reader = quote(name, safe="")
    found = [
        item
        for state in ("claimed", "needs_human")
        for item in daemon.get(f"/v1/items?state={state}&limit=1000&agent={reader}")["items"]
        if item["claimed_by"] == name
    ]
    return sorted(found, key=lambda item: item["id"])


def _reservations(daemon: Client, name: str) -> list[dict[str, Any]]:
    from urllib.parse import quote

    return list(daemon.get(f"/v1/reservations?agent={quote(name, safe='')}")["reservations"])


def _cwd(data: dict[str, Any]) -> str:
    cwd = data.get("cwd")
    return cwd if isinstance(cwd, str) and cwd else os.getcwd()


def _item(item: Item) -> str:
    key = f" ({item['key']})" if item["key"] else ""
    return f'#{item["id"]}{key} "{_short(item["title"], 60)}"'


def _claim(item: Item) -> str:
    if item["question"] is not None:
        return f"{_item(item)}, waiting for a human answer"
    until = clock_of_iso(item["lease_expires_at"])
    if item["lease_expired"]:
        return f"{_item(item)}, lease ran out at {until}: claim it again"
    files = f", files {', '.join(item['files'])}" if item["files"] else ""
    return f"{_item(item)} (token {item['fencing_token']}, lease until {until}{files})"


def _reservation(r: dict[str, Any]) -> str:
    kind = "exclusive" if r["exclusive"] else "shared"
    item = f", item {r['item']}" if r["item"] is not None else ""
    return f"{r['pattern']} ({kind}{item}, until {clock_of_iso(r['expires_at'])})"


def _event(e: dict[str, Any]) -> str:
    item = f"#{e['item_id']} " if e["item_id"] is not None else ""
    details = e["details"] or {}
    text = next(
        (
            details[k]
            for k in ("excerpt", "question", "text", "answer", "summary", "reason", "title")
            if isinstance(details.get(k), str) and details[k]
        ),
        "",
    )
    said = f": {_short(text, 100)}" if text else ""
    return f"{item}{e['kind']} by {e['agent'] or 'someone'} at {clock_of_iso(e['at'])}{said}"


def _ready(item: Item) -> str:
    return f"{_item(item)} [{item['kind']}, priority {item['priority']}]"


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
