"""Reads stop handing out other agents' fencing tokens (issue 27).

A claim's fencing token is what every later write about the claim carries (heartbeat,
release, done, edit): whoever knows it can end the claim. So an answer shows a live claim's
token only to its holder, the request's **reader**: the person a page session or (later) a
person's token proves, else the name the request asserts (``agent`` of the body, ``?agent=``
or the ``X-Coord-Agent`` header). Everyone else reads ``fencing_token: null`` (an item) or
``token: null`` (the landing lease, a claim's answer, a granted wait) — the field stays, so
one schema describes both readers.

The event log never carries tokens at all (``model.Event.to_dict``): the holder learned its
token from the claim's own answer, and the stream's frames are shared by every reader.

One place, in the request pipeline every route passes through (``pipeline.Endpoint``), so a
route added later is covered without knowing about it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The states in which an item's token still opens writes: a live or lapsed claim, and a claim
# waiting on a human. A queued item's token is the landing runner's to fence with (its
# writes need the landing lease's token as well); a closed item's opens nothing.
HELD_STATES = frozenset({"claimed", "needs_human"})


def reader_of(
    body: Mapping[str, Any] | None,
    query: Mapping[str, str],
    headers: Mapping[str, str],
    proven: str | None = None,
) -> str | None:
    """Who reads this answer: ``proven`` (a name the credential itself proves) when there is
    one, else the name the request asserts; None: nobody in particular, who sees no token."""
    if proven:
        return proven
    named = (body.get("agent") or body.get("runner")) if body else None  # runner: landing
    if not isinstance(named, str):
        named = query.get("agent") or headers.get("x-coord-agent")
    return named or None


def redact(content: Any, reader: str | None) -> Any:
    """``content`` with every other holder's token nulled; the same object when nothing in it
    was anyone else's (the common answer is copied nowhere). ``type() is``, not isinstance:
    this walks every answer, the claim's on the hot path included (~3 µs for a claim)."""
    kind = type(content)
    if kind is dict:
        changed: dict[str, Any] | None = None
        for key, value in content.items():
            inner = type(value)
            if inner is dict or inner is list:
                shown = redact(value, reader)
                if shown is not value:
                    if changed is None:
                        changed = dict(content)
                    changed[key] = shown
        result = changed if changed is not None else content
        if ("fencing_token" in result or "token" in result) and _someone_elses(result, reader):
            result = dict(result)
            if "fencing_token" in result:
                result["fencing_token"] = None
            else:
                result["token"] = None
        return result
    if kind is list:
        copied: list[Any] | None = None
        for index, value in enumerate(content):
            inner = type(value)
            if inner is dict or inner is list:
                shown = redact(value, reader)
                if shown is not value:
                    if copied is None:
                        copied = list(content)
                    copied[index] = shown
        return copied if copied is not None else content
    return content


def _someone_elses(node: dict[str, Any], reader: str | None) -> bool:
    """An item claimed by another, or the landing lease held by another. Only values count:
    the OpenAPI document, whose schemas have the same keys, is shown whole."""
    if isinstance(node.get("fencing_token"), int):
        holder, state = node.get("claimed_by"), node.get("state")
        held = isinstance(state, str) and state in HELD_STATES
        return held and isinstance(holder, str) and holder != reader
    if isinstance(node.get("token"), int):
        # the landing lease (holder, token), a claim's answer or a granted wait (agent, token)
        holder = node.get("holder", node.get("agent"))
        return isinstance(holder, str) and holder != reader
    return False
