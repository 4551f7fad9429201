"""The board's rules over the PostgreSQL backend: claims, fencing, reservations, the clock,
and races between real OS processes on one database.

The contract suite (``test_storage_contract.py``) holds the backend to the verbs; here the
core runs on top of it (``Board`` over a ``PostgresStorage``), and separate processes, each
with its own connections, race on one database the way daemons on several machines will.
Skipped without a PostgreSQL server; under CI=true a skip is a failure (``pg_support``).
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import Clock
from coord.core.board import Board
from coord.errors import AlreadyClaimed, FilesReserved, LeaseLost
from pg_support import open_storage

pytestmark = pytest.mark.postgres
RACERS = 16


@pytest.fixture
def pg_board(pg_dsn: str, clock: Clock, tmp_path: Any) -> Iterator[Board]:
    board = Board(open_storage(pg_dsn, clock=clock), clock=clock, repo_root=tmp_path)
    yield board
    board.close()


def test_one_claim_and_the_zombie_is_fenced_after_a_takeover(pg_board: Board, clock: Clock) -> None:
    item = pg_board.add("fix the parser", created_by="lead")
    first = pg_board.claim(item.id, agent="a", lease_seconds=60)
    with pytest.raises(AlreadyClaimed):
        pg_board.claim(item.id, agent="b")
    clock.advance(61)
    second = pg_board.claim(item.id, agent="b", lease_seconds=60)
    assert second.token > first.token
    # the first holder's writes carry the old token: refused, nothing changes
    with pytest.raises(LeaseLost):
        pg_board.heartbeat(item.id, agent="a", token=first.token)
    with pytest.raises(LeaseLost):
        pg_board.done(item.id, agent="a", token=first.token, skip_checks="test")
    done = pg_board.done(item.id, agent="b", token=second.token, skip_checks="test")
    assert (done.state, done.claimed_by) == ("done", "b")
    kinds = [e.kind for e in pg_board.events(item_id=item.id)]
    assert kinds == ["created", "claimed", "takeover", "done"]
    seqs = [e.seq for e in pg_board.events()]
    assert seqs == list(range(1, len(seqs) + 1))


def test_reservations_refuse_an_overlap_whole(pg_board: Board, clock: Clock) -> None:
    pg_board.reserve(["src/parser/"], agent="a", lease_seconds=60)
    with pytest.raises(FilesReserved):
        pg_board.reserve(["docs/x.md", "src/parser/lexer.py"], agent="b")
    assert [r.pattern for r in pg_board.reservations("b")] == []  # not even docs/x.md
    pg_board.reserve(["src/other.py"], agent="b")  # no path in both: granted
    clock.advance(61)
    pg_board.reserve(["src/parser/lexer.py"], agent="b")  # a's lease ran out


def test_claim_next_with_files_checks_them_against_live_reservations(pg_board: Board) -> None:
    blocked = pg_board.add("touch the lexer", created_by="lead", files=["src/lexer.py"])
    free = pg_board.add("touch the docs", created_by="lead", priority=3, files=["docs/a.md"])
    pg_board.reserve(["src/lexer.py"], agent="other")
    won = pg_board.claim_next(agent="a")
    assert won.item.id == free.id
    assert pg_board.get(blocked.id).state == "pending"
    assert [r.pattern for r in pg_board.reservations("a")] == ["docs/a.md"]


def test_leases_are_judged_on_the_database_clock_not_the_daemons(pg_dsn: str) -> None:
    """A daemon whose clock is off (here: stuck in 1970) neither ends a live lease early nor
    writes one that ends in the past: the board's time is the server's."""
    stuck = Board(open_storage(pg_dsn), clock=lambda: 0.0)
    try:
        item = stuck.add("t", created_by="lead")
        before = time.time()
        claim = stuck.claim(item.id, agent="a", lease_seconds=60)
        # the server runs on this machine: its clock and this process's agree to a second
        assert before + 59 < claim.lease_expires_at < time.time() + 61
        with pytest.raises(AlreadyClaimed):
            stuck.claim(item.id, agent="b")
        assert stuck.get(item.id).created_at >= before - 1
    finally:
        stuck.close()


# --- races between OS processes ---------------------------------------------------------------


def _race(worker: str, args_of: list[tuple[Any, ...]]) -> list[tuple[str, Any]]:
    """One process per argument tuple, each running ``pg_workers.<worker>``; each connects,
    then all start at once (a barrier); returns their answers."""
    import pg_workers  # the driver with it: not at collection, where it may be missing

    target = getattr(pg_workers, worker)
    # forked from a server that imported coord and the driver once: sixteen spawned
    # interpreters would each import them again
    forkserver = multiprocessing.get_context("forkserver")
    forkserver.set_forkserver_preload(["pg_workers"])
    start, answers = forkserver.Barrier(len(args_of), timeout=240), forkserver.Queue()
    procs = [forkserver.Process(target=target, args=(*args, start, answers)) for args in args_of]
    for p in procs:
        p.start()
    found = [answers.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    return found


def test_processes_claiming_one_item_exactly_one_wins(pg_dsn: str) -> None:
    board = Board(open_storage(pg_dsn))
    try:
        item = board.add("the only one", created_by="lead")
        answers = _race("take_first_pending", [(pg_dsn, f"agent-{n}") for n in range(RACERS)])
        winners = [(agent, got) for agent, got in answers if got is not None]
        assert len(answers) == RACERS
        assert len(winners) == 1
        agent, (item_id, token) = winners[0]
        assert (item_id, token) == (item.id, 1)
        assert board.get(item.id).claimed_by == agent
        assert [e.kind for e in board.events()] == ["created", "claimed"]
    finally:
        board.close()


def test_processes_reserving_overlapping_files_one_wins(pg_dsn: str, tmp_path: Any) -> None:
    root = str(tmp_path)
    answers = _race(
        "reserve",
        [(pg_dsn, root, "a", ["src/parser/"]), (pg_dsn, root, "b", ["src/parser/lexer.py"])],
    )
    assert sorted(result for _, result in answers) == ["granted", "refused"]
    board = Board(open_storage(pg_dsn))
    try:
        (winner,) = [agent for agent, result in answers if result == "granted"]
        assert {r.agent for r in board.reservations()} == {winner}
        assert [e.seq for e in board.events()] == [1]
    finally:
        board.close()
