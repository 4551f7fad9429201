"""The team backend: one PostgreSQL database holds the board, for daemons on several machines.

Imported only where a PostgreSQL board is opened (never by the CLI's or the hooks' hot path):
it imports the driver, psycopg 3, which ``pip install 'coord[postgres]'`` brings.

Transactions, as the SQLite backend's (``coord.storage.sqlite``) but across connections:

- **Writes serialise.** Each write transaction starts by taking one transaction-scoped
  advisory lock (``pg_advisory_xact_lock``), released by its COMMIT or ROLLBACK. The core's
  read-then-write rules (a reservation's overlap check, a claim's lease check, a dependency
  cycle) then cannot interleave with another writer on any connection of any daemon, and the
  event counter (``board_counters``) hands out gapless sequence numbers in commit order. The
  write transaction runs at READ COMMITTED on purpose: each statement sees everything
  committed before the lock was granted (a REPEATABLE READ snapshot would be taken by the
  lock statement itself, before its wait). Cost: see ``bench/pg_driver.py``.
- **Reads are snapshots** (REPEATABLE READ, READ ONLY): they never wait for the lock.
- **Other daemons hear of each write** (``NOTIFY_CHANNEL``): a write transaction that
  appended events sends ``NOTIFY coord_events, '<its last sequence number>'`` in the same
  round trip as its COMMIT, so it is delivered on commit and never for a rollback. One per
  transaction, a few bytes: PostgreSQL takes a global lock at the commit of a notifying
  transaction, and the write lock already serialises these commits (cost:
  ``bench/pg_notify.py``). Listeners: ``coord.server.follower``.
- **The clock is the database server's.** ``WriteTx.clock()`` is ``clock_timestamp()`` read
  right after the lock is granted, so a lease is judged at the moment the write is serialised,
  on one clock for every daemon; a daemon's own clock never decides a lease.

One board per database (advisory locks are scoped to their database). Connections are one
per thread, like SQLite's; a broken connection is dropped and the next transaction opens a
new one.

**No wait without a bound** (``coord.storage.postgres_conn``): every wait for the server ends
after ``Bounds.answer`` seconds, and the server is given a statement and a lock timeout. A
server found silent (no answer in time) is remembered (``postgres_faults.Silence``): until it
answers again, calls are refused at once with the same ``database_unreachable`` (nothing was
changed), but one call a second is let through to try it, so a daemon's requests answer within
the bound while the server is stopped and go on by themselves once it runs again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from coord.errors import CoordError, DatabaseUnreachable
from coord.storage import migrations, postgres_conn, postgres_daemons, postgres_faults
from coord.storage.base import ReadTx, Storage, WriteTx
from coord.storage.postgres_conn import Bounds
from coord.storage.postgres_tx import PostgresTx

# The key of the board's write lock and of the migration lock (any two fixed 64-bit numbers;
# advisory locks are per database, so two boards on one server never share them).
WRITE_LOCK_KEY = 0x636F6F7264  # "coord"
MIGRATION_LOCK_KEY = 0x636F6F72644D  # "coordM"
# What daemons LISTEN on; the payload is the last sequence number the transaction appended.
NOTIFY_CHANNEL = "coord_events"

# One round trip: the transaction, the board's lock, then the server's clock once granted.
_SERVER_CLOCK = "extract(epoch FROM clock_timestamp())::float8"
_BEGIN_WRITE = (
    "BEGIN ISOLATION LEVEL READ COMMITTED;"
    f" SELECT pg_advisory_xact_lock({WRITE_LOCK_KEY});"
    f" SELECT {_SERVER_CLOCK}"
)
_BEGIN_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

# The schema step at start waits for another daemon's (a first start on a new database runs
# every migration): longer than a request may, and the server gets as long.
SCHEMA_SECONDS = 15.0
# A connection ended while the schema step ran (a server restarting, pg_terminate_backend)
# is tried again this many times, after these waits, before the start fails with the reason.
SCHEMA_RETRY_WAITS = (0.5, 1.0, 2.0)

SCHEMA_VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at DOUBLE PRECISION NOT NULL DEFAULT extract(epoch FROM clock_timestamp())
)
"""


def describe(dsn: str) -> str:
    """Where a connection string points, without its password (for messages and logs)."""
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "an unreadable PostgreSQL connection string"
    host = parts.get("host") or "localhost"
    return f"postgresql://{parts.get('user') or ''}@{host}:{parts.get('port') or 5432}/" + str(
        parts.get("dbname") or ""
    )


def probe(dsn: str, timeout: float = 3) -> tuple[int, int]:
    """(the schema version the database has, the newest this release ships), read without
    migrating anything (``coord doctor``); ``DatabaseUnreachable`` when it cannot connect."""
    newest = max(
        (version for version, _, _ in migrations.shipped("postgres_migrations")), default=0
    )
    bounds = Bounds(connect=timeout, answer=timeout, statement=timeout)
    try:
        with postgres_conn.connect(dsn, bounds, autocommit=True) as conn:
            found = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
            if not (found and found[0]):
                return 0, newest
            row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
    except psycopg.OperationalError as error:
        found_error = postgres_faults.translate(describe(dsn), error)
        raise (found_error or postgres_faults.unreachable(describe(dsn), error)) from error
    return (int(row[0] or 0) if row else 0), newest


