"""claim-next over HTTP on a PostgreSQL team board: one daemon, two daemons on one database,
and a bare-ASGI reference doing the same transaction through the same driver (``pg-claim-next``).

    python bench/run.py pg-claim-next [--quick] [--items N] [--dsn postgresql://…]

A scratch database ``coord_bench_<pid>`` on the server (default: the local one at 5432) holds
one board of N pending items (N = ``--items``, at least what the rounds claim). Two checkouts
are made on it as a team makes them (``coord init --database URL``) and each served by
``coord serve``; ``pg_refserver.py`` serves the reference on the same database. Each round
runs, in alternating order: coord with one daemon (16 connections to it), coord with two
daemons (8 connections to each, at once), the reference (16 connections). Before each run the
claimed items are put back to pending, so each starts from the same board. The figures and
the ratios are those of ``claims.py``'s figure 1; target: ratio >= 0.6x (issue 16).
"""

from __future__ import annotations

import math
import os
import subprocess
import threading
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from claims import CONNS, _row
from common import (
    CLEANUP,
    HERE,
    PYTHON,
    Server,
    _wait_for,
    log,
    median,
    start_daemon,
    temp_dir,
    verdict,
)
from loadgen import LoadResult, layout_name, post_request, run_load

DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
TARGET = 0.6


def bench_pg_claim_next(items: int, quick: bool, layout: str, dsn: str) -> None:
    warmup, count, rounds = (20, 150, 3) if quick else (50, 300, 5)
    procs = 1 if layout == "auto" else int(layout)
    items = max(items, math.ceil(CONNS * (warmup + count) * 1.1))
    with _scratch_database(dsn) as url:
        log(f"seeding {items:,} items in {urlsplit(url).path[1:]} ...")
        _seed(url, items)
        dirs = [_checkout(url, f"pg-machine-{n}") for n in range(2)]
        print(
            f"\n== pg claim-next over HTTP, {CONNS} connections, one PostgreSQL database "
            f"({items:,} pending items; each run starts from that state)"
        )
        print(
            f"   load generator: {layout_name(procs, CONNS)} per run (2 daemons: {CONNS // 2} "
            f"connections to each); {rounds} rounds x {CONNS * count:,} claims, after "
            f"{CONNS * warmup} warm-up"
        )
        for synchronous_commit in ("on", "off"):
            _set(dsn, url, f"synchronous_commit = {synchronous_commit}")  # new sessions
            figures = _rounds(url, dirs, rounds, procs, warmup, count)
            print(
                "   -- commits wait for the WAL flush (synchronous_commit = on, as deployed)"
                if synchronous_commit == "on"
                else "   -- commits not waited for (synchronous_commit = off): the flush, which "
                "sets the pace on a busy disk, taken out"
            )
            _print(figures)


def _rounds(
    url: str, dirs: list[Path], rounds: int, procs: int, warmup: int, count: int
) -> dict[str, list[LoadResult]]:
    """Fresh servers (their sessions take the database's settings), then the rounds."""
    servers: list[Server] = []
    try:
        servers.extend(start_daemon(d) for d in dirs)
        servers.append(_start_reference(url, dirs[0]))
        runs = {
            "coord, 1 daemon": servers[:1],
            "coord, 2 daemons": servers[:2],
            "reference": servers[2:],
        }
        log(f"pg claim-next: {rounds} rounds x {CONNS} conns x ({warmup} + {count}) claims")
        figures: dict[str, list[LoadResult]] = {name: [] for name in runs}
        for r in range(rounds):
            order = list(runs) if r % 2 == 0 else list(runs)[::-1]
            for name in order:
                _reset(url)
                figures[name].append(_load(runs[name], procs, warmup, count))
        return figures
    finally:
        for server in servers:  # they hold connections to the scratch database
            server.stop()


