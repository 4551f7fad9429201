"""`coord migrate`: copy a board to PostgreSQL, or a PostgreSQL board back to a SQLite file.

The copy itself (every table of board state, one transaction on the target, verified row
counts and digests of every column of every row) is ``coord.storage.transfer``'s; here are
the command's choices:

- The source is this board (the database its config names, else ``.coord/board.db``) unless
  ``--from`` names another. The target is named by ``--to``.
- No daemon may serve a SQLite end while it is copied: the command takes the daemon's own
  lock (``.coord/daemon.lock``) for the whole copy, so it refuses while one runs (`coord
  stop` first) and no daemon starts meanwhile. A write the daemon acknowledged after the
  snapshot would otherwise stay behind in the file the board no longer uses.
- It changes no setting unless ``--switch`` asks it to move this checkout onto the new
  PostgreSQL board (the old file kept beside it, renamed), still under the daemon lock;
  otherwise the answer says what to do next.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from coord.errors import DaemonAlreadyRunning, InvalidInput
from coord.fast import board_files

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator
    from typing import Any

    from coord.cli.context import Context, Result
    from coord.storage.transfer import Location


def args_migrate(p: argparse.ArgumentParser) -> None:
    """``--to`` is required; ``--from`` defaults to this board."""
    p.add_argument(
        "--to",
        required=True,
        metavar="TARGET",
        help="where to copy the board: postgresql://USER@HOST:PORT/DATABASE (an empty "
        "database; the password from PGPASSWORD or ~/.pgpass) or sqlite:PATH (a new file)",
    )
    p.add_argument(
        "--from",
        dest="source",
        metavar="SOURCE",
        help="the board to copy, in the same forms (default: this board: the database its "
        "config names, else .coord/board.db)",
    )
    p.add_argument(
        "--switch",
        action="store_true",
        help="after a verified copy of this checkout's SQLite board to PostgreSQL, move this "
        "checkout onto it: .coord/board.db is renamed board.db.migrated and the database "
        "setting recorded (default: no setting changes)",
    )


def cmd_migrate(args: argparse.Namespace, ctx: Context) -> Result:
    from coord.storage import transfer

    target = transfer.location(args.to, "--to")
    source = transfer.location(args.source, "--from") if args.source else _this_board(ctx)
    if _same(source, target):
        raise InvalidInput(f"--to names the board being copied ({target}): name another")
    if args.switch and (args.source or source.kind != "sqlite" or target.kind != "postgresql"):
        raise InvalidInput(
            "--switch moves this checkout's SQLite board to PostgreSQL: use it with --to "
            "postgresql://… and without --from; nothing was copied",
            field="switch",
        )
    with contextlib.ExitStack() as locks:
        for end in (source, target):
            locks.enter_context(_no_daemon(end))
        report = transfer.copy_board(transfer.open_source(source), transfer.open_target(target))
        document: dict[str, Any] = report.to_dict()
        if args.switch:  # still under the daemon lock: no daemon serves the old file meanwhile
            kept = _switch(ctx.board_dir, target.where)
            document["switched"] = {"database": target.where, "old_board": str(kept)}
            document["next"] = (
                f"this checkout now uses the database (the old board is kept as {kept}); point "
                f"every other checkout at it: coord init --database {target.where}"
            )
        else:
            document["next"] = _next_step(source, target)
    return document, _text(document)


def _switch(board_dir: Path, database: str) -> Path:
    """Point this checkout at ``database``: the SQLite file (and any -wal/-shm beside it, so
    it stays a whole board) renamed aside, then the setting recorded."""
    db = board_files.db_path(board_dir)
    kept = db.with_name(db.name + ".migrated")
    for suffix in ("-wal", "-shm", ""):
        part = db.with_name(db.name + suffix)
        if part.exists():
            part.rename(kept.with_name(kept.name + suffix))
    config = board_files.read_config(board_dir)
    config["database"] = database
    board_files.write_config(board_dir, config)
    return kept


def _this_board(ctx: Context) -> Location:
    from coord.storage.transfer import Location

    board_dir = ctx.board_dir
    database = board_files.read_config(board_dir).get("database")
    if isinstance(database, str) and database:
        return Location("postgresql", database)
    return Location("sqlite", str(board_files.db_path(board_dir)))


def _same(one: Location, other: Location) -> bool:
    if one.kind != other.kind:
        return False
    if one.kind == "sqlite":
        return os.path.realpath(one.where) == os.path.realpath(other.where)
    return one.where == other.where


@contextlib.contextmanager
def _no_daemon(end: Location) -> Iterator[None]:
    """Hold the daemon lock of the board whose SQLite file ``end`` is, if it is one: no daemon
    serves it during the copy (the daemon takes the same lock: ``coord.server.daemon``)."""
    if end.kind != "sqlite":
        yield
        return
    import fcntl

    board_dir = Path(end.where).resolve().parent
    if not board_files.token_path(board_dir).exists():  # a plain file, not a board's
        yield
        return
    fd = board_files.open_private(board_dir / "daemon.lock", os.O_RDWR)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            record = _daemon_url(board_dir)
            raise DaemonAlreadyRunning(
                f"a coord daemon serves the board {board_dir}{record}: stop it with `coord stop` "
                "and migrate again (writes it took during the copy would stay behind in the "
                "file); nothing was copied",
            ) from None
        yield
    finally:
        os.close(fd)  # and the lock with it


def _daemon_url(board_dir: Path) -> str:
    import json

    try:
        record = json.loads(board_files.daemon_record_path(board_dir).read_text("utf-8"))
        return f" at {record['url']}"
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def _next_step(source: Location, target: Location) -> str:
    """What the user does next: the command changes no setting (a checkout names one board,
    and `coord init --database` refuses to name a database beside a board.db)."""
    if target.kind == "postgresql":
        return (
            f"move {source.where} away (it stays the board as it stood) and point this "
            f"checkout and every other one at the database: coord init --database {target.where}"
            " (the password from PGPASSWORD or ~/.pgpass)"
            if source.kind == "sqlite"
            else f"point each checkout at it: coord init --database {target.where}"
        )
    if source.kind == "sqlite":
        return (
            f"a copy of the board as it stood, in {target.where}; to run a checkout on it: "
            "coord stop, then put the file at .coord/board.db"
        )
    return (
        f'to run a checkout on it: stop the daemons serving {source}, take "database" out of '
        ".coord/config.json and put the file at .coord/board.db"
    )


def _text(document: dict[str, Any]) -> str:
    lines = [
        f"copied {document['rows']} rows from {document['source']} to {document['target']} "
        f"in {document['seconds']:.1f} s; verified (every column of every row, table by table):"
    ]
    for name, table in document["tables"].items():
        lines.append(f"  {name:<13} {table['rows']:>9} rows  sha256 {table['rows_sha256'][:16]}")
    counters = document["counters"]
    lines.append(
        f"new writes go on from item {counters.get('items', 0) + 1} and event "
        f"{counters.get('events', 0) + 1}"
    )
    lines.append(f"next: {document['next']}")
    return "\n".join(lines)
