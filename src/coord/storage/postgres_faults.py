"""What went wrong with a PostgreSQL board's server, said as an error the user can act on.

The PostgreSQL side of ``coord.storage.sqlite_faults``: psycopg reports a server that is
down, restarting, or that ended this connection (``pg_terminate_backend``) as an
``OperationalError``. Left alone that was a 500 "internal error" in the daemon; here it
becomes ``DatabaseUnreachable`` (503, Retry-After, the reason), and the connection is dropped
by the storage so the next request opens a new one: the daemon reconnects by itself.

A server that stops answering (``postgres_conn.NotAnswering``: no answer within the
connection's bound) is said as such, "not answering", with what became of the request. The
server's own bounds are said as the board being busy (503 ``board_busy``, Retry-After: the
CLI asks again): the board's write lock held past ``lock_timeout`` by another daemon's write,
a statement cut by ``statement_timeout``; nothing was changed either way.

Nothing else is translated. A serialization failure is an ``OperationalError`` too in
psycopg, but says nothing of the server's reachability: it stays what it is (a bug of ours is
a 500 with its details in the log).
"""

from __future__ import annotations

import re
import threading
import time
from urllib.parse import urlsplit

import psycopg

from coord.errors import BoardBusy, CoordError, DatabaseUnreachable
from coord.storage.postgres_conn import NotAnswering

# SQLSTATEs of a connection the server ended or refused: class 08 (connection exception),
# 57P01-57P03 (admin shutdown, crash shutdown, cannot connect now), 53300 (too many
# connections)
_CONNECTION_STATES = ("57P01", "57P02", "57P03", "53300")
_LOCK_NOT_AVAILABLE = "55P03"  # lock_timeout
_QUERY_CANCELED = "57014"  # statement_timeout (or an administrator's pg_cancel_backend)
# what libpq says when the server runs but the URL's database is not on it (no SQLSTATE: the
# connection was never made)
_MISSING_DATABASE = re.compile(r'FATAL: +database ".*" does not exist')


def is_silence(err: BaseException) -> bool:
    """True if ``err`` says the server took too long to answer at all: no answer within the
    connection's bound, or no reply to a connection request within connect_timeout."""
    return isinstance(err, (NotAnswering, psycopg.errors.ConnectionTimeout))


def is_connection_fault(err: BaseException) -> bool:
    """True if ``err`` says the server cannot be reached or dropped the connection."""
    if not isinstance(err, psycopg.OperationalError):
        return isinstance(err, psycopg.InterfaceError) and "closed" in str(err)
    state = err.sqlstate
    return state is None or state.startswith("08") or state in _CONNECTION_STATES


def reason(err: BaseException) -> str:
    """What the driver said, on one line (libpq names the address and the cause: "connection
    refused", "terminating connection due to administrator command"; never a password)."""
    lines = (" ".join(line.split()) for line in str(err).splitlines())
    said = "; ".join(line for line in lines if line)  # libpq's hint is a line of its own
    return (said[:297] + "...") if len(said) > 300 else said or type(err).__name__


class Silence:
    """Whether the server has been found silent (no answer in time), for one storage's
    threads: while it is, ``gate`` refuses every call at once but one every ``PROBE_SECONDS``,
    which tries the server; any answer (``heard(None)``, or an error the server or its host
    gave at once) ends it."""

    PROBE_SECONDS = 1.0

    def __init__(self, where: str) -> None:
        self.where = where  # ``postgres.describe(dsn)``
        self.since: float | None = None  # time.time() it began; None while it answers
        self._shown_by: BaseException | None = None
        self._next_try = 0.0
        self._lock = threading.Lock()

    def heard(self, error: BaseException | None) -> None:
        """What the last exchange with the server showed."""
        with self._lock:
            if error is not None and is_silence(error):
                if self.since is None:
                    self.since = time.time()
                self._shown_by = error
                self._next_try = time.monotonic() + self.PROBE_SECONDS
            else:
                self.since = self._shown_by = None

    def gate(self) -> None:
        """Return if a call may go to the server; ``DatabaseUnreachable`` if not."""
        if self.since is None:
            return
        with self._lock:
            error, since = self._shown_by, self.since
            if error is None or since is None:
                return
            now = time.monotonic()
            if now >= self._next_try:
                self._next_try = now + self.PROBE_SECONDS
                return
        raise not_answering(self.where, error, since=since)


