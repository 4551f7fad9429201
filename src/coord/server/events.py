"""Handlers for what happened and who is around: the event log, inboxes, agents, health."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

from coord import __version__, model
from coord.core.tripwire import CHANGES as HELD_CHANGES
from coord.core.tripwire import FIELDS as HELD_CHANGE_FIELDS
from coord.errors import CursorPastEnd, InvalidInput
from coord.limits import (
    INBOX_PAGE,
    MAX_EVENTS_ANSWER_BYTES,
    MAX_INTEGER,
    MAX_PATTERN,
    MAX_REPORTED_FILES,
    MIN_PRUNE_AGE,
)
from coord.server.context import Call, count, number, query_flag
from coord.server.schemas import AGENT, ITEM_ID, integer, listing, ref, text
from coord.server.table import Body, Param, Route, closed

ANY_OBJECT = {"type": "object"}

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


# the endpoints these answer (coord.server.routes gathers every table)
ROUTES: tuple[Route, ...] = (
    Route(
        "POST",
        "/v1/held-files:changed",
        held_files_changed,
        "an agent's tool call changed files other agents hold (the after-tool hooks saw it): "
        "one held_files_changed event naming the agent, the command or tool, and each file "
        "with its holder, whether coord put it back and the SHA-256 of the overwritten "
        "version it kept; every holder is mentioned, so it reaches their inboxes",
        {
            "type": "object",
            "required": ["seq", "kind", "agent", "details"],
            "properties": {
                "seq": {"type": "integer"},
                "kind": {"type": "string"},
                "agent": {"type": "string"},
                "details": ANY_OBJECT,
            },
        },
        status=201,
        write=True,
        body=Body(
            {
                "agent": AGENT,
                "changed": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_REPORTED_FILES,
                    "description": "the held files the call changed",
                    "items": closed(
                        {
                            "path": {"type": "string", "minLength": 1, "maxLength": MAX_PATTERN},
                            "holder": AGENT,
                            "change": {"enum": list(HELD_CHANGES)},
                            "restored": {"type": "boolean"},
                            "kept": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                            "why": {"type": "string", "maxLength": MAX_PATTERN},
                        },
                        HELD_CHANGE_FIELDS,
                        required=("path", "holder", "change"),
                    ),
                },
                "command": text("the shell command that changed them"),
                "tool": {"type": "string", "maxLength": MAX_PATTERN},
                "more_files": integer(0, "changed held files past those listed"),
            },
            ("agent", "changed"),
        ),
        errors=(422,),
    ),
    Route(
        "GET",
        "/v1/agents",
        agents,
        "agents, when last seen, whether active (seen within the board's window) and what "
        "each holds; an agent is a name that claimed, reserved or read its inbox (role "
        "agent); ?all=true lists the people who only added, answered or replied too (role "
        "person)",
        listing("agents", ANY_OBJECT),
        params=(Param("all", {"type": "boolean"}, "people too, not only agents"),),
    ),
    Route(
        "POST",
        "/v1/agents:prune",
        prune_agents,
        "forget the names not seen for older_than_seconds that would lose nothing: no claim "
        "(a lapsed one included), no live reservation, nothing unread in their inbox that "
        "came after they were last seen; the rest are kept, each with why. The log keeps "
        "what they did (one agents_pruned event)",
        {
            "type": "object",
            "required": ["pruned", "kept", "older_than_seconds"],
            "properties": {
                "pruned": {"type": "array", "items": {"type": "string"}},
                "kept": {"type": "array", "items": ANY_OBJECT},
                "older_than_seconds": {"type": "number"},
            },
        },
        write=True,
        body=Body(
            {
                "agent": AGENT,
                "older_than_seconds": {
                    "type": "number",
                    "minimum": MIN_PRUNE_AGE,
                    "maximum": MAX_INTEGER,
                    "default": DEFAULT_PRUNE_AGE,
                    "description": "seconds unseen (at least an hour; default a week)",
                },
            },
            ("agent",),
        ),
        errors=(422,),
    ),
    Route(
        "GET",
        "/v1/events",
        events,
        "the event log after a sequence number; wait long-polls; `last_seq` is the board's "
        "last event (page on from the page's last while it is before it); an `after` past "
        "it is 409 `cursor_past_end` with `last_seq`",
        {**listing("events", ref("Event")), "required": ["events", "last_seq"]},
        params=(
            Param("after", integer(0)),
            Param(
                "limit",
                integer(1, maximum=5000),
                f"at most this many events; fewer once they hold {MAX_EVENTS_ANSWER_BYTES} "
                "bytes of details",
            ),
            Param("item", ITEM_ID),
            Param(
                "wait",
                {"type": "number", "minimum": 0, "maximum": MAX_WAIT_SECONDS},
                "seconds to wait for new events when there are none",
            ),
        ),
        errors=(409, 422),
    ),
    Route(
        "POST",
        "/v1/shutdown",
        shutdown,
        "stop the daemon",
        ANY_OBJECT,
        write=True,
        body=Body({}),
        errors=(422,),
        page=False,
        board=False,
    ),
)
