"""The board survives what happens around the daemon (issue 14: items 1, 6, 7 and the disk
part of 9): its file deleted or replaced, another process holding SQLite's write lock, a flood
of idle connections under a low open-file limit, a full disk, a board it may not open.

A real daemon process and real OS processes each time; ordering, never timing.
"""

from __future__ import annotations

import errno
import os
import resource
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Daemon, init_board_dir
from coord.fast import board_files


def _add(daemon: Daemon, title: str = "a task", body: str = "") -> tuple[int, dict]:
    return daemon.request("POST", "/v1/items", {"agent": "alice", "title": title, "body": body})


# --- 1. the board file deleted or replaced under a running daemon ----------------------------


def test_a_deleted_board_refuses_writes_and_reads_and_health_says_why(daemon: Daemon) -> None:
    assert _add(daemon)[0] == 201
    db = board_files.db_path(daemon.board_dir)
    db.unlink()

    status, body = _add(daemon, "would be lost at the next start")
    assert status == 503 and body["error"] == "board_gone"
    assert str(db) in body["message"] and "deleted" in body["message"]
    assert "coord serve" in body["message"] and "coord init" in body["message"]

    status, body = daemon.request("POST", "/v1/claim-next", {"agent": "bob"})  # the hot path
    assert status == 503 and body["error"] == "board_gone"
    status, body = daemon.request("GET", "/v1/items")
    assert status == 503 and body["error"] == "board_gone"

    status, body = daemon.request("GET", "/v1/health")
    assert status == 503
    assert body["ok"] is False and body["error"] == "board_gone" and str(db) in body["message"]


def test_a_replaced_board_is_refused(daemon: Daemon, tmp_path: Path) -> None:
    other = init_board_dir(tmp_path / "other")
    os.replace(board_files.db_path(other), board_files.db_path(daemon.board_dir))

    status, body = _add(daemon)
    assert status == 503 and body["error"] == "board_gone" and "replaced" in body["message"]
    status, body = daemon.request("GET", "/v1/health")
    assert status == 503 and body["ok"] is False


# --- 6. another process holds the write lock -------------------------------------------------

_HOLD_WRITE_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


def _retry_after(daemon: Daemon, path: str, body: bytes) -> tuple[int, str | None]:
    """The status and the Retry-After header of a POST."""
    request = urllib.request.Request(daemon.url + path, data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", f"Bearer {daemon.token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.headers.get("Retry-After")
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Retry-After")


def test_a_write_lock_held_elsewhere_is_answered_busy_and_health_still_answers(
    daemon: Daemon,
) -> None:
    assert _add(daemon)[0] == 201
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_WRITE_LOCK, str(board_files.db_path(daemon.board_dir))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "locked"
        # while the other process still holds the lock:
        status, body = daemon.request("GET", "/v1/health")
        assert status == 200 and body["ok"] is True and "another process" in body["busy"]
        status, body = _add(daemon, "waits for the lock")
        assert status == 503 and body["error"] == "board_busy" and body["retry_after"] == 1
        assert _retry_after(daemon, "/v1/items", b'{"agent": "a", "title": "t"}') == (503, "1")
        # the hot path too
        assert _retry_after(daemon, "/v1/claim-next", b'{"agent": "bob"}') == (503, "1")
        status, body = daemon.request("GET", "/v1/items")
        assert status == 200 and len(body["items"]) == 1  # reads go on
        assert holder.poll() is None  # the lock was held all along
    finally:
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(10)
        holder.stdout.close()
    assert _add(daemon, "after the release")[0] == 201
    status, body = daemon.request("GET", "/v1/health")
    assert status == 200 and "busy" not in body


# --- 7. idle connections under a low open-file limit -----------------------------------------

OPEN_FILE_LIMIT = 256


def _low_open_file_limit() -> None:  # in the daemon's process, before exec
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILE_LIMIT, OPEN_FILE_LIMIT))


def test_idle_connections_past_the_open_file_limit_leave_room_for_a_claim(
    board_dir: Path,
) -> None:
    daemon = Daemon(board_dir, preexec_fn=_low_open_file_limit).start()
    idle: list[socket.socket] = []
    try:
        assert _add(daemon)[0] == 201
        host, port = daemon.url.removeprefix("http://").rsplit(":", 1)
        for _ in range(OPEN_FILE_LIMIT + 64):  # more than the daemon may have open at all
            idle.append(socket.create_connection((host, int(port)), timeout=10))
        status, body = daemon.request("POST", "/v1/claim-next", {"agent": "bob"})
        assert status == 200 and body["item"]["id"] == 1
        assert daemon.request("GET", "/v1/health")[0] == 200
    finally:
        for sock in idle:
            sock.close()
        daemon.stop()


# --- 9. a full disk, and a board this process may not open ------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB tmpfs: a real full disk (ENOSPC). Mounting needs root; skipped without."""
    where = tmp_path / "disk"
    where.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a small tmpfs needs root to mount")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _fill(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as err:
        assert err.errno == errno.ENOSPC
    finally:
        os.close(fd)


def test_a_full_disk_is_507_health_says_so_and_a_killed_daemon_starts_again(
    small_disk: Path,
) -> None:
    board_dir = init_board_dir(small_disk / "repo")
    daemon = Daemon(board_dir).start()
    try:
        assert _add(daemon, "before")[0] == 201
        filler = small_disk / "filler"
        _fill(filler)
        # the WAL's spare pages take a few writes; then the disk is full
        acknowledged, refused = 1, None
        for _ in range(100):
            status, body = _add(daemon, "on a full disk", "x" * 3000)
            if status != 201:
                refused = (status, body)
                break
            acknowledged += 1
        assert refused is not None
        status, body = refused
        assert status == 507 and body["error"] == "disk_full"
        assert "the disk is full" in body["message"]
        status, body = daemon.request("GET", "/v1/health")
        assert status == 507 and body["ok"] is False and body["error"] == "disk_full"

        daemon.kill9()
        daemon.start()  # on the still-full disk
        status, body = daemon.request("GET", "/v1/items?limit=1000")
        assert status == 200 and len(body["items"]) == acknowledged
        assert daemon.request("GET", "/v1/health")[0] == 507

        filler.unlink()
        assert _add(daemon, "after freeing space")[0] == 201
        status, body = daemon.request("GET", "/v1/health")
        assert status == 200 and body["ok"] is True
    finally:
        daemon.stop()


def test_a_board_it_may_not_open_is_one_line_naming_the_file_and_the_fix(
    board_dir: Path,
) -> None:
    db = board_files.db_path(board_dir)
    db.chmod(0)
    command = [sys.executable, "-m", "coord", "serve", "--port", "0"]
    if os.geteuid() == 0:  # root reads a mode-000 file: drop the capabilities that let it
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: a mode-000 file stays readable")
        command = [setpriv, "--bounding-set=-dac_override,-dac_read_search", *command]
    done = subprocess.run(
        command,
        env={**os.environ, "COORD_DIR": str(board_dir)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert str(db) in lines[0] and "permission denied" in lines[0] and "chmod" in lines[0]
