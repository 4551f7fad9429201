"""Ten event-stream readers during a claim-next storm (issue 17): the storm's throughput with
the readers against without them, in the same run, and whether each reader got every event.

One daemon on a copy of the mostly-done board of figure 1. Rounds alternate between the storm
alone and the storm with ``READERS`` connections to ``GET /v1/events/stream`` (one spawned
process holds them all, on asyncio; during the storm it only keeps the bytes). The readers
connect after the board's newest event before the storm starts; once it ends, the bench reads
the newest sequence number from the board and each reader reads up to it. A reader keeps up
when it got every sequence number from its start to that one, each once, in order (no
``reload``); the bench checks that for each and prints it.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

from claims import CONNS, claim_requests, mostly_done_board
from common import log, median, reset_claims, start_daemon, verdict
from coord.fast import board_files
from loadgen import HOST, layout_name, run_load, summary

READERS = 10
_ID = re.compile(rb"(?m)^id: (\d+)$")


def bench_stream(items: int, quick: bool, layout: str) -> None:
    warmup, count, rounds = (20, 150, 4) if quick else (50, 300, 6)
    board_dir, pending = mostly_done_board(items, CONNS * (warmup + count) * 2)
    db = board_files.db_path(board_dir)
    daemon = start_daemon(board_dir)
    requests = claim_requests(daemon.port, daemon.token)
    procs = 1 if layout == "auto" else int(layout)
    log(
        f"stream: {rounds} rounds x {CONNS} conns x ({warmup} warmup + {count}) claims, "
        f"alternately with and without {READERS} stream readers"
    )
    rates: dict[str, list[float]] = {"without": [], "with": []}
    cpu: dict[str, list[float]] = {"without": [], "with": []}
    checks: list[dict[str, Any]] = []
    try:
        for r in range(rounds):
            order = ("without", "with") if r % 2 == 0 else ("with", "without")
            for name in order:
                reset_claims(db)
                readers = (
                    _Readers(daemon.port, daemon.token, _newest(db)) if name == "with" else None
                )
                result = run_load(
                    daemon.port, requests, procs=procs, warmup=warmup, count=count, server=daemon
                )
                if result.errors():
                    raise RuntimeError(f"claims answered errors: {result.errors()}")
                if readers is not None:
                    checks.append(readers.finish(_newest(db)))
                figures = summary(result)
                rates[name].append(figures["rate"])
                cpu[name].append(figures["server_us"])
    finally:
        daemon.stop()

    ratios = [w / o for w, o in zip(rates["with"], rates["without"], strict=True)]
    ratio = median(ratios)
    print(
        f"\n== stream: claim-next storm ({CONNS} connections, {items:,}-item board, {pending:,} "
        f"pending) with and without {READERS} readers of GET /v1/events/stream"
    )
    print(f"   load generator: {layout_name(procs, CONNS)}; {rounds} rounds, alternating")
    for name in ("without", "with"):
        print(
            f"   {name + ' readers':<16}{median(rates[name]):7,.0f} claims/s  server CPU "
            f"{median(cpu[name]):4.0f} us/claim  (rounds: "
            f"{', '.join(f'{x:,.0f}' for x in rates[name])})"
        )
    kept_up = sum(c["kept_up"] for c in checks)
    events = sum(c["events"] for c in checks)
    problems = [p for c in checks for p in c["problems"]]
    print(
        f"   readers: {kept_up} of {READERS * len(checks)} kept up and got every event in order "
        f"({events:,} events delivered over {len(checks)} rounds; the readers' process took "
        f"{sum(c['cpu'] for c in checks) / max(events, 1) * 1e6:.1f} us CPU per event, reading and "
        "checking)" + (f"; {problems[:5]}" if problems else "")
    )
    print(
        f"   ratio with/without readers: {ratio:.2f}x (per round: "
        f"{', '.join(f'{x:.2f}' for x in ratios)}); by server CPU per claim: "
        f"{median(cpu['without']) / median(cpu['with']):.2f}x"
    )
    print(f"   target: ratio >= 0.90x ...... {ratio:.2f}x  {verdict(ratio >= 0.9)}")
    print(f"   target: every reader got every event in order ... {verdict(not problems)}")


def _newest(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0])
    finally:
        conn.close()


class _Readers:
    """``READERS`` stream connections in one spawned process, from ``after`` on."""

    def __init__(self, port: int, token: str, after: int) -> None:
        ctx = mp.get_context("spawn")
        self.after = after
        self.pipe, child = ctx.Pipe()
        self.process = ctx.Process(
            target=_read_streams, args=(port, token, after, child), daemon=True
        )
        self.process.start()
        child.close()
        if not self.pipe.poll(60) or self.pipe.recv() != "connected":
            raise RuntimeError("the stream readers did not connect")

    def finish(self, newest: int) -> dict[str, Any]:
        """Each reader reads up to ``newest``; what they got, checked."""
        self.pipe.send(newest)
        if not self.pipe.poll(120):
            self.process.terminate()
            raise RuntimeError("the stream readers did not finish")
        seen: list[tuple[list[int], bool]]
        seen, cpu = self.pipe.recv()
        self.process.join(10)
        expected = list(range(self.after + 1, newest + 1))
        problems = []
        for n, (ids, reloaded) in enumerate(seen):
            if reloaded:
                problems.append(f"reader {n} was told to reload")
            elif ids != expected:
                problems.append(f"reader {n}: {len(ids)} events, not {len(expected)} in order")
        return {
            "cpu": cpu,
            "kept_up": len(seen) - len(problems),
            "events": sum(len(ids) for ids, _ in seen),
            "problems": problems,
        }


def _read_streams(port: int, token: str, after: int, pipe: Any) -> None:
    asyncio.run(_readers(port, token, after, pipe))


async def _readers(port: int, token: str, after: int, pipe: Any) -> None:
    request = (
        f"GET /v1/events/stream?after={after}&keepalive=0.5 HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
        f"Authorization: Bearer {token}\r\n\r\n"
    ).encode()
    streams = [await asyncio.open_connection(HOST, port) for _ in range(READERS)]
    for _, writer in streams:
        writer.write(request)
    for reader, _ in streams:  # the head and the opening comment: connected
        await reader.readuntil(b"\n\n")
    pipe.send("connected")
    loop = asyncio.get_running_loop()
    newest: asyncio.Future[int] = loop.create_future()
    loop.add_reader(pipe.fileno(), lambda: newest.done() or newest.set_result(pipe.recv()))
    began = time.process_time()
    seen = await asyncio.gather(*(_read(reader, after, newest) for reader, _ in streams))
    pipe.send((seen, time.process_time() - began))
    for _, writer in streams:
        writer.close()


async def _read(
    reader: asyncio.StreamReader, after: int, newest: asyncio.Future[int]
) -> tuple[list[int], bool]:
    """The ids of the events read until ``newest`` is known and reached. During the storm a
    reader only keeps the bytes (a keep-alive every 0.5 s ends each wait); the ids are found
    afterwards (chunk framing left in: a chunk-size line never looks like ``id: N``)."""
    received: list[bytes] = []
    looked, tail = 0, b""  # reads already searched for the target, and their last bytes
    while True:
        if newest.done():
            if newest.result() <= after:
                break
            recent = tail + b"".join(received[looked:])
            if b"\nid: %d\n" % newest.result() in recent:
                break
            looked, tail = len(received), recent[-64:]
        data = await reader.read(1 << 16)
        if not data:
            break
        received.append(data)
    whole = b"".join(received)
    return [int(n) for n in _ID.findall(whole)], b"event: reload" in whole
