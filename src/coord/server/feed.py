"""The newest events, read from the board and framed once for every open event stream.

Ten streams that each read the board and encode each event cost the daemon ten times the
work per event (measured: a claim-next storm's server CPU per claim doubled with ten
readers, bench/stream.py). So while any stream is open, one task follows the log: woken by
``Server.changes`` (this daemon's writes, and whatever else notifies it) with a poll for
writers it cannot hear, it reads what is new in one query, frames it as SSE once, keeps the
newest ``FEED_EVENTS`` frames (at most ``FEED_BYTES``), and wakes the streams, which copy
out what each has not sent. A stream further back than the feed reaches reads the board
itself, a page at a time, until it catches up.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from coord import model
from coord.errors import CoordError
from coord.server.context import Server
from coord.server.pipeline import render

FEED_EVENTS = 4096
FEED_BYTES = 8 * 1024 * 1024
PAGE_EVENTS = 200  # events read from the board at a time
# a write waiting this long counts as stuck; a waiting stream looks at its connection this often
POLL_SECONDS = 0.25
COALESCE_SECONDS = 0.025  # after a wake-up, let a burst of writes land: one read, not many


def frame(event: model.Event) -> bytes:
    return b"id: %d\nevent: coord\ndata: %s\n\n" % (event.seq, render(event.to_dict()))


class Feed:
    """The frames of events ``base + 1`` to ``last``, for the streams of one daemon."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.base = server.board.last_seq()
        self.frames: list[bytes] = []
        self.items: list[int | None] = []
        self.size = 0
        self.streams: set[Any] = set()  # stream.EventStream
        self.broken = False  # the board failed: streams end, their clients reconnect
        self._waiters: list[asyncio.Future[None]] = []
        self._task: asyncio.Future[None] | None = None

    @classmethod
    def of(cls, server: Server) -> Feed:
        if server.stream_feed is None:
            server.stream_feed = cls(server)
        feed: Feed = server.stream_feed
        return feed

    @property
    def last(self) -> int:
        return self.base + len(self.frames)

    def join(self, stream: Any) -> None:
        self.streams.add(stream)
        if self._task is None or self._task.done():
            self.broken = False
            self._task = asyncio.ensure_future(self._follow())

    def leave(self, stream: Any) -> None:
        self.streams.discard(stream)  # the task ends at its next turn once nobody reads

    def since(self, after: int, item_id: int | None, max_bytes: int) -> tuple[list[bytes], int]:
        """The frames after ``after`` (of ``item_id`` only, if given), up to about
        ``max_bytes``, and the last sequence number looked at. ``after`` must be ``base`` or
        later (``covers``)."""
        found: list[bytes] = []
        size, seq = 0, after
        for index in range(after - self.base, len(self.frames)):
            seq = self.base + 1 + index
            if item_id is None or self.items[index] == item_id:
                found.append(self.frames[index])
                size += len(self.frames[index])
                if size >= max_bytes:
                    break
        return found, seq

    def covers(self, after: int) -> bool:
        return after >= self.base and not self.broken

    async def wait(self, timeout: float) -> None:
        """Until new events arrive, the feed stops, or ``timeout``. A future and a timer, not
        a task: every stream waits here after every write."""
        waiter = asyncio.get_running_loop().create_future()
        timer = waiter.get_loop().call_later(timeout, _settle, waiter)
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)  # timed out: not woken, still listed

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            _settle(waiter)

    def cut_stalled(self, now: float, *, all_stuck: bool = False) -> None:
        """Cut each stream whose socket has taken nothing for a while as the board moved
        more than ``stream_max_behind`` events past it (or, ``all_stuck``, the daemon stops):
        a reload could not reach it, and it would hold its buffers for ever."""
        limit = self.server.stream_max_behind
        for stream in list(self.streams):
            since = stream.writing_since
            stuck = since is not None and now - since >= POLL_SECONDS
            if stuck and (all_stuck or self.last - stream.after > limit):
                stream.abort()

    async def _follow(self) -> None:
        server = self.server
        loop = asyncio.get_running_loop()
        try:
            while self.streams and not server.closing:
                self.cut_stalled(loop.time())
                try:
                    page = await server.call(server.board.events, self.last, PAGE_EVENTS)
                except CoordError:
                    self.broken = True
                    return
                if page:
                    self._add(page)
                    self._wake()
                    if len(page) == PAGE_EVENTS:  # more to read: let the streams write first
                        await asyncio.sleep(0)
                        continue
                began, poll = loop.time(), server.changes.poll_seconds
                await server.changes.wait(poll)  # polls seldom while a listener hears all
                if loop.time() - began < poll:  # woken by a write
                    await asyncio.sleep(COALESCE_SECONDS)
        finally:
            if server.closing:
                self.cut_stalled(loop.time() + POLL_SECONDS, all_stuck=True)
            if not self.streams:  # nobody reads: hold nothing
                self.base, self.frames, self.items, self.size = self.last, [], [], 0
            self._wake()

    def _add(self, page: list[model.Event]) -> None:
        for event in page:
            framed = frame(event)
            self.frames.append(framed)
            self.items.append(event.item_id)
            self.size += len(framed)
        if len(self.frames) > FEED_EVENTS or self.size > FEED_BYTES:  # keep the newer half
            drop, dropped = 0, 0
            while drop < len(self.frames) and (
                len(self.frames) - drop > FEED_EVENTS // 2 or self.size - dropped > FEED_BYTES // 2
            ):
                dropped += len(self.frames[drop])
                drop += 1
            del self.frames[:drop], self.items[:drop]
            self.base += drop
            self.size -= dropped


def _settle(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
