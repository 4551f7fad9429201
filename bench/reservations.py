"""File reservations: the edit guard as a fresh process, and reserve/release over HTTP."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import claims
from cli_plan import _print_importtime
from common import (
    PYTHON,
    log,
    median,
    new_board_dir,
    percentile,
    print_beside_python,
    reset_claims,
    sql,
    start_daemon,
    temp_dir,
    verdict,
)
from coord.core.board import Board
from coord.fast import board_files
from loadgen import LoadResult, layout_name, post_request, run_load

HOLDERS = 200  # agents, 5 reservations each: 1,000 live reservations
FREE_PATH = "src/pkg999/mod1.py"  # nobody holds it: the guard compares it with all 1,000
HELD_PATH = "src/pkg7/sub/deep/x.py"  # under agent-7's exclusive directory src/pkg7/sub


def hold_patterns(n: int) -> tuple[list[str], list[str]]:
    """(exclusive, shared) patterns of agent-n: its own src/pkgN, tests and docs globs."""
    mine = [f"src/pkg{n}/mod{n % 10}.py", f"src/pkg{n}/sub", f"tests/test_{n:03d}*.py"]
    mine.append(f"src/pkg{n}/*.py" if n % 2 else f"src/pkg{n}/gen/*.py")
    if n % 2:
        return [*mine, f"src/pkg{n}/**/*.md"], []
    return mine, ["docs/**/*.md"]  # shared: several agents edit the docs


def hold_reservations(board_dir: Path) -> float:
    """1,000 live reservations of 200 other agents, through the library. Returns seconds."""
    began = time.perf_counter()
    board = Board.open(board_dir)
    try:
        for n in range(HOLDERS):
            exclusive, shared = hold_patterns(n)
            board.reserve(exclusive, agent=f"agent-{n}", lease_seconds=3600)
            if shared:
                board.reserve(shared, agent=f"agent-{n}", shared=True, lease_seconds=3600)
        held = len(board.reservations())
    finally:
        board.close()
    if held != 5 * HOLDERS:
        raise RuntimeError(f"expected {5 * HOLDERS} live reservations, found {held}")
    return time.perf_counter() - began


# --- 5. the edit guard --------------------------------------------------------------------------


def bench_guard(runs: int, importtime: bool) -> None:
    board_dir = new_board_dir("guard")
    log(f"guard: 1,000 reservations held in {hold_reservations(board_dir):.1f}s")
    root, empty = board_dir.parent, new_board_dir("guard-empty").parent  # empty: no reservation
    env = {k: v for k, v in os.environ.items() if k not in ("COORD_DIR", "COORD_AGENT")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as in cli_plan.bench_cli
    env["PYTHONPYCACHEPREFIX"] = str(temp_dir("pycache"))
    script = Path(PYTHON).with_name("coord")
    guard = ("guard", "--as", "someone")
    commands = {"python -c pass": ([PYTHON, "-c", "pass"], 0, root)}
    for path, code, what in ((FREE_PATH, 0, "free"), (HELD_PATH, 2, "held")):
        commands[f"python -m coord guard <{what}>"] = (
            [PYTHON, "-m", "coord", *guard, path],
            code,
            root,
        )
        if script.exists():
            commands[f"{script.name} guard <{what}>"] = ([str(script), *guard, path], code, root)
    commands["python -m coord guard <free>, 0 reservations"] = (
        [PYTHON, "-m", "coord", *guard, FREE_PATH],
        0,
        empty,
    )
    times: dict[str, list[float]] = {name: [] for name in commands}
    log(f"guard: {runs} runs of each command, interleaved, after 3 warm-up runs")
    for n in range(runs + 3):
        for name, (argv, code, cwd) in commands.items():
            took = _timed(argv, env, cwd, code)
            if n >= 3:
                times[name].append(took)
    leftovers = _daemon_traces(board_dir) + _daemon_traces(empty / ".coord")

    base = median(times["python -c pass"])
    print(
        f"\n== 5. guard: `coord guard PATH --as someone`, fresh process, median of {runs}; "
        f"1,000 live reservations of {HOLDERS} other agents, no daemon, bytecode cached"
    )
    print(
        f"   <free> = {FREE_PATH} (exit 0), <held> = {HELD_PATH} (exit 2, agent-7's src/pkg7/sub)"
    )
    print_beside_python(times, base)
    worst = max(median(times[f"python -m coord guard <{w}>"]) for w in ("free", "held")) / base
    print(
        f"   target: python -m coord guard <= 3x python -c pass ... {worst:.2f}x (slower of "
        f"free/held)  {verdict(worst <= 3)}"
    )
    print(f"   daemon started by a guard run: {leftovers or 'none'}")
    if importtime or worst > 3:
        _print_importtime(env, (*guard, FREE_PATH), cwd=root)


def _timed(argv: list[str], env: dict[str, str], cwd: Path, code: int) -> float:
    began = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, timeout=60)
    took = time.perf_counter() - began
    if done.returncode != code or (code == 2 and b"agent-7" not in done.stderr):
        raise RuntimeError(f"{argv} exited {done.returncode}: {done.stdout!r} {done.stderr!r}")
    return took


def _daemon_traces(board_dir: Path) -> list[str]:
    """A daemon record or log in the board, or a process running in the board's repository."""
    found = [p.name for p in board_dir.iterdir() if p.name.startswith("daemon")]
    root = str(board_dir.parent)
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and os.readlink(proc / "cwd") == root:
                found.append(f"pid {proc.name}: {(proc / 'cmdline').read_bytes()!r}")
        except OSError:
            continue
    return found


