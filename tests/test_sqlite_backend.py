"""SQLite specifics: settings, migrations, and the plans of the hot queries."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from coord.errors import CoordError
from coord.storage import sqlite_items
from coord.storage.sqlite import (
    SCHEMA_VERSION_TABLE,
    Checkpointer,
    SQLiteStorage,
    _migrations,
    _split_sql,
)


def test_connection_settings(tmp_path: Path) -> None:
    storage = SQLiteStorage(tmp_path / "board.db")
    conn = storage._conn()
    assert conn.isolation_level is None  # no implicit BEGIN from the stdlib module
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    storage.close()


def test_migrations_are_recorded_and_reopening_applies_nothing(tmp_path: Path) -> None:
    SQLiteStorage(tmp_path / "board.db").close()
    storage = SQLiteStorage(tmp_path / "board.db")
    rows = storage._conn().execute("SELECT version, name FROM schema_migrations").fetchall()
    assert [(v, n) for v, n, _ in _migrations()] == rows
    assert storage.schema_version() == rows[-1][0] >= len(rows) >= 1
    storage.close()


def test_a_board_from_a_newer_release_is_refused(tmp_path: Path) -> None:
    SQLiteStorage(tmp_path / "board.db").close()
    conn = sqlite3.connect(tmp_path / "board.db")
    conn.execute("INSERT INTO schema_migrations VALUES (999, 'future', 0)")
    conn.commit()
    conn.close()
    with pytest.raises(CoordError, match="newer coord"):
        SQLiteStorage(tmp_path / "board.db")


def _plan(conn: sqlite3.Connection, sql: str, params: list) -> str:
    return "\n".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params))


def _seed(storage: SQLiteStorage, count: int, state: str, now: float) -> None:
    lease = now + 3600 if state == "claimed" else None
    closed = now if state == "done" else None
    who = "w" if state == "claimed" else None
    conn = storage._conn()
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO items (kind, title, priority, state, created_by, claimed_by, "
        "lease_expires_at, created_at, updated_at, closed_at) "
        "VALUES ('task', 'x', 2, ?, 'h', ?, ?, ?, ?, ?)",
        [(state, who, lease, now, now, closed)] * count,
    )
    conn.execute("COMMIT")


def _counted(storage: SQLiteStorage, work: Callable[[], int | None]) -> tuple[Any, int, list[str]]:
    """(result, SQLite VM steps, SQL run) of one call of ``work``."""
    conn = storage._conn()
    steps, traced = [0], []

    def count() -> int:
        steps[0] += 1
        return 0

    conn.set_progress_handler(count, 1)
    conn.set_trace_callback(traced.append)
    try:
        found = work()
    finally:
        conn.set_progress_handler(None, 1)
        conn.set_trace_callback(None)
    return found, steps[0], [s for s in traced if s.lstrip().startswith(("SELECT", "UPDATE"))]


def _next_claimable_work(storage: SQLiteStorage, now: float) -> tuple[Any, int, list[str]]:
    def read() -> int | None:
        with storage.read() as tx:
            return next((i.id for i in tx.claimable_items(now, ("task",), None)), None)

    return _counted(storage, read)


class _Undo(Exception):
    pass


def _one_statement_claim_work(storage: SQLiteStorage, now: float) -> tuple[Any, int, list[str]]:
    def claim() -> int | None:
        took = None
        with pytest.raises(_Undo), storage.write() as tx:  # measured, then rolled back
            took = tx.take_first_pending("me", ("task",), None, now, now + 60)
            raise _Undo
        return took.id if took else None

    return _counted(storage, claim)


@pytest.mark.parametrize(
    "work",
    [
        _next_claimable_work,
        pytest.param(
            _one_statement_claim_work,
            marks=pytest.mark.skipif(
                not sqlite_items._HAS_RETURNING, reason="SQLite before 3.35: no RETURNING"
            ),
        ),
    ],
)
def test_claim_next_does_not_read_done_or_live_claimed_rows(
    tmp_path: Path, work: Callable[[SQLiteStorage, float], tuple[Any, int, list[str]]]
) -> None:
    """The work of claim-next stays the same however many done, claimed (and later pending)
    rows pile up: the read the core pages through, and the one-statement claim."""
    now = time.time()
    storage = SQLiteStorage(tmp_path / "board.db")
    _seed(storage, 5, "pending", now)
    _seed(storage, 100, "done", now)
    _seed(storage, 100, "claimed", now)
    small = work(storage, now)
    _seed(storage, 20_000, "done", now)
    _seed(storage, 20_000, "claimed", now)
    _seed(storage, 2_000, "pending", now)
    large = work(storage, now)
    storage._conn().execute("ANALYZE")  # the planner may choose otherwise with statistics
    analysed = work(storage, now)
    assert small[0] == large[0] == analysed[0] == 1
    assert large[1] == small[1] == analysed[1]  # counted in VM instructions, not time
    assert large[2]
    for sql in large[2]:
        plan = _plan(storage._conn(), sql, [])  # traced SQL has its values bound
        lines = [line for line in plan.splitlines() if " items " in f" {line} "]
        assert lines and all(
            "items_pending" in ln or "items_claimed_lease" in ln or "PRIMARY KEY" in ln
            for ln in lines
        ), plan
    storage.close()


def test_nothing_readys_counts_do_not_read_done_rows(tmp_path: Path) -> None:
    """Claim-next's refusal counts the open items (issue 25) and comes to every polling
    agent: its work stays the same however much history piles up."""
    now = time.time()
    storage = SQLiteStorage(tmp_path / "board.db")
    _seed(storage, 3, "claimed", now)
    _seed(storage, 10, "done", now)

    def count() -> int | None:
        with storage.read() as tx:
            return tx.count_held_back(now, ("task",), None, "me")["claimed"]

    small = _counted(storage, count)
    _seed(storage, 20_000, "done", now)
    large = _counted(storage, count)
    assert small[0] == large[0] == 3
    assert large[1] == small[1]  # VM instructions, not time
    storage.close()


def test_unreadable_labels_column_is_never_written(tmp_path: Path) -> None:
    storage = SQLiteStorage(tmp_path / "board.db")
    with storage.write() as tx:
        item_id = tx.insert_item(
            kind="task",
            title="t",
            body="",
            priority=2,
            labels=("a", "b"),
            created_by="h",
            recipient=None,
            now=1.0,
        )
    raw = storage._conn().execute("SELECT labels FROM items WHERE id = ?", (item_id,)).fetchone()
    assert json.loads(raw[0]) == ["a", "b"]
    storage.close()


def _board_of_schema(db: Path, version: int) -> sqlite3.Connection:
    """A board file as a release of schema ``version`` left it: its migrations only."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(SCHEMA_VERSION_TABLE)
    for number, name, sql in _migrations():
        if number <= version:
            for statement in _split_sql(sql):
                conn.execute(statement)
            conn.execute("INSERT INTO schema_migrations VALUES (?, ?, 0)", (number, name))
    return conn


