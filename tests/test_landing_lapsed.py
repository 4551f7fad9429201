"""Promise 20 for a worktree claim that lapsed: its item keeps its files (held by
``coord/lapsed``) until it is taken over, released, submitted, merged or abandoned; a claim
without a worktree keeps files that lapse with its lease.

On SQLite and PostgreSQL alike, with a clock the test moves (as ``test_landing_board``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import Clock
from coord.core import worktree_holds
from coord.core.board import Board
from coord.errors import Conflict, FilesReserved, NotPermitted
from coord.fast import guard
from coord.model import WorktreeSpec
from coord.storage.sqlite import SQLiteStorage
from pg_support import fresh_database, open_storage

MAIN = "a" * 40
HEAD = "b" * 40
HUMAN = "pat"
LEASE = 60
LAPSED_HOLDER = "coord/lapsed"  # coord.model.LAPSED_HOLDER, spelled out: what users read


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
    return Board(storage, clock=clock, default_lease_seconds=LEASE, humans=[HUMAN], repo_root=root)


def spec() -> WorktreeSpec:
    return WorktreeSpec(base_commit=MAIN, path_root="/repo/.coord/worktrees")


def _lapsed(board: Board, clock: Clock, files: tuple[str, ...] = ("src/a.py",)) -> int:
    """An item alice claimed with a worktree, heartbeat once, then let lapse (she crashed)."""
    (item,) = board.import_items([{"title": "wt", "files": list(files)}], created_by="lead")
    claim = board.landing.claim(item, agent="alice", worktree=spec())
    clock.advance(LEASE - 1)
    board.heartbeat(item, agent="alice", token=claim.token)
    clock.advance(LEASE + 1)
    assert not board.get(item).lease_live(clock.now)
    return item


def test_a_lapsed_worktree_claim_keeps_its_files_held_for_its_item(
    board: Board, clock: Clock
) -> None:
    item = _lapsed(board, clock)
    seq = board.last_seq()
    with pytest.raises(FilesReserved) as refused:
        board.reserve(["src/a.py"], agent="carol")
    message = refused.value.message
    assert f"held by {LAPSED_HOLDER} for item {item}" in message
    assert f"`coord start {item}`" in message and f"`coord abandon {item}" in message
    with pytest.raises(FilesReserved):  # its lapsed holder too: the work waits in the worktree
        board.reserve(["src/a.py"], agent="alice")
    assert board.last_seq() == seq  # refused, nothing written
    (held,) = board.reservations()
    assert (held.agent, held.item_id, held.pattern) == (LAPSED_HOLDER, item, "src/a.py")
    assert board.reservations("alice") == []  # the item's now, no longer its lapsed holder's
    who = board.who("src/a.py", agent="carol")
    assert not who["may_edit"] and [h["agent"] for h in who["holders"]] == [LAPSED_HOLDER]
    assert held.expires_at == worktree_holds.HOLD_UNTIL == guard.HELD_UNTIL_LANDED
    clock.advance(365 * 24 * 3600)  # no lease of its own runs out
    assert [r.agent for r in board.reservations()] == [LAPSED_HOLDER]
    # an item claimed without a worktree: its files lapse with its lease, as before
    (plain,) = board.import_items([{"title": "plain", "files": ["src/b.py"]}], created_by="lead")
    board.claim(plain, agent="dave")
    clock.advance(LEASE + 1)
    assert board.reserve(["src/b.py"], agent="carol")[0].agent == "carol"


def test_another_item_on_its_files_waits_and_the_item_itself_is_taken_over_with_them(
    board: Board, clock: Clock
) -> None:
    (other,) = board.import_items(
        [{"title": "same files", "files": ["src/a.py"], "priority": 0}], created_by="lead"
    )
    item = _lapsed(board, clock)
    got = board.get(other)
    assert [h.agent for h in got.files_held_by] == [LAPSED_HOLDER]
    assert [i.id for i in board.list_items(ready=True)] == [item]  # not the other one
    claim = board.claim_next(agent="bob", worktree=spec())  # the takeover: bob gets the files
    assert (claim.item.id, claim.takeover_from) == (item, "alice")
    assert [(r.agent, r.item_id) for r in board.reservations()] == [("bob", item)]
    with pytest.raises(FilesReserved, match="held by bob"):
        board.reserve(["src/a.py"], agent="carol")
    board.landing.submit(item, agent="bob", token=claim.token, head=HEAD)
    assert [r.agent for r in board.reservations()] == ["coord/queue"]


def test_abandon_frees_the_files_of_a_lapsed_worktree_claim(board: Board, clock: Clock) -> None:
    (live,) = board.import_items([{"title": "live", "files": ["src/b.py"]}], created_by="lead")
    board.landing.claim(live, agent="alice", worktree=spec())
    with pytest.raises(Conflict, match="release a claim instead"):  # a live claim: release it
        board.landing.abandon(live, agent="alice", reason="live")
    item = _lapsed(board, clock)
    with pytest.raises(NotPermitted, match="only alice"):
        board.landing.abandon(item, agent="carol", reason="mine now")
    seq = board.last_seq()
    back = board.landing.abandon(item, agent=HUMAN, reason="alice crashed; start again")
    assert (back.state, back.claimed_by, back.lease_expires_at) == ("pending", None, None)
    (event,) = board.events(after=seq)
    assert (event.kind, event.details["was"], event.details["holder"]) == (
        "abandoned",
        "claimed",
        "alice",
    )
    # only this item's: the other claim alice let lapse keeps its own
    assert [(r.agent, r.item_id) for r in board.reservations()] == [(LAPSED_HOLDER, live)]
    assert board.reserve(["src/a.py"], agent="carol")[0].agent == "carol"
