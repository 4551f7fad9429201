"""Direct messages (issue 26 item 4): `coord send AGENT TEXT`, POST /v1/messages and the MCP
`post` tool with ``to``: a note addressed to the agent, in its inbox and in the log.

The real `coord` command and daemon, on a real SQLite board.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import Daemon, run_cli


def _inbox(board_dir: Path, agent: str) -> list[dict[str, Any]]:
    ran = run_cli("inbox", "--json", board_dir=board_dir, agent=agent)
    assert ran.returncode == 0, ran.stderr
    answer = json.loads(ran.stdout)
    return list(answer["events"] if isinstance(answer, dict) else answer)


def test_a_message_sent_reaches_the_recipients_inbox_whole(daemon: Daemon) -> None:
    text = "can you free src/a.py?\nI need it for the parser; a minute is enough"
    sent = run_cli("send", "bob", text, board_dir=daemon.board_dir, agent="alice")
    assert sent.returncode == 0, sent.stderr
    assert "sent to bob" in sent.stdout
    told = _inbox(daemon.board_dir, "bob")
    assert [e["kind"] for e in told] == ["created"]
    item = daemon.request("GET", f"/v1/items/{told[0]['item_id']}")[1]
    assert (item["kind"], item["to"], item["created_by"]) == ("note", "bob", "alice")
    assert item["title"] == "can you free src/a.py?" and item["body"] == text
    assert _inbox(daemon.board_dir, "carol") == []  # for bob alone
    assert _inbox(daemon.board_dir, "bob") == []  # read once


def test_a_message_over_http_and_its_bad_input(daemon: Daemon) -> None:
    status, made = daemon.request(
        "POST", "/v1/messages", {"agent": "alice", "to": "bob", "text": "hello"}
    )
    assert status == 201 and made["to"] == "bob", made
    before = daemon.request("GET", "/v1/events?after=0")[1]["events"]
    for body, field in [
        ({"agent": "alice", "to": "bob"}, "text"),
        ({"agent": "alice", "to": "bob", "text": "   "}, "text"),
        ({"agent": "alice", "to": "no such name!", "text": "hi"}, "to"),
        ({"agent": "alice", "text": "hi"}, "to"),
    ]:
        status, answer = daemon.request("POST", "/v1/messages", body)
        assert status == 422, (body, answer)
        assert field in answer["message"], answer
    assert daemon.request("GET", "/v1/events?after=0")[1]["events"] == before  # unchanged
    # and the CLI says it as one line, exit 2, no traceback
    ran = run_cli("send", "bob", " ", board_dir=daemon.board_dir, agent="alice")
    assert ran.returncode == 2 and "Traceback" not in ran.stderr, ran.stderr


def test_the_log_and_the_inbox_say_a_message_as_one(daemon: Daemon) -> None:
    """`coord log` and `coord inbox` (and `coord watch`'s feed, the same line) show who wrote
    to whom, not "created #1"."""
    sent = run_cli("send", "bob", "ready for review", board_dir=daemon.board_dir, agent="alice")
    assert sent.returncode == 0, sent.stderr
    for args, agent in ((["log"], "carol"), (["inbox"], "bob")):
        shown = run_cli(*args, board_dir=daemon.board_dir, agent=agent)
        assert shown.returncode == 0, shown.stderr
        assert "alice to bob #1: 'ready for review'" in shown.stdout, shown.stdout


def test_the_mcp_post_tool_with_a_recipient_is_a_direct_message(daemon: Daemon) -> None:
    """No new tool (the budget is 15): `post` with kind note and ``to``."""
    import asyncio
    import os
    import sys

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "coord", "mcp"],
        env={**os.environ, "COORD_DIR": str(daemon.board_dir), "COORD_AGENT": "alice"},
        cwd=str(daemon.board_dir.parent),
    )

    async def post() -> Any:
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            assert len(tools) <= 15
            return await client.call_tool(
                "post", {"title": "review my branch?", "kind": "note", "to": "bob"}
            )

    result = asyncio.run(post())
    assert not result.is_error, result
    told = _inbox(daemon.board_dir, "bob")
    assert [(e["kind"], e["agent"], e["details"]["to"]) for e in told] == [
        ("created", "alice", "bob")
    ]
