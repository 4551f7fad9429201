"""A connection to a PostgreSQL board that never waits for the server without a bound.

A server that stops answering (a hung host, SIGSTOP, a partition that drops packets) leaves
the connection open: the kernel of the server's host may even take the bytes and answer TCP
keepalives, so nothing on the socket ends the wait, and the server's own timeouts
(``statement_timeout``) do not run while it is stopped. The bound has to be the client's:
``BoundedConnection`` gives every wait for the server (each statement's answer, a COMMIT, a
COPY) at most ``Bounds.answer`` seconds, then closes the connection and raises
``NotAnswering`` (a connection fault: ``postgres_faults`` says it as ``database_unreachable``).
The server is told too (``statement_timeout``, ``lock_timeout`` in the startup options, no
round trip), so a server that answers but is slow ends a statement itself, cleanly, before
the client would give up on it.

Closing the connection keeps "nothing was changed" true: the server, once it runs again,
finds the connection gone and rolls back whatever transaction it had, unless the COMMIT
was already sent, which ``postgres_faults.Attempt.committing`` tells.

Also on every connection: TCP keepalives and ``tcp_user_timeout``, which find a dead peer
(a cut cable, a host gone) on an idle connection and on unacknowledged writes, where no wait
of ours is under way (the LISTEN connection, the one a thread keeps between requests).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import errors
from psycopg.conninfo import conninfo_to_dict


class _NeverRaised(Exception):
    pass


# psycopg raises this from ``Connection.wait(timeout=...)`` (3.3, the least the extra takes)
_WAIT_TIMEOUT: type[BaseException] = getattr(errors, "_WaitTimeout", _NeverRaised)
_WAIT_INTERVAL = 0.1  # psycopg's own: how often a wait wakes to see a Ctrl-C


@dataclass(frozen=True)
class Bounds:
    """How long a connection waits for the server, in seconds (None: unbounded there)."""

    connect: float
    answer: float | None  # any one answer from the server; past it, it is not answering
    statement: float | None = None  # the server's statement_timeout
    lock: float | None = None  # the server's lock_timeout (the board's write lock included)
    # the server ends a session of ours left inside a transaction this long (a daemon that
    # hung between two statements would hold the board's write lock for everyone)
    idle_in_transaction: float | None = None


# What a program that opens a board itself gets (the library, `coord migrate`'s schema step):
# generous, but never for ever. The daemon passes tighter ones (``coord.server.daemon``).
PATIENT = Bounds(connect=10, answer=60, statement=55)
# TCP: an idle connection's peer probed after 5 s, then every 2 s, given up after 2 misses
# (~9 s); data sent and not acknowledged for 10 s ends the connection.
KEEPALIVE: dict[str, Any] = {
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 2,
}
TCP_USER_TIMEOUT_MS = 10_000


class NotAnswering(psycopg.OperationalError):
    """The server did not answer within the connection's bound; the connection is closed."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"no answer from the server within {seconds:g} s (a hung or stopped server, or a "
            "network that drops packets)"
        )
        self.seconds = seconds


class BoundedConnection(psycopg.Connection[Any]):
    """A psycopg connection whose every wait for the server ends after ``answer_seconds``.
    A wait the driver bounds itself (``notifies(timeout=…)``) keeps its own bound."""

    answer_seconds: float | None = None

    def wait(self, gen: Any, interval: float = _WAIT_INTERVAL, timeout: float | None = None) -> Any:
        bound = self.answer_seconds
        if timeout is not None or bound is None:
            return super().wait(gen, interval, timeout)
        try:
            return super().wait(gen, interval, bound)
        except _WAIT_TIMEOUT:
            # half a conversation is lost: the connection cannot be used again
            self.pgconn.finish()
            raise NotAnswering(bound) from None


def connect(dsn: str, bounds: Bounds, **kwargs: Any) -> BoundedConnection:
    """A new connection with ``bounds`` (psycopg's errors raised as they come)."""
    conn = BoundedConnection.connect(
        dsn,
        connect_timeout=max(2, round(bounds.connect)),  # libpq's least is 2 s
        tcp_user_timeout=TCP_USER_TIMEOUT_MS,
        options=_options(dsn, bounds),
        **KEEPALIVE,
        **kwargs,
    )
    conn.answer_seconds = bounds.answer
    return conn


def _options(dsn: str, bounds: Bounds) -> str:
    """The server settings of the session, added to whatever ``options`` the URL gives."""
    try:
        given = str(conninfo_to_dict(dsn).get("options") or "")
    except psycopg.ProgrammingError:
        given = ""  # the connection itself says what is wrong with the URL
    settings = {
        "statement_timeout": bounds.statement,
        "lock_timeout": bounds.lock,
        "idle_in_transaction_session_timeout": bounds.idle_in_transaction,
    }
    ours = " ".join(
        f"-c {name}={round(seconds * 1000)}"
        for name, seconds in settings.items()
        if seconds is not None
    )
    return f"{given} {ours}".strip()
