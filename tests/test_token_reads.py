"""No read by B returns A's fencing token (issue 27): an oracle over every face B reads through.

A claims two items (one then waits on a human) until its tokens are numbers that stand out;
B holds a claim of its own. Then B reads everything it can — every GET route of the table
(with and without naming itself), the event log and its live stream, its inbox, refusals of
writes it tries with a wrong token, the CLI's reads and the MCP tools' — and every byte is
scanned for A's tokens. The same scan over A's own reads finds them: the oracle can fail.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from conftest import Daemon, run_cli
from coord.core.board import Board
from coord.fast import board_files
from coord.mcp.backends import AsgiBackend
from coord.mcp.tools import build_server
from coord.server.app import create_app
from coord.server.routes import ROUTES

# Claimed, released and claimed again this many times, A's tokens are 40-odd: no id, count
# or sequence number of so small a board is written beside the word "token".
ROUNDS = 41


def _claim(daemon: Daemon, item: int, agent: str) -> int:
    status, won = daemon.request("POST", f"/v1/items/{item}/claim", {"agent": agent})
    assert status == 200, won
    return int(won["token"])


def _bumped(daemon: Daemon, item: int, agent: str, rounds: int) -> int:
    for _ in range(rounds):
        token = _claim(daemon, item, agent)
        status, _ = daemon.request(
            "POST", f"/v1/items/{item}/release", {"agent": agent, "token": token}
        )
        assert status == 200
    return _claim(daemon, item, agent)


@pytest.fixture
def scene(daemon: Daemon) -> Iterator[tuple[Daemon, set[int], int]]:
    """(daemon, A's tokens, B's token): A holds #1 (claimed), #2 (needs_human) and #4 (granted
    to its wait when h let go); B holds #3 and asks A for #1."""
    titles = (("a works", ["src/a.py"]), ("a asks", []), ("b works", ["src/b.py"]), ("h", []))
    for title, files in titles:
        status, _ = daemon.request(
            "POST", "/v1/items", {"title": title, "agent": "h", "files": files}
        )
        assert status == 201
    first = _bumped(daemon, 1, "agent-a", ROUNDS)
    second = _bumped(daemon, 2, "agent-a", ROUNDS + 2)
    status, _ = daemon.request(
        "POST",
        "/v1/items/2/escalate",
        {"agent": "agent-a", "token": second, "question": "which way?"},
    )
    assert status == 200
    status, _ = daemon.request("POST", "/v1/items/1/replies", {"agent": "agent-a", "body": "@b"})
    b_token = _claim(daemon, 3, "b")
    held = _bumped(daemon, 4, "h", ROUNDS + 4)
    status, waiting = daemon.request("POST", "/v1/items/4/wait", {"agent": "agent-a"})
    assert status in (200, 201) and waiting["state"] == "waiting", waiting
    status, _ = daemon.request("POST", "/v1/items/4/release", {"agent": "h", "token": held})
    assert status == 200
    _, granted = daemon.request("GET", f"/v1/waits/{waiting['wait']}?agent=agent-a")
    assert granted["state"] == "granted", granted
    status, asked = daemon.request("POST", "/v1/items/1/ask", {"agent": "b", "reason": "I need it"})
    assert status in (200, 201), asked
    yield daemon, {first, second, granted["token"]}, b_token


def leaks(text: str, tokens: set[int]) -> list[str]:
    """Where ``text`` shows one of ``tokens``: a key that names a token with that value, or
    the word token beside it in prose ("token 42", "(token 42)")."""
    found = []
    for token in tokens:
        pattern = rf"token\W{{0,4}}{token}\b"
        found += [m.group(0) for m in re.finditer(pattern, text, re.IGNORECASE)]
    return found


def _reads_of(daemon: Daemon, reader: str | None) -> dict[str, str]:
    """Every GET route of the table as ``reader`` (None: naming nobody), by its request."""
    answers = {}
    for route in ROUTES:
        if route.method != "GET" or route.path == "/v1/events/stream":
            continue
        for item in ("1", "2", "3", "4") if "{id}" in route.path else ("",):
            path = route.path.replace("{id}", item).replace("{wait}", "1").replace("{ask}", "1")
            for query in ({}, {"state": "claimed"}, {"state": "needs_human"}):
                if reader is not None:
                    query = {**query, "agent": reader}
                url = path + ("?" + urllib.parse.urlencode(query) if query else "")
                headers = {"X-Coord-Agent": reader} if reader else {}
                _, body = daemon.request("GET", url, headers=headers)
                answers[url] = json.dumps(body)
    return answers


def _stream(daemon: Daemon, last_seq: int) -> str:
    """The live stream from the start of the log up to ``last_seq``."""
    parsed = urllib.parse.urlsplit(daemon.url)
    conn = http.client.HTTPConnection(parsed.hostname or "127.0.0.1", parsed.port, timeout=30)
    conn.request(
        "GET",
        "/v1/events/stream?after=0",
        headers={"Authorization": f"Bearer {daemon.token}", "X-Coord-Agent": "b"},
    )
    answer = conn.getresponse()
    seen = ""
    while f"id: {last_seq}\n" not in seen:
        line = answer.fp.readline().decode()
        assert line, "the stream ended before the last event"
        seen += line
    conn.close()
    return seen