class PostgresStorage(Storage):
    def __init__(
        self,
        dsn: str,
        *,
        clock: Callable[[], float] | None = None,
        connect_timeout: float | None = None,
        answer_timeout: float | None = None,
        statement_timeout: float | None = None,
        lock_timeout: float | None = None,
        idle_in_transaction_timeout: float | None = None,
    ) -> None:
        """``clock`` replaces the server's clock: tests that move time by hand only. The
        timeouts (seconds) are ``postgres_conn.Bounds``'; unset, ``PATIENT``'s."""
        self.dsn = dsn
        self._clock = clock
        patient = postgres_conn.PATIENT
        self.bounds = Bounds(
            connect=connect_timeout if connect_timeout is not None else patient.connect,
            answer=answer_timeout if answer_timeout is not None else patient.answer,
            statement=statement_timeout if statement_timeout is not None else patient.statement,
            lock=lock_timeout if lock_timeout is not None else patient.lock,
            idle_in_transaction=idle_in_transaction_timeout,
        )
        self._local = threading.local()
        self._all: list[psycopg.Connection[Any]] = []
        self._lock = threading.Lock()
        # the server's clock minus this process's: what ``now()`` adds between transactions
        self._clock_offset = 0.0
        self._silence = postgres_faults.Silence(describe(dsn))
        self._start()

    # --- connections -----------------------------------------------------------------------

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            # autocommit: psycopg opens no transaction behind our back; we write BEGIN/COMMIT
            return postgres_conn.connect(self.dsn, self.bounds, autocommit=True)
        except psycopg.OperationalError as error:
            self._silence.heard(error)
            found = postgres_faults.translate(describe(self.dsn), error)
            raise (found or postgres_faults.unreachable(describe(self.dsn), error)) from error

    def _conn(self) -> psycopg.Connection[Any]:
        conn: psycopg.Connection[Any] | None = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            conn = self._connect()
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def _drop(self, conn: psycopg.Connection[Any]) -> None:
        """Forget a connection that failed mid-transaction; the next one is opened afresh."""
        with suppress(psycopg.Error):
            conn.close()
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None
        with self._lock, suppress(ValueError):
            self._all.remove(conn)

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                with suppress(psycopg.Error):
                    conn.close()
            self._all.clear()
        self._local = threading.local()

    # --- schema ----------------------------------------------------------------------------

    def _start(self) -> None:
        """The schema brought up to date; a connection ended meanwhile is tried again a few
        times, then said as ``DatabaseUnreachable`` (never the driver's exception)."""
        for wait in (*SCHEMA_RETRY_WAITS, None):
            try:
                with self._faults():
                    conn = self._conn()
                    try:
                        self._migrate(conn)
                    finally:
                        if isinstance(conn, postgres_conn.BoundedConnection):
                            conn.answer_seconds = self.bounds.answer
                return
            except DatabaseUnreachable:
                if wait is None:
                    raise
                time.sleep(wait)

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        # Daemons starting together on a new database: the lock makes one of them migrate
        # and the others find the work done. It may wait for another daemon's migrations:
        # longer than a request would, on both sides of the connection.
        if isinstance(conn, postgres_conn.BoundedConnection):
            conn.answer_seconds = SCHEMA_SECONDS + 1
        patience = f"'{round(SCHEMA_SECONDS * 1000)}ms'"
        with self._transaction(
            conn,
            f"BEGIN; SET LOCAL statement_timeout = {patience}; "
            f"SET LOCAL lock_timeout = {patience}; "
            f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})",
        ):
            conn.execute(SCHEMA_VERSION_TABLE)
            applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            shipped = migrations.shipped("postgres_migrations")
            migrations.refuse_newer(applied, shipped)
            for version, name, sql in shipped:
                if version not in applied:
                    conn.execute(sql.encode())  # a script: the simple protocol, no parameters
                    conn.execute(
                        "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                        (version, name),
                    )
            server_now = conn.execute(f"SELECT {_SERVER_CLOCK}").fetchone()
            self._clock_offset = float(server_now[0]) - time.time()  # type: ignore[index]

    def location(self) -> dict[str, str]:
        return {"backend": "postgresql", "database": describe(self.dsn)}

    def schema_version(self) -> int:
        row = self._outside_tx(
            lambda conn: conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
        )
        return int(row[0] or 0) if row else 0

    # --- transactions ----------------------------------------------------------------------

    @contextmanager
    def _transaction(
        self,
        conn: psycopg.Connection[Any],
        begin: str,
        commit: Callable[[], str] = lambda: "COMMIT",
    ) -> Iterator[Any]:
        """BEGIN (``begin`` may run more statements: their last result is yielded), then
        ``commit()``, or ROLLBACK on any exception; a connection that broke is dropped."""
        try:
            cursor = conn.execute(begin.encode())
            while cursor.nextset():  # to the last statement's result
                pass
        except psycopg.Error:
            self._drop(conn)
            raise
        try:
            yield cursor
        except BaseException:
            try:
                conn.execute("ROLLBACK")
            except psycopg.Error:
                self._drop(conn)
            raise
        try:
            conn.execute(commit().encode())
        except psycopg.Error:
            self._drop(conn)
            raise

    def _begin(
        self, stack: ExitStack, begin: str, commit: Callable[[], str] = lambda: "COMMIT"
    ) -> tuple[psycopg.Connection[Any], Any]:
        """The thread's connection in a transaction begun with ``begin`` (entered on
        ``stack``). A connection kept from before a server restart or a
        ``pg_terminate_backend`` fails at its BEGIN, which did nothing: it is dropped and the
        BEGIN runs once more on a new one, so the first request after the server came back
        does not fail for the old connection's sake."""
        conn = self._conn()
        try:
            return conn, stack.enter_context(self._transaction(conn, begin, commit))
        except psycopg.Error as error:
            # a silent server is not tried twice: the request would wait twice as long
            if postgres_faults.is_silence(error) or not postgres_faults.is_connection_fault(error):
                raise
        conn = self._conn()  # the broken one was dropped by _transaction
        return conn, stack.enter_context(self._transaction(conn, begin, commit))

    @contextmanager
    def _faults(self) -> Iterator[postgres_faults.Attempt]:
        """A connection fault, said as ``DatabaseUnreachable`` (503 with Retry-After); one
        while the write commits says its outcome is unknown (``Attempt.committing``)."""
        self._silence.gate()
        attempt = postgres_faults.Attempt()
        try:
            yield attempt
        except psycopg.Error as error:
            self._silence.heard(error)
            found = postgres_faults.translate(describe(self.dsn), error, attempt.committing)
            if found is None:
                raise
            raise found from error
        if self._silence.since is not None:
            self._silence.heard(None)  # it answered: serve again

    @contextmanager
    def read(self) -> Iterator[ReadTx]:
        with self._faults(), ExitStack() as stack:
            conn, _ = self._begin(stack, _BEGIN_READ)
            yield PostgresTx(conn, self._clock)

    @contextmanager
    def write(self) -> Iterator[WriteTx]:
        tx: PostgresTx | None = None
        with self._faults() as attempt, ExitStack() as stack:
            commit = lambda: _commit_notifying(tx)  # noqa: E731
            conn, granted = self._begin(stack, _BEGIN_WRITE, commit)
            now = self._clock() if self._clock is not None else float(granted.fetchone()[0])
            self._clock_offset = now - time.time()
            tx = PostgresTx(conn, lambda: now)
            yield tx
            attempt.committing = True  # the stack's exit sends COMMIT

    def now(self) -> float:
        """The server's time now, without asking it: this process's clock moved by the
        offset the last write saw (a daemon whose clock is off still shows leases as the
        board judges them). Ahead by at most that write's wait for the lock."""
        if self._clock is not None:
            return self._clock()
        return time.time() + self._clock_offset

    def problem(self) -> CoordError | None:
        """Whether the server answers now: a short read (on a new connection when the last
        one broke). Health reports it, so a monitor sees the outage and the recovery."""
        try:
            with self.read() as tx:
                tx.last_seq()
        except CoordError as error:
            return error
        return None

    # --- the daemons serving this board (``coord status``) ---------------------------------

    def _outside_tx(self, work: Callable[[psycopg.Connection[Any]], Any]) -> Any:
        """``work`` on the thread's connection, no transaction of the board's (each statement
        its own, autocommit); a connection fault is ``DatabaseUnreachable``, and the broken
        connection is dropped for the next call to open a new one."""
        with self._faults():
            conn = self._conn()
            try:
                return work(conn)
            except psycopg.Error as error:
                if postgres_faults.is_connection_fault(error):
                    self._drop(conn)
                raise

    def daemon_heartbeat(self, record: dict[str, Any]) -> None:
        self._outside_tx(lambda conn: postgres_daemons.heartbeat(conn, record))

    def daemon_gone(self, instance: str) -> None:
        self._outside_tx(lambda conn: postgres_daemons.gone(conn, instance))

    def live_daemons(self) -> list[dict[str, Any]]:
        return list(self._outside_tx(postgres_daemons.live))


def _commit_notifying(tx: PostgresTx | None) -> str:
    """COMMIT, after a NOTIFY of the last sequence number when the transaction appended any
    event: one round trip (the simple protocol runs both), sent only if COMMIT succeeds."""
    seq = tx.appended_seq if tx is not None else None
    if seq is None:
        return "COMMIT"
    return f"NOTIFY {NOTIFY_CHANNEL}, '{int(seq)}'; COMMIT"
