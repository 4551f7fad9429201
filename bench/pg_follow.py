"""A team board (PostgreSQL): the guard on the mirror, event delivery across daemons, and what
NOTIFY costs the writes. Each figure beside a reference measured in the same run.

    .venv/bin/python bench/pg_follow.py [guard|events|notify|all] [--runs 30] [--rounds 200]
        [--writes 2000] [--dsn postgresql://postgres@127.0.0.1:5432/postgres]

- ``guard``: ``coord guard PATH`` as a fresh process on a PostgreSQL board whose daemon keeps
  the mirror fresh, beside ``python -c pass`` and the guard on a SQLite board holding the same
  1,000 reservations (target: <= 3x ``python -c pass``).
- ``events``: a write through daemon A (``POST /v1/items``) until a long poll of daemon B
  (``GET /v1/events?after=N&wait=10``, already waiting) returns it, and until its frame
  arrives on B's open ``GET /v1/events/stream``; reference: the same readers on daemon A
  itself, woken by its own write. p50 and p99 (target: p99 <= 100 ms).
- ``notify``: write transactions per second (``Board.add``, 1 and 4 threads) with the NOTIFY
  on commit and without it, alternating, while two connections LISTEN.

Scratch databases ``coord_bench_follow_<pid>_*`` are created on the server and dropped at the
end; daemons and temp dirs are removed (``common.CLEANUP``). It prints; it asserts nothing.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from common import (
    CLEANUP,
    PYTHON,
    Server,
    log,
    median,
    new_board_dir,
    percentile,
    print_beside_python,
    start_daemon,
    temp_dir,
    verdict,
)
from coord.core.board import Board
from coord.storage import postgres
from reservations import FREE_PATH, HELD_PATH, hold_reservations

ADMIN_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
THREADS = 4  # notify: writers at once (connections are shared with whatever else runs)
_names = itertools.count(1)


@contextmanager
def scratch_database(admin_dsn: str) -> Iterator[str]:
    """A new, empty database's URL (``coord init --database`` takes URLs); dropped after."""
    name = f"coord_bench_follow_{os.getpid()}_{next(_names)}"
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}".encode())
    parts = conninfo_to_dict(make_conninfo(admin_dsn, dbname=name))
    url = (
        f"postgresql://{parts.get('user') or 'postgres'}@{parts.get('host') or '127.0.0.1'}:"
        f"{parts.get('port') or 5432}/{name}"
    )
    try:
        yield url
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())


def team_checkout(name: str, url: str) -> Path:
    """A repository whose ``.coord/`` is a board in the database ``url``."""
    root = temp_dir(name)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    env = {**os.environ, "COORD_DIR": str(root / ".coord")}
    subprocess.run(
        [PYTHON, "-m", "coord", "init", "--database", url],
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
    )
    return root / ".coord"


def wait_for_mirror(board_dir: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not (board_dir / "mirror.db").exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"no mirror in {board_dir}: see its daemon-bench.log")
        time.sleep(0.02)


# --- the guard -------------------------------------------------------------------------------


def bench_guard(admin_dsn: str, runs: int) -> None:
    sqlite_dir = new_board_dir("follow-guard-sqlite")
    log(f"guard: SQLite board, 1,000 reservations in {hold_reservations(sqlite_dir):.1f}s")
    with scratch_database(admin_dsn) as url:
        pg_dir = team_checkout("follow-guard-pg", url)
        log(f"guard: PostgreSQL board, 1,000 reservations in {hold_reservations(pg_dir):.1f}s")
        daemon = start_daemon(pg_dir)
        wait_for_mirror(pg_dir)
        env = {k: v for k, v in os.environ.items() if k not in ("COORD_DIR", "COORD_AGENT")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as in reservations.py
        env["PYTHONPYCACHEPREFIX"] = str(temp_dir("pycache"))
        guard = [PYTHON, "-m", "coord", "guard", "--as", "someone"]
        commands: dict[str, tuple[list[str], int, Path]] = {
            "python -c pass": ([PYTHON, "-c", "pass"], 0, sqlite_dir.parent)
        }
        for board, where in (("SQLite", sqlite_dir), ("PostgreSQL", pg_dir)):
            for path, code, what in ((FREE_PATH, 0, "free"), (HELD_PATH, 2, "held")):
                commands[f"guard <{what}>, {board} board"] = ([*guard, path], code, where.parent)
        times: dict[str, list[float]] = {name: [] for name in commands}
        log(f"guard: {runs} runs of each, interleaved, after 3 warm-up runs")
        for n in range(runs + 3):
            for name, (argv, code, cwd) in commands.items():
                began = time.perf_counter()
                done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, timeout=60)
                took = time.perf_counter() - began
                if done.returncode != code:
                    raise RuntimeError(f"{name}: exit {done.returncode}: {done.stderr!r}")
                if n >= 3:
                    times[name].append(took)
        daemon.stop()
    base = median(times["python -c pass"])
    print(
        f"\n== guard on a team board: `coord guard PATH`, fresh process, median of {runs}; "
        "1,000 live reservations; PostgreSQL: read from the daemon's mirror (fresh)"
    )
    print_beside_python(times, base)
    worst = max(median(times[f"guard <{w}>, PostgreSQL board"]) for w in ("free", "held"))
    sqlite = max(median(times[f"guard <{w}>, SQLite board"]) for w in ("free", "held"))
    print(f"   PostgreSQL / SQLite board (slower of free/held): {worst / sqlite:.2f}x")
    print(
        f"   target: guard on the PostgreSQL board <= 3x python -c pass ... {worst / base:.2f}x  "
        f"{verdict(worst / base <= 3)}"
    )


