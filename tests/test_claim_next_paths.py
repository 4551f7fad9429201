"""claim-next has two paths: one statement for the usual case, the core for the rest.

Random boards and random histories run on two boards side by side, one whose storage never
offers the one-statement claim. Every answer, every item and every event must be the same.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import Clock
from coord.core.board import Board
from coord.errors import CoordError, NothingReady
from coord.model import Item
from coord.storage import sqlite_items
from coord.storage.base import WriteTx
from coord.storage.sqlite import SQLiteStorage
from coord.storage.sqlite_tx import SQLiteTx

AGENTS = ("a", "b", "c")
FILES = ("src/a.py", "src/b.py", "docs/*.md")


class _CoreOnlyTx(SQLiteTx):
    def take_first_pending(self, *args: Any) -> Item | None:
        return None


class CoreOnlyStorage(SQLiteStorage):
    """SQLite that leaves every claim to the core's general path."""

    @contextmanager
    def write(self) -> Iterator[WriteTx]:
        with super().write() as tx:
            assert isinstance(tx, SQLiteTx)
            yield _CoreOnlyTx(tx.conn)


class _CountingTx(SQLiteTx):
    def __init__(self, conn: Any, storage: CountingStorage) -> None:
        super().__init__(conn)
        self.storage = storage

    def take_first_pending(self, *args: Any) -> Item | None:
        took = super().take_first_pending(*args)
        self.storage.fast += took is not None
        return took

    def claimable_items(self, *args: Any, **kwargs: Any) -> list[Item]:
        found = super().claimable_items(*args, **kwargs)
        self.storage.items_read += len(found)
        return found


class CountingStorage(SQLiteStorage):
    """SQLite that counts how many claims took the one-statement path, and how many
    candidate items the core's path read."""

    fast = 0
    items_read = 0

    @contextmanager
    def write(self) -> Iterator[WriteTx]:
        with super().write() as tx:
            assert isinstance(tx, SQLiteTx)
            yield _CountingTx(tx.conn, self)


_add = st.fixed_dictionaries(
    {
        "op": st.just("add"),
        "priority": st.integers(0, 4),
        "kind": st.sampled_from(("task", "bug", "note")),
        "labels": st.lists(st.sampled_from(("ui", "db")), max_size=2, unique=True),
        "deps": st.lists(st.integers(1, 12), max_size=2, unique=True),
        "files": st.lists(st.sampled_from(FILES), max_size=2, unique=True),
    }
)
_claim = st.fixed_dictionaries(
    {
        "op": st.just("claim_next"),
        "agent": st.sampled_from(AGENTS),
        "kind": st.sampled_from((None, None, "task", "bug")),
        "label": st.sampled_from((None, None, None, "ui")),
        "lease": st.sampled_from((10, 30, 100)),
    }
)
_end = st.fixed_dictionaries(
    {
        "op": st.sampled_from(("done", "release")),
        "agent": st.sampled_from(AGENTS),
        "which": st.integers(0, 3),
    }
)
_reserve = st.fixed_dictionaries(
    {"op": st.just("reserve"), "agent": st.sampled_from(AGENTS), "file": st.sampled_from(FILES)}
)
_wait = st.fixed_dictionaries({"op": st.just("wait"), "seconds": st.sampled_from((5, 20, 60))})
histories = st.tuples(
    st.lists(_add, min_size=3, max_size=10),
    st.lists(
        st.one_of(_add, _claim, _claim, _claim, _end, _end, _reserve, _wait),
        min_size=10,
        max_size=40,
    ),
).map(lambda parts: parts[0] + parts[1])


