"""`coord doctor`: every check a user would otherwise make by hand, each finding with the
command that fixes it. Exit 0 when all is well, 1 when something needs fixing.

The board's half is here (its settings, its files' modes, the daemon's version, remembered
claim tokens gone stale, session records of client processes that ended); the wiring's half
(clients wired, their commands found, trusted) is ``coord.wiring.checks``. Like `coord status`
it starts no daemon: what needs one is reported as "cannot tell" when none runs.
``--fix`` applies the fixes that touch only the board's own files.
"""

from __future__ import annotations

import os
import shlex
import stat
from urllib.parse import quote

from coord import __version__
from coord.errors import EXIT_OK, CoordError, InvalidInput, NotFound
from coord.fast import board_files, processes

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from pathlib import Path
    from typing import Any

    from coord.cli.context import Context, Result
    from coord.client.http import Client

    Finding = dict[str, Any]

EXIT_NEEDS_FIXING = 1
FIX_HERE = "coord doctor --fix"


def args_doctor(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--fix",
        action="store_true",
        help="also fix what concerns only the board's files: their modes, stale remembered "
        "claim tokens, session records of ended client processes",
    )


def cmd_doctor(args: argparse.Namespace, ctx: Context) -> Result:
    from coord.wiring.checks import finding, wiring_findings

    board_dir = ctx.board_dir
    fixing = bool(getattr(args, "fix", False))
    found = [
        _config(board_dir, finding),
        _board(board_dir, finding),
        _modes(board_dir, finding, fixing),
    ]
    found += _daemon_and_claims(board_dir, finding, fixing)
    found.append(_sessions(board_dir, finding, fixing))
    found += wiring_findings(board_dir)
    to_fix = [f for f in found if f["status"] == "fix"]
    document = {"board_dir": str(board_dir), "ok": not to_fix, "findings": found}
    lines = [_line(f) for f in found]
    lines.append(
        f"{len(to_fix)} to fix"
        if to_fix
        else "all well" + (" (fixed what --fix could)" if fixing else "")
    )
    return document, "\n".join(lines), EXIT_NEEDS_FIXING if to_fix else EXIT_OK


def _line(f: Finding) -> str:
    mark = {"ok": "ok  ", "fix": "FIX ", "unknown": "??  "}[f["status"]]
    text = f"{mark} {f['check']}: {f['message']}"
    if f["status"] != "ok" and f.get("fix"):
        text += f"\n       fix: {f['fix']}"
    return text


def _config(board_dir: Path, finding: Any) -> Finding:
    path = board_dir / "config.json"
    try:
        board_files.read_config(board_dir)
    except InvalidInput as err:
        fix = (
            f"edit {path} as said (docs/reference/settings.md says what each setting may be), "
            f"or `rm {path}` for the defaults"
        )
        return finding("config", "fix", err.message, fix)
    return finding("config", "ok", f"{path} is valid")


def _board(board_dir: Path, finding: Any) -> Finding:
    path = board_files.token_path(board_dir)
    try:
        url = board_files.database_url(board_dir)
    except InvalidInput:
        url = None  # the config finding says what is wrong with it
    if url is not None:
        return _database(url, path, finding)
    db = board_files.db_path(board_dir)
    if not os.access(db, os.R_OK | os.W_OK):
        fix = f"chmod u+rw {shlex.quote(str(db))} (as its owner)"
        return finding("board", "fix", f"{db} cannot be read and written by you", fix)
    if not path.is_file():
        return finding(
            "board", "fix", f"{path} is missing: no client can reach the daemon", "coord init"
        )
    return finding("board", "ok", f"{db} and its token are there, yours to read and write")


def _database(url: str, token: Path, finding: Any) -> Finding:
    """A team board: its database answers, at the schema this release knows."""
    if not token.is_file():
        return finding(
            "board", "fix", f"{token} is missing: no client can reach the daemon", "coord init"
        )
    try:
        from coord.storage.postgres import describe, probe
    except ImportError:
        return finding(
            "board",
            "fix",
            "this board lives in PostgreSQL, but its driver is not installed",
            "pip install 'coord[postgres]'",
        )
    where = describe(url)
    try:
        found, newest = probe(url)
    except CoordError as err:
        return finding(
            "board",
            "fix",
            err.message,
            err.details.get("fix")
            or f"start the PostgreSQL server at {where}, or fix the database setting; a password "
            "goes in PGPASSWORD or ~/.pgpass",
        )
    if found > newest:
        return finding(
            "board",
            "fix",
            f"{where} has schema {found}, written by a newer coord (this one knows {newest})",
            "upgrade coord on this machine",
        )
    if found < newest:
        return finding(
            "board",
            "fix",
            f"{where} has schema {found}; this coord brings it to {newest} when its daemon starts",
            "coord stop (the next board command starts this version's daemon, which migrates)",
        )
    return finding("board", "ok", f"{where} answers, schema {found} as this coord's")


