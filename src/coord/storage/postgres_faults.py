"""What went wrong with a PostgreSQL board's server, said as an error the user can act on.

The PostgreSQL side of ``coord.storage.sqlite_faults``: psycopg reports a server that is
down, restarting, or that ended this connection (``pg_terminate_backend``) as an
``OperationalError``. Left alone that was a 500 "internal error" in the daemon; here it
becomes ``DatabaseUnreachable`` (503, Retry-After, the reason), and the connection is dropped
by the storage so the next request opens a new one: the daemon reconnects by itself.

Only connection faults are translated. A serialization failure or a cancelled statement is an
``OperationalError`` too in psycopg, but says nothing of the server's reachability: it stays
what it is (a bug of ours is a 500 with its details in the log).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import psycopg

from coord.errors import DatabaseUnreachable

# SQLSTATEs of a connection the server ended or refused: class 08 (connection exception),
# 57P01-57P03 (admin shutdown, crash shutdown, cannot connect now), 53300 (too many
# connections)
_CONNECTION_STATES = ("57P01", "57P02", "57P03", "53300")
# what libpq says when the server runs but the URL's database is not on it (no SQLSTATE: the
# connection was never made)
_MISSING_DATABASE = re.compile(r'FATAL: +database ".*" does not exist')


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


def translate(
    where: str, err: BaseException, committing: bool = False
) -> DatabaseUnreachable | None:
    """``DatabaseUnreachable`` for a connection fault, or None for anything else."""
    return unreachable(where, err, committing) if is_connection_fault(err) else None
