"""Who may decide an item's fate: cancel it, reopen it, or set the checks it must pass.

Any agent may post, claim and reply; but cancelling work takes it away from everyone, and a
check is a shell command that whoever finishes the item runs in their own working tree. So
those belong to the people the item belongs to: its creator, its holder (cancel only: the
one doing the work may give it up for good), and the board's humans, the names listed as
``humans`` in ``.coord/config.json``. Humans act with the board's token like any agent; the
list says whose word overrides an agent's, not who can reach the board (coord is a guard rail
against mistakes, not a sandbox: see docs/security.md).
"""

from __future__ import annotations

from collections.abc import Set

from coord.core import rules
from coord.errors import NotCancelled, NotPermitted
from coord.model import Item
from coord.times import iso


def who_may(item: Item, humans: Set[str]) -> str:
    """Who may decide about ``item``, in words: "alice (its creator) or a human listed in
    .coord/config.json `humans` (carol)"."""
    return f"{item.created_by} (its creator) or {_humans_text(humans)}"


def ensure_may_cancel(item: Item, agent: str, token: object, now: float, humans: Set[str]) -> None:
    """The creator, the live claim's holder (with its token) or a human may cancel.

    A live claim is its holder's: the creator cannot cancel work someone is doing (ask the
    holder, or a human); a human can, and the holder's next write is refused as lease_lost."""
    rules.ensure_open(item)
    if agent in humans:
        return
    holder = item.claimed_by if item.lease_live(now) else None
    # a token says "I hold it": a stale one is the zombie case, refused as lease_lost
    if holder is not None and agent != holder and token is None:
        raise NotPermitted(
            f"item {item.ref} is claimed by {holder} until {iso(item.lease_expires_at)}; only "
            f"the holder or {_humans_text(humans)} may cancel it now",
            id=item.id,
            holder=holder,
            lease_expires_at=iso(item.lease_expires_at),
            may=_may(item, humans, holder),
        )
    if holder is None and agent != item.created_by:
        raise NotPermitted(
            f"{agent} may not cancel item {item.ref}: only {who_may(item, humans)} may",
            id=item.id,
            may=_may(item, humans, None),
        )
    rules.ensure_editable(item, agent, token, now)


def ensure_may_reopen(item: Item, agent: str, humans: Set[str]) -> None:
    """Only a cancelled item reopens, by its creator or a human: the same people who could
    have cancelled it, less a holder (a cancelled item has none). A done item stays done:
    its dependents were released on the strength of it, so a follow-up item says it better."""
    if item.state != "cancelled":
        what = (
            f"item {item.ref} is done, and done is final (its dependents may already be under "
            f"way): post a follow-up item that depends on {item.ref} instead"
            if item.state == "done"
            else f"item {item.ref} is {item.shown_state}, not cancelled: nothing to reopen"
        )
        raise NotCancelled(what, id=item.id, state=item.shown_state)
    if agent not in humans and agent != item.created_by:
        raise NotPermitted(
            f"{agent} may not reopen item {item.ref}: only {who_may(item, humans)} may",
            id=item.id,
            may=_may(item, humans, None),
        )


def ensure_may_set_checks(item: Item, agent: str, humans: Set[str]) -> None:
    """Checks are set by the item's creator (or a human): whoever finishes the item runs them
    with the shell in their own working tree, so no other agent may plant one, nor take one
    away (closing without them is ``skip_checks``, with its reason recorded)."""
    if agent in humans or agent == item.created_by:
        return
    raise NotPermitted(
        f"{agent} may not change the checks of item {item.ref}: whoever finishes it runs them "
        f"in their own working tree, so only {who_may(item, humans)} may",
        id=item.id,
        may=_may(item, humans, None),
    )


def _humans_text(humans: Set[str]) -> str:
    listed = ", ".join(sorted(humans))
    return f"a human listed in .coord/config.json `humans` ({listed or 'none listed yet'})"


def _may(item: Item, humans: Set[str], holder: str | None) -> list[str]:
    """Who may, as names: for scripts (``may`` in the error object)."""
    names = [item.created_by] if holder is None else [holder]
    return names + sorted(n for n in humans if n not in names)
