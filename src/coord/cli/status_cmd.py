"""`coord status`: the daemon and the board in one screen (``--json``: one document).

It never starts a daemon just to report: with none running it says so and reports what the
board's files tell (the board, its size or its database, its settings). The counts come from
the daemon's ``GET /v1/status``, grouped queries that stay cheap on a board of any size. On a
team board (PostgreSQL) it also names the database and the other machines' live daemons.
"""

from __future__ import annotations

import os
import time

from coord import __version__
from coord.cli.render import duration
from coord.errors import CoordError
from coord.fast import board_files

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from pathlib import Path
    from typing import Any

    from coord.cli.context import Context, Result


def args_status(p: argparse.ArgumentParser) -> None:
    """No options: the board is the one found from here (or ``COORD_DIR``)."""


def cmd_status(args: argparse.Namespace, ctx: Context) -> Result:
    board_dir = ctx.board_dir
    daemon, board = daemon_status(board_dir)
    document = {"board_dir": str(board_dir), "cli_version": __version__, "daemon": daemon}
    document["board"] = board if board is not None else files_status(board_dir)
    return document, "\n".join(_lines(document))


def daemon_status(board_dir: Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(what is known of the daemon, the board's overview when a daemon answered)."""
    from coord.client.http import Client

    client = Client(board_dir, autostart=False)  # a report must not start what it reports on
    record = client.daemon_record()
    if record is None:
        left = board_files.daemon_record_path(board_dir).exists()
        note = "no daemon running (coord status starts none; any board command starts one)"
        if left:
            note += f"; {board_files.daemon_record_path(board_dir)} is left from one that died"
        return {"running": False, "note": note}, None
    daemon: dict[str, Any] = {
        "running": True,
        "pid": record.get("pid"),
        "url": record.get("url"),
        "started_at": record.get("started_at"),
    }
    started = record.get("started_at")
    if isinstance(started, int | float):
        daemon["uptime_seconds"] = round(time.time() - started, 1)
    try:
        answer = client.get("/v1/status", timeout=10.0)
    except CoordError as err:
        return {**daemon, "answering": False, "note": err.message}, None
    daemon.update(
        answering=True, version=answer["version"], schema_version=answer["schema_version"]
    )
    daemon["versions_agree"] = answer["version"] == __version__
    daemon["storage"] = answer.get("storage")
    daemon["others"] = [d for d in answer.get("daemons", []) if not d.get("this")]
    if "landing" in answer:  # an older daemon says nothing of it
        daemon["landing"] = answer["landing"]
    return daemon, answer["board"]


def files_status(board_dir: Path) -> dict[str, Any]:
    """What the files say when no daemon can: no counts (they need the board read)."""
    try:
        settings: dict[str, Any] | str = board_files.read_config(board_dir)
    except CoordError as err:
        settings = err.message
    claims = board_files.claims_dir(board_dir)
    remembered = sorted(p.stem for p in claims.glob("*.json")) if claims.is_dir() else []
    found: dict[str, Any] = {"settings": settings, "remembered_claims_of": remembered}
    if isinstance(settings, dict) and settings.get("database"):
        # checked: config never holds a password (board_files.check_database_url)
        return {"database": settings["database"], **found}
    db = board_files.db_path(board_dir)
    size = sum(
        os.stat(path).st_size
        for path in (db, db.with_name(db.name + "-wal"))
        if os.path.exists(path)
    )
    return {"db_bytes": size, **found}


def _lines(doc: dict[str, Any]) -> list[str]:
    daemon, board = doc["daemon"], doc["board"]
    lines = [_daemon_line(daemon, doc["cli_version"]), f"board:   {doc['board_dir']}"]
    lines += _team_lines(daemon)
    if daemon.get("landing"):
        lines.append(_landing_line(daemon["landing"]))
    if "counts" not in board:
        if "database" in board:
            lines.append(f"         kept in PostgreSQL {board['database']}; counts need the daemon")
        else:
            lines.append(f"         {board['db_bytes']:,} bytes on disk; counts need the daemon")
        if isinstance(board["settings"], str):
            lines.append(f"config:  {board['settings']}")
        return lines
    counts = board["counts"]
    shown = ", ".join(f"{counts[s]:,} {s}" for s in counts)
    lines.append(f"items:   {board['total']:,} ({shown})")
    agents = board["active_agents"]
    names = ", ".join(
        a["name"] + (f" (holds {len(a['holding'])})" if a["holding"] else "") for a in agents
    )
    lines.append(f"agents:  {len(agents)} active now" + (f": {names}" if names else ""))
    window = duration(board["near_expiry_seconds"])
    lines += _claim_lines(f"claims ending within {window}", board["near_expiry"], "in")
    lines += _claim_lines("claims past their lease (claimable again)", board["lapsed"], "ago")
    waiting = board["needs_human"]
    if waiting:
        lines.append(f"needs a human ({counts['needs_human']:,}):")
        for item in waiting:
            to = f" (for {item['escalate_to']})" if item.get("escalate_to") else ""
            question = " ".join(str(item["question"]).split())
            lines.append(f"  {_ref(item)} {item['holder']} asks{to}: {question}")
    else:
        lines.append("needs a human: nothing")
    return lines


def _landing_line(landing: dict[str, Any]) -> str:
    """Whether the daemon lands the queue, and how its runner is doing."""
    if not landing.get("in_daemon"):
        return f"landing: not in the daemon ({landing.get('off')})"
    state = landing.get("state")
    said = {
        "starting": "starting",
        "watching": "the daemon lands the queue",
        "lease_held": "the daemon's runner waits its turn: another runner holds the lease",
        "failed": "the daemon's runner FAILED",
        "stopped": "the daemon's runner stopped",
        "dead": "the daemon's runner DIED (restart the daemon: `coord stop`); `coord land` lands",
    }.get(str(state), str(state))
    if landing.get("item"):
        said += f", landing {landing['item']} now"
    said += f" ({landing.get('landed', 0)} landed"
    if landing.get("last_pass_at"):
        said += f", last pass {landing['last_pass_at']}"
    said += ")"
    if landing.get("error"):
        said += f": {landing['error']}"
        if state == "failed":
            said += " (tried again every few seconds; `coord land` lands meanwhile)"
    return f"landing: {said}"


def _team_lines(daemon: dict[str, Any]) -> list[str]:
    """A team board's database and the other machines' daemons serving it."""
    storage = daemon.get("storage") or {}
    if storage.get("backend") != "postgresql":
        return []
    lines = [f"storage: PostgreSQL {storage.get('database')} (a team board)"]
    others = daemon.get("others") or []
    if not others:
        return [*lines, "others:  no other daemon serves this board now"]
    serve = "1 more daemon serves" if len(others) == 1 else f"{len(others)} more daemons serve"
    lines.append(f"others:  {serve} this board:")
    for other in others:
        age = other.get("heartbeat_age_seconds")
        beat = f", heartbeat {duration(age)} ago" if isinstance(age, int | float) else ""
        lines.append(
            f"  {other.get('machine')} pid {other.get('pid')} at {other.get('url')} "
            f"({other.get('board_dir')}), coord {other.get('version')}{beat}"
        )
    return lines


def _daemon_line(daemon: dict[str, Any], cli_version: str) -> str:
    if not daemon["running"]:
        return f"daemon:  {daemon['note']}"
    where = f"pid {daemon['pid']} at {daemon['url']}"
    if "uptime_seconds" in daemon:
        where += f", up {duration(daemon['uptime_seconds'])}"
    if not daemon.get("answering"):
        return f"daemon:  {where}, not answering: {daemon['note']}"
    version = f"coord {daemon['version']}"
    if not daemon["versions_agree"]:
        version += f" (this CLI is {cli_version}: restart it with `coord stop`)"
    return f"daemon:  {where}, {version}"


def _claim_lines(title: str, claims: list[dict[str, Any]], when: str) -> list[str]:
    if not claims:
        return [f"{title}: none"]
    lines = [f"{title}:"]
    for claim in claims:
        left = duration(abs(claim["seconds_left"]))
        timing = f"ends in {left}" if when == "in" else f"ended {left} ago"
        lines.append(f"  {_ref(claim)} {claim['holder']}, lease {timing}: {claim['title']}")
    return lines


def _ref(item: dict[str, Any]) -> str:
    return f"{item['key']} (#{item['id']})" if item.get("key") else f"#{item['id']}"