# --- event delivery --------------------------------------------------------------------------


class Http:
    """One keep-alive connection to a daemon."""

    def __init__(self, server: Server) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        self.headers = {"Authorization": f"Bearer {server.token}"}

    def call(self, method: str, path: str, body: object = None) -> object:
        data = None if body is None else json.dumps(body).encode()
        headers = {**self.headers, "Content-Type": "application/json"} if data else self.headers
        self.conn.request(method, path, body=data, headers=headers)
        answer = self.conn.getresponse()
        payload = json.loads(answer.read())
        if answer.status >= 300:
            raise RuntimeError(f"{method} {path}: {answer.status} {payload}")
        return payload


def delivery(reader: Http, writer: Http, rounds: int) -> list[float]:
    """Seconds from sending a write through ``writer`` to the answer of ``reader``'s long
    poll (already waiting) holding its event; ``rounds`` times."""
    took = []
    last = reader.call("GET", "/v1/events?after=0&limit=1000")["last_seq"]  # type: ignore[index]
    for n in range(rounds):
        got: dict[str, object] = {}

        def read(after: int = last, got: dict[str, object] = got) -> None:
            got["answer"] = reader.call("GET", f"/v1/events?after={after}&wait=10")
            got["at"] = time.perf_counter()

        thread = threading.Thread(target=read)
        thread.start()
        time.sleep(0.02)  # the reader's request reaches its wait
        sent = time.perf_counter()
        writer.call("POST", "/v1/items", {"agent": "bench", "title": f"event {n}"})
        thread.join()
        events = got["answer"]["events"]  # type: ignore[index]
        if not events:
            raise RuntimeError("the long poll ran out without the event")
        took.append(float(got["at"]) - sent)  # type: ignore[arg-type]
        last = got["answer"]["last_seq"]  # type: ignore[index]
    return took


def stream_delivery(server: Server, writer: Http, rounds: int) -> list[float]:
    """Seconds from sending a write through ``writer`` to its frame on an open
    ``/v1/events/stream`` of ``server``; ``rounds`` times."""
    reader = Http(server)
    last = reader.call("GET", "/v1/events?after=0&limit=1000")["last_seq"]  # type: ignore[index]
    stream = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    stream.request("GET", f"/v1/events/stream?after={last}&keepalive=60", headers=reader.headers)
    response = stream.getresponse()
    if response.status != 200:
        raise RuntimeError(f"the stream answered {response.status}")
    took = []
    try:
        for n in range(rounds):
            sent = time.perf_counter()
            writer.call("POST", "/v1/items", {"agent": "bench", "title": f"event {n}"})
            while not response.readline().startswith(b"data: "):
                pass
            took.append(time.perf_counter() - sent)
    finally:
        stream.close()
    return took


def bench_events(admin_dsn: str, rounds: int) -> None:
    with scratch_database(admin_dsn) as url:
        one, two = team_checkout("follow-a", url), team_checkout("follow-b", url)
        a, b = start_daemon(one), start_daemon(two)
        wait_for_mirror(one)
        wait_for_mirror(two)
        figures = {}
        for name, server in (("same daemon (reference)", a), ("other daemon", b)):
            # fresh connections per phase: an idle one is closed by the daemon after 5 s
            writer, reader = Http(a), Http(server)
            delivery(reader, writer, 10)  # warm-up
            log(f"events: {rounds} rounds, reader on the {name}")
            figures[name] = sorted(delivery(reader, writer, rounds))
        for name, server in (("same daemon, SSE stream", a), ("other daemon, SSE stream", b)):
            writer = Http(a)
            stream_delivery(server, writer, 10)  # warm-up
            log(f"events: {rounds} rounds, the stream of the {name}")
            figures[name] = sorted(stream_delivery(server, writer, rounds))
        a.stop()
        b.stop()
    print(
        f"\n== event delivery: POST /v1/items through daemon A until a waiting long poll "
        f"returns it (or its frame arrives on an open stream), {rounds} rounds, one database"
    )
    for name, values in figures.items():
        print(
            f"   reader on the {name:<26} p50 {percentile(values, 50) * 1000:6.1f} ms  "
            f"p99 {percentile(values, 99) * 1000:6.1f} ms  max {values[-1] * 1000:6.1f} ms"
        )
    for name in ("other daemon", "other daemon, SSE stream"):
        p99 = percentile(figures[name], 99)
        print(
            f"   target: p99 through another daemon ({name}) <= 100 ms ... {p99 * 1000:.1f} ms  "
            f"{verdict(p99 <= 0.1)}"
        )