def test_a_board_of_schema_4_gains_reserved_for_and_keeps_its_rows(tmp_path: Path) -> None:
    """Migration 5 adds who a design document reserves a package for; old rows have none."""
    db = tmp_path / "board.db"
    conn = _board_of_schema(db, 4)
    conn.execute(
        "INSERT INTO items (kind, title, body, priority, labels, state, created_by, "
        "created_at, updated_at, key, spec) "
        "VALUES ('task', 'old', '', 2, '[]', 'pending', 'h', 1, 1, 'A1', 'docs/plan.md')"
    )
    conn.close()
    storage = SQLiteStorage(db)
    assert storage.schema_version() >= 5
    with storage.read() as tx:
        item = tx.get_item_by_key("A1")
        ready = tx.claimable_items(2.0, ("task",), None, limit=10)
    assert item is not None and (item.title, item.reserved_for) == ("old", None)
    assert [i.key for i in ready] == ["A1"]
    storage.close()


def test_the_event_log_keeps_its_numbers_across_the_move_off_autoincrement(
    tmp_path: Path,
) -> None:
    """Migration 4 rebuilds ``events`` without AUTOINCREMENT on a board written by schema 3."""
    db = tmp_path / "board.db"
    conn = _board_of_schema(db, 3)
    conn.executemany(
        "INSERT INTO events (at, agent, item_id, kind, details) VALUES (?, 'a', ?, 'claimed', ?)",
        [(float(n), n % 3 or None, json.dumps({"n": n})) for n in range(1, 51)],
    )
    before = conn.execute("SELECT * FROM events ORDER BY seq").fetchall()
    conn.close()

    storage = SQLiteStorage(db)
    conn = storage._conn()
    assert storage.schema_version() == _migrations()[-1][0]  # 4 and every later one
    after = conn.execute("SELECT * FROM events ORDER BY seq").fetchall()
    # every column kept; later migrations add some (provenance: none for these)
    assert [row[: len(before[0])] for row in after] == before
    assert conn.execute(
        "SELECT count(*) FROM sqlite_sequence WHERE name = 'events'"
    ).fetchone() == (0,)
    with storage.write() as tx:
        assert tx.append_event(at=99.0, agent="b", item_id=None, kind="note", details={}) == 51
    with storage.read() as tx:
        assert [e.seq for e in tx.events_after(48, 10)] == [49, 50, 51]
        assert [e.seq for e in tx.events_after(0, 100, item_id=1)] == list(range(1, 51, 3))
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM events WHERE seq = 51")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE events SET kind = 'x' WHERE seq = 1")
    plan = _plan(conn, "SELECT seq FROM events WHERE item_id = 1 ORDER BY seq", [])
    assert "events_item" in plan
    storage.close()


