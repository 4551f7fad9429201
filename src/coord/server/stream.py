"""``GET /v1/events/stream``: the event log as Server-Sent Events, live.

Each board event is one SSE message, ``id: <seq>``, ``event: coord``, ``data: <the event's
JSON>``, in sequence order with no gap and none twice: the stream reads the durable log in
pages (``Board.events``), never from a buffer of its own, so a client that reconnects with
``Last-Event-ID`` (after a dropped connection or a daemon restart) gets exactly what it missed.

Between pages it waits on ``Server.changes``, woken at once by this daemon's writes (and by
whatever else notifies it), with a poll for writers it cannot hear. What a connection can
make the daemon hold is bounded: one page (``PAGE_EVENTS``) plus the transport's write
buffer (uvicorn pauses the writer at 64 KiB); while a socket does not take what was written,
the stream waits, reading nothing more. A reader more than ``limits.MAX_STREAM_BEHIND`` events
behind the board's newest is told to reload (``event: reload``) and the stream ends; one whose
socket has stopped taking data while it fell that far behind is cut. Writers never wait for a
reader: the stream holds no lock while it writes, and a board read is one short query.

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
from coord.server.pipeline import render

# events read from the board, and written to the socket, at a time
PAGE_EVENTS = 200
KEEPALIVE_SECONDS = 15.0
MIN_KEEPALIVE, MAX_KEEPALIVE = 0.05, 300.0
# how often a waiting stream looks at the board when nothing in this daemon wrote
POLL_SECONDS = 0.25
# after a wake-up, let a burst of writes land before reading: one page instead of many
COALESCE_SECONDS = 0.01
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
    return EventStream(call.server, after, item_id, keepalive)


def frame(event: model.Event) -> bytes:
    return b"id: %d\nevent: coord\ndata: %s\n\n" % (event.seq, render(event.to_dict()))


class EventStream(Response):
    """The answer of one stream request: an ASGI app that writes events until the client
    goes, the daemon stops or the client falls too far behind."""

    def __init__(
        self, server: Server, after: int, item_id: int | None, keepalive: float
    ) -> None:  # no super().__init__: nothing of a plain response's body or headers is used
        self.server = server
        self.after = after
        self.item_id = item_id
        self.keepalive = keepalive
        self.status_code = 200
        self.background = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        gone = asyncio.Event()
        listener = asyncio.ensure_future(_until_disconnect(receive, gone))
        try:
            await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
            opening = b"retry: %d\n: coord event stream after %d\n\n" % (RETRY_MS, self.after)
            if await self._write(scope, send, opening, gone) and await self._run(scope, send, gone):
                with contextlib.suppress(OSError):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            listener.cancel()

    async def _run(self, scope: Any, send: Any, gone: asyncio.Event) -> bool:
        """Write events until the end; False when the connection is already gone."""
        server, board = self.server, self.server.board
        loop = asyncio.get_running_loop()
        quiet_since = loop.time()
        while not gone.is_set() and not server.closing:
            try:
                page = board.events(self.after, PAGE_EVENTS, item_id=self.item_id)
            except CoordError:  # the board is gone or failing: end; the client reconnects
                return True
            if page:
                full = len(page) == PAGE_EVENTS
                if full and board.last_seq() - self.after > server.stream_max_behind:
                    return await self._reload(scope, send, gone)
                data = b"".join(frame(event) for event in page)
                self.after = page[-1].seq
                if not await self._write(scope, send, data, gone):
                    return False
                quiet_since = loop.time()
                continue
            due = quiet_since + self.keepalive - loop.time()
            if due <= 0:
                if not await self._write(scope, send, b": keep-alive\n\n", gone):
                    return False
                quiet_since = loop.time()
                continue
            waited = min(due, POLL_SECONDS)
            began = loop.time()
            await server.changes.wait(waited)
            if loop.time() - began < waited:  # woken by a write: let the burst land
                await asyncio.sleep(COALESCE_SECONDS)
        return not gone.is_set()

    async def _reload(self, scope: Any, send: Any, gone: asyncio.Event) -> bool:
        last = self.server.board.last_seq()
        reason = (
            f"more than {self.server.stream_max_behind} events behind (at {self.after}, the "
            f"board at {last}): read the board's state again, then follow from its newest event"
        )
        data = b"event: reload\ndata: %s\n\n" % render({"reason": reason, "last_seq": last})
        return await self._write(scope, send, data, gone)

    async def _write(self, scope: Any, send: Any, data: bytes, gone: asyncio.Event) -> bool:
        """Hand ``data`` to the connection; False (and the connection cut) if it is gone, the
        daemon stops, or the board moves ``stream_max_behind`` events past it while it waits."""
        writing = asyncio.ensure_future(
            send({"type": "http.response.body", "body": data, "more_body": True})
        )
        server = self.server
        while True:
            done, _ = await asyncio.wait((writing,), timeout=POLL_SECONDS)
            if done:
                try:
                    writing.result()
                except OSError:
                    return False
                return not gone.is_set()
            if (
                gone.is_set()
                or server.closing
                or server.board.last_seq() - self.after > server.stream_max_behind
            ):
                # the socket takes nothing: a reload could not reach it either
                _abort(scope)
                writing.cancel()
                with contextlib.suppress(asyncio.CancelledError, OSError):
                    await writing
                return False


async def _until_disconnect(receive: Any, gone: asyncio.Event) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.set()
            return


def _abort(scope: Any) -> None:
    """Drop the connection without flushing what its socket would not take (the daemon's
    protocol offers it, ``connections.bounded_protocol``); a bare close would keep the buffer
    until the peer reads."""
    abort = scope.get("extensions", {}).get("coord.abort")
    if abort is not None:
        abort()
