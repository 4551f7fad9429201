"""Asking the holder and waiting, in the core (issue 26), on real SQLite files with a clock
the test controls: what an ask does and never does to a lease, its answers, its timeout."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Clock
from coord.core.board import Board
from coord.core.waiting import waiters
from coord.errors import InvalidInput, LeaseLost, NothingReady, NotPermitted
from coord.storage.sqlite import SQLiteStorage


@pytest.fixture
def board(tmp_path: Path, clock: Clock) -> Iterator[Board]:
    b = Board(
        SQLiteStorage(tmp_path / "board.db"),
        clock=clock,
        default_lease_seconds=60,
        repo_root=tmp_path,
    )
    yield b
    b.close()


def _inbox_kinds(board: Board, agent: str) -> list[str]:
    return [e.kind for e in board.inbox(agent)]


def test_an_ask_reaches_the_holder_and_never_shortens_its_lease(board: Board, clock: Clock) -> None:
    item = board.add("held", created_by="lead").id
    claim = board.claim(item, agent="a", lease_seconds=600)
    asked = board.asks.ask(agent="b", item=item, reason="I need it for the fix")
    assert (asked["holder"], asked["state"]) == ("a", "open")
    assert "asked" in _inbox_kinds(board, "a")
    assert board.get(item).lease_expires_at == claim.lease_expires_at
    assert [a["id"] for a in board.asks.open_for("a")] == [asked["id"]]
    clock.advance(10)
    deferred = board.asks.answer(
        asked["id"], agent="a", answer="defer", for_seconds=300, reason="tests first"
    )
    assert deferred["state"] == "deferred"
    assert deferred["deferred_until"] is not None
    assert board.get(item).lease_expires_at == claim.lease_expires_at  # untouched
    assert board.get(item).claimed_by == "a"
    assert board.asks.get(asked["id"])["state"] == "deferred"  # visible on the board
    assert "ask_deferred" in _inbox_kinds(board, "b")  # the asker is told at once
    assert board.asks.open_for("a") == []


def test_a_release_answer_grants_the_first_waiter_in_the_same_transaction(
    board: Board, clock: Clock
) -> None:
    board.reserve(["src/x.py"], agent="a", lease_seconds=600)
    wait = board.waiting.wait(agent="b", paths=["src/x.py"])
    asked = board.asks.ask(agent="b", paths=["src/x.py"], reason="mine next")
    assert asked["paths"] == ["src/x.py"]
    board.asks.answer(asked["id"], agent="a", answer="release")
    assert board.waiting.status(wait["wait"])["state"] == "granted"
    assert [r.agent for r in board.reservations()] == ["b"]
    assert "ask_released" in _inbox_kinds(board, "b")


def test_only_the_holder_answers_and_only_for_the_claim_it_was_asked_about(
    board: Board, clock: Clock
) -> None:
    item = board.add("held", created_by="lead").id
    board.claim(item, agent="a", lease_seconds=30)
    asked = board.asks.ask(agent="b", item=item, reason="please")
    with pytest.raises(NotPermitted):
        board.asks.answer(asked["id"], agent="b", answer="release")
    clock.advance(31)  # a's lease lapsed and c took the item over
    board.claim(item, agent="c", lease_seconds=600)
    with pytest.raises(LeaseLost):  # a zombie cannot release its successor's claim
        board.asks.answer(asked["id"], agent="a", answer="release")
    assert board.get(item).claimed_by == "c"


def test_an_unanswered_ask_times_out_on_the_board_clock(board: Board, clock: Clock) -> None:
    item = board.add("held", created_by="lead").id
    board.claim(item, agent="a", lease_seconds=600)
    asked = board.asks.ask(agent="b", item=item, reason="please", timeout_seconds=60)
    clock.advance(59)
    assert board.asks.get(asked["id"])["state"] == "open"
    clock.advance(1)
    assert board.asks.get(asked["id"])["state"] == "timed_out"
    assert board.asks.open_for("a") == []
    with pytest.raises(Exception, match="timed_out"):
        board.asks.answer(asked["id"], agent="a", answer="release")
    assert board.get(item).claimed_by == "a"


def test_bad_asks_change_nothing(board: Board) -> None:
    item = board.add("free", created_by="lead").id
    before = board.last_seq()
    with pytest.raises(Exception, match="nobody holds"):
        board.asks.ask(agent="b", item=item, reason="why")
    with pytest.raises(InvalidInput):
        board.asks.ask(agent="b", item=item, reason="  ")
    with pytest.raises(InvalidInput):
        board.asks.ask(agent="b", item=item, paths=["a.py"], reason="both")
    board.claim(item, agent="a")
    asked = board.asks.ask(agent="b", item=item, reason="now")
    after_ask = board.last_seq()
    with pytest.raises(InvalidInput):
        board.asks.answer(asked["id"], agent="a", answer="defer")  # until when?
    with pytest.raises(InvalidInput):
        board.asks.answer(asked["id"], agent="a", answer="maybe")
    assert board.last_seq() == after_ask == before + 2  # the claim and the ask only


def test_the_queue_a_refusal_can_name(board: Board) -> None:
    """``waiters`` is what a refusal's ``wait`` option reads: the live queue, first first."""
    item = board.add("held", created_by="lead").id
    board.claim(item, agent="a")
    board.reserve(["src/"], agent="a")
    for agent in ("b", "c"):
        board.waiting.wait(agent=agent, item=item)
    board.waiting.wait(agent="d", paths=["src/y.py"])
    with board.storage.read() as tx:
        now = board.now()
        assert [w.agent for w in waiters(tx, now, item=item)] == ["b", "c"]
        assert [w.agent for w in waiters(tx, now, paths=["src/y.py"])] == ["d"]
        assert waiters(tx, now, paths=["docs/z.md"]) == []


def test_a_lapsed_claim_goes_to_the_first_in_line_not_to_whoever_claims_first(
    board: Board, clock: Clock
) -> None:
    item = board.add("held", created_by="lead").id
    board.claim(item, agent="a", lease_seconds=30)
    wait = board.waiting.wait(agent="b", item=item, place_seconds=120)
    clock.advance(31)  # a's lease lapsed: no write said so, nobody granted yet
    with pytest.raises(Exception, match="wait in line") as refused:
        board.claim(item, agent="racer")
    assert getattr(refused.value, "details", {}).get("reason") == "waiters"
    assert board.waiting.heartbeat(wait["wait"], agent="b")["state"] == "granted"
    assert board.get(item).claimed_by == "b"


def test_queue_facts_say_the_line_a_newcomer_joins(board: Board) -> None:
    from coord.core.waiting import queue_facts

    item = board.add("held", created_by="lead").id
    board.claim(item, agent="a")
    with board.storage.read() as tx:
        assert queue_facts(tx, board.now(), item=item) == {
            "waiting": 0,
            "first": None,
            "your_place": 1,
        }
    board.waiting.wait(agent="b", item=item)
    board.waiting.wait(agent="c", item=item)
    with board.storage.read() as tx:
        facts = queue_facts(tx, board.now(), item=item)
    assert facts == {"waiting": 2, "first": "b", "your_place": 3}


def test_claim_next_leaves_a_lapsed_claim_to_the_first_in_line(board: Board, clock: Clock) -> None:
    item = board.add("held", created_by="lead").id
    board.claim(item, agent="a", lease_seconds=30)
    board.waiting.wait(agent="b", item=item, place_seconds=120)
    clock.advance(31)  # lapsed, and nobody looked yet
    with pytest.raises(NothingReady):
        board.claim_next(agent="racer")
    assert board.claim_next(agent="b").item.id == item  # the first in line may take it
