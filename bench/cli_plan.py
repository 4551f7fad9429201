"""The CLI's round trip as a fresh process, and the query plans of claim-next."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

from common import (
    PYTHON,
    log,
    median,
    new_board_dir,
    print_beside_python,
    seed,
    start_daemon,
    temp_dir,
    verdict,
)
from coord import model
from coord.fast import board_files
from coord.storage.sqlite_items import _claim_filters, _take_first_pending_sql
from coord.storage.sqlite_tx import SQLiteTx
from refserver import CLAIM_SQL

# --- 3. CLI round trip ------------------------------------------------------------------------


def bench_cli(runs: int, importtime: bool) -> None:
    board_dir = new_board_dir("cli")
    seed(board_dir, 4 * runs + 100)
    daemon = start_daemon(board_dir)
    env = {**os.environ, "COORD_DIR": str(board_dir), "COORD_AGENT": "bench-cli"}
    # Compiled bytecode as an installed package has it, kept in a temp dir (never in src/):
    # with PYTHONDONTWRITEBYTECODE, a source file edited since its .pyc is recompiled per run.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(temp_dir("pycache"))
    script = Path(PYTHON).with_name("coord")
    commands = {
        "python -c pass": [PYTHON, "-c", "pass"],
        "python -m coord next --json": [PYTHON, "-m", "coord", "next", "--json"],
    }
    if script.exists():
        commands[f"{script} next --json"] = [str(script), "next", "--json"]
    times: dict[str, list[float]] = {name: [] for name in commands}
    log(f"CLI: {runs} runs of each command, interleaved, after 3 warm-up runs")
    for n in range(runs + 3):
        for name, argv in commands.items():
            took = _timed(argv, env, check_json=name != "python -c pass")
            if n >= 3:
                times[name].append(took)

    base = median(times["python -c pass"])
    print(
        f"\n== 3. CLI round trip: fresh process to answer, median of {runs} "
        "(daemon up, COORD_DIR and COORD_AGENT set, bytecode cached)"
    )
    print_beside_python(times, base, 55)
    ratio = median(times["python -m coord next --json"]) / base
    print(
        f"   target: python -m coord next --json <= 3x python -c pass ... {ratio:.2f}x  "
        f"{verdict(ratio <= 3)}"
    )
    if importtime or ratio > 3:
        _print_importtime(env)  # these runs claim items too: the daemon must still be up
    daemon.stop()
    _stop_autostarted(board_dir, daemon.proc.pid)


def _stop_autostarted(board_dir: Path, ours: int) -> None:
    """Had our daemon died, a CLI run would have started another one (start_new_session)."""
    from coord.server.daemon import read_record

    pid = (read_record(board_dir) or {}).get("pid")
    if isinstance(pid, int) and pid != ours:
        log(f"stopping daemon {pid}, autostarted by a CLI run in the bench's temp board")
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


def _timed(argv: list[str], env: dict[str, str], check_json: bool) -> float:
    began = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, timeout=60)
    took = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"{argv} exited {done.returncode}: {done.stdout!r} {done.stderr!r}")
    if check_json and "token" not in json.loads(done.stdout):
        raise RuntimeError(f"unexpected answer from {argv}: {done.stdout!r}")
    return took


def _print_importtime(
    env: dict[str, str], args: tuple[str, ...] = ("next", "--json"), cwd: Path | None = None
) -> None:
    # The quietest of 5 runs of each: one run on a busy machine can be off by 2x.
    rows = min(
        (
            _importtime([PYTHON, "-X", "importtime", "-m", "coord", *args], env, cwd)
            for _ in range(5)
        ),
        key=lambda found: sum(r[0] for r in found),
    )
    bare = min(
        (_importtime([PYTHON, "-X", "importtime", "-c", "pass"], env, cwd) for _ in range(5)),
        key=lambda found: sum(r[0] for r in found),
    )
    total, bare_total = sum(r[0] for r in rows), sum(r[0] for r in bare)
    print(
        f"   imports (-X importtime): coord {args[0]} {total / 1000:.1f} ms self total, "
        f"python -c pass {bare_total / 1000:.1f} ms; top 12 not in python -c pass, "
        "by cumulative (us):"
    )
    seen = {name.strip() for _, _, name in bare}
    top = sorted((r for r in rows if r[2].strip() not in seen), key=lambda r: -r[1])[:12]
    for self_us, cumulative, name in top:
        print(f"     {cumulative:8,} cumulative {self_us:8,} self  {name}")


def _importtime(
    argv: list[str], env: dict[str, str], cwd: Path | None = None
) -> list[tuple[int, int, str]]:
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    rows = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            self_us, cumulative, name = line[len("import time:") :].split("|", 2)
            rows.append((int(self_us), int(cumulative), name.rstrip()))
    return rows


# --- 4. query plans ---------------------------------------------------------------------------


class _Recorder:
    """Stands in for the sqlite3 connection to capture the statements a method runs."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.calls: list[tuple[str, Any]] = []

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        self.calls.append((sql, params))
        return self.conn.execute(sql, params)


def bench_plan(board_dir: Path) -> None:
    conn = sqlite3.connect(board_files.db_path(board_dir), isolation_level=None)
    counts = dict(conn.execute("SELECT state, count(*) FROM items GROUP BY state").fetchall())
    recorder = _Recorder(conn)
    tx = SQLiteTx(recorder)  # type: ignore[arg-type]
    now = time.time()
    print(f"\n== 4. query plans of claim-next's statements on the board ({counts})")
    for title, kinds, label in (
        ("default (kinds task/bug/handoff)", model.WORK_KINDS, None),
        ("with --kind task --label bench", ("task",), "bench"),
    ):
        recorder.calls.clear()
        tx.claimable_items(now, kinds, label)
        statements = list(recorder.calls)
        timings = []
        for _ in range(200):
            began = time.perf_counter()
            tx.claimable_items(now, kinds, label)
            timings.append(time.perf_counter() - began)
        print(f"   -- {title}: {median(timings) * 1e6:.0f} us per call (median of 200)")
        for sql, params in statements:
            _print_plan(conn, sql, params)
    filters, values = _claim_filters(model.WORK_KINDS, None)
    # Its plan only: timing a write here would change the board (and rolled back, each call
    # would start from a page cache the rollback emptied). Section 1 times it over HTTP.
    print("   -- claim-next's one-statement claim (SQLiteTx.take_first_pending), default kinds")
    _print_plan(
        conn, _take_first_pending_sql(filters), ["x", now + 900, now, *values, now, *values]
    )
    print("   -- the reference server's claim (bench/refserver.py)")
    _print_plan(conn, CLAIM_SQL, ("x", now, now))
    conn.close()


def _print_plan(conn: sqlite3.Connection, sql: str, params: Any) -> None:
    print("      " + " ".join(sql.split()))
    rows = conn.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
    depth: dict[int, int] = {0: 0}
    scans = []
    for node, parent, _, detail in rows:
        depth[node] = depth.get(parent, 0) + 1
        print("        " + "  " * depth[node] + detail)
        if (
            detail.startswith("SCAN")
            and "INDEX" not in detail
            and "json_each" not in detail
            and not detail.startswith("SCAN (subquery")  # a few rows of a LIMITed subquery
        ):
            scans.append(detail)
    used = sorted(
        {w for _, _, _, d in rows for w in d.replace("(", " ").split() if w.startswith("items_")}
    )
    print(
        f"      => indexes: {', '.join(used) or 'none'}; full-table scans: "
        f"{'; '.join(scans) if scans else 'none'}"
    )
