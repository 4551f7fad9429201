"""The guard's view of a PostgreSQL board: a local mirror of its live reservations.

The guard and every edit hook run before each edit and may import no PostgreSQL driver (it
costs more than the whole guard). On a PostgreSQL board the machine's daemon keeps
``.coord/mirror.db``: a small SQLite file holding the live reservations in the guard's own
table and columns (``coord.fast.holds``), so the guard runs the very query it runs on a
SQLite board. The daemon rewrites it on every NOTIFY and at least every second
(``coord.server.follower``): a new file, renamed over the old one, so a reader sees one
whole refresh or the one before, never half of one. Mode 0600, like the rest of the board.

Its stamp says when it was taken, on two clocks: ``database_now`` (the database server's
clock, the only one a lease is judged on) and ``taken_at`` (this machine's, read right
after). The guard judges expiry at ``database_now + (time.time() - taken_at)``: the
database's clock moved forward by the time elapsed here, so a machine whose clock is off
judges leases as the database does. A mirror older than ``STALE_SECONDS`` (or taken "in the
future": the local clock stepped back) is not believed: the guard asks the daemon to refresh
it (``POST /v1/mirror:refresh``, after the daemon proves it holds the board's token), and
refuses the edit when that fails, saying why and what to do. Fail closed.

Stdlib only: it runs before every edit.
"""

from __future__ import annotations

import os
import time

from coord.errors import InvalidInput
from coord.fast import board_files, holds, jsontext
from coord.fast.db import sqlite3

TYPE_CHECKING = False  # typing costs ~10 ms at import; this runs before every edit
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

MIRROR_FILENAME = "mirror.db"
# Past this age the mirror is not believed. The daemon refreshes it every second and on every
# NOTIFY, so five seconds means its follower has lost the database (or the daemon is gone).
STALE_SECONDS = 5.0
# A stamp this far in the local future: the clock stepped back since; elapsed time is unknown.
FUTURE_SLACK_SECONDS = 0.5
ASK_TIMEOUT_SECONDS = 3.0
FORMAT = 1
MIRROR_COLUMNS = (
    "id, agent, pattern, prefix, exclusive, item_id, reason, created_at, expires_at, rule"
)
# the worktree items a claim or the queue holds (coord.fast.worktree_owner reads them as it
# reads board.db's items): a mirror an older daemon wrote has no such table, and the guard then
# refuses writes in coord worktrees (fail closed) until this daemon rewrites it
ITEM_COLUMNS = "id, state, claimed_by, fencing_token, lease_expires_at, worktree"
_SCHEMA = """
CREATE TABLE reservations (
    id INTEGER PRIMARY KEY, agent TEXT NOT NULL, pattern TEXT NOT NULL, prefix TEXT NOT NULL,
    exclusive INTEGER NOT NULL, item_id INTEGER, reason TEXT, created_at REAL NOT NULL,
    expires_at REAL NOT NULL, rule INTEGER NOT NULL
);
CREATE INDEX reservations_prefix ON reservations (prefix);
CREATE TABLE items (
    id INTEGER PRIMARY KEY, state TEXT NOT NULL, claimed_by TEXT, fencing_token INTEGER NOT NULL,
    lease_expires_at REAL, worktree TEXT
);
CREATE TABLE stamp (
    format INTEGER NOT NULL, database_now REAL NOT NULL, taken_at REAL NOT NULL,
    last_seq INTEGER NOT NULL, pid INTEGER NOT NULL
);
"""
FIX = (
    "start this machine's daemon, which keeps the mirror: any board command starts it "
    "(`coord ls`), or `coord serve` in the foreground; `coord doctor` says whether the "
    "database answers"
)


def path_of(board_dir: str) -> str:
    return os.path.join(board_dir, MIRROR_FILENAME)


def source(board_dir: str) -> tuple[str, float | None]:
    """Where the guard reads ``board_dir``'s live reservations, and at what moment of the
    board's clock: ``(board.db, None)`` (now) on SQLite; on PostgreSQL the mirror and the
    database's clock as estimated from its stamp, refreshed by the daemon first when stale.
    ``holds.BoardUnreadable`` says why it cannot be believed and what to do."""
    try:
        on_postgres = board_files.database_url(board_dir) is not None
    except InvalidInput as err:  # a config that cannot be read: never taken for SQLite
        raise holds.BoardUnreadable(err.message) from None
    if not on_postgres:
        return os.path.join(board_dir, board_files.DB_FILENAME), None
    path = path_of(board_dir)
    now, why = database_now(path)
    if now is None:
        _ask_daemon(board_dir, why)
        now, again = database_now(path)
        if now is None:
            raise holds.BoardUnreadable(f"{again} even after the daemon refreshed it; {FIX}")
    return path, now


