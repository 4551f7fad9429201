"""The registry of the daemons serving one PostgreSQL board (the ``daemons`` table).

Each daemon upserts its row every ``HEARTBEAT_SECONDS`` on the database's clock; a row whose
heartbeat is older than ``LIVE_SECONDS`` is a daemon that is gone (``kill -9``, a machine off
the network) and is neither shown nor counted; rows gone for a day are deleted. The writes run
outside the board's write lock (autocommit): they are not the board's state and append no
event, so they never wait behind, or hold up, a claim.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the daemon reads the constants below on any board, driver or not
    import psycopg

HEARTBEAT_SECONDS = 3.0
LIVE_SECONDS = 4 * HEARTBEAT_SECONDS  # three beats missed, and a slow one: gone
FORGET_SECONDS = 86400.0

_NOW = "extract(epoch FROM clock_timestamp())"
FIELDS = ("instance", "machine", "pid", "url", "board_dir", "version", "started_at")

_UPSERT = (
    f"INSERT INTO daemons ({', '.join(FIELDS)}, heartbeat_at)"
    f" VALUES ({', '.join(['%s'] * len(FIELDS))}, {_NOW})"
    f" ON CONFLICT (instance) DO UPDATE SET heartbeat_at = {_NOW}"
)


def heartbeat(conn: psycopg.Connection[Any], record: dict[str, Any]) -> None:
    """This daemon is live now (its row written on first beat). One checkout has one daemon
    (its lock, ``.coord/daemon.lock``): another row of this checkout is a daemon that died
    without its goodbye (``kill -9``), and goes now rather than be shown live until its
    heartbeats lapse."""
    conn.execute(_UPSERT, tuple(record[field] for field in FIELDS))
    conn.execute(
        "DELETE FROM daemons WHERE machine = %s AND board_dir = %s AND instance <> %s",
        (record["machine"], record["board_dir"], record["instance"]),
    )
    conn.execute(f"DELETE FROM daemons WHERE heartbeat_at < {_NOW} - %s", (FORGET_SECONDS,))


def gone(conn: psycopg.Connection[Any], instance: str) -> None:
    """This daemon stops: its row goes at once rather than after its heartbeats lapse."""
    conn.execute("DELETE FROM daemons WHERE instance = %s", (instance,))


def live(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """Every daemon whose heartbeat is recent, oldest first, with its heartbeat's age."""
    rows = conn.execute(
        f"SELECT {', '.join(FIELDS)}, {_NOW} - heartbeat_at FROM daemons"
        f" WHERE heartbeat_at > {_NOW} - %s ORDER BY started_at, instance",
        (LIVE_SECONDS,),
    ).fetchall()
    return [
        {**dict(zip(FIELDS, row[:-1], strict=True)), "heartbeat_age_seconds": round(row[-1], 1)}
        for row in rows
    ]
