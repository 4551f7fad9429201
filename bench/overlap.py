"""The overlap check at its worst: the largest patterns coord accepts, over HTTP, beside a
plain claim-next in the same run (issue 12: within ~50 ms of it).

Ten agents hold the heaviest patterns the limits allow (``MAX_PATTERN`` characters,
``MAX_PATTERN_WILDCARDS`` wildcards): five star-heavy globs and five star-free ones, the
kind whose check is a leftmost search rather than a linear scan. An eleventh agent asks for
ten such patterns at once: a hundred checks in one request, all on the daemon's event loop.
While it runs, another thread asks ``/v1/health``: how long every other agent waited.
Before issue 12 ten 1 KB patterns against ten held froze the loop for 82 s.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request

from common import log, median, new_board_dir, seed, start_daemon, verdict
from coord.core.board import Board
from coord.limits import MAX_PATTERN, MAX_PATTERN_WILDCARDS

TARGET_MS = 50.0


def heaviest_patterns() -> tuple[list[str], list[str]]:
    """(held, asked): the largest accepted patterns, each a different one."""
    stars = MAX_PATTERN_WILDCARDS // 2
    filler = "x" * ((MAX_PATTERN - 8 - 2 * stars) // stars)
    held = ["d/" + ("*" + filler + chr(97 + n)) * stars for n in range(5)]
    held += ["d/?" + "a" * (MAX_PATTERN - 6) + chr(99 + n) for n in range(5)]
    asked = ["d/" + ("*" + filler + "q") * (stars - 1) + "*" + chr(97 + n) for n in range(5)]
    asked += ["d/*" + "a" * 470 + chr(98 + n) + "*c" for n in range(5)]
    return held, asked


def _post(port: int, token: str, path: str, body: object) -> tuple[int, float]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    began = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as err:
        err.read()
        status = err.code
    return status, (time.perf_counter() - began) * 1000


def _health_while(port: int, token: str, busy: threading.Event, out: list[float]) -> None:
    while busy.is_set():
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/health", headers={"Authorization": f"Bearer {token}"}
        )
        began = time.perf_counter()
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()
        out.append((time.perf_counter() - began) * 1000)


def bench_overlap(runs: int) -> None:
    board_dir = new_board_dir("overlap")
    seed(board_dir, 2_000)
    held, asked = heaviest_patterns()
    board = Board.open(board_dir)
    try:
        for n, pattern in enumerate(held):
            board.reserve([pattern], agent=f"holder-{n}", lease_seconds=3600)
    finally:
        board.close()
    daemon = start_daemon(board_dir)
    port, token = daemon.port, daemon.token
    plain, worst, health = [], [], []
    log(f"overlap: {runs} rounds of claim-next, then 10 x 1 KB patterns against 10 held")
    for n in range(runs):
        plain.append(_post(port, token, "/v1/claim-next", {"agent": f"plain-{n}"})[1])
        busy = threading.Event()
        busy.set()
        waits: list[float] = []
        watcher = threading.Thread(target=_health_while, args=(port, token, busy, waits))
        watcher.start()
        status, ms = _post(
            port,
            token,
            "/v1/reservations",
            {"agent": "asker", "patterns": asked, "lease_seconds": 60},
        )
        busy.clear()
        watcher.join()
        if status not in (200, 201, 409):
            raise RuntimeError(f"the reservation request answered {status}")
        worst.append(ms)
        health.extend(waits)
    daemon.stop()
    base, top = median(plain), max(worst)
    print(
        f"\n== overlap check at its worst: {len(asked)} patterns of up to {MAX_PATTERN} "
        f"characters and {MAX_PATTERN_WILDCARDS} wildcards against {len(held)} held, "
        f"{runs} runs"
    )
    print(f"  plain claim-next, median          {base:8.1f} ms")
    print(f"  the reservation request, median   {median(worst):8.1f} ms")
    print(f"  the reservation request, worst    {top:8.1f} ms  ({top / base:.1f}x claim-next)")
    print(f"  /v1/health during it, worst       {max(health, default=0.0):8.1f} ms")
    print(
        f"  worst minus claim-next            {top - base:8.1f} ms  (target within "
        f"{TARGET_MS:.0f} ms: {verdict(top - base <= TARGET_MS)})"
    )


if __name__ == "__main__":
    bench_overlap(10)