def database_now(path: str) -> tuple[float | None, str]:
    """The database's clock now, as the stamp of the mirror at ``path`` tells it: the
    database's reading moved on by the time elapsed here since. None, and why, when the
    mirror cannot be believed (missing, unreadable, stale, or stamped in the local future)."""
    try:
        conn = sqlite3.connect(f"file:{holds._uri_path(path)}?mode=ro", uri=True, timeout=2)
        try:
            row = conn.execute("SELECT format, database_now, taken_at FROM stamp").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        row = None
    if row is None or row[0] != FORMAT:
        exists = os.path.exists(path)
        return None, f"the reservation mirror {path} is {'unreadable' if exists else 'missing'}"
    age = time.time() - float(row[2])
    if age > STALE_SECONDS:
        return None, (
            f"the reservation mirror {path} is {age:.0f} s old (at most {STALE_SECONDS:g} s)"
        )
    if age < -FUTURE_SLACK_SECONDS:
        return None, f"the reservation mirror {path} was taken {-age:.1f} s ahead of this clock"
    return float(row[1]) + max(0.0, age), ""


def _ask_daemon(board_dir: str, why: str) -> None:
    """Have this board's daemon refresh the mirror now; ``holds.BoardUnreadable`` naming
    ``why`` and what failed when it does not."""
    import http.client  # the slow path only: it costs several ms to import

    from coord.fast import daemon_proof

    try:
        with open(os.path.join(board_dir, "daemon.json"), encoding="utf-8") as f:
            record = jsontext.loads(f.read())
        host, port, instance = str(record["host"]), int(record["port"]), record["instance"]
        with open(os.path.join(board_dir, "token"), encoding="utf-8") as f:
            token = f.read().strip()
    except (OSError, ValueError, KeyError, TypeError):
        raise holds.BoardUnreadable(f"{why}, and no coord daemon runs here; {FIX}") from None
    nonce = daemon_proof.new_nonce()
    try:
        conn = http.client.HTTPConnection(host, port, timeout=ASK_TIMEOUT_SECONDS)
        try:
            conn.request("GET", f"/v1/identity?nonce={nonce}")
            proved = daemon_proof.proves(
                jsontext.loads(conn.getresponse().read()), token, nonce, str(instance), port
            )
            if not proved:
                raise holds.BoardUnreadable(
                    f"{why}, and the process at {host}:{port} did not prove it is this board's "
                    f"daemon; {FIX}"
                )
            conn.request(
                "POST",
                "/v1/mirror:refresh",
                body=b"{}",
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            )
            answer = conn.getresponse()
            body = answer.read()
        finally:
            conn.close()
    except (OSError, ValueError, http.client.HTTPException) as err:
        raise holds.BoardUnreadable(
            f"{why}, and the coord daemon at {host}:{port} does not answer ({err}); {FIX}"
        ) from None
    if answer.status != 200:
        try:
            message = jsontext.loads(body).get("message") or body.decode(errors="replace")
        except (ValueError, AttributeError):
            message = body.decode(errors="replace")
        raise holds.BoardUnreadable(f"{why}, and the daemon could not refresh it: {message}")


def write(
    board_dir: str,
    rows: Iterable[Sequence[object]],
    *,
    database_now: float,
    taken_at: float,
    last_seq: int,
    items: Iterable[Sequence[object]] = (),
) -> None:
    """Replace the mirror with ``rows`` (``MIRROR_COLUMNS``) and the claimed or queued
    worktree ``items`` (``ITEM_COLUMNS``), stamped: a new file renamed over the old, so a
    reader sees it whole. Only the daemon writes it."""
    from contextlib import suppress

    path = path_of(board_dir)
    temporary = f"{path}.{os.getpid()}.tmp"
    with suppress(FileNotFoundError):  # left by a daemon of this pid that was killed
        os.unlink(temporary)
    os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, board_files.PRIVATE_FILE))
    try:
        conn = sqlite3.connect(temporary, isolation_level=None)
        try:
            # a file nobody reads before the rename: no journal, no sync (a crash loses a
            # cache the next refresh rebuilds)
            conn.execute("PRAGMA journal_mode = OFF")
            conn.execute("PRAGMA synchronous = OFF")
            conn.executescript(_SCHEMA)
            conn.execute("BEGIN")
            marks = ",".join("?" * len(MIRROR_COLUMNS.split(",")))
            conn.executemany(f"INSERT INTO reservations ({MIRROR_COLUMNS}) VALUES ({marks})", rows)
            item_marks = ",".join("?" * len(ITEM_COLUMNS.split(",")))
            conn.executemany(f"INSERT INTO items ({ITEM_COLUMNS}) VALUES ({item_marks})", items)
            conn.execute(
                "INSERT INTO stamp VALUES (?, ?, ?, ?, ?)",
                (FORMAT, database_now, taken_at, last_seq, os.getpid()),
            )
            conn.execute("COMMIT")
        finally:
            conn.close()
        os.replace(temporary, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
