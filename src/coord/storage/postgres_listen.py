"""The driver's side of following a PostgreSQL board: a LISTEN connection, and the read of
the live reservations the guard's mirror holds.

Each write transaction that appended events notifies ``NOTIFY_CHANNEL`` with its last
sequence number on commit (``coord.storage.postgres``). ``Listener`` holds a connection of its
own that LISTENs there; ``LiveReader`` reads the live reservations, on the database's clock,
in the columns of ``coord.fast.mirror``. Both say a lost or refused connection as
``DatabaseUnreachable`` and open a new one at their next call. The rules of when to listen,
wake and refresh are the daemon's (``coord.server.follower``).
"""

from __future__ import annotations

import contextlib
from typing import Any

import psycopg

from coord.errors import DatabaseUnreachable
from coord.storage import postgres_conn, postgres_faults
from coord.storage.postgres import NOTIFY_CHANNEL, describe

# a read of the reservations that the server does not answer in this long is given up (and
# cut by the server itself): the mirror then ages, and the guard refuses, rather than a
# thread waiting on a connection nobody answers; a wait for a NOTIFY keeps its own bound
BOUNDS = postgres_conn.Bounds(connect=5, answer=6, statement=5)
_CLOCK = "SELECT extract(epoch FROM clock_timestamp())::float8, last_seq FROM board_counters"
_LIVE = (
    "SELECT id, agent, pattern, prefix, exclusive, item_id, reason, created_at, expires_at, rule "
    "FROM reservations WHERE expires_at > %s ORDER BY id"
)
# the worktree items a claim or the landing queue holds, for the guard's worktree rule
# (coord.fast.worktree_owner): who holds each one's worktree, in coord.fast.mirror.ITEM_COLUMNS
_WORKTREE_ITEMS = (
    "SELECT id, state, claimed_by, fencing_token, lease_expires_at, worktree FROM items "
    "WHERE worktree IS NOT NULL AND state IN ('claimed', 'queued') ORDER BY id"
)


def _connect(dsn: str) -> psycopg.Connection[Any]:
    try:
        # a dead peer without a FIN (a cut cable) is found by TCP keepalives within ~10 s
        return postgres_conn.connect(dsn, BOUNDS, autocommit=True)
    except psycopg.Error as err:
        raise postgres_faults.unreachable(describe(dsn), err) from None


class _Connected:
    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._conn: psycopg.Connection[Any] | None = None

    def _open(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = _connect(self.dsn)
        return self._conn

    def _lost(self, err: psycopg.Error) -> DatabaseUnreachable:
        self.close()
        return postgres_faults.unreachable(describe(self.dsn), err)

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            self._conn = None


class Listener(_Connected):
    """A connection that LISTENs for the board's writes."""

    def listen(self) -> None:
        """(Re)connect and LISTEN; ``DatabaseUnreachable`` when the server cannot be reached."""
        self.close()
        try:
            self._open().execute(f"LISTEN {NOTIFY_CHANNEL}")
        except psycopg.Error as err:
            raise self._lost(err) from None

    def wait(self, timeout: float) -> int | None:
        """The highest sequence number notified within ``timeout`` seconds (every
        notification already queued is taken with the first), or None when none came."""
        conn = self._conn
        if conn is None or conn.closed:
            raise DatabaseUnreachable(f"not listening on {describe(self.dsn)}")
        try:
            heard = [n.payload for n in conn.notifies(timeout=timeout, stop_after=1)]
            if heard:
                heard += [n.payload for n in conn.notifies(timeout=0)]
        except psycopg.Error as err:
            raise self._lost(err) from None
        seqs = [int(p) for p in heard if p.isdigit()]
        return max(seqs) if seqs else (0 if heard else None)


class LiveReader(_Connected):
    """Reads the live reservations for the mirror."""

    def read(self) -> tuple[float, int, list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """(the database's clock, the board's last sequence number, the reservations live at
        that moment in ``coord.fast.mirror.MIRROR_COLUMNS``, the worktree items claimed or
        queued in ``coord.fast.mirror.ITEM_COLUMNS``)."""
        try:
            conn = self._open()
            row = conn.execute(_CLOCK).fetchone()
            assert row is not None  # board_counters holds its one row from the first migration
            database_now, last_seq = float(row[0]), int(row[1])
            live = conn.execute(_LIVE, (database_now,)).fetchall()
            return database_now, last_seq, live, conn.execute(_WORKTREE_ITEMS).fetchall()
        except psycopg.Error as err:
            raise self._lost(err) from None
