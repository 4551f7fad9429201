"""What each MCP tool does: one function of the client flow, its answer shaped for a model.

Synchronous, like the flow they call (``coord.client.flow``); ``coord.mcp.tools`` runs them in
a worker thread. Each takes the session (``coord.mcp.backends``), the calling agent's name and
the tool's arguments.
"""

from __future__ import annotations

from typing import Any

from coord import model
from coord.client import flow
from coord.errors import InvalidInput
from coord.mcp import waits
from coord.mcp.backends import Backend


def claim(
    session: Backend,
    agent: str,
    item: int | str | None,
    kind: str | None,
    label: str | None,
    worktree: bool | None = None,
    wait_seconds: float | None = None,
    ask: str | None = None,
) -> Any:
    """The item given, or with none the best ready one (of this kind, with this label); with
    ``worktree`` (by default the board's ``start_in_worktree``, where the agent works) in a
    worktree of its own, as `coord start` makes it."""
    if item is not None and (kind is not None or label is not None):
        raise InvalidInput(
            "kind and label choose among the ready items: give them without an item, or the "
            "item alone",
            field="kind" if kind is not None else "label",
        )
    if wait_seconds is not None or ask:
        if item is None:
            raise InvalidInput(
                "wait_seconds and ask are for one item someone holds: name the item",
                field="item",
            )
        if worktree:
            raise InvalidInput(
                "a wait in line takes the claim without a worktree: leave worktree out",
                field="worktree",
            )
        return waits.claim_or_wait(session, agent, _ref(item), wait_seconds, ask, _claim_view)
    if worktree is None:
        worktree = session.local and _start_in_worktree(session)
    if worktree:
        from coord.landing import flow as worktree_flow

        ref = None if item is None else _ref(item)
        return _worktree_view(worktree_flow.start(session, agent, ref, kind=kind, label=label))
    if item is None:
        return _claim_view(flow.claim_next(session, agent, kind=kind, label=label))
    return _claim_view(flow.claim(session, agent, _ref(item)))


def _start_in_worktree(session: Backend) -> bool:
    from coord.fast import board_files

    return bool(board_files.read_config(session.board_dir).get("start_in_worktree"))


def heartbeat(session: Backend, agent: str, item: int | str, token: int | None) -> Any:
    return flow.heartbeat(session, agent, _ref(item), token)


def release(
    session: Backend,
    agent: str,
    item: int | str,
    reason: str,
    token: int | None,
    answer_ask: int | None = None,
    defer_minutes: float | None = None,
) -> Any:
    if answer_ask is not None:  # the holder's answer to an ask: release, or defer
        return waits.answer_ask(session, agent, answer_ask, defer_minutes, reason)
    if defer_minutes is not None:
        raise InvalidInput("defer_minutes answers an ask: give answer_ask too", field="answer_ask")
    return flow.release(session, agent, _ref(item), token, reason)


def done(
    session: Backend, agent: str, item: int | str, summary: str, token: int | None, skip: str | None
) -> Any:
    """Close it; a worktree item is submitted (checked in its worktree), queued to land."""
    closed = flow.done(session, agent, _ref(item), token=token, summary=summary, skip_reason=skip)
    if closed.get("state") == "queued":
        closed = {
            **closed,
            "next": "submitted: queued to land on main (done once merged); its files stay "
            "held until then. Do not work in its worktree any more; claim other work",
        }
    return closed


def escalate(
    session: Backend, agent: str, item: int | str, question: str, token: int | None
) -> Any:
    return flow.escalate(session, agent, _ref(item), question, token)


def reopen(session: Backend, agent: str, item: int | str, reason: str) -> Any:
    return flow.reopen(session, agent, _ref(item), reason)


def post(session: Backend, agent: str, fields: dict[str, Any]) -> Any:
    deps = [_item_id(session, dep) for dep in fields.get("deps") or []]
    return flow.add(session, agent, {**fields, "deps": deps})


def reply(session: Backend, agent: str, item: int | str, text: str) -> Any:
    return flow.reply(session, agent, _ref(item), text)


def thread(session: Backend, agent: str, item: int | str) -> Any:
    return session.get(f"/v1/items/{_ref(item)}")


def inbox(session: Backend, agent: str, peek: bool) -> Any:
    return flow.inbox(session, agent, peek=peek)


def reserve(
    session: Backend,
    agent: str,
    patterns: list[str],
    shared: bool,
    reason: str,
    wait_seconds: float | None = None,
    ask: str | None = None,
) -> Any:
    return waits.reserve_or_wait(session, agent, patterns, shared, reason, wait_seconds, ask)


