"""The landing lease under real concurrency: separate OS processes, each with its own board
connection, released together by a barrier, all acquiring the lease at once. Exactly one
wins, every other learns the winner; on SQLite and on PostgreSQL."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pg_support import fresh_database

CTX = multiprocessing.get_context("spawn")
RACERS = 8


def _acquire(out: Any, where: tuple[str, str], runner: str, barrier: Any) -> None:
    from coord.core.board import Board
    from coord.errors import AlreadyClaimed

    kind, location = where
    if kind == "sqlite":
        from coord.storage.sqlite import SQLiteStorage

        storage: Any = SQLiteStorage(location, busy_timeout_ms=30_000)
    else:
        from coord.storage.postgres import PostgresStorage

        storage = PostgresStorage(location)
    board = Board(storage)
    board.last_seq()  # connected and warm: the race is between the writes
    barrier.wait(60)
    try:
        lease = board.landing.acquire(runner=runner, lease_seconds=600)
        out.put((runner, "won", lease.token))
    except AlreadyClaimed as refused:
        out.put((runner, "refused", refused.details.get("holder")))
    finally:
        storage.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    if request.param == "sqlite":
        from coord.storage.sqlite import SQLiteStorage

        SQLiteStorage(tmp_path / "board.db").close()  # migrated before the race
        yield "sqlite", str(tmp_path / "board.db")
        return
    with fresh_database() as dsn:
        yield "postgres", dsn


def test_of_n_processes_acquiring_the_landing_lease_at_once_exactly_one_wins(
    where: tuple[str, str],
) -> None:
    out = CTX.Queue()
    barrier = CTX.Barrier(RACERS)
    runners = [f"runner-{n}" for n in range(RACERS)]
    processes = [CTX.Process(target=_acquire, args=(out, where, r, barrier)) for r in runners]
    for process in processes:
        process.start()
    results = [out.get(timeout=120) for _ in runners]
    for process in processes:
        process.join(30)
        assert process.exitcode == 0
    winners = [(runner, token) for runner, outcome, token in results if outcome == "won"]
    assert len(winners) == 1, results
    ((winner, token),) = winners
    assert token == 1
    assert sorted(
        r for r, outcome, holder in results if outcome == "refused" and holder == winner
    ) == sorted(r for r in runners if r != winner)
    from coord.core.board import Board

    kind, location = where
    if kind == "sqlite":
        from coord.storage.sqlite import SQLiteStorage

        storage: Any = SQLiteStorage(location)
    else:
        from coord.storage.postgres import PostgresStorage

        storage = PostgresStorage(location)
    try:
        board = Board(storage)
        acquired = [e for e in board.events() if e.kind == "landing_acquired"]
        assert [(e.agent, e.details["token"]) for e in acquired] == [(winner, 1)]
        lease = board.landing.lease()
        assert lease is not None and (lease.holder, lease.token) == (winner, 1)
    finally:
        storage.close()
