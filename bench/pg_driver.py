"""Which PostgreSQL driver for the team backend: psycopg 3 (sync) or asyncpg, measured here.

    .venv/bin/python bench/pg_driver.py [--n 2000] [--workers 8] [--dsn postgresql://…]

Each driver runs the same claim transaction N times: BEGIN, the board's write lock with the
server's clock, claim-next's one-statement claim (conditional UPDATE over a FOR UPDATE SKIP
LOCKED pick), the event append from the counter row, COMMIT. Figures, in ops/s:

- one connection, one claim after another (the daemon today: Board calls run inline);
- ``--workers`` connections at once (threads for psycopg, tasks for asyncpg), with the
  board's advisory lock and without it: what serialising every write costs;
- the backend itself (``PostgresStorage`` + ``take_first_pending`` + ``append_event``).

It prints; it asserts nothing. Needs ``pip install -e '.[postgres]' asyncpg``. A scratch
database ``coord_bench_<pid>`` is created on the server and dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import psycopg

from coord.storage.postgres import WRITE_LOCK_KEY, PostgresStorage

KINDS = ["task"]
_LOCK = f"SELECT pg_advisory_xact_lock({WRITE_LOCK_KEY}), "
_CLOCK = "extract(epoch FROM clock_timestamp())::float8"
_CLAIM = """
UPDATE items SET state = 'claimed', claimed_by = {0}, fencing_token = fencing_token + 1,
       lease_expires_at = {1}, updated_at = {2}
 WHERE id = (SELECT id FROM items WHERE state = 'pending' AND kind = ANY({3})
              ORDER BY priority, id LIMIT 1 FOR UPDATE SKIP LOCKED)
   AND state = 'pending'