# --- 6. reserve / release over HTTP ---------------------------------------------------------------

PHASES = ("claim-next", "reserve+release", "reserve+release, 1,000 live")
_HOLDERS_SQL = "agent LIKE 'agent-%'"


def bench_reserve(items: int, quick: bool, layout: str) -> None:
    warmup, count, rounds = (20, 150, 2) if quick else (50, 400, 3)  # per connection
    conns = claims.CONNS
    board_dir, pending = claims.mostly_done_board(items, int(conns * (warmup + count) * 1.1))
    db = board_files.db_path(board_dir)
    held_dir = new_board_dir("held")  # the 1,000 are made once here, copied in and out by SQL
    log(f"reserve: 1,000 reservations held in {hold_reservations(held_dir):.1f}s")
    daemon = start_daemon(board_dir)
    procs = 1 if layout == "auto" else int(layout)
    pairs = [
        (
            post_request(
                daemon.port,
                "/v1/reservations",
                {"agent": f"bench-{n}", "patterns": [f"src/conn{n}/*.py"], "lease_seconds": 600},
                daemon.token,
            ),
            post_request(
                daemon.port,
                "/v1/reservations:release",
                {"agent": f"bench-{n}", "all": True},
                daemon.token,
            ),
        )
        for n in range(conns)
    ]
    requests = {
        PHASES[0]: claims.claim_requests(daemon.port, daemon.token),
        PHASES[1]: pairs,
        PHASES[2]: pairs,
    }
    log(f"reserve: {rounds} rounds x {conns} conns x ({warmup} warmup + {count}) requests")
    figures: dict[str, list[LoadResult]] = {name: [] for name in PHASES}
    for r in range(rounds):
        for name in PHASES if r % 2 == 0 else PHASES[::-1]:
            reset_claims(db)
            _set_holders(db, board_files.db_path(held_dir), name == PHASES[2])
            result = run_load(
                daemon.port, requests[name], procs=procs, warmup=warmup, count=count, server=daemon
            )
            if result.errors():
                raise RuntimeError(f"{name} answered errors: {result.errors()}")
            figures[name].append(result)
    daemon.stop()
    _print_reserve(figures, items, pending, layout_name(procs, conns), rounds, conns * count)


def _set_holders(db: Path, held_db: Path, live: bool) -> None:
    statements = [f"DELETE FROM reservations WHERE {_HOLDERS_SQL}"]
    if live:
        statements += [
            f"ATTACH DATABASE '{held_db}' AS held",
            "INSERT INTO reservations (agent, pattern, prefix, exclusive, item_id, reason, "
            "created_at, expires_at) SELECT agent, pattern, prefix, exclusive, item_id, reason, "
            "created_at, expires_at FROM held.reservations",
        ]
    sql(db, "BEGIN IMMEDIATE", *statements, "COMMIT")


def _print_reserve(
    figures: dict[str, list[LoadResult]],
    items: int,
    pending: int,
    layout: str,
    rounds: int,
    per_round: int,
) -> None:
    print(
        f"\n== 6. reserve/release over HTTP vs claim-next, same daemon, {items:,}-item board "
        f"({pending:,} pending)"
    )
    print(
        f"   load generator: {layout}; {rounds} rounds x {per_round:,} requests per phase; "
        "each connection its own agent and pattern (src/connN/*.py), alternating "
        "reserve (201) and release --all (200)"
    )
    claim_rates = [r.rate for r in figures[PHASES[0]]]
    for name, results in figures.items():
        rates = [r.rate for r in results]  # requests/s (claims, or reserves + releases)
        cpu = median([r.server_cpu / max(r.ok, 1) * 1e6 for r in results])
        lat = {s: sorted(_latencies(results, s)) for s in (200, 201)}
        if name == PHASES[0]:
            print(
                f"   {name:<28} {median(rates):7,.0f} claims/s   "
                f"p50 {percentile(lat[200], 50):5.2f} ms  p99 {percentile(lat[200], 99):6.2f} ms  "
                f"server CPU {cpu:4.0f} us/claim  "
                f"(rounds: {', '.join(f'{x:,.0f}' for x in rates)})"
            )
            continue
        ratios = [x / 2 / c for x, c in zip(rates, claim_rates, strict=True)]
        print(
            f"   {name:<28} {median(rates) / 2:7,.0f} pairs/s    (= reserves/s = releases/s; "
            f"{median(rates):,.0f} requests/s)  server CPU {cpu:4.0f} us/request  "
            f"(rounds: {', '.join(f'{x / 2:,.0f}' for x in rates)})"
        )
        for status, what in ((201, "reserve"), (200, "release")):
            print(
                f"      {what:<8} p50 {percentile(lat[status], 50):5.2f} ms  "
                f"p99 {percentile(lat[status], 99):6.2f} ms"
            )
        print(
            f"      reserves/s / claims/s: {median(ratios):.2f}x "
            f"(per round: {', '.join(f'{x:.2f}' for x in ratios)})"
        )


def _latencies(results: list[LoadResult], status: int) -> list[float]:
    return [
        (e - s) * 1000
        for res in results
        for s, e, st in zip(res.starts, res.ends, res.statuses, strict=True)
        if st == status
    ]
