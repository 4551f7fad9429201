"""Claim-next throughput against a bare-ASGI reference, and the drain curve."""

from __future__ import annotations

import math
import sqlite3
import time
from pathlib import Path
from typing import Any

from common import (
    copy_board,
    log,
    mark_done_except_every,
    median,
    new_board_dir,
    percentile,
    reset_claims,
    seed,
    start_daemon,
    start_reference,
    verdict,
)
from coord.fast import board_files
from loadgen import LoadResult, layout_name, post_request, run_load, summary

CONNS = 16
LAYOUTS = (1, 2, 4)
_masters: dict[int, Path] = {}


def master_board(items: int) -> Path:
    """A board with ``items`` pending items, seeded once per run and copied from."""
    if items not in _masters:
        board_dir = new_board_dir("master")
        log(f"seeding {items:,} items through Board.import_items ...")
        took = seed(board_dir, items)
        log(f"seeded in {took:.1f}s")
        _masters[items] = board_dir
    return _masters[items]


def claim_requests(port: int, token: str) -> list[bytes]:
    return [
        post_request(port, "/v1/claim-next", {"agent": f"bench-{n}"}, token) for n in range(CONNS)
    ]


def mostly_done_board(items: int, needed: int) -> tuple[Path, int]:
    """A copy of the master board with all but ~1/20 of the items (at least ``needed``) done."""
    keep_every = max(1, min(20, items // needed))
    board_dir = copy_board(master_board(items), "claim")
    return board_dir, mark_done_except_every(board_files.db_path(board_dir), keep_every)


# --- 1. claim-next vs reference -------------------------------------------------------------


def bench_claim_next(items: int, quick: bool, layout: str) -> None:
    # Many short rounds, coord and reference back to back: this machine's speed drifts by
    # 2x within a minute, and a ratio of neighbouring rounds cancels most of the drift.
    warmup, count, rounds = (20, 150, 3) if quick else (50, 300, 7)
    needed = math.ceil(CONNS * (warmup + count) * 1.1)
    coord_dir, pending = mostly_done_board(items, needed)
    dirs = {"coord": coord_dir, "reference": copy_board(coord_dir, "reference")}
    servers = {
        "coord": start_daemon(dirs["coord"]),
        "reference": start_reference(board_files.db_path(dirs["reference"])),
    }
    servers["reference"].token = servers["coord"].token  # the same bytes but the port
    requests = {n: claim_requests(s.port, s.token) for n, s in servers.items()}
    ref_db = board_files.db_path(dirs["reference"])
    procs = _pick_layout(servers["reference"].port, requests["reference"], ref_db, layout)
    log(f"claim-next: {rounds} rounds x {CONNS} conns x ({warmup} warmup + {count}) claims")
    figures: dict[str, list[LoadResult]] = {name: [] for name in servers}
    for r in range(rounds):
        order = list(servers) if r % 2 == 0 else list(servers)[::-1]
        for name in order:
            reset_claims(board_files.db_path(dirs[name]))
            result = run_load(
                servers[name].port,
                requests[name],
                procs=procs,
                warmup=warmup,
                count=count,
                server=servers[name],
            )
            if result.errors():
                raise RuntimeError(f"{name} answered errors: {result.errors()}")
            figures[name].append(result)
    for server in servers.values():
        server.stop()

    print(
        f"\n== 1. claim-next over HTTP, {CONNS} connections, {items:,}-item board "
        f"({items - pending:,} done, {pending:,} pending; each round starts from that state)"
    )
    print(
        f"   load generator: {layout_name(procs, CONNS)}, pre-built request bytes; "
        f"{rounds} rounds x {CONNS * count:,} claims each, after {CONNS * warmup} warm-up"
    )
    rows = {name: _row(results) for name, results in figures.items()}
    for name, row in rows.items():
        print(
            f"   {name:<14}{row['rate']:7,.0f} claims/s  p50 {row['p50']:6.2f} ms  "
            f"p99 {row['p99']:6.2f} ms  server CPU {row['server_us']:4.0f} us/claim  "
            f"loadgen CPU {row['client_us']:3.0f} us/req  "
            f"(rounds: {', '.join(f'{x:,.0f}' for x in row['rounds'])})"
        )
        print(f"   {'':<14}p99 per round: {', '.join(f'{x:.1f}' for x in row['p99s'])} ms")
    coord, ref = rows["coord"], rows["reference"]
    ratios = [c / r for c, r in zip(coord["rounds"], ref["rounds"], strict=True)]
    ratio, p99 = median(ratios), coord["p99"]
    print(
        f"   ratio coord/reference claims/s: {ratio:.2f}x (per round: "
        f"{', '.join(f'{x:.2f}' for x in ratios)}); by server CPU per claim: "
        f"{ref['server_us'] / coord['server_us']:.2f}x"
    )
    print(f"   target: ratio >= 0.50x ...... {ratio:.2f}x  {verdict(ratio >= 0.5)}")
    print(f"   target: coord p99 <= 10 ms ... {p99:.2f} ms  {verdict(p99 <= 10)}")


def _row(results: list[LoadResult]) -> dict[str, Any]:
    lat = sorted(x for res in results for x in res.latencies_ms())
    per = [summary(res) for res in results]
    return {
        "rate": median([p["rate"] for p in per]),
        "p50": percentile(lat, 50),
        "p99": percentile(lat, 99),
        "server_us": median([p["server_us"] for p in per]),
        "client_us": median([p["client_us"] for p in per]),
        "rounds": [p["rate"] for p in per],
        "p99s": [p["p99"] for p in per],
    }


def _pick_layout(port: int, requests: list[bytes], db: Path, layout: str) -> int:
    """Measure each load-generator layout against the reference; keep the fastest one.

    On a 2-core box the generator and the server share the CPU: the layout that leaves the
    reference server the most throughput is the one that disturbs it least.
    """
    if layout != "auto":
        return int(layout)
    best: dict[int, float] = {}
    for _ in range(2):
        for procs in LAYOUTS:
            reset_claims(db)
            res = run_load(port, requests, procs=procs, warmup=20, count=120)
            best[procs] = max(best.get(procs, 0.0), res.rate)
            log(
                f"layout probe {layout_name(procs, CONNS)}: reference {res.rate:,.0f} claims/s, "
                f"loadgen {res.client_cpu / res.ok * 1e6:.0f} us CPU/req"
            )
    return max(best, key=lambda p: best[p])


# --- 2. drain curve ---------------------------------------------------------------------------


def bench_drain(items: int, layout: str) -> None:
    board_dir = copy_board(master_board(items), "drain")
    daemon = start_daemon(board_dir)
    procs = 1 if layout == "auto" else int(layout)
    log(f"draining {items:,} items with {CONNS} connections ...")
    began = time.perf_counter()
    result = run_load(
        daemon.port,
        claim_requests(daemon.port, daemon.token),
        procs=procs,
        warmup=0,
        count=items,
        stop_on_error=True,
        server=daemon,
    )
    took = time.perf_counter() - began
    daemon.stop()
    conn = sqlite3.connect(board_files.db_path(board_dir))
    left = conn.execute("SELECT count(*) FROM items WHERE state = 'pending'").fetchone()[0]
    conn.close()
    errors = result.errors()
    unexpected = {s: n for s, n in errors.items() if s != 404}
    ends = sorted(e for e, s in zip(result.ends, result.statuses, strict=True) if s == 200)
    tenth = len(ends) // 10
    curve = [tenth / (ends[(i + 1) * tenth - 1] - ends[i * tenth]) for i in range(10)]
    first, last = curve[0], curve[-1]
    lat = result.latencies_ms()

    print(f"\n== 2. drain: claim-next until a {items:,}-item board is empty, {CONNS} connections")
    print(f"   load generator: {layout_name(procs, CONNS)}")
    print(
        f"   claimed {len(ends):,} in {result.elapsed:.1f}s ({took:.1f}s with process start), "
        f"{left} left pending, answers other than 200: {errors or 'none'}"
        + (f"  UNEXPECTED: {unexpected}" if unexpected else "")
    )
    print(
        f"   overall {len(ends) / result.elapsed:,.0f} claims/s, p50 {percentile(lat, 50):.2f} ms, "
        f"p99 {percentile(lat, 99):.2f} ms, server CPU "
        f"{result.server_cpu / len(ends) * 1e6:.0f} us/claim"
    )
    print("   claims/s per tenth: " + ", ".join(f"{x:,.0f}" for x in curve))
    ratio = last / first
    print(
        f"   target: last tenth / first tenth >= 0.80x ... {last:,.0f} / {first:,.0f} = "
        f"{ratio:.2f}x  {verdict(ratio >= 0.8)}"
    )
