"""``GET /v1/events/stream``: the event log as Server-Sent Events, live.

Each board event is one SSE message, ``id: <seq>``, ``event: coord``, ``data: <the event's
JSON>``, in sequence order with no gap and none twice. Nothing is sent that the durable log
does not hold: a stream takes the newest events from the daemon's feed (``feed.py``: read
from the board and framed once for every stream) and older ones from the board, a page at a
time, so a client that reconnects with ``Last-Event-ID`` (after a dropped connection or a
daemon restart) gets exactly what it missed.

What the streams make the daemon hold is bounded, whatever the size of the events (an
edit's event keeps a 64 KB body): a stream writes a chunk of about ``CHUNK_BYTES`` (one event
alone when it is bigger), read from the board by bytes, so no more than that is decoded for
it; it waits until its socket has taken the chunk (all but the transport's 64 KiB high-water
mark) before it frames the next; and it needs one of the daemon's ``feed.STREAM_SLOTS`` for
each chunk, so all streams together hold at most that many chunks beside the feed's
``FEED_BYTES``. Between two writes the loop goes round, so every other request is answered
while a reader catches up. A reader more than ``limits.MAX_STREAM_BEHIND`` events behind the
board's newest, or whose cursor is past the board's newest (a cursor of another board), is
told to reload (``event: reload``) and the stream ends; one whose socket stopped taking data
is cut when it falls that far behind, or when its write has waited ``feed.STALL_SECONDS``
while other streams wait for a slot. Writers never wait for a reader: no lock is held while a
stream writes, and a board read is one short query.

The route goes through the same pipeline as every other (host, token): its handler checks
the request and returns an ``EventStream``, which the app runs as the response.
"""

from __future__ import annotations

import asyncio
import contextlib
from functools import partial
from typing import Any

from starlette.responses import Response

from coord import model
from coord.errors import CoordError, InvalidInput
from coord.limits import MAX_STREAM_BEHIND
from coord.server.context import Call, Server, count, number
from coord.server.feed import PAGE_EVENTS, POLL_SECONDS, Feed, frame
from coord.server.pipeline import render
from coord.server.schemas import ITEM_ID, integer
from coord.server.table import Param, Route

