"""The fair wait and asking a holder, as arguments of the tools a model already calls
(issue 26): the MCP face keeps its budget of tools, so ``claim`` and ``reserve_files`` take
``wait_seconds`` (a bounded wait in line) and ``ask`` (a reason to ask the holder to let
go), and ``release`` takes ``answer_ask`` (the holder's answer: release, or defer with
``defer_minutes``).

A wait out of time keeps its place for a while (``PLACE_SECONDS``): the model that calls
again soon is still where it was in line, and is told its place.
"""

from __future__ import annotations

from typing import Any

from coord.client import flow, tokens, waiting
from coord.errors import AlreadyClaimed, FilesReserved, InvalidInput
from coord.mcp.backends import Backend

MAX_WAIT_SECONDS = 120.0
PLACE_SECONDS = 60.0  # past a wait out of time, the place is kept this long


def check_wait(wait_seconds: float | None) -> float | None:
    if wait_seconds is not None and not 0 < wait_seconds <= MAX_WAIT_SECONDS:
        raise InvalidInput(
            f"wait_seconds must be more than 0 and at most {MAX_WAIT_SECONDS:g}: call again "
            "to wait longer (your place in line is kept)",
            field="wait_seconds",
        )
    return wait_seconds


def ask_and_wait(
    session: Backend,
    agent: str,
    target: dict[str, Any],
    refused: Exception,
    wait_seconds: float | None,
    ask: str | None,
) -> dict[str, Any]:
    """After a refusal: ask the holder (``ask``), wait in line (``wait_seconds``), or both;
    the refusal itself when neither was asked for."""
    if wait_seconds is None and not ask:
        raise refused
    asked = None
    if ask:
        asked = session.post(*waiting.ask_for(target, {"agent": agent, "reason": ask}))
    if wait_seconds is None:
        return {
            "granted": False,
            "asked": asked,
            "message": f"asked {asked['holder'] if asked else 'the holder'} to let go; its "
            "answer reaches your inbox. Call again with wait_seconds to wait in line",
        }
    status = waiting.wait(
        session, agent, target, timeout=wait_seconds, place=PLACE_SECONDS, keep=True
    )
    if status["state"] == "granted":
        return {"granted": True, **status}
    view: dict[str, Any] = {
        "granted": False,
        "state": status["state"],
        "place": status.get("place"),
        "queue_length": status.get("queue_length"),
        "ahead": status.get("ahead", []),
        "message": (
            f"not yet: place {status.get('place')} in line; the place is kept "
            f"{PLACE_SECONDS:g} s: call again with wait_seconds to keep waiting, or pick "
            "other work"
        )
        if status["state"] == "waiting"
        else f"the wait ended: {status.get('outcome') or status['state']}",
    }
    if asked is not None:
        view["asked"] = asked
    return view


def claim_or_wait(
    session: Backend,
    agent: str,
    ref: str,
    wait_seconds: float | None,
    ask: str | None,
    view: Any,
) -> Any:
    """Claim the item; if someone holds it, ask and/or wait as told. ``view`` shapes a won
    claim for the model (``verbs._claim_view``)."""
    check_wait(wait_seconds)
    try:
        return view(flow.claim(session, agent, ref))
    except AlreadyClaimed as refused:
        if refused.details.get("reason") == "queued":
            raise  # submitted: nobody releases it, it lands
        item_id = refused.details.get("id", ref)
        if refused.details.get("holder") == agent:
            # granted to the place a call before this one kept: the claim is this agent's
            return _granted(session, agent, view, item_id, None)
        outcome = ask_and_wait(session, agent, {"item": item_id}, refused, wait_seconds, ask)
    if outcome.get("granted"):
        return _granted(session, agent, view, outcome["item"], outcome["token"])
    return outcome


def _granted(session: Backend, agent: str, view: Any, item_id: Any, token: int | None) -> Any:
    """The claim a wait won, as a claim's view; its token remembered as a claim's is."""
    # read as the agent: a claim's token is shown to its holder alone (issue 27)
    item = session.get(f"/v1/items/{item_id}", {"agent": agent})
    claim = {
        "id": item["id"],
        "title": item["title"],
        "token": item["fencing_token"] if token is None else token,
        "lease_expires_at": item["lease_expires_at"],
        "item": item,
    }
    tokens.remember_claim(session.board_dir, agent, claim)
    return {**view(claim), "waited": True}


def reserve_or_wait(
    session: Backend,
    agent: str,
    patterns: list[str],
    shared: bool,
    reason: str,
    wait_seconds: float | None,
    ask: str | None,
) -> Any:
    check_wait(wait_seconds)
    try:
        return flow.reserve(session, agent, patterns, shared=shared, reason=reason)
    except FilesReserved as refused:
        if shared and wait_seconds is not None:
            raise InvalidInput(
                "a wait in line is for exclusive holds: wait without shared", field="shared"
            ) from None
        target = {"patterns": session.repo_relative(patterns)}
        return ask_and_wait(session, agent, target, refused, wait_seconds, ask)


def answer_ask(
    session: Backend, agent: str, ask_id: int, defer_minutes: float | None, reason: str
) -> Any:
    body: dict[str, Any] = {"agent": agent, "answer": "release", "reason": reason}
    if defer_minutes is not None:
        body.update(answer="defer", for_seconds=defer_minutes * 60)
    return session.post(f"/v1/asks/{ask_id}/answer", body)
