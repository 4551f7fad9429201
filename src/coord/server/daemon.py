"""`coord serve`: run the HTTP face for one board, and tell the CLI where it listens.

One daemon per board: it holds an exclusive ``flock`` on ``.coord/daemon.lock`` for its whole
life, so a second ``coord serve`` (or two CLIs starting one on demand at the same moment)
fails fast instead of running two writers. The socket is bound before ``daemon.json`` is
written, so a client that reads the record can connect at once.

On a team board (PostgreSQL, config.json's ``database``) every machine runs its own daemon on
the shared database: the flock still means one daemon per ``.coord/`` (per checkout), the
database serialises the writes of them all, and each registers itself in the database's
``daemons`` table with a heartbeat, so ``coord status`` shows the others. Such a daemon never
idles out (this machine's hooks and agents rely on it answering while the team works) and
needs no SQLite checkpointer.

A daemon whose board sits in a git repository lands the queue itself, on a thread of its own
(``coord.landing.in_daemon``; ``land_in_daemon`` or ``--no-land`` turn it off). Stopping, it
first lets the runner put its work down while the HTTP face still answers, so a landing
past its checks is recorded, then shuts the face down.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import secrets
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from coord import __version__
from coord.errors import CoordError, DaemonAlreadyRunning, DiskFull
from coord.fast import board_files, files, fsfold

TYPE_CHECKING = False
if TYPE_CHECKING:
    from coord.storage.base import Storage

# How long a write waits for SQLite's write lock when another process holds it. Board calls
# run on the event loop, so this is how long every other request waits too: short, then 503
# board_busy with Retry-After. (The library's 5 s suits a process of its own.)
BUSY_TIMEOUT_MS = 50
# A PostgreSQL board's calls run on worker threads, one connection each
# (``coord.server.offload``), and never wait for the server without a bound
# (``coord.storage.postgres_conn``). Seconds:
PG_BOUNDS = {
    # to open a connection; requests wait that long while the server is down or stopped
    "connect_timeout": 3,
    # for any one answer of the server: past it the server counts as not answering, the
    # request is answered 503 database_unreachable, and the calls queued behind at once
    "answer_timeout": 3,
    # the server's own: a statement cut cleanly before the client gives up on it, and the
    # board's write lock waited for at most 2 s (then 503 board_busy; the CLI asks again).
    # The longest single statement of a request measured 0.35 s (claim-next, a listing, an
    # import of 500 items, on boards of 50,000 and 200,000 items, a busy 2-core machine)
    "statement_timeout": 2.5,
    "lock_timeout": 2,
    # a daemon hung between two statements holds the board's write lock: the server ends
    # its session after this long, and every other daemon writes again
    "idle_in_transaction_timeout": 10,
}
PG_WORKERS = 4
# a request that waited this long for a free connection is refused, never begun (503
# board_busy: offload.BoardCalls); one under way is bounded by the bounds above
PG_CALL_SECONDS = 4.0


def _take_lock(board_dir: Path) -> int:
    fd = os.open(board_dir / "daemon.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        record = read_record(board_dir)
        where = f" at {record['url']}" if record else ""
        raise DaemonAlreadyRunning(
            f"a coord daemon already serves this board{where}; `coord stop` stops it"
        ) from None
    return fd


class _Terminated(SystemExit):
    """SIGTERM, once uvicorn has shut down gracefully and raised the signal again. A quiet
    exit 0 wherever it lands (before uvicorn runs, or during the cleanup after it)."""

    def __init__(self) -> None:
        super().__init__(0)


def _exit_quietly(signum: int, frame: object) -> None:
    raise _Terminated


def read_record(board_dir: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(board_files.daemon_record_path(board_dir).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _write_record(board_dir: Path, record: dict[str, Any]) -> None:
    path = board_files.daemon_record_path(board_dir)
    try:
        board_files.write_json_atomic(path, record)
        return
    except OSError as err:
        if err.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
    # A full disk has no block for the temporary file, but a daemon killed on it (kill -9)
    # left its record behind, and that file's block takes the new one: a client may read a
    # torn record for a moment, and takes it for no daemon yet (``read_record``).
    data = json.dumps(record).encode()
    try:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, data)
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)
    except OSError:
        raise DiskFull(
            f"the disk is full: cannot write {path}, which tells clients where the daemon "
            "listens; free some space on that file system and start it again"
        ) from None


# The port the board's daemon last listened on. A daemon asked for any port (the CLI's
# on-demand start) takes that one again when it is free, so the board's address stays the
# same across a restart (a page open on the old daemon then asks for `coord open` again: its
# session was that daemon process's, coord.server.web.access).
LAST_PORT_FILE = "last_port"


def _bind(sock: socket.socket, host: str, port: int, board_dir: Path) -> None:
    if port == 0:
        try:
            last = int((board_dir / LAST_PORT_FILE).read_text(encoding="ascii"))
        except (OSError, ValueError):
            last = 0
        if 0 < last < 65536:
            try:
                sock.bind((host, last))
                return
            except OSError:
                pass  # taken by now: any free port
    try:
        sock.bind((host, port))
    except OSError as err:
        raise CoordError(
            f"cannot listen on {host}:{port}: {err.strerror}; try another --port"
        ) from err


def serve(
    board_dir: Path,
    host: str = "127.0.0.1",
    port: int = 0,
    log_level: str = "warning",
    idle_exit: float | None = None,
    land: bool = True,
) -> None:
    """Serve the board in ``board_dir`` until stopped: open it, listen, build the face, start
    the background workers, run, and take every piece down again in order."""
    from coord.server import idle
    from coord.server.connections import connection_bound, raise_open_file_limit

    # Everything the daemon creates (the board's -wal and -shm, daemon.json, logs) is the
    # owner's alone; the daemon is a process of its own, so the umask is its own to set.
    started_umask = os.umask(0o077)
    open_file_limit = raise_open_file_limit()
    lock_fd = _take_lock(board_dir)
    _settle_files(board_dir)
    board, shared, idle_exit = _open_board(board_dir, idle_exit)
    checkpointer = None if shared else _checkpointer(board_dir, board.storage)
    sock, record = _listen(host, port, board_dir, open_file_limit)
    registration = _registration(board, shared, record, board_dir)
    server: Any = None  # made below: the face's shutdown asks it to stop
    app, board_calls = _face(board, board_dir, host, record, lambda: server.ask_to_stop())
    if land:  # the landing's git writes the user's checkout: with the user's umask
        from coord.fast.git import set_child_umask

        set_child_umask(started_umask)
    lander, app.state.coord.landing_off = _lander(
        board_dir, host, record["port"], shared, land, board_files.read_token(board_dir)
    )
    app.state.coord.lander = lander
    activity = idle.Activity(app)
    if lander is not None:
        activity.keep = lambda: lander.busy  # never idle mid-landing
    server = _server(
        activity, log_level, connection_bound(open_file_limit), open_file_limit, lander, app
    )
    idle.watch(board_dir, activity, idle_exit, server.stop_for)
    workers: list[Any] = []  # what runs beside the face, stopped in reverse order
    # uvicorn shuts down gracefully on SIGTERM, then restores the handler it found and raises
    # the signal again. The default handler would end the process right there, before the
    # cleanup below (daemon.json stayed behind, the board was never closed).
    try:
        # from here on a SIGTERM is a stop asked for, whenever it comes
        signal.signal(signal.SIGTERM, _exit_quietly)
        _write_record(board_dir, record)
        _say(f"coord daemon serving {board_dir} at {record['url']} (pid {os.getpid()})")
        workers += _start_workers(board, board_dir, registration, activity, app)
        if lander is not None:
            lander.start()
        server.run(sockets=[sock])
    except (_Terminated, KeyboardInterrupt):
        # uvicorn has shut down gracefully, then raised the signal again: a stop asked for
        # (SIGTERM from a service manager, Ctrl-C at a terminal), said alike by `coord serve`
        pass
    finally:
        if lander is not None:  # stopped by now, unless uvicorn never ran: lands no more
            lander.stop(0)
        if (read_record(board_dir) or {}).get("pid") == os.getpid():
            board_files.daemon_record_path(board_dir).unlink(missing_ok=True)
        for worker in reversed(workers):
            worker.stop()
        if app.state.coord.web is not None:  # the page's codes, and the browser's files
            app.state.coord.web.close()
        if board_calls is not None:
            board_calls.close()
        registration.stop()  # stops nothing it never started
        if checkpointer is not None:
            checkpointer.stop()
        board.close()
        os.close(lock_fd)


def _say(line: str) -> None:
    with contextlib.suppress(OSError):  # the log on a full disk: serve all the same
        print(line, file=sys.stderr, flush=True)


def _settle_files(board_dir: Path) -> None:
    # Probed again at each start: the board may have moved to another file system since init.
    fsfold.record(board_dir)
    tightened = board_files.tighten_modes(board_dir)
    if tightened:
        _say(f"coord: made {', '.join(tightened)} in {board_dir} readable by its owner only")


def _open_board(board_dir: Path, idle_exit: float | None) -> tuple[Any, bool, float | None]:
    """The board, whether it is a team's (PostgreSQL), and the idle bound that applies."""
    from coord.core.board import Board

    shared = board_files.database_url(board_dir) is not None
    board = Board.open(
        board_dir,
        storage_options=PG_BOUNDS
        if shared
        else {"wal_autocheckpoint": 0, "busy_timeout_ms": BUSY_TIMEOUT_MS},
    )
    if shared and idle_exit:
        idle_exit = None  # this machine's hooks and agents rely on it: never idle
        _say(
            "coord: a team board's daemon never idles out (--idle-exit ignored); "
            "`coord stop` stops it"
        )
    return board, shared, idle_exit