# written to the socket as one chunk of at most about this many bytes (one event alone, when
# it is bigger): the board is read by bytes too, so no more than this is decoded for it
CHUNK_BYTES = 256 * 1024
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

    @property
    def ending(self) -> bool:
        return self.gone.is_set() or self.cut or self.server.closing

    async def _run(self, send: Any, feed: Feed) -> bool:
        """Write events until the end; False when the connection is gone."""
        server = self.server
        loop = asyncio.get_running_loop()
        quiet_since = loop.time()
        try:
            last = await server.call(server.board.last_seq)
            if self.after > last:  # a cursor of another board, or of this one before a restore
                return await self._reload(send, last)
            while not self.ending:
                if feed.covers(self.after) and feed.last <= self.after:  # nothing new yet
                    due = quiet_since + self.keepalive - loop.time()
                    if due <= 0:
                        if not await self._write(send, b": keep-alive\n\n"):
                            return False
                        quiet_since = loop.time()
                    else:
                        await feed.wait(min(due, POLL_SECONDS))
                    continue
                if feed.broken and not feed.covers(self.after):  # the board failed: end;
                    return True  # the client reconnects
                # A chunk to write: one of the daemon's slots first, so all streams together
                # hold a bounded number of chunks however many readers there are.
                if not await feed.slots.take(POLL_SECONDS):
                    continue  # none free yet: look at the connection and the stop, wait on
                try:
                    if self.ending:  # while it waited: write nothing more
                        break
                    data = await self._next_chunk(feed)
                    if data is None:
                        return await self._reload(send, await server.call(server.board.last_seq))
                    # The write, then until the socket has taken it (uvicorn waits while the
                    # transport holds more than 64 KiB): the slot is given back only then.
                    written = not data or (
                        await self._write(send, data) and await self._drained(send)
                    )
                finally:
                    feed.slots.give()
                if not written:
                    return False
                if data:
                    quiet_since = loop.time()
                # whatever the socket takes, the loop goes round between two writes: every
                # other request (and this stream's disconnect) is heard
                await asyncio.sleep(0)
        except CoordError:  # the board is gone or failing: end; the client reconnects
            return True
        return not (self.gone.is_set() or self.cut)

    async def _next_chunk(self, feed: Feed) -> bytes | None:
        """The next frames to send, about ``CHUNK_BYTES`` (one event alone when it is
        bigger), from the feed when it reaches back that far, else from the board; None when
        the reader is too far behind for the stream. ``after`` moves past what it covers."""
        if feed.covers(self.after):
            frames, self.after = feed.since(self.after, self.item_id, CHUNK_BYTES)
            return b"".join(frames)
        server, board = self.server, self.server.board
        if await server.call(board.last_seq) - self.after > server.stream_max_behind:
            return None
        # read by bytes: the events past the chunk are not even decoded (a PostgreSQL board's
        # read on a worker thread, as every board call of the daemon's: offload.py)
        page = await server.call(
            partial(
                board.events, self.after, PAGE_EVENTS, item_id=self.item_id, max_bytes=CHUNK_BYTES
            )
        )
        if not page:  # nothing of this item up to the newest: join the feed
            self.after = max(self.after, feed.base)
            return b""
        self.after = page[-1].seq
        return b"".join(frame(event) for event in page)

    async def _reload(self, send: Any, last: int) -> bool:
        if self.after > last:
            reason = (
                f"the board's events end at {last}, before this cursor ({self.after}): it is "
                "from another board or from before this one was replaced; read the board's "
                "state again, then follow from its newest event"
            )
        else:
            reason = (
                f"more than {self.server.stream_max_behind} events behind (at {self.after}, "
                f"the board at {last}): read the board's state again, then follow from its "
                "newest event"
            )
        data = b"event: reload\ndata: %s\n\n" % render({"reason": reason, "last_seq": last})
        return await self._write(send, data)

    async def _write(self, send: Any, data: bytes) -> bool:
        """Hand ``data`` to the connection: False if it is gone. uvicorn waits here while the
        socket's buffer is full; the feed cuts a stream that waits too long
        (``Feed.cut_stalled``)."""
        self.writing_since = asyncio.get_running_loop().time()
        try:
            await send({"type": "http.response.body", "body": data, "more_body": True})
        except OSError:
            return False
        finally:
            self.writing_since = None
        return not (self.cut or self.gone.is_set())

    async def _drained(self, send: Any) -> bool:
        """Until the socket has taken what was written, all but uvicorn's low-water mark (an
        empty body writes nothing, but waits for the transport's buffer as every write does)."""
        return await self._write(send, b"")


async def _until_disconnect(receive: Any, gone: asyncio.Event) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.set()
            return


# the endpoints these answer (coord.server.routes gathers every table)
ROUTES: tuple[Route, ...] = (
    Route(
        "GET",
        "/v1/events/stream",
        events_stream,
        "the event log live, as Server-Sent Events: each event a message `id: <seq>`, `event: "
        "coord`, `data: <the event as JSON>`, in order, none missed or doubled across a "
        "reconnect (`Last-Event-ID` wins over `after`); a `: keep-alive` comment when quiet; "
        f"a reader more than {MAX_STREAM_BEHIND} events behind, or whose cursor is past the "
        'board\'s last event, gets `event: reload` (data `{"reason", "last_seq"}`) and the '
        "stream ends",
        {"type": "string", "description": "an endless text/event-stream"},
        params=(
            Param(
                "after",
                integer(0),
                "events after this sequence number (a Last-Event-ID header wins over it)",
            ),
            Param("item", ITEM_ID, "only this item's events"),
            Param(
                "keepalive",
                {
                    "type": "number",
                    "minimum": MIN_KEEPALIVE,
                    "maximum": MAX_KEEPALIVE,
                    "default": KEEPALIVE_SECONDS,
                },
                "seconds between keep-alive comments when nothing happens",
            ),
        ),
        errors=(422,),
        media_type="text/event-stream",
    ),
)