def _modes(board_dir: Path, finding: Any, fixing: bool) -> Finding:
    """The board's files are their owner's alone: 0700 directories, 0600 files."""
    loose = []
    for directory, subdirs, filenames in os.walk(board_dir):
        for name in ["", *subdirs, *filenames]:
            path = os.path.join(directory, name) if name else directory
            if name == "" and directory != str(board_dir):
                continue  # each folder is seen once, as its parent's entry
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                continue
            if not stat.S_ISLNK(mode) and mode & 0o077:
                loose.append(f"{os.path.relpath(path, board_dir)} ({stat.S_IMODE(mode):04o})")
    if not loose:
        return finding("modes", "ok", "the board's files are their owner's alone")
    if fixing:
        board_files.tighten_modes(board_dir)
        return finding("modes", "ok", f"made owner-only: {', '.join(loose)}")
    return finding(
        "modes",
        "fix",
        f"others may read the board (it holds item bodies, replies and the token): "
        f"{', '.join(loose)}",
        f"chmod -R go-rwx {shlex.quote(str(board_dir))} (or {FIX_HERE})",
    )


def _daemon_and_claims(board_dir: Path, finding: Any, fixing: bool) -> list[Finding]:
    from coord.client.http import Client

    client = Client(board_dir, autostart=False)  # checking must not start a daemon
    record = client.daemon_record()
    if record is None:
        no_daemon = "no daemon running (any board command starts one)"
        return [
            finding("daemon", "ok", no_daemon),
            finding(
                "claim tokens",
                "unknown",
                "cannot tell whether remembered claim tokens are stale: that needs the board, "
                "read through the daemon",
                "start the daemon with any board command (`coord ls`), then `coord doctor` again",
            ),
        ]
    try:
        health = client.get("/v1/health", timeout=10.0)
    except CoordError as err:
        fix = f"coord stop (or kill {record.get('pid')}); the next board command starts one"
        return [finding("daemon", "fix", err.message, fix)]
    version = health.get("version")
    where = f"pid {record.get('pid')} at {record.get('url')}"
    if version != __version__:
        daemon = finding(
            "daemon",
            "fix",
            f"the daemon ({where}) runs coord {version}, this CLI is {__version__}",
            "coord stop (the next board command starts this version's daemon)",
        )
    else:
        daemon = finding("daemon", "ok", f"{where}, coord {version} as this CLI")
    return [daemon, _claim_tokens(board_dir, client, finding, fixing)]


def _claim_tokens(board_dir: Path, client: Client, finding: Any, fixing: bool) -> Finding:
    """A token remembered for an item the agent no longer holds with it: `coord done ID`
    would send it and be refused as lease_lost."""
    from coord.client import tokens

    folder = board_files.claims_dir(board_dir)
    stale: list[tuple[str, str]] = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        agent = path.stem.replace("%3A", ":")
        for ref, token in tokens.remembered_all(board_dir, agent).items():
            if not _holds(client, agent, ref, token):
                stale.append((agent, ref))
    if not stale:
        return finding("claim tokens", "ok", "every remembered claim token is live")
    shown = ", ".join(f"{ref} ({agent})" for agent, ref in stale)
    if fixing:
        for agent, ref in stale:
            tokens.forget(board_dir, agent, ref)
        return finding("claim tokens", "ok", f"forgot stale claim tokens: {shown}")
    return finding(
        "claim tokens",
        "fix",
        f"remembered tokens of claims no longer held (in {folder}): {shown}",
        FIX_HERE,
    )


def _holds(client: Client, agent: str, ref: str, token: int) -> bool:
    try:
        # as the agent: a read shows a claim's token to its holder alone
        item = client.get(f"/v1/items/{ref}?agent={quote(agent, safe='')}")
    except (NotFound, InvalidInput):  # gone, or no item reference at all
        return False
    return bool(
        item.get("state") in ("claimed", "needs_human")
        and item.get("claimed_by") == agent
        and item.get("fencing_token") == token
    )


def _sessions(board_dir: Path, finding: Any, fixing: bool) -> Finding:
    """The SessionStart hook's record of a client process that ended names an agent for a
    pid the system may give to another process."""
    folder = board_files.sessions_dir(board_dir)
    ended = [
        p
        for p in (sorted(folder.glob("*.json")) if folder.is_dir() else [])
        if p.stem.isdigit() and not processes.alive(int(p.stem))
    ]
    if not ended:
        return finding("sessions", "ok", "no session record of an ended client process")
    names = ", ".join(p.name for p in ended)
    if fixing:
        for path in ended:
            path.unlink(missing_ok=True)
        return finding("sessions", "ok", f"removed records of ended client processes: {names}")
    return finding(
        "sessions",
        "fix",
        f"session records of client processes that ended (in {folder}): {names}",
        FIX_HERE,
    )