def _print(figures: dict[str, list[LoadResult]]) -> None:
    rows = {name: _row(results) for name, results in figures.items()}
    for name, row in rows.items():
        print(
            f"   {name:<17}{row['rate']:7,.0f} claims/s  p50 {row['p50']:6.2f} ms  "
            f"p99 {row['p99']:6.2f} ms  daemon CPU {row['server_us']:4.0f} us/claim  "
            f"(rounds: {', '.join(f'{x:,.0f}' for x in row['rounds'])})"
        )
    ref = rows["reference"]
    for name in ("coord, 1 daemon", "coord, 2 daemons"):
        ratios = [c / r for c, r in zip(rows[name]["rounds"], ref["rounds"], strict=True)]
        ratio = median(ratios)
        print(
            f"   {name} / reference: {ratio:.2f}x (per round: "
            f"{', '.join(f'{x:.2f}' for x in ratios)}); p99 {rows[name]['p99']:.2f} ms vs "
            f"{ref['p99']:.2f} ms   target >= {TARGET:.2f}x: {verdict(ratio >= TARGET)}"
        )


def _load(servers: list[Server], procs: int, warmup: int, count: int) -> LoadResult:
    """``CONNS`` connections split over ``servers``, all at once; one result for them all."""
    share = CONNS // len(servers)
    results: list[LoadResult | BaseException] = [RuntimeError("no result")] * len(servers)

    def drive(index: int, server: Server) -> None:
        requests = [
            post_request(
                server.port, "/v1/claim-next", {"agent": f"bench-{index}-{n}"}, server.token
            )
            for n in range(share)
        ]
        try:
            results[index] = run_load(
                server.port, requests, procs=procs, warmup=warmup, count=count, server=server
            )
        except BaseException as err:
            results[index] = err

    threads = [threading.Thread(target=drive, args=pair) for pair in enumerate(servers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    parts = [r for r in results if isinstance(r, LoadResult)]
    if len(parts) != len(servers):
        raise RuntimeError(f"load generator failed: {results}")
    if any(p.errors() for p in parts):
        raise RuntimeError(f"answers other than 200: {[p.errors() for p in parts]}")
    merged = LoadResult(parts[0].layout, array("d"), array("d"), array("H"), 0.0, 0.0)
    for part in parts:
        merged.starts.extend(part.starts)
        merged.ends.extend(part.ends)
        merged.statuses.extend(part.statuses)
        merged.client_cpu += part.client_cpu
        merged.server_cpu += part.server_cpu
    return merged


# --- the database, the checkouts, the servers --------------------------------------------------


@contextmanager
def _scratch_database(dsn: str) -> Iterator[str]:
    """A new database on the server of ``dsn`` (its URL), dropped afterwards."""
    import psycopg  # the optional driver: imported by this figure only

    name = f"coord_bench_{os.getpid()}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())
        conn.execute(f"CREATE DATABASE {name}".encode())
    try:
        yield urlsplit(dsn)._replace(path=f"/{name}").geturl()
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())


def _set(admin_dsn: str, url: str, setting: str) -> None:
    import psycopg

    name = urlsplit(url).path[1:]
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE {name} SET {setting}".encode())


def _seed(url: str, count: int) -> None:
    from pg_driver import _seed as seed_items  # the driver bench's board: the same items

    seed_items(url, count)


def _reset(url: str) -> None:
    """Every claimed item back to pending, as it was seeded."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE items SET state = 'pending', claimed_by = NULL, lease_expires_at = NULL, "
            "fencing_token = 0 WHERE state = 'claimed'"
        )
        conn.execute("VACUUM ANALYZE items")


def _checkout(url: str, name: str) -> Path:
    """A checkout whose board is the database (``git init``, ``coord init --database``)."""
    root = temp_dir(name)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(
        [PYTHON, "-m", "coord", "init", "--database", url, "--json"],
        cwd=root,
        check=True,
        capture_output=True,
    )
    return root / ".coord"


def _start_reference(url: str, beside: Path) -> Server:
    port_file, log_path = beside / "pg-refserver.port", beside / "pg-refserver.log"
    port_file.unlink(missing_ok=True)  # a previous reference's
    logfile = log_path.open("ab")
    proc = subprocess.Popen(
        [PYTHON, str(HERE / "pg_refserver.py"), url, str(port_file)],
        stdout=logfile,
        stderr=logfile,
        stdin=subprocess.DEVNULL,
    )
    logfile.close()
    CLEANUP.processes.append(proc)
    port = _wait_for(proc, lambda: int(port_file.read_text()), 30.0, log_path)
    return Server("reference", proc, port, "")
