"""Handlers and routes for the fair wait and for asking a holder (issue 26).

The grant is the board's (``coord.core.waiting``): a waiter's long poll only reads its own
place. Its one hazard is a release between the read and the wait for a change: the poll
takes the change notice (``Changes.mark``) *before* it reads, so a release after the read
has already set the notice it then waits on. ``COORD_TEST_WAIT_PAUSE`` (tests only: a
directory) holds every poll between its read and its wait until a file ``go`` appears
there, and turns off the timed re-reads, so a test can land a release in exactly that gap
and see that only the notice can end the wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from functools import partial
from pathlib import Path
from typing import Any

from coord.core import waiting as core_waiting
from coord.core.asks import MAX_ASK_SECONDS
from coord.errors import CoordError, InvalidInput
from coord.server.context import Call
from coord.server.schemas import AGENT, LEASE, PATTERNS, integer, text
from coord.server.table import Body, Param, Route

MAX_POLL_SECONDS = 60.0
TEST_PAUSE_ENV = "COORD_TEST_WAIT_PAUSE"

WAIT = {"type": "object", "description": "a place in the queue: waiting, granted, cancelled, gone"}
ASK = {"type": "object", "description": "an ask: open, released, deferred or timed_out"}
PLACE = {
    "type": "number",
    "minimum": 1,
    "maximum": core_waiting.MAX_PLACE_SECONDS,
    "description": "how long the place lasts without a heartbeat (default 30 s)",
}
POLL = {
    "type": "number",
    "minimum": 0,
    "maximum": MAX_POLL_SECONDS,
    "description": "answer at once when granted, else after this many seconds at most",
}


def wait_for_item(call: Call) -> dict[str, Any]:
    return _wait(call, item=call.item_id)


def wait_for_paths(call: Call) -> dict[str, Any]:
    return _wait(call, paths=call.body.get("patterns"))


def _wait(call: Call, **target: Any) -> dict[str, Any]:
    body = call.body
    return call.board.waiting.wait(
        agent=call.agent(),
        lease_seconds=body.get("lease_seconds"),
        place_seconds=body.get("place_seconds"),
        **target,
    )


async def keep_waiting(call: Call) -> dict[str, Any]:
    """Keep the place, then wait (up to ``wait_seconds``) until it is granted or ends."""
    board, server = call.board, call.server
    wait_id = call.path["wait"]
    poll = call.body.get("wait_seconds", 0)
    if not isinstance(poll, int | float) or not 0 <= poll <= MAX_POLL_SECONDS:
        raise InvalidInput(f"wait_seconds must be 0 to {MAX_POLL_SECONDS:g}", field="wait_seconds")
    keep = partial(
        board.waiting.heartbeat,
        wait_id,
        agent=call.agent(),
        place_seconds=call.body.get("place_seconds"),
    )
    status: dict[str, Any] = await server.call(keep)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + poll
    pause = os.environ.get(TEST_PAUSE_ENV)
    while status["state"] == "waiting":
        remaining = deadline - loop.time()
        if remaining <= 0:
            break
        notice = server.changes.mark()  # before the read: a release after it sets this
        status = await server.call(board.waiting.status, wait_id)
        if status["state"] != "waiting":
            break
        if pause:
            await _held_for_a_test(Path(pause), wait_id)
            await server.changes.wait_on(notice, remaining)
        else:
            await server.changes.wait_on(notice, min(remaining, server.changes.poll_seconds))
    return status


async def _held_for_a_test(folder: Path, wait_id: Any) -> None:
    (folder / f"paused-{wait_id}").touch()
    while not (folder / "go").exists():
        await asyncio.sleep(0.02)


def give_up(call: Call) -> dict[str, Any]:
    return call.board.waiting.cancel(call.path["wait"], agent=call.agent())


def wait_status(call: Call) -> dict[str, Any]:
    return call.board.waiting.status(call.path["wait"])


def ask_about_item(call: Call) -> dict[str, Any]:
    return _ask(call, item=call.item_id)


def ask_about_paths(call: Call) -> dict[str, Any]:
    return _ask(call, paths=call.body.get("patterns"))


def _ask(call: Call, **target: Any) -> dict[str, Any]:
    body = call.body
    return call.board.asks.ask(
        agent=call.agent(),
        reason=body.get("reason"),
        timeout_seconds=body.get("timeout_seconds"),
        **target,
    )


def answer_ask(call: Call) -> dict[str, Any]:
    body = call.body
    return call.board.asks.answer(
        call.path["ask"],
        agent=call.agent(),
        answer=body.get("answer"),
        until=body.get("until"),
        for_seconds=body.get("for_seconds"),
        reason=body.get("reason"),
    )


def asks(call: Call) -> dict[str, Any]:
    return {"asks": call.board.asks.open_for(call.query.get("holder"))}


def ask_status(call: Call) -> dict[str, Any]:
    return call.board.asks.get(call.path["ask"])


_PATTERNS = {**PATTERNS, "minItems": 1}
_WAIT_FIELDS = {"agent": AGENT, "lease_seconds": LEASE, "place_seconds": PLACE}
_ASK_FIELDS = {
    "agent": AGENT,
    "reason": text("why you need it", required=True),
    "timeout_seconds": {
        "type": "number",
        "minimum": 1,
        "maximum": MAX_ASK_SECONDS,
        "description": "unanswered, it times out after this (default 600 s)",
    },
}

ROUTES: tuple[Route, ...] = (
    Route(
        "POST",
        "/v1/items/{id}/wait",
        wait_for_item,
        "take a place in the queue for the item's claim, first come first served; granted at "
        "once when free, else by the release (or lapse) that frees it, in that same "
        "transaction",
        WAIT,
        status=201,
        write=True,
        body=Body(_WAIT_FIELDS, ("agent",)),
        errors=(404, 409, 422),
    ),
    Route(
        "POST",
        "/v1/waits",
        wait_for_paths,
        "take a place in the queue for paths (held exclusively, all or none), first come "
        "first served; granted at once when free, else by what frees them",
        WAIT,
        status=201,
        write=True,
        body=Body({**_WAIT_FIELDS, "patterns": _PATTERNS}, ("agent", "patterns")),
        errors=(409, 422),
    ),
    Route(
        "GET",
        "/v1/waits/{wait}",
        wait_status,
        "a place in the queue: its state, and while waiting its place and who is ahead",
        WAIT,
        errors=(404, 422),
    ),
    Route(
        "POST",
        "/v1/waits/{wait}/heartbeat",
        keep_waiting,
        "keep the place (its lease renewed) and wait up to wait_seconds for the grant",
        WAIT,
        write=True,
        body=Body(
            {"agent": AGENT, "place_seconds": PLACE, "wait_seconds": POLL},
            ("agent",),
        ),
        errors=(403, 404, 422),
    ),
    Route(
        "POST",
        "/v1/waits/{wait}/cancel",
        give_up,
        "give the place up (a granted one stays granted: the answer says so)",
        WAIT,
        write=True,
        body=Body({"agent": AGENT}, ("agent",)),
        errors=(403, 404, 422),
    ),
    Route(
        "POST",
        "/v1/items/{id}/ask",
        ask_about_item,
        "ask the item's holder to let go: it reaches the holder's inbox and its next hook; "
        "answered release or defer; unanswered it times out. Nothing shortens the lease",
        ASK,
        status=201,
        write=True,
        body=Body(_ASK_FIELDS, ("agent", "reason")),
        errors=(404, 409, 422),
    ),
    Route(
        "POST",
        "/v1/asks",
        ask_about_paths,
        "ask the holder of these paths to let go (as for an item's ask)",
        ASK,
        status=201,
        write=True,
        body=Body({**_ASK_FIELDS, "patterns": _PATTERNS}, ("agent", "patterns", "reason")),
        errors=(409, 422),
    ),
    Route(
        "GET",
        "/v1/asks",
        asks,
        "the asks waiting for a holder's answer",
        {"type": "object", "properties": {"asks": {"type": "array", "items": ASK}}},
        params=(Param("holder", AGENT, required=True),),
        errors=(422,),
    ),
    Route(
        "GET",
        "/v1/asks/{ask}",
        ask_status,
        "an ask and its answer",
        ASK,
        errors=(404, 422),
    ),
    Route(
        "POST",
        "/v1/asks/{ask}/answer",
        answer_ask,
        "the holder's answer: release (what it was asked for, now) or defer until a time; "
        "409 lease_lost when the claim asked about has ended, ask_not_open when answered or "
        "timed out",
        ASK,
        write=True,
        body=Body(
            {
                "agent": AGENT,
                "answer": {"type": "string", "enum": ["release", "defer"]},
                "until": {"type": "number", "description": "defer: until when (epoch seconds)"},
                "for_seconds": {
                    "type": "number",
                    "minimum": 1,
                    "description": "defer: for this long from now, on the board's clock",
                },
                "reason": text("why"),
            },
            ("agent", "answer"),
            # a deferral says until when or for how long, not both
            any_of=(
                {"properties": {"until": {"type": "null"}}},
                {"properties": {"for_seconds": {"type": "null"}}},
            ),
        ),
        errors=(403, 404, 409, 422),
    ),
)

# an id the board gave (the board refuses any other with 404 or 422)
PATH_PARAMS = {
    "wait": Param("wait", integer(1), "a wait id, as POST /v1/waits gave it", where="path"),
    "ask": Param("ask", integer(1), "an ask id, as POST /v1/asks gave it", where="path"),
}


class LapseSweeper:
    """The daemon's clock acting on lapsed leases for the waiters: a lease that runs out is
    no write, so nothing else would grant the first waiter until someone looked. Every
    ``SWEEP_SECONDS`` while anyone waits, ``Waiting.sweep`` grants what a lapse freed, and a
    grant wakes the waiters' long polls."""

    def __init__(self, board: Any, changes: Any) -> None:
        self.board = board
        self.changes = changes
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> LapseSweeper:
        self._thread = threading.Thread(target=self._run, name="coord-waits", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stopping.wait(core_waiting.SWEEP_SECONDS):
            try:
                granted = self.board.waiting.sweep()
            except CoordError:  # the board is busy or unreachable: the next turn tries again
                continue
            except Exception as err:  # a bug of ours: said, and the daemon serves on
                with contextlib.suppress(OSError):
                    print(f"coord daemon: granting waiters failed: {err!r}", file=sys.stderr)
                continue
            if granted:
                self.changes.notify_threadsafe()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
