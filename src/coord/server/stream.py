"""``GET /v1/events/stream``: the event log as Server-Sent Events, live.

Each board event is one SSE message, ``id: <seq>``, ``event: coord``, ``data: <the event's
JSON>``, in sequence order with no gap and none twice. Nothing is sent that the durable log
does not hold: a stream takes the newest events from the daemon's feed (``feed.py``: read
from the board and framed once for every stream) and older ones from the board, a page at a
time, so a client that reconnects with ``Last-Event-ID`` (after a dropped connection or a
daemon restart) gets exactly what it missed.

What a connection makes the daemon hold is bounded: the chunk being written (``PAGE_BYTES``,
give or take an event) plus the transport's write buffer (uvicorn pauses the writer at
64 KiB); while a socket does not take what was written, its stream waits and reads nothing
more. A reader more than ``limits.MAX_STREAM_BEHIND`` events behind the board's newest is
told to reload (``event: reload``) and the stream ends; one whose socket stopped taking data
while it fell that far behind is cut. Writers never wait for a reader: no lock is held while
a stream writes, and a board read is one short query.

The route goes through the same pipeline as every other (host, token): its handler checks
the request and returns an ``EventStream``, which the app runs as the response.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from starlette.responses import Response

from coord import model
from coord.errors import CoordError, InvalidInput
from coord.server.context import Call, Server, count, number
from coord.server.feed import PAGE_EVENTS, POLL_SECONDS, Feed, frame
from coord.server.pipeline import render

# written to the socket as one chunk of at most about PAGE_BYTES (past it, the rest of a page
# is read again next time)
PAGE_BYTES = 256 * 1024
KEEPALIVE_SECONDS = 15.0
MIN_KEEPALIVE, MAX_KEEPALIVE = 0.05, 300.0
# what a browser's EventSource waits before it reconnects (ms)
RETRY_MS = 1000

HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"x-accel-buffering", b"no"),  # a proxy in front must pass each message on at once
]


def events_stream(call: Call) -> EventStream:
    q = call.query
    resume = call.headers.get("last-event-id")
    after = count(resume, "Last-Event-ID", 0) if resume else count(q.get("after"), "after", 0)
    item = q.get("item")
    item_id = model.check_item_id(item) if item else None
    keepalive = number(q.get("keepalive"), "keepalive", KEEPALIVE_SECONDS)
    if not MIN_KEEPALIVE <= keepalive <= MAX_KEEPALIVE:
        raise InvalidInput(
            f"keepalive must be {MIN_KEEPALIVE:g} to {MAX_KEEPALIVE:g} seconds", field="keepalive"
        )
    Feed.of(call.server)  # made here, where a failing board is answered as its error
    return EventStream(call.server, after, item_id, keepalive)


class EventStream(Response):
    """The answer of one stream request: an ASGI app that writes events until the client
    goes, the daemon stops or the client falls too far behind."""

    def __init__(
        self, server: Server, after: int, item_id: int | None, keepalive: float
    ) -> None:  # no super().__init__: nothing of a plain response's body or headers is used
        self.server = server
        self.after = after  # the last event sent (or passed over, for another item)
        self.item_id = item_id
        self.keepalive = keepalive
        self.status_code = 200
        self.background = None
        # watched by the feed: since when a write has waited for the socket, and whether the
        # feed cut the connection for it
        self.writing_since: float | None = None
        self.cut = False
        self.gone = asyncio.Event()
        self._scope: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self._scope = scope
        listener = asyncio.ensure_future(_until_disconnect(receive, self.gone))
        feed = Feed.of(self.server)
        feed.join(self)
        try:
            await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
            if scope.get("method") == "HEAD":  # the headers say it all; no stream follows
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            opening = b"retry: %d\n: coord event stream after %d\n\n" % (RETRY_MS, self.after)
            if await self._write(send, opening) and await self._run(send, feed):
                with contextlib.suppress(OSError):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            feed.leave(self)
            listener.cancel()

    def abort(self) -> None:
        """Drop the connection without flushing what its socket would not take (the daemon's
        protocol offers it, ``connections.bounded_protocol``): a plain close would keep the
        buffer until the peer reads. The write waiting on it returns."""
        self.cut = True
        abort = (self._scope or {}).get("extensions", {}).get("coord.abort")
        if abort is not None:
            abort()

    async def _run(self, send: Any, feed: Feed) -> bool:
        """Write events until the end; False when the connection is gone."""
        server = self.server
        loop = asyncio.get_running_loop()
        quiet_since = loop.time()
        try:
            while not self.gone.is_set() and not server.closing:
                if feed.covers(self.after):  # the usual case: the newest events, framed once
                    frames, self.after = feed.since(self.after, self.item_id, PAGE_BYTES)
                    data = b"".join(frames)
                elif feed.broken:  # the board failed: end; the client reconnects
                    return True
                else:  # further back than the feed reaches: the board, a page at a time
                    page = await server.call(
                        server.board.events, self.after, PAGE_EVENTS, self.item_id
                    )
                    full = len(page) == PAGE_EVENTS
                    newest = await server.call(server.board.last_seq) if full else 0
                    if full and newest - self.after > server.stream_max_behind:
                        return await self._reload(send)
                    if not page:  # nothing of this item up to the newest: join the feed
                        self.after = max(self.after, feed.base)
                    data = self._chunk(page)
                if data:
                    if not await self._write(send, data):
                        return False
                    quiet_since = loop.time()
                    continue
                due = quiet_since + self.keepalive - loop.time()
                if due <= 0:
                    if not await self._write(send, b": keep-alive\n\n"):
                        return False
                    quiet_since = loop.time()
                elif feed.covers(self.after):
                    await feed.wait(min(due, POLL_SECONDS))
        except CoordError:  # the board is gone or failing: end; the client reconnects
            return True
        return not self.gone.is_set()

    def _chunk(self, page: list[model.Event]) -> bytes:
        """The page's frames, up to about ``PAGE_BYTES`` (events can be large: an edit's
        event keeps the old text); ``after`` moves to the last one taken."""
        frames, size = [], 0
        for event in page:
            framed = frame(event)
            frames.append(framed)
            size += len(framed)
            self.after = event.seq
            if size >= PAGE_BYTES:
                break
        return b"".join(frames)

    async def _reload(self, send: Any) -> bool:
        last = await self.server.call(self.server.board.last_seq)
        reason = (
            f"more than {self.server.stream_max_behind} events behind (at {self.after}, the "
            f"board at {last}): read the board's state again, then follow from its newest event"
        )
        data = b"event: reload\ndata: %s\n\n" % render({"reason": reason, "last_seq": last})
        return await self._write(send, data)

    async def _write(self, send: Any, data: bytes) -> bool:
        """Hand ``data`` to the connection: False if it is gone. uvicorn waits here while the
        socket's buffer is full; the feed cuts a stream that waits while falling too far
        behind (``Feed.cut_stalled``)."""
        self.writing_since = asyncio.get_running_loop().time()
        try:
            await send({"type": "http.response.body", "body": data, "more_body": True})
        except OSError:
            return False
        finally:
            self.writing_since = None
        return not (self.cut or self.gone.is_set())


async def _until_disconnect(receive: Any, gone: asyncio.Event) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.set()
            return
