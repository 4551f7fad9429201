"""A worktree item's files, held from its claim until it is merged or abandoned (promise 20).

A claim with a worktree holds the item's files with no expiry of their own (``HOLD_UNTIL``,
as the landing queue's): the item's uncommitted work may sit in its worktree, or in a snapshot
of it, after its holder is gone, and the files it changed must not change on main meanwhile.
While the claim is live they are its holder's. Once its lease lapses they are the item's,
shown as held by ``LAPSED_HOLDER`` (never an agent name: no agent can act as it, the lapsed
holder included), until the item is taken over (the new claim takes them), released,
submitted (the queue takes them), merged or abandoned, each of which ends or moves them in
its own transaction. The lapse itself writes nothing: which claims lapsed is judged on the
board's clock, in the transaction that reads the holds (``live_holds``).

An item claimed without a worktree keeps holds that lapse with its lease.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from coord.model import LAPSED_HOLDER, QUEUE_HOLDER, Item, Reservation
from coord.storage.base import ReadTx
from coord.times import iso

# 9999-12-31T23:59:59Z: a hold that ends only when its item's way to main does.
HOLD_UNTIL = 253402300799.0


def hold_until(worktree_item: bool, lease_expires_at: float) -> float:
    """When a claim's hold on its item's files ends by itself: with its lease, or (a worktree
    item's) never."""
    return HOLD_UNTIL if worktree_item else lease_expires_at


def lapsed_claim(item: Item, now: float) -> bool:
    """A worktree claim whose lease ran out: its item holds its files (``LAPSED_HOLDER``)."""
    return item.state == "claimed" and item.branch is not None and not item.lease_live(now)


def live_holds(
    tx: ReadTx, now: float, *, near: Sequence[str] | None = None, agent: str | None = None
) -> list[Reservation]:
    """``tx.live_reservations`` as the board's rules read them: the holds of a lapsed worktree
    claim are its item's (``LAPSED_HOLDER``), no longer the lapsed holder's (``agent``'s
    then leaves them out)."""
    live = tx.live_reservations(now, near=near, agent=agent)
    items: dict[int, Item | None] = {}
    shown: list[Reservation] = []
    for held in live:
        item = _lapsed_item(tx, held, now, items)
        if item is None:
            shown.append(held)
        elif agent is None:
            reason = (
                f"item {item.ref}'s worktree claim by {item.claimed_by} lapsed at "
                f"{iso(item.lease_expires_at)}; its work waits in its worktree"
            )
            shown.append(replace(held, agent=LAPSED_HOLDER, reason=reason))
    return shown


def _lapsed_item(
    tx: ReadTx, held: Reservation, now: float, items: dict[int, Item | None]
) -> Item | None:
    """The item whose lapsed worktree claim made ``held``, or None."""
    if held.item_id is None or held.expires_at < HOLD_UNTIL or held.agent == QUEUE_HOLDER:
        return None
    if held.item_id not in items:
        items[held.item_id] = tx.get_item(held.item_id)
    item = items[held.item_id]
    if item is None or item.claimed_by != held.agent or not lapsed_claim(item, now):
        return None
    return item


def own_hold(held: Reservation, item: Item) -> bool:
    """A hold on ``item``'s own files that is the item's, not another agent's: the queue's
    (an item sent back) or a lapsed claim's. It never refuses the item's next claim (which
    takes it over) and never makes the item look blocked."""
    return held.item_id == item.id and held.agent in (QUEUE_HOLDER, LAPSED_HOLDER)


def may_hold_own_files(item: Item) -> bool:
    """Could the item hold its own files with no live claim: sent back (the queue's hold), or
    claimed with a worktree (a lapsed claim's)? Then its files are judged for it alone."""
    return item.rework is not None or (item.state == "claimed" and item.branch is not None)
