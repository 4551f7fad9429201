"""The grant on both backends (issue 26): a release grants the first live waiter in its own
transaction, in arrival order, on SQLite and on PostgreSQL (the server's clock and row of
the write lock), and an ask's release does the same."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from coord.core.board import Board
from coord.storage.base import Storage
from test_storage_contract import storage  # noqa: F401 (the fixture: every backend)


@pytest.fixture
def board(storage: Storage, tmp_path: Path) -> Iterator[Board]:  # noqa: F811
    yield Board(storage, default_lease_seconds=600, repo_root=tmp_path)


def test_each_release_grants_the_next_waiter_in_arrival_order(board: Board) -> None:
    item = board.add("contended", created_by="lead").id
    token = board.claim(item, agent="holder").token
    waits = [board.waiting.wait(agent=f"w{n}", item=item)["wait"] for n in range(4)]
    assert [board.waiting.status(w)["place"] for w in waits] == [1, 2, 3, 4]
    holder = "holder"
    for n, wait in enumerate(waits):
        board.release(item, agent=holder, token=token)
        got = board.get(item)
        assert got.claimed_by == f"w{n}" and got.fencing_token == token + 1
        status = board.waiting.status(wait)
        assert (status["state"], status["token"]) == ("granted", got.fencing_token)
        holder, token = got.claimed_by, got.fencing_token
    assert [e.agent for e in board.events(limit=5000) if e.kind == "wait_granted"] == [
        "w0",
        "w1",
        "w2",
        "w3",
    ]


def test_an_ask_answered_release_grants_the_waiter_for_the_paths(board: Board) -> None:
    board.reserve(["src/x.py"], agent="holder")
    wait = board.waiting.wait(agent="b", paths=["src/x.py"])
    asked = board.asks.ask(agent="b", paths=["src/x.py"], reason="mine next")
    assert board.asks.open_for("holder")[0]["id"] == asked["id"]
    board.asks.answer(asked["id"], agent="holder", answer="release")
    assert board.waiting.status(wait["wait"])["state"] == "granted"
    assert [r.agent for r in board.reservations()] == ["b"]
    assert board.asks.get(asked["id"])["state"] == "released"