# --- what NOTIFY costs ----------------------------------------------------------------------


class Writers:
    """``threads`` long-lived threads, each with a board of its own (one connection each:
    a new thread per batch would open a connection per batch)."""

    def __init__(self, url: str, threads: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.url, self.threads = url, threads
        self.pool = ThreadPoolExecutor(max_workers=threads)
        self.local = threading.local()
        self.boards: list[Board] = []

    def _board(self) -> Board:
        board = getattr(self.local, "board", None)
        if board is None:
            board = self.local.board = Board(postgres.PostgresStorage(self.url))
            self.boards.append(board)
        return board

    def _run(self, count: int) -> None:
        board = self._board()
        for n in range(count):
            board.add(f"item {n}", created_by="bench")

    def adds(self, count: int) -> float:
        """Write transactions per second: ``count`` items added over the threads."""
        per = max(1, count // self.threads)
        began = time.perf_counter()
        for future in [self.pool.submit(self._run, per) for _ in range(self.threads)]:
            future.result()  # a writer's error ends the bench: a failed batch is no figure
        return per * self.threads / (time.perf_counter() - began)

    def close(self) -> None:
        self.pool.shutdown()
        for board in self.boards:
            board.close()


def _listen(dsn: str, stop: threading.Event) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"LISTEN {postgres.NOTIFY_CHANNEL}")
        while not stop.is_set():
            for _ in conn.notifies(timeout=0.2):
                pass


def bench_notify(admin_dsn: str, writes: int, rounds: int = 20) -> None:
    with scratch_database(admin_dsn) as url:
        postgres.PostgresStorage(url).close()  # the schema
        stop = threading.Event()
        listeners = [threading.Thread(target=_listen, args=(url, stop)) for _ in range(2)]
        for t in listeners:
            t.start()
        try:
            print(
                f"\n== NOTIFY on commit: Board.add per second, median of {rounds} batches of "
                f"{writes // rounds} with and {rounds} without, alternating; two connections "
                "listening"
            )
            _notify_figures(url, writes, rounds, "commits flushed (synchronous_commit = on)")
            with psycopg.connect(admin_dsn, autocommit=True) as admin:
                name = conninfo_to_dict(url)["dbname"]
                admin.execute(f"ALTER DATABASE {name} SET synchronous_commit = off".encode())
            _notify_figures(
                url, writes, rounds, "commits not waited for (synchronous_commit = off)"
            )
        finally:
            stop.set()
            for t in listeners:
                t.join()


def _notify_figures(url: str, writes: int, rounds: int, what: str) -> None:
    """Batches of ``writes / rounds`` adds, with and without the NOTIFY in turn (which goes
    first alternates), on connections kept open: the median batch of each."""
    real = postgres._commit_notifying
    silent: Callable[[object], str] = lambda tx: "COMMIT"  # noqa: E731
    rates: dict[tuple[int, bool], list[float]] = {}
    for threads in (1, THREADS):
        writers = Writers(url, threads)
        try:
            writers.adds(100)  # warm-up: connections open, plans cached
            for n in range(rounds):
                for notifying in (n % 2 == 0, n % 2 == 1):
                    postgres._commit_notifying = real if notifying else silent  # type: ignore[assignment]
                    batch = writers.adds(writes // rounds)
                    rates.setdefault((threads, notifying), []).append(batch)
        finally:
            postgres._commit_notifying = real
            writers.close()
    print(f"   {what}:")
    for threads in (1, THREADS):
        on, off = median(rates[threads, True]), median(rates[threads, False])
        print(
            f"     {threads} thread{'s' if threads > 1 else ' '}: with NOTIFY {on:7.0f}/s, "
            f"without {off:7.0f}/s: {on / off:.2f}x"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "bench", nargs="?", default="all", choices=("all", "guard", "events", "notify")
    )
    parser.add_argument("--dsn", default=ADMIN_DSN, help="an admin connection to the server")
    parser.add_argument("--runs", type=int, default=30, help="guard: runs per command")
    parser.add_argument("--rounds", type=int, default=200, help="events: writes per reader")
    parser.add_argument("--writes", type=int, default=2000, help="notify: writes per figure")
    args = parser.parse_args(argv)
    chosen = ("guard", "events", "notify") if args.bench == "all" else (args.bench,)
    try:
        for name in chosen:
            if name == "guard":
                bench_guard(args.dsn, args.runs)
            elif name == "events":
                bench_events(args.dsn, args.rounds)
            else:
                bench_notify(args.dsn, args.writes)
            sys.stdout.flush()
    finally:
        CLEANUP.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
