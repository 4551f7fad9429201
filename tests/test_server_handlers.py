"""The server's parts alone: handlers called as functions, the one pipeline, body checks."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from coord.core.board import Board
from coord.errors import InvalidInput, NothingReady
from coord.server import claims, events, items
from coord.server.app import create_app
from coord.server.context import Call, Server
from coord.server.routes import ROUTES
from coord.server.table import MAX_REQUEST_BYTES, Body

TOKEN = "test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_every_handler_is_a_module_level_function() -> None:
    for route in ROUTES:
        handler = route.handler
        assert "<locals>" not in handler.__qualname__, route.path
        assert getattr(importlib.import_module(handler.__module__), handler.__name__) is handler


def test_handlers_work_without_http(board: Board) -> None:
    server = Server(board, TOKEN)
    created = items.add_item(Call(server, {"agent": "h", "title": "fix it", "labels": ["ui"]}))
    won = claims.claim_next(Call(server, {"agent": "a", "label": "ui"}))
    assert (won["id"], won["token"], won["agent"]) == (created["id"], 1, "a")
    path = {"id": str(created["id"])}
    closed = claims.done(Call(server, {"agent": "a", "token": 1}, path=path))
    assert closed["state"] == "done" and board.get(created["id"]).state == "done"
    with pytest.raises(NothingReady):
        claims.claim_next(Call(server, {"agent": "a"}))
    listed = items.list_items(Call(server, query={"state": "done"}))
    assert [i["id"] for i in listed["items"]] == [created["id"]]


def test_the_long_poll_wakes_on_this_daemons_write(board: Board) -> None:
    server = Server(board, TOKEN)

    async def go() -> dict[str, Any]:
        waiting = asyncio.create_task(
            events.events(Call(server, query={"after": "0", "wait": "30"}))
        )
        await asyncio.sleep(0.05)
        assert not waiting.done()  # nothing yet: it waits
        items.add_item(Call(server, {"agent": "h", "title": "news"}))
        server.changes.notify()  # what the pipeline does after every write
        return await asyncio.wait_for(waiting, 10)

    answer = asyncio.run(go())
    assert [e["kind"] for e in answer["events"]] == ["created"] and answer["last_seq"] == 1


def test_a_body_takes_only_its_declared_fields() -> None:
    body = Body({"agent": {}, "items": {}}, ("items",), list_field="items")
    assert body.take({"agent": "a", "items": []}) == {"agent": "a", "items": []}
    assert body.take([{"title": "x"}]) == {"items": [{"title": "x"}]}
    with pytest.raises(InvalidInput, match="unknown field colour") as refused:
        body.take({"items": [], "colour": 1})
    assert refused.value.details == {"fields": ["colour"]}
    with pytest.raises(InvalidInput, match="JSON object"):
        Body({"agent": {}}).take(["a"])
    with pytest.raises(ValueError):
        Body({"agent": {}}, ("token",))  # a required field must be declared


@pytest.fixture
def api(board: Board) -> Iterator[TestClient]:
    board.import_items([{"title": "one"}], created_by="h")
    with TestClient(create_app(board, TOKEN), base_url="http://127.0.0.1") as client:
        yield client


# (headers, raw body): each refused by the pipeline before any handler runs
REFUSALS = {
    "no token": ({}, b'{"agent": "a"}'),
    "wrong token": ({"Authorization": "Bearer nope"}, b'{"agent": "a"}'),
    "foreign host": ({**AUTH, "Host": "evil.example"}, b'{"agent": "a"}'),
    "too large": (AUTH, b" " * (MAX_REQUEST_BYTES + 1)),
    "not JSON": (AUTH, b"{agent"),
    "NaN": (AUTH, b'{"agent": "a", "lease_seconds": NaN}'),
    "not an object": (AUTH, b'["a"]'),
    "unknown field": (AUTH, b'{"agent": "a", "colour": 1}'),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_the_hot_path_and_the_routed_ones_refuse_alike(api: TestClient, case: str) -> None:
    """claim-next is served without Starlette's routing; its refusals are the same."""
    headers, raw = REFUSALS[case]
    hot = api.post("/v1/claim-next", content=raw, headers=headers)
    routed = api.post("/v1/items/1/claim", content=raw, headers=headers)
    assert hot.status_code == routed.status_code >= 400, (hot.text, routed.text)
    assert hot.json()["error"] == routed.json()["error"]
    if case != "unknown field":  # that message lists the route's own fields
        assert hot.json() == routed.json()
    assert api.get("/v1/items/1", headers=AUTH).json()["state"] == "pending"
