"""The board and its daemon from the command line: `coord init`'s board, `serve`, `stop`.

`coord init` creates the board (or joins a team board on PostgreSQL) before the wiring of the
clients (``coord.wiring.command``) runs; `coord serve` runs the daemon in the foreground;
`coord stop` asks this board's daemon to finish its requests and exit.
"""

from __future__ import annotations

import os
import sys

from coord.errors import CoordError, InvalidInput
from coord.fast import board_files, processes

# how long `coord stop` waits for the daemon to finish its requests and close the board
STOP_WAIT_SECONDS = 30.0

TYPE_CHECKING = False  # typing costs ~10 ms at import; the CLI path avoids it
if TYPE_CHECKING:
    import argparse
    from pathlib import Path
    from typing import Any

    from coord.cli.context import Context, Result
    from coord.client.http import Client


def cmd_init(args: argparse.Namespace, ctx: Context) -> Result:
    from coord.core.board import Board

    board_dir = board_files.new_board_dir()
    if not os.environ.get("COORD_DIR") and not (board_dir.parent / ".git").exists():
        # The board belongs at a repository's root, where every worktree and hook finds it;
        # made in whatever folder the shell was in, no agent in the repository would see it.
        raise InvalidInput(
            f"{board_dir.parent} is not inside a git repository: run `coord init` in your "
            "repository (or `git init` first), or set COORD_DIR to the folder the board "
            "should live in"
        )
    if args.lease is not None:  # refused before anything is written
        from coord.model import check_lease

        check_lease(args.lease, 0)
    database = getattr(args, "database", None)
    joined = False
    if database is not None:  # checked, and the server reached, before anything is written
        _team_board(board_dir, database, "coord init --database")
        from coord.core.board import open_storage

        # another checkout made the board there already (this one names it for the first time)
        joined = board_files.database_url(board_dir) is None and _holds_a_board(database)
        open_storage(board_dir, {"database": database}, {}).close()  # brings its schema up
    # a board made by an older coord: say what is now its owner's alone
    tightened = board_files.tighten_modes(board_dir) if board_dir.is_dir() else []
    created = board_files.init_board_files(board_dir)
    from coord.fast import fsfold

    fsfold.record(board_dir)  # how its file system compares names: the guard reads it
    if args.lease is not None or database is not None:
        config = board_files.read_config(board_dir)
        if args.lease is not None:
            config["default_lease_seconds"] = args.lease
        if database is not None:
            config["database"] = database
        board_files.write_config(board_dir, config)
    board = Board.open(board_dir, create=True)
    version = board.storage.schema_version()
    board.close()
    verb = "created" if created else "already there:"
    private = f"\nmade {', '.join(tightened)} readable by its owner only" if tightened else ""
    url = board_files.database_url(board_dir)
    where = f" on PostgreSQL {_describe(url)}" if url else ""
    if joined:
        where += ", joining the team board already there"
    return (
        {
            "board": str(board_dir),
            "created": created,
            "schema_version": version,
            "tightened": tightened,
            "database": _describe(url) if url else None,
            "joined": joined,
        },
        f"{verb} board {board_dir}{where} (schema {version}); token in "
        f"{board_files.token_path(board_dir)}{private}",
    )


def _holds_a_board(url: str) -> bool:
    """Whether the database at ``url`` has a board's schema already."""
    try:
        from coord.storage.postgres import probe
    except ImportError:  # opening the board, next, says what to install
        return False
    return probe(url)[0] > 0


def _describe(url: str) -> str:
    """Where a database URL points, without its password (the driver's own reading)."""
    try:
        from coord.storage.postgres import describe
    except ImportError:  # no driver: the URL as checked (config never holds a password)
        return url
    return describe(url)