def test_a_board_of_schema_10_is_rebuilt_for_queued_with_every_row_and_reference_intact(
    tmp_path: Path,
) -> None:
    """Migration 11 rebuilds ``items`` (its state CHECK gains 'queued'): every row keeps every
    column, the rows that reference items stay valid, ids are never reused, and the indexes,
    the counting triggers and the foreign keys work on the new table."""
    db = tmp_path / "board.db"
    conn = _board_of_schema(db, 10)
    conn.executemany(
        "INSERT INTO items (kind, title, priority, labels, state, created_by, created_at, "
        "updated_at, claimed_by, lease_expires_at, key, question, reserved_for) "
        "VALUES ('task', ?, 2, '[\"x\"]', ?, 'h', 1, 1, ?, ?, ?, ?, ?)",
        [
            ("p", "pending", None, None, "A1", None, "erin"),
            ("c", "claimed", "a", 5.0, None, "?", None),
            ("d", "done", "a", None, None, None, None),
            ("x", "cancelled", None, None, None, None, None),
            ("gone", "pending", None, None, None, None, None),
        ],
    )
    conn.execute("DELETE FROM items WHERE title = 'gone'")  # its id 5 is never given again
    conn.execute("INSERT INTO deps VALUES (1, 3)")
    conn.execute("INSERT INTO item_files VALUES (2, 'src/a.py')")
    conn.execute("INSERT INTO replies (item_id, author, body, created_at) VALUES (2, 'b', 'hi', 1)")
    conn.execute(
        "INSERT INTO reservations (agent, pattern, prefix, exclusive, item_id, created_at, "
        "expires_at) VALUES ('a', 'src/a.py', 'src', 1, 2, 1, 5)"
    )
    before = conn.execute("SELECT * FROM items ORDER BY id").fetchall()
    conn.close()

    storage = SQLiteStorage(db)
    try:
        conn = storage._conn()
        assert storage.schema_version() >= 11  # 11 and every later one
        columns = [row[1] for row in conn.execute("PRAGMA table_info(items)")]
        after = conn.execute("SELECT * FROM items ORDER BY id").fetchall()
        assert [row[: len(before[0])] for row in after] == before
        assert {row[len(before[0]) :] for row in after} == {(None,) * 9}
        assert columns[len(before[0]) :] == [
            "branch", "base_commit", "worktree", "submitted_head", "submitted_at",
            "merged_commit", "rework", "rework_for", "rework_until",
        ]  # fmt: skip
        assert conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        with pytest.raises(sqlite3.IntegrityError):  # the references still hold
            conn.execute("INSERT INTO deps VALUES (1, 99)")
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert {"items_pending", "items_claimed_lease", "items_key", "items_spec"} <= indexes
        assert {"items_needs_human", "items_queued", "items_rework"} <= indexes
        with storage.read() as tx:
            counts = tx.count_items_by_state()
            assert tx.get_item_by_key("A1") is not None
            assert [i.id for i in tx.claimable_items(10.0, ("task",), None, limit=9)] == [2]
        assert (counts["pending"], counts["needs_human"], counts["done"]) == (1, 1, 1)
        with storage.write() as tx:
            added = tx.insert_item(
                kind="task", title="new", body="", priority=2, labels=(),
                created_by="h", recipient=None, now=2.0,
            )  # fmt: skip
            assert tx.update_item(2, 0, {"state": "queued", "lease_expires_at": None})
            assert tx.update_item(3, 0, {"merged_commit": "c" * 40})
        assert added == 6
        with storage.read() as tx:
            moved = tx.count_items_by_state()
        assert moved == {
            **counts, "pending": 2, "needs_human": 0, "queued": 1, "done": 0, "merged": 1,
        }  # fmt: skip
        with pytest.raises(sqlite3.IntegrityError):  # the new CHECK knows the states
            conn.execute("UPDATE items SET state = 'landed' WHERE id = 1")
    finally:
        storage.close()


