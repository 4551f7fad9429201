"""Everything coord keeps under ``.coord/`` is its owner's alone: directories 0700, files 0600,
whatever the umask; a board made before that is tightened when the daemon starts or `coord
init` runs. Item bodies, replies and check output are in the board, and the token opens them."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Daemon, init_board_dir, run_cli
from coord.fast import board_files, identity


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The umask most systems give a user: new files 0644, directories 0755."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def loose(board_dir: Path) -> list[str]:
    """What under ``board_dir`` (itself included) group or others may use, with its mode."""
    found = []
    for path in [board_dir, *board_dir.rglob("*")]:
        mode = path.lstat().st_mode
        if not stat.S_ISLNK(mode) and mode & 0o077:
            found.append(f"{path.relative_to(board_dir.parent)} {stat.S_IMODE(mode):o}")
    return found


def test_coord_init_makes_a_private_board(tmp_path: Path) -> None:
    board_dir = tmp_path / ".coord"

    made = run_cli("init", "--lease", "600", board_dir=board_dir)

    assert made.returncode == 0, made.stderr
    assert loose(board_dir) == []
    assert stat.S_IMODE(board_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((board_dir / "board.db").stat().st_mode) == 0o600


def test_every_file_the_cli_hooks_and_daemon_make_is_private(tmp_path: Path) -> None:
    board_dir = tmp_path / ".coord"
    assert run_cli("init", board_dir=board_dir).returncode == 0
    try:
        # the daemon starts on demand (daemon.json, daemon.log, daemon.lock, -wal, -shm); a
        # claim leaves claims/; a session start leaves sessions/
        for args in (("add", "one"), ("next",), ("reply", "1", "on it"), ("reserve", "a.py")):
            done = run_cli(*args, board_dir=board_dir, agent="w1", cwd=tmp_path)
            assert done.returncode == 0, (args, done.stderr)
        identity.remember(board_dir, "claude", "session-1")
        made = {p.name for p in board_dir.rglob("*")}
        assert {"board.db-wal", "daemon.json", "daemon.log", "w1.json", "sessions"} <= made
        assert loose(board_dir) == []
    finally:
        run_cli("stop", board_dir=board_dir)


def open_up(board_dir: Path) -> None:
    """A board as an older coord left it under umask 022."""
    for path in [board_dir, *board_dir.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def test_the_daemon_tightens_an_older_board_and_says_so(board_dir: Path) -> None:
    (board_dir / "claims").mkdir()
    (board_dir / "claims" / "w1.json").write_text(json.dumps({"1": 1}))
    open_up(board_dir)
    assert "board.db 644" in " ".join(loose(board_dir))

    daemon = Daemon(board_dir).start()
    try:
        assert daemon.request("GET", "/v1/items")[0] == 200
        assert loose(board_dir) == []
    finally:
        daemon.stop()
    said = daemon.log_path.read_text()
    assert "readable by its owner only" in said and "board.db" in said


def test_coord_init_again_tightens_an_older_board(tmp_path: Path) -> None:
    board_dir = init_board_dir(tmp_path)
    open_up(board_dir)

    again = run_cli("init", board_dir=board_dir)
    quiet = run_cli("init", "--json", board_dir=board_dir)

    assert again.returncode == 0, again.stderr
    assert loose(board_dir) == []
    assert "board.db" in again.stdout and "readable by its owner only" in again.stdout
    assert json.loads(quiet.stdout)["tightened"] == []  # nothing left to tighten


def test_tightening_leaves_symlinks_and_owner_bits_alone(tmp_path: Path) -> None:
    board_dir = init_board_dir(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("not the board's")
    outside.chmod(0o644)
    (board_dir / "link").symlink_to(outside)
    (board_dir / "read-only").write_text("x")
    (board_dir / "read-only").chmod(0o444)

    changed = board_files.tighten_modes(board_dir)

    assert changed == ["read-only"]
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644
    assert stat.S_IMODE((board_dir / "read-only").stat().st_mode) == 0o400
    assert board_files.tighten_modes(board_dir) == []
