"""The after-tool check's kept watch list (``coord.fast.watchlist``) never hides a held file.

A call reuses the last call's expansion of the held patterns only while the holds and every
directory it walked look as they did. Each test makes the kept answer wrong in one way — a
file added to a held directory, a new hold, a hold released, a held file edited by its
holder, a directory changed within one timestamp tick — and checks that the next call's
snapshot still sees the truth: the change the call then makes is caught, and a change made
before it is not blamed on it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coord.fast import tripwire, watchlist
from test_hooks import reserve

LONG_AGO_NS = 1_000_000_000 * 1_000_000  # 2001: no directory is racily new at that age


def _age(*directories: Path) -> None:
    """Make the directories look long unchanged (as a tree is between two calls)."""
    for directory in directories:
        os.utime(directory, ns=(LONG_AGO_NS, LONG_AGO_NS))


def _call(board_dir: Path, root: Path, name: str) -> tripwire.Place:
    where = tripwire.place(str(board_dir), str(root), "bob", name)
    tripwire.before(where, {"tool": "Bash", "command": "make"})
    return where


def _changed(where: tripwire.Place) -> list[tuple[str, str, bool]]:
    record = tripwire.load(where) or {}
    return [(c.path, c.change, c.restored) for c in tripwire.after(where, record)]


@pytest.fixture
def tree(board_dir: Path) -> Path:
    """alice holds the directory src/auth (one file in it) and the file src/app.py."""
    root = board_dir.parent
    (root / "src/auth").mkdir(parents=True)
    (root / "src/auth/session.py").write_text("A = 1\n")
    (root / "src/app.py").write_text("B = 1\n")
    reserve(board_dir, ["src/auth", "src/app.py"], "alice")
    _age(root / "src/auth", root / "src", root)
    return root


def _kept_files(board_dir: Path) -> list[str]:
    folder = board_dir / "tripwire" / watchlist.WATCH_DIRNAME
    names: list[str] = []
    for kept in folder.iterdir():
        record = watchlist.load_record(str(kept)) or {}
        names += record.get("names", [])
    return sorted(names)


def test_a_steady_tree_is_answered_from_the_kept_list(board_dir: Path, tree: Path) -> None:
    tripwire.load(_call(board_dir, tree, "warm"))
    assert _kept_files(board_dir) == ["src/app.py", "src/auth/session.py"]
    where = _call(board_dir, tree, "call")
    (tree / "src/app.py").write_text("B = 2\n")
    assert _changed(where) == [("src/app.py", "modified", True)]
    assert (tree / "src/app.py").read_text() == "B = 1\n"


def test_a_file_added_to_a_held_directory_is_watched_by_the_next_call(
    board_dir: Path, tree: Path
) -> None:
    tripwire.load(_call(board_dir, tree, "warm"))
    (tree / "src/auth/token.py").write_text("T = 1\n")  # the holder's new file
    where = _call(board_dir, tree, "call")
    (tree / "src/auth/token.py").write_text("T = 2\n")
    assert _changed(where) == [("src/auth/token.py", "modified", True)]


def test_a_file_added_within_the_walks_timestamp_tick_is_not_missed(
    board_dir: Path, tree: Path
) -> None:
    """The directory was changed just before the walk: a file added in the same tick leaves
    its mtime as it was. Here the tick is simulated by putting the mtime back."""
    held = tree / "src/auth"
    (held / "old.py").write_text("O = 1\n")  # the directory is racily new now
    before_walk = held.stat().st_mtime_ns
    tripwire.load(_call(board_dir, tree, "warm"))
    (held / "token.py").write_text("T = 1\n")
    os.utime(held, ns=(before_walk, before_walk))  # the same tick: the mtime did not move
    where = _call(board_dir, tree, "call")
    (held / "token.py").write_text("T = 2\n")
    assert ("src/auth/token.py", "modified", True) in _changed(where)


def test_a_new_hold_is_watched_and_a_released_one_is_not(board_dir: Path, tree: Path) -> None:
    (tree / "docs").mkdir()
    (tree / "docs/guide.md").write_text("# guide\n")
    tripwire.load(_call(board_dir, tree, "warm"))
    reserve(board_dir, ["docs/guide.md"], "carol")
    where = _call(board_dir, tree, "call")
    (tree / "docs/guide.md").write_text("# mine\n")
    assert _changed(where) == [("docs/guide.md", "modified", True)]

    from coord.core.board import Board

    board = Board.open(board_dir)
    try:
        board.unreserve(["docs/guide.md"], agent="carol")
    finally:
        board.close()
    where = _call(board_dir, tree, "released")
    (tree / "docs/guide.md").write_text("# free now\n")
    assert _changed(where) == []


def test_the_holders_edit_between_calls_is_not_blamed_on_the_next_call(
    board_dir: Path, tree: Path
) -> None:
    tripwire.load(_call(board_dir, tree, "warm"))
    (tree / "src/auth/session.py").write_text("A = 2\n")  # alice's own work, between calls
    where = _call(board_dir, tree, "call")
    assert _changed(where) == []
    where = _call(board_dir, tree, "next")
    (tree / "src/auth/session.py").unlink()
    assert _changed(where) == [("src/auth/session.py", "deleted", True)]
    assert (tree / "src/auth/session.py").read_text() == "A = 2\n"  # alice's version


def test_a_held_literal_created_after_the_walk_is_watched(board_dir: Path, tree: Path) -> None:
    reserve(board_dir, ["src/new.py"], "alice")  # held, not created yet
    tripwire.load(_call(board_dir, tree, "warm"))
    (tree / "src/new.py").write_text("N = 1\n")
    _age(tree / "src")  # only the probe of the held path itself can tell
    where = _call(board_dir, tree, "call")
    (tree / "src/new.py").write_text("N = 2\n")
    assert _changed(where) == [("src/new.py", "modified", True)]