def test_a_question_held_forever_gets_the_escalation_bound_on_upgrade(tmp_path: Path) -> None:
    """Migration 6: a needs_human item of an older board held its files until 9999-12-31; it
    keeps its rows, and its lease and files now run to the bound (7 days from the upgrade)."""
    db = tmp_path / "board.db"
    conn = _board_of_schema(db, 5)
    conn.executemany(
        "INSERT INTO items (id, kind, title, priority, state, created_by, claimed_by, "
        "fencing_token, lease_expires_at, created_at, updated_at, question) "
        "VALUES (?, 'task', ?, 2, ?, 'h', ?, 1, ?, 1, 1, ?)",
        [
            (1, "asked", "claimed", "a", 100.0, "which db?"),
            (2, "working", "claimed", "b", 100.0, None),
            (3, "open", "pending", None, None, None),
        ],
    )
    conn.executemany(
        "INSERT INTO reservations (agent, pattern, prefix, exclusive, item_id, created_at, "
        "expires_at) VALUES (?, ?, '', 1, ?, 1, ?)",
        [("a", "src/a.py", 1, 253402300799.0), ("b", "src/b.py", 2, 100.0)],
    )
    items_before = conn.execute("SELECT id, title, state, question FROM items").fetchall()
    conn.close()

    upgraded_at = time.time()
    storage = SQLiteStorage(db)
    conn = storage._conn()
    assert conn.execute("SELECT id, title, state, question FROM items").fetchall() == items_before
    leases = dict(conn.execute("SELECT id, lease_expires_at FROM items").fetchall())
    assert upgraded_at + 7 * 86400 - 5 <= leases[1] <= time.time() + 7 * 86400 + 5
    assert (leases[2], leases[3]) == (100.0, None)  # only waiting questions move
    holds = dict(conn.execute("SELECT pattern, expires_at FROM reservations").fetchall())
    assert holds == {"src/a.py": leases[1], "src/b.py": 100.0}
    storage.close()


def _write_notes(storage: SQLiteStorage, count: int) -> None:
    for n in range(count):
        with storage.write() as tx:
            details = {"n": n, "text": "x" * 200}
            tx.append_event(at=float(n), agent="a", item_id=None, kind="note", details=details)


def _log_generation(db: Path) -> int:
    """The WAL header's checkpoint sequence number: SQLite adds one each time the log starts
    over (its frames are written again from the top), and never otherwise."""
    header = (db.parent / f"{db.name}-wal").read_bytes()[:32]
    return int.from_bytes(header[12:16], "big")


def _after_a_pinned_pass(tmp_path: Path, hand_over: bool) -> tuple[int, int, int]:
    """A log past the threshold whose checkpoint pass cannot reach the end (a reader holds
    an older snapshot, as the writer's next frames do in a storm); then two writes. Returns
    the log's generation before, after the first write and after the second."""
    db = tmp_path / "board.db"
    storage = SQLiteStorage(db, wal_autocheckpoint=0)
    checkpointer = Checkpointer(
        db, rewind_frames=300, on_big_log=storage.rewind_soon if hand_over else None
    )
    conn = sqlite3.connect(db, isolation_level=None)
    db_file = os.open(db, os.O_RDONLY)
    reader = sqlite3.connect(db, isolation_level=None)
    try:
        _write_notes(storage, 100)  # below the threshold: a plain pass, no hand-over
        assert checkpointer.round(conn, db_file) == checkpointer.interval
        assert not storage._rewind_due
        _write_notes(storage, 400)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM events").fetchone()
        _write_notes(storage, 5)  # frames the pass may not copy while the reader is there
        waited = checkpointer.round(conn, db_file)
        assert (waited < checkpointer.interval) == hand_over
        assert storage._rewind_due == hand_over
        reader.execute("COMMIT")
        generation = _log_generation(db)
        _write_notes(storage, 1)
        after_first = _log_generation(db)
        _write_notes(storage, 1)
        after_second = _log_generation(db)
        assert not storage._rewind_due
        with storage.read() as tx:
            assert len(tx.events_after(0, 1000)) == 507
        assert storage._conn().execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return generation, after_first, after_second
    finally:
        reader.close()
        os.close(db_file)
        conn.close()
        storage.close()


