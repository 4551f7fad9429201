"""Daemons nobody can see go away (issue 15 item 14): one the CLI started on demand exits
once idle or when its board is deleted; one started by hand never idles out."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from conftest import Daemon, init_board_dir, run_cli
from coord.fast import board_files
from coord.fast.processes import alive


def _pid(board_dir: Path) -> int:
    return int(json.loads(board_files.daemon_record_path(board_dir).read_text())["pid"])


def _gone(pid: int, within: float = 60) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.2)
    return False


def test_a_daemon_started_on_demand_exits_once_idle(tmp_path: Path) -> None:
    board_dir = init_board_dir(tmp_path, idle_exit_seconds=2)
    assert run_cli("add", "x", board_dir=board_dir, agent="ann").returncode == 0
    pid = _pid(board_dir)
    assert _gone(pid), "the on-demand daemon did not exit once idle"
    assert "idle for 2 s" in (board_dir / "daemon.log").read_text()
    assert run_cli("ls", board_dir=board_dir).returncode == 0  # the next command starts one


def test_an_open_long_poll_keeps_it_and_serve_by_hand_never_idles(tmp_path: Path) -> None:
    board_dir = init_board_dir(tmp_path, idle_exit_seconds=1)
    assert run_cli("add", "x", board_dir=board_dir, agent="ann").returncode == 0
    pid = _pid(board_dir)
    env = {**os.environ, "COORD_DIR": str(board_dir)}
    with subprocess.Popen(
        [sys.executable, "-m", "coord", "log", "--follow"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ) as follow:
        time.sleep(4)  # four idle bounds: the open long poll is activity
        still = alive(pid)
        follow.terminate()
    assert still, "the daemon exited under an open long poll"
    assert _gone(pid)
    by_hand = Daemon(board_dir).start()
    try:
        time.sleep(3)
        assert by_hand.process is not None and by_hand.process.poll() is None
    finally:
        by_hand.stop()


def test_any_daemon_exits_when_its_board_is_deleted(tmp_path: Path) -> None:
    board_dir = init_board_dir(tmp_path)
    assert run_cli("add", "x", board_dir=board_dir, agent="ann").returncode == 0
    pid = _pid(board_dir)
    shutil.rmtree(board_dir)
    assert _gone(pid), "the daemon outlived its board"
