"""The board's half of issue 24 (from claim to main), on SQLite and PostgreSQL alike: a worktree
item's claim, submit, the queue, the landing lease, merged and needs_rework, abandon.

One suite for both backends, as ``test_storage_contract``: each test runs on a fresh SQLite
file and a fresh PostgreSQL database, with a clock the test moves (the PostgreSQL storage is
given it in place of the server's).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import Clock
from coord.core.board import Board
from coord.core.landings import FIRST_REFUSAL_SECONDS, QUEUE_HOLDER
from coord.errors import (
    AlreadyClaimed,
    Conflict,
    FilesReserved,
    InvalidInput,
    LeaseLost,
    NotClaimable,
    NotPermitted,
)
from coord.model import Item, WorktreeSpec
from coord.storage.sqlite import SQLiteStorage
from pg_support import fresh_database, open_storage

MAIN = "a" * 40
HEAD = "b" * 40
MERGED = "c" * 40
HUMAN = "pat"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def board(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Iterator[Board]:
    if request.param == "sqlite":
        storage: Any = SQLiteStorage(tmp_path / "board.db")
        yield _board(storage, clock, tmp_path)
        storage.close()
        return
    with fresh_database() as dsn:
        storage = open_storage(dsn, clock=clock)
        yield _board(storage, clock, tmp_path)
        storage.close()


def _board(storage: Any, clock: Clock, root: Path) -> Board:
    return Board(storage, clock=clock, default_lease_seconds=60, humans=[HUMAN], repo_root=root)


def spec() -> WorktreeSpec:
    return WorktreeSpec(base_commit=MAIN, path_root="/repo/.coord/worktrees")


def _queued(board: Board, files: tuple[str, ...] = ("src/a.py",), agent: str = "alice") -> Item:
    item = board.import_items([{"title": "wt", "files": list(files)}], created_by="lead")[0]
    claim = board.landing.claim(item, agent=agent, worktree=spec())
    return board.landing.submit(item, agent=agent, token=claim.token, head=HEAD)


def _events(board: Board, item_id: int | None = None) -> list[str]:
    return [e.kind for e in board.events(limit=5000, item_id=item_id)]


def test_a_worktree_claim_records_its_branch_base_and_path_in_the_claim(board: Board) -> None:
    (item,) = board.import_items([{"title": "a:b.c", "key": "P1:x"}], created_by="lead")
    before = board.last_seq()
    claim = board.landing.claim("P1:x", agent="alice", worktree=spec())
    got = board.get(item)
    assert claim.token == 1
    assert got.branch == f"coord/P1-x-{item}-t1"  # ':' is no part of a git ref name
    assert (got.base_commit, got.worktree) == (MAIN, f"/repo/.coord/worktrees/P1-x-{item}-t1")
    (event,) = board.events(after=before)
    assert (event.kind, event.details["branch"]) == ("claimed", got.branch)


def test_bad_worktree_input_changes_nothing(board: Board) -> None:
    with pytest.raises(InvalidInput, match="full commit id"):
        WorktreeSpec(base_commit="abc123", path_root="/r")
    with pytest.raises(InvalidInput, match="absolute"):
        WorktreeSpec(base_commit=MAIN, path_root="relative")
    item = board.add("t", created_by="lead").id
    claim = board.landing.claim(item, agent="alice", worktree=spec())
    seq = board.last_seq()
    with pytest.raises(InvalidInput, match="full commit id"):
        board.landing.submit(item, agent="alice", token=claim.token, head="HEAD")
    assert board.last_seq() == seq and board.get(item).state == "claimed"


def test_submit_queues_the_item_ends_the_lease_and_hands_the_files_to_the_queue(
    board: Board, clock: Clock
) -> None:
    item = board.import_items([{"title": "wt", "files": ["src/a.py"]}], created_by="lead")[0]
    claim = board.landing.claim(item, agent="alice", worktree=spec())
    seq = board.last_seq()
    queued = board.landing.submit(item, agent="alice", token=claim.token, head=HEAD)
    assert (queued.state, queued.shown_state, queued.submitted_head) == ("queued", "queued", HEAD)
    assert queued.lease_expires_at is None and queued.submitted_at == clock.now
    assert [e.kind for e in board.events(after=seq)] == ["submitted"]  # one event
    (held,) = board.reservations()
    assert (held.agent, held.item_id, held.pattern) == (QUEUE_HOLDER, item, "src/a.py")
    clock.advance(365 * 24 * 3600)  # the queue's hold never lapses while it waits
    assert [r.agent for r in board.reservations()] == [QUEUE_HOLDER]
    with pytest.raises(FilesReserved):  # another agent is refused its files (promise 20)
        board.reserve(["src/a.py"], agent="bob")
    with pytest.raises(FilesReserved):  # and so is the submitter: what is queued is frozen
        board.reserve(["src/a.py"], agent="alice")
    with pytest.raises(AlreadyClaimed, match="queued to land"):  # never a second agent's
        board.claim(item, agent="bob")
    assert [i.id for i in board.landing.queue()] == [item]


def test_a_stale_token_or_an_item_without_a_worktree_cannot_submit(
    board: Board, clock: Clock
) -> None:
    item = board.add("t", created_by="lead").id
    old = board.landing.claim(item, agent="alice", lease_seconds=5, worktree=spec())
    clock.advance(6)
    new = board.landing.claim(item, agent="bob", worktree=spec())
    plain = board.add("plain", created_by="lead").id
    token = board.claim(plain, agent="carol").token
    seq = board.last_seq()
    with pytest.raises(LeaseLost):
        board.landing.submit(item, agent="alice", token=old.token, head=HEAD)
    with pytest.raises(Conflict, match="has no worktree"):
        board.landing.submit(plain, agent="carol", token=token, head=HEAD)
    assert board.last_seq() == seq
    assert board.get(item).state == "claimed" and board.get(plain).state == "claimed"
    assert board.get(item).branch == f"coord/{item}-t{new.token}"


def test_a_worktree_item_is_done_only_by_merging(board: Board) -> None:
    item = board.add("t", created_by="lead").id
    claim = board.landing.claim(item, agent="alice", worktree=spec())
    with pytest.raises(Conflict, match="submit its branch head"):
        board.done(item, agent="alice", token=claim.token, skip_checks="no")
    assert board.get(item).state == "claimed"


def test_the_landing_lease_is_one_runners_fenced_by_a_growing_token(
    board: Board, clock: Clock
) -> None:
    first = board.landing.acquire(runner="r1", lease_seconds=10)
    with pytest.raises(AlreadyClaimed, match="held by r1"):
        board.landing.acquire(runner="r2")
    renewed = board.landing.renew(runner="r1", token=first.token, lease_seconds=10)
    assert renewed.expires_at == clock.now + 10
    clock.advance(10)  # lapsed: anyone may take it, with a higher token
    second = board.landing.acquire(runner="r2", lease_seconds=10)
    assert second.token == first.token + 1
    seq = board.last_seq()
    for stale in (
        lambda: board.landing.renew(runner="r1", token=first.token),
        lambda: board.landing.release(runner="r1", token=first.token),
        lambda: board.landing.renew(runner="r2", token=first.token),
    ):
        with pytest.raises(LeaseLost):
            stale()
    assert board.last_seq() == seq
    board.landing.release(runner="r2", token=second.token)
    lease = board.landing.lease()
    assert lease is not None and (lease.holder, lease.token) == (None, second.token)
    third = board.landing.acquire(runner="r3")
    assert third.token == second.token + 1  # a release never starts the count over
    kinds = [k for k in _events(board) if k.startswith("landing_")]
    assert kinds == [
        "landing_acquired",
        "landing_renewed",
        "landing_acquired",
        "landing_released",
        "landing_acquired",
    ]


def test_merged_is_done_frees_the_files_and_makes_dependents_ready(board: Board) -> None:
    """Invariant 17: a dependent of a queued item is not ready; once merged it is."""
    item = _queued(board).id
    dependent = board.import_items([{"title": "after", "deps": [item]}], created_by="lead")[0]
    assert [i.id for i in board.list_items(ready=True)] == []
    assert board.get(dependent).blocked_by == (item,)
    with pytest.raises(Exception, match="nothing is ready"):
        board.claim_next(agent="bob")
    lease = board.landing.acquire(runner="runner")
    token = board.get(item).fencing_token
    seq = board.last_seq()
    merged = board.landing.mark_merged(
        item, runner="runner", landing_token=lease.token, item_token=token, commit=MERGED
    )
    assert (merged.state, merged.shown_state, merged.merged_commit) == ("done", "merged", MERGED)
    assert [e.kind for e in board.events(after=seq)] == ["merged"]
    assert board.reservations() == []
    assert [i.id for i in board.list_items(ready=True)] == [dependent]
    assert [i.id for i in board.list_items(state="merged")] == [item]
    assert board.list_items(state="done") == []
    assert board.claim_next(agent="bob").item.id == dependent
    assert board.landing.queue() == []


def test_landing_outcomes_need_the_live_landing_lease_and_the_items_token(
    board: Board, clock: Clock
) -> None:
    item = _queued(board).id
    token = board.get(item).fencing_token
    lease = board.landing.acquire(runner="runner", lease_seconds=10)
    seq = board.last_seq()
    facts = {"reason": "conflict", "files": ["src/a.py"]}
    with pytest.raises(LeaseLost):  # an older item token: not the submission it landed
        board.landing.mark_merged(
            item, runner="runner", landing_token=lease.token, item_token=token + 1, commit=MERGED
        )
    with pytest.raises(LeaseLost):  # not the lease holder
        board.landing.needs_rework(
            item, runner="other", landing_token=lease.token, item_token=token, facts=facts
        )
    clock.advance(10)  # the runner's lease lapsed: a zombie runner changes nothing
    with pytest.raises(LeaseLost, match="lapsed"):
        board.landing.mark_merged(
            item, runner="runner", landing_token=lease.token, item_token=token, commit=MERGED
        )
    newer = board.landing.acquire(runner="runner2")
    with pytest.raises(LeaseLost, match="stale"):
        board.landing.needs_rework(
            item, runner="runner", landing_token=lease.token, item_token=token, facts=facts
        )
    with pytest.raises(InvalidInput, match="reason must be one of"):
        board.landing.needs_rework(
            item, runner="runner2", landing_token=newer.token, item_token=token, facts={}
        )
    assert board.get(item).state == "queued"
    assert board.last_seq() == seq + 1  # the second acquisition alone


def test_a_landing_that_must_wait_says_why_and_the_item_stays_queued(
    board: Board, clock: Clock
) -> None:
    item = _queued(board)
    token = item.fencing_token
    lease = board.landing.acquire(runner="runner", lease_seconds=10)
    wait = {"reason": "checkout_dirty", "files": ["src/a.py"], "message": "local changes"}
    seq = board.last_seq()
    shown = board.landing.waiting(
        item.id, runner="runner", landing_token=lease.token, item_token=token, wait=wait
    )
    assert shown.state == "queued"
    (event,) = board.events(after=seq)
    assert (event.kind, event.item_id, event.agent) == ("landing_waits", item.id, "runner")
    assert event.details["reason"] == "checkout_dirty"
    assert event.details["files"] == ["src/a.py"]
    assert (event.details["token"], event.details["landing_token"]) == (token, lease.token)
    after = board.get(item.id)
    assert (after.state, after.submitted_head, after.rework) == ("queued", HEAD, None)
    held = [(r.agent, r.pattern) for r in board.reservations()]
    assert held == [(QUEUE_HOLDER, "src/a.py")]  # its files still wait with it

    seq = board.last_seq()
    with pytest.raises(InvalidInput, match="reason must be one of"):
        board.landing.waiting(
            item.id,
            runner="runner",
            landing_token=lease.token,
            item_token=token,
            wait={"reason": "conflict"},
        )
    with pytest.raises(LeaseLost):  # an older item token: not the submission it tried
        board.landing.waiting(
            item.id, runner="runner", landing_token=lease.token, item_token=token + 1, wait=wait
        )
    clock.advance(10)  # the runner's lease lapsed: a zombie runner says nothing
    with pytest.raises(LeaseLost, match="lapsed"):
        board.landing.waiting(
            item.id, runner="runner", landing_token=lease.token, item_token=token, wait=wait
        )
    assert board.last_seq() == seq


def _sent_back(board: Board, clock: Clock) -> tuple[int, int]:
    item = _queued(board).id
    lease = board.landing.acquire(runner="runner")
    board.landing.needs_rework(
        item,
        runner="runner",
        landing_token=lease.token,
        item_token=board.get(item).fencing_token,
        facts={
            "reason": "check_failed",
            "files": ["src/a.py"],
            "check_output": "x" * 100_000,
            "main_commit": MERGED,
        },
    )
    return item, lease.token


def test_needs_rework_goes_back_to_its_last_holder_first(board: Board, clock: Clock) -> None:
    item, _ = _sent_back(board, clock)
    back = board.get(item)
    assert (back.state, back.shown_state, back.claimed_by) == ("pending", "needs_rework", None)
    assert back.rework is not None and back.rework["reason"] == "check_failed"
    assert back.rework["main_commit"] == MERGED and back.rework["head"] == HEAD
    assert back.rework["branch"] == f"coord/{item}-t1"
    assert len(back.rework["check_output"]) < 100_000  # the tail only
    assert (back.rework_for, back.rework_until) == ("alice", clock.now + FIRST_REFUSAL_SECONDS)
    assert [i.id for i in board.list_items(state="needs_rework")] == [item]
    assert board.list_items(state="pending") == []
    with board.storage.read() as tx:
        counts = tx.count_items_by_state()
    assert (counts["needs_rework"], counts["pending"], counts["queued"]) == (1, 0, 0)
    # the queue keeps its files until the next claim: no one else may take them
    assert [r.agent for r in board.reservations()] == [QUEUE_HOLDER]
    with pytest.raises(FilesReserved):
        board.reserve(["src/a.py"], agent="bob")
    # first refusal: not ready for others, claim-next skips it, a claim of it is refused
    assert board.list_items(ready=True) == []
    with pytest.raises(Exception, match="nothing is ready"):
        board.claim_next(agent="bob")
    with pytest.raises(AlreadyClaimed, match="alice, its last holder, may claim it first"):
        board.claim(item, agent="bob")
    # its last holder claims it, taking the files over from the queue (not refused by them)
    again = board.landing.claim(item, agent="alice", worktree=spec())
    got = board.get(item)
    assert got.branch == f"coord/{item}-t{again.token}" and again.token == 2
    assert got.rework is not None and got.rework["previous_branch"] == f"coord/{item}-t1"
    assert (got.rework_for, got.rework_until) == (None, None)
    assert [(r.agent, r.pattern) for r in board.reservations()] == [("alice", "src/a.py")]


def test_past_the_first_refusal_anyone_may_claim_it_next(board: Board, clock: Clock) -> None:
    item, _ = _sent_back(board, clock)
    clock.advance(FIRST_REFUSAL_SECONDS)
    assert [i.id for i in board.list_items(ready=True)] == [item]
    claim = board.claim_next(agent="bob")
    assert claim.item.id == item
    assert [(r.agent, r.pattern) for r in board.reservations()] == [("bob", "src/a.py")]


def test_an_item_sent_back_without_files_is_claimed_next_only_by_its_last_holder(
    board: Board, clock: Clock
) -> None:
    """The one-statement claim of claim-next leaves an item sent back to the core."""
    item = _queued(board, files=()).id
    lease = board.landing.acquire(runner="runner")
    token = board.get(item).fencing_token
    facts = {"reason": "head_moved"}
    board.landing.needs_rework(
        item, runner="runner", landing_token=lease.token, item_token=token, facts=facts
    )
    with pytest.raises(Exception, match="nothing is ready"):
        board.claim_next(agent="bob")
    assert board.claim_next(agent="alice").item.id == item


def test_abandon_frees_the_files_of_a_queued_or_sent_back_item(board: Board, clock: Clock) -> None:
    item = _queued(board).id
    with pytest.raises(NotPermitted, match="only alice"):
        board.landing.abandon(item, agent="bob", reason="mine now")
    seq = board.last_seq()
    back = board.landing.abandon(item, agent="alice", reason="wrong approach")
    assert (back.state, back.shown_state, back.claimed_by) == ("pending", "pending", None)
    assert [e.kind for e in board.events(after=seq)] == ["abandoned"]
    assert board.reservations() == [] and board.landing.queue() == []
    other, _ = _sent_back(board, clock)
    board.landing.abandon(other, agent=HUMAN, reason="a person decides")
    assert board.get(other).shown_state == "pending" and board.reservations() == []
    with pytest.raises(Conflict, match="not queued or needs_rework"):
        board.landing.abandon(other, agent=HUMAN, reason="again")


def test_a_queued_item_cannot_be_edited_or_heartbeaten(board: Board) -> None:
    item = _queued(board)
    with pytest.raises(NotClaimable, match="queued to land"):
        board.edit(item.id, agent="alice", title="new")
    with pytest.raises(LeaseLost):
        board.heartbeat(item.id, agent="alice", token=item.fencing_token)


def test_merged_outside_closes_a_claimed_or_queued_worktree_item(board: Board) -> None:
    queued = _queued(board).id
    claimed = board.add("c", created_by="lead").id
    board.landing.claim(claimed, agent="bob", worktree=spec())
    plain = board.add("p", created_by="lead").id
    board.claim(plain, agent="carol")
    for item in (queued, claimed):
        got = board.landing.merged_outside(item, agent="runner", commit=MERGED, found_by="tree")
        assert (got.shown_state, got.merged_commit) == ("merged", MERGED)
    with pytest.raises(Conflict, match="no worktree"):
        board.landing.merged_outside(plain, agent="runner", commit=MERGED, found_by="tree")
    with pytest.raises(InvalidInput, match="found_by"):
        board.landing.merged_outside(plain, agent="runner", commit=MERGED, found_by="guess")
    assert board.reservations() == []
    with board.storage.read() as tx:
        counts = tx.count_items_by_state()
    assert (counts["merged"], counts["done"], counts["claimed"]) == (2, 0, 1)


def test_a_package_ticked_in_its_document_while_queued_stays_queued(board: Board) -> None:
    """Ticking the box is no merge: the queue keeps the item and its files (invariant 20)."""
    package = {"id": "P1", "title": "one", "done": False, "line": 3, "files": ["src/p1.py"]}
    board.import_packages("docs/plan.md", [package], created_by="lead")
    claim = board.landing.claim("P1", agent="alice", worktree=spec())
    board.landing.submit("P1", agent="alice", token=claim.token, head=HEAD)
    result = board.import_packages("docs/plan.md", [{**package, "done": True}], created_by="lead")
    assert [c["package"] for c in result["conflicts"]] == ["P1"]
    assert "stays queued" in result["conflicts"][0]["message"]
    assert board.get("P1").state == "queued"
    assert [r.agent for r in board.reservations()] == [QUEUE_HOLDER]


def test_a_zombie_holder_is_told_its_item_was_submitted(board: Board) -> None:
    item = _queued(board)
    with pytest.raises(LeaseLost, match="abandon it to take it back"):
        board.release(item.id, agent="alice", token=item.fencing_token)


@pytest.mark.postgres
def test_a_postgresql_board_of_schema_4_gains_queued_and_keeps_its_items() -> None:
    """PostgreSQL's migration 5 on a board its migrations 1-4 left: the rows as they were,
    the new columns empty, the counts right, and 'queued' and 'merged' counted from then on."""
    import os

    import psycopg

    from coord.storage import migrations
    from coord.storage.postgres import SCHEMA_VERSION_TABLE, PostgresStorage
    from pg_support import _admin, dsn_of, require_postgres

    require_postgres()
    name = f"coord_upgrade_{os.getpid()}"
    _admin(f"DROP DATABASE IF EXISTS {name}")
    _admin(f"CREATE DATABASE {name}")
    try:
        with psycopg.connect(dsn_of(name), autocommit=True) as conn:
            conn.execute(SCHEMA_VERSION_TABLE)
            for version, file, sql in migrations.shipped("postgres_migrations"):
                if version <= 4:
                    conn.execute(sql.encode())
                    conn.execute("INSERT INTO schema_migrations VALUES (%s, %s)", (version, file))
            for n, (state, holder, lease) in enumerate(
                [("pending", None, None), ("claimed", "a", 5.0), ("done", "a", None)], 1
            ):
                conn.execute(
                    "INSERT INTO items (id, kind, title, priority, state, created_by, "
                    "created_at, updated_at, claimed_by, lease_expires_at) "
                    "VALUES (%s, 'task', %s, 2, %s, 'h', 1, 1, %s, %s)",
                    (n, state, state, holder, lease),
                )
            conn.execute("UPDATE board_counters SET last_item = 3")
            before = conn.execute("SELECT * FROM items ORDER BY id").fetchall()
        storage = PostgresStorage(dsn_of(name))
        try:
            assert storage.schema_version() >= 5  # 5 and every later one
            with storage.read() as tx:
                counts = tx.count_items_by_state()
                got = [tx.get_item(n) for n in (1, 2, 3)]
            assert (counts["pending"], counts["claimed"], counts["done"]) == (1, 1, 1)
            assert [i.title for i in got if i] == ["pending", "claimed", "done"]
            assert all(i is not None and i.branch is None and i.rework is None for i in got)
            with storage.write() as tx:
                assert tx.update_item(2, 0, {"state": "queued", "lease_expires_at": None})
                assert tx.update_item(3, 0, {"merged_commit": MERGED})
            with storage.read() as tx:
                moved = tx.count_items_by_state()
            assert moved == {**counts, "claimed": 0, "queued": 1, "done": 0, "merged": 1}
        finally:
            storage.close()
        with psycopg.connect(dsn_of(name)) as conn:
            after = conn.execute("SELECT * FROM items ORDER BY id").fetchall()
            assert after[0][: len(before[0])] == before[0]
            with pytest.raises(psycopg.errors.CheckViolation):
                conn.execute("UPDATE items SET state = 'landed' WHERE id = 1")
    finally:
        _admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_a_worktree_item_claimed_next_keeps_its_record_with_the_branch_of_the_new_token(
    board: Board, clock: Clock
) -> None:
    item, _ = _sent_back(board, clock)
    claim = board.claim_next(agent="alice")  # its last holder, within the first refusal
    got = board.get(item)
    assert (claim.item.id, claim.token) == (item, 2)
    assert got.branch == f"coord/{item}-t2" and got.base_commit == MAIN
    assert got.rework is not None and got.rework["previous_branch"] == f"coord/{item}-t1"
    board.release(item, agent="alice", token=claim.token)
    plain = board.claim_next(agent="bob")  # the one-statement path leaves it to the core
    assert board.get(item).branch == f"coord/{item}-t{plain.token}" and plain.token == 3
    assert board.events(item_id=item)[-1].details["branch"] == f"coord/{item}-t3"


def test_the_last_holder_hears_its_item_came_back(board: Board, clock: Clock) -> None:
    item, _ = _sent_back(board, clock)
    kinds = [e.kind for e in board.inbox("alice") if e.item_id == item]
    assert "needs_rework" in kinds


def test_a_released_worktree_item_claimed_next_is_renamed_after_the_new_token(
    board: Board,
) -> None:
    item = board.add("t", created_by="lead").id
    first = board.landing.claim(item, agent="alice", worktree=spec())
    board.release(item, agent="alice", token=first.token)
    again = board.claim_next(agent="bob")
    assert again.item.id == item and again.item.branch == f"coord/{item}-t2"
    assert board.get(item).branch == f"coord/{item}-t2"
