"""The reference for claim-next on PostgreSQL: a raw ASGI callable, no framework, coord's
claim transaction written out by hand.

    python bench/pg_refserver.py DSN PORT_FILE

Served as ``refserver.py`` serves the SQLite reference, and as ``coord serve`` serves a team
board: uvicorn with httptools, no access log, lifespan off, a pre-bound 127.0.0.1 socket
(``IPPROTO_TCP``, so no Nagle) with backlog 1024, the transaction inline on the event loop.
The same driver as the backend (psycopg 3, one autocommit connection, BEGIN/COMMIT written
out), and the same transaction as ``PostgresStorage.write()`` + ``take_first_pending`` +
``append_event``: READ COMMITTED, the board's write lock with the server's clock, the
one-statement claim (a conditional UPDATE over a ``FOR UPDATE SKIP LOCKED`` pick), the event
from the counter row, COMMIT. It reads no item twice, checks no token, writes no agent row
and encodes a short answer: the floor of a claim over HTTP on this database.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import psycopg

from coord.storage.postgres import WRITE_LOCK_KEY
from refserver import LEASE_SECONDS, claim_app, serve

BEGIN = (
    "BEGIN ISOLATION LEVEL READ COMMITTED;"
    f" SELECT pg_advisory_xact_lock({WRITE_LOCK_KEY});"
    " SELECT extract(epoch FROM clock_timestamp())::float8"
)
CLAIM = """
UPDATE items SET state = 'claimed', claimed_by = %s, fencing_token = fencing_token + 1,
       lease_expires_at = %s, updated_at = %s
 WHERE id = (SELECT id FROM items WHERE state = 'pending' AND kind = 'task'
              ORDER BY priority, id LIMIT 1 FOR UPDATE SKIP LOCKED)
   AND state = 'pending'
RETURNING id, kind, title, priority, fencing_token, lease_expires_at"""
EVENT = """
WITH next AS (UPDATE board_counters SET last_seq = last_seq + 1 RETURNING last_seq)
INSERT INTO events (seq, at, agent, item_id, kind, details)
VALUES ((SELECT last_seq FROM next), %s, %s, %s, 'claimed', %s::json)"""


def make_app(conn: psycopg.Connection[Any]) -> Any:
    def claim(agent: str) -> tuple[Any, ...] | None:
        cursor = conn.execute(BEGIN.encode())
        while cursor.nextset():
            pass
        now = cursor.fetchone()[0]  # type: ignore[index]
        try:
            row = conn.execute(CLAIM, (agent, now + LEASE_SECONDS, now)).fetchone()
            if row is not None:
                conn.execute(EVENT, (now, agent, row[0], json.dumps({"token": row[4]})))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return row

    return claim_app(claim)


if __name__ == "__main__":
    serve(make_app(psycopg.connect(sys.argv[1], autocommit=True)), sys.argv[2])
