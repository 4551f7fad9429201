"""The guard of tests/open_connections.py, tried against a deliberate leak."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

import open_connections
from coord.core.board import Board
from coord.storage.sqlite import SQLiteStorage


def test_a_connection_left_open_is_found_where_it_was_made(tmp_path: Path) -> None:
    made: open_connections.Made = []
    saved, open_connections._made = open_connections._made, made
    try:
        leaked = sqlite3.connect(tmp_path / "leak.db")  # the deliberate leak
        closed = sqlite3.connect(tmp_path / "closed.db")
        closed.close()
    finally:
        open_connections._made = saved
    found = open_connections.left_open(made)
    assert len(found) == 1 and "the deliberate leak" in found[0]
    with pytest.raises(sqlite3.ProgrammingError):  # the guard closed it: no warning later
        leaked.execute("SELECT 1")


def test_a_storage_that_refuses_its_board_closes_what_it_opened(tmp_path: Path) -> None:
    # seen failing before the fix: the newer-release refusal left the migrating connection open
    SQLiteStorage(tmp_path / "board.db").close()
    with contextlib.closing(sqlite3.connect(tmp_path / "board.db")) as conn, conn:
        conn.execute("INSERT INTO schema_migrations VALUES (999, 'future', 0)")
    made: open_connections.Made = []
    saved, open_connections._made = open_connections._made, made
    try:
        with pytest.raises(Exception, match="newer coord"):
            SQLiteStorage(tmp_path / "board.db")
    finally:
        open_connections._made = saved
    assert made and open_connections.left_open(made) == []


def test_a_board_whose_config_is_refused_closes_its_storage(tmp_path: Path) -> None:
    from conftest import init_board_dir

    board_dir = init_board_dir(tmp_path)
    made: open_connections.Made = []
    saved, open_connections._made = open_connections._made, made
    try:
        with pytest.raises(Exception, match="lease"):
            Board.open(board_dir, default_lease_seconds=-5)
    finally:
        open_connections._made = saved
    assert made and open_connections.left_open(made) == []