class Run:
    """One board and what its agents hold, driven by the history's steps."""

    def __init__(self, board: Board, clock: Clock) -> None:
        self.board, self.clock = board, clock
        self.held: dict[str, list[tuple[int, int]]] = {name: [] for name in AGENTS}
        self.added = 0

    def step(self, op: dict[str, Any]) -> Any:
        try:
            return self._step(op)
        except CoordError as err:
            return err.to_dict()

    def _step(self, op: dict[str, Any]) -> Any:
        board = self.board
        if op["op"] == "wait":
            self.clock.advance(op["seconds"])
            return None
        if op["op"] == "add":  # dependencies on items added before: never a cycle
            fields = {k: v for k, v in op.items() if k != "op"}
            fields["deps"] = sorted({(d - 1) % self.added + 1 for d in op["deps"] if self.added})
            self.added += 1
            return board.add("t", created_by="h", **fields).id
        if op["op"] == "reserve":
            return [r.pattern for r in board.reserve([op["file"]], agent=op["agent"])]
        if op["op"] == "claim_next":
            won = board.claim_next(
                agent=op["agent"], kind=op["kind"], label=op["label"], lease_seconds=op["lease"]
            )
            self.held[won.agent].append((won.item.id, won.token))
            return won.to_dict(self.clock())
        held = self.held[op["agent"]]
        if not held:
            return None
        item_id, token = held.pop(op["which"] % len(held))
        if op["op"] == "done":
            return board.done(item_id, agent=op["agent"], token=token).to_dict(self.clock())
        return board.release(item_id, agent=op["agent"], token=token).to_dict(self.clock())


def _board(storage: SQLiteStorage, root: Path, clock: Clock) -> Board:
    return Board(storage, clock=clock, default_lease_seconds=60, repo_root=root)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories)
