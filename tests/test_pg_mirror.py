"""Issue 16 items 2 and 3: NOTIFY on commit, and the guard's mirror of a PostgreSQL board.

A write that appended events notifies its last sequence number when it commits; the
follower (``coord.server.follower``, here in the test's process, as the daemon runs it)
rewrites ``.coord/mirror.db`` on each notification; ``coord guard`` and the edit hooks, as
fresh processes, judge that mirror at the database's clock and refuse when it cannot be
believed. Real PostgreSQL (a fresh database per test), real files, real subprocesses.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from coord.core.board import Board
from coord.fast import board_files, fsfold
from coord.server import follower as follower_module
from coord.server.follower import Follower
from coord.storage.postgres import NOTIFY_CHANNEL
from pg_support import open_storage
from test_guard_cli import guard

pytestmark = pytest.mark.postgres


def team_board_dir(root: Path, dsn: str) -> Path:
    """A ``.coord/`` of a repository whose board lives in the database ``dsn``."""
    board_dir = root / "repo" / ".coord"
    board_dir.mkdir(parents=True)
    board_files.init_board_files(board_dir)
    config = json.loads((board_dir / "config.json").read_text())
    (board_dir / "config.json").write_text(json.dumps({**config, "database": dsn}))
    fsfold.record(board_dir)
    return board_dir


def eventually(condition: Callable[[], Any], what: str, within: float = 20.0) -> Any:
    """Wait for ``condition`` (a behaviour, not a timing: the bound only ends a broken run)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


def mirrored(board_dir: Path) -> list[tuple[str, str]]:
    with contextlib.closing(sqlite3.connect(board_dir / "mirror.db")) as conn, conn:
        return conn.execute("SELECT agent, pattern FROM reservations ORDER BY id").fetchall()


@pytest.fixture
def team(pg_dsn: str, tmp_path: Path) -> Iterator[tuple[Path, Board]]:
    """A board directory on a fresh database, and a board opened on it elsewhere (another
    daemon's writes, as far as the follower can tell)."""
    board_dir = team_board_dir(tmp_path, pg_dsn)
    board = Board(open_storage(pg_dsn), repo_root=board_dir.parent)
    yield board_dir, board
    board.close()


@pytest.fixture
def following(
    team: tuple[Path, Board], pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, Board, Follower, list[int]]]:
    """The follower of ``team``'s board, which refreshes the mirror only when notified:
    the periodic refresh pushed beyond any test's length."""
    monkeypatch.setattr(follower_module, "REFRESH_SECONDS", 3600.0)
    board_dir, board = team
    wakes: list[int] = []
    follower = Follower(pg_dsn, str(board_dir), lambda: wakes.append(1)).start()
    eventually(lambda: follower.listening and (board_dir / "mirror.db").exists(), "listening")
    yield board_dir, board, follower, wakes
    follower.stop()


# --- NOTIFY -----------------------------------------------------------------------------------


def test_a_write_notifies_its_last_sequence_number_once_on_commit(pg_dsn: str) -> None:
    board = Board(open_storage(pg_dsn))
    with psycopg.connect(pg_dsn, autocommit=True) as listener:
        listener.execute(f"LISTEN {NOTIFY_CHANNEL}")
        item = board.add("one event", created_by="lead")
        board.claim(item.id, agent="a")
        board.list_items()  # a read notifies nothing
        heard = [n.payload for n in listener.notifies(timeout=10, stop_after=2)]
        assert heard == ["1", "2"]  # one per write transaction, its last sequence number
        # an event appended, then rolled back: silence
        with pytest.raises(RuntimeError), board.storage.write() as tx:
            tx.append_event(at=0.0, agent="a", item_id=None, kind="reply", details={})
            raise RuntimeError("rolled back")
        assert [n.payload for n in listener.notifies(timeout=0.5)] == []
    board.close()


# --- the mirror ---------------------------------------------------------------------------------


def test_the_mirror_follows_a_reservation_made_elsewhere_and_its_release(
    following: tuple[Path, Board, Follower, list[int]],
) -> None:
    board_dir, board, _follower, wakes = following
    repo = board_dir.parent
    assert guard(board_dir, "src/a.py", agent="bob", cwd=repo).returncode == 0
    board.reserve(["src/a.py"], agent="alice", lease_seconds=600)
    # refreshed by the NOTIFY alone: the periodic refresh is an hour away
    eventually(lambda: mirrored(board_dir) == [("alice", "src/a.py")], "reserved in the mirror")
    assert wakes, "the follower woke the event readers"
    refused = guard(board_dir, "src/a.py", agent="bob", cwd=repo)
    assert refused.returncode == 2, refused.stderr
    assert "held by alice" in refused.stderr
    assert guard(board_dir, "src/a.py", agent="alice", cwd=repo).returncode == 0
    assert guard(board_dir, "src/b.py", agent="bob", cwd=repo).returncode == 0
    board.unreserve(["src/a.py"], agent="alice")
    eventually(lambda: mirrored(board_dir) == [], "released in the mirror")
    assert guard(board_dir, "src/a.py", agent="bob", cwd=repo).returncode == 0
    assert os.stat(board_dir / "mirror.db").st_mode & 0o777 == 0o600