RETURNING id, fencing_token"""
_EVENT = """
WITH next AS (UPDATE board_counters SET last_seq = last_seq + 1 RETURNING last_seq)
INSERT INTO events (seq, at, agent, item_id, kind, details)
VALUES ((SELECT last_seq FROM next), {0}, {1}, {2}, 'claimed', {3}::json) RETURNING seq"""
PSYCOPG_CLAIM = _CLAIM.format("%s", "%s", "%s", "%s")
PSYCOPG_EVENT = _EVENT.format("%s", "%s", "%s", "%s")
ASYNCPG_CLAIM = _CLAIM.format("$1", "$2", "$3", "$4")
ASYNCPG_EVENT = _EVENT.format("$1", "$2", "$3", "$4")


def _seed(dsn: str, count: int) -> None:
    PostgresStorage(dsn).close()  # the board's schema, by its migrations
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO items (id, kind, title, priority, state, created_by, created_at, "
            "updated_at) SELECT g, 'task', 't', g %% 5, 'pending', 'bench', 0, 0 "
            "FROM generate_series(1, %s) g",
            (count,),
        )
        conn.execute("UPDATE board_counters SET last_item = %s", (count,))
        conn.execute("VACUUM ANALYZE")


def _psycopg_claims(dsn: str, n: int, agent: str, locked: bool) -> None:
    begin = _LOCK + _CLOCK if locked else f"SELECT {_CLOCK}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(n):
            conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
            now = conn.execute(begin).fetchone()[-1]  # type: ignore[index]
            row = conn.execute(PSYCOPG_CLAIM, (agent, now + 60, now, KINDS)).fetchone()
            if row is not None:
                conn.execute(PSYCOPG_EVENT, (now, agent, row[0], '{"token":1}'))
            conn.execute("COMMIT")


async def _asyncpg_claims(dsn: str, n: int, agent: str, locked: bool) -> None:
    import asyncpg

    begin = _LOCK + _CLOCK if locked else f"SELECT {_CLOCK}"
    conn = await asyncpg.connect(dsn)
    try:
        for _ in range(n):
            await conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
            now = (await conn.fetchrow(begin))[-1]
            row = await conn.fetchrow(ASYNCPG_CLAIM, agent, now + 60, now, KINDS)
            if row is not None:
                await conn.fetchrow(ASYNCPG_EVENT, now, agent, row[0], '{"token":1}')
            await conn.execute("COMMIT")
    finally:
        await conn.close()


def _backend_claims(dsn: str, n: int, agent: str) -> None:
    storage = PostgresStorage(dsn)
    try:
        for _ in range(n):
            with storage.write() as tx:
                now = tx.clock() or 0.0
                item = tx.take_first_pending(agent, KINDS, None, now, now + 60)
                if item is not None:
                    tx.append_event(
                        at=now, agent=agent, item_id=item.id, kind="claimed", details={"token": 1}
                    )
    finally:
        storage.close()


def _threads(workers: int, run: Callable[[int], None]) -> None:
    threads = [threading.Thread(target=run, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


async def _tasks(workers: int, dsn: str, n: int, locked: bool) -> None:
    await asyncio.gather(*(_asyncpg_claims(dsn, n, f"w{w}", locked) for w in range(workers)))


def _rate(label: str, claims: int, run: Callable[[], None]) -> float:
    start = time.perf_counter()
    run()
    rate = claims / (time.perf_counter() - start)
    print(f"  {label:<52} {rate:8.0f} claims/s")
    return rate


def _figures(dsn: str, n: int, workers: int) -> None:
    per = max(1, n // workers)
    print("one connection, one claim after another:")
    sync = _rate("psycopg 3 (sync)", n, lambda: _psycopg_claims(dsn, n, "a", True))
    asy = _rate("asyncpg", n, lambda: asyncio.run(_asyncpg_claims(dsn, n, "b", True)))
    _rate("the backend (PostgresStorage, psycopg)", n, lambda: _backend_claims(dsn, n, "c"))
    print(f"  asyncpg / psycopg: {asy / sync:.2f}x")
    print(f"{workers} connections at once:")
    figures = {}
    for locked in (True, False):
        what = "with the board's write lock" if locked else "without it"
        figures["psycopg", locked] = _rate(
            f"psycopg 3, {workers} threads, {what}",
            per * workers,
            lambda locked=locked: _threads(  # type: ignore[misc]
                workers, lambda w: _psycopg_claims(dsn, per, f"p{w}", locked)
            ),
        )
        figures["asyncpg", locked] = _rate(
            f"asyncpg, {workers} tasks, {what}",
            per * workers,
            lambda locked=locked: asyncio.run(_tasks(workers, dsn, per, locked)),  # type: ignore[misc]
        )
    for driver in ("psycopg", "asyncpg"):
        ratio = figures[driver, True] / figures[driver, False]
        print(f"  {driver}: the write lock keeps {ratio:.2f}x of the unlocked rate")
    locked_ratio = figures["asyncpg", True] / figures["psycopg", True]
    print(f"  asyncpg / psycopg at {workers}: {locked_ratio:.2f}x (locked)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--n", type=int, default=2000, help="claims per figure")
    parser.add_argument("--workers", type=int, default=8)
    args = parser.parse_args()
    n, workers = args.n, args.workers
    name = f"coord_bench_{os.getpid()}"
    dsn = urlsplit(args.dsn)._replace(path=f"/{name}").geturl()  # a URL: asyncpg reads no other
    with psycopg.connect(args.dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}".encode())
    try:
        _seed(dsn, 24 * n)
        print(f"claim + event transaction, {n} claims per figure ({os.cpu_count()} CPUs)")
        _psycopg_claims(dsn, 100, "warm", True)  # warm the server's caches
        print("== commits flushed to disk (synchronous_commit = on, as deployed)")
        _figures(dsn, n, workers)
        # The flush of each commit dominates on a busy disk and hides the drivers: without
        # it, what is left is the drivers' and the server's own work per statement.
        with psycopg.connect(args.dsn, autocommit=True) as admin:
            admin.execute(f"ALTER DATABASE {name} SET synchronous_commit = off".encode())
        print("== commits not waited for (synchronous_commit = off: the drivers' own cost)")
        _figures(dsn, n, workers)
    finally:
        with psycopg.connect(args.dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
