"""The waiter's half of the fair wait, shared by `coord wait` and the MCP tools (issue 26).

Take a place (``POST /v1/items/ID/wait``, or ``/v1/waits`` for paths), then keep it with
the heartbeat that is also the long poll, until the board grants it, it ends, or the time
runs out. Out of time the place is given up, or (``keep``) left to lapse on its own lease,
so a caller that asks again soon keeps its place in line (the board hands the same place
back to the same agent and target).
"""

from __future__ import annotations

import time

from coord.client import tokens

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PLACE_SECONDS = 30.0  # the place's lease; the long poll renews it three times as often


def queue_for(target: dict[str, Any], body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Where a target's place is taken: an item's, or the paths' (in the body)."""
    if "item" in target:
        return f"/v1/items/{target['item']}/wait", body
    return "/v1/waits", {**body, "patterns": target["patterns"]}


def ask_for(target: dict[str, Any], body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Where an ask of a target's holder is made."""
    if "item" in target:
        return f"/v1/items/{target['item']}/ask", body
    return "/v1/asks", {**body, "patterns": target["patterns"]}


def wait(
    session: Any,
    agent: str,
    target: dict[str, Any],
    *,
    timeout: float | None,
    place: float = PLACE_SECONDS,
    lease: float | None = None,
    keep: bool = False,
) -> dict[str, Any]:
    """The place as it ended: granted (a claim's token remembered, as a claim's is),
    cancelled (out of time: ``place_when_given_up`` says where it stood), gone, or, with
    ``keep``, still waiting."""
    poll = place / 3
    body: dict[str, Any] = {"agent": agent, "place_seconds": place}
    if lease is not None:
        body["lease_seconds"] = lease
    status: dict[str, Any] = session.post(*queue_for(target, body))
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while status["state"] == "waiting":
            left = poll if deadline is None else deadline - time.monotonic()
            if left <= 0:
                break
            status = session.call(
                "POST",
                f"/v1/waits/{status['wait']}/heartbeat",
                {"agent": agent, "place_seconds": place, "wait_seconds": min(left, poll)},
                timeout=poll + 30,
            )
        if status["state"] == "waiting" and not keep:  # out of time (unless just granted)
            where = status.get("place")
            status = session.post(f"/v1/waits/{status['wait']}/cancel", {"agent": agent})
            status["place_when_given_up"] = where
    except KeyboardInterrupt:
        session.post(f"/v1/waits/{status['wait']}/cancel", {"agent": agent})
        raise
    if status["state"] == "granted" and status.get("item") is not None:
        claim = {"id": status["item"], "token": status["token"]}
        tokens.remember_claim(session.board_dir, agent, claim)
    return status