def _listen(
    host: str, port: int, board_dir: Path, open_file_limit: int
) -> tuple[socket.socket, dict[str, Any]]:
    """The listening socket, and the daemon's record (daemon.json) that names it."""
    from coord.server.connections import accept_batch

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio switches Nagle off only on accepted sockets whose protocol
    # says TCP. With Nagle on, a reused connection waited ~40 ms for the client's delayed ACK
    # between uvicorn's header and body writes (tests/acceptance/test_daemon_socket.py).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    _bind(sock, host, port, board_dir)
    sock.listen(accept_batch(open_file_limit))
    bound_port = sock.getsockname()[1]
    with contextlib.suppress(OSError):  # a full disk: the next start just takes any port
        files.write_atomic(board_dir / LAST_PORT_FILE, f"{bound_port}\n".encode(), 0o600)
    url_host = f"[{host}]" if ":" in host else host
    record = {
        "pid": os.getpid(),
        "host": host,
        "port": bound_port,
        "url": f"http://{url_host}:{bound_port}",
        "started_at": time.time(),
        # what /v1/identity proves, so a client can tell this daemon from whatever holds
        # this port once it is gone (coord.fast.daemon_proof)
        "instance": secrets.token_hex(16),
    }
    return sock, record


def _registration(
    board: Any, shared: bool, record: dict[str, Any], board_dir: Path
) -> _Registration:
    return _Registration(
        board.storage,
        shared,
        {
            "instance": record["instance"],
            "machine": socket.gethostname(),
            "pid": os.getpid(),
            "url": record["url"],
            "board_dir": str(board_dir),
            "version": __version__,
            "started_at": record["started_at"],
        },
    )


