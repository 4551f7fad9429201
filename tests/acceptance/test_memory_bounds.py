"""What one request can make the daemon hold (issue 14, item 8): an item's thread is answered
a page at a time, a page bounded in bytes; MCP keeps no session between requests."""

from __future__ import annotations

import json
import urllib.request

from conftest import Daemon, run_cli
from coord.limits import MAX_ANSWER_BYTES, MAX_BODY

REPLY = "r" * (MAX_BODY - 100)  # a large reply, as agents paste logs
REPLIES = 3 * MAX_ANSWER_BYTES // len(REPLY) + 5  # three pages' worth and some


def test_a_long_thread_is_answered_in_pages_each_bounded_in_bytes(daemon: Daemon) -> None:
    status, item = daemon.request("POST", "/v1/items", {"agent": "a", "title": "chatty"})
    assert status == 201, item
    for n in range(REPLIES):
        body = {"agent": "a", "body": f"{n}:{REPLY}"}
        assert daemon.request("POST", f"/v1/items/{item['id']}/replies", body)[0] == 201

    seen: list[int] = []
    after = 0
    pages = 0
    while after is not None:
        status, page = daemon.request("GET", f"/v1/items/{item['id']}?replies_after={after}")
        assert status == 200, page
        assert sum(len(r["body"].encode()) for r in page["replies"]) <= MAX_ANSWER_BYTES
        seen += [int(r["body"].split(":", 1)[0]) for r in page["replies"]]
        after, pages = page["replies_next"], pages + 1
    assert seen == list(range(REPLIES))  # every reply once, in order
    assert pages > 1

    shown = run_cli("show", str(item["id"]), board_dir=daemon.board_dir)
    assert shown.returncode == 0, shown.stderr
    assert "the thread goes on" in shown.stdout and "replies_after=" in shown.stdout


def test_a_page_size_out_of_range_is_refused(daemon: Daemon) -> None:
    daemon.request("POST", "/v1/items", {"agent": "a", "title": "t"})
    for query in ("replies_limit=0", "replies_limit=501", "replies_after=-1"):
        status, answer = daemon.request("GET", f"/v1/items/1?{query}")
        assert status == 422 and answer["field"].startswith("replies_"), (query, answer)


def test_mcp_over_http_keeps_no_session(daemon: Daemon) -> None:
    """A stateful MCP server answers initialize with an Mcp-Session-Id and keeps the session
    until the client says goodbye or an idle timeout; clients that vanish never say it."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    request = urllib.request.Request(
        daemon.url + "/mcp", data=json.dumps(initialize).encode(), method="POST"
    )
    for name, value in {
        "Authorization": f"Bearer {daemon.token}",
        "X-Coord-Agent": "a",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }.items():
        request.add_header(name, value)
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 200
        assert answer.headers.get("mcp-session-id") is None
        assert b"serverInfo" in answer.read()
