"""The SQLite backend's faults as errors the user can act on (issue 14: items 1, 6, 9), on real
board files; the daemon's side is in tests/acceptance/test_board_survival.py."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from coord.errors import BoardBusy, BoardGone, BoardIOError, DiskFull, error_from_dict
from coord.server.connections import accept_batch, connection_bound
from coord.storage import sqlite_faults
from coord.storage.sqlite import SQLiteStorage


@pytest.fixture
def storage(tmp_path: Path) -> SQLiteStorage:
    made = SQLiteStorage(tmp_path / "board.db", busy_timeout_ms=0)
    yield made
    made.close()


def _add_event(storage: SQLiteStorage) -> None:
    with storage.write() as tx:
        tx.append_event(at=1.0, agent="a", item_id=None, kind="note", details={})


def test_a_deleted_board_file_refuses_writes_and_reads(storage: SQLiteStorage) -> None:
    _add_event(storage)
    storage.path.unlink()
    with pytest.raises(BoardGone, match="deleted"):
        _add_event(storage)
    with pytest.raises(BoardGone), storage.read() as tx:
        tx.last_seq()
    problem = storage.problem()
    assert isinstance(problem, BoardGone) and problem.http_status == 503


def test_a_replaced_board_file_is_named_replaced(storage: SQLiteStorage, tmp_path: Path) -> None:
    other = SQLiteStorage(tmp_path / "other.db")
    other.close()
    os.replace(other.path, storage.path)
    with pytest.raises(BoardGone, match="replaced"):
        _add_event(storage)


def test_a_refused_write_leaves_no_transaction_open(storage: SQLiteStorage) -> None:
    storage.path.unlink()
    with pytest.raises(BoardGone):
        _add_event(storage)
    assert not storage._conn().in_transaction


def test_a_write_lock_held_elsewhere_is_busy_and_the_probe_does_not_wait(
    storage: SQLiteStorage,
) -> None:
    other = sqlite3.connect(storage.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(BoardBusy) as refused:
            _add_event(storage)
        assert refused.value.details["retry_after"] == 1
        assert isinstance(storage.problem(), BoardBusy)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert storage.problem() is None
    _add_event(storage)


def test_sqlite_full_is_disk_full(tmp_path: Path) -> None:
    err = sqlite3.OperationalError("database or disk is full")
    err.sqlite_errorcode = 13  # type: ignore[attr-defined]
    found = sqlite_faults.translate(tmp_path / "board.db", err)
    assert isinstance(found, DiskFull) and found.http_status == 507
    assert "the disk is full" in found.message


def test_an_unknown_sqlite_error_stays_a_bug(tmp_path: Path) -> None:
    err = sqlite3.OperationalError("no such table: items")
    err.sqlite_errorcode = 1  # type: ignore[attr-defined]
    assert sqlite_faults.translate(tmp_path / "board.db", err) is None


def test_the_errors_cross_the_wire_as_themselves() -> None:
    for cls in (BoardGone, BoardBusy, DiskFull, BoardIOError):
        assert type(error_from_dict({"error": cls.code, "message": "m"})) is cls


@pytest.mark.parametrize("limit", [256, 1024, 20_000, 1 << 20])
def test_the_connection_bound_leaves_room_for_two_accept_bursts_and_the_board(limit: int) -> None:
    assert connection_bound(limit) + 2 * accept_batch(limit) + 64 <= limit


def test_an_io_error_is_the_file_systems_not_a_bug(tmp_path: Path) -> None:
    # what a file-size limit (RLIMIT_FSIZE, EFBIG) gives: SQLITE_IOERR_WRITE
    err = sqlite3.OperationalError("disk I/O error")
    err.sqlite_errorcode = 778  # type: ignore[attr-defined]
    found = sqlite_faults.translate(tmp_path / "board.db", err)
    assert isinstance(found, BoardIOError) and found.http_status == 503
