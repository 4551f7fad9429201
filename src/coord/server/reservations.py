"""Handlers for file reservations: reserve, free, list, and "who holds this path"."""

from __future__ import annotations

from typing import Any

from coord import model
from coord.errors import Conflict, InvalidInput
from coord.server.context import Call


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
