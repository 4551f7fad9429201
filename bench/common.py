"""Shared pieces of the benchmark: temp boards, server processes, cleanup, small statistics.

Everything started here is registered in ``CLEANUP`` and torn down by ``cleanup()``, which
``run.py`` calls in a ``finally`` (so Ctrl-C and SIGTERM leave no daemon or temp dir behind).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from coord.core.board import Board
from coord.fast import board_files

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
SEED_BATCH = 10_000  # coord.model.MAX_IMPORT
_CLK_TCK = os.sysconf("SC_CLK_TCK")


class Cleanup:
    def __init__(self) -> None:
        self.processes: list[subprocess.Popen[bytes]] = []
        self.dirs: list[Path] = []

    def run(self) -> None:
        for proc in reversed(self.processes):
            stop_process(proc)
        self.processes.clear()
        for path in reversed(self.dirs):
            shutil.rmtree(path, ignore_errors=True)
        self.dirs.clear()


CLEANUP = Cleanup()


def temp_dir(name: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix=f"coord-bench-{name}-"))
    CLEANUP.dirs.append(path)
    return path


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def log(text: str) -> None:
    print(f"  · {text}", file=sys.stderr, flush=True)


# --- boards ---------------------------------------------------------------------------------


def new_board_dir(name: str) -> Path:
    """An initialised ``.coord`` (token, config, empty database) in a fresh temp dir."""
    board_dir = temp_dir(name) / ".coord"
    board_files.init_board_files(board_dir)
    Board.open(board_dir, create=True).close()
    return board_dir


def seed(board_dir: Path, count: int) -> float:
    """Add ``count`` pending items through the library, 10,000 per transaction. Returns s."""
    started = time.perf_counter()
    board = Board.open(board_dir)
    try:
        for first in range(0, count, SEED_BATCH):
            batch = [
                {"title": f"bench item {n}", "priority": n % 5, "labels": ["bench"]}
                for n in range(first, min(first + SEED_BATCH, count))
            ]
            board.import_items(batch, created_by="bench")
    finally:
        board.close()  # the last connection to close checkpoints the WAL into board.db
    return time.perf_counter() - started


def copy_board(source: Path, name: str) -> Path:
    """A new board dir (own token) holding a copy of ``source``'s database."""
    board_dir = temp_dir(name) / ".coord"
    board_files.init_board_files(board_dir)
    src = sqlite3.connect(board_files.db_path(source))
    dst = sqlite3.connect(board_files.db_path(board_dir))
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()
    return board_dir


def sql(db: Path, *statements: str) -> None:
    """Run statements on a board directly (seeding and resets only, never while measuring)."""
    conn = sqlite3.connect(db, isolation_level=None, timeout=30)
    try:
        conn.execute("PRAGMA busy_timeout = 30000")
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


def mark_done_except_every(db: Path, keep_every: int) -> int:
    """Close all items but every ``keep_every``-th one; returns how many stay pending."""
    sql(
        db,
        "BEGIN IMMEDIATE",
        f"UPDATE items SET state = 'done', closed_at = updated_at WHERE id % {keep_every} != 0",
        "COMMIT",
    )
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM items WHERE state='pending'").fetchone()[0])
    finally:
        conn.close()


def reset_claims(db: Path) -> None:
    """Put every claimed item back to pending, so each round starts from the same board."""
    sql(
        db,
        "BEGIN IMMEDIATE",
        "UPDATE items SET state = 'pending', claimed_by = NULL, lease_expires_at = NULL "
        "WHERE state = 'claimed'",
        "COMMIT",
        "PRAGMA wal_checkpoint(TRUNCATE)",
    )


# --- servers --------------------------------------------------------------------------------


class Server:
    def __init__(self, name: str, proc: subprocess.Popen[bytes], port: int, token: str) -> None:
        self.name, self.proc, self.port, self.token = name, proc, port, token

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process so far (from /proc)."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK

    def stop(self) -> None:
        stop_process(self.proc)


def start_daemon(
    board_dir: Path, timeout: float = 30.0, preexec_fn: Callable[[], None] | None = None
) -> Server:
    """`python -m coord serve --port 0` for ``board_dir``, like tests/conftest.py's Daemon.
    ``preexec_fn`` runs in the daemon's process before it starts (a lower open-file limit)."""
    record = board_files.daemon_record_path(board_dir)
    record.unlink(missing_ok=True)
    logfile = (board_dir / "daemon-bench.log").open("ab")
    proc = subprocess.Popen(
        [PYTHON, "-m", "coord", "serve", "--port", "0"],
        env={**os.environ, "COORD_DIR": str(board_dir)},
        stdout=logfile,
        stderr=logfile,
        stdin=subprocess.DEVNULL,
        preexec_fn=preexec_fn,
    )
    logfile.close()
    CLEANUP.processes.append(proc)

    def ready() -> int | None:
        data = json.loads(record.read_text())
        return int(data["port"]) if data.get("pid") == proc.pid else None

    port = _wait_for(proc, ready, timeout, board_dir / "daemon-bench.log")
    return Server("coord", proc, port, board_files.read_token(board_dir))


def start_reference(db: Path, timeout: float = 30.0) -> Server:
    """bench/refserver.py: a bare ASGI app under the same uvicorn settings as the daemon."""
    port_file = db.with_name("refserver.port")
    log_path = db.with_name("refserver.log")
    logfile = log_path.open("ab")
    proc = subprocess.Popen(
        [PYTHON, str(HERE / "refserver.py"), str(db), str(port_file)],
        stdout=logfile,
        stderr=logfile,
        stdin=subprocess.DEVNULL,
    )
    logfile.close()
    CLEANUP.processes.append(proc)
    port = _wait_for(proc, lambda: int(port_file.read_text()), timeout, log_path)
    return Server("reference", proc, port, "")


def _wait_for(
    proc: subprocess.Popen[bytes], probe: Callable[[], int | None], timeout: float, log_path: Path
) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {log_path.read_text(errors='replace')}")
        try:
            port = probe()
            if port:
                return port
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    raise RuntimeError(f"server did not start within {timeout:g}s; see {log_path}")


# --- statistics -----------------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted sequence (q in 0..100)."""
    if not sorted_values:
        return float("nan")
    rank = min(len(sorted_values), max(1, math.ceil(q / 100 * len(sorted_values))))
    return sorted_values[rank - 1]


def print_beside_python(times: dict[str, list[float]], base: float, width: int = 46) -> None:
    """One line per command: its median and its ratio to ``python -c pass`` (``base``)."""
    for name, values in times.items():
        ratio = median(values) / base
        print(f"   {name:<{width}} {median(values) * 1000:7.1f} ms  ({ratio:.2f}x python -c pass)")


def median(values: Sequence[float]) -> float:
    return percentile(sorted(values), 50)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"
