"""Work packages on the board: keys, import and re-import, checks before done, escalation.

Real SQLite files and a clock the test controls; the document side (parsing) is tested in
test_spec_parse.py, the CLI round trip in test_spec_cli.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from conftest import Clock
from coord import errors
from coord.core.board import Board
from coord.storage.base import WriteTx
from coord.storage.sqlite import SQLiteStorage
from coord.storage.sqlite_tx import SQLiteTx

SPEC = "docs/plan.md"


@pytest.fixture
def board(tmp_path: Path, clock: Clock) -> Iterator[Board]:
    (tmp_path / "src").mkdir()
    b = Board(
        SQLiteStorage(tmp_path / ".coord" / "board.db"),
        clock=clock,
        default_lease_seconds=60,
        repo_root=tmp_path,
        escalate_to="@lead",
    )
    yield b
    b.close()


def pkg(pid: str, line: int, *deps: str, done: bool = False, **more: Any) -> dict[str, Any]:
    return {
        "id": pid,
        "title": more.pop("title", f"package {pid}"),
        "done": done,
        "line": line,
        "dependencies": list(deps),
        "files": more.pop("files", [f"src/{pid.lower()}.py"]),
        **more,
    }


def plan() -> list[dict[str, Any]]:
    return [
        pkg("A1", 10, done=True),
        pkg("A2", 14, "A1", checks=["true"]),
        pkg("B1", 20, "A2", description="does B", acceptance="B works"),
    ]


def snapshot(board: Board) -> tuple[Any, ...]:
    items = [i.to_dict(board.now()) for i in board.list_items(limit=1000)]
    return items, [e.to_dict() for e in board.events()]


# --- import ----------------------------------------------------------------------------------


def test_import_creates_items_keyed_by_package_id(board: Board) -> None:
    result = board.import_packages(SPEC, plan(), created_by="h")
    assert result["created"] == ["A1", "A2", "B1"]
    assert result["closed"] == ["A1"]  # ticked in the document
    a2, b1 = board.get("A2"), board.get("B1")
    assert (a2.key, a2.spec, a2.spec_line, a2.checks) == ("A2", SPEC, 14, ("true",))
    assert board.get("A1").state == "done"
    assert b1.deps == (a2.id,) and b1.blocked_by == (a2.id,)
    assert b1.files == ("src/b1.py",)
    assert "does B" in b1.body and "B works" in b1.body
    assert board.show("B1")["spec"] == f"{SPEC}:20"


def test_claim_by_key_and_next_take_packages_in_dependency_order(board: Board) -> None:
    board.import_packages(SPEC, plan(), created_by="h")
    with pytest.raises(errors.NotReady):
        board.claim("B1", agent="a")
    claim = board.claim_next(agent="a")
    assert claim.item.key == "A2"
    assert board.show("A2")["claimed_by"] == "a"


def test_reimport_is_idempotent(board: Board) -> None:
    board.import_packages(SPEC, plan(), created_by="h")
    before = snapshot(board)
    again = board.import_packages(SPEC, plan(), created_by="h")
    assert again["created"] == again["updated"] == again["closed"] == []
    assert again["unchanged"] == ["A1", "A2", "B1"]
    assert snapshot(board) == before


def test_reimport_of_files_in_document_order_is_unchanged(board: Board) -> None:
    # the board keeps files sorted; the document lists them as the author wrote them
    packages = [pkg("A1", 10, files=["src/z.py", "src/a.py", "src/z.py"])]
    board.import_packages(SPEC, packages, created_by="h")
    before = snapshot(board)
    again = board.import_packages(SPEC, packages, created_by="h")
    assert again["updated"] == [] and again["unchanged"] == ["A1"]
    assert snapshot(board) == before
    moved = board.import_packages(SPEC, [pkg("A1", 10, files=["src/a.py"])], created_by="h")
    assert moved["updated"] == ["A1"] and board.get("A1").files == ("src/a.py",)


def test_reimport_updates_changes_and_keeps_claims_replies_and_history(board: Board) -> None:
    board.import_packages(SPEC, plan(), created_by="h")
    claim = board.claim("A2", agent="a")
    board.reply("A2", agent="b", body="how is it going?")
    events_before = [e.seq for e in board.events(item_id=claim.item.id)]
    edited = plan()
    edited[1] = pkg("A2", 15, "A1", title="package A2, renamed", files=["src/a2.py", "src/x/**"])
    edited[2]["dependencies"] = []
    edited.append(pkg("C1", 30, "B1"))
    result = board.import_packages(SPEC, edited, created_by="h")
    assert result["created"] == ["C1"]
    assert result["updated"] == ["A2", "B1"]
    assert result["unchanged"] == ["A1"]
    a2 = board.get("A2")
    assert (a2.title, a2.files, a2.checks) == ("package A2, renamed", ("src/a2.py", "src/x/**"), ())
    assert (a2.state, a2.claimed_by, a2.fencing_token) == ("claimed", "a", claim.token)
    assert board.get("B1").deps == ()
    shown = board.show("A2")
    assert [r["body"] for r in shown["replies"]] == ["how is it going?"]
    assert [e.seq for e in board.events(item_id=a2.id)][: len(events_before)] == events_before
    board.done("A2", agent="a", token=claim.token)  # the holder's token still works


def test_a_package_gone_from_the_document_is_reported_not_deleted(board: Board) -> None:
    board.import_packages(SPEC, plan(), created_by="h")
    result = board.import_packages(SPEC, plan()[:2], created_by="h")
    assert result["removed"] == ["B1"]
    assert board.get("B1").state == "pending"


def test_ticked_while_someone_holds_it_is_a_conflict_not_a_close(board: Board) -> None:
    board.import_packages(SPEC, plan(), created_by="h")
    board.claim("A2", agent="a")
    ticked = plan()
    ticked[1]["done"] = True
    result = board.import_packages(SPEC, ticked, created_by="h")
    assert [c["package"] for c in result["conflicts"]] == ["A2"]
    assert result["conflicts"][0]["holder"] == "a"
    assert board.get("A2").state == "claimed"


@pytest.mark.parametrize(
    "packages, error",
    [
        ([pkg("A1", 1), pkg("A1", 2)], errors.InvalidInput),  # an id twice
        ([pkg("A1", 1, "Z9")], errors.InvalidInput),  # unknown dependency
        ([pkg("A1", 1, "A2"), pkg("A2", 2, "A1")], errors.DependencyCycle),
        ([pkg("A1", 1, files=["../outside.py"])], errors.InvalidInput),
        ([{"id": "A1", "title": "x", "line": 0}], errors.InvalidInput),
        ([{"id": "7", "title": "x", "line": 3}], errors.InvalidInput),
        ("not a list", errors.InvalidInput),
    ],
)
def test_a_refused_import_changes_nothing(board: Board, packages: Any, error: type) -> None:
    board.import_packages(SPEC, [pkg("Q1", 1)], created_by="h")
    before = snapshot(board)
    with pytest.raises(error):
        board.import_packages(SPEC, packages, created_by="h")
    assert snapshot(board) == before


def test_keys_of_another_document_are_refused_unless_prefixed(board: Board) -> None:
    board.import_packages(SPEC, plan(), created_by="h")
    with pytest.raises(errors.Conflict, match="`prefix`") as refused:
        board.import_packages("docs/other.md", [pkg("A2", 1)], created_by="h")
    # the API field, not a command-line flag: each face says how it spells it
    assert "--" not in refused.value.message and refused.value.details["field"] == "prefix"
    result = board.import_packages("docs/other.md", [pkg("A2", 1)], created_by="h", prefix="o.")
    assert result["created"] == ["A2"]
    assert board.get("o.A2").spec == "docs/other.md"


def test_adopt_turns_reservation_lines_into_claims_and_holds(board: Board) -> None:
    packages = [*plan(), pkg("T1", 40), pkg("T2", 41, files=["src/t/**"])]
    result = board.import_packages(
        SPEC,
        packages,
        created_by="h",
        adopt=[
            {"package": "A2", "user": "alice", "line": 13},
            {"package": "B1", "user": "bob", "line": 19},  # waits on A2: not adopted
            {"track": "T", "user": "carol", "line": 39, "files": ["src/t/**"]},
        ],
    )
    assert [(a.get("package"), a["user"]) for a in result["adopted"]] == [
        ("A2", "alice"),
        (None, "carol"),
    ]
    assert [(n["package"], n["user"]) for n in result["not_adopted"]] == [("B1", "bob")]
    assert "waits on" in result["not_adopted"][0]["reason"]
    assert board.get("A2").claimed_by == "alice"
    with pytest.raises(errors.FilesReserved):
        board.claim("T2", agent="dave")  # carol holds track T's files


# --- reservations in the document -------------------------------------------------------------


def reserved_plan(reserved: bool = True) -> list[dict[str, Any]]:
    """F1 has files, P1 has none (the one-statement claim's path); both reserved for alice."""
    mark = {"reserved_by": "alice"} if reserved else {}
    return [
        pkg("F1", 10, **mark),
        pkg("P1", 20, files=[], **mark),
        pkg("Z1", 30, files=[]),
    ]


def test_a_package_reserved_in_the_document_is_not_handed_out(board: Board) -> None:
    board.import_packages(SPEC, reserved_plan(), created_by="h")
    assert board.get("F1").reserved_for == board.get("P1").reserved_for == "alice"
    # every claimable query agrees: the listing, the fast claim, the batch
    assert [i.key for i in board.list_items(ready=True)] == ["Z1"]
    assert board.show("F1")["ready"] is False and board.show("F1")["reserved_for"] == "alice"
    assert board.claim_next(agent="bob").item.key == "Z1"
    with pytest.raises(errors.NothingReady):
        board.claim_next(agent="bob")
    with pytest.raises(errors.NothingReady):
        board.claim_batch(10, agent="bob")
    # by name: refused for anyone else, naming whom the document reserves it for
    with pytest.raises(errors.AlreadyClaimed, match="reserved for alice") as refused:
        board.claim("P1", agent="bob")
    assert refused.value.details["reason"] == "reserved"
    assert board.get("P1").state == "pending"
    # the user the document names may take it
    assert board.claim("P1", agent="alice").item.claimed_by == "alice"


def test_the_reserved_package_is_the_first_in_line_and_still_skipped(board: Board) -> None:
    # P1 (no files, oldest) would be the one-statement claim's pick if it did not check
    board.import_packages(SPEC, reserved_plan()[1:], created_by="h")
    assert board.claim_next(agent="bob").item.key == "Z1"


def test_a_reimport_without_the_line_frees_the_package_and_says_so(board: Board) -> None:
    board.import_packages(SPEC, reserved_plan(), created_by="h")
    again = board.import_packages(SPEC, reserved_plan(), created_by="h")
    assert again["updated"] == []  # the line still stands: nothing changed
    freed = board.import_packages(SPEC, reserved_plan(reserved=False), created_by="h")
    assert freed["updated"] == ["F1", "P1"]
    assert board.get("F1").reserved_for is None
    edited = [e for e in board.events() if e.kind == "edited"]
    freed_from = {"old": "alice", "new": None}
    assert [e.details["reserved_for"] for e in edited] == [freed_from, freed_from]
    assert sorted(i.key for i in board.list_items(ready=True)) == ["F1", "P1", "Z1"]


def test_adopting_a_reserved_package_claims_it_for_its_user(board: Board) -> None:
    result = board.import_packages(
        SPEC,
        reserved_plan(),
        created_by="h",
        adopt=[{"package": "F1", "user": "alice", "line": 9}],
    )
    assert [a["package"] for a in result["adopted"]] == ["F1"]
    assert board.get("F1").claimed_by == "alice"
    stolen = board.import_packages(
        SPEC,
        reserved_plan(),
        created_by="h",
        adopt=[{"package": "P1", "user": "mallory", "line": 19}],
    )
    assert [n["package"] for n in stolen["not_adopted"]] == ["P1"]
    assert "reserved for alice" in stolen["not_adopted"][0]["reason"]


def test_a_bad_reserved_by_is_refused_and_changes_nothing(board: Board) -> None:
    with pytest.raises(errors.InvalidInput):
        board.import_packages(SPEC, [pkg("A1", 1, reserved_by="no spaces")], created_by="h")
    assert board.list_items() == []


# --- the compare-and-set ----------------------------------------------------------------------


class _SlipInTx(SQLiteTx):
    def update_item(self, item_id: int, expected_token: int, changes: dict[str, Any]) -> bool:
        # another writer moves the item's token between the core's read and its write
        self.conn.execute(
            "UPDATE items SET fencing_token = fencing_token + 1 WHERE id = ?", (item_id,)
        )
        return super().update_item(item_id, expected_token, changes)


class SlipInStorage(SQLiteStorage):
    """Real SQLite whose write transactions, once ``armed``, let another writer in just before
    every compare-and-set: what a backend that failed to serialise writers would do."""

    armed = False

    @contextmanager
    def write(self) -> Iterator[WriteTx]:
        with super().write() as tx:
            assert isinstance(tx, SQLiteTx)
            yield _SlipInTx(tx.conn) if self.armed else tx


@pytest.fixture
def slipping(tmp_path: Path, clock: Clock) -> Iterator[tuple[Board, SlipInStorage]]:
    (tmp_path / "src").mkdir()
    storage = SlipInStorage(tmp_path / ".coord" / "board.db")
    b = Board(storage, clock=clock, default_lease_seconds=60, repo_root=tmp_path)
    yield b, storage
    b.close()


def _renamed() -> list[dict[str, Any]]:
    edited = plan()
    edited[1]["title"] = "package A2, renamed"
    return edited


def _moved() -> list[dict[str, Any]]:
    moved = plan()
    for package in moved:
        package["line"] += 1
    return moved


def _ticked() -> list[dict[str, Any]]:
    ticked = plan()
    ticked[1]["done"] = True
    return ticked


@pytest.mark.parametrize("document", [_renamed, _moved, _ticked], ids=lambda f: f.__name__)
def test_a_missed_compare_and_set_in_a_reimport_writes_nothing(
    slipping: tuple[Board, SlipInStorage], document: Any
) -> None:
    """A re-import writes a changed package (title), its bookkeeping (line) or its close (a
    ticked box) by compare-and-set; a miss must not be reported as done, nor half-written."""
    board, storage = slipping
    board.import_packages(SPEC, plan(), created_by="h")
    board.reserve(["src/a2.py"], agent="h", item="A2")
    before = snapshot(board), board.reservations()
    storage.armed = True
    with pytest.raises(errors.CoordError) as missed:
        board.import_packages(SPEC, document(), created_by="h")
    assert isinstance(missed.value, errors.StaleSnapshot)
    assert (missed.value.code, missed.value.http_status) == ("stale_snapshot", 500)
    storage.armed = False
    assert (snapshot(board), board.reservations()) == before


def test_a_missed_compare_and_set_on_a_claim_is_named_and_writes_nothing(
    slipping: tuple[Board, SlipInStorage],
) -> None:
    board, storage = slipping
    item = board.add("x", created_by="h", files=["src/x.py"])
    claim = board.claim(item.id, agent="a")
    before = snapshot(board), board.reservations()
    storage.armed = True
    with pytest.raises(errors.StaleSnapshot):
        board.heartbeat(item.id, agent="a", token=claim.token, lease_seconds=600)
    storage.armed = False
    assert (snapshot(board), board.reservations()) == before


# --- checks before done ------------------------------------------------------------------------


def run(command: str, code: int) -> dict[str, Any]:
    return {"command": command, "exit_code": code, "output_tail": f"ran {command}"}


def test_done_needs_evidence_when_the_item_has_checks(board: Board) -> None:
    item = board.add("x", created_by="h", files=[])
    board.edit(item.id, agent="h", add_checks=["make test", "make lint"])
    claim = board.claim(item.id, agent="a")
    with pytest.raises(errors.ChecksRequired) as refused:
        board.done(item.id, agent="a", token=claim.token)
    assert refused.value.details["checks"] == ["make test", "make lint"]
    assert "`evidence`" in refused.value.message and "`skip_checks`" in refused.value.message
    assert board.get(item.id).state == "claimed"


def test_a_failing_check_blocks_done_and_its_evidence_is_kept(board: Board) -> None:
    item = board.add("x", created_by="h")
    board.edit(item.id, agent="h", add_checks=["make test", "make lint"])
    claim = board.claim(item.id, agent="a")
    with pytest.raises(errors.ChecksFailed) as refused:
        board.done(
            item.id,
            agent="a",
            token=claim.token,
            evidence=[run("make test", 0), run("make lint", 2)],
        )
    assert refused.value.details["failed"] == ["make lint"]
    assert "`skip_checks`" in refused.value.message and "--" not in refused.value.message
    kept = board.get(item.id)
    assert kept.state == "claimed" and kept.claimed_by == "a"
    assert kept.evidence is not None and kept.evidence["passed"] is False
    assert [r["exit_code"] for r in kept.evidence["runs"]] == [0, 2]
    assert "checks_failed" in [e.kind for e in board.events(item_id=item.id)]


def test_a_check_that_did_not_run_counts_as_failed(board: Board) -> None:
    item = board.add("x", created_by="h")
    board.edit(item.id, agent="h", add_checks=["make test", "make lint"])
    claim = board.claim(item.id, agent="a")
    with pytest.raises(errors.ChecksFailed) as refused:
        board.done(item.id, agent="a", token=claim.token, evidence=[run("make test", 0)])
    assert refused.value.details["missing"] == ["make lint"]


def test_passing_checks_close_the_item_with_their_evidence(board: Board) -> None:
    item = board.add("x", created_by="h")
    board.edit(item.id, agent="h", add_checks=["make test"])
    claim = board.claim(item.id, agent="a")
    done = board.done(item.id, agent="a", token=claim.token, evidence=[run("make test", 0)])
    assert done.state == "done"
    assert board.get(item.id).evidence["passed"] is True  # type: ignore[index]


def test_skipping_checks_is_recorded_where_everyone_sees_it(board: Board) -> None:
    item = board.add("x", created_by="h")
    board.edit(item.id, agent="h", add_checks=["make test"])
    claim = board.claim(item.id, agent="a")
    with pytest.raises(errors.InvalidInput):
        board.done(item.id, agent="a", token=claim.token, skip_checks="  ")
    board.done(item.id, agent="a", token=claim.token, skip_checks="flaky CI, see #12")
    shown = board.show(item.id)
    assert shown["evidence"]["skipped"] == "flaky CI, see #12"
    done_event = shown["history"][-1]
    assert done_event["kind"] == "done"
    assert done_event["details"]["checks_skipped"] == "flaky CI, see #12"


def test_a_stale_token_cannot_close_even_with_passing_evidence(board: Board, clock: Clock) -> None:
    item = board.add("x", created_by="h")
    board.edit(item.id, agent="h", add_checks=["true"])
    old = board.claim(item.id, agent="a")
    clock.now += 120
    board.claim(item.id, agent="b")
    with pytest.raises(errors.LeaseLost):
        board.done(item.id, agent="a", token=old.token, evidence=[run("true", 0)])
    assert board.get(item.id).evidence is None


# --- escalation ------------------------------------------------------------------------------


def test_escalate_answer_round_trip_keeps_claim_and_files(board: Board, clock: Clock) -> None:
    item = board.add("x", created_by="h", files=["src/a.py"])
    claim = board.claim(item.id, agent="a")
    waiting = board.escalate(item.id, agent="a", token=claim.token, question="which API?")
    assert waiting.shown_state == "needs_human"
    assert waiting.escalate_to == "@lead"
    assert [i.id for i in board.list_items(state="needs_human")] == [item.id]
    clock.now += 10_000  # far past the 60 s lease: waiting on a human does not expire
    with pytest.raises(errors.AlreadyClaimed, match="human"):
        board.claim(item.id, agent="b")
    with pytest.raises(errors.NothingReady):
        board.claim_next(agent="b")
    assert board.who("src/a.py", agent="b")["may_edit"] is False
    board.inbox(agent="a")  # drain what came before
    answered = board.answer(item.id, agent="human", text="use the v2 API")
    assert answered.shown_state == "claimed" and answered.question is None
    assert answered.lease_expires_at == clock.now + 60
    news = board.inbox(agent="a")
    assert [(e.kind, e.details["answer"]) for e in news] == [("answered", "use the v2 API")]
    board.heartbeat(item.id, agent="a", token=claim.token)
    board.done(item.id, agent="a", token=claim.token)


def test_escalation_needs_the_live_holder_and_answer_needs_a_question(board: Board) -> None:
    item = board.add("x", created_by="h")
    claim = board.claim(item.id, agent="a")
    with pytest.raises(errors.LeaseLost):
        board.escalate(item.id, agent="b", token=claim.token, question="?")
    with pytest.raises(errors.NotWaiting):
        board.answer(item.id, agent="human", text="nobody asked")
    with pytest.raises(errors.InvalidInput):
        board.escalate(item.id, agent="a", token=claim.token, question="")
    assert board.get(item.id).shown_state == "claimed"


def test_a_large_document_imports_and_lists_with_every_file(board: Board) -> None:
    # one range per file prefix once made SQLite's expression tree too deep to list a page
    packages = [
        pkg(f"P{n}", n + 1, *([f"P{n - 1}"] if n else []), files=[f"src/p{n}/x.py"])
        for n in range(1500)
    ]
    result = board.import_packages(SPEC, packages, created_by="h")
    assert len(result["created"]) == 1500
    board.claim("P0", agent="a")
    listed = board.list_items(limit=1000)
    assert len(listed) == 1000
    assert [i.key for i in listed if i.state == "claimed"] == ["P0"]
    assert board.who("src/p0/x.py", agent="b")["may_edit"] is False
