"""The board at a glance, for `coord status`: counts by state, who is active, what needs care.

Cheap on a board of any size: the counts are one grouped query, the claims near their end come
from the lease index, and the lists are bounded (``SHOWN``); nothing reads every item.
"""

from __future__ import annotations

from typing import Any

from coord.model import Item
from coord.storage.base import ItemQuery
from coord.times import iso

TYPE_CHECKING = False
if TYPE_CHECKING:
    from coord.core.board import Board

# a claim whose lease ends within this is "near expiry": its holder should heartbeat or finish
NEAR_EXPIRY_SECONDS = 120.0
SHOWN = 20  # at most this many items in each list; the counts say how many there are


def overview(board: Board, near_seconds: float = NEAR_EXPIRY_SECONDS) -> dict[str, Any]:
    now = board.now()
    with board.storage.read() as tx:
        counts = tx.count_items_by_state()
        near = tx.claims_ending_between(now, now + near_seconds, SHOWN)
        # a lease that ended with no takeover yet: the item is claimable again
        lapsed = tx.claims_ending_between(float("-inf"), now, SHOWN)
        waiting = tx.list_items(ItemQuery(state="needs_human", limit=SHOWN))
        agents = tx.agents()
    shown_agents = [a.to_dict(now, board.active_window_seconds) for a in agents]
    return {
        "counts": counts,
        "total": sum(counts.values()),
        "active_agents": [a for a in shown_agents if a["active"] and a["role"] == "agent"],
        "near_expiry_seconds": near_seconds,
        "near_expiry": [_claim(item, now) for item in near],
        "lapsed": [_claim(item, now) for item in lapsed],
        "needs_human": [
            {
                "id": item.id,
                "key": item.key,
                "title": item.title,
                "holder": item.claimed_by,
                "question": item.question,
                "escalate_to": item.escalate_to,
            }
            for item in waiting
        ],
        "now": iso(now),
    }


def _claim(item: Item, now: float) -> dict[str, Any]:
    ends = item.lease_expires_at or now
    return {
        "id": item.id,
        "key": item.key,
        "title": item.title,
        "holder": item.claimed_by,
        "lease_expires_at": iso(ends),
        "seconds_left": round(ends - now, 1),
    }