def test_both_paths_give_the_same_answers_items_and_log(history: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        fast_clock, core_clock = Clock(), Clock()
        fast = Run(_board(CountingStorage(root / "fast.db"), root, fast_clock), fast_clock)
        core = Run(_board(CoreOnlyStorage(root / "core.db"), root, core_clock), core_clock)
        try:
            for op in history:
                assert fast.step(op) == core.step(op), op
            now = fast_clock()
            listed = [
                [i.to_dict(now) for i in run.board.list_items(limit=1000)] for run in (fast, core)
            ]
            assert listed[0] == listed[1]
            logged = [
                [(e.seq, e.at, e.agent, e.item_id, e.kind, e.details) for e in run.board.events()]
                for run in (fast, core)
            ]
            assert logged[0] == logged[1]
        finally:
            fast.board.close()
            core.board.close()


@pytest.mark.skipif(not sqlite_items._HAS_RETURNING, reason="SQLite before 3.35: no RETURNING")
def test_a_plain_claim_takes_the_one_statement_path(tmp_path: Path) -> None:
    clock = Clock()
    storage = CountingStorage(tmp_path / "board.db")
    board = _board(storage, tmp_path, clock)
    plain = board.add("plain", created_by="h", priority=1)
    with_files = board.add("files", created_by="h", priority=0, files=["src/a.py"])
    assert board.claim_next(agent="a").item.id == with_files.id  # first in line, has files
    assert storage.fast == 0
    won = board.claim_next(agent="b", lease_seconds=10)
    assert (won.item.id, storage.fast) == (plain.id, 1)
    clock.advance(11)
    board.add("newer", created_by="h", priority=0)
    took_over = board.claim_next(agent="c")  # the lapsed lease is not the first in line ...
    assert took_over.item.title == "newer" and storage.fast == 1  # ... but the core decides
    assert board.claim_next(agent="c").takeover_from == "b"
    board.close()


# --- the batch is the greedy maximal set; the scan past file-blocked work is bounded --------


def test_next_count_hands_out_the_greedy_maximal_set(tmp_path: Path) -> None:
    import random

    board = _board(SQLiteStorage(tmp_path / "board.db"), tmp_path, Clock())
    rng = random.Random(12)
    entries = [
        {"title": f"t{n}", "priority": rng.randint(0, 3), "files": [f"src/f{n % 90}.py"]}
        for n in range(150)
    ] + [{"title": f"plain{n}", "priority": rng.randint(0, 3)} for n in range(10)]
    ids = board.import_items(entries, created_by="h")
    board.reserve([f"src/f{n}.py" for n in range(10)], agent="other")
    # The oracle: claim order (priority, then age), each taken unless its files overlap one
    # taken before it or held by someone else.
    expected, taken = [], {f"src/f{n}.py" for n in range(10)}
    for item_id, entry in sorted(
        zip(ids, entries, strict=True), key=lambda p: (p[1]["priority"], p[0])
    ):
        if not taken.intersection(entry.get("files", [])):
            expected.append(item_id)
            taken.update(entry.get("files", []))
    assert len(expected) == 90 > 64  # more than the old cap could give
    claims = board.claim_batch(200, agent="a")
    assert [c.item.id for c in claims] == expected
    files = [f for c in claims for f in c.item.files]
    assert len(files) == len(set(files)), "two items whose files overlap were both handed out"
    assert not set(files) & {f"src/f{n}.py" for n in range(10)}
    board.close()


def test_claim_next_reads_a_bounded_number_of_file_blocked_items(tmp_path: Path) -> None:
    from coord.limits import MAX_CLAIM_SCAN

    storage = CountingStorage(tmp_path / "board.db")
    board = _board(storage, tmp_path, Clock())
    blocked = MAX_CLAIM_SCAN + 500
    board.import_items(
        [{"title": f"b{n}", "priority": 0, "files": [f"hot/m{n}.py"]} for n in range(blocked)]
        + [{"title": "ready", "priority": 1}],
        created_by="h",
    )
    board.reserve(["hot/"], agent="other")
    storage.items_read = 0
    with pytest.raises(NothingReady) as gave_up:
        board.claim_next(agent="a")
    assert storage.items_read <= MAX_CLAIM_SCAN
    assert gave_up.value.details["scanned"] == MAX_CLAIM_SCAN
    assert "try again" in gave_up.value.message and "held by other" in gave_up.value.message
    storage.items_read = 0
    with pytest.raises(NothingReady):
        board.claim_batch(5, agent="a")
    assert storage.items_read <= MAX_CLAIM_SCAN
    # Once the holds lapse, the same board hands out its first item again.
    board.unreserve(everything=True, agent="other")
    assert board.claim_next(agent="a").item.title == "b0"
    board.close()


def test_claim_next_still_finds_ready_work_behind_fewer_blocked_items(tmp_path: Path) -> None:
    board = _board(SQLiteStorage(tmp_path / "board.db"), tmp_path, Clock())
    board.import_items(
        [{"title": f"b{n}", "priority": 0, "files": [f"hot/m{n}.py"]} for n in range(300)]
        + [{"title": "ready", "priority": 1}],
        created_by="h",
    )
    board.reserve(["hot/"], agent="other")
    assert board.claim_next(agent="a").item.title == "ready"
    board.close()


POOL = ("src/a.py", "src/", "src/*.py", "**/a.py", "docs/x.md", "docs/**", "src/sub/b.py", "*.md")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    entries=st.lists(
        st.tuples(st.integers(0, 3), st.lists(st.sampled_from(POOL), max_size=2, unique=True)),
        min_size=1,
        max_size=25,
    ),
    held=st.lists(st.sampled_from(POOL), max_size=2, unique=True),
)
def test_the_batch_is_the_naive_greedy_set(
    entries: list[tuple[int, list[str]]], held: list[str]
) -> None:
    """The batch's prefix index finds every overlap the plain pairwise check would, judged
    on the same working tree as the board (the temporary directory: no file of the pool
    exists, so every literal is a file to be created)."""
    from coord.fast import patterns

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        board = _board(SQLiteStorage(root / "board.db"), root, Clock())
        try:
            board.import_items(
                [{"title": "t", "priority": p, "files": files} for p, files in entries],
                created_by="h",
            )
            if held:
                board.reserve(held, agent="other")
            holds = [r.pattern for r in board.reservations()]
            items = sorted(board.list_items(limit=1000), key=lambda i: (i.priority, i.id))
            expected: list[int] = []
            taken: list[str] = []
            for item in items:
                if not any(
                    patterns.overlaps(f, other, is_dir=lambda p: (root / p).is_dir())
                    for f in item.files
                    for other in holds + taken
                ):
                    expected.append(item.id)
                    taken.extend(item.files)
            try:
                got = [c.item.id for c in board.claim_batch(200, agent="a")]
            except NothingReady:
                got = []
            assert got == expected
        finally:
            board.close()
