"""Handlers for claims: claim, claim-next (the hot path), and the holder's later writes.

Every write about a claim carries its fencing token; the board refuses a stale one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coord.server.context import Call
from coord.server.landing import worktree_of


def claim(call: Call) -> dict[str, Any]:
    board = call.board
    won = board.claim(
        call.item_id,
        agent=call.agent(),
        lease_seconds=call.body.get("lease_seconds"),
        worktree=worktree_of(call),
    )
    return won.to_dict(board.now())


def claim_next(call: Call) -> dict[str, Any]:
    """What every agent's loop calls: served on the bare-ASGI hot path (hot.py)."""
    body, board = call.body, call.board
    options: dict[str, Any] = {
        "agent": body.get("agent"),  # the board checks it
        "kind": body.get("kind"),
        "label": call.optional_str("label"),
        "lease_seconds": body.get("lease_seconds"),
    }
    if "count" in body:  # a batch for parallel work: {"items": [claim, ...]}
        won = board.claim_batch(body["count"], **options)
        now = board.now()
        return {"items": [c.to_dict(now) for c in won]}
    return board.claim_next(**options, worktree=worktree_of(call)).to_dict(board.now())


def _as_holder(call: Call, verb: Callable[..., Any], **fields: Any) -> dict[str, Any]:
    """A write about a claim: the item in the path, the agent, its token, the verb's fields."""
    done = verb(call.item_id, agent=call.agent(), token=call.body.get("token"), **fields)
    return done.to_dict(call.board.now())


def heartbeat(call: Call) -> dict[str, Any]:
    return _as_holder(call, call.board.heartbeat, lease_seconds=call.body.get("lease_seconds"))


def release(call: Call) -> dict[str, Any]:
    return _as_holder(call, call.board.release, reason=call.body.get("reason") or "")


def cancel(call: Call) -> dict[str, Any]:
    """By the holder (with its token) while the item is claimed; by its creator otherwise;
    by a human always. The reason is required (the board says so when it is missing)."""
    return _as_holder(call, call.board.cancel, reason=call.body.get("reason"))


def done(call: Call) -> dict[str, Any]:
    body = call.body
    return _as_holder(
        call,
        call.board.done,
        summary=body.get("summary") or "",
        evidence=body.get("evidence"),
        skip_checks=body.get("skip_checks"),
    )


def escalate(call: Call) -> dict[str, Any]:
    return _as_holder(call, call.board.escalate, question=call.body.get("question"))


def answer(call: Call) -> dict[str, Any]:
    board = call.board
    item = board.answer(call.item_id, agent=call.agent(), text=call.body.get("text"))
    return item.to_dict(board.now())