class Attempt:
    """How far a transaction got: a connection lost while its COMMIT was under way may have
    committed it or not, and the client must not be told "nothing was changed"."""

    committing = False


def _createdb(where: str) -> str:
    """The command that makes the database ``where`` names (``postgres.describe``'s form)."""
    place = urlsplit(where)
    user = f" -U {place.username}" if place.username else ""
    return f"createdb -h {place.hostname} -p {place.port}{user} {place.path.lstrip('/')}"


def unreachable(where: str, err: BaseException, committing: bool = False) -> DatabaseUnreachable:
    """The error for a connection fault; ``where`` is ``postgres.describe(dsn)``."""
    if _MISSING_DATABASE.search(str(err)):
        # the server answered: waiting or checking that it runs would not help
        fix = _createdb(where)
        return DatabaseUnreachable(
            f"the PostgreSQL board at {where} cannot be reached: the server has no such "
            f"database; create it (`{fix}`) or fix the URL; nothing was changed",
            database=where,
            retry_after=DatabaseUnreachable.retry_after,
            outcome_unknown=False,
            fix=fix,
        )
    outcome = (
        "the connection broke while the change was being committed, so it may or may not "
        "have been made: look (coord show, coord ls) before trying again"
        if committing
        else "nothing was changed"
    )
    return DatabaseUnreachable(
        f"the PostgreSQL board at {where} cannot be reached: {reason(err)}; {outcome}; try "
        f"again in {DatabaseUnreachable.retry_after} s (a running daemon reconnects by itself "
        "once the server answers); check that the server runs, is reachable from here, and "
        "that the URL and password are right",
        database=where,
        retry_after=DatabaseUnreachable.retry_after,
        outcome_unknown=committing,
    )


def not_answering(
    where: str, err: BaseException, committing: bool = False, since: float | None = None
) -> DatabaseUnreachable:
    """The error while the server answers nothing: ``err`` is the silence that showed it
    (``is_silence``); ``since``, the ``time.time()`` it began, once the daemon has seen it."""
    outcome = (
        "the change was being committed when it fell silent, so it may or may not have been "
        "made: look (coord show, coord ls) once it answers, before trying again"
        if committing
        else "nothing was changed"
    )
    silent = ""
    if since is not None:
        silent = f" (silent for {max(0, round(time.time() - since))} s)"
    return DatabaseUnreachable(
        f"the board's database at {where} is not answering: {reason(err)}{silent}; {outcome}; "
        f"try again in {DatabaseUnreachable.retry_after} s (the daemon asks the database again "
        "every second and serves as soon as it answers); check that the server runs and is "
        "not stopped or overloaded, and that the network to it carries packets",
        database=where,
        retry_after=DatabaseUnreachable.retry_after,
        outcome_unknown=committing,
    )


def busy(where: str, err: BaseException) -> BoardBusy:
    """The server's own bounds: the board's lock held too long by another write, or a
    statement cut by statement_timeout. The transaction was rolled back."""
    if getattr(err, "sqlstate", None) == _LOCK_NOT_AVAILABLE:
        what = (
            "another write (of this daemon or another one on the board) held the board's write "
            "lock longer than the daemon waits for it"
        )
    else:
        what = (
            "the server did not finish the request within the daemon's statement timeout (an "
            "overloaded server, or a request that reads a great deal: ask for less)"
        )
    return BoardBusy(
        f"the board's database at {where} is busy: {what}; nothing was changed; try again in "
        f"{BoardBusy.retry_after} s",
        database=where,
        retry_after=BoardBusy.retry_after,
    )


def translate(where: str, err: BaseException, committing: bool = False) -> CoordError | None:
    """The error to answer for ``err``, or None for anything that is not the server's
    reachability or its bounds (a bug of ours)."""
    if is_silence(err):
        return not_answering(where, err, committing)
    if is_connection_fault(err):
        return unreachable(where, err, committing)
    if getattr(err, "sqlstate", None) in (_LOCK_NOT_AVAILABLE, _QUERY_CANCELED):
        return busy(where, err)
    return None