def _face(
    board: Any, board_dir: Path, host: str, record: dict[str, Any], stop: Any
) -> tuple[Any, Any]:
    """The ASGI app over the board, and (a team board) the bounded pool its calls run in."""
    from coord.server.app import create_app
    from coord.server.pipeline import LOOPBACK_HOSTS

    app = create_app(
        board,
        board_files.read_token(board_dir),
        # Bound to a non-loopback address on purpose: the user chose to expose it.
        check_host=host in LOOPBACK_HOSTS,
        on_shutdown=stop,
        board_dir=board_dir,
        instance=record["instance"],
        port=record["port"],
    )
    board_calls = None
    if board_files.database_url(board_dir) is not None:
        from coord.server.offload import BoardCalls

        where = board.storage.location().get("database", "")
        board_calls = app.state.coord.board_calls = BoardCalls(PG_WORKERS, PG_CALL_SECONDS, where)
    return app, board_calls


def _server(
    activity: Any,
    log_level: str,
    max_connections: int,
    open_file_limit: int,
    lander: Any,
    app: Any,
) -> Any:
    """uvicorn's server for the face, whose shutdown lets a landing finish and ends the
    event streams before uvicorn's own."""
    import uvicorn

    from coord.server.connections import accept_batch, bounded_protocol

    config = uvicorn.Config(
        activity,
        log_level=log_level,
        access_log=False,
        lifespan="off",
        http=bounded_protocol(max_connections),  # httptools, with idle connections bounded
        # past the bound with no idle connection to close: 503 rather than no descriptor left
        limit_concurrency=max_connections + 1,
        backlog=accept_batch(open_file_limit),  # asyncio re-listens with it
        timeout_keep_alive=5,
        timeout_graceful_shutdown=2,
    )
    close_streams = app.state.coord.close_streams

    class Server(uvicorn.Server):
        async def shutdown(self, sockets: Any = None) -> None:
            if lander is not None:  # while the face still answers: its last writes land
                import asyncio

                await asyncio.get_running_loop().run_in_executor(None, lander.stop)
            # end the event streams first: each waits for the board's next change, and would
            # hold the graceful shutdown to its timeout
            close_streams()
            await super().shutdown(sockets)

        def ask_to_stop(self) -> None:
            self.should_exit = True

        def stop_for(self, reason: str) -> None:
            _say(f"coord daemon exiting: {reason}")
            self.should_exit = True

    return Server(config)


