"""The fair wait and asking the holder through the MCP tools (issue 26): arguments of
``claim``, ``reserve_files`` and ``release`` (the budget of tools stays), against a real
daemon over HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from conftest import Daemon, init_board_dir
from coord.mcp.backends import HttpBackend
from coord.mcp.tools import build_server


@pytest.fixture
def daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemon]:
    (tmp_path / "src").mkdir()
    monkeypatch.chdir(tmp_path)
    d = Daemon(init_board_dir(tmp_path)).start()
    yield d
    d.stop()


def _call(daemon: Daemon, agent: str, tool: str, arguments: dict[str, Any]) -> Any:
    server = build_server(HttpBackend(daemon.board_dir), lambda ctx: agent)

    async def go() -> Any:
        async with Client(server) as client:
            return await client.call_tool(tool, arguments)

    return asyncio.run(go())


def test_claim_waits_in_line_asks_the_holder_and_is_granted_by_its_answer(
    daemon: Daemon,
) -> None:
    _, item = daemon.request("POST", "/v1/items", {"agent": "lead", "title": "contended"})
    _, held = daemon.request("POST", f"/v1/items/{item['id']}/claim", {"agent": "holder"})
    waited = _call(
        daemon, "b", "claim", {"item": item["id"], "wait_seconds": 1, "ask": "the fix needs it"}
    )
    assert not waited.is_error, waited.content
    first = waited.structured_content
    assert first["granted"] is False and first["place"] == 1
    assert first["asked"]["holder"] == "holder"
    inbox = _call(daemon, "holder", "inbox", {}).structured_content
    asked = [e for e in inbox["events"] if e["kind"] == "asked"]
    assert asked and asked[0]["details"]["ask"] == first["asked"]["id"]
    answered = _call(
        daemon, "holder", "release", {"item": item["id"], "answer_ask": first["asked"]["id"]}
    )
    assert not answered.is_error and answered.structured_content["state"] == "released"
    _, shown = daemon.request("GET", f"/v1/items/{item['id']}")
    assert shown["claimed_by"] == "b"  # its kept place was granted by the release
    won = _call(daemon, "b", "claim", {"item": item["id"], "wait_seconds": 5})
    assert not won.is_error, won.content
    assert won.structured_content["waited"] is True
    assert won.structured_content["token"] == held["token"] + 1
    done = _call(daemon, "b", "done", {"item": item["id"]})  # the token was remembered
    assert not done.is_error, done.content


def test_reserve_files_waits_and_a_deferral_leaves_the_holder_be(daemon: Daemon) -> None:
    daemon.request("POST", "/v1/reservations", {"agent": "holder", "patterns": ["src/a.py"]})
    waited = _call(
        daemon, "b", "reserve_files", {"patterns": ["src/a.py"], "wait_seconds": 1, "ask": "pls"}
    ).structured_content
    assert waited["granted"] is False and waited["place"] == 1
    deferred = _call(
        daemon,
        "holder",
        "release",
        {"item": 1, "answer_ask": waited["asked"]["id"], "defer_minutes": 5},
    ).structured_content
    assert deferred["state"] == "deferred"
    _, who = daemon.request("GET", "/v1/who?path=src/a.py")
    assert [h["agent"] for h in who["holders"]] == ["holder"]
    bad = _call(daemon, "b", "reserve_files", {"patterns": ["src/a.py"], "wait_seconds": 500})
    assert bad.is_error and "wait_seconds" in bad.structured_content["message"]