def test_no_read_by_b_returns_as_token(scene: tuple[Daemon, set[int], int]) -> None:
    daemon, a_tokens, _ = scene
    read: dict[str, str] = {}
    for reader in ("b", None):
        read.update({f"{reader}: GET {k}": v for k, v in _reads_of(daemon, reader).items()})
    _, log = daemon.request("GET", "/v1/events?limit=1000")
    read["stream"] = _stream(daemon, log["last_seq"])
    _, inbox = daemon.request("POST", "/v1/inbox", {"agent": "b", "peek": True})
    read["inbox"] = json.dumps(inbox)
    # refusals of B's writes with a token of its own making name the holder, not its token
    said = {"heartbeat": {}, "release": {}, "done": {}, "escalate": {"question": "q"}}
    for verb, fields in said.items():
        for item in (1, 2):
            body = {"agent": "b", "token": 1, **fields}
            status, refused = daemon.request("POST", f"/v1/items/{item}/{verb}", body)
            assert (status, refused["error"]) == (409, "lease_lost"), (verb, item, refused)
            read[f"refusal {verb} #{item}"] = json.dumps(refused)
    cli = {
        "show 1": ("--json", "show", "1"),
        "show 2": ("show", "2"),
        "ls": ("--json", "ls", "--all"),
        "log": ("--json", "log", "--limit", "1000"),
        "log text": ("log", "--limit", "1000"),
        "agents": ("--json", "agents"),
        "status": ("--json", "status"),
        "queue": ("--json", "queue"),
        "inbox": ("--json", "inbox", "--peek"),
        "heartbeat": ("heartbeat", "1", "--token", "1"),
    }
    for name, args in cli.items():
        ran = run_cli(*args, board_dir=daemon.board_dir, agent="b")
        read[f"cli {name}"] = ran.stdout + ran.stderr
    read.update(_mcp_reads(daemon.board_dir, "b"))

    leaked = {where: found for where, text in read.items() if (found := leaks(text, a_tokens))}
    assert not leaked, sorted(leaked)
    # what was scanned held the items: the scan saw them, not empty answers
    assert "agent-a" in read["cli show 1"] and "which way?" in read["cli show 2"]


def test_the_holder_reads_its_own_token_and_the_oracle_finds_it(
    scene: tuple[Daemon, set[int], int],
) -> None:
    """The test of the test: the same scan over A's reads finds A's tokens; B sees its own."""
    daemon, a_tokens, b_token = scene
    as_a = _reads_of(daemon, "agent-a")
    assert leaks(as_a["/v1/items/1?agent=agent-a"], a_tokens)
    assert leaks(as_a["/v1/items?state=needs_human&agent=agent-a"], a_tokens)
    _, mine = daemon.request("GET", "/v1/items/3?agent=b")
    assert mine["fencing_token"] == b_token
    _, theirs = daemon.request("GET", "/v1/items/1?agent=b")
    assert theirs["claimed_by"] == "agent-a" and theirs["fencing_token"] is None
    # the holder's own writes still work with the token its claim returned
    token = min(a_tokens)  # #1's: claimed before #2's
    status, beat = daemon.request(
        "POST", "/v1/items/1/heartbeat", {"agent": "agent-a", "token": token}
    )
    assert status == 200, beat


def _mcp_reads(board_dir: Path, agent: str) -> dict[str, str]:
    board = Board.open(board_dir)
    token = board_files.read_token(board_dir)
    server = build_server(AsgiBackend(board_dir, create_app(board, token), token), lambda _: agent)
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "board": ("board", {}),
        "thread 1": ("thread", {"item": "1"}),
        "thread 2": ("thread", {"item": "2"}),
        "who_holds": ("who_holds", {"path": "src/a.py"}),
        "inbox": ("inbox", {"peek": True}),
        "heartbeat": ("heartbeat", {"item": "1", "token": 1}),
    }

    async def go() -> dict[str, str]:
        answers = {}
        async with Client(server) as client:
            for name, (tool, arguments) in calls.items():
                result = await client.call_tool(tool, arguments)
                answers[f"mcp {name}"] = json.dumps(result.structured_content) + str(result.content)
            for uri in ("coord://board", f"coord://claims/{agent}"):
                answers[f"mcp {uri}"] = str(await client.read_resource(uri))
        return answers

    try:
        return asyncio.run(go())
    finally:
        board.close()


def test_every_event_says_how_its_actor_was_known(daemon: Daemon) -> None:
    """INVARIANTS' "provenance": the board's token asserts a name, a token issued for the name
    proves it; `coord log` marks the asserted apart."""
    made = run_cli("--json", "token", "create", "--for", "alice", board_dir=daemon.board_dir)
    secret = json.loads(made.stdout)["secret"]
    daemon.request("POST", "/v1/items", {"agent": "bob", "title": "asserted"})
    daemon.request("POST", "/v1/items", {"agent": "alice", "title": "proven"}, token=secret)
    _, log = daemon.request("GET", "/v1/events?limit=1000")
    by_title = {e["details"].get("title"): e["provenance"] for e in log["events"]}
    assert by_title["asserted"]["verified"] is False
    assert by_title["asserted"]["via"] == "board_token"
    assert by_title["proven"]["verified"] is True
    assert by_title["proven"]["via"] == "person_token"
    assert by_title["proven"]["machine"] and by_title["proven"]["checkout"]
    assert all(e["provenance"] is not None for e in log["events"])  # every event
    lines = run_cli("log", board_dir=daemon.board_dir).stdout.splitlines()
    assert [line.endswith("(asserted)") for line in lines if " created #" in line] == [True, False]
