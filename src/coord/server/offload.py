"""A PostgreSQL board's calls, run on a few worker threads: the event loop never waits for
the database.

A SQLite board's call is a short transaction in this process, its one wait (the write lock)
bounded by the daemon's busy timeout: it runs inline on the loop, where a hop to a thread
would cost more than the call (``coord.server.app``). A PostgreSQL board's call is a round
trip or more to a server that may stop answering; run inline, a silent server froze the
whole daemon, /v1/health included, for as long as it was silent. Here each runs on one of
``workers`` threads (the storage keeps one connection per thread: the pool is the daemon's
connection pool), and the loop awaits it:

- every wait of a call for the server is bounded by the storage (``postgres_conn``), and once
  the storage has seen the server silent it refuses the calls queued behind at once: a call
  under way ends within seconds of the server falling silent, on its own; one that is
  making progress (a large import) is never cut;
- a call that has waited ``bound`` seconds for a thread (every connection busy, with long
  requests or with a server that does not answer) is never begun: 503 ``board_busy``,
  nothing was changed.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from coord.errors import BoardBusy

_QUEUED, _RUNNING, _ABANDONED = range(3)


class _Job:
    """One call, which may be abandoned while it waits for a thread (then it never runs)."""

    __slots__ = ("args", "fn", "lock", "state")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn, self.args = fn, args
        self.lock = threading.Lock()
        self.state = _QUEUED

    def __call__(self) -> Any:
        with self.lock:
            if self.state == _ABANDONED:
                return None
            self.state = _RUNNING
        return self.fn(*self.args)

    def abandon(self) -> bool:
        """True if the call had not begun, and now never will."""
        with self.lock:
            if self.state == _QUEUED:
                self.state = _ABANDONED
                return True
            return False


class BoardCalls:
    def __init__(self, workers: int, bound: float, database: str) -> None:
        self.bound = bound
        self.database = database  # where the board is, for the messages
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="coord-board")

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` on a worker thread; its result, or its exception raised here."""
        job = _Job(fn, args)
        # in the request's context: the provenance its events record (coord.core.provenance)
        future = asyncio.wrap_future(self._pool.submit(contextvars.copy_context().run, job))
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.bound)
        except TimeoutError:
            if not job.abandon():
                return await future  # begun: each of its waits is bounded by the storage
            future.add_done_callback(_forget)
            raise BoardBusy(
                f"every connection of this daemon to the board's database at {self.database} "
                f"has been busy for {self.bound:g} s (long requests, or a server that does not "
                f"answer); nothing was changed; try again in {BoardBusy.retry_after} s",
                database=self.database,
                retry_after=BoardBusy.retry_after,
            ) from None

    def close(self) -> None:
        """Refuse what has not begun; wait for the calls under way (each bounded)."""
        self._pool.shutdown(wait=True, cancel_futures=True)


def _forget(future: asyncio.Future[Any] | Future[Any]) -> None:
    """An abandoned call's outcome: retrieved, so asyncio does not log it as lost."""
    if not future.cancelled():
        future.exception()
