"""The newest events, read from the board and framed once for every open event stream.

Ten streams that each read the board and encode each event cost the daemon ten times the
work per event (measured: a claim-next storm's server CPU per claim doubled with ten
readers, bench/stream.py). So while any stream is open, one task follows the log: woken by
``Server.changes`` (this daemon's writes, and whatever else notifies it) with a poll for
writers it cannot hear, it reads what is new in one query, frames it as SSE once, keeps the
newest ``FEED_EVENTS`` frames (at most ``FEED_BYTES``), and wakes the streams, which copy
out what each has not sent. A stream further back than the feed reaches reads the board
itself, a page at a time (bounded in bytes), until it catches up.

The feed also keeps the daemon's ``Slots`` for the streams' chunks, and cuts a stream that
waits on its socket for too long (``cut_stalled``) or when the daemon stops (``stop``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from functools import partial
from typing import Any

from coord import model
from coord.errors import CoordError
from coord.server.context import Server
from coord.server.pipeline import render

FEED_EVENTS = 4096
FEED_BYTES = 8 * 1024 * 1024
PAGE_EVENTS = 200  # events read from the board at a time, at most
# ... and at most about this many bytes of them: an edit's event keeps a 64 KB body, and a
# page of 200 such is 13 MB to decode (the first event of a page always comes, however big)
READ_BYTES = 1024 * 1024
# a write waiting this long counts as stuck; a waiting stream looks at its connection this often
POLL_SECONDS = 0.25
COALESCE_SECONDS = 0.025  # after a wake-up, let a burst of writes land: one read, not many
# How many streams may hold a chunk at once (framing it, or in their socket's write buffer):
# what all streams together hold beside the feed is this many chunks (stream.CHUNK_BYTES
# each). A stream waits for a slot; one whose write has waited STALL_SECONDS while others
# wait is cut, so readers that never read cannot keep the rest waiting.
STREAM_SLOTS = 8
STALL_SECONDS = 2.0


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
        self.slots = Slots(STREAM_SLOTS)

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
        a reload could not reach it, and it would hold its buffers for ever. And one whose
        write has waited ``STALL_SECONDS`` while other streams wait for its slot."""
        limit = self.server.stream_max_behind
        contended = self.slots.wanted
        for stream in list(self.streams):
            since = stream.writing_since
            if since is None:
                continue
            waited = now - since
            stuck = waited >= POLL_SECONDS and (all_stuck or self.last - stream.after > limit)
            if stuck or (waited >= STALL_SECONDS and contended):
                stream.abort()

    def stop(self) -> None:
        """The daemon stops: cut every stream whose write waits for its socket (it would hold
        the shutdown until the peer reads), wake the others (they end at once)."""
        self.cut_stalled(asyncio.get_running_loop().time() + POLL_SECONDS, all_stuck=True)
        self._wake()

    async def _follow(self) -> None:
        server = self.server
        loop = asyncio.get_running_loop()
        try:
            while self.streams and not server.closing:
                self.cut_stalled(loop.time())
                try:
                    page = await server.call(
                        partial(server.board.events, self.last, PAGE_EVENTS, max_bytes=READ_BYTES)
                    )
                except CoordError:
                    self.broken = True
                    return
                if page:
                    added = self._add(page)
                    self._wake()
                    if len(page) == PAGE_EVENTS or added >= READ_BYTES:  # more to read: let
                        await asyncio.sleep(0)  # the streams (and every request) go first
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

    def _add(self, page: list[model.Event]) -> int:
        """Frame and keep the page; the bytes it added."""
        added = 0
        for event in page:
            framed = frame(event)
            self.frames.append(framed)
            self.items.append(event.item_id)
            added += len(framed)
        self.size += added
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
        return added


def _settle(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class Slots:
    """A count of slots taken and given back in turn (first come, first served), with a
    bounded wait: a stream waiting for one still looks at its connection and the daemon's
    stop (``asyncio.Semaphore`` has no timeout but ``wait_for``'s task per wait)."""

    def __init__(self, count: int) -> None:
        self.free = count
        self._queue: collections.deque[asyncio.Future[bool]] = collections.deque()

    @property
    def wanted(self) -> bool:
        """Whether a stream waits for a slot now."""
        return any(not waiter.done() for waiter in self._queue)

    async def take(self, timeout: float) -> bool:
        """A slot (True), or False after ``timeout`` with none."""
        if self.free > 0 and not self.wanted:
            self.free -= 1
            return True
        waiter = asyncio.get_running_loop().create_future()
        timer = waiter.get_loop().call_later(timeout, _refuse, waiter)
        self._queue.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.result():
                self.give()  # handed a slot as the stream was cancelled: pass it on
            raise
        finally:
            timer.cancel()
            with contextlib.suppress(ValueError):
                self._queue.remove(waiter)

    def give(self) -> None:
        while self._queue:
            waiter = self._queue.popleft()
            if not waiter.done():
                waiter.set_result(True)
                return
        self.free += 1


def _refuse(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)