def unreserve(session: Backend, agent: str, patterns: list[str] | None, everything: bool) -> Any:
    return flow.unreserve(session, agent, patterns, everything=everything)


def who(session: Backend, agent: str, path: str) -> Any:
    return flow.who(session, agent, path)[1]


def summary(session: Backend, agent: str) -> dict[str, Any]:
    ready = session.get("/v1/items", {"ready": "true", "limit": 10})
    claimed = session.get("/v1/items", {"state": "claimed", "limit": 200})
    waiting = session.get("/v1/items", {"state": "needs_human", "limit": 50})
    held = claimed["items"] + waiting["items"]
    queued = session.get("/v1/queue", {"limit": 100})["items"]
    sent_back = session.get("/v1/items", {"state": "needs_rework", "limit": 50})["items"]
    pending = session.get("/v1/items", {"state": "pending", "limit": 100})["items"]
    return {
        "agent": agent,
        "mine": [_brief(i) for i in held if i["claimed_by"] == agent],
        "ready": [_brief(i) for i in ready["items"]],
        "claimed": [_brief(i) for i in claimed["items"] if i["claimed_by"] != agent],
        "needs_human": [_brief(i) for i in waiting["items"]],
        # what is not ready, and what it waits for: an agent tells "wait" from "all done"
        "blocked": [_blocked(i) for i in pending if not i["ready"]],
        # a worktree item's way to main: what waits to land (in order), what came back
        "landing": [
            {**_brief(i), "branch": i.get("branch"), "head": i.get("submitted_head")}
            for i in queued
        ]
        + [
            {**_brief(i), "rework_for": i.get("rework_for"), "rework": i.get("rework")}
            for i in sent_back
        ],
    }


def spec_status(session: Backend, agent: str, doc: str, prefix: str | None) -> Any:
    from coord.client import specs

    return specs.status(session, doc, prefix=prefix or None, as_typed=False)


def _ref(item: int | str) -> str:
    return str(model.check_item_ref(item))


def _item_id(session: Backend, item: int | str) -> int:
    """A dependency's item id: the board takes ids there (a package id is looked up)."""
    return flow.item_id(session, model.check_item_ref(item))


def _claim_view(won: dict[str, Any]) -> dict[str, Any]:
    item = won["item"]
    return {
        "id": won["id"],
        "key": item.get("key"),
        "title": won["title"],
        "token": won["token"],
        "lease_expires_at": won["lease_expires_at"],
        "takeover_from": won.get("takeover_from"),
        "body": item["body"],
        "files": item["files"],
        "checks": item.get("checks", []),
        "spec": item.get("spec"),
        **({"rework": item["rework"]} if item.get("rework") else {}),
    }


def _worktree_view(won: dict[str, Any]) -> dict[str, Any]:
    made = won["worktree"]
    view = {
        **_claim_view(won),
        "worktree": made["path"],
        "branch": made["branch"],
        "base_commit": made["base_commit"],
        "work_in": f"work in {made['path']} (branch {made['branch']}), not in the main "
        "checkout: edit and commit there; done then submits your branch to land on main",
    }
    if not made.get("contains_base", True):
        view["work_in"] += (
            f"; your earlier branch was reused: first `git rebase {made['base_commit']}` there "
            "(main's tip now)"
        )
    setup = made.get("setup")
    if setup is not None and setup.get("exit_code") != 0:
        view["setup_failed"] = {
            "exit_code": setup.get("exit_code"),
            "output_tail": setup.get("output_tail"),
        }
    if made.get("not_copied"):
        view["not_copied"] = made["not_copied"]
    return view


def _blocked(item: dict[str, Any]) -> dict[str, Any]:
    """A pending item that is not ready, with its blockers: the dependencies not done yet,
    the design document's reservation, the files others hold."""
    blockers: dict[str, Any] = {}
    if item["blocked_by"]:
        blockers["blocked_by"] = item["blocked_by"]
    if item.get("reserved_for"):
        blockers["reserved_for"] = item["reserved_for"]
    if item["files_held_by"]:
        blockers["files_held_by"] = [
            {"agent": r["agent"], "pattern": r["pattern"], "item": r.get("item")}
            for r in item["files_held_by"]
        ]
    return {**_brief(item), **blockers}


def _brief(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": item["id"],
        "key": item.get("key"),
        "title": item["title"],
        "state": item["state"],
        "priority": item["priority"],
        "claimed_by": item["claimed_by"] if item["state"] != "pending" else None,
        "lease_expires_at": item["lease_expires_at"],
        "files": item["files"],
        "question": item.get("question"),
    }
