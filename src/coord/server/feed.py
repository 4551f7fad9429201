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

from coord import model
from coord.errors import CoordError
from coord.server.context import Server
from coord.server.pipeline import render

FEED_EVENTS = 4096
FEED_BYTES = 8 * 1024 * 1024
PAGE_EVENTS = 200  # events read from the board at a time
POLL_SECONDS = 0.25  # how often the feed looks at the board when nothing in this daemon wrote
COALESCE_SECONDS = 0.01  # after a wake-up, let a burst of writes land: one read, not many


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
        self.readers = 0
        self.broken = False  # the board failed: streams end, their clients reconnect
        self._arrived = asyncio.Event()
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

    def join(self) -> None:
        self.readers += 1
        if self._task is None or self._task.done():
            self.broken = False
            self._task = asyncio.ensure_future(self._follow())

    def leave(self) -> None:
        self.readers -= 1  # the task ends at its next turn once nobody reads

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
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._arrived.wait(), timeout)

    def _wake(self) -> None:
        self._arrived.set()
        self._arrived = asyncio.Event()

    async def _follow(self) -> None:
        server = self.server
        loop = asyncio.get_running_loop()
        try:
            while self.readers > 0 and not server.closing:
                try:
                    page = server.board.events(self.last, PAGE_EVENTS)
                except CoordError:
                    self.broken = True
                    return
                if page:
                    self._add(page)
                    self._wake()
                    if len(page) == PAGE_EVENTS:
                        continue
                began = loop.time()
                await server.changes.wait(POLL_SECONDS)
                if loop.time() - began < POLL_SECONDS:  # woken by a write
                    await asyncio.sleep(COALESCE_SECONDS)
        finally:
            if self.readers <= 0:  # nobody reads: hold nothing
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
