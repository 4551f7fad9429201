"""The options of a refusal's ``next`` object, and the one line that says them.

A refusal says what to do next, machine-readably, in every face (issue 26): a ``next``
object whose keys are the options that apply, in the order worth trying:

- ``wait``: the holder is alive (its lease ends at ``lease_expires_at``); ``command`` waits
  in the queue (``coord wait ITEM|PATH``), ``place``/``waiting`` say where you would stand.
- ``other_work``: ready items you could claim now, best first (``command`` claims the first).
- ``ask_holder``: ``command`` asks the holder to let go (``coord ask``), or writes to it
  (``coord send``) when there is nothing of it to ask about.
- ``escalate``: ask a human about the item you hold (``coord escalate``).

The board builds the object for its own refusals (``coord.core.next_steps``: it knows what
else is claimable); the guard, which reads the holds without a daemon, builds it from what
it read (``for_guard``). Both make each option here, so the faces say the same thing.

Stdlib only: the guard's hooks run before every edit.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~10 ms at import; this runs before every edit
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

# holders nobody can ask: the landing queue and a lapsed worktree claim's item
# (coord.model.QUEUE_HOLDER, LAPSED_HOLDER; every agent name lacks a ``/``)
_NOBODY_TO_ASK = "/"

ESCALATE_COMMAND = "coord escalate ITEM QUESTION"


def wait(
    item: str | None,
    paths: Sequence[str],
    holder: str | None,
    lease_expires_at: str | None,
    alive: bool,
    queue: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Wait for ``item``'s claim (its ref) or for ``paths``. ``queue``: what the waiters'
    queue says of the line (``waiting``: how many; ``first``: who is first; ``place``, or
    ``your_place`` as the queue names it: the place you would take), or None where it is
    not known."""
    option: dict[str, Any] = {
        "command": f"coord wait {_target(item, paths)}",
        "item": item,
        "paths": list(paths) if item is None else None,
        "holder": holder,
        "alive": alive,
        "lease_expires_at": lease_expires_at,
        "place": None,
        "waiting": None,
        "first": None,
    }
    if queue:
        option["place"] = queue.get("place", queue.get("your_place"))
        option["waiting"] = queue.get("waiting")
        option["first"] = queue.get("first")
    return option


def _target(item: str | None, paths: Sequence[str]) -> str:
    return item if item is not None else " ".join(paths)


def other_work(items: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``items``: each ``{"id", "ref", "title", "priority", "files"}``, best first."""
    first = items[0]["ref"] if items else None
    return {
        "command": f"coord claim {first}" if first is not None else "coord next",
        "items": list(items),
    }


def ask_holder(holder: str, item: str | None, paths: Sequence[str] = ()) -> dict[str, Any] | None:
    """Ask ``holder`` to let go of ``item`` (its ref) or ``paths``. None for a holder nobody
    can ask (coord's own)."""
    if _NOBODY_TO_ASK in holder:
        return None
    return {
        "holder": holder,
        "command": f"coord ask {_target(item, paths)} --reason TEXT",
        "item": item,
        "paths": list(paths) if item is None else None,
    }


def escalate() -> dict[str, Any]:
    return {"command": ESCALATE_COMMAND}


def assemble(
    wait_option: dict[str, Any] | None,
    other: dict[str, Any] | None,
    ask: dict[str, Any] | None,
) -> dict[str, Any]:
    """The ``next`` object: the options that apply, in the order worth trying."""
    found: dict[str, Any] = {}
    if wait_option is not None:
        found["wait"] = wait_option
    if other is not None:
        found["other_work"] = other
    if ask is not None:
        found["ask_holder"] = ask
    found["escalate"] = escalate()
    return found


def for_guard(refusals: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The ``next`` object of the guard's refusal of an edit (its verdict's ``refusals``),
    from the first hold that refused it. ``other_work`` names the command that finds it
    (``coord next``): the guard reads holds, not the board's items. None when no hold refused
    (a path the guard could not place, a board it could not read: nothing to wait for)."""
    held = [r for r in refusals if r.get("holder") and r.get("path")]
    if not held:
        return None
    first = held[0]
    holder = str(first["holder"])
    target = str(first["path"])
    alive = True  # a hold the guard counts is live on the board's clock
    wait_option = wait(None, [target], holder, first.get("expires_at"), alive)
    return assemble(wait_option, other_work([]), ask_holder(holder, None, [target]))


def said(
    found: dict[str, Any] | None,
    as_agent: str | None = None,
    words: Callable[[dict[str, Any]], str] | None = None,
) -> str:
    """The ``next`` object as one line a person or a model reads ("next: wait …; …").
    ``as_agent``: each command names who runs it (``--as NAME``), for a session whose name
    its shell does not carry (a hook's deny). ``words``: how this face says an option's
    command (MCP: as a tool call); by default the command in backticks."""
    say = words or (lambda option: f"`{option['command']}`")
    if not found:
        return ""
    if as_agent:
        found = {
            key: {**option, "command": f"{option['command']} --as {as_agent}"}
            if isinstance(option, dict) and "command" in option
            else option
            for key, option in found.items()
        }
    parts = []
    option = found.get("wait")
    if option:
        who = f" for {option['holder']}" if option.get("holder") else ""
        ends = option.get("lease_expires_at")
        until = f" (lease ends {ends})" if ends else ""
        place = f", place {option['place']} of {option['waiting']}" if option.get("place") else ""
        parts.append(f"wait{who}{until}{place}: {say(option)}")
    option = found.get("other_work")
    if option:
        refs = ", ".join(str(i["ref"]) for i in option["items"])
        parts.append(
            f"other work ready now ({refs}): {say(option)}"
            if refs
            else f"other work: {say(option)}"
        )
    option = found.get("ask_holder")
    if option:
        parts.append(f"ask {option['holder']}: {say(option)}")
    if found.get("escalate"):
        parts.append(f"ask a human about your item: {say(found['escalate'])}")
    return "next: " + "; ".join(parts)