def test_the_writer_starts_the_log_over_once_the_checkpointer_hands_over(tmp_path: Path) -> None:
    """Background PASSIVE checkpoints alone never let the log start over while writes keep
    coming (it grew by ~70 MB a second under the claim bench): the newest frames are always
    past the pass. So the checkpointer hands the short tail to the writer, which copies it
    back right after its next commit; the write after that starts the log over.

    Driven a round at a time rather than as a timed storm: how far a thread gets while
    another writes depends on the machine's load (the storm test this replaces failed on a
    busy CI machine). The storm's figure is printed by bench/wal_storm.py."""
    (tmp_path / "handed").mkdir()
    (tmp_path / "alone").mkdir()
    before, first, second = _after_a_pinned_pass(tmp_path / "handed", hand_over=True)
    assert (first, second) == (before, before + 1)
    before, first, second = _after_a_pinned_pass(tmp_path / "alone", hand_over=False)
    assert (first, second) == (before, before)  # the log only grows


def test_a_busy_hand_over_is_tried_again_after_the_next_commit(tmp_path: Path) -> None:
    """The writer's copy-back must never fail its write: while another connection checkpoints
    (busy), it keeps the hand-over for the commit after."""
    db = tmp_path / "board.db"
    storage = SQLiteStorage(db, wal_autocheckpoint=0)
    try:
        _write_notes(storage, 50)
        storage.rewind_soon()
        blocker = sqlite3.connect(db, isolation_level=None)
        blocker.execute("BEGIN")
        blocker.execute("SELECT count(*) FROM events").fetchone()  # a reader pins the log
        _write_notes(storage, 1)
        assert storage._rewind_due  # the tail could not all be copied: kept for later
        blocker.execute("COMMIT")
        blocker.close()
        _write_notes(storage, 1)
        assert not storage._rewind_due
    finally:
        storage.close()


def test_the_near_holds_query_searches_the_prefix_index_however_many_files(
    tmp_path: Path,
) -> None:
    """A claim-next page or a batch asks which holds are near hundreds of files. Written as
    one WHERE with an OR per prefix, SQLite scanned every reservation from three prefixes on:
    the batch's cost grew with everything the board held."""
    from coord.fast import holds

    storage = SQLiteStorage(tmp_path / "board.db")
    conn = storage._conn()
    for count in (1, 3, 50, holds.MAX_NEAR_PREFIXES):
        query = holds.select_live(1.0, near=[f"src/m{n}.py" for n in range(count)])
        assert query is not None
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + query[0], query[1])]
        assert not any(step.startswith("SCAN reservations") for step in plan), (count, plan)
        assert sum("USING INDEX reservations_prefix" in step for step in plan) == 2, plan
    storage.close()


def test_holds_near_more_files_than_one_query_narrows_are_still_only_the_near_ones(
    tmp_path: Path,
) -> None:
    """Past MAX_NEAR_PREFIXES one query reads every live hold; the storage asks in slices so
    a claim-next page or a batch of 200 items reads only what lies near its files."""
    from coord.fast import holds

    storage = SQLiteStorage(tmp_path / "board.db")
    asked = [f"src/m{n}.py" for n in range(holds.MAX_NEAR_PREFIXES + 50)]
    with storage.write() as tx:
        for pattern in [*asked, *(f"lib/x{n}.py" for n in range(300))]:
            tx.insert_reservation(
                agent="other",
                pattern=pattern,
                exclusive=True,
                item_id=None,
                reason="",
                now=1.0,
                expires_at=100.0,
            )
    with storage.read() as tx:
        near = tx.live_reservations(2.0, near=asked)
    assert sorted(r.pattern for r in near) == sorted(asked)
    assert [r.id for r in near] == sorted(r.id for r in near)  # oldest first
    storage.close()
