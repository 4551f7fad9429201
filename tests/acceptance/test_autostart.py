"""8 CLI commands start at once with no daemon: all succeed, and one daemon ends up serving."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conftest import run_cli

CLIS = 8


def serve_pids(board_dir: Path) -> list[int]:
    """Live `coord serve` processes for this board (Linux: read from /proc)."""
    wanted = f"COORD_DIR={board_dir.resolve()}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:  # gone already, or not ours
            continue
        if argv[1:4] == [b"-m", b"coord", b"serve"] and wanted in environ:
            found.append(int(entry.name))
    return found


def wait_until(condition, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_simultaneous_clis_autostart_exactly_one_daemon(board_dir):
    board_dir = board_dir.resolve()
    assert serve_pids(board_dir) == []
    start = threading.Barrier(CLIS)

    def ls(_: int):
        start.wait(30)
        return run_cli("ls", "--json", board_dir=board_dir)

    try:
        with ThreadPoolExecutor(CLIS) as pool:
            runs = list(pool.map(ls, range(CLIS)))
        for run in runs:
            assert run.returncode == 0, (run.stdout, run.stderr)
            assert json.loads(run.stdout) == {"items": [], "next": None}

        pid = json.loads((board_dir / "daemon.json").read_text())["pid"]
        # Losers of the start race exit at once; give them a bounded moment to be gone.
        wait_until(lambda: serve_pids(board_dir) == [pid])
        assert serve_pids(board_dir) == [pid]
        log = (board_dir / "daemon.log").read_text().splitlines()
        serving = [line for line in log if line.startswith("coord daemon serving")]
        assert serving == [line for line in serving if f"(pid {pid})" in line]
        assert len(serving) == 1, log
        others = [line for line in log if line not in serving]
        assert all("already serves this board" in line for line in others), log
    finally:
        stop = run_cli("stop", board_dir=board_dir)
        if not wait_until(lambda: serve_pids(board_dir) == []):
            for leftover in serve_pids(board_dir):
                os.kill(leftover, signal.SIGKILL)
    assert stop.returncode == 0, stop.stderr
    assert "stopped the daemon" in stop.stdout


def test_an_on_demand_daemon_listens_on_its_last_port_again(board_dir):
    """The board's address stays the same across an on-demand restart: a daemon started
    again on demand takes the same port while it is free, and any other when not."""
    import socket

    board_dir = board_dir.resolve()

    def served_port() -> int:
        assert run_cli("ls", board_dir=board_dir).returncode == 0
        return json.loads((board_dir / "daemon.json").read_text())["port"]

    try:
        first = served_port()
        assert run_cli("stop", board_dir=board_dir).returncode == 0
        assert served_port() == first
        assert run_cli("stop", board_dir=board_dir).returncode == 0
        with socket.socket() as squatter:  # someone else took it meanwhile
            squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            squatter.bind(("127.0.0.1", first))
            squatter.listen()
            assert served_port() != first
    finally:
        run_cli("stop", board_dir=board_dir)
        wait_until(lambda: serve_pids(board_dir) == [])
