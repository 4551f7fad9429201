"""`kill PID` (SIGTERM, what a service manager sends) stops the daemon cleanly.

uvicorn shuts down gracefully on SIGTERM and then raises the signal again with the handler it
found; with Python's default one the process ended there, before `coord serve` removed its
daemon.json and closed the board.
"""

from __future__ import annotations

from pathlib import Path

from conftest import Daemon
from coord.fast import board_files


def test_sigterm_stops_the_daemon_cleanly_and_a_new_one_starts(board_dir: Path) -> None:
    daemon = Daemon(board_dir).start()
    status, created = daemon.request("POST", "/v1/items", {"agent": "h", "title": "kept"})
    assert status == 201
    assert board_files.daemon_record_path(board_dir).exists()
    assert daemon.process is not None
    daemon.stop()  # SIGTERM
    assert daemon.process.returncode == 0
    assert not board_files.daemon_record_path(board_dir).exists()
    # the board was closed: its last connection copied the WAL back and removed it
    assert not Path(f"{board_files.db_path(board_dir)}-wal").exists()

    again = Daemon(board_dir).start()
    try:
        status, shown = again.request("GET", f"/v1/items/{created['id']}")
        assert (status, shown["title"]) == (200, "kept")
    finally:
        again.stop()


def test_coord_stop_returns_once_the_daemon_is_gone_so_serve_can_follow(board_dir: Path) -> None:
    import fcntl
    import json
    import os

    from conftest import run_cli
    from coord.fast.processes import _ended, alive

    for _round in range(3):  # "coord stop; coord serve" failed 3 of 3
        added = run_cli("add", "keep me", board_dir=board_dir)  # starts a daemon
        assert added.returncode == 0, added.stderr
        pid = json.loads(board_files.daemon_record_path(board_dir).read_text())["pid"]
        stopped = run_cli("stop", board_dir=board_dir)
        assert stopped.returncode == 0, stopped.stderr
        # the moment `coord stop` returns, the daemon has let go of the board
        fd = os.open(board_dir / "daemon.lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises while a daemon holds it
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
        assert not alive(pid) or _ended(pid)  # exited (a zombie until its reaper collects it)
        assert not board_files.daemon_record_path(board_dir).exists()
        served = Daemon(board_dir).start()  # `coord serve` right after: no "already runs"
        served.stop()


def test_sigterm_and_ctrl_c_both_say_the_daemon_stopped(board_dir: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    from coord.fast.processes import wait_for_daemon_exit

    for signum in (signal.SIGTERM, signal.SIGINT):
        record = board_files.daemon_record_path(board_dir)
        served = subprocess.Popen(
            [sys.executable, "-m", "coord", "serve"],
            env={**os.environ, "COORD_DIR": str(board_dir)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        while not record.exists():  # its record is written once it listens
            assert served.poll() is None, served.communicate()
        served.send_signal(signum)
        out, err = served.communicate(timeout=30)
        assert served.returncode == 0, (signum, err)
        assert out.strip() == "daemon stopped", (signum, out, err)
        assert wait_for_daemon_exit(board_dir, None, 10)


def test_coord_stop_is_done_when_its_daemon_ended_though_a_new_one_took_the_lock(
    board_dir: Path,
) -> None:
    """A `coord log --follow` (or any agent's command) starts a new daemon the moment the old
    one lets go of the board: `coord stop` waited for a free lock that never came and said
    after 30 s that the old daemon "still runs; end it with `kill PID`", a PID long gone.
    Here a process that takes the daemon's lock as soon as it is free stands in for the new
    daemon."""
    import json
    import subprocess
    import sys

    from conftest import run_cli
    from coord.fast.processes import _ended, alive

    added = run_cli("add", "keep me", board_dir=board_dir)  # starts a daemon
    assert added.returncode == 0, added.stderr
    pid = json.loads(board_files.daemon_record_path(board_dir).read_text())["pid"]
    taker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            f"fd = os.open({str(board_dir / 'daemon.lock')!r}, os.O_RDWR)\n"
            "print('waiting', flush=True)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('took it', flush=True)\n"
            "time.sleep(120)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert taker.stdout is not None and taker.stdout.readline() == "waiting\n"
        stopped = run_cli("stop", board_dir=board_dir)
        assert stopped.returncode == 0, stopped.stderr
        assert "still runs" not in stopped.stderr
        assert not alive(pid) or _ended(pid)  # the daemon it stopped is gone
        assert taker.stdout.readline() == "took it\n"  # the lock went on to the next holder
    finally:
        taker.kill()
        taker.communicate()
