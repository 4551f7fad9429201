"""A lean closed-loop HTTP/1.1 load generator for 127.0.0.1.

Each connection is a keep-alive socket driven by an ``asyncio.Protocol`` that writes one
pre-built request (bytes, never re-encoded; or a tuple of them, sent in turn), reads the
response by Content-Length, records (sent, answered, status) and sends the next: one request
in flight per connection. The connections are split over ``procs`` spawned worker processes
(``procs=1``: one process holds all of them). Workers warm up, meet at a barrier, then run the
measured phase, so the measured phases of all workers overlap exactly. Timestamps are
``time.perf_counter()`` (CLOCK_MONOTONIC, comparable across processes).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing as mp
import time
from array import array
from dataclasses import dataclass
from typing import Any

from common import Server, percentile

HOST = "127.0.0.1"
_CONTENT_LENGTH = b"\ncontent-length:"
OK = (200, 201)  # 201: a reservation made
Request = bytes | tuple[bytes, ...]  # a tuple: these requests in turn, over and over


def post_request(port: int, path: str, body: Any, token: str = "") -> bytes:
    payload = json.dumps(body, separators=(",", ":")).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
    )
    if token:
        head += f"Authorization: Bearer {token}\r\n"
    return head.encode() + b"\r\n" + payload


class _Conn(asyncio.Protocol):
    def __init__(self, request: Request) -> None:
        self.cycle = (request,) if isinstance(request, bytes) else request
        self.turn = 0
        self.buf = bytearray()
        self.need = -1
        self.left = 0
        self.stop_on_error = False
        self.t0 = 0.0
        self.status = 0
        self.done: asyncio.Future[None] | None = None
        self.transport: asyncio.Transport | None = None
        self.clear()

    def clear(self) -> None:
        self.starts, self.ends, self.statuses = array("d"), array("d"), array("H")

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport  # asyncio already sets TCP_NODELAY

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(ConnectionError(f"server closed the connection ({exc})"))

    def run(self, count: int, stop_on_error: bool) -> asyncio.Future[None]:
        self.done = asyncio.get_running_loop().create_future()
        self.left, self.stop_on_error = count, stop_on_error
        if count <= 0:
            self.done.set_result(None)
        else:
            self._send()
        return self.done

    def _send(self) -> None:
        assert self.transport is not None
        cycle = self.cycle
        self.t0 = time.perf_counter()
        self.transport.write(cycle[self.turn % len(cycle)])
        self.turn += 1

    def _fail(self, err: Exception) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_exception(err)

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        if self.need < 0:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(buf[:end]).lower()
            self.status = int(head[9:12])
            at = head.find(_CONTENT_LENGTH)
            if at < 0:
                return self._fail(RuntimeError("response without Content-Length"))
            stop = head.find(b"\r", at + len(_CONTENT_LENGTH))
            self.need = end + 4 + int(head[at + len(_CONTENT_LENGTH) : stop if stop > 0 else None])
        if len(buf) < self.need:
            return
        ended = time.perf_counter()
        if len(buf) > self.need:
            return self._fail(RuntimeError("bytes after the response: not one request in flight"))
        buf.clear()
        self.need = -1
        self.starts.append(self.t0)
        self.ends.append(ended)
        self.statuses.append(self.status)
        self.left -= 1
        if self.left <= 0 or (self.stop_on_error and self.status not in OK):
            assert self.done is not None
            if not self.done.done():
                self.done.set_result(None)
        else:
            self._send()


async def _drive(
    port: int, requests: list[Request], warmup: int, count: int, stop_on_error: bool, barrier: Any
) -> tuple[bytes, bytes, bytes, float]:
    loop = asyncio.get_running_loop()
    conns: list[_Conn] = []
    for request in requests:
        _, conn = await loop.create_connection(lambda r=request: _Conn(r), HOST, port)
        conns.append(conn)
    await asyncio.gather(*(c.run(warmup, stop_on_error) for c in conns))
    for c in conns:
        c.clear()
    barrier.wait(timeout=600)  # blocks the loop on purpose: nothing is in flight now
    cpu = time.process_time()
    await asyncio.gather(*(c.run(count, stop_on_error) for c in conns))
    cpu = time.process_time() - cpu
    starts, ends, statuses = array("d"), array("d"), array("H")
    for c in conns:
        starts.extend(c.starts)
        ends.extend(c.ends)
        statuses.extend(c.statuses)
        if c.transport is not None:
            c.transport.close()
    return starts.tobytes(), ends.tobytes(), statuses.tobytes(), cpu


def _worker(
    port: int,
    requests: list[Request],
    warmup: int,
    count: int,
    stop_on_error: bool,
    barrier: Any,
    out: Any,
) -> None:
    try:
        out.send(asyncio.run(_drive(port, requests, warmup, count, stop_on_error, barrier)))
    except BaseException as err:
        barrier.abort()
        out.send(repr(err))
        raise
    finally:
        out.close()


@dataclass
class LoadResult:
    layout: str
    starts: array  # type: ignore[type-arg]
    ends: array  # type: ignore[type-arg]
    statuses: array  # type: ignore[type-arg]
    client_cpu: float  # CPU seconds used by the load generator in the measured phase
    server_cpu: float  # CPU seconds used by the server in the measured phase (0 if unknown)

    @property
    def ok(self) -> int:
        return sum(1 for s in self.statuses if s in OK)

    @property
    def elapsed(self) -> float:
        return max(self.ends) - min(self.starts) if self.ends else float("nan")

    @property
    def rate(self) -> float:
        return self.ok / self.elapsed

    def latencies_ms(self, ok_only: bool = True) -> list[float]:
        return sorted(
            (e - s) * 1000
            for s, e, st in zip(self.starts, self.ends, self.statuses, strict=True)
            if st in OK or not ok_only
        )

    def errors(self) -> dict[int, int]:
        found: dict[int, int] = {}
        for s in self.statuses:
            if s not in OK:
                found[s] = found.get(s, 0) + 1
        return found


def layout_name(procs: int, conns: int) -> str:
    if procs == 1:
        return f"1 asyncio process x {conns} keep-alive connections"
    return f"{procs} asyncio processes x {conns // procs} keep-alive connections"


def run_load(
    port: int,
    requests: list[Request],
    *,
    procs: int,
    warmup: int,
    count: int,
    stop_on_error: bool = False,
    server: Server | None = None,
) -> LoadResult:
    """Send ``warmup`` then ``count`` requests on each connection (one per request bytes)."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(procs + 1)
    workers, pipes = [], []
    try:
        for index in range(procs):
            receiver, sender = ctx.Pipe(duplex=False)
            worker = ctx.Process(
                target=_worker,
                args=(port, requests[index::procs], warmup, count, stop_on_error, barrier, sender),
                daemon=True,
            )
            worker.start()
            sender.close()
            workers.append(worker)
            pipes.append(receiver)
        try:
            barrier.wait(timeout=600)
        except Exception:
            raise RuntimeError(f"load generator failed: {_collect(pipes, workers)}") from None
        server_cpu = server.cpu_seconds() if server else 0.0
        parts = _collect(pipes, workers)
        server_cpu = server.cpu_seconds() - server_cpu if server else 0.0
    finally:
        for worker in workers:
            worker.join(timeout=5)
            if worker.is_alive():
                worker.terminate()
                worker.join(timeout=5)
    bad = [p for p in parts if not isinstance(p, tuple)]
    if bad:
        raise RuntimeError(f"load generator failed: {bad}")
    starts, ends, statuses = array("d"), array("d"), array("H")
    for s, e, st, _ in parts:
        starts.frombytes(s)
        ends.frombytes(e)
        statuses.frombytes(st)
    client_cpu = sum(p[3] for p in parts)
    name = layout_name(procs, len(requests))
    return LoadResult(name, starts, ends, statuses, client_cpu, server_cpu)


def _collect(pipes: list[Any], workers: list[Any]) -> list[Any]:
    """One message per worker; a worker that died silently yields a note instead."""
    found = []
    for pipe, worker in zip(pipes, workers, strict=True):
        while not pipe.poll(0.2):
            if not worker.is_alive() and not pipe.poll(0.2):
                found.append(f"worker exited with code {worker.exitcode}")
                break
        else:
            found.append(pipe.recv())
    return found


def summary(result: LoadResult) -> dict[str, float]:
    lat = result.latencies_ms()
    n = max(result.ok, 1)
    return {
        "rate": result.rate,
        "p50": percentile(lat, 50),
        "p99": percentile(lat, 99),
        "server_us": result.server_cpu / n * 1e6,
        "client_us": result.client_cpu / n * 1e6,
    }
