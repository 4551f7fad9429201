"""The embedded backend: one SQLite file in WAL mode.

Transaction boundaries are explicit: connections run with ``isolation_level=None`` so the
stdlib module never opens or commits a transaction behind our back. Every write transaction
starts with ``BEGIN IMMEDIATE``, which takes SQLite's single write lock up front; a read-then-
write inside it cannot interleave with another writer in any process.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from coord.errors import CoordError
from coord.storage import migrations, sqlite_faults
from coord.storage.base import ReadTx, Storage, WriteTx
from coord.storage.sqlite_tx import SQLiteTx

WAL_SIZE_LIMIT = 64 * 1024 * 1024
SCHEMA_VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at REAL NOT NULL
)
"""


def _migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) for every SQLite migration shipped with this release, in order."""
    return migrations.shipped("sqlite_migrations")


def _create_private(path: Path) -> None:
    """Create the database file 0600 (the owner's alone, whatever the umask) before SQLite
    opens it: SQLite gives its -wal and -shm the database's own permissions, and an empty
    file is an empty database."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


class SQLiteStorage(Storage):
    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout_ms: int = 5000,
        synchronous: str = "NORMAL",
        read_only: bool = False,
        wal_autocheckpoint: int = 1000,
    ) -> None:
        self.path = Path(path)
        self._busy_timeout_ms = busy_timeout_ms
        self._synchronous = synchronous.upper()
        if self._synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise CoordError(f"invalid synchronous setting {synchronous!r}")
        self._read_only = read_only
        # 0 when a background Checkpointer does it instead (the daemon): a checkpoint run by
        # the committing connection stalls that commit for tens of milliseconds.
        self._wal_autocheckpoint = int(wal_autocheckpoint)
        self._local = threading.local()
        self._rewind_due = False  # set by a Checkpointer's thread, see rewind_soon()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._disk_full = False  # the last write failed for want of space; health says so
        try:
            if not read_only:
                self.path.parent.mkdir(0o700, parents=True, exist_ok=True)
                _create_private(self.path)
                self._migrate(self._conn())
        except sqlite3.Error as err:
            self.close()
            found = self._translate(err)
            if found is None:
                raise
            raise found from None  # one line in the CLI: the cause is in the message
        except PermissionError as err:  # the directory itself
            self.close()
            raise sqlite_faults.unreadable(self.path, err) from None
        except BaseException:  # a board from a newer coord, a broken migration: not left open
            self.close()
            raise
        # the file this storage opened: every transaction checks the path still names it
        self._opened = sqlite_faults.identity(self.path)

    # --- connections -----------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._read_only:
            uri = f"file:{self.path}?mode=ro"
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        else:
            conn = sqlite3.connect(
                self.path,
                isolation_level=None,  # no implicit transactions: we write BEGIN/COMMIT
                timeout=self._busy_timeout_ms / 1000,
                check_same_thread=False,
            )
        try:
            self._configure(conn)
        except BaseException:  # not a connection of ours yet: nobody else would close it
            conn.close()
            raise
        return conn

    def _configure(self, conn: sqlite3.Connection) -> None:
        conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
        if not self._read_only:
            self._enable_wal(conn)
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
            conn.execute(f"PRAGMA wal_autocheckpoint = {self._wal_autocheckpoint}")
            # when the log starts over, give back the disk a storm of writes made it take
            conn.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
        conn.execute("PRAGMA foreign_keys = ON")

    @staticmethod
    def _enable_wal(conn: sqlite3.Connection) -> None:
        # Switching to WAL needs a moment of exclusive access; on a brand-new board several
        # processes may try at once. The mode is persistent, so this settles immediately.
        for attempt in range(50):
            try:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if mode.lower() == "wal":
                    return
            except sqlite3.OperationalError:
                if attempt == 49:
                    raise
            time.sleep(0.02)

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()

    # --- schema ----------------------------------------------------------------------------

    def _migrate(self, conn: sqlite3.Connection) -> None:
        # A migration may rebuild a table others reference (SQLite cannot alter a CHECK):
        # foreign keys are off for the transaction (the pragma is a no-op inside one), and
        # checked whole before it commits.
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(SCHEMA_VERSION_TABLE)
            applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            shipped = _migrations()
            migrations.refuse_newer(applied, shipped)
            for version, name, sql in shipped:
                if version in applied:
                    continue
                # executescript would COMMIT our transaction; run statement by statement.
                for statement in _split_sql(sql):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    (version, name, time.time()),
                )
            broken = conn.execute("PRAGMA foreign_key_check").fetchall()
            if broken:
                raise CoordError(
                    f"upgrading the board would break {len(broken)} references (the first: "
                    f"{broken[0][0]} row {broken[0][1]} to {broken[0][2]}); nothing was changed"
                )
        except BaseException:
            conn.execute("ROLLBACK")
            conn.execute("PRAGMA foreign_keys = ON")
            raise
        conn.execute("COMMIT")
        conn.execute("PRAGMA foreign_keys = ON")

    def schema_version(self) -> int:
        row = self._conn().execute("SELECT max(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    def location(self) -> dict[str, str]:
        return {"backend": "sqlite", "path": str(self.path)}

    # --- transactions ----------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[ReadTx]:
        # A board whose file is gone is refused for reads too: the guard and every other
        # process read the file at the path, and the daemon would answer for another board.
        self._check_board_file()
        conn = self._conn()
        try:
            conn.execute("BEGIN")  # deferred: a snapshot that never blocks writers under WAL
            yield SQLiteTx(conn)
        except sqlite3.Error as err:
            found = self._translate(err)
            if found is None:
                raise
            raise found from err
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")

    @contextmanager
    def write(self) -> Iterator[WriteTx]:
        if self._read_only:
            raise CoordError("this board was opened read-only")
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")  # busy: another process holds the write lock
            yield SQLiteTx(conn)
            # the last moment before the write is acknowledged: never into a deleted file
            self._check_board_file()
            conn.execute("COMMIT")
        except BaseException as exc:
            # SQLite may already have rolled back (a full disk at COMMIT); never leave the
            # write lock held by a transaction nobody will finish
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            found = self._translate(exc) if isinstance(exc, sqlite3.Error) else None
            if found is None:
                raise
            raise found from exc
        self._disk_full = False
        if self._rewind_due:
            self._copy_back_tail(conn)

    def _check_board_file(self) -> None:
        gone = sqlite_faults.board_gone(self.path, self._opened)
        if gone is not None:
            raise gone

    def _translate(self, err: sqlite3.Error) -> CoordError | None:
        """The error the user can act on for ``err``, or None: a bug of ours, raised as is."""
        found = sqlite_faults.translate(self.path, err)
        if found is not None and found.code == "disk_full":
            self._disk_full = True
        return found

    def problem(self) -> CoordError | None:
        """What keeps this board from taking writes now, without waiting for any lock."""
        gone = sqlite_faults.board_gone(self.path, self._opened)
        if gone is not None:
            return gone
        if self._disk_full or sqlite_faults.out_of_space(self.path):
            return sqlite_faults.disk_full(self.path)
        if self._read_only:
            return None
        # Try the write lock without waiting, and give it back at once: health must answer
        # while another process holds it, and say so.
        conn = self._conn()
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
        except sqlite3.Error as err:
            return self._translate(err)
        finally:
            conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
        return None

    def rewind_soon(self) -> None:
        """Copy the rest of the WAL back after the next commit, so the log starts over.

        Called by a ``Checkpointer`` thread that has copied all but a short tail.
        """
        self._rewind_due = True

    def _copy_back_tail(self, conn: sqlite3.Connection) -> None:
        # The write has committed: nothing here may fail it. Busy (the checkpointer is in
        # a pass) or incomplete: try again after the next commit.
        with contextlib.suppress(sqlite3.Error):
            busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if not busy and copied == frames:
                self._rewind_due = False


class Checkpointer:
    """Copies the WAL back into the database from a thread of its own.

    With ``wal_autocheckpoint = 0`` on the writer, the commit that crosses the threshold no
    longer pays for the checkpoint (and its fsyncs) on the daemon's event loop. PASSIVE never
    waits for readers or writers; sqlite3 releases the GIL while it works.

    But the log starts over only when every frame is copied back before the next write
    begins, and under a steady stream of writes a pass never ends before the writer has
    appended more: a storm of claims grew the WAL by ~17,000 frames (70 MB) a second, without
    bound. So once the log is past ``rewind_frames`` this thread passes every few ms, keeping
    the uncopied tail short, and calls ``on_big_log``: the daemon's storage then copies that
    tail itself right after its next commit (``SQLiteStorage.rewind_soon``), and the write
    after that starts the log over. A RESTART checkpoint from here would take the write lock
    instead, and the writer's busy handler sleeps a millisecond or more while it waits.
    """

    def __init__(
        self,
        path: Path,
        interval: float = 0.5,
        *,
        rewind_frames: int = 4096,
        on_big_log: Callable[[], None] | None = None,
    ) -> None:
        self.path = path
        self.interval = interval
        self.rewind_frames = rewind_frames
        self.on_big_log = on_big_log
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="coord-checkpoint", daemon=True)

    def start(self) -> Checkpointer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        db_file = os.open(self.path, os.O_RDONLY)
        try:
            conn.execute("PRAGMA busy_timeout = 100")  # PASSIVE itself never waits
            wait = self.interval
            while not self._stop.wait(wait):
                wait = self.round(conn, db_file)
            _checkpoint(conn)
        finally:
            os.close(db_file)
            conn.close()

    def round(self, conn: sqlite3.Connection, db_file: int) -> float:
        """One round of the thread: a pass, and the hand-over once the log is big. Returns how
        long to wait before the next round (short while a hand-over is under way)."""
        frames, left = _checkpoint(conn)
        if frames < self.rewind_frames or self.on_big_log is None:
            return self.interval
        # The writer's pass must reach the end of the log, so it pays the fsyncs the passes
        # here skip while the log grows under them: the database file's for every page they
        # copied (~5 ms of the event loop, unflushed) and the log's since the last pass. Flush
        # the first, shorten the second (each pass copies what came in during the one
        # before), then hand over.
        with contextlib.suppress(OSError):  # a filesystem that refuses: slower, no worse
            os.fsync(db_file)
        for _ in range(_TAIL_PASSES):
            frames, left = _checkpoint(conn)
            if left <= _TAIL_FRAMES:
                break
        self.on_big_log()
        return _TAIL_INTERVAL


_TAIL_FRAMES = 256
_TAIL_PASSES = 5
_TAIL_INTERVAL = 0.005


def _checkpoint(conn: sqlite3.Connection) -> tuple[int, int]:
    """One PASSIVE pass: (frames in the log, frames it could not copy yet)."""
    try:
        busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    except sqlite3.Error:  # busy: the next round catches up
        return 0, 0
    return (0, 0) if busy else (int(frames), int(frames) - int(copied))


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies whole."""
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        if line.lstrip().startswith("--") and not current.strip():
            continue
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return statements
