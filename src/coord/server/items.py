"""Handlers for items: create, import, read, edit, talk about them.

Each takes a ``Call`` whose body the pipeline has checked against the route's declared
fields, calls one Board method (which checks the values), and returns the JSON answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coord import model
from coord.limits import REPLIES_PAGE
from coord.server.context import Call, count, query_flag

if TYPE_CHECKING:
    from coord.model import Item


def add_item(call: Call) -> dict[str, Any]:
    entry = {k: v for k, v in call.body.items() if k != "agent"}
    board = call.board
    ids = board.import_items([entry], created_by=call.agent())
    return board.get(ids[0]).to_dict(board.now())


def import_items(call: Call) -> dict[str, Any]:
    """A bare array of items, or {"agent", "items"}; the agent may also come as ?agent= or
    an X-Coord-Agent header, so a plain array can be posted with curl."""
    agent = call.query.get("agent") or call.headers.get("x-coord-agent")
    agent = call.body.get("agent", agent)
    ids = call.board.import_items(call.body.get("items"), created_by=model.check_agent(agent))
    return {"ids": ids}


def import_spec(call: Call) -> dict[str, Any]:
    contact = call.optional_str("escalate_to")
    return call.board.import_packages(
        call.body.get("spec"),
        call.body.get("packages"),
        created_by=call.agent(),
        escalate_to=contact,
        prefix=call.optional_str("prefix") or "",
        adopt=call.body.get("adopt"),
        dry_run=call.body.get("dry_run") is True,
    )


def list_items(call: Call) -> dict[str, Any]:
    q, board = call.query, call.board
    limit = count(q.get("limit"), "limit", 100)

    def page(after_id: int, limit: int) -> list[Item]:
        return board.list_items(
            state=q.get("state") or None,
            ready=query_flag(q.get("ready")),
            kind=q.get("kind") or None,
            label=q.get("label") or None,
            spec=q.get("spec") or None,
            holder=q.get("holder") or None,
            after_id=after_id,
            limit=limit,
        )

    items = page(count(q.get("after"), "after", 0), limit)
    # Where the next page starts (?after=), or null when the listing is whole: a listing cut
    # at its limit said nothing of the rest. A full page asks whether one more item follows.
    more = len(items) == limit and bool(page(items[-1].id, 1))
    now = board.now()
    return {"items": [i.to_dict(now) for i in items], "next": items[-1].id if more else None}


def show_item(call: Call) -> dict[str, Any]:
    q = call.query
    return call.board.show(
        call.item_id,
        replies_after=count(q.get("replies_after"), "replies_after", 0),
        replies_limit=count(q.get("replies_limit"), "replies_limit", REPLIES_PAGE, minimum=1),
    )


def edit_item(call: Call) -> dict[str, Any]:
    body, board = call.body, call.board
    item = board.edit(
        call.item_id,
        agent=call.agent(),
        token=body.get("token"),
        title=body.get("title"),
        body=body.get("body"),
        priority=body.get("priority"),
        labels=body.get("labels"),
        add_deps=model.check_deps(body.get("add_deps")),
        remove_deps=model.check_deps(body.get("remove_deps")),
        add_checks=model.check_commands(body.get("add_checks"), "add_checks"),
        remove_checks=model.check_commands(body.get("remove_checks"), "remove_checks"),
    )
    return item.to_dict(board.now())


def reopen(call: Call) -> dict[str, Any]:
    board = call.board
    item = board.reopen(call.item_id, agent=call.agent(), reason=call.body.get("reason"))
    return item.to_dict(board.now())


def reply(call: Call) -> dict[str, Any]:
    return call.board.reply(call.item_id, agent=call.agent(), body=call.body.get("body")).to_dict()


def send(call: Call) -> dict[str, Any]:
    board = call.board
    sent = board.send(call.body.get("to"), call.body.get("text"), agent=call.agent())
    return sent.to_dict(board.now())


def ack(call: Call) -> dict[str, Any]:
    board = call.board
    ref = model.check_item_ref(call.item_id)
    agent = call.agent()
    added = board.ack(ref, agent=agent)
    item_id = ref if isinstance(ref, int) else board.get(ref).id  # a key: say which item
    return {"id": item_id, "agent": agent, "new": added}
