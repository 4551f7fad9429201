"""Claims while idle connections pile up, under the common open-file limit of 1,024.

The review that found issue 14 (item 7) opened 1,100 idle connections (no token needed) to a
daemon limited to 1,024 open files, and legitimate claims timed out. Here a thread keeps that
many idle sockets open to the daemon (reopening each one the daemon closes, as an attacker
would) while the load generator claims; the figures are the daemon's open descriptors, the
claims per second beside the same load without idle connections, and every error.
"""

from __future__ import annotations

import contextlib
import os
import resource
import select
import socket
import threading
import time
from pathlib import Path

from common import log, new_board_dir, seed, start_daemon
from loadgen import HOST, LoadResult, layout_name, post_request, run_load, summary

IDLE_COUNTS = (1100, 3000)  # the review's figure; then well past the limit
OPEN_FILE_LIMIT = 1024  # soft and hard: the daemon cannot raise it
CONNS = 16


def _limit_open_files() -> None:  # in the daemon's process, before exec
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILE_LIMIT, OPEN_FILE_LIMIT))


class IdleConnections(threading.Thread):
    """Holds ``count`` connections that never send a byte; reopens any the server closes."""

    def __init__(self, port: int, count: int) -> None:
        super().__init__(name="idle-connections", daemon=True)
        self.port, self.count = port, count
        self.opened = self.closed_by_server = 0
        self.ready = threading.Event()
        self._stopping = threading.Event()

    def stop(self) -> None:
        self._stopping.set()
        self.join(10)

    def run(self) -> None:
        poller = select.epoll()
        held: dict[int, socket.socket] = {}

        def open_one() -> None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            sock.connect_ex((HOST, self.port))
            poller.register(sock.fileno(), select.EPOLLIN | select.EPOLLRDHUP)
            held[sock.fileno()] = sock
            self.opened += 1

        try:
            for _ in range(self.count):
                open_one()
            self.ready.set()
            while not self._stopping.is_set():
                for fd, _ in poller.poll(0.1):  # readable: the server closed it
                    poller.unregister(fd)
                    held.pop(fd).close()
                    self.closed_by_server += 1
                    open_one()
        finally:
            for sock in held.values():
                sock.close()
            poller.close()


def _open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _limit_in_force(pid: int) -> str:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return f"soft {soft}, hard {hard}"
    return "unknown"


def bench_connections(quick: bool) -> None:
    warmup, count = (20, 300) if quick else (50, 1500)
    needed = CONNS * (warmup + count) * (1 + len(IDLE_COUNTS)) + 100
    board_dir = new_board_dir("connections")
    log(f"seeding {needed:,} items ...")
    seed(board_dir, needed)
    server = start_daemon(board_dir, preexec_fn=_limit_open_files)
    pid = server.proc.pid
    limit_text = _limit_in_force(pid)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):  # this process holds the idle sockets
        wanted = max(IDLE_COUNTS) * 2
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, wanted)), hard))
    requests = [
        post_request(server.port, "/v1/claim-next", {"agent": f"bench-{n}"}, server.token)
        for n in range(CONNS)
    ]
    log("claims without idle connections ...")
    calm = run_load(server.port, requests, procs=1, warmup=warmup, count=count, server=server)
    base_files = _open_files(pid)
    print("\n== connections: claims while idle connections are held open")
    print(f"   daemon open-file limit in force: {limit_text}; its other files: {base_files}")
    print(f"   load: {layout_name(1, CONNS)}, {CONNS * count:,} claims after {CONNS * warmup}")
    _print_row("no idle connections", calm)
    for idle_count in IDLE_COUNTS:
        log(f"claims with {idle_count:,} idle connections held ...")
        idle = IdleConnections(server.port, idle_count)
        idle.start()
        idle.ready.wait(60)
        time.sleep(1)  # let the daemon accept what it will
        held_before = _open_files(pid) - base_files
        loaded = run_load(server.port, requests, procs=1, warmup=warmup, count=count, server=server)
        held_after = _open_files(pid) - base_files
        idle.stop()
        _print_row(f"{idle_count:,} idle connections", loaded)
        print(
            f"   {'':<24}the daemon held {held_before:,} of them as the claims began and "
            f"{held_after:,} as they ended; it closed {idle.closed_by_server:,} (reopened)"
        )
        time.sleep(6)  # the keep-alive timeout: the daemon lets the last ones go
    server.stop()


def _print_row(name: str, result: LoadResult) -> None:
    row, errors = summary(result), result.errors()
    print(
        f"   {name + ':':<24}{row['rate']:7,.0f} claims/s  p99 {row['p99']:7.2f} ms  "
        f"errors {sum(errors.values())} {errors or ''}"
    )