def _team_board(board_dir: Path, url: str, command: str) -> bool:
    """Check that this checkout's board may be the PostgreSQL database ``url``: a valid URL
    without a password, and no other board here (a SQLite board.db, another database named
    in config.json). True if config.json names it already; nothing is written here."""
    try:
        board_files.check_database_url(url)
    except InvalidInput as err:
        raise InvalidInput(f"{command}: {err.message}", field="database") from None
    named = board_files.database_url(board_dir) if board_dir.is_dir() else None
    if named is not None:
        if _same_database(named, url):
            return True
        raise InvalidInput(
            f"{command}: {board_dir / 'config.json'} names another database, "
            f"{_describe(named)}, not {_describe(url)}; one checkout serves one board: to "
            "switch, edit its database setting (docs/reference/settings.md)",
            field="database",
        )
    if board_files.db_path(board_dir).exists():
        raise InvalidInput(
            f"{command}: this checkout's board is the SQLite file {board_files.db_path(board_dir)}"
            f"; a team board is another board: move board.db away (its items stay in it) "
            "before naming a database here",
            field="database",
        )
    return False


def _same_database(one: str, other: str) -> bool:
    """Whether two URLs name one database (user, host, port and name alike)."""
    return one == other or _describe(one) == _describe(other)


def cmd_serve(args: argparse.Namespace, ctx: Context) -> Result:
    from coord.server.daemon import serve

    board_dir = ctx.board_dir if args.database is None else _serve_database(args.database)
    serve(
        board_dir,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        idle_exit=args.idle_exit or None,
        land=not args.no_land,
    )
    return {"stopped": True}, "daemon stopped"


def _serve_database(url: str) -> Path:
    """The board directory ``coord serve --database URL`` serves: one whose config names that
    database, or that has no board yet, and then records it there, so this checkout's hooks,
    guard, library and on-demand daemons all use the one board the daemon serves."""
    board_dir = board_files.require_board_dir(must_exist=False)
    if not board_files.token_path(board_dir).exists():
        raise InvalidInput(
            f"{board_dir} is no board yet: run `coord init --database URL` first (it makes the "
            "token clients use and records the database)",
            field="database",
        )
    if not _team_board(board_dir, url, "coord serve --database"):
        from coord.core.board import open_storage

        open_storage(board_dir, {"database": url}, {}).close()  # reached before it is recorded
        config = board_files.read_config(board_dir)
        config["database"] = url
        board_files.write_config(board_dir, config)
        print(
            f"coord: recorded database {_describe(url)} in {board_dir / 'config.json'}: this "
            "checkout's commands, hooks and guard use it from now on",
            file=sys.stderr,
        )
    return board_dir


def cmd_stop(args: argparse.Namespace, ctx: Context) -> Result:
    from coord.client.http import Client

    client = Client(ctx.board_dir, autostart=False)
    url = client.daemon_url()
    if url is None:
        return {"stopped": False, "running": False}, "no daemon is running"
    pid = (client.daemon_record() or {}).get("pid")
    shared = board_files.database_url(ctx.board_dir)
    others = _other_daemons(client) if shared else None
    client.post("/v1/shutdown", {})
    client.close()  # an open keep-alive connection would hold up the daemon's shutdown
    # Return once it is gone: a `coord serve` or any command right after `coord stop` would
    # otherwise find the dying daemon still holding the board (it takes up to a few seconds
    # to finish its open requests and close the board).
    if not processes.wait_for_daemon_exit(
        ctx.board_dir, pid if isinstance(pid, int) else None, STOP_WAIT_SECONDS
    ):
        raise CoordError(
            f"asked the daemon at {url} (pid {pid}) to stop, but it still runs after "
            f"{STOP_WAIT_SECONDS:.0f} s; end it with `kill {pid}`"
        )
    if shared is None:
        return {"stopped": True, "url": url}, f"stopped the daemon at {url}"
    where = _describe(shared)
    if others is None:
        still = "the board's other daemons, if any, go on serving it"
    elif others:
        still = (
            "1 other daemon goes on serving it"
            if len(others) == 1
            else f"{len(others)} other daemons go on serving it"
        )
    else:
        still = "no other daemon serves it now"
    return (
        {"stopped": True, "url": url, "database": where, "other_daemons": others},
        f"stopped this machine's daemon at {url}; the team board stays in {where}: {still} "
        "(each machine stops its own)",
    )


def _other_daemons(client: Client) -> list[dict[str, Any]] | None:
    """The other daemons serving this team board (None when the daemon cannot tell now)."""
    try:
        answer = client.get("/v1/status", timeout=10.0)
    except CoordError:
        return None
    return [d for d in answer.get("daemons", []) if not d.get("this")]
