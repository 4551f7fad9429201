"""Bad input to a real daemon, its CLI and its MCP face: a clear 4xx (or exit code 2) naming
the problem, never a 500 or a traceback, and the board unchanged (issue 14, item 9)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import Daemon, init_board_dir, run_cli

HUGE = "99999999999999999999"  # past SQLite's 64-bit integers
JUST_PAST = str(2**63)
SUPERSCRIPT_TWO = "²"  # str.isdigit() says yes; int() says no


def board_state(daemon: Daemon) -> tuple[Any, Any]:
    """Everything a bad request must leave alone: the items and the last event."""
    status, items = daemon.request("GET", "/v1/items?state=open&limit=1000")
    assert status == 200, items
    status, events = daemon.request("GET", "/v1/events?limit=1")
    assert status == 200, events
    return items, events["last_seq"]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One daemon for the module: no request here may change its board, and each test
    checks that."""
    daemon = Daemon(init_board_dir(tmp_path_factory.mktemp("bad-input"))).start()
    status, item = daemon.request("POST", "/v1/items", {"agent": "lead", "title": "one"})
    assert status == 201, item
    yield daemon
    daemon.stop()


PATH_REQUESTS = [
    ("GET", f"/v1/items/{HUGE}", None),
    ("GET", f"/v1/items/{JUST_PAST}", None),
    ("GET", "/v1/items/%C2%B2", None),
    ("GET", "/v1/items/-1", None),
    ("POST", f"/v1/items/{HUGE}/claim", {"agent": "a"}),
    ("POST", "/v1/items/%C2%B2/claim", {"agent": "a"}),
    ("POST", f"/v1/items/{JUST_PAST}/replies", {"agent": "a", "body": "hi"}),
    ("POST", "/v1/items/%C2%B2/ack", {"agent": "a"}),
    ("PATCH", f"/v1/items/{HUGE}", {"agent": "a", "title": "x"}),
    ("GET", f"/v1/items?after={HUGE}", None),
    ("GET", "/v1/items?limit=0", None),
    ("GET", "/v1/items?limit=%C2%B2", None),
    ("GET", f"/v1/events?after={HUGE}", None),
    ("GET", f"/v1/events?after={JUST_PAST}", None),
    ("GET", "/v1/events?limit=0", None),
    ("GET", "/v1/events?limit=%C2%B2", None),
    ("GET", f"/v1/events?item={HUGE}", None),
    ("GET", "/v1/events?item=%C2%B2", None),
]

BODY_REQUESTS = [
    ("POST", "/v1/items", {"agent": "a", "title": "t", "deps": [int(HUGE)]}),
    ("POST", "/v1/items", {"agent": "a", "title": "t", "deps": [SUPERSCRIPT_TWO]}),
    ("POST", "/v1/items", {"agent": "a", "title": "t", "priority": SUPERSCRIPT_TWO}),
    ("PATCH", "/v1/items/1", {"agent": "a", "add_deps": [2**63]}),
    ("POST", "/v1/items/1/heartbeat", {"agent": "a", "token": int(HUGE)}),
    ("POST", "/v1/items/1/heartbeat", {"agent": "a", "token": SUPERSCRIPT_TWO}),
    ("POST", "/v1/reservations", {"agent": "a", "patterns": ["x"], "item": int(HUGE)}),
    ("POST", "/v1/inbox", {"agent": "a", "limit": int(HUGE)}),
    ("POST", "/v1/inbox", {"agent": "a", "limit": 0}),
    ("POST", "/v1/claim-next", {"agent": "a", "count": 0}),
]


@pytest.mark.parametrize(("method", "path", "body"), PATH_REQUESTS + BODY_REQUESTS)
def test_out_of_range_and_unicode_numbers_are_a_clear_4xx(
    seeded: Daemon, method: str, path: str, body: Any
) -> None:
    before = board_state(seeded)
    status, answer = seeded.request(method, path, body)
    assert status in (404, 422), (status, answer)
    if status == 422:
        assert answer["error"] == "invalid_input" and answer.get("field"), answer
    assert "internal" not in answer["message"], answer
    assert board_state(seeded) == before


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deeply_nested_json_is_refused_as_such(seeded: Daemon, depth: int) -> None:
    before = board_state(seeded)
    nested = b"[" * depth + b"]" * depth
    raw = b'{"agent": "a", "title": ' + nested + b"}"
    status, answer = seeded.request("POST", "/v1/items", raw=raw)
    assert status in (400, 422), (status, answer)
    assert "nest" in answer["message"] or "title" in answer["message"], answer
    assert board_state(seeded) == before


@pytest.mark.parametrize(
    "args",
    [
        ("show", HUGE),
        ("show", JUST_PAST),
        ("show", SUPERSCRIPT_TWO),
        ("claim", HUGE),
        ("reply", HUGE, "hello"),
        ("log", "--after", HUGE),
        ("log", "--limit", "0"),
        ("log", "--limit", SUPERSCRIPT_TWO),
        ("ls", "--limit", "0"),
        ("ls", "--after", HUGE),
    ],
)
def test_the_cli_says_what_is_wrong_with_the_number(seeded: Daemon, args: tuple[str, ...]) -> None:
    before = board_state(seeded)
    done = run_cli(*args, board_dir=seeded.board_dir, agent="a")
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    assert board_state(seeded) == before


def test_the_mcp_face_refuses_a_huge_item_id_as_a_tool_error(seeded: Daemon) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def go() -> Any:
        headers = {"Authorization": f"Bearer {seeded.token}", "X-Coord-Agent": "a"}
        async with httpx2.AsyncClient(headers=headers) as http:
            transport = streamable_http_client(seeded.url + "/mcp", http_client=http)
            async with Client(transport) as client:
                return [
                    await client.call_tool("claim", {"item": item})
                    for item in (HUGE, SUPERSCRIPT_TWO, JUST_PAST)
                ]

    before = board_state(seeded)
    for result in asyncio.run(go()):
        assert result.is_error, result
        text = " ".join(getattr(c, "text", "") for c in result.content)
        assert "internal" not in text and ("item id" in text or "package id" in text), text
    assert board_state(seeded) == before


@pytest.mark.parametrize("patterns", ["abc", {"a": 1}, 265, [265], [["a"]]])
def test_a_release_whose_patterns_are_not_a_list_of_strings_frees_nothing(
    seeded: Daemon, patterns: Any
) -> None:
    """`{"patterns": "abc"}` freed `b` and `c` (each character read as a pattern), `{"a": 1}`
    freed `a`, and 265 was a 500 (issue 23, item 4): a string is not a list."""
    for pattern in ("a", "b", "c"):
        status, answer = seeded.request(
            "POST", "/v1/reservations", {"agent": "holder", "patterns": [pattern]}
        )
        assert status == 201, answer
    held = seeded.request("GET", "/v1/reservations?agent=holder")[1]["reservations"]
    before = board_state(seeded)
    status, answer = seeded.request(
        "POST", "/v1/reservations:release", {"agent": "holder", "patterns": patterns}
    )
    assert (status, answer["error"]) == (422, "invalid_input"), answer
    assert "patterns" in answer["message"] and answer["field"] == "patterns", answer
    assert seeded.request("GET", "/v1/reservations?agent=holder")[1]["reservations"] == held
    assert board_state(seeded) == before
