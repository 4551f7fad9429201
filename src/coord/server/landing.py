"""The endpoints of a worktree item's way to main: submit, the queue, the landing lease, and
what landing made of an item (issue 24). Thin: each calls one verb of ``board.landing``
(``coord.core.landings``), which checks every value and every token.

A claim with a worktree is the claim routes' own (``worktree`` in their body): the record is
written in the claim's transaction.
"""

from __future__ import annotations

from typing import Any

from coord import model
from coord.server.context import Call
from coord.server.schemas import AGENT, LEASE, TOKEN, integer, listing, ref, text
from coord.server.table import Body, Param, Route

COMMIT: dict[str, Any] = {
    "type": "string",
    "pattern": "^(?:[0-9a-f]{40}|[0-9a-f]{64})$",
    "description": "a full commit id, as `git rev-parse` prints it",
}
WORKTREE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "base_commit": {**COMMIT, "description": "main's tip the worktree starts from"},
        "path_root": {
            "type": "string",
            "pattern": "^/",
            "maxLength": 4096,
            "description": "the absolute directory this repository's worktrees are made in",
        },
    },
    "required": ["base_commit", "path_root"],
    "additionalProperties": False,
    "description": "claim with a worktree: the item records its branch (named after it and "
    "the claim's fencing token), the base commit and its worktree's path",
}
LEASE_ANSWER: dict[str, Any] = {
    "type": "object",
    "required": ["holder", "token", "expires_at"],
    "properties": {
        "holder": {"type": ["string", "null"]},
        "token": {
            "type": ["integer", "null"],
            "description": "the lease's fencing token, shown to its holder alone",
        },
        "expires_at": {"type": ["string", "null"]},
    },
}
RUNNER = {**AGENT, "description": "the landing runner's name (an agent name)"}
FACTS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {"enum": list(model.REWORK_REASONS)},
        "files": {"type": "array", "items": {"type": "string"}},
        "check_output": {"type": "string"},
        "main_commit": COMMIT,
    },
    "required": ["reason"],
    "additionalProperties": False,
}
WAIT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {"enum": list(model.WAIT_REASONS)},
        "files": {"type": "array", "items": {"type": "string"}},
        "message": {"type": "string"},
        "main_commit": COMMIT,
    },
    "required": ["reason"],
    "additionalProperties": False,
}
ITEM = ref("Item")
ABOUT_AN_ITEM = (404, 409, 422)


def worktree_of(call: Call) -> model.WorktreeSpec | None:
    given = call.body.get("worktree")
    if given is None:
        return None
    return model.WorktreeSpec(given["base_commit"], given["path_root"])


def submit(call: Call) -> dict[str, Any]:
    board, body = call.board, call.body
    item = board.landing.submit(
        call.item_id, agent=call.agent(), token=body.get("token"), head=body.get("head")
    )
    if call.server.lander is not None:  # the daemon's runner lands it now, not at its poll
        call.server.lander.wake()
    return item.to_dict(board.now())


def abandon(call: Call) -> dict[str, Any]:
    board = call.board
    item = board.landing.abandon(call.item_id, agent=call.agent(), reason=call.body.get("reason"))
    return item.to_dict(board.now())


def queue(call: Call) -> dict[str, Any]:
    board = call.board
    limit = int(call.query.get("limit") or 100)
    now = board.now()
    return {"items": [item.to_dict(now) for item in board.landing.queue(limit)]}


def lease(call: Call) -> dict[str, Any]:
    held = call.board.landing.lease()
    if held is None:
        return {"holder": None, "token": 0, "expires_at": None}
    return held.to_dict()


def acquire(call: Call) -> dict[str, Any]:
    body = call.body
    won = call.board.landing.acquire(
        runner=body.get("runner") or "", lease_seconds=body.get("lease_seconds")
    )
    return won.to_dict()


def renew(call: Call) -> dict[str, Any]:
    body = call.body
    renewed = call.board.landing.renew(
        runner=body.get("runner") or "",
        token=body.get("token"),
        lease_seconds=body.get("lease_seconds"),
    )
    return renewed.to_dict()


def release(call: Call) -> dict[str, Any]:
    body = call.body
    call.board.landing.release(runner=body.get("runner") or "", token=body.get("token"))
    return {"released": True}


def merged(call: Call) -> dict[str, Any]:
    board, body = call.board, call.body
    item = board.landing.mark_merged(
        call.item_id,
        runner=body.get("runner") or "",
        landing_token=body.get("landing_token"),
        item_token=body.get("item_token"),
        commit=body.get("commit"),
    )
    return item.to_dict(board.now())


def merged_outside(call: Call) -> dict[str, Any]:
    board, body = call.board, call.body
    item = board.landing.merged_outside(
        call.item_id, agent=call.agent(), commit=body.get("commit"), found_by=body.get("found_by")
    )
    return item.to_dict(board.now())


