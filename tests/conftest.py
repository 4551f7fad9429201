"""Shared fixtures: real board files in temporary directories, a real daemon process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from coord.core.board import Board
from coord.fast import board_files

SOAK = os.environ.get("COORD_SOAK") == "1"
# the PostgreSQL tier's fixtures (a fresh database per test, skipped without a server) and
# another local user for the tests of what one may take (tests/other_user.py); the
# in-process tier of `make test-fast` (tests/tiers.py); every SQLite connection a test opens
# closed by its end (tests/open_connections.py)
pytest_plugins = ["pg_support", "other_user", "tiers", "open_connections"]

# Hypothesis fails an example that takes longer than 200 ms by default: a time, which a
# loaded machine (CI's two cores, a neighbour's build) can break. Tests assert behaviour only.
hypothesis_settings.register_profile(
    "coord", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
hypothesis_settings.load_profile("coord")


class Clock:
    """A board clock the test moves by hand: leases run out when the test says so."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


def init_board_dir(root: Path, **config: Any) -> Path:
    """A fresh repository directory with an initialised ``.coord`` inside."""
    board_dir = root / ".coord"
    board_files.init_board_files(board_dir)
    if config:
        board_files.write_json_atomic(
            board_dir / "config.json", {**board_files.DEFAULT_CONFIG, **config}
        )
    Board.open(board_dir, create=True).close()
    return board_dir


@pytest.fixture
def board_dir(tmp_path: Path) -> Iterator[Path]:
    board = init_board_dir(tmp_path)
    yield board
    stop_leftover_daemon(board)


def stop_leftover_daemon(board: Path) -> None:
    """End a daemon the test started on demand (a CLI command, a SessionStart hook) and did
    not stop: it would outlive the test, serving a deleted temporary folder."""
    from coord.fast.processes import wait_for_daemon_exit

    if wait_for_daemon_exit(board, None, 0):
        return  # nobody holds the board's daemon lock: no daemon runs
    try:
        pid = int(json.loads(board_files.daemon_record_path(board).read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return
    if pid == os.getpid():  # a test's stand-in record (a daemon that never answers)
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    if not wait_for_daemon_exit(board, pid, 10):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture
def board(board_dir: Path) -> Iterator[Board]:
    b = Board.open(board_dir)
    yield b
    b.close()


@dataclass
class Daemon:
    """A `coord serve` process on 127.0.0.1, and a tiny JSON client for it."""

    board_dir: Path
    process: subprocess.Popen[bytes] | None = None
    url: str = ""
    token: str = ""
    log_path: Path = field(default_factory=Path)
    # run in the daemon's process before it starts (e.g. a lower open-file limit)
    preexec_fn: Callable[[], None] | None = None
    port: int = 0  # 0: any free port; a fixed one lets a restarted daemon keep its address

    def start(self, timeout: float = 20.0) -> Daemon:
        record = board_files.daemon_record_path(self.board_dir)
        record.unlink(missing_ok=True)
        self.log_path = self.board_dir / "daemon-test.log"
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "coord", "serve", "--port", str(self.port)],
            env={**os.environ, "COORD_DIR": str(self.board_dir)},
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            preexec_fn=self.preexec_fn,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"daemon exited: {self.log_path.read_text()}")
            try:
                data = json.loads(record.read_text())
                if data.get("pid") == self.process.pid:
                    self.url = data["url"]
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.02)
        else:
            raise RuntimeError("daemon did not start in time")
        self.token = board_files.read_token(self.board_dir)
        return self

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = "default",
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if token is not None:
            req.add_header("Authorization", f"Bearer {self.token if token == 'default' else token}")
        for key, value in (headers or {}).items():
            req.add_header(key, value)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            payload = err.read()
            try:
                return err.code, json.loads(payload)
            except ValueError:
                return err.code, payload.decode(errors="replace")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)

    def kill9(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(5)


@pytest.fixture
def daemon(board_dir: Path) -> Iterator[Daemon]:
    d = Daemon(board_dir).start()
    yield d
    d.stop()


def run_cli(
    *args: str,
    board_dir: Path,
    agent: str | None = None,
    input: str | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """The real `coord` command as a fresh process."""
    full_env = {**os.environ, "COORD_DIR": str(board_dir), **(env or {})}
    full_env.pop("COORD_AGENT", None)
    if agent is not None:
        full_env["COORD_AGENT"] = agent
    return subprocess.run(
        [sys.executable, "-m", "coord", *args],
        env=full_env,
        capture_output=True,
        text=True,
        input=input,
        timeout=60,
        cwd=cwd,
    )


def follow_log(board_dir: Path) -> subprocess.Popen[str]:
    """`coord log --follow --json` on the board, a process of its own (no COORD_AGENT)."""
    env = {**os.environ, "COORD_DIR": str(board_dir)}
    env.pop("COORD_AGENT", None)
    return subprocess.Popen(
        [sys.executable, "-m", "coord", "log", "--follow", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
