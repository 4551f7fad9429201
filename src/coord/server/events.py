"""Handlers for what happened and who is around: the event log, inboxes, agents, health."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

from coord import __version__, model
from coord.errors import CursorPastEnd, InvalidInput
from coord.limits import INBOX_PAGE, MAX_EVENTS_ANSWER_BYTES
from coord.server.context import Call, count, number, query_flag

MAX_WAIT_SECONDS = 60.0
DEFAULT_PRUNE_AGE = 7 * 24 * 3600.0  # `coord agents --prune`: a week unseen


async def events(call: Call) -> dict[str, Any]:
    q, board = call.query, call.board
    after = count(q.get("after"), "after", 0)
    limit = count(q.get("limit"), "limit", 500)
    item = q.get("item")
    item_id = model.check_item_id(item) if item else None
    wait = number(q.get("wait"), "wait", 0.0)
    if not 0 <= wait <= MAX_WAIT_SECONDS:
        raise InvalidInput(f"wait must be 0 to {MAX_WAIT_SECONDS:g} seconds", field="wait")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    last = await call.server.call(board.last_seq)
    if after > last:  # nothing will ever come after it: say so rather than wait for ever
        raise CursorPastEnd(
            f"after={after} is past the board's last event ({last}): a cursor of another "
            f"board, or of this one before it was replaced; read again from after=0, or "
            f"follow from after={last}",
            field="after",
            last_seq=last,
        )
    while True:
        found = await call.server.call(
            partial(board.events, after, limit, item_id=item_id, max_bytes=MAX_EVENTS_ANSWER_BYTES)
        )
        remaining = deadline - loop.time()
        if found or remaining <= 0:
            break
        # Woken by our own writes (and, on PostgreSQL, other daemons') at once; polls for
        # writers that cannot wake it.
        await call.server.changes.wait(min(remaining, call.server.changes.poll_seconds))
    # the board's last event, read after the page: a reader pages on from the page's last
    # event while it is before this one
    return {
        "events": [e.to_dict() for e in found],
        "last_seq": await call.server.call(board.last_seq),
    }


def inbox(call: Call) -> dict[str, Any]:
    found = call.board.inbox(
        call.agent(),
        peek=bool(call.body.get("peek")),
        limit=count(call.body.get("limit"), "limit", INBOX_PAGE, minimum=1),
    )
    return {"events": [e.to_dict() for e in found]}


def held_files_changed(call: Call) -> dict[str, Any]:
    body = call.body
    return call.board.report_held_change(
        agent=body.get("agent"),
        files=body.get("changed"),
        command=body.get("command"),
        tool=body.get("tool"),
        more_files=body.get("more_files", 0),
    )


def agents(call: Call) -> dict[str, Any]:
    board = call.board
    now = board.now()
    found = board.agents(everyone=query_flag(call.query.get("all")))
    return {"agents": [a.to_dict(now, board.active_window_seconds) for a in found]}


def prune_agents(call: Call) -> dict[str, Any]:
    older_than = call.body.get("older_than_seconds", DEFAULT_PRUNE_AGE)
    return call.board.prune_agents(older_than=older_than, agent=call.agent())


def health(call: Call) -> dict[str, Any]:
    """Open to every caller (no token), so it tells nothing of the board's contents."""
    board = call.board
    problem = board.storage.problem()
    if problem is not None and problem.code != "board_busy":
        # not ok: the answer is the error (503 board_gone, 507 disk_full), flagged as health
        raise type(problem)(problem.message, **problem.details, ok=False)
    answer = {
        "ok": True,
        "version": __version__,
        "schema_version": board.storage.schema_version(),
    }
    if problem is not None:  # busy passes: reads go on, writes wait for the other process
        answer["busy"] = problem.message
    return answer


def openapi_document(call: Call) -> dict[str, Any]:
    from coord.server.openapi import OPENAPI  # generated from the route table, after it

    return OPENAPI


def shutdown(call: Call) -> dict[str, Any]:
    stop = call.server.on_shutdown
    if stop is None:
        raise InvalidInput("this server cannot be stopped over HTTP")
    stop()
    return {"ok": True, "message": "daemon stopping"}
