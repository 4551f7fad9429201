"""Handlers for file reservations: reserve, free, list, and "who holds this path"."""

from __future__ import annotations

from typing import Any

from coord import model
from coord.errors import Conflict, InvalidInput
from coord.server.context import Call
from coord.server.schemas import (
    AGENT,
    ITEM_REF,
    LEASE,
    PATH_PATTERN,
    PATTERNS,
    WHO,
    listing,
    ref,
    text,
)
from coord.server.table import Body, Param, Route


def reserve(call: Call) -> dict[str, Any]:
    body = call.body
    made = call.board.reserve(
        body.get("patterns") or [],
        agent=call.agent(),
        shared=call.flag("shared"),
        lease_seconds=body.get("lease_seconds"),
        item=body.get("item"),
        reason=body.get("reason") or "",
    )
    return {"reservations": [r.to_dict() for r in made]}


def unreserve(call: Call) -> dict[str, Any]:
    freed = call.board.unreserve(
        call.body.get("patterns") or [], agent=call.agent(), everything=call.flag("all")
    )
    return {"freed": freed}


def reservations(call: Call) -> dict[str, Any]:
    agent = call.query.get("agent") or None
    held = call.board.reservations(model.check_agent(agent) if agent else None)
    return {"reservations": [r.to_dict() for r in held]}


def who(call: Call) -> dict[str, Any]:
    path = call.query.get("path")
    if not path:
        raise InvalidInput("give the path to ask about: /v1/who?path=src/a.py", field="path")
    return call.board.who(path, call.query.get("agent") or None)


def refresh_mirror(call: Call) -> dict[str, Any]:
    """The guard found this machine's mirror of a PostgreSQL board stale: rewrite it now."""
    follower = call.server.follower
    if follower is None:
        raise Conflict(
            "this board is not on PostgreSQL: the guard reads its board.db itself, and there "
            "is no reservation mirror to refresh"
        )
    return follower.refresh()


# the endpoints these answer (coord.server.routes gathers every table)
ROUTES: tuple[Route, ...] = (
    Route(
        "GET",
        "/v1/reservations",
        reservations,
        "live reservations (of one agent with ?agent=)",
        listing("reservations", ref("Reservation")),
        params=(Param("agent", AGENT),),
        errors=(422,),
    ),
    Route(
        "POST",
        "/v1/reservations",
        reserve,
        "reserve paths or patterns, all or none; 409 files_reserved names every conflicting "
        "holder, pattern, item and expiry",
        listing("reservations", ref("Reservation")),
        status=201,
        write=True,
        body=Body(
            {
                "agent": AGENT,
                "patterns": {**PATTERNS, "minItems": 1},
                "shared": {"type": "boolean", "default": False},
                "lease_seconds": LEASE,
                "item": {**ITEM_REF, "description": "the item the files are for: id or R3"},
                "reason": text("why"),
            },
            ("agent", "patterns"),
        ),
        errors=(404, 409, 422),
    ),
    Route(
        "POST",
        "/v1/reservations:release",
        unreserve,
        "free the agent's reservations of these patterns, or all of them",
        listing("freed", {"type": "string"}),
        write=True,
        body=Body(
            {"agent": AGENT, "patterns": PATTERNS, "all": {"type": "boolean"}},
            ("agent",),
            any_of=(
                {"required": ["patterns"], "properties": {"patterns": {"minItems": 1}}},
                {"required": ["all"], "properties": {"all": {"const": True}}},
            ),
        ),
        errors=(422,),
    ),
    Route(
        "GET",
        "/v1/who",
        who,
        "who holds a path, and may the agent edit it",
        WHO,
        params=(Param("path", PATH_PATTERN, required=True), Param("agent", AGENT)),
        errors=(422,),
    ),
    Route(
        "POST",
        "/v1/mirror:refresh",
        refresh_mirror,
        "PostgreSQL board: rewrite this machine's mirror of the live reservations now (the "
        "guard asks when it finds the mirror stale); 409 on a SQLite board, 503 when the "
        "database cannot be read",
        {
            "type": "object",
            "required": ["refreshed", "reservations", "last_seq"],
            "properties": {
                "refreshed": {"type": "boolean"},
                "reservations": {"type": "integer"},
                "last_seq": {"type": "integer"},
            },
        },
        body=Body({}),
        errors=(409, 422, 503),
    ),
)