def needs_rework(call: Call) -> dict[str, Any]:
    board, body = call.board, call.body
    item = board.landing.needs_rework(
        call.item_id,
        runner=body.get("runner") or "",
        landing_token=body.get("landing_token"),
        item_token=body.get("item_token"),
        facts=body.get("facts"),
    )
    return item.to_dict(board.now())


def waiting(call: Call) -> dict[str, Any]:
    board, body = call.board, call.body
    item = board.landing.waiting(
        call.item_id,
        runner=body.get("runner") or "",
        landing_token=body.get("landing_token"),
        item_token=body.get("item_token"),
        wait=body.get("wait"),
    )
    return item.to_dict(board.now())


_LANDED = {"runner": RUNNER, "landing_token": TOKEN, "item_token": TOKEN}

ROUTES: tuple[Route, ...] = (
    Route(
        "POST",
        "/v1/items/{id}/submit",
        submit,
        "hand a worktree item's finished branch head to the landing queue: queued, the lease "
        "ended, its files held by the queue until merged or abandoned; 409 lease_lost for a "
        "stale token",
        ITEM,
        write=True,
        body=Body({"agent": AGENT, "token": TOKEN, "head": COMMIT}, ("agent", "token", "head")),
        errors=ABOUT_AN_ITEM,
    ),
    Route(
        "POST",
        "/v1/items/{id}/abandon",
        abandon,
        "take a queued or needs_rework item, or one whose worktree claim lapsed, off its way "
        "to main (its last holder, or a human): pending, its files freed",
        ITEM,
        write=True,
        body=Body({"agent": AGENT, "reason": text("why", required=True)}, ("agent", "reason")),
        errors=(*ABOUT_AN_ITEM, 403),
    ),
    Route(
        "GET",
        "/v1/queue",
        queue,
        "the landing queue: queued items in submit order",
        listing("items", ITEM),
        params=(Param("limit", integer(1, maximum=1000)),),
        errors=(422,),
    ),
    Route(
        "GET",
        "/v1/landing",
        lease,
        "the board's landing lease: who lands now (holder null: nobody), with its token",
        LEASE_ANSWER,
    ),
    Route(
        "POST",
        "/v1/landing/acquire",
        acquire,
        "take the landing lease if it is free or lapsed: exactly one runner wins; 409 "
        "already_claimed names the holder",
        LEASE_ANSWER,
        write=True,
        body=Body({"runner": RUNNER, "lease_seconds": LEASE}, ("runner",)),
        errors=(409, 422),
    ),
    Route(
        "POST",
        "/v1/landing/renew",
        renew,
        "extend the landing lease; 409 lease_lost for a stale token",
        LEASE_ANSWER,
        write=True,
        body=Body({"runner": RUNNER, "token": TOKEN, "lease_seconds": LEASE}, ("runner", "token")),
        errors=(409, 422),
    ),
    Route(
        "POST",
        "/v1/landing/release",
        release,
        "give the landing lease up; 409 lease_lost for a stale token",
        {"type": "object", "properties": {"released": {"type": "boolean"}}},
        write=True,
        body=Body({"runner": RUNNER, "token": TOKEN}, ("runner", "token")),
        errors=(409, 422),
    ),
    Route(
        "POST",
        "/v1/items/{id}/merged",
        merged,
        "the landing runner moved main to include the item: merged (done), files freed, "
        "dependents ready; needs the live landing lease and the item's token as queued",
        ITEM,
        write=True,
        body=Body(
            {**_LANDED, "commit": COMMIT}, ("runner", "landing_token", "item_token", "commit")
        ),
        errors=ABOUT_AN_ITEM,
    ),
    Route(
        "POST",
        "/v1/items/{id}/merged-outside",
        merged_outside,
        "the item's commits were found on main by other means (ancestry, patch_id, tree): "
        "merged, from claimed or queued",
        ITEM,
        write=True,
        body=Body(
            {
                "agent": AGENT,
                "commit": COMMIT,
                "found_by": {"enum": ["ancestry", "patch_id", "tree"]},
            },
            ("agent", "commit", "found_by"),
        ),
        errors=ABOUT_AN_ITEM,
    ),
    Route(
        "POST",
        "/v1/items/{id}/needs-rework",
        needs_rework,
        "landing failed for a reason the holder must fix: pending with the facts, its last "
        "holder's for a while; needs the live landing lease and the item's token as queued",
        ITEM,
        write=True,
        body=Body({**_LANDED, "facts": FACTS}, (*_LANDED, "facts")),
        errors=ABOUT_AN_ITEM,
    ),
    Route(
        "POST",
        "/v1/items/{id}/waiting",
        waiting,
        "the runner cannot land the queued item now, for nothing its holder can fix (local "
        "changes in the checkout of main in the way, or main kept moving): it stays queued, "
        "and a `landing_waits` event says why; needs the live landing lease and the item's "
        "token as queued",
        ITEM,
        write=True,
        body=Body({**_LANDED, "wait": WAIT}, (*_LANDED, "wait")),
        errors=ABOUT_AN_ITEM,
    ),
)