def test_the_mirror_is_judged_on_the_database_clock_not_this_machines(
    team: tuple[Path, Board], pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One machine whose clock is ten minutes off: its daemon stamps the mirror and its
    guard reads it on that clock. Judged on it, a lease with a minute left would have ended
    nine minutes ago (clock fast), and one that just ended would run ten minutes more (slow);
    judged on the database's clock, as it must be, the first holds and the second is over."""
    board_dir, board = team
    repo = board_dir.parent
    board.reserve(["src/a.py"], agent="alice", lease_seconds=60)
    board.reserve(["src/b.py"], agent="carol", lease_seconds=1)
    for offset in (600.0, -600.0):
        refresh_on_a_clock_off_by(offset, Follower(pg_dsn, str(board_dir), lambda: None))
        refused = guard_on_a_clock_off_by(offset, board_dir, "src/a.py", "bob", repo)
        assert refused.returncode == 2, refused.stderr
        assert "held by alice" in refused.stderr
    # carol's second ends on the database's clock; the mirror was taken before it did
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        query = "SELECT expires_at FROM reservations WHERE agent = 'carol'"
        (expires_at,) = conn.execute(query).fetchone()  # type: ignore[misc]
        with contextlib.closing(sqlite3.connect(board_dir / "mirror.db")) as mirror_db, mirror_db:
            assert mirror_db.execute("SELECT 1 FROM reservations WHERE agent = 'carol'").fetchone()
        eventually(
            lambda: conn.execute(
                "SELECT extract(epoch FROM clock_timestamp()) > %s", (expires_at + 0.2,)
            ).fetchone()[0],
            "carol's lease ended on the database's clock",
        )
    allowed = guard_on_a_clock_off_by(-600.0, board_dir, "src/b.py", "bob", repo)
    assert allowed.returncode == 0, allowed.stderr


def refresh_on_a_clock_off_by(offset: float, follower: Follower) -> None:
    """The mirror written by a daemon whose clock is ``offset`` seconds off."""
    real = time.time
    clock = type("Clock", (), {"time": staticmethod(lambda: real() + offset)})
    original = follower_module.time
    follower_module.time = clock  # type: ignore[assignment]
    try:
        follower.refresh()
    finally:
        follower_module.time = original
        follower.stop()


def guard_on_a_clock_off_by(
    offset: float, board_dir: Path, path: str, agent: str, repo: Path
) -> subprocess.CompletedProcess[str]:
    """``coord guard`` as a fresh process whose clock is ``offset`` seconds off."""
    program = (
        "import sys, time\n"
        "real = time.time\n"
        f"time.time = lambda: real() + {offset!r}\n"
        "from coord.cli.entry import main\n"
        "raise SystemExit(main())\n"
    )
    env = {**os.environ, "COORD_DIR": str(board_dir), "COORD_AGENT": agent}
    return subprocess.run(
        [sys.executable, "-c", program, "guard", path],
        env=env,
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_mirror_says_whose_worktree_a_path_is_in(
    following: tuple[Path, Board, Follower, list[int]],
) -> None:
    """Issue 24 item 9 on a team board: the guard refuses bob's write into alice's coord
    worktree and lets alice write there, from the claimed worktree items the mirror holds."""
    from coord.landing import worktrees
    from coord.model import WorktreeSpec

    board_dir, board, _follower, _wakes = following
    repo = board_dir.parent
    who = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q", "-b", "main"], [*who, "commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    base = subprocess.run(
        ["git", "rev-parse", "main"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()
    item = board.add("alice's", created_by="lead").id
    spec = WorktreeSpec(base_commit=base, path_root=str(repo / ".worktrees"))
    claim = board.landing.claim(item, agent="alice", worktree=spec)
    got = board.get(item)
    assert got.branch is not None
    made = worktrees.create(repo, got.branch, base, item=item, token=claim.token)

    def items() -> list[tuple[Any, ...]]:
        with contextlib.closing(sqlite3.connect(board_dir / "mirror.db")) as conn, conn:
            return conn.execute("SELECT id, claimed_by FROM items").fetchall()

    eventually(lambda: items() == [(item, "alice")], "the claimed worktree item in the mirror")
    refused = guard(board_dir, str(made.path / "a.py"), agent="bob", cwd=repo)
    assert refused.returncode == 2, refused.stderr
    assert f"alice's worktree {made.path}" in refused.stderr
    assert guard(board_dir, "a.py", agent="alice", cwd=made.path).returncode == 0
    assert guard(board_dir, "a.py", agent="bob", cwd=repo).returncode == 0  # the main tree
