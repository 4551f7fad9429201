"""The reference for claim-next: a raw ASGI callable, no framework, one SQL statement.

    python bench/refserver.py BOARD_DB PORT_FILE

Served like ``coord serve`` serves the board (src/coord/server/daemon.py): uvicorn with
httptools, no access log, lifespan off, a pre-bound 127.0.0.1 socket with backlog 1024,
and the database opened with the same settings as src/coord/storage/sqlite.py (WAL,
synchronous=NORMAL, busy_timeout=5000, foreign_keys=ON, journal_size_limit=64 MiB,
isolation_level=None). The claim runs inline on the event loop, as coord's does. It checks no
token and writes no event: it is the floor of what a claim over HTTP can cost here.

One difference on purpose: the socket is made with ``proto=IPPROTO_TCP``, as uvicorn's own
``create_server(host, port)`` makes it, so asyncio sets TCP_NODELAY on every accepted
connection. A socket made as ``socket.socket(AF_INET, SOCK_STREAM)`` has proto 0, and asyncio
then leaves Nagle on (see README: the 40 ms delayed-ACK stall).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import uvicorn

LEASE_SECONDS = 900.0
CLAIM_SQL = (
    "UPDATE items SET state = 'claimed', claimed_by = ?, fencing_token = fencing_token + 1, "
    "lease_expires_at = ?, updated_at = ? "
    "WHERE id = (SELECT id FROM items WHERE state = 'pending' ORDER BY priority, id LIMIT 1) "
    "RETURNING id, kind, title, priority, fencing_token, lease_expires_at"
)
_FIELDS = ("id", "kind", "title", "priority", "token", "lease_expires_at")
_JSON_HEADERS = [(b"content-type", b"application/json")]


def open_db(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=5.0, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 5000")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA journal_size_limit = 67108864")
    return conn


def make_app(conn: sqlite3.Connection) -> Any:
    def claim(agent: str) -> Sequence[Any] | None:
        now = time.time()
        return conn.execute(CLAIM_SQL, (agent, now + LEASE_SECONDS, now)).fetchone()

    return claim_app(claim)


def claim_app(claim: Callable[[str], Sequence[Any] | None]) -> Any:
    """The bare ASGI callable: read the body's agent, ``claim(agent)`` inline on the event
    loop (a row of ``_FIELDS``, or None for nothing ready), answer JSON."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        agent = json.loads(body)["agent"]
        row = claim(agent)
        if row is None:
            status, doc = 404, {"error": "nothing_ready", "message": "nothing is ready"}
        else:
            status = 200
            doc = dict(zip(_FIELDS, row, strict=True))
            doc["claimed_by"] = agent
        payload = json.dumps(doc).encode()
        headers = [*_JSON_HEADERS, (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    return app


def serve(app: Any, port_file: str) -> None:
    """Serve ``app`` as the daemon is served; the bound port goes to ``port_file``."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        http="httptools",
        timeout_graceful_shutdown=2,
    )
    tmp = f"{port_file}.{os.getpid()}.tmp"
    with open(tmp, "w") as out:
        out.write(str(sock.getsockname()[1]))
    os.replace(tmp, port_file)
    uvicorn.Server(config).run(sockets=[sock])


def main() -> None:
    db_path, port_file = sys.argv[1], sys.argv[2]
    serve(make_app(open_db(db_path)), port_file)


if __name__ == "__main__":
    main()
