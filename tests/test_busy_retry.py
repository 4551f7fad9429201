"""A board busy with another process's write (503 board_busy, nothing applied) is asked
again by the CLI after the daemon's Retry-After, a bounded number of times; it used to fail
at once. A real daemon, a real `coord` process, and a second process holding SQLite's write
lock, released when the CLI says it is waiting."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from acceptance.test_board_survival import _HOLD_WRITE_LOCK  # rolls back on a line in
from conftest import Daemon, run_cli
from coord.fast import board_files


def _hold_lock(daemon: Daemon) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_WRITE_LOCK, str(board_files.db_path(daemon.board_dir))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
    return holder


def _coord(daemon: Daemon, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "COORD_DIR": str(daemon.board_dir), "COORD_AGENT": "ann"}
    return subprocess.Popen(
        [sys.executable, "-m", "coord", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _end(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.communicate()  # closes its pipes


def _release(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    holder.stdin.write("\n")
    holder.stdin.flush()
    assert holder.wait(30) == 0  # rolled back: the lock is free


def test_the_cli_asks_a_busy_board_again_and_the_write_lands_once(daemon: Daemon) -> None:
    holder = _hold_lock(daemon)
    try:
        adding = _coord(daemon, "add", "written after the wait", "--json")
        assert adding.stderr is not None
        said = adding.stderr.readline()  # the first answer was busy: it says it waits
        assert "busy" in said and "asking again in 1 s" in said, said
        _release(holder)
        out, err = adding.communicate(timeout=60)
    finally:
        _end(holder)
    assert adding.returncode == 0, err
    assert json.loads(out)["title"] == "written after the wait"
    listed = json.loads(run_cli("ls", "--json", board_dir=daemon.board_dir).stdout)["items"]
    assert [i["title"] for i in listed] == ["written after the wait"]  # applied once


def test_a_board_busy_for_longer_fails_with_the_daemons_message(daemon: Daemon) -> None:
    holder = _hold_lock(daemon)
    try:
        adding = _coord(daemon, "add", "never written")
        out, err = adding.communicate(timeout=60)
    finally:
        _end(holder)
    assert adding.returncode == 1, (out, err)
    last = err.strip().splitlines()[-1]
    assert "another process holds its write lock; nothing was changed" in last
    assert "(asked 6 times over 5 s)" in last
    assert err.count("asking again") == 1  # said once, not on every try
    listed = json.loads(run_cli("ls", "--json", board_dir=daemon.board_dir).stdout)["items"]
    assert listed == []