def _start_workers(
    board: Any, board_dir: Path, registration: _Registration, activity: Any, app: Any
) -> list[Any]:
    """What runs beside the face: the team board's registration, the notifier, the
    follower of other daemons' writes, the sweeper of lapsed waits. Each has ``stop``."""
    from coord.server.notify import Notifier
    from coord.server.waiting import LapseSweeper

    registration.start()
    started: list[Any] = [Notifier(board, board_dir).start()]
    follower = _follow(activity, board, board_dir)
    if follower is not None:
        started.append(follower)
    started.append(LapseSweeper(board, app.state.coord.changes).start())
    return started


def _lander(
    board_dir: Path, host: str, port: int, shared: bool, land: bool, token: str
) -> tuple[Any, str]:
    """(the daemon's landing runner, not started; or None and why it lands nothing)."""
    if not land:
        return None, "the daemon was started with --no-land: `coord land` lands the queue"
    from coord.landing import in_daemon  # git work: only where the daemon lands

    why = in_daemon.wanted(board_dir, board_files.read_config(board_dir), shared)
    if why is not None:
        return None, why
    return in_daemon.InDaemon.for_board(board_dir, host, port, token), ""


def _checkpointer(board_dir: Path, storage: Storage) -> Any:
    """The SQLite board's log keeper (``coord.storage.sqlite.Checkpointer``), started."""
    from coord.storage.sqlite import Checkpointer, SQLiteStorage

    assert isinstance(storage, SQLiteStorage)
    return Checkpointer(board_files.db_path(board_dir), on_big_log=storage.rewind_soon).start()


class _Registration:
    """This daemon in the board's registry of live daemons (``Storage.daemon_heartbeat``),
    kept fresh by a thread while it serves, and taken out when it stops. While the database
    cannot be reached the beats fail quietly (requests say 503 meanwhile) and resume with it."""

    def __init__(self, storage: Storage, shared: bool, record: dict[str, Any]) -> None:
        from coord.storage.postgres_daemons import HEARTBEAT_SECONDS

        self.storage = storage
        self.record = record
        self.shared = shared  # alone on its board (SQLite): one beat, kept in memory
        self.every = HEARTBEAT_SECONDS
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def _beat(self) -> None:
        try:
            self.storage.daemon_heartbeat(self.record)
        except CoordError:  # unreachable: said by the requests meanwhile
            pass
        except Exception as err:  # a bug of ours: said, and the daemon serves on
            with contextlib.suppress(OSError):
                print(f"coord daemon: registry heartbeat failed: {err!r}", file=sys.stderr)

    def start(self) -> None:
        self._beat()
        if not self.shared:
            return
        self._thread = threading.Thread(target=self._run, name="coord-registry", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.wait(self.every):
            self._beat()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=self.every + 5)
        # unreachable, or anything else: its row lapses by itself, and the board still closes
        with contextlib.suppress(Exception):
            self.storage.daemon_gone(self.record["instance"])


def _follow(activity: Any, board: Any, board_dir: Path) -> Any:
    """On a PostgreSQL board: LISTEN for every daemon's writes and keep the guard's mirror
    (``coord.server.follower``), started. None on a SQLite board."""
    dsn = getattr(board.storage, "dsn", None)
    if not isinstance(dsn, str):
        return None
    from coord.server.follower import follow  # imports the driver: PostgreSQL boards only

    return follow(activity.app.state.coord, dsn, str(board_dir))
