"""The daemon's memory (RSS) under what made it grow (issue 14, item 8): many claims, many
MCP clients that come and go, slow readers of an item with a long thread of large replies.

    .venv/bin/python bench/memory.py                 # 100,000 claims, 1,000 MCP sessions
    .venv/bin/python bench/memory.py --claims 20000 --sessions 200 --replies 200

Prints figures; asserts nothing. Everything runs against a real daemon on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import time
from pathlib import Path

from common import CLEANUP, Server, log, new_board_dir, seed, start_daemon
from coord.limits import MAX_BODY

BATCH = 100  # claims per claim-next request: 100,000 claims in 1,000 requests


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


class Client:
    """One keep-alive connection to the daemon."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)

    def call(self, method: str, path: str, body: object = None, **headers: str) -> tuple:
        data = None if body is None else json.dumps(body).encode()
        self.conn.request(
            method,
            path,
            body=data,
            headers={
                "Authorization": f"Bearer {self.server.token}",
                "Content-Type": "application/json",
                **headers,
            },
        )
        answer = self.conn.getresponse()
        return answer.status, answer.getheaders(), answer.read()


def claims(server: Server, count: int) -> None:
    client = Client(server)
    made = 0
    while made < count:
        status, _, payload = client.call(
            "POST", "/v1/claim-next", {"agent": f"bench-{made % 50}", "count": BATCH}
        )
        if status != 200:
            raise RuntimeError(f"claim-next answered {status}: {payload[:200]!r}")
        made += len(json.loads(payload)["items"])


def mcp_sessions(server: Server, count: int) -> int:
    """``count`` MCP clients that initialize and go away without a goodbye, as agents do.
    Returns how many answers carried a session id (a session the daemon keeps)."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
    kept = 0
    for n in range(count):
        client = Client(server)
        _, headers, _ = client.call(
            "POST",
            "/mcp",
            initialize,
            **{"X-Coord-Agent": f"mcp-{n}", "Accept": "application/json, text/event-stream"},
        )
        kept += any(name.lower() == "mcp-session-id" for name, _ in headers)
        client.conn.close()
    return kept


def slow_readers(server: Server, replies: int, readers: int) -> float:
    """An item with ``replies`` large replies; ``readers`` clients ask for it and do not read
    the answer. Returns the daemon's RSS while they hang on."""
    client = Client(server)
    _, _, payload = client.call("POST", "/v1/items", {"agent": "bench", "title": "long thread"})
    item = json.loads(payload)["id"]
    body = "x" * (MAX_BODY - 64)
    for _ in range(replies):
        client.call("POST", f"/v1/items/{item}/replies", {"agent": "bench", "body": body})
    sockets = []
    for _ in range(readers):
        sock = socket.create_connection(("127.0.0.1", server.port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(
            f"GET /v1/items/{item} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {server.token}\r\n\r\n".encode()
        )
        sockets.append(sock)
    time.sleep(3)  # the daemon builds and queues the answers; nobody reads them
    held = rss_mb(server.proc.pid)
    for sock in sockets:
        sock.close()
    return held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=1_000)
    parser.add_argument("--replies", type=int, default=800)
    parser.add_argument("--readers", type=int, default=10)
    args = parser.parse_args()
    try:
        board_dir = new_board_dir("memory")
        log(f"seeding {args.claims} items")
        seed(board_dir, args.claims)
        server = start_daemon(board_dir)
        pid = server.proc.pid
        Client(server).call("GET", "/v1/health")
        start = rss_mb(pid)
        print(f"daemon RSS at start: {start:.1f} MB")
        began = time.monotonic()
        claims(server, args.claims)
        after_claims = rss_mb(pid)
        print(
            f"after {args.claims:,} claims ({time.monotonic() - began:.0f} s): "
            f"{after_claims:.1f} MB"
        )
        mcp_sessions(server, 1)  # the MCP SDK loads on the first request: not per session
        before_mcp = rss_mb(pid)
        kept = mcp_sessions(server, args.sessions)
        after_mcp = rss_mb(pid)
        each = (after_mcp - before_mcp) * 1024 / max(args.sessions, 1)
        print(
            f"after the first MCP request (the SDK loaded): {before_mcp:.1f} MB; after "
            f"{args.sessions:,} more MCP sessions: {after_mcp:.1f} MB ({each:.1f} KB each; "
            f"{kept} answers carried a session id the daemon keeps)"
        )
        held = slow_readers(server, args.replies, args.readers)
        print(
            f"{args.readers} slow readers of an item with {args.replies} replies of "
            f"{MAX_BODY // 1024} KiB: {held:.1f} MB"
        )
    finally:
        CLEANUP.run()


if __name__ == "__main__":
    main()
